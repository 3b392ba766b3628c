"""Benchmark: seeds per minute of a seed sweep on Spark ``local[2]`` against the serial sweep, same run.

What runs, one after another (never two at once), on the same scenario and seeds:

- **serial**: ``engine.commands.sweep.run_one`` in a loop in one fresh interpreter (one core), after
  one untimed warm-up run that pays the lazy imports; the loop alone is timed.
- **eos sweep --jobs 2**: the whole command (``python -m engine.cli sweep ... --jobs 2 --quiet``) in a
  fresh interpreter, wall time from launch to exit: interpreter start, imports, the two spawned
  workers and the runs. What a user waits for on this 2-core machine.
- **spark**: :func:`eos_magics.spark.sweep.sweep` in this process on ``local[2]`` (default
  partitions: twice the cores). The session start is timed apart; then the sweep twice: *cold*
  (the first job: Python workers fork and import the engine) and *warm* (workers reused).

Printed: wall seconds and seeds/min of each, and the ratios of Spark's to the serial loop's and to
``eos sweep --jobs 2``'s. Checked: the Spark rows (status, kinds, verdict, full fingerprint) equal
the serial loop's seed by seed, and ``eos sweep --jobs 2`` prints the same text as the serial rows;
any difference exits 1. Figures only; no timing is asserted. The machine note gives the load
average before and after (other work on the machine skews every figure).

Usage::

    python bench/bench_spark_sweep.py                       # 100 seeds of 'idempotence: lost ack retry'
    python bench/bench_spark_sweep.py --seeds 200 --mutant M1
    python bench/bench_spark_sweep.py --scenario 'isolation: lso off by one' --seeds 40
    python bench/bench_spark_sweep.py --quick               # 20 seeds
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import BenchError, finish, machine_note, run_json_child  # noqa: E402 - after the path setup

sys.path.insert(0, str(ROOT))

DEFAULT_SCENARIO = "idempotence: lost ack retry"


def judged(status: str, kinds: list[str], verdict: str, fingerprint: str | None) -> list[Any]:
    """Return what the two sweeps must agree on for one seed."""
    return [status, sorted(kinds), verdict, fingerprint]


def seeds_of(args: argparse.Namespace) -> list[int]:
    """Return the seeds the bench sweeps."""
    return list(range(args.first_seed, args.first_seed + args.seeds))


def report_text(rows: list[Any], mutant: str | None) -> str:
    """Return what ``eos sweep`` prints for ``rows`` after its runs."""
    from engine.commands.sweep import print_report

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print_report(rows, mutant)
    return buf.getvalue()


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    """The serial side, in this (fresh) process: warm up once, then time ``run_one`` over the seeds."""
    from engine.commands.sweep import run_one

    run_one((args.scenario, 0, args.mutant, False))  # pays the imports of the checker and invariants
    t0 = time.perf_counter()
    rows = [run_one((args.scenario, seed, args.mutant, False)) for seed in seeds_of(args)]
    seconds = time.perf_counter() - t0
    judged_rows = {
        str(r.seed): judged(
            r.status, [] if r.kinds == "-" else r.kinds.split(","), r.verdict, r.full_fingerprint or None
        )
        for r in rows
    }
    return {"seconds": seconds, "rows": judged_rows, "text": report_text(rows, args.mutant)}


def child_cmd(args: argparse.Namespace) -> list[str]:
    """Return the command that runs the serial side in a fresh interpreter."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--scenario", args.scenario]
    cmd += ["--seeds", str(args.seeds), "--first-seed", str(args.first_seed)]
    return cmd + (["--mutant", args.mutant] if args.mutant else [])


def eos_sweep_jobs(args: argparse.Namespace, jobs: int) -> tuple[float, str]:
    """Run ``eos sweep ... --jobs N --quiet`` in a fresh interpreter; return its wall seconds and stdout."""
    cmd = [sys.executable, "-m", "engine.cli", "sweep", args.scenario, "--seeds", str(args.seeds)]
    cmd += ["--first-seed", str(args.first_seed), "--jobs", str(jobs), "--quiet"]
    cmd += ["--mutant", args.mutant] if args.mutant else []
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=args.timeout, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise BenchError(f"eos sweep --jobs {jobs} exited {proc.returncode}:\n{proc.stderr.strip()[-3000:]}")
    return wall, proc.stdout


