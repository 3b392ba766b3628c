"""``eos scenarios``: list the scenarios ``eos run`` knows, with the mutants each is built to catch."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def run(args: argparse.Namespace) -> int:
    """Print one line per scenario."""
    from engine.scenarios.listing import scenario_lines

    for line in scenario_lines():
        print(line)
    return 0
