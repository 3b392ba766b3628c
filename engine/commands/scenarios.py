"""``eos scenarios``: list the scenarios ``eos run`` knows, with the mutants each is built to catch."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def run(args: argparse.Namespace) -> int:
    """Print one line per scenario."""
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.registry import DESCRIPTIONS, load_all

    load_all()
    width = max(len(n) for n in DESCRIPTIONS)
    for name in sorted(DESCRIPTIONS):
        spec = BY_NAME.get(name)
        catches = f"  [catches {', '.join(f'{m}->{c}' for m, c in spec.catches)}]" if spec and spec.catches else ""
        print(f"{name:<{width}}  {DESCRIPTIONS[name]}{catches}")
    return 0
