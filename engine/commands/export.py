"""``eos export NAME --seed N [--seeds A..B] [--mutant M] --out DIR``: runs as Parquet tables.

Role
----
Runs a catalog scenario on one seed or a range of seeds and writes each run as the tables of
``docs/export-schema.md`` under ``DIR`` (``DIR/<table>/<run_id>.parquet`` and the manifest
``DIR/eos-export.json``). ``eos export --history FILE.jsonl --out DIR`` exports a client history
file alone: the history tables, every other table empty. Writing into a directory that already
holds an export adds the runs; a run id already there is refused unless ``--overwrite``.

For each run it prints one line with the run id and its verdict, then one line of row counts per
table; the last line names the directory.

Exit statuses: 0 written; 2 a bad argument, a bad history file or a directory that cannot take
the export (one line, no traceback).

What it does not do
-------------------
It judges nothing (``eos run`` and ``eos sweep`` do): a failing run is exported like any other.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

#: At most this many seeds per ``--seeds`` range (a bigger sweep belongs to ``eos sweep`` or Spark).
MAX_SEEDS = 1_000

_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument(
        "name", nargs="?", help="a catalog scenario name (see 'eos scenarios'); quote names with spaces"
    )
    parser.add_argument("--seed", type=int, help="the run's seed (default 7)")
    parser.add_argument("--seeds", metavar="A..B", help="export every seed from A to B inclusive, e.g. 1..10")
    parser.add_argument("--mutant", help="run a weakened configuration, M1..M19 (see 'eos mutants --list')")
    parser.add_argument("--swarm", action="store_true", help="replace the fault plan with a swarm plan for each seed")
    parser.add_argument("--history", metavar="FILE.jsonl", help="export this client history file instead of a run")
    parser.add_argument("--out", required=True, metavar="DIR", help="the export directory (created if missing)")
    parser.add_argument("--overwrite", action="store_true", help="replace runs the directory already holds")


def parse_seeds(seed: int | None, seeds: str | None) -> list[int]:
    """Return the seeds asked for: ``--seed N``, ``--seeds A..B`` (inclusive), or 7.

    Raises
    ------
    UsageError
        For both options at once, a range that is not ``A..B``, B < A, or more than :data:`MAX_SEEDS` seeds.
    """
    from engine.cli import UsageError

    if seed is not None and seeds is not None:
        raise UsageError("eos export: give --seed N or --seeds A..B, not both")
    if seeds is None:
        return [7 if seed is None else seed]
    m = _RANGE.match(seeds)
    if m is None:
        raise UsageError(f"eos export: --seeds takes a range A..B such as 1..10, not {seeds!r}")
    first, last = int(m.group(1)), int(m.group(2))
    if last < first:
        raise UsageError(f"eos export: --seeds {seeds}: the range is empty; write it low..high, e.g. {last}..{first}")
    if last - first + 1 > MAX_SEEDS:
        raise UsageError(f"eos export: --seeds {seeds} is {last - first + 1} seeds; export at most {MAX_SEEDS} at once")
    return list(range(first, last + 1))


def run(args: argparse.Namespace) -> int:
    """Export the runs (or the history file); exit 0 when written, 2 on a bad argument or directory."""
    from engine.cli import UsageError
    from engine.export.schema import ExportError

    try:
        if args.history is not None:
            return _export_history_file(args)
        return _export_runs(args)
    except ExportError as exc:
        raise UsageError(f"eos export: {exc}") from None


def _export_runs(args: argparse.Namespace) -> int:
    from engine.cli import UsageError
    from engine.export.parquet import check_target
    from engine.export.run import export_run, run_id_for
    from engine.scenarios.catalog import get_spec
    from engine.scenarios.harness import run_spec
    from engine.scenarios.mutants import get_mutant

    if not args.name:
        raise UsageError("eos export: name a scenario (eos export NAME --seed N --out DIR) or give --history FILE")
    try:
        spec = get_spec(args.name)
        mutant = get_mutant(args.mutant) if args.mutant else None
    except KeyError as exc:
        raise UsageError(f"eos export: {exc.args[0]}") from None
    seeds = parse_seeds(args.seed, args.seeds)
    ids = [run_id_for(spec.name, s, mutant.id if mutant else None, swarm=args.swarm) for s in seeds]
    check_target(args.out, ids, overwrite=args.overwrite)  # fail before the first run, not after it
    for seed in seeds:
        result = run_spec(spec, seed, mutant=mutant, swarm=args.swarm)
        export = export_run(result)
        export.write_parquet(args.out, overwrite=args.overwrite)
        _print_run(export, result.verdict())
    print(f"wrote {len(seeds)} run{'s' if len(seeds) != 1 else ''} to {Path(args.out)}")
    return 0


def _export_history_file(args: argparse.Namespace) -> int:
    from engine.check.history import HistoryFormatError
    from engine.check.jsonl import load_jsonl
    from engine.cli import UsageError
    from engine.export.run import export_history, run_id_for

    if args.name or args.seeds or args.mutant or args.swarm:
        raise UsageError("eos export: --history exports a file alone; drop the scenario, --seeds, --mutant, --swarm")
    path = args.history
    try:
        history = load_jsonl(path)
    except FileNotFoundError:
        raise UsageError(f"eos export: {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"eos export: {path}: is a directory, not a history file") from None
    except UnicodeDecodeError:
        raise UsageError(f"eos export: {path}: not UTF-8 text") from None
    except HistoryFormatError as exc:
        raise UsageError(f"eos export: {path}: {exc}") from None
    except OSError as exc:
        raise UsageError(f"eos export: {path}: cannot read ({exc.strerror or exc})") from None
    seed = 0 if args.seed is None else args.seed
    run_id = run_id_for(Path(path).stem, seed).removesuffix(f"-s{seed}")
    export = export_history(history, run_id, seed=seed)
    export.write_parquet(args.out, overwrite=args.overwrite)
    _print_run(export, f"history {path}: {len(history)} records")
    print(f"wrote 1 run to {Path(args.out)}")
    return 0


def _print_run(export: Any, verdict: str) -> None:
    counts = export.row_counts()
    print(f"{export.run_ids[0]}: {verdict}")
    print("  " + " ".join(f"{name}={n}" for name, n in counts.items()))
