"""Benchmark: the transactional path next to idempotent-only, and read_committed next to read_uncommitted.

What runs (``performance.md`` §C, "Not measured here: the transactional path"):

- **produce rows**: ``Cluster(keep_trace=False)``, 3 brokers, one topic of ``--partitions``
  partitions (default 1) with RF=3; one producer with ``acks=all`` and ``linger.ms=0`` fed with
  ``produce_batch(topic, values, partition=p)`` (``--batch`` records per batch, default 100; batch
  ``j`` goes to partition ``j % P``).

  - ``idem``: idempotent only: every batch queued, then one ``flush()``.
  - ``txn/100``, ``txn/10000``: ``transactional.id`` set (transaction version 2, the default);
    ``begin_transaction()``, the batches of ``--commit-every`` records (100 and 10,000 by
    default), ``commit_transaction()``, repeated. ``init_transactions()`` runs before timing.

  The timed span covers every ``produce_batch`` and, for transactions, every begin and commit
  (a commit first flushes, then waits for EndTxn, i.e. it runs the simulation). So both figures
  are printed: **wall** seconds (the engine's cost) and **simulated** ms (the protocol's cost,
  e.g. EndTxn round trips and retry back-offs). Ratios compare each row with ``idem`` of the
  same run.

- **consume rows**: a child writes the same records in transactions of
  ``--consume-commit-every`` records (default 100; ``--abort-every K`` aborts every K-th
  transaction, default none, after a ``flush()`` so that its records are in the log: an abort
  drops records not yet sent), lets the markers land, then times one consumer
  (``assign`` from the beginning, then ``consume(5000, timeout=1.0)`` until every expected record
  arrived) with ``isolation.level`` read_committed or read_uncommitted. Each isolation level runs in
  its own child, over the same (deterministic) data. The ratio is rc / ru.

Each row runs in a fresh subprocess. Cyclic GC stays on.

Correctness (a fast engine that loses records is not a result; any failure exits non-zero):

- produce rows: each partition's leader log holds exactly the records sent to it (data batches
  only), once each and in send order; with transactions, one COMMIT marker per transaction that
  touched the partition and no ABORT; HW == LEO == LSO; every follower has the same LEO.
- consume rows: read_committed returns exactly the committed records, once each, in log order
  per partition; read_uncommitted returns every record written (aborted ones too), once each.

Figures only; no timing is asserted.

Usage::

    python bench/bench_transactions.py                    # 200k records
    python bench/bench_transactions.py --records 50000
    python bench/bench_transactions.py --quick            # CI smoke run (20k records)
    python bench/bench_transactions.py --partitions 4 --abort-every 10
    # one variant in this process, e.g. under a profiler:
    python -m cProfile -s cumtime bench/bench_transactions.py --child txn --commit-every 100 --records 20000
    python -m cProfile -s cumtime bench/bench_transactions.py --child consume --isolation read_committed
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import BenchError, check, finish, machine_note, peak_rss_bytes, print_child_result, run_json_child  # noqa: E402 - after the path setup

sys.path.insert(0, str(ROOT))

TOPIC = "bench"
BROKERS = 3
RF = 3
VALUE_BYTES = 100
CONSUME_MAX = 5000
CONSUME_TIMEOUT_S = 1.0
#: Simulated time given to the coordinator after the last commit, so every marker is written.
SETTLE_MS = 500


# ==========================================================================================
# input
# ==========================================================================================


def make_values(records: int) -> list[bytes]:
    """Return ``records`` distinct ``VALUE_BYTES``-byte values."""
    fmt = b"%0" + str(VALUE_BYTES).encode() + b"d"
    return [fmt % i for i in range(records)]


def plan_transactions(records: int, commit_every: int, batch: int, partitions: int) -> list[list[tuple[int, int, int]]]:
    """Cut ``range(records)`` into transactions of ``commit_every`` records, each into batches.

    Returns, per transaction, a list of ``(start, end, partition)`` slices: at most ``batch``
    records each, batch ``j`` (counted over the whole run) to partition ``j % partitions``.
    ``commit_every <= 0`` gives one "transaction" holding everything (the idempotent row).
    """
    if commit_every <= 0:
        commit_every = records
    txns = []
    j = 0
    for t0 in range(0, records, commit_every):
        t1 = min(records, t0 + commit_every)
        slices = []
        for b0 in range(t0, t1, batch):
            slices.append((b0, min(t1, b0 + batch), j % partitions))
            j += 1
        txns.append(slices)
    return txns


def expected_logs(
    values: list[bytes], txns: list[list[tuple[int, int, int]]], partitions: int, aborted: set[int]
) -> tuple[list[list[bytes]], list[list[bytes]], list[list[int]]]:
    """Return per partition: every value written, the committed values, and the txn numbers touching it."""
    written: list[list[bytes]] = [[] for _ in range(partitions)]
    committed: list[list[bytes]] = [[] for _ in range(partitions)]
    touched: list[list[int]] = [[] for _ in range(partitions)]
    for t, slices in enumerate(txns):
        for s0, s1, p in slices:
            chunk = values[s0:s1]
            written[p].extend(chunk)
            if t not in aborted:
                committed[p].extend(chunk)
            if not touched[p] or touched[p][-1] != t:
                touched[p].append(t)
    return written, committed, touched


# ==========================================================================================
# producing
# ==========================================================================================


def new_cluster(partitions: int, seed: int) -> Any:
    """Return a cluster with the bench topic."""
    from engine import Cluster

    c = Cluster(seed=seed, brokers=BROKERS, keep_trace=False)
    c.create_topic(TOPIC, partitions=partitions, replication_factor=RF)
    return c


def produce(
    c: Any,
    values: list[bytes],
    txns: list[list[tuple[int, int, int]]],
    *,
    transactional: bool,
    aborted: set[int],
) -> dict[str, Any]:
    """Write ``values`` as planned (transactions or one flush); return the timed figures."""
    config: dict[str, Any] = {"acks": "all", "linger.ms": 0, "enable.idempotence": True}
    if transactional:
        config["transactional.id"] = "bench-txn"
    producer = c.producer(config)
    if transactional:
        producer.init_transactions()
    c.run_until(lambda: bool(producer.partition_counts.get(TOPIC)) and producer.producer_id >= 0)
    sched = c.world.scheduler
    events0, sim0 = sched.events_run, c.now_ms
    produce_batch = producer.produce_batch
    commit_wall = 0.0
    t0 = time.perf_counter()
    if transactional:
        for t, slices in enumerate(txns):
            producer.begin_transaction()
            for s0, s1, p in slices:
                produce_batch(TOPIC, values[s0:s1], partition=p)
            tc = time.perf_counter()
            if t in aborted:
                # Deliver first, so the aborted records are in the log (abort drops unsent ones).
                producer.flush()
                producer.abort_transaction()
            else:
                producer.commit_transaction()
            commit_wall += time.perf_counter() - tc
        left = len(producer)  # a commit waits for every record
    else:
        for slices in txns:
            for s0, s1, p in slices:
                produce_batch(TOPIC, values[s0:s1], partition=p)
        tc = time.perf_counter()
        left = producer.flush()
        commit_wall = time.perf_counter() - tc
    t1 = time.perf_counter()
    events = sched.events_run - events0
    sim_ms = c.now_ms - sim0
    check(left == 0, f"{left} records outstanding after the last commit/flush")
    check(producer.fatal_error is None, f"producer failed: {producer.fatal_error!r}")
    m = producer.metrics_totals
    errors: dict[str, int] = {}
    for b in c.brokers.values():
        for k, v in b.error_counts.items():
            errors[k] = errors.get(k, 0) + v
    out = {
        "records": len(values),
        "txns": len(txns) if transactional else 0,
        "seconds": t1 - t0,
        "end_seconds": commit_wall,
        "sim_ms": sim_ms,
        "events": events,
        "retried": m["records_retried"],
        "failed": m["records_failed"],
        "requests": m["batches_sent"],
        "broker_errors": errors,
        "net_dropped": c.world.network.dropped,
    }
    if transactional:
        out["commit_sim_ms"] = producer.txn_metrics["txn-commit-time-ns-total"] // 1_000_000
        out["abort_sim_ms"] = producer.txn_metrics["txn-abort-time-ns-total"] // 1_000_000
    return out


def verify_logs(
    c: Any,
    partitions: int,
    written: list[list[bytes]],
    touched: list[list[int]],
    aborted: set[int],
    *,
    transactional: bool,
) -> None:
    """Check every partition's leader log and followers against what was sent (see module doc)."""
    from engine.log.records import ABORT, COMMIT

    c.run_for(SETTLE_MS)  # the coordinator writes markers after EndTxn is answered
    for p in range(partitions):
        leader = c.leader(TOPIC, p)
        check(leader > 0, f"partition {p} has no leader")
        r = c.brokers[leader].replicas[(TOPIC, p)]
        batches = r.log.batches
        data = [b for b in batches if not b.is_control]
        markers = [b for b in batches if b.is_control]
        got = [v for b in data for v in b.values]
        want = written[p]
        if got != want:
            dup = len(got) - len(set(got))
            raise BenchError(
                f"partition {p}: leader log holds {len(got)} data records ({dup} duplicates), {len(want)} were sent"
            )
        nxt = 0
        for b in batches:
            check(b.base_offset == nxt, f"partition {p}: batch at {b.base_offset}, expected {nxt}")
            nxt = b.next_offset
        leo = r.log.log_end_offset
        check(nxt == leo, f"partition {p}: batches end at {nxt}, LEO {leo}")
        if transactional:
            want_markers = [ABORT if t in aborted else COMMIT for t in touched[p]]
            got_markers = [b.control_type for b in markers]
            check(
                got_markers == want_markers,
                f"partition {p}: {len(got_markers)} markers "
                f"({got_markers.count(COMMIT)} COMMIT, {got_markers.count(ABORT)} ABORT), expected "
                f"{len(want_markers)} ({want_markers.count(COMMIT)} COMMIT, {want_markers.count(ABORT)} ABORT)",
            )
            check(all(b.is_transactional for b in data), f"partition {p}: a data batch is not transactional")
        else:
            check(not markers, f"partition {p}: {len(markers)} control batches in an idempotent-only log")
            seqs = [(b.producer_id, b.producer_epoch, b.base_sequence) for b in data]
            check(len(set(seqs)) == len(seqs), f"partition {p}: a (pid, epoch, base_sequence) appears twice")
        check(
            r.high_watermark == leo == r.last_stable_offset,
            f"partition {p}: HW={r.high_watermark} LSO={r.last_stable_offset} LEO={leo}, expected all equal",
        )
        for broker_id, broker in c.brokers.items():
            if broker_id != leader:
                f_leo = broker.replicas[(TOPIC, p)].log.log_end_offset
                check(f_leo == leo, f"partition {p}: follower {broker_id} LEO {f_leo} != {leo}")


