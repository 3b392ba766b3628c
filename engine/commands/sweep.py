"""``eos sweep NAME --seeds N [--swarm] [--mutant M..]``: many seeds, a table of verdicts.

Each seed runs the scenario's safety phase (faults on), heal, liveness, and final reads. A
progress bar goes to stderr; the table to stdout. Every failure prints its seed and the one
command that replays it; ``--shrink`` also deletes fault-plan entries while the run still fails
and prints the smallest failing plan. ``NAME`` may be ``all``.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("name", help="a catalog scenario name, or 'all'")
    parser.add_argument("--seeds", type=int, default=20, help="how many seeds (default 20)")
    parser.add_argument("--first-seed", type=int, default=1, help="the first seed (default 1)")
    parser.add_argument("--swarm", action="store_true", help="swarm mode: a random subset of fault kinds per seed")
    parser.add_argument("--mutant", help="sweep a weakened configuration M1..M16")
    parser.add_argument("--shrink", action="store_true", help="shrink the fault plan of the first failure")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1; seeds are independent)")


def _bar(done: int, total: int, fails: int, name: str) -> None:
    width = 30
    filled = int(width * done / max(1, total))
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} fail={fails} {name[:40]:<40}")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    """Sweep; exit 1 if any seed failed."""
    from engine.cli import UsageError
    from engine.scenarios.catalog import BY_NAME, SPECS
    from engine.scenarios.harness import run_spec, shrink
    from engine.scenarios.mutants import get_mutant

    if args.seeds < 1:
        raise UsageError("eos sweep: --seeds must be at least 1, e.g. --seeds 50")
    if args.name == "all":
        specs = list(SPECS)
    elif args.name in BY_NAME:
        specs = [BY_NAME[args.name]]
    else:
        import difflib

        close = difflib.get_close_matches(args.name, list(BY_NAME), n=1)
        hint = f"did you mean '{close[0]}'?" if close else "run 'eos scenarios' to list them"
        raise UsageError(f"eos sweep: no catalog scenario named '{args.name}'; {hint}")
    mutant = None
    if args.mutant:
        try:
            mutant = get_mutant(args.mutant)
        except KeyError as exc:
            raise UsageError(f"eos sweep: {exc.args[0]}") from None
    rows = []
    failures = []
    total = len(specs) * args.seeds
    tasks = [
        (spec.name, seed, args.mutant, args.swarm)
        for spec in specs
        for seed in range(args.first_seed, args.first_seed + args.seeds)
    ]
    if args.jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            results = []
            for done, res in enumerate(pool.imap(_one, tasks, chunksize=2), start=1):
                results.append(res)
                if not args.quiet:
                    _bar(done, total, sum(1 for r in results if not r[2]), res[0])
    else:
        results = []
        for done, task in enumerate(tasks, start=1):
            results.append(_one(task))
            if not args.quiet:
                _bar(done, total, sum(1 for r in results if not r[2]), task[0])
    for name, seed, ok, kinds, ops, ms, fp, verdict, replay in results:
        rows.append((name, seed, "PASS" if ok else "FAIL", kinds, ops, ms, fp))
        if not ok:
            failures.append((seed, verdict, replay, name))
    if not args.quiet:
        sys.stderr.write("\n")
    print(f"{'scenario':<46} {'seed':>6} {'verdict':<7} {'forbidden':<34} {'ops':>6} {'sim_ms':>8} fingerprint")
    for name, seed, verdict, kinds, ops, ms, fp in rows:
        print(f"{name[:46]:<46} {seed:>6} {verdict:<7} {kinds[:34]:<34} {ops:>6} {ms:>8} {fp}")
    by_scenario: dict[str, list[int]] = {}
    for name, _seed, verdict, *_ in rows:
        counts = by_scenario.setdefault(name, [0, 0])
        counts[0 if verdict == "PASS" else 1] += 1
    print()
    print(f"{'scenario':<46} {'pass':>5} {'fail':>5}")
    for name, (p, f) in by_scenario.items():
        print(f"{name[:46]:<46} {p:>5} {f:>5}")
    mode = f" with {mutant.id}" if mutant else ""
    print(f"\n{len(rows)} runs{mode}: {len(rows) - len(failures)} passed, {len(failures)} failed")
    for seed, verdict, replay, _name in failures:
        print(f"FAILED seed {seed}: {verdict[:300]}\n  replay: {replay}{' --swarm' if args.swarm else ''}")
    if failures and args.shrink:
        seed, _verdict, _replay, name = failures[0]
        first = run_spec(BY_NAME[name], seed, mutant=mutant, swarm=args.swarm)
        small = shrink(first.spec, first.seed, first.plan, mutant=mutant)
        print(f"\nshrunk fault plan for seed {first.seed} ({len(first.plan)} -> {len(small)} entries):\n{small}")
    return 1 if failures else 0


def _one(task: tuple) -> tuple:
    """Run one (scenario, seed) and return a picklable summary row."""
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.harness import run_spec
    from engine.scenarios.mutants import get_mutant

    name, seed, mutant_id, swarm = task
    r = run_spec(BY_NAME[name], seed, mutant=get_mutant(mutant_id) if mutant_id else None, swarm=swarm)
    kinds = r.kinds
    return (
        name,
        seed,
        r.ok,
        ",".join(kinds) or "-",
        r.history_size,
        r.cluster.now_ms,
        r.fingerprint[:12],
        r.verdict(),
        r.replay,
    )
