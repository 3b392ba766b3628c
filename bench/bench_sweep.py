"""Benchmark: seeds per minute of a ~10k-record scenario (and of a small catalog one), with verdicts.

What runs:

- **big**: a :class:`~engine.scenarios.harness.Spec` shaped like the catalog's, sized so that
  one run writes about 10,000 records. By default ``IdempotentSends(producers=2,
  processes_per_producer=5, sends_per_process=1000)`` (10 sender processes x 1,000 sends) with the
  catalog's ``lost_acks`` fault plan and ``FAST_FAILOVER`` broker config; the safety phase is
  ``--safety-ms`` (default 60 s simulated) so every send completes, as the senders stop at the end of
  it. ``--workload txns`` uses ``Transactions(processes=4, txns_per_process=100,
  sends_per_txn=(20, 30))`` instead (about 10k records in about 400 transactions); ``--faults``
  picks another catalog plan (``swarm``, ``reorders``, ``rolling_crashes``, ... or ``none``).
- **small**: a catalog scenario as it is (default ``idempotence: lost ack retry``: 4 processes x
  40 sends), for comparison.

Each scenario's seeds (``--seeds`` N, default 5, from ``--first-seed``) run one after another in one
fresh subprocess (one core), after one untimed warm-up run (the small catalog scenario, seed 0,
which pays the lazy imports), every seed timed on its own with ``run_spec`` (safety, heal,
liveness, final reads, the checker and the white-box invariants: everything ``eos sweep`` does
per seed); a seed's result is dropped before the next seed runs, as ``eos sweep`` drops it. With
``--jobs 2`` (the default) the big scenario's seeds also run split over 2 processes at once, to
show what this 2-core machine gives in parallel; the two runs of a seed must end with the same
fingerprint (the simulation is deterministic).

Printed: per seed the wall and CPU seconds, simulated ms, events, records written and the verdict;
per scenario the mean seconds per seed and seeds per minute (of wall time, and of CPU time: the
steadier figure when other work shares the cores). ``--baseline-tree DIR`` also runs the big
seeds on another checkout's engine (this script's child with ``--engine-tree DIR``, so both sides
are timed by the same code), one fresh child per seed, alternating this tree's and the
baseline's so that a drift in the machine's load falls on both; it prints the same-run ratios.
Every verdict must be PASS (this is the
correct EOS configuration, no mutant): any FAIL, a fingerprint mismatch or a crashed child exits
non-zero. Figures only; no timing is asserted.

**Scale-out** (``--scale``, instead of the tables above): the big scenario swept over worker
processes as ``eos sweep --jobs N`` runs a sweep, for N = 1, 2 and every doubling up to the
machine's cores (``--scale-jobs`` to choose). No catalog scenario writes 10k records, so the
command itself cannot be pointed at the big spec; instead this drives the pool code
``engine.commands.sweep._run_all`` uses (``engine.scenarios.sweep.worker_pool``, a ``spawn`` pool whose
``imap(run_one, tasks, chunksize=2)`` runs ``engine.scenarios.sweep.run_one``, the sweep's own
task), with the big spec registered in each worker's catalog by the pool's initializer, and a
wall-clock stamp around each task (in the bench process only). Each N runs ``--scale-per-job``
seeds per worker (default 8, so every N takes about the same wall time), from seed 1. Printed per
N: seeds, wall seconds, seeds/min, speed-up over N = 1, efficiency (speed-up / N), the mean
seconds per seed inside the workers, and the start-up (pool creation to a worker's first task:
process spawn and imports, the mean over the workers) as a share of the wall. A seed swept at two
N must end with the same fingerprint; any FAIL or mismatch exits non-zero.

Usage::

    python bench/bench_sweep.py                        # 5 seeds each
    python bench/bench_sweep.py --scale                # scale-out: N = 1, 2, 4, ... up to the cores
    python bench/bench_sweep.py --seeds 10 --jobs 1
    python bench/bench_sweep.py --workload txns --faults swarm
    python bench/bench_sweep.py --quick                # 2 seeds, 2k records
    # one scenario in this process, e.g. under a profiler:
    python -m cProfile -s cumtime bench/bench_sweep.py --child big --seeds 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import BenchError, finish, machine_note  # noqa: E402 - after the path setup

sys.path.insert(0, str(ROOT))

SMALL_DEFAULT = "idempotence: lost ack retry"


# ==========================================================================================
# the scenarios
# ==========================================================================================


def big_spec(args: argparse.Namespace) -> Any:
    """Return the ~``--records``-record Spec (see the module doc)."""
    from engine.scenarios import catalog, fault_plans
    from engine.scenarios.harness import Spec
    from engine.scenarios.workloads import IdempotentSends, Transactions

    if args.faults == "none":
        faults = None
    else:
        faults = getattr(fault_plans, args.faults, None)
        if not callable(faults):
            msg = f"--faults {args.faults!r} is not a fault-plan function of engine/scenarios/fault_plans.py"
            raise BenchError(msg)
    if args.workload == "sends":
        senders = 10
        workload = IdempotentSends(
            producers=2, processes_per_producer=senders // 2, sends_per_process=max(1, args.records // senders)
        )
        what = f"IdempotentSends(producers=2, processes_per_producer=5, sends_per_process={workload.sends_per_process})"
    else:
        per_txn = (20, 30)
        txns = max(1, round(args.records / 25 / 4))
        workload = Transactions(processes=4, txns_per_process=txns, sends_per_txn=per_txn)
        what = f"Transactions(processes=4, txns_per_process={txns}, sends_per_txn={per_txn})"
    spec = Spec(
        f"bench: ~{args.records} records, {args.workload}, {args.faults}",
        f"{what}, faults {args.faults}",
        workload,
        faults,
        broker_config=catalog.FAST_FAILOVER,
        safety_ms=args.safety_ms,
    )
    return spec


def records_written(result: Any) -> tuple[int, int]:
    """Return (data records, control batches) in the final leader logs of the spec's topics, sentinels excluded."""
    c = result.cluster
    data = markers = 0
    for t in result.spec.topics:
        for p in range(t.partitions):
            leader = c.leader(t.name, p)
            if leader <= 0:
                continue
            for b in c.brokers[leader].replicas[(t.name, p)].log.batches:
                if b.is_control:
                    markers += 1
                    continue
                data += sum(1 for v in b.values if not (isinstance(v, str) and v.startswith("sentinel-")))
    return data, markers


