"""Benchmark: the confluent-kafka drop-in (``eos_magics.kafka``) against the engine's clients, same run.

What runs, in each variant (a fresh interpreter per run, :func:`_common.run_json_child`):

- a ``Cluster(keep_trace=False)`` of 3 brokers, one topic of 4 partitions with RF=3;
- **produce**: an idempotent producer (``acks=all``, ``linger.ms=5``) gets ``--records`` distinct
  100-byte values, ``--batch`` at a time with ``produce(topic, value, on_delivery=cb)`` and then
  ``flush()``, as a confluent-kafka program does; the callback counts the deliveries;
- **consume**: a consumer of group ``bench`` subscribes and ``poll(1.0)``s one record at a time
  until it has read them all back (checking each value's length and error).

``engine`` calls ``cluster.producer(...)``/``cluster.consumer(...)`` directly; ``dropin`` makes the
same clients through ``eos_magics.kafka.Producer``/``Consumer`` with a confluent-kafka config that
asks for the engine's settings (so both simulations do the same work: the child checks that they
end at the same simulated time with the same records). The timed spans are the produce loop with
its flushes and the consume loop; the cluster, the topic and the input values are built before.
``--rounds`` fresh processes of each variant alternate, and each runs the workload ``--repeat``
times on a fresh cluster; the figure per variant and phase is its best run, in CPU time of the
child (``time.process_time``), which other load on the machine disturbs less than wall time does;
"total" is the sum of the two phases' best times.

Prints records/s per phase and in total, and the drop-in's overhead in % of the engine's time
(target ≤ 10 %). Figures only; no timing is asserted; a child that loses or duplicates records
exits non-zero, and so does this script.

Usage::

    python bench/bench_dropin.py                     # 50k records, batches of 1000, 3 rounds x 3 runs
    python bench/bench_dropin.py --records 100000 --rounds 5
    python bench/bench_dropin.py --quick             # smoke run: 20k records, 1 round
    python -m cProfile -s tottime bench/bench_dropin.py --child dropin --records 50000
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from _common import BenchError, check, machine_note, print_child_result, run_json_child  # noqa: E402 - after the path setup

TOPIC = "bench"
PARTITIONS = 4
VALUE_BYTES = 100
ENGINE_PRODUCER = {"enable.idempotence": True, "acks": "all", "linger.ms": 5}
ENGINE_CONSUMER = {"group.id": "bench", "auto.offset.reset": "earliest"}
#: The drop-in's configs: confluent-kafka keys that give the engine's settings above (librdkafka's
#: defaults differ: auto-commit on, read_committed, a longer delivery timeout).
DROPIN_PRODUCER = {"bootstrap.servers": "localhost:9092", **ENGINE_PRODUCER, "delivery.timeout.ms": 120_000}
DROPIN_CONSUMER = {
    "bootstrap.servers": "localhost:9092",
    **ENGINE_CONSUMER,
    "enable.auto.commit": False,
    "isolation.level": "read_uncommitted",
}


def run_child(kind: str, records: int, batch: int, seed: int, repeat: int) -> dict[str, Any]:
    """Run one variant ``repeat`` times in this process, each on a fresh cluster; return the best figures."""
    runs = [run_once(kind, records, batch, seed) for _ in range(repeat)]
    check(len({r["sim_ms"] for r in runs}) == 1, f"{kind}: the repeats ended at different simulated times")
    return {
        "kind": kind,
        "records": records,
        "produce_s": min(r["produce_s"] for r in runs),
        "consume_s": min(r["consume_s"] for r in runs),
        "sim_ms": runs[0]["sim_ms"],
    }


def run_once(kind: str, records: int, batch: int, seed: int) -> dict[str, Any]:
    """Run one variant once in this process; return its figures."""
    from engine import Cluster

    cluster = Cluster(seed=seed, brokers=3, keep_trace=False)
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    fmt = b"%0" + str(VALUE_BYTES).encode() + b"d"
    values = [fmt % i for i in range(records)]
    if kind == "dropin":
        import eos_magics.kafka as kafka

        kafka.use(cluster)
        producer: Any = kafka.Producer(DROPIN_PRODUCER)
        make_consumer: Any = lambda: kafka.Consumer(DROPIN_CONSUMER)  # noqa: E731 - built after the timed produce
    else:
        producer = cluster.producer(ENGINE_PRODUCER)
        make_consumer = lambda: cluster.consumer(ENGINE_CONSUMER)  # noqa: E731
    gc.collect()
    gc.freeze()
    try:
        return _timed(kind, cluster, producer, make_consumer, values, batch)
    finally:
        gc.unfreeze()


def _timed(
    kind: str, cluster: Any, producer: Any, make_consumer: Any, values: list[bytes], batch: int
) -> dict[str, Any]:
    """The timed produce and consume loops (see the module docstring)."""
    records = len(values)
    delivered = [0]

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            delivered[0] += 1

    t0 = time.process_time()
    for start in range(0, records, batch):
        for v in values[start : start + batch]:
            producer.produce(TOPIC, v, on_delivery=on_delivery)
        producer.flush()
    t1 = time.process_time()
    check(delivered[0] == records, f"{kind}: {delivered[0]} of {records} records delivered")
    consumer = make_consumer()
    consumer.subscribe([TOPIC])
    seen = 0
    polls = 0
    t2 = time.process_time()
    while seen < records and polls < 10 * records:
        polls += 1
        m = consumer.poll(1.0)
        if m is None:
            continue
        if m.error() is not None or len(m.value()) != VALUE_BYTES:
            raise BenchError(f"{kind}: bad record {m!r}")
        seen += 1
    t3 = time.process_time()
    check(seen == records, f"{kind}: read back {seen} of {records} records")
    check(consumer.poll(0) is None, f"{kind}: read more records than were produced")
    return {
        "kind": kind,
        "records": records,
        "produce_s": t1 - t0,
        "consume_s": t3 - t2,
        "sim_ms": cluster.now_ms,
    }


def main(argv: list[str] | None = None) -> int:
    """Parse arguments; run a child, or every round of both variants and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--batch", type=int, default=1_000, help="records per produce()+flush() batch")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per variant, alternating")
    ap.add_argument("--repeat", type=int, default=3, help="runs per process, each on a fresh cluster")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="smoke run: 20k records, 1 round")
    ap.add_argument("--child", choices=("engine", "dropin"))
    ap.add_argument("--json", action="store_true", help="(child) print one JSON line")
    args = ap.parse_args(argv)
    if args.quick:
        args.records, args.rounds, args.repeat = 20_000, 1, 1
    if args.child:
        result = run_child(args.child, args.records, args.batch, args.seed, args.repeat)
        print_child_result(result, as_json=args.json)
        return 0
    runs: dict[str, list[dict[str, Any]]] = {"engine": [], "dropin": []}
    try:
        for _ in range(args.rounds):
            for kind in runs:
                cmd = [sys.executable, __file__, "--child", kind, "--json", "--records", str(args.records)]
                cmd += ["--batch", str(args.batch), "--seed", str(args.seed), "--repeat", str(args.repeat)]
                runs[kind].append(run_json_child(cmd, timeout=1800, what=f"{kind} child"))
    except BenchError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    sims = {r["sim_ms"] for rs in runs.values() for r in rs}
    if len(sims) != 1:
        print(f"FAILED: the variants ended at different simulated times {sorted(sims)}", file=sys.stderr)
        return 1
    shape = f"{args.records} records of {VALUE_BYTES} B, batches of {args.batch}, {args.rounds}x{args.repeat} runs"
    print(f"# {shape}; {machine_note()}")
    print(f"{'variant':>8} {'produce rec/s':>14} {'consume rec/s':>14} {'total rec/s':>12} {'CPU s':>8}")
    med: dict[str, dict[str, float]] = {}
    for kind, rs in runs.items():
        p = min(r["produce_s"] for r in rs)
        c = min(r["consume_s"] for r in rs)
        t = p + c
        med[kind] = {"produce": p, "consume": c, "total": t}
        n = args.records
        print(f"{kind:>8} {n / p:>14,.0f} {n / c:>14,.0f} {n / t:>12,.0f} {t:>8.2f}")
    for phase in ("produce", "consume", "total"):
        over = 100 * (med["dropin"][phase] / med["engine"][phase] - 1)
        print(f"drop-in overhead, {phase}: {over:+.1f} % (target <= 10 %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