def spark_side(args: argparse.Namespace) -> dict[str, Any]:
    """Start Spark here, then sweep twice (cold, warm); return the timings and the rows."""
    from eos_magics.spark import session
    from eos_magics.spark.sweep import sweep

    t0 = time.perf_counter()
    spark = session.start(args.master)
    started = time.perf_counter() - t0
    times, rows = [], {}
    for _ in range(2):
        t0 = time.perf_counter()
        df = sweep(spark, args.scenario, seeds_of(args), args.mutant, partitions=args.partitions)
        times.append(time.perf_counter() - t0)
        rows = {
            str(r.seed): judged(r.status, list(r.kinds), r.verdict, r.fingerprint)
            for r in df.select("seed", "status", "kinds", "verdict", "fingerprint").collect()
        }
    parallelism = spark.sparkContext.defaultParallelism
    session.stop()
    return {"start": started, "cold": times[0], "warm": times[1], "rows": rows, "parallelism": parallelism}


def per_min(n: int, seconds: float) -> str:
    """Return ``"N.N seeds/min"``."""
    return f"{60 * n / seconds:,.1f} seeds/min"


def main(argv: list[str] | None = None) -> int:
    """Parse the options; run the serial child, eos sweep --jobs 2, then Spark; print figures and ratios."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scenario", default=DEFAULT_SCENARIO, help=f"a catalog scenario ({DEFAULT_SCENARIO!r})")
    ap.add_argument("--seeds", type=int, default=100, help="how many seeds (default 100)")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--mutant", help="sweep a mutant, e.g. M1 (some seeds then FAIL, as they should)")
    ap.add_argument("--master", help="Spark master (default EOS_SPARK_MASTER or local[2])")
    ap.add_argument("--partitions", type=int, help="Spark partitions (default twice the cores)")
    ap.add_argument("--no-jobs", action="store_true", help="skip eos sweep --jobs 2")
    ap.add_argument("--quick", action="store_true", help="smoke size: 20 seeds")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per child (default 1800)")
    ap.add_argument("--child", action="store_true", help="run the serial side here and print one JSON line")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds = 20
    if args.child:
        print(json.dumps(run_child(args)))
        return 0

    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.mutants import get_mutant

    if args.scenario not in BY_NAME or args.seeds < 1:
        print(f"--scenario {args.scenario!r} must be a catalog scenario and --seeds >= 1", file=sys.stderr)
        return 2
    args.mutant = get_mutant(args.mutant).id if args.mutant else None
    n = args.seeds
    print(
        f"spark sweep bench: '{args.scenario}'{' with ' + args.mutant if args.mutant else ''}, "
        f"{n} seeds ({args.first_seed}..{args.first_seed + n - 1}); each side alone on the machine"
    )
    print(f"before: {machine_note()}")
    failures: list[str] = []

    serial = run_json_child(child_cmd(args), timeout=args.timeout, what="serial run_one loop")
    secs = serial["seconds"]
    print(f"\nserial run_one loop, 1 process (warm, loop only): {secs:.1f} s -> {per_min(n, secs)}")

    jobs_wall = None
    if not args.no_jobs:
        jobs_wall, jobs_text = eos_sweep_jobs(args, 2)
        same = jobs_text == serial["text"]
        print(
            f"eos sweep --jobs 2 (whole command, fresh interpreter): {jobs_wall:.1f} s -> {per_min(n, jobs_wall)}; "
            f"output {'matches' if same else 'DIFFERS from'} the serial rows"
        )
        if not same:
            failures.append("eos sweep --jobs 2 printed another table than the serial rows")

    spark = spark_side(args)
    print(f"spark session start (JVM launch, {args.master or 'default master'}): {spark['start']:.1f} s")
    for label in ("cold", "warm"):
        what = "first job: workers fork and import" if label == "cold" else "workers reused"
        print(f"spark sweep, {label} ({what}): {spark[label]:.1f} s -> {per_min(n, spark[label])}")
    total = spark["start"] + spark["cold"]
    print(f"spark from nothing (start + cold sweep): {total:.1f} s -> {per_min(n, total)}")

    mismatched = [s for s, row in serial["rows"].items() if spark["rows"].get(s) != row]
    if mismatched or len(spark["rows"]) != n:
        failures.append(f"spark rows differ from the serial rows for seeds {', '.join(mismatched[:10]) or '(count)'}")

    print("\nratios (seeds/min, higher is faster):")
    print(
        f"  spark warm / serial loop:       {serial['seconds'] / spark['warm']:.2f}x "
        f"(defaultParallelism {spark['parallelism']})"
    )
    print(f"  spark cold / serial loop:       {serial['seconds'] / spark['cold']:.2f}x")
    if jobs_wall is not None:
        print(f"  spark warm / eos sweep --jobs 2: {jobs_wall / spark['warm']:.2f}x")
        print(f"  spark from nothing / eos sweep --jobs 2: {jobs_wall / total:.2f}x")
    print(f"after: {machine_note()}")
    return finish(failures, f"\nall {n} Spark rows equal the serial rows. No timing is asserted.")


if __name__ == "__main__":
    sys.exit(main())
