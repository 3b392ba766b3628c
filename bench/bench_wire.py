"""Real clients over the wire: one confluent-kafka workload against ``eos serve``, Kafka 4.4 and librdkafka's mock.

Two workloads, each run against every target in this one process run:

* ``produce``: an idempotent producer sends ``--records`` values of 100 bytes to a 3-partition topic
  (``linger.ms`` 5, ``batch.num.messages`` 1000: batches of about 1000 records) and flushes;
  records/s from the first produce() to the end of flush(); every delivery report must be clean.
* ``commits``: a transactional producer commits ``--txns`` transactions of 10 records; commits/s.
* ``ctp``: consume-transform-produce, as an exactly-once app runs: a read_committed consumer reads
  ``bench`` (what ``produce`` wrote), and each transaction copies 10 records to ``bench-out`` and
  sends the consumer's offsets in it (``send_offsets_to_transaction``); commits/s, once with
  librdkafka's defaults and once with ``retry.backoff.ms`` 10. The gap is the client's back-off on
  CONCURRENT_TRANSACTIONS (docs/wire.md, "Where a transaction's time goes").

``eos serve`` runs as a subprocess (``--rate 1``, SASL on, as users run it), so the server has a
core of its own and the client's librdkafka threads do not share its GIL; the mock runs inside
this process, as librdkafka starts it (``test.mock.num.brokers``). Kafka 4.4.0 is the anchor that
counts: a real 3-broker KRaft cluster (``engine.conform.realtime_reference``, one JVM per node, the
suite's shared settings, SASL/PLAIN like ``eos serve``), skipped with a line when its jars are missing
(``bash scripts/fetch-kafka.sh``) or with ``--no-kafka``: the quick mode then runs without a JVM, and
the issue-44 targets (records/s >= 0.5x Kafka's, commits/s >= Kafka's) are not judged. The mock is
skipped the same way when librdkafka has none (or ``--no-mock``). ``--baseline-tree DIR`` serves
another checkout's ``eos serve`` as one more target (``before``), for before/after in the same run;
``--serve-arg`` passes an argument to this tree's (``--serve-arg=--latency-ms=1``). Every target is
checked for delivery. ``--profile`` runs the server under cProfile and prints where its time goes.

    timeout 900 .venv/bin/python bench/bench_wire.py --baseline-tree /tmp/base
    timeout 300 .venv/bin/python bench/bench_wire.py --quick      # 5,000 records, 10 transactions
    timeout 300 .venv/bin/python bench/bench_wire.py --quick --no-kafka --no-mock
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, BenchError, check, machine_note

VALUE = b"x" * 100


def start_server(
    profile: Path | None, tree: Path = ROOT, extra: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Start ``eos serve`` of ``tree`` (this checkout, or ``--baseline-tree``); return it and its client config."""
    ready = Path(tempfile.mkdtemp()) / "ready.json"
    cmd = [sys.executable]
    if profile is not None:
        cmd += ["-m", "cProfile", "-o", str(profile)]
    cmd += ["-m", "engine.cli", "serve", "--topic", "bench:3:3", "--topic", "bench-out:3:3"]
    cmd += ["--ready-file", str(ready), "--seed", "1", *extra]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise BenchError(f"eos serve did not start: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}")
        time.sleep(0.05)
    return proc, json.loads(ready.read_text())["client_config"]


def mock_config() -> tuple[Producer, dict[str, Any]] | None:
    """Start librdkafka's mock cluster; return its owner (keep it alive) and its client config; None without one."""
    try:
        owner = Producer({"test.mock.num.brokers": 3})
    except Exception as exc:  # a librdkafka built without the mock cluster
        print(f"bench_wire: librdkafka's mock skipped: {exc}")
        return None
    brokers = owner.list_topics(timeout=10).brokers
    bootstrap = ",".join(f"{b.host}:{b.port}" for b in brokers.values())
    # The mock creates a topic on first use (4 partitions); it does not serve CreateTopics here.
    return owner, {"bootstrap.servers": bootstrap}


