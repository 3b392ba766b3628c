"""Benchmark T2/T3/T5: the engine's produce path end to end vs a hand-written model, same run.

What runs (``performance.md`` §2 and §C):

- **engine**: ``Cluster(keep_trace=False)``, 3 brokers, one topic of 8 partitions with RF=3; one
  producer with ``acks=all``, ``linger.ms=0`` and idempotence on (or off), fed with
  ``produce_batch(topic, values, partition=p)`` round-robin over the partitions, then ``flush()``.
- **model**: the same produce path written by hand in the batch-native layout (the essentials
  of §2's ``hotpath.py``): leader append with an epoch check and a 5-batch sequence window, a
  purgatory released by the HW, 2 followers that each fetch the leader-log slice they lack, the HW
  as the min of the LEOs, the produce response, and at most 5 batches in flight per partition.
  Every hop is a ``heappush`` of ``(t, seq, cb, args)`` 1 ms later, the engine's latency. By
  default each batch gets its own fetch round trip per follower: 6 events per batch, as in §2;
  ``--model-coalesce`` lets one fetch carry every new batch, as the engine's fetchers do.

Each (kind, batch size, idempotence) variant runs in a fresh subprocess, so its peak RSS
(``ru_maxrss``) is its own. The input values (distinct 100-byte ``bytes``) and their per-batch
lists are generated before timing, as in the model of §2; the timed span covers queueing every
batch and running the simulation until every record is acknowledged. "RSS growth" is the
``/proc/self/statm`` resident size after the run minus before it (input and cluster already
built). Cyclic GC stays on, as in a kernel; both the engine and the model call ``gc.freeze()``
just before the timed span, so the collector does not rescan the pre-generated input (and, for
the engine, the cluster built before) at every full collection: it still tracks and collects
everything the timed run allocates.

After the timed run, each child checks that every partition's leader log holds exactly the
records sent to it, once each and in order, with HW == LEO == that count (and that every
follower has them too). A child that finds otherwise exits non-zero, and so does this script:
a fast engine that loses records is not a result.

Figures only; no timing is asserted. Targets: records/s ratio engine/model ≥ 1/3 (T2 at batch
100, T3 at batch 1) and RSS growth ratio engine/model ≤ 2 (T5).

With ``--baseline-tree DIR`` (a checkout of another commit, e.g. a ``git worktree``) every engine
row also runs against that checkout's engine, in the same run, as ``base`` rows beside the model.

Usage::

    python bench/bench_produce.py                    # 1M records (100k for batch = 1)
    python bench/bench_produce.py --records 200000   # scale down
    python bench/bench_produce.py --quick            # CI smoke run (20k records)
    python bench/bench_produce.py --baseline-tree /tmp/base   # before/after, same run
    # one variant in this process, e.g. under a profiler:
    python -m cProfile -s cumtime bench/bench_produce.py --child engine --records 100000 --batch 100
"""

from __future__ import annotations

import argparse
import gc
import heapq
import os
import subprocess
import sys
import time
from collections import deque
from itertools import count
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import BenchError, check, finish, peak_rss_bytes, print_child_result, run_json_child  # noqa: E402 - after the path setup

if "--engine-root" in sys.argv:  # a child timing another checkout's engine (--baseline-tree)
    sys.path.insert(0, sys.argv[sys.argv.index("--engine-root") + 1])
else:
    sys.path.insert(0, str(ROOT))

TOPIC = "bench"
PARTITIONS = 8
BROKERS = 3
RF = 3
VALUE_BYTES = 100
MAX_IN_FLIGHT = 5
PAGE = os.sysconf("SC_PAGE_SIZE")


# ==========================================================================================
# input and measurement helpers
# ==========================================================================================


def make_input(records: int, batch: int) -> list[list[bytes]]:
    """Return ``records`` distinct ``VALUE_BYTES``-byte values cut into lists of ``batch``."""
    fmt = b"%0" + str(VALUE_BYTES).encode() + b"d"
    values = [fmt % i for i in range(records)]
    return [values[i : i + batch] for i in range(0, records, batch)]


def expected_per_partition(chunks: list[list[bytes]]) -> list[list[bytes]]:
    """Return, per partition, the values in the order they were sent (batch j → partition j % P)."""
    out: list[list[bytes]] = [[] for _ in range(PARTITIONS)]
    for j, chunk in enumerate(chunks):
        out[j % PARTITIONS].extend(chunk)
    return out