class PhaseClock:
    """Split a run's wall time into phases by wrapping the functions that run them (bench only).

    ``simulation`` is the time inside the scheduler (``World.run_for``, ``Scheduler.step`` and
    ``run_until``, whoever calls them: the driver, a client's ``flush`` or ``commit_transaction``);
    ``driver`` is the rest of the safety, heal and liveness phases (the process loop, workload
    code, client API calls outside the scheduler); ``final reads`` the same for the last reads;
    ``setup`` building the cluster and the topics; ``history`` building the history;
    ``checker`` the black-box checks; ``invariants`` the white-box ones. A garbage-collector pass
    counts in the phase that triggered it. The engine never reads the clock: the wrappers live
    here, in the bench process only.
    """

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self._depth = 0

    def _add(self, phase: str, seconds: float) -> None:
        self.totals[phase] = self.totals.get(phase, 0.0) + seconds

    def wrap(self, owner: Any, name: str, phase: str, *, nested_sim: bool = False) -> None:
        """Replace ``owner.name`` with a timed version counting into ``phase``."""
        fn = getattr(owner, name)
        clock = self
        perf = time.perf_counter

        if phase == "simulation":

            def timed(*a: Any, **k: Any) -> Any:
                if clock._depth:
                    return fn(*a, **k)
                clock._depth = 1
                t0 = perf()
                try:
                    return fn(*a, **k)
                finally:
                    clock._depth = 0
                    clock._add("simulation", perf() - t0)

        else:

            def timed(*a: Any, **k: Any) -> Any:
                sim0 = clock.totals.get("simulation", 0.0)
                t0 = perf()
                try:
                    return fn(*a, **k)
                finally:
                    spent = perf() - t0
                    if nested_sim:  # the scheduler time inside it is counted as simulation
                        spent -= clock.totals.get("simulation", 0.0) - sim0
                    clock._add(phase, spent)

        setattr(owner, name, timed)

    def install(self) -> None:
        """Wrap the engine's and the harness's phase functions."""
        from engine.scenarios import harness
        from engine.sim.scheduler import Scheduler
        from engine.sim.world import World

        for owner, name in ((World, "run_for"), (Scheduler, "step"), (Scheduler, "run_until")):
            self.wrap(owner, name, "simulation")
        self.wrap(harness.Run, "__init__", "setup", nested_sim=True)
        self.wrap(harness.Run, "drive", "driver", nested_sim=True)
        self.wrap(harness, "final_reads", "final reads", nested_sim=True)
        self.wrap(harness.HistoryRecorder, "history", "history")
        self.wrap(harness, "check_history", "checker")
        self.wrap(harness, "white_box", "invariants", nested_sim=True)

    def take(self) -> dict[str, float]:
        """Return the totals since the last take, and start again."""
        out, self.totals = self.totals, {}
        return out