def aborted_set(n_txns: int, abort_every: int) -> set[int]:
    """Return the transaction numbers to abort: every ``abort_every``-th (1-based), or none."""
    if abort_every <= 0:
        return set()
    return {t for t in range(n_txns) if (t + 1) % abort_every == 0}


def run_produce(args: argparse.Namespace, kind: str) -> dict[str, Any]:
    """One produce row in this process: ``kind`` is ``idem`` or ``txn``."""
    transactional = kind == "txn"
    values = make_values(args.records)
    commit_every = args.commit_every if transactional else 0
    txns = plan_transactions(args.records, commit_every, args.batch, args.partitions)
    aborted = aborted_set(len(txns), args.abort_every) if transactional else set()
    written, _committed, touched = expected_logs(values, txns, args.partitions, aborted)
    c = new_cluster(args.partitions, args.seed)
    out = produce(c, values, txns, transactional=transactional, aborted=aborted)
    verify_logs(c, args.partitions, written, touched, aborted, transactional=transactional)
    out["aborted_txns"] = len(aborted)
    return out


# ==========================================================================================
# consuming
# ==========================================================================================


def run_consume(args: argparse.Namespace) -> dict[str, Any]:
    """One consume row in this process: write the data (untimed), then time one consumer."""
    values = make_values(args.records)
    txns = plan_transactions(args.records, args.consume_commit_every, args.batch, args.partitions)
    aborted = aborted_set(len(txns), args.abort_every)
    written, committed, touched = expected_logs(values, txns, args.partitions, aborted)
    c = new_cluster(args.partitions, args.seed)
    produce(c, values, txns, transactional=True, aborted=aborted)
    verify_logs(c, args.partitions, written, touched, aborted, transactional=True)
    read_committed = args.isolation == "read_committed"
    want = committed if read_committed else written
    expected = sum(len(w) for w in want)

    sched = c.world.scheduler
    events0, sim0 = sched.events_run, c.now_ms
    got: list[list[bytes]] = [[] for _ in range(args.partitions)]
    offsets: list[list[int]] = [[] for _ in range(args.partitions)]
    n = idle = calls = 0
    t0 = time.perf_counter()
    consumer = c.consumer({"isolation.level": args.isolation, "client.id": "bench-reader"})
    consumer.assign([(TOPIC, p) for p in range(args.partitions)])
    while n < expected and idle < 3:
        msgs = consumer.consume(CONSUME_MAX, timeout=CONSUME_TIMEOUT_S)
        calls += 1
        if not msgs:
            idle += 1
            continue
        idle = 0
        n += len(msgs)
        for m in msgs:
            p = m.partition()
            got[p].append(m.value())
            offsets[p].append(m.offset())
    t1 = time.perf_counter()
    events = sched.events_run - events0
    sim_ms = c.now_ms - sim0
    # Untimed: nothing more may arrive (no duplicates after the last expected record).
    extra = consumer.consume(CONSUME_MAX, timeout=CONSUME_TIMEOUT_S)
    check(not extra, f"{args.isolation}: {len(extra)} records arrived after all {expected} expected ones")
    for p in range(args.partitions):
        if got[p] != want[p]:
            dup = len(got[p]) - len(set(got[p]))
            missing = len(set(want[p]) - set(got[p]))
            unexpected = len(set(got[p]) - set(want[p]))
            raise BenchError(
                f"{args.isolation} partition {p}: read {len(got[p])} records, expected {len(want[p])} "
                f"({dup} duplicates, {missing} missing, {unexpected} not expected, or out of order)"
            )
        check(
            all(a < b for a, b in zip(offsets[p], offsets[p][1:], strict=False)),
            f"{args.isolation} partition {p}: offsets not strictly increasing",
        )
    return {
        "records": n,
        "written": sum(len(w) for w in written),
        "txns": len(txns),
        "aborted_txns": len(aborted),
        "seconds": t1 - t0,
        "sim_ms": sim_ms,
        "events": events,
        "consume_calls": calls,
        "fetches": len(consumer.fetch_log),
    }