def rss_bytes() -> int:
    """Return the resident set size now (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


# ==========================================================================================
# the engine
# ==========================================================================================


def run_engine(chunks: list[list[bytes]], idempotent: bool, seed: int) -> dict[str, Any]:
    """Produce every chunk through the engine and flush; return the figures (see module doc)."""
    from engine import Cluster

    c = Cluster(seed=seed, brokers=BROKERS, keep_trace=False)
    c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=RF)
    producer = c.producer({"acks": "all", "enable.idempotence": idempotent, "linger.ms": 0})
    # Let metadata and InitProducerId finish: the timed span is the produce path only.
    c.run_until(lambda: bool(producer.partition_counts.get(TOPIC)) and (not idempotent or producer.producer_id >= 0))
    sched = c.world.scheduler
    events0, sim0 = sched.events_run, c.now_ms
    records = sum(len(ch) for ch in chunks)

    gc.collect()
    gc.freeze()  # the input and the cluster built so far: not the cyclic GC's to scan (see module doc)
    rss0 = rss_bytes()
    c0 = time.process_time()
    t0 = time.perf_counter()
    produce_batch = producer.produce_batch
    for j, chunk in enumerate(chunks):
        produce_batch(TOPIC, chunk, partition=j % PARTITIONS)
    t_queued = time.perf_counter()
    left = producer.flush()
    t1 = time.perf_counter()
    c1 = time.process_time()
    rss1 = rss_bytes()

    events = sched.events_run - events0
    sim_ms = c.now_ms - sim0
    check(left == 0, f"flush() returned with {left} records outstanding")

    # -- verification: every partition's leader log holds its records exactly once, in order.
    expected = expected_per_partition(chunks)
    for p in range(PARTITIONS):
        leader = c.leader(TOPIC, p)
        check(leader > 0, f"partition {p} has no leader")
        r = c.brokers[leader].replicas[(TOPIC, p)]
        log = r.log
        want = expected[p]
        n = sum(len(b.values) for b in log.batches)
        check(n == len(want), f"partition {p}: leader log holds {n} records, {len(want)} were sent")
        check(
            r.high_watermark == log.log_end_offset == len(want),
            f"partition {p}: HW={r.high_watermark} LEO={log.log_end_offset}, expected both = {len(want)}",
        )
        nxt = 0
        for b in log.batches:
            check(b.base_offset == nxt, f"partition {p}: batch at {b.base_offset}, expected {nxt}")
            nxt += len(b.values)
        got = [v for b in log.batches for v in b.values]
        if got != want:
            dup = len(got) - len(set(got))
            raise BenchError(f"partition {p}: leader log differs from what was sent ({dup} duplicates)")
        if idempotent:
            seqs = [(b.producer_id, b.producer_epoch, b.base_sequence) for b in log.batches]
            check(len(set(seqs)) == len(seqs), f"partition {p}: a (pid, epoch, base_sequence) appears twice")
        for broker_id, broker in c.brokers.items():
            if broker_id != leader:
                f = broker.replicas[(TOPIC, p)]
                leo = f.log.log_end_offset
                check(leo == len(want), f"partition {p}: follower {broker_id} LEO {leo} != {len(want)}")
    m = producer.metrics_totals
    errors: dict[str, int] = {}
    for b in c.brokers.values():
        for k, v in b.error_counts.items():
            errors[k] = errors.get(k, 0) + v
    net = c.world.network
    return {
        "records": records,
        "batches": len(chunks),
        "seconds": t1 - t0,
        "cpu_seconds": c1 - c0,
        "queue_seconds": t_queued - t0,
        "events": events,
        "sim_ms": sim_ms,
        "rss_growth": rss1 - rss0,
        "retried": m["records_retried"],
        "failed": m["records_failed"],
        "acked": m["records_acked"],
        "requests": m["requests_sent"],
        "broker_errors": errors,
        "net_dropped": net.dropped,
    }


# ==========================================================================================
# the hand-written model (batch-native layout)
# ==========================================================================================


def run_model(chunks: list[list[bytes]], idempotent: bool, coalesce: bool = False) -> dict[str, Any]:
    """Run the hand-written produce path over the same chunks; return the figures.

    By default every batch gets its own fetch round trip to each follower, so a batch costs
    exactly 6 events, the shape of §2's model. With ``coalesce`` a follower keeps at most one
    fetch in flight and each fetch carries everything new (as the engine's fetchers do): fewer
    events per batch, a higher ceiling.
    """
    heap: list[tuple[int, int, Any, tuple[Any, ...]]] = []
    push, pop = heapq.heappush, heapq.heappop
    tick = count().__next__
    now = 0
    pid, producer_epoch, leader_epoch = 1000, 0, 0
    followers = RF - 1
    records = sum(len(ch) for ch in chunks)

    queues: list[deque[list[bytes]]] = [deque() for _ in range(PARTITIONS)]
    next_seq = [0] * PARTITIONS
    in_flight = [0] * PARTITIONS
    acked = [0]
    # Broker side, one partition each: the leader log is a list of batch tuples
    # (base_offset, pid, epoch, base_sequence, leader_epoch, values); records are implicit.
    logs: list[list[tuple[Any, ...]]] = [[] for _ in range(PARTITIONS)]
    leo = [0] * PARTITIONS
    hw = [0] * PARTITIONS
    fol_logs = [[[] for _ in range(followers)] for _ in range(PARTITIONS)]
    fol_leo = [[0] * followers for _ in range(PARTITIONS)]
    sent_upto = [[0] * followers for _ in range(PARTITIONS)]
    fetching = [[False] * followers for _ in range(PARTITIONS)]
    purgatory: list[deque[tuple[int, int, int]]] = [deque() for _ in range(PARTITIONS)]
    pstate: dict[tuple[int, int], list[Any]] = {}

    def send_next(p: int) -> None:
        q = queues[p]
        while q and in_flight[p] < MAX_IN_FLIGHT:
            values = tuple(q.popleft())
            if idempotent:
                seq = next_seq[p]
                next_seq[p] = seq + len(values)
            else:
                seq = -1
            in_flight[p] += 1
            push(heap, (now + 1, tick(), on_produce, (p, (pid, producer_epoch, seq, values))))

    def on_produce(p: int, wire: tuple[Any, ...]) -> None:
        b_pid, b_epoch, first, values = wire
        n = len(values)
        base = leo[p]
        if idempotent:
            last = first + n - 1
            st = pstate.get((b_pid, p))
            if st is None:
                st = pstate[(b_pid, p)] = [b_epoch, deque(maxlen=5)]
            window = st[1]
            if b_epoch != st[0]:
                raise BenchError("model: producer epoch mismatch")
            for f_seq, l_seq, off in window:
                if f_seq == first and l_seq == last:
                    push(heap, (now + 1, tick(), on_produce_response, (p, off, n)))
                    return
            if first != (window[-1][1] + 1 if window else 0):
                raise BenchError("model: out-of-order sequence")
            window.append((first, last, base))
        logs[p].append((base, b_pid, b_epoch, first, leader_epoch, values))
        leo[p] = base + n
        purgatory[p].append((base + n, base, n))
        if coalesce:
            fet = fetching[p]
            for f in range(followers):
                if not fet[f]:
                    fet[f] = True
                    push(heap, (now + 1, tick(), on_fetch, (p, f)))
        else:
            for f in range(followers):
                push(heap, (now + 1, tick(), on_fetch, (p, f)))

    def on_fetch(p: int, f: int) -> None:
        log = logs[p]
        start = sent_upto[p][f]
        end = len(log) if coalesce else start + 1
        sent_upto[p][f] = end
        push(heap, (now + 1, tick(), on_fetch_response, (p, f, log[start:end])))

    def on_fetch_response(p: int, f: int, batches: list[tuple[Any, ...]]) -> None:
        fol_logs[p][f].extend(batches)
        last = batches[-1]
        fol_leo[p][f] = last[0] + len(last[5])
        new_hw = min(leo[p], *fol_leo[p])
        if new_hw > hw[p]:
            hw[p] = new_hw
            purg = purgatory[p]
            while purg and purg[0][0] <= new_hw:
                _, base, n = purg.popleft()
                push(heap, (now + 1, tick(), on_produce_response, (p, base, n)))
        if coalesce:
            if sent_upto[p][f] < len(logs[p]):
                push(heap, (now + 1, tick(), on_fetch, (p, f)))
            else:
                fetching[p][f] = False

    def on_produce_response(p: int, base_offset: int, n: int) -> None:
        del base_offset
        in_flight[p] -= 1
        acked[0] += n
        send_next(p)

    gc.collect()
    gc.freeze()  # as in run_engine
    rss0 = rss_bytes()
    c0 = time.process_time()
    t0 = time.perf_counter()
    for j, chunk in enumerate(chunks):
        queues[j % PARTITIONS].append(chunk)
    for p in range(PARTITIONS):
        send_next(p)
    events = 0
    while heap:
        now, _, cb, args = pop(heap)
        cb(*args)
        events += 1
    t1 = time.perf_counter()
    c1 = time.process_time()
    rss1 = rss_bytes()

    check(acked[0] == records, f"model acknowledged {acked[0]} of {records} records")
    expected = expected_per_partition(chunks)
    for p in range(PARTITIONS):
        want = expected[p]
        check(hw[p] == leo[p] == len(want), f"model partition {p}: HW={hw[p]} LEO={leo[p]}")
        got = [v for b in logs[p] for v in b[5]]
        check(got == want, f"model partition {p}: log differs from what was sent")
        check(all(x == leo[p] for x in fol_leo[p]), f"model partition {p}: follower LEOs {fol_leo[p]}")
    return {
        "records": records,
        "batches": len(chunks),
        "seconds": t1 - t0,
        "cpu_seconds": c1 - c0,
        "queue_seconds": 0.0,
        "events": events,
        "sim_ms": now,
        "rss_growth": rss1 - rss0,
        "retried": 0,
        "failed": 0,
        "acked": acked[0],
        "requests": len(chunks),
        "broker_errors": {},
        "net_dropped": 0,
    }


# ==========================================================================================
# driver
# ==========================================================================================


def child(kind: str, records: int, batch: int, idempotent: bool, seed: int, coalesce: bool) -> dict[str, Any]:
    """Run one variant in this process and return its figures."""
    chunks = make_input(records, batch)
    if kind == "engine":
        out = run_engine(chunks, idempotent, seed)
    else:
        out = run_model(chunks, idempotent, coalesce)
    out["peak_rss"] = peak_rss_bytes()
    return out


def variants(records: int, batch1_records: int, *, baseline: bool = False) -> list[tuple[str, int, int, bool]]:
    """Return (kind, records, batch, idempotent) for every row, model right after its engine (and base)."""
    rows = []
    for batch, n, idem in ((100, records, True), (1, batch1_records, True), (100, records, False)):
        rows.append(("engine", n, batch, idem))
        if baseline:
            rows.append(("base", n, batch, idem))
        rows.append(("model", n, batch, idem))
    return rows


def run_child(kind: str, records: int, batch: int, idem: bool, args: argparse.Namespace) -> dict[str, Any]:
    """Run one variant in a fresh interpreter; raise BenchError with its stderr if it fails."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "engine" if kind == "base" else kind,
        "--records",
        str(records),
        "--batch",
        str(batch),
        "--seed",
        str(args.seed),
        "--json",
    ]
    if not idem:
        cmd.append("--no-idempotence")
    if args.model_coalesce:
        cmd.append("--model-coalesce")
    if kind == "base":
        cmd += ["--engine-root", str(args.baseline_tree.resolve())]
    return run_json_child(cmd, timeout=args.timeout, what=f"{kind} batch={batch} idempotence={idem}")