PHASES = ("setup", "simulation", "driver", "final reads", "history", "checker", "invariants")


def run_child(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run the seeds of one scenario in this process; return one row per seed."""
    import engine
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.harness import run_spec

    engine_root = str(Path(engine.__file__).resolve().parent.parent)
    clock = PhaseClock()
    clock.install()

    spec = big_spec(args) if args.child == "big" else BY_NAME[args.child]
    seeds = args.seed_list or list(range(args.first_seed, args.first_seed + args.seeds))
    # Untimed warm-up: the first run_spec of a process imports the checker, the invariants, ...
    run_spec(BY_NAME[SMALL_DEFAULT], 0)
    clock.take()
    rows = []
    for seed in seeds:
        t0, c0 = time.perf_counter(), time.process_time()
        r = run_spec(spec, seed)
        seconds = time.perf_counter() - t0
        cpu = time.process_time() - c0
        phases = clock.take()
        data, markers = records_written(r)
        rows.append(
            {
                "seed": seed,
                "seconds": seconds,
                "cpu": cpu,
                "ok": r.ok,
                "verdict": r.verdict(),
                "records": data,
                "markers": markers,
                "sim_ms": r.cluster.now_ms,
                "events": r.cluster.world.scheduler.events_run,
                "history": r.history_size,
                "fingerprint": r.fingerprint,
                "spec": spec.name,
                "description": spec.description,
                "phases": phases,
                "engine_root": engine_root,
            }
        )
        if not args.json:
            print(f"seed {seed}: {seconds:.2f} s, {data:,} records, {r.verdict()}", flush=True)
        del r  # as in ``eos sweep``: a seed's run is garbage before the next one runs
    return rows


# ==========================================================================================
# scale-out: the big spec through eos sweep's pool
# ==========================================================================================


def _register_big_spec(options: dict[str, Any]) -> None:
    """Pool initializer: put the big spec in this worker's catalog, where ``run_one`` looks names up."""
    from engine.scenarios import catalog

    spec = big_spec(argparse.Namespace(**options))
    catalog.BY_NAME[spec.name] = spec


def _timed_run_one(task: tuple) -> tuple[Any, int, float, float]:
    """Run ``engine.scenarios.sweep.run_one(task)``; return its row, this worker's pid, and wall start and end."""
    from engine.scenarios.sweep import run_one

    start = time.time()  # wall clock across processes: the bench's, never the engine's
    row = run_one(task)
    return row, os.getpid(), start, time.time()


def scale_jobs(args: argparse.Namespace) -> list[int]:
    """Return the N to sweep with: ``--scale-jobs``, else 1, 2 and every doubling up to the usable cores."""
    if args.scale_jobs:
        return args.scale_jobs
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    jobs = [1]
    while jobs[-1] * 2 <= cores:
        jobs.append(jobs[-1] * 2)
    return jobs


def sweep_pool(args: argparse.Namespace, jobs: int, seeds: list[int]) -> dict[str, Any]:
    """Sweep the big spec's ``seeds`` over ``jobs`` workers as ``eos sweep --jobs`` does; return the figures."""
    options = {k: getattr(args, k) for k in ("records", "workload", "faults", "safety_ms")}
    name = big_spec(args).name
    tasks = [(name, seed, None, False) for seed in seeds]
    t0 = time.time()
    first_start: dict[int, float] = {}
    rows = []
    busy = 0.0
    from engine.scenarios.sweep import POOL_CHUNKSIZE, worker_pool

    with worker_pool(jobs, _register_big_spec, (options,)) as pool:
        for row, pid, start, end in pool.imap(_timed_run_one, tasks, chunksize=POOL_CHUNKSIZE):
            rows.append(row)
            busy += end - start
            first_start[pid] = min(start, first_start.get(pid, start))
    wall = time.time() - t0
    startup = sum(t - t0 for t in first_start.values()) / len(first_start)
    return {"jobs": jobs, "rows": rows, "wall": wall, "startup": startup, "per_seed": busy / len(rows)}


def run_scale(args: argparse.Namespace) -> int:
    """Print seeds/min, speed-up and efficiency of the big spec's sweep for each N; return the exit status."""
    jobs_list = scale_jobs(args)
    print(
        f"scale-out: {big_spec(args).name} ({big_spec(args).description}), swept as `eos sweep --jobs N` sweeps "
        f"(spawn pool, imap(run_one, chunksize=2)); {args.scale_per_job} seeds per worker from seed 1; "
        f"N = {', '.join(map(str, jobs_list))}"
    )
    print(machine_note())
    print()
    print(
        f"  {'N':>3} {'seeds':>5} {'wall s':>7} {'seeds/min':>9} {'speed-up':>8} {'efficiency':>10} "
        f"{'s/seed in worker':>16} {'start-up s':>10} {'share':>6}"
    )
    failures: list[str] = []
    fingerprints: dict[int, str] = {}
    base_rate = None
    for jobs in jobs_list:
        seeds = list(range(1, 1 + jobs * args.scale_per_job))
        res = sweep_pool(args, jobs, seeds)
        rate = 60 * len(seeds) / res["wall"]
        base_rate = base_rate or rate
        speedup = rate / base_rate
        print(
            f"  {jobs:>3} {len(seeds):>5} {res['wall']:>7.1f} {rate:>9.1f} {speedup:>8.2f} {speedup / jobs:>10.2f} "
            f"{res['per_seed']:>16.2f} {res['startup']:>10.2f} {100 * res['startup'] / res['wall']:>5.1f}%",
            flush=True,
        )
        for row in res["rows"]:
            if row.status != "PASS":
                failures.append(f"N={jobs} seed {row.seed}: {row.verdict[:300]}")
            known = fingerprints.setdefault(row.seed, row.full_fingerprint)
            if known != row.full_fingerprint:
                failures.append(f"N={jobs} seed {row.seed}: fingerprint {row.fingerprint} differs from another N's")
    print("\n  speed-up: seeds/min over N = 1's; efficiency: speed-up / N; start-up: pool creation to a worker's")
    print("  first seed (spawn, imports), the mean over the workers, as a share of the wall.")
    return finish(failures, "\nall verdicts PASS, every seed's fingerprint the same at every N. No timing is asserted.")


# ==========================================================================================
# driver
# ==========================================================================================


def child_cmd(args: argparse.Namespace, which: str, seeds: list[int]) -> list[str]:
    """Return the command that runs ``seeds`` of ``which`` in a fresh interpreter."""
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        which,
        "--seed-list",
        ",".join(map(str, seeds)),
        "--records",
        str(args.records),
        "--workload",
        args.workload,
        "--faults",
        args.faults,
        "--safety-ms",
        str(args.safety_ms),
        "--json",
    ]


