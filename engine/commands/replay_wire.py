"""``eos replay-wire JOURNAL``: rebuild a served cluster from its journal and check every response byte."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the replay arguments."""
    p.add_argument("journal", help="a journal written by 'eos serve --journal FILE'")


def run(args: argparse.Namespace) -> int:
    """Replay; exit 0 when every output is byte-identical, 1 at the first difference.

    A journal that notes a change it did not record (the cluster crashed from Python under
    ``server.locked()``) is checked up to that change and exits 1, ``NOT REPLAYABLE: ...``.
    """
    from engine.cli import UsageError
    from engine.wire.journal import replay

    try:
        report = replay(args.journal)
    except (OSError, ValueError) as exc:
        raise UsageError(f"eos replay-wire: {exc}") from None
    if report.identical:
        print(f"identical: {report.inputs} inputs replayed, {report.outputs} outputs byte-identical")
        return 0
    print(f"{'NOT REPLAYABLE' if report.untracked else 'DIFFERENT'}: {report.difference}")
    return 1
