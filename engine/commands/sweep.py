"""``eos sweep NAME --seeds N [--swarm] [--mutant M..]``: many seeds, a table of verdicts.

Each seed runs the scenario's safety phase (faults on), heal, liveness, and final reads. A
progress bar goes to stderr; the table to stdout. Every failure prints its seed and the one
command that replays it; ``--shrink`` also deletes fault-plan entries while the run still fails
and prints the smallest failing plan. ``NAME`` may be ``all``.

A sweep never dies on one run: a run that raises (an internal error of the engine) is a ``FAIL``
whose kind is ``error:<ExceptionName>``, and its traceback is printed under the table, once per
distinct stack. A positive control that showed its anomaly is ``CAUGHT``; one that could not
show it on a seed (swarm did not draw its fault kind, or its workload says why) is ``SKIP`` with
the reason; both are counted apart from passes and failures.
"""

from __future__ import annotations

import argparse
import sys

from engine.scenarios.sweep import POOL_CHUNKSIZE, Row, print_report, run_one, worker_pool

__all__ = ["Row", "add_arguments", "print_report", "run", "run_one"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("name", help="a catalog scenario name, or 'all'")
    parser.add_argument("--seeds", type=int, default=20, help="how many seeds (default 20)")
    parser.add_argument(
        "--first-seed", type=int, default=1, help="the first seed; the sweep runs seeds FIRST..FIRST+N-1 (default 1)"
    )
    parser.add_argument("--swarm", action="store_true", help="swarm mode: a random subset of fault kinds per seed")
    parser.add_argument("--mutant", help="sweep a weakened configuration M1..M19")
    parser.add_argument("--shrink", action="store_true", help="shrink the fault plan of the first failure")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1; seeds are independent)")


def _bar(done: int, total: int, fails: int, name: str) -> None:
    """Redraw the progress bar in place on a terminal; elsewhere (a log, a pipe) one line per tenth."""
    if not sys.stderr.isatty():
        if done == total or done % max(1, total // 10) == 0:
            sys.stderr.write(f"{done}/{total} runs, {fails} failed\n")
        return
    width = 30
    filled = int(width * done / max(1, total))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} fail={fails} {name[:40]:<40}")
    sys.stderr.flush()


def _run_all(tasks: list[tuple], jobs: int, quiet: bool) -> list[Row]:
    """Run every task, in ``jobs`` worker processes when more than one; rows in task order."""
    rows: list[Row] = []
    fails = 0

    def progress(row: Row) -> None:
        nonlocal fails
        rows.append(row)
        fails += row.status == "FAIL"
        if not quiet:
            _bar(len(rows), len(tasks), fails, row.name)

    if jobs > 1:
        with worker_pool(jobs) as pool:
            for row in pool.imap(run_one, tasks, chunksize=POOL_CHUNKSIZE):
                progress(row)
    else:
        for task in tasks:
            progress(run_one(task))
    if not quiet and sys.stderr.isatty():
        sys.stderr.write("\n")  # end the bar's line
    return rows


def _shrink_first(first: Row, mutant: object, swarm: bool) -> None:
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.harness import fault_plan, shrink

    spec = BY_NAME[first.name]
    plan = fault_plan(spec, first.seed, mutant=mutant, swarm=swarm)  # type: ignore[arg-type]
    small = shrink(spec, first.seed, plan, mutant=mutant)  # type: ignore[arg-type]
    print(f"\nshrunk fault plan for seed {first.seed} ({len(plan)} -> {len(small)} entries):\n{small}")


def _specs(name: str) -> list:
    from engine.cli import UsageError
    from engine.scenarios.catalog import SPECS, get_spec

    if name == "all":
        return list(SPECS)
    try:
        return [get_spec(name)]
    except KeyError as exc:
        raise UsageError(f"eos sweep: {exc.args[0]}") from None


def run(args: argparse.Namespace) -> int:
    """Sweep; exit 1 if any seed failed (a run that raised counts as failed)."""
    from engine.cli import UsageError
    from engine.scenarios.mutants import get_mutant

    if args.seeds < 1:
        raise UsageError("eos sweep: --seeds must be at least 1, e.g. --seeds 50")
    specs = _specs(args.name)
    mutant = None
    if args.mutant:
        try:
            mutant = get_mutant(args.mutant)
        except KeyError as exc:
            raise UsageError(f"eos sweep: {exc.args[0]}") from None
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    tasks = [(spec.name, seed, args.mutant, args.swarm) for spec in specs for seed in seeds]
    rows = _run_all(tasks, args.jobs, args.quiet)
    failures = print_report(rows, mutant.id if mutant else None)
    if failures and args.shrink:
        _shrink_first(failures[0], mutant, args.swarm)
    return 1 if failures else 0