def start(args: argparse.Namespace, which: str, seeds: list[int], tree: Path = ROOT) -> subprocess.Popen[str]:
    """Start one child (``tree``: another checkout's engine, e.g. the baseline's, timed by this script).

    The child is this script with ``--engine-tree`` (the other checkout's ``engine`` first on its
    path), so both sides are timed by the same code and print the same columns.
    """
    cmd = child_cmd(args, which, seeds)
    if tree != ROOT:
        cmd += ["--engine-tree", str(tree)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tree)


def collect(proc: subprocess.Popen[str], what: str, timeout: float) -> list[dict[str, Any]]:
    """Wait for a child; return its rows or raise BenchError with its stderr."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise BenchError(f"{what}: no result within {timeout:.0f} s") from None
    if proc.returncode != 0:
        raise BenchError(f"{what} exited {proc.returncode}:\n{err.strip()[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def run_serial(
    args: argparse.Namespace, which: str, seeds: list[int], tree: Path = ROOT
) -> tuple[list[dict[str, Any]], float]:
    """Run the seeds in one child; return the rows and the child's total wall time."""
    t0 = time.perf_counter()
    rows = collect(start(args, which, seeds, tree), which, args.timeout)
    return rows, time.perf_counter() - t0


def run_parallel(
    args: argparse.Namespace, which: str, seeds: list[int], jobs: int
) -> tuple[list[dict[str, Any]], float]:
    """Run the seeds split round-robin over ``jobs`` children at once; return the rows and the wall time."""
    t0 = time.perf_counter()
    procs = [start(args, which, seeds[i::jobs]) for i in range(jobs) if seeds[i::jobs]]
    rows: list[dict[str, Any]] = []
    errors = []
    for i, p in enumerate(procs):
        try:
            rows += collect(p, f"{which} (job {i + 1}/{jobs})", args.timeout)
        except BenchError as exc:
            errors.append(str(exc))
    if errors:
        raise BenchError("\n".join(errors))
    return sorted(rows, key=lambda r: r["seed"]), time.perf_counter() - t0


