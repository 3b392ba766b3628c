"""``eos check HISTORY.jsonl``: check a client history file for exactly-once anomalies.

Role
----
The command-line face of :func:`engine.check.checker.check_history`. It prints a readable
table (or JSON with ``--json``) and returns the exit status:

* 0 - no forbidden anomaly (allowed ones may be listed);
* 1 - at least one forbidden anomaly;
* 2 - the file is missing, unreadable, empty or malformed: one short line on stderr naming the
  line and the problem, no traceback.

An internal error (70) and a closed stdout (141) are handled once for every command, by
:func:`engine.cli.main`; ``docs/history-format.md`` lists every status.

Invariants
----------
Reads only the file: a history written by hand or by another client checks the same way.

What it does not do
-------------------
It runs no simulation; ``eos run`` does that.
"""

from __future__ import annotations

import argparse
import json
import sys

from engine.check.anomaly import MODES
from engine.check.checker import check_history
from engine.check.history import HistoryFormatError
from engine.check.jsonl import analyse_jsonl, gc_paused

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``check`` subcommand's arguments to ``parser``."""
    parser.add_argument("history", metavar="HISTORY.jsonl", help="client history, one JSON record per line")
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="eos",
        help="which anomalies are allowed: eos (default), subscribe (also poll-skip, nonmonotonic-poll), "
        "at-least-once (also duplicate)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    """Check the history named by ``args``; return 0 (clean), 1 (forbidden anomaly) or 2 (bad file)."""
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    path = args.history
    try:
        history = analyse_jsonl(path)
    except FileNotFoundError:
        print(f"eos check: {path}: no such file", file=sys.stderr)
        return 2
    except IsADirectoryError:
        print(f"eos check: {path}: is a directory, not a history file", file=sys.stderr)
        return 2
    except UnicodeDecodeError:
        print(f"eos check: {path}: not UTF-8 text", file=sys.stderr)
        return 2
    except HistoryFormatError as exc:
        print(f"eos check: {path}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"eos check: {path}: cannot read ({exc.strerror or exc})", file=sys.stderr)
        return 2
    report = check_history(history, allowed=args.mode)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, sort_keys=True))
    else:
        print(report)
    return 0 if report.ok else 1