# ==========================================================================================
# driver
# ==========================================================================================


def child_main(args: argparse.Namespace) -> dict[str, Any]:
    """Run the one variant named by --child in this process."""
    out = run_consume(args) if args.child == "consume" else run_produce(args, args.child)
    out["peak_rss"] = peak_rss_bytes()
    return out


def run_child(extra: list[str], args: argparse.Namespace, what: str) -> dict[str, Any]:
    """Run one variant in a fresh interpreter; raise BenchError with its stderr if it fails."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--records",
        str(args.records),
        "--batch",
        str(args.batch),
        "--partitions",
        str(args.partitions),
        "--seed",
        str(args.seed),
        "--abort-every",
        str(args.abort_every),
        "--consume-commit-every",
        str(args.consume_commit_every),
        "--json",
        *extra,
    ]
    return run_json_child(cmd, timeout=args.timeout, what=what)


def fmt_errors(r: dict[str, Any]) -> str:
    """Return the retry/error note of a produce row."""
    parts = []
    if r["retried"]:
        parts.append(f"{r['retried']:,} records retried")
    if r["failed"]:
        parts.append(f"{r['failed']:,} FAILED")
    if r["broker_errors"]:
        parts.append("broker errors " + ", ".join(f"{k} x{v:,}" for k, v in sorted(r["broker_errors"].items())))
    if r["net_dropped"]:
        parts.append(f"{r['net_dropped']} messages dropped")
    return "; ".join(parts) or "no retries, no errors"


def print_produce(rows: dict[str, dict[str, Any]]) -> None:
    """Print the produce table: each row against ``idem``."""
    base = rows.get("idem")
    head = (
        f"{'variant':<12} {'records':>9} {'txns':>6} {'wall s':>8} {'records/s':>10} {'ratio/idem':>10} "
        f"{'sim ms':>9} {'sim ratio':>9} {'µs/txn':>8} {'sim ms/txn':>10} {'end wall s':>10} {'events':>10} "
        f"{'peak RSS MB':>11}"
    )
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        rate = r["records"] / r["seconds"]
        ratio = sim_ratio = ""
        if base is not None:
            ratio = f"{rate / (base['records'] / base['seconds']):.3f}"
            sim_ratio = f"{r['sim_ms'] / max(1, base['sim_ms']):.1f}"
        per_txn = sim_per_txn = ""
        if r["txns"]:
            per_txn = f"{r['seconds'] / r['txns'] * 1e6:.0f}"
            sim_per_txn = f"{r['sim_ms'] / r['txns']:.1f}"
        print(
            f"{name:<12} {r['records']:>9,} {r['txns']:>6,} {r['seconds']:>8.3f} {rate:>10,.0f} {ratio:>10} "
            f"{r['sim_ms']:>9,} {sim_ratio:>9} {per_txn:>8} {sim_per_txn:>10} {r['end_seconds']:>10.3f} "
            f"{r['events']:>10,} {r['peak_rss'] / (1 << 20):>11.1f}"
        )
    print()
    for name, r in rows.items():
        notes = [f"{r['requests']:,} produce requests"]
        if r["txns"]:
            notes.append(
                f"inside commit/abort: {r['end_seconds']:.3f} s wall; commit_transaction() {r['commit_sim_ms']:,} ms "
                f"simulated"
            )
            if r.get("aborted_txns"):
                notes.append(f"{r['aborted_txns']} aborted ({r['abort_sim_ms']:,} ms simulated in abort)")
        else:
            notes.append(f"inside flush(): {r['end_seconds']:.3f} s wall")
        notes.append(fmt_errors(r))
        print(f"{name}: " + "; ".join(notes))


def print_consume(rows: dict[str, dict[str, Any]]) -> None:
    """Print the consume table: read_committed against read_uncommitted."""
    base = rows.get("read_uncommitted")
    head = (
        f"{'isolation':<17} {'records':>9} {'wall s':>8} {'records/s':>10} {'ratio rc/ru':>11} {'sim ms':>8} "
        f"{'events':>8} {'fetches':>8} {'consume()':>9}"
    )
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        rate = r["records"] / r["seconds"]
        ratio = ""
        if base is not None and name != "read_uncommitted":
            ratio = f"{rate / (base['records'] / base['seconds']):.3f}"
        print(
            f"{name:<17} {r['records']:>9,} {r['seconds']:>8.3f} {rate:>10,.0f} {ratio:>11} {r['sim_ms']:>8,} "
            f"{r['events']:>8,} {r['fetches']:>8,} {r['consume_calls']:>9,}"
        )


def main(argv: list[str] | None = None) -> int:
    """Parse the options; run every variant (or one, with --child)."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=200_000, help="records per row (default 200k)")
    ap.add_argument("--quick", action="store_true", help="CI smoke size: 20k records")
    ap.add_argument("--partitions", type=int, default=1, help="partitions of the topic (default 1)")
    ap.add_argument("--batch", type=int, default=100, help="records per produce_batch call (default 100)")
    ap.add_argument(
        "--commit-every",
        type=int,
        nargs="+",
        default=[100, 10_000],
        help="records per transaction, one row each (default 100 10000)",
    )
    ap.add_argument(
        "--consume-commit-every",
        type=int,
        default=100,
        help="records per transaction of the data the consume rows read (default 100)",
    )
    ap.add_argument("--abort-every", type=int, default=0, help="abort every K-th transaction (default 0: commit all)")
    ap.add_argument("--no-consume", action="store_true", help="skip the consume rows")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per child (default 1800)")
    ap.add_argument("--child", choices=("idem", "txn", "consume"), help="run one variant in this process")
    ap.add_argument(
        "--isolation",
        choices=("read_committed", "read_uncommitted"),
        default="read_committed",
        help="with --child consume",
    )
    ap.add_argument("--json", action="store_true", help="with --child: print the figures as one JSON line")
    args = ap.parse_args(argv)
    if args.quick:
        args.records = 20_000
    if args.child:
        if args.child == "txn":
            args.commit_every = args.commit_every[0]
        r = child_main(args)
        print_child_result(r, as_json=args.json)
        return 0

    print(
        f"transactions: {BROKERS} brokers, {args.partitions} partition(s), RF={RF}, acks=all, linger.ms=0, "
        f"{VALUE_BYTES}-byte distinct values, produce_batch of {args.batch}; {args.records:,} records per row; "
        f"abort every {args.abort_every or 'no'} txn; one fresh process per row; GC on"
    )
    print(machine_note())
    failures: list[str] = []
    produce_rows: dict[str, dict[str, Any]] = {}
    variants = [("idem", ["--child", "idem"])]
    variants += [(f"txn/{n}", ["--child", "txn", "--commit-every", str(n)]) for n in args.commit_every]
    for name, extra in variants:
        try:
            produce_rows[name] = run_child(extra, args, name)
        except (BenchError, subprocess.TimeoutExpired) as exc:
            failures.append(f"{name}: {exc}")
    print()
    print_produce(produce_rows)
    if not args.no_consume:
        consume_rows: dict[str, dict[str, Any]] = {}
        for iso in ("read_uncommitted", "read_committed"):
            try:
                consume_rows[iso] = run_child(["--child", "consume", "--isolation", iso], args, f"consume {iso}")
            except (BenchError, subprocess.TimeoutExpired) as exc:
                failures.append(f"consume {iso}: {exc}")
        print()
        any_row = next(iter(consume_rows.values()), None)
        if any_row is not None:
            print(
                f"consume: {any_row['written']:,} records written in {any_row['txns']:,} transactions of "
                f"{args.consume_commit_every} ({any_row['aborted_txns']} aborted); one consumer, assign() from the "
                f"beginning, consume({CONSUME_MAX}, timeout={CONSUME_TIMEOUT_S}) until all expected records arrived"
            )
        print_consume(consume_rows)
    print(
        "\nwall s / records/s: the engine's cost (Python time). sim ms: simulated time, which includes every "
        "EndTxn round trip and retry back-off that commit_transaction() waits for. No timing is asserted."
    )
    return finish(failures, "correctness: every log and every read matched what was sent (see the module doc).")


if __name__ == "__main__":
    sys.exit(main())