def label(kind: str, batch: int, idem: bool) -> str:
    """Return a row label."""
    return f"{kind} b{batch} {'idem' if idem else 'no-idem'}"


def print_table(results: dict[tuple[str, int, bool], dict[str, Any]]) -> None:
    """Print the table (ratios pair each engine row with the model row of the same shape)."""
    mb = 1 / (1 << 20)
    head = (
        f"{'variant':<20} {'records':>9} {'seconds':>8} {'records/s':>11} {'ratio e/m':>9} "
        f"{'µs/batch':>9} {'cpu µs/b':>9} {'cpu e/m':>8} {'ev/batch':>8} {'peak RSS MB':>11} "
        f"{'RSS growth MB':>13} {'growth e/m':>10}"
    )
    print(head)
    print("-" * len(head))
    for (kind, batch, idem), r in results.items():
        rate = r["records"] / r["seconds"]
        ratio = cpu_ratio = growth_ratio = ""
        other = results.get(("model", batch, idem))
        if kind in ("engine", "base") and other is not None:
            ratio = f"{rate / (other['records'] / other['seconds']):.3f}"
            cpu_ratio = f"{other['cpu_seconds'] / r['cpu_seconds']:.3f}"
            if other["rss_growth"] > 0:
                growth_ratio = f"{r['rss_growth'] / other['rss_growth']:.2f}"
        us = r["seconds"] / r["batches"] * 1e6
        cpu_us = r["cpu_seconds"] / r["batches"] * 1e6
        ev = r["events"] / r["batches"]
        print(
            f"{label(kind, batch, idem):<20} {r['records']:>9,} {r['seconds']:>8.3f} {rate:>11,.0f} "
            f"{ratio:>9} {us:>9.1f} {cpu_us:>9.1f} {cpu_ratio:>8} {ev:>8.2f} {r['peak_rss'] * mb:>11.1f} "
            f"{r['rss_growth'] * mb:>13.1f} {growth_ratio:>10}"
        )