def kafka_config() -> tuple[Any, dict[str, Any]] | None:
    """Start Kafka 4.4 (3 brokers) with a ``bench`` topic like the server's; None when its jars are missing."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from engine.conform.realtime_reference import KafkaReference, ReferenceClusterError

    try:
        reference = KafkaReference(brokers=3).start()
    except ReferenceClusterError as exc:
        print(f"bench_wire: Kafka 4.4 skipped: {str(exc).splitlines()[0]}")
        return None
    config = reference.client_config()
    admin = AdminClient(config)  # kept until the future is done: librdkafka fails it when the handle goes
    for future in admin.create_topics([NewTopic("bench", 3, 3), NewTopic("bench-out", 3, 3)]).values():
        future.result(60)
    return reference, config


def produce(config: dict[str, Any], records: int) -> float:
    p = Producer({**config, "enable.idempotence": True, "linger.ms": 5, "batch.num.messages": 1000})
    errors: list[Any] = []
    delivered = [0]

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)
        delivered[0] += 1

    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce("bench", value=VALUE, key=str(i % 97).encode(), on_delivery=report)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    check(left == 0 and not errors and delivered[0] == records, f"produce: {left} left, errors {errors[:3]}")
    return records / elapsed


def commits(config: dict[str, Any], txns: int) -> float:
    p = Producer({**config, "transactional.id": f"bench-{os.getpid()}-{time.monotonic_ns()}", "linger.ms": 0})
    p.init_transactions(30)
    start = time.perf_counter()
    for t in range(txns):
        p.begin_transaction()
        for i in range(10):
            p.produce("bench", value=VALUE, key=f"{t}-{i}".encode())
        p.commit_transaction(30)
    return txns / (time.perf_counter() - start)


def ctp(config: dict[str, Any], txns: int, **client: Any) -> float:
    """Consume-transform-produce ``txns`` transactions of 10 records from ``bench`` to ``bench-out``."""
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    c = Consumer(
        {
            **config,
            **client,
            "group.id": f"bench-{tag}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
        }
    )
    p = Producer({**config, **client, "transactional.id": f"bench-ctp-{tag}", "linger.ms": 0})
    c.subscribe(["bench"])
    p.init_transactions(30)
    done = 0
    start = None
    while done < txns:
        batch = [m for m in c.consume(10, 5) if m.error() is None]
        check(bool(batch) or start is None, "ctp: the consumer stopped reading bench")
        if not batch:
            continue
        if start is None:
            start = time.perf_counter()  # from the first records read: the group's join is not counted
        p.begin_transaction()
        for m in batch:
            p.produce("bench-out", value=m.value(), key=m.key())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        done += 1
    elapsed = time.perf_counter() - (start or 0)
    c.close()
    return txns / elapsed


def ctp_fast(config: dict[str, Any], txns: int) -> float:
    return ctp(config, txns, **{"retry.backoff.ms": 10})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--txns", type=int, default=200)
    ap.add_argument("--profile", action="store_true", help="profile the server; print its top functions")
    ap.add_argument("--no-kafka", action="store_true", help="leave Kafka 4.4 out (no JVMs)")
    ap.add_argument("--no-mock", action="store_true", help="leave librdkafka's mock out")
    ap.add_argument("--baseline-tree", type=Path, help="another checkout: its eos serve is one more target (before)")
    ap.add_argument(
        "--serve-arg", action="append", default=[], help="one more argument for this tree's eos serve (repeatable)"
    )
    ap.add_argument("--quick", action="store_true", help="a smoke run: 5,000 records, 10 transactions")
    args = ap.parse_args()
    if args.quick:
        args.records, args.txns = 5_000, 10
    print(f"bench_wire: {machine_note()}")
    stops: list[Any] = []
    targets: list[tuple[str, dict[str, Any]]] = []
    profile = Path(tempfile.mkdtemp()) / "serve.prof" if args.profile else None
    try:
        proc, served = start_server(profile, extra=tuple(args.serve_arg))
        stops.append(lambda: _stop_server(proc))
        targets.append(("eos serve", served))
        if args.baseline_tree is not None:
            base_proc, base = start_server(None, args.baseline_tree.resolve())
            stops.append(lambda: _stop_server(base_proc))
            targets.append(("before", base))
        kafka = None if args.no_kafka else kafka_config()
        if kafka is not None:
            stops.append(kafka[0].stop)
            targets.append(("Kafka 4.4", kafka[1]))
        elif not args.no_kafka:
            print("bench_wire: no Kafka 4.4 column (its jars are missing): the issue-44 targets are not judged")
        mock = None if args.no_mock else mock_config()
        if mock is not None:
            stops.append(lambda: mock[0].flush(0))  # the owner lives until here: the mock with it
            targets.append(("mock", mock[1]))
        rows = []
        workloads = (
            ("produce records/s", produce, args.records),
            ("commits/s", commits, args.txns),
            ("ctp commits/s", ctp, args.txns),
            ("ctp, backoff 10", ctp_fast, args.txns),
        )
        for name, fn, n in workloads:
            rows.append((name, [fn(config, n) for _t, config in targets]))
    finally:
        for stop in reversed(stops):
            stop()
    print_table(targets, rows)
    if profile is not None and profile.exists():
        import pstats

        print("\nwhere eos serve's time goes (cumulative, top 25):")
        pstats.Stats(str(profile)).sort_stats("tottime").print_stats(25)
    return 0


def _stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server with ^C; one still running after 30 s is said and killed (the figures stand)."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        print(f"bench_wire: {' '.join(proc.args[-8:])} did not stop 30 s after ^C: killed", file=sys.stderr)
        proc.kill()
        proc.wait(30)


def print_table(targets: list[tuple[str, dict[str, Any]]], rows: list[tuple[str, list[float]]]) -> None:
    """Print figures per target, then eos serve's ratio to each other target (same run)."""
    names = [t for t, _c in targets]
    others = names[1:]
    head = f"{'workload':<20}" + "".join(f"{n:>12}" for n in names)
    head += "".join(f"{'eos/' + n.split()[0]:>14}" for n in others)
    print(head)
    for name, values in rows:
        line = f"{name:<20}" + "".join(f"{v:>12,.0f}" for v in values)
        line += "".join(f"{values[0] / v:>14.3f}" for v in values[1:])
        print(line)
    if "Kafka 4.4" in names:
        print("targets: produce >= 0.5x Kafka 4.4's records/s; commits/s >= Kafka 4.4's (issue 44)")


if __name__ == "__main__":
    raise SystemExit(main())