def run_interleaved(
    args: argparse.Namespace, seeds: list[int], base_tree: Path
) -> tuple[list[dict[str, Any]], float, list[dict[str, Any]], float]:
    """Run each big seed in a fresh child of this tree, then of the baseline's, seed after seed.

    Alternating keeps a drift in the machine's load (other work on shared cores) from falling on
    one side only. Return this tree's rows and child wall total, then the baseline's.
    """
    rows: list[dict[str, Any]] = []
    base_rows: list[dict[str, Any]] = []
    total = base_total = 0.0
    for seed in seeds:
        r, t = run_serial(args, "big", [seed])
        rows += r
        total += t
        b, t = run_serial(args, "big", [seed], base_tree)
        if b[0].get("engine_root") != str(base_tree):
            raise BenchError(f"the baseline child ran the engine of {b[0].get('engine_root')}")
        base_rows += b
        base_total += t
    return rows, total, base_rows, base_total


def print_ratios(rows: list[dict[str, Any]], base_rows: list[dict[str, Any]]) -> None:
    """Print seeds/min now against the baseline's, of wall time and of CPU time."""
    mean_new = sum(r["seconds"] for r in rows) / len(rows)
    mean_base = sum(r["seconds"] for r in base_rows) / len(base_rows)
    cpu_new = sum(r["cpu"] for r in rows) / len(rows)
    cpu_base = sum(r["cpu"] for r in base_rows) / len(base_rows)
    print(
        f"\nagainst the baseline (same seeds, alternating fresh children, one core each):\n"
        f"  wall: {60 / mean_new:.1f} seeds/min now against {60 / mean_base:.1f} -> {mean_base / mean_new:.2f}x\n"
        f"  CPU:  {60 / cpu_new:.1f} seeds/min now against {60 / cpu_base:.1f} -> {cpu_base / cpu_new:.2f}x "
        f"({cpu_new:.2f} against {cpu_base:.2f} CPU s/seed)"
    )


