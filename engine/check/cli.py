"""``eos check HISTORY.jsonl``: check a client history file for exactly-once anomalies.

Role
----
The command-line face of :func:`engine.check.checker.check_history`. It prints a readable
table (or JSON with ``--json``) and returns the exit status:

* 0 - no forbidden anomaly (allowed ones may be listed);
* 1 - at least one forbidden anomaly;
* 2 - the file is missing, unreadable, empty or malformed: one short line on stderr naming the
  line and the problem, no traceback.

The database side (:mod:`engine.check.effects`) runs with it, or alone::

    eos check HISTORY.jsonl --committed orders.sqlite:orders.order_id --effects shipping.sqlite:shipments.order_id

reads the two columns from the SQLite files (without changing them) and adds ``effect-lost``,
``effect-duplicate`` and ``effect-phantom`` to the verdict: exit 1 if either side found one.
Keys pair as SQLite's join pairs them and a NULL key pairs with nothing (``docs/outbox.md``);
a file a crashed writer left with a hot journal is read from a temporary copy, with a note on
stderr.

``--topics ledger,audit`` judges only those topics' sends and reads; ``--promise "payments ->
ledger"`` (repeatable) adds the end-to-end promises of :mod:`engine.check.promises`, judged on
the records the history's ``ok`` polls read. A promise matches ``by key`` (the default) only
on a history whose polls of both its topics all carry record keys (``engine.record`` records
them); otherwise it is refused with status 2, in one line naming the topic whose reads have
no key: match ``by value`` then. Either reads the whole history into memory first.

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
from typing import Any

from engine.check.anomaly import MODES, Anomaly, Report
from engine.check.checker import check_history
from engine.check.effects import check_effects, read_column
from engine.check.effects import summary as effect_summary
from engine.check.history import HistoryFormatError
from engine.check.jsonl import analyse_jsonl, gc_paused, load_jsonl
from engine.check.promises import Promise, committed_reads, keyless, promises_of

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``check`` subcommand's arguments to ``parser``."""
    parser.add_argument("history", metavar="HISTORY.jsonl", nargs="?", help="client history, one JSON record per line")
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="eos",
        help="which anomalies are allowed: eos (default), subscribe (also poll-skip, nonmonotonic-poll), "
        "at-least-once (also duplicate)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--topics",
        metavar="TOPIC[,TOPIC...]",
        help="judge only these topics' sends and reads (a topic with duplicates on purpose is left out)",
    )
    parser.add_argument(
        "--promise",
        metavar="'IN -> OUT [by key|by value]'",
        action="append",
        default=[],
        help="every committed record of IN becomes exactly one committed record of OUT (repeatable; "
        "'by key', the default, needs record keys in the history's polls, else match 'by value'; "
        "'and nothing else' also forbids unmatched outputs)",
    )
    parser.add_argument(
        "--committed",
        metavar="FILE:TABLE.COLUMN",
        help="the database side: the key of every committed business row (e.g. orders.sqlite:orders.order_id)",
    )
    parser.add_argument(
        "--effects",
        metavar="FILE:TABLE.COLUMN",
        help="the business key each effect names, one row per effect (e.g. shipping.sqlite:shipments.order_id)",
    )


def run(args: argparse.Namespace) -> int:
    """Check the history named by ``args``; return 0 (clean), 1 (forbidden anomaly) or 2 (bad file)."""
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if (args.committed is None) != (args.effects is None):
        print("eos check: --committed and --effects go together (the two ends of the pipeline)", file=sys.stderr)
        return 2
    if args.history is None and args.committed is None:
        print("eos check: give a HISTORY.jsonl, or --committed and --effects, or both", file=sys.stderr)
        return 2
    try:
        topics, promises = _scope(args.topics, args.promise)
    except ValueError as exc:
        print(f"eos check: {exc}", file=sys.stderr)
        return 2
    effects = None
    if args.committed is not None:
        try:
            committed, applied = read_column(args.committed), read_column(args.effects)
            for column in (committed, applied):
                if column.note:
                    print(f"eos check: {column.note}", file=sys.stderr)
            effects = check_effects(committed, applied)
        except ValueError as exc:
            print(f"eos check: {exc}", file=sys.stderr)
            return 2
    if args.history is None:
        return _print_effects(effects, args.json, None)
    path = args.history
    judged = topics is not None or promises
    try:
        history = load_jsonl(path) if judged else analyse_jsonl(path)
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
    committed = None
    if promises:
        committed = committed_reads(history)
        blind = keyless(committed, promises)
        if blind:
            print(f"eos check: {path}: {_keyless_message(*blind[0])}", file=sys.stderr)
            return 2
    report = check_history(history, allowed=args.mode, topics=topics, promise=promises, committed=committed)
    if effects is not None:
        return _print_effects(effects, args.json, report)
    if args.json:
        print(json.dumps(report.to_json(), indent=2, sort_keys=True))
    else:
        print(report)
    return 0 if report.ok else 1


def _scope(topics: str | None, promises: list[str]) -> tuple[tuple[str, ...] | None, tuple[Promise, ...]]:
    """Read ``--topics`` and ``--promise``."""
    scoped = None
    if topics is not None:
        scoped = tuple(t.strip() for t in topics.split(",") if t.strip())
        if not scoped:
            raise ValueError(f"--topics {topics!r}: give topic names, comma-separated (e.g. --topics ledger,audit)")
    return scoped, promises_of(promises)


def _keyless_message(p: Promise, topic: str, missing: int, total: int) -> str:
    """The line refusing ``p`` by key: ``missing`` of the ``total`` reads of ``topic`` have no record key."""
    which = f"the reads of {topic!r}" if missing == total else f"{missing} of the {total} reads of {topic!r}"
    return (
        f"--promise {str(p)!r}: {which} carry no record key; match 'by value' "
        f"('{p.source} -> {p.target} by value'), or record keys (engine.record's wrappers do)"
    )


#: The database findings printed one per line (the rest are counted).
MAX_EFFECTS_SHOWN = 20


def _print_effects(effects: list[Anomaly], as_json: bool, report: Report | None) -> int:
    """Print the database check (after the history report, when there is one); return the exit status."""
    ok = not effects and (report is None or report.ok)
    if as_json:
        out: dict[str, Any] = {"effects": [a.to_json() for a in effects], "effect_counts": effect_summary(effects)}
        if report is not None:
            out["history"] = report.to_json()
        print(json.dumps(out, indent=2, sort_keys=True))
        return 0 if ok else 1
    if report is not None:
        print(report)
    counts = ", ".join(f"{k} {n}" for k, n in effect_summary(effects).items())
    print(f"database side: {counts}")
    for a in effects[:MAX_EFFECTS_SHOWN]:
        print(f"  {a.kind}: {a.message}")
    if len(effects) > MAX_EFFECTS_SHOWN:
        print(f"  ... and {len(effects) - MAX_EFFECTS_SHOWN} more")
    return 0 if ok else 1
