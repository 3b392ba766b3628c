"""``eos scenarios``: list the scenarios ``eos run`` knows."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def run(args: argparse.Namespace) -> int:
    """Print one line per scenario."""
    from engine.scenarios.registry import DESCRIPTIONS, _load_all

    _load_all()
    width = max(len(n) for n in DESCRIPTIONS)
    for name in sorted(DESCRIPTIONS):
        print(f"{name:<{width}}  {DESCRIPTIONS[name]}")
    return 0
