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
import dataclasses
import sys
import traceback


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("name", help="a catalog scenario name, or 'all'")
    parser.add_argument("--seeds", type=int, default=20, help="how many seeds (default 20)")
    parser.add_argument(
        "--first-seed", type=int, default=1, help="the first seed; the sweep runs seeds FIRST..FIRST+N-1 (default 1)"
    )
    parser.add_argument("--swarm", action="store_true", help="swarm mode: a random subset of fault kinds per seed")
    parser.add_argument("--mutant", help="sweep a weakened configuration M1..M18")
    parser.add_argument("--shrink", action="store_true", help="shrink the fault plan of the first failure")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1; seeds are independent)")


@dataclasses.dataclass(frozen=True)
class Row:
    """One judged (scenario, seed): what the table prints, picklable across worker processes."""

    name: str
    seed: int
    #: PASS, CAUGHT, FAIL or SKIP
    status: str
    kinds: str
    verdict: str
    replay: str
    ops: int | None = None
    sim_ms: int | None = None
    fingerprint: str = "-"
    #: the formatted traceback when the run raised (an internal error), else ""
    traceback: str = ""
    #: where the exception was raised (type, file, line), so that one bug hit on many seeds and
    #: by many call paths is printed once
    origin: str = ""
    #: the run's whole fingerprint (``fingerprint`` is its first 12 characters), "" when it raised
    full_fingerprint: str = ""
    #: the one-line internal error (``"Type: message"``) when the run raised, else ""
    error: str = ""


def run_one(task: tuple) -> Row:
    """Run one (scenario, seed) and return its row; an exception becomes a FAIL row, never escapes."""
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.harness import replay_command, run_spec
    from engine.scenarios.mutants import get_mutant

    name, seed, mutant_id, swarm = task
    try:
        r = run_spec(BY_NAME[name], seed, mutant=get_mutant(mutant_id) if mutant_id else None, swarm=swarm)
    except Exception as exc:  # one run's internal error must not lose the whole table
        return _error_row(name, seed, replay_command(name, seed, mutant=mutant_id, swarm=swarm), exc)
    return Row(
        name,
        seed,
        r.status,
        ",".join(r.kinds) or "-",
        r.verdict(),
        r.replay,
        r.history_size,
        r.cluster.now_ms,
        r.fingerprint[:12],
        full_fingerprint=r.fingerprint,
    )


def _error_row(name: str, seed: int, replay: str, exc: Exception) -> Row:
    what = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return Row(
        name,
        seed,
        "FAIL",
        f"error:{type(exc).__name__}",
        f"FAIL {name} seed={seed}: error: {what}",
        replay,
        traceback="".join(traceback.format_exception(exc)),
        origin=_origin(exc),
        error=what,
    )


def _origin(exc: Exception) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}"


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
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            for row in pool.imap(run_one, tasks, chunksize=2):
                progress(row)
    else:
        for task in tasks:
            progress(run_one(task))
    if not quiet and sys.stderr.isatty():
        sys.stderr.write("\n")  # end the bar's line
    return rows


def _print_table(rows: list[Row]) -> None:
    print(f"{'scenario':<46} {'seed':>6} {'verdict':<7} {'forbidden':<34} {'ops':>6} {'sim_ms':>8} fingerprint")
    for r in rows:
        ops = "-" if r.ops is None else r.ops
        ms = "-" if r.sim_ms is None else r.sim_ms
        print(f"{r.name[:46]:<46} {r.seed:>6} {r.status:<7} {r.kinds[:34]:<34} {ops:>6} {ms:>8} {r.fingerprint}")
    by_scenario: dict[str, dict[str, int]] = {}
    for r in rows:
        counts = by_scenario.setdefault(r.name, dict.fromkeys(STATUSES, 0))
        counts[r.status] += 1
    print()
    print(f"{'scenario':<46} {'pass':>5} {'caught':>6} {'fail':>5} {'skip':>5}")
    for name, c in by_scenario.items():
        print(f"{name[:46]:<46} {c['PASS']:>5} {c['CAUGHT']:>6} {c['FAIL']:>5} {c['SKIP']:>5}")


#: A row's statuses, in the order the tables count them.
STATUSES = ("PASS", "CAUGHT", "FAIL", "SKIP")


def _summary(rows: list[Row], mode: str) -> str:
    """Return the one summary line: passed, caught (positive controls), failed (how many raised), skipped."""
    count = {s: sum(1 for r in rows if r.status == s) for s in STATUSES}
    errors = sum(1 for r in rows if r.traceback)
    raised = f" ({errors} raised an exception)" if errors else ""
    caught = f", {count['CAUGHT']} caught (positive controls)" if count["CAUGHT"] else ""
    skipped = f", {count['SKIP']} skipped (a positive control that could not show its anomaly)" if count["SKIP"] else ""
    return f"{len(rows)} runs{mode}: {count['PASS']} passed{caught}, {count['FAIL']} failed{raised}{skipped}"


def _print_failures(failures: list[Row]) -> None:
    for r in failures:
        print(f"FAILED seed {r.seed}: {r.verdict[:300]}\n  replay: {r.replay}")
    first_of: dict[str, Row] = {}
    for r in failures:
        if r.traceback:
            first_of.setdefault(r.origin, r)
    for origin, first in first_of.items():
        seeds: dict[str, list[str]] = {}
        for r in failures:
            if r.origin == origin:
                seeds.setdefault(r.name, []).append(str(r.seed))
        where = "; ".join(f"'{name}' seeds {', '.join(s)}" for name, s in seeds.items())
        print(f"\ninternal error {origin}, in {where}; traceback of seed {first.seed}:")
        print("  " + first.traceback.rstrip("\n").replace("\n", "\n  "))


def print_report(rows: list[Row], mutant_id: str | None = None) -> list[Row]:
    """Print what ``eos sweep`` prints after its runs (table, summary line, failures); return the failures.

    ``eos-spark sweep`` prints its rows with this too, so both commands print the same text.
    """
    _print_table(rows)
    failures = [r for r in rows if r.status == "FAIL"]
    print("\n" + _summary(rows, f" with {mutant_id}" if mutant_id else ""))
    _print_failures(failures)
    return failures


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