def print_notes(results: dict[tuple[str, int, bool], dict[str, Any]]) -> None:
    """Print per-engine-run details: queueing share, simulated time, retries, broker errors."""
    print()
    for (kind, batch, idem), r in results.items():
        if kind != "engine":
            continue
        share = r["queue_seconds"] / r["seconds"] if r["seconds"] else 0.0
        notes = [
            f"produce_batch calls {r['queue_seconds']:.3f} s ({share:.0%})",
            f"simulated {r['sim_ms']:,} ms",
            f"{r['events']:,} events",
            f"{r['batches']:,} batches in {r['requests']:,} produce requests",
        ]
        if r["retried"] or r["failed"] or r["broker_errors"] or r["net_dropped"]:
            notes.append(
                f"SUSPICIOUS: retried={r['retried']} failed={r['failed']} "
                f"broker errors={r['broker_errors']} dropped={r['net_dropped']}"
            )
        else:
            notes.append("no retries, no errors")
        print(f"{label(kind, batch, idem)}: " + "; ".join(notes))


def main(argv: list[str] | None = None) -> int:
    """Parse the options; run every variant (or one, with --child)."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=1_000_000, help="records for the batch-100 rows (default 1M)")
    ap.add_argument(
        "--batch1-records", type=int, default=None, help="records for the batch-1 rows (default min(--records, 100k))"
    )
    ap.add_argument("--quick", action="store_true", help="CI smoke size: 20k records everywhere")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--runs",
        type=int,
        default=1,
        help="run every row this many times, rows alternating, and keep each time's best (a shared machine)",
    )
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per child (default 1800)")
    ap.add_argument("--child", choices=("engine", "model"), help="run one variant in this process")
    ap.add_argument("--batch", type=int, default=100, help="with --child: records per batch")
    ap.add_argument("--no-idempotence", action="store_true", help="with --child: enable.idempotence=false")
    ap.add_argument("--json", action="store_true", help="with --child: print the figures as one JSON line")
    ap.add_argument("--baseline-tree", type=Path, help="also run the engine rows on this checkout's engine")
    ap.add_argument("--engine-root", help=argparse.SUPPRESS)  # set by run_child for a baseline child
    ap.add_argument(
        "--model-coalesce",
        action="store_true",
        help="model: one fetch in flight per follower carrying everything new (fewer events, "
        "a higher ceiling) instead of one fetch round trip per batch (§2's 6 events)",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.records = 20_000
        args.batch1_records = args.batch1_records or 20_000
    if args.batch1_records is None:
        args.batch1_records = min(args.records, 100_000)

    if args.child:
        idem = not args.no_idempotence
        r = child(args.child, args.records, args.batch, idem, args.seed, args.model_coalesce)
        print_child_result(r, as_json=args.json)
        return 0

    print(
        f"produce path: {BROKERS} brokers, {PARTITIONS} partitions, RF={RF}, acks=all, linger.ms=0, "
        f"{VALUE_BYTES}-byte distinct values, ≤{MAX_IN_FLIGHT} in flight per partition; "
        f"model fetches: {'coalesced' if args.model_coalesce else 'one round trip per batch'}; "
        f"batch 100: {args.records:,} records; batch 1: {args.batch1_records:,} records; "
        f"one fresh process per row; GC on (gc.freeze() before the timed span); "
        f"best of {args.runs} run(s); cpu = process CPU time of the timed span"
    )
    results: dict[tuple[str, int, bool], dict[str, Any]] = {}
    failures: list[str] = []
    rows = variants(args.records, args.batch1_records, baseline=args.baseline_tree is not None)
    for _ in range(args.runs):
        for kind, n, batch, idem in rows:
            try:
                r = run_child(kind, n, batch, idem, args)
            except (BenchError, subprocess.TimeoutExpired) as exc:
                failures.append(f"{label(kind, batch, idem)}: {exc}")
                continue
            best = results.get((kind, batch, idem))
            if best is None:
                results[(kind, batch, idem)] = r
            else:  # best of --runs: each time figure its own minimum, memory from the first run
                for key in ("seconds", "cpu_seconds", "queue_seconds"):
                    best[key] = min(best[key], r[key])
    print_table(results)
    print_notes(results)
    print(
        "\ntargets: ratio e/m ≥ 0.33 (T2 batch 100, T3 batch 1); growth e/m ≤ 2 (T5). "
        "peak RSS includes the pre-generated input."
    )
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