def print_rows(title: str, rows: list[dict[str, Any]], total_s: float) -> None:
    """Print one scenario's per-seed table and its summary."""
    print(title)
    head = (
        f"  {'seed':>5} {'wall s':>7} {'cpu s':>6} {'sim ms':>8} {'events':>10} {'records':>8} {'markers':>7} "
        f"{'history':>7} {'fingerprint':<12}  verdict"
    )
    print(head)
    for r in rows:
        print(
            f"  {r['seed']:>5} {r['seconds']:>7.2f} {r.get('cpu', float('nan')):>6.2f} "
            f"{r['sim_ms']:>8,} {r['events']:>10,} {r['records']:>8,} "
            f"{r['markers']:>7,} {r['history']:>7,} {r['fingerprint'][:12]:<12}  {r['verdict']}"
        )
    secs = [r["seconds"] for r in rows]
    mean = sum(secs) / len(secs)
    print(
        f"  mean {mean:.2f} s/seed (min {min(secs):.2f}, max {max(secs):.2f}) -> {60 / mean:.1f} seeds/min on one "
        f"core; child wall {total_s:.1f} s for {len(rows)} seeds incl. start-up -> {60 * len(rows) / total_s:.1f} "
        f"seeds/min; {sum(r['records'] for r in rows) / len(rows):,.0f} records/seed, "
        f"{sum(r['records'] for r in rows) / sum(secs):,.0f} records/s"
    )
    if all("cpu" in r for r in rows):
        cpu = sum(r["cpu"] for r in rows) / len(rows)
        print(f"  CPU time: mean {cpu:.2f} s/seed -> {60 / cpu:.1f} seeds/min of CPU (steadier than wall when shared)")
    if all("phases" in r for r in rows):
        means = {p: sum(r["phases"].get(p, 0.0) for r in rows) / len(rows) for p in PHASES}
        rest = mean - sum(means.values())
        parts = [f"{p} {v:.2f} ({100 * v / mean:.0f}%)" for p, v in means.items()]
        print(f"  phases, mean s/seed: {', '.join(parts)}, other {rest:.2f} ({100 * rest / mean:.0f}%)")


def main(argv: list[str] | None = None) -> int:
    """Parse the options; run both scenarios (or one, with --child)."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", type=int, default=5, help="seeds per scenario (default 5)")
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--records", type=int, default=10_000, help="records one big run writes, about (default 10k)")
    ap.add_argument("--workload", choices=("sends", "txns"), default="sends", help="the big scenario's workload")
    ap.add_argument("--faults", default="lost_acks", help="the big scenario's catalog fault plan, or 'none'")
    ap.add_argument("--safety-ms", type=int, default=60_000, help="the big scenario's safety phase (simulated ms)")
    ap.add_argument("--small", default=SMALL_DEFAULT, help=f"the catalog scenario to compare with ({SMALL_DEFAULT!r})")
    ap.add_argument("--jobs", type=int, default=2, help="also run the big seeds over this many processes (1: don't)")
    ap.add_argument("--quick", action="store_true", help="CI smoke size: 2 seeds, 2k records, 15 s safety")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per child (default 1800)")
    ap.add_argument("--child", help="run one scenario's seeds in this process: 'big' or a catalog name")
    ap.add_argument(
        "--seed-list",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=None,
        help="with --child: these seeds (comma-separated)",
    )
    ap.add_argument("--json", action="store_true", help="with --child: print the rows as one JSON line")
    ap.add_argument(
        "--engine-tree", type=Path, help="with --child: import the engine from this checkout (the baseline's)"
    )
    ap.add_argument("--scale", action="store_true", help="scale-out: sweep the big spec with N = 1, 2, 4, ... workers")
    ap.add_argument(
        "--scale-jobs",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=None,
        help="with --scale: these N (comma-separated; default 1, 2 and every doubling up to the cores)",
    )
    ap.add_argument("--scale-per-job", type=int, default=8, help="with --scale: seeds per worker (default 8)")
    ap.add_argument(
        "--baseline-tree",
        type=Path,
        help="also run the big seeds with this checkout (a git worktree of an older commit): a same-run baseline",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.records, args.safety_ms = 2, 2_000, 15_000

    if args.child:
        if args.engine_tree is not None:
            if "engine" in sys.modules:
                raise BenchError("--engine-tree: the engine was imported before the path was set")
            sys.path.insert(0, str(args.engine_tree.resolve()))
        rows = run_child(args)
        if args.json:
            print(json.dumps(rows))
        return 0
    if args.scale:
        return run_scale(args)

    from engine.scenarios.catalog import BY_NAME

    if args.small not in BY_NAME:
        print(f"--small {args.small!r} is not a catalog scenario (see 'eos scenarios')", file=sys.stderr)
        return 2
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    print(
        f"seed sweep: {args.seeds} seeds ({seeds[0]}..{seeds[-1]}) per scenario, run_spec per seed (safety, heal, "
        f"liveness, final reads, checker, invariants); one fresh process per scenario; GC on"
    )
    print(machine_note())
    failures: list[str] = []
    results: dict[str, list[dict[str, Any]]] = {}

    def record(label: str, rows: list[dict[str, Any]], total: float) -> None:
        results[label] = rows
        print()
        print_rows(label, rows, total)
        failures.extend(f"{label}: {r['verdict']}" for r in rows if not r["ok"])

    if args.baseline_tree is None:
        try:
            rows, total = run_serial(args, "big", seeds)
            record(f"big, 1 process: {rows[0]['spec']} -- {rows[0]['description']}", rows, total)
        except BenchError as exc:
            failures.append(f"big: {exc}")
    else:
        try:
            rows, total, base_rows, base_total = run_interleaved(args, seeds, args.baseline_tree.resolve())
            record(f"big, 1 process: {rows[0]['spec']} -- {rows[0]['description']}", rows, total)
            record(f"big, 1 process, BASELINE {args.baseline_tree}", base_rows, base_total)
            print_ratios(rows, base_rows)
        except BenchError as exc:
            failures.append(f"big against the baseline: {exc}")
    try:
        rows, total = run_serial(args, args.small, seeds)
        record(f"small, 1 process: {args.small} (catalog)", rows, total)
    except BenchError as exc:
        failures.append(f"small: {exc}")
    if args.jobs > 1:
        try:
            rows, total = run_parallel(args, "big", seeds, args.jobs)
            print()
            print(
                f"big, {args.jobs} processes at once: {len(rows)} seeds in {total:.1f} s wall -> "
                f"{60 * len(rows) / total:.1f} seeds/min on this machine"
            )
            failures.extend(f"big ({args.jobs} jobs): {r['verdict']}" for r in rows if not r["ok"])
            mine = [rs for lb, rs in results.items() if lb.startswith("big, 1 process:")]  # not the baseline's
            serial = {r["seed"]: r["fingerprint"] for rs in mine for r in rs}
            mismatches = [
                f"big seed {r['seed']}: fingerprint {r['fingerprint'][:12]} differs from the serial run's "
                f"{serial[r['seed']][:12]} (non-determinism)"
                for r in rows
                if r["seed"] in serial and serial[r["seed"]] != r["fingerprint"]
            ]
            failures.extend(mismatches)
            secs = [r["seconds"] for r in rows]
            print(
                f"  per seed inside the jobs: mean {sum(secs) / len(secs):.2f} s "
                f"(min {min(secs):.2f}, max {max(secs):.2f}); fingerprints "
                f"{'DIFFER from' if mismatches else 'match'} the serial run"
            )
        except BenchError as exc:
            failures.append(f"big ({args.jobs} jobs): {exc}")

    big = next((rs for label, rs in results.items() if label.startswith("big")), None)
    small = next((rs for label, rs in results.items() if label.startswith("small")), None)
    if big and small:
        b = sum(r["seconds"] for r in big) / len(big)
        s = sum(r["seconds"] for r in small) / len(small)
        br = sum(r["records"] for r in big) / len(big)
        sr = sum(r["records"] for r in small) / len(small)
        print(f"\nbig/small: {b / s:.1f}x the seconds per seed for {br / max(1, sr):.1f}x the records")
        if br < 0.9 * args.records:
            print(
                f"NOTE: the big scenario wrote {br:,.0f} records per seed, short of --records {args.records:,}: "
                f"the senders stop when the safety phase ends; raise --safety-ms."
            )
    return finish(failures, "\nall verdicts PASS. No timing is asserted.")


if __name__ == "__main__":
    sys.exit(main())
