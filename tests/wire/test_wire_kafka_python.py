"""kafka-python 3.0 against a served simulated cluster: exactly-once over the wire.

Each test is client code as it would be written for a real Kafka; only the connection settings
(``kp(server)``: bootstrap servers and SASL/PLAIN) and short timeouts differ. Outcomes are read back
from the cluster itself (the partition logs, the transaction coordinator) or consumed back.

kafka-python's transactional calls (``commit_transaction``, ``send_offsets_to_transaction``...)
wait without a timeout; :func:`bounded` runs them with one, so a server that never answers fails the
test instead of hanging it. The rebalance case polls each consumer in a thread of its own, as
applications run them: one thread polling two kafka-python consumers in turn with short timeouts
can leave one of them never applying its SyncGroup assignment (seen once in four runs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import InvalidProducerEpochError, ProducerFencedError
from kafka.structs import OffsetAndMetadata

from engine.serve.realtime_server import ServedCluster
from engine.views.consumer_groups import group_view
from engine.views.transactions import describe_transaction_row

pytestmark = pytest.mark.slow

Kp = Callable[..., dict[str, Any]]

#: The engine's group coordinator refuses session timeouts under 6 s (group.min.session.timeout.ms).
SESSION_MS = 6_000
PRODUCER = {"request_timeout_ms": 5_000, "max_block_ms": 10_000, "retry_backoff_ms": 50, "linger_ms": 5}
CONSUMER = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    "session_timeout_ms": SESSION_MS,
    "heartbeat_interval_ms": 500,
    "request_timeout_ms": 8_000,
    "fetch_max_wait_ms": 100,
    "retry_backoff_ms": 50,
}
#: The broker's coverage mark for a retried batch answered from its producer state, not appended again.
DEDUP_MARK = "dedup: duplicate batch answered from cache"
#: Broker settings for the crash cases: the controller fences a dead broker after 3 s, not 9 s.
CRASH_CONFIG = {"broker.session.timeout.ms": 3_000, "broker.heartbeat.interval.ms": 500}
#: kafka-python 3.0.12 drops a transactional request whose coordinator cannot be reached: in
#: ``Sender._maybe_send_pending_request`` ``await_ready`` raises with ``target_node`` already set, so
#: the handler is neither sent nor retried (Java's Sender retries it) and the caller waits forever.
#: With ``await_ready`` patched to return False, as Java's ``awaitNodeReady`` does, both skipped
#: cases pass against this server; the crash of a partition leader that is no coordinator runs below.
COORDINATOR_CRASH_BUG = (
    "kafka-python 3.0.12 loses a transactional request when its coordinator is unreachable "
    "(kafka/producer/sender.py _maybe_send_pending_request: await_ready raises with target_node set, "
    "the handler is never retried, commit/send_offsets_to_transaction wait forever)"
)


# -- helpers ----------------------------------------------------------------------------------


def bounded(call: Callable[..., Any], *args: Any, timeout_s: float = 30.0) -> Any:
    """Run a blocking client call with a timeout: return its result or raise its exception."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call(*args)
        except BaseException as exc:  # handed to the test's thread
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        pytest.fail(f"{getattr(call, '__name__', call)} did not return within {timeout_s} s")
    if "error" in out:
        raise out["error"]
    return out.get("value")


def log_values(server: ServedCluster, topic: str, partition: int = 0) -> list[str]:
    """The data records' values in the partition leader's log, in offset order (markers left out)."""
    with server.locked() as cluster:
        dump = cluster.dump_log(topic, partition)
    return [line.split(" payload: ", 1)[1] for line in dump.splitlines() if " payload: " in line]


def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Poll ``predicate`` every 50 ms until it holds (True) or the timeout passes (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def consume(consumer: KafkaConsumer, n: int, timeout_s: float = 15.0) -> list[str]:
    """Poll until ``n`` values arrived (or the timeout): return them as text."""
    out: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            out.extend(r.value.decode() for r in records)
    return out


def drain(consumer: KafkaConsumer, quiet_s: float = 1.0) -> list[str]:
    """Poll until nothing more arrives for ``quiet_s``: return what did."""
    out: list[str] = []
    last = time.monotonic()
    while time.monotonic() - last < quiet_s:
        got = [r.value.decode() for records in consumer.poll(timeout_ms=200).values() for r in records]
        if got:
            out.extend(got)
            last = time.monotonic()
    return out


@contextmanager
def closing(*clients: Any) -> Iterator[None]:
    """Close every client at the end, quickly."""
    try:
        yield
    finally:
        for c in clients:
            with suppress(Exception):  # a client that already failed must not hide the test's outcome
                c.close(timeout=2) if isinstance(c, KafkaProducer) else c.close()


def committed_reader(server: ServedCluster, kp: Kp, topic: str) -> KafkaConsumer:
    """A read_committed consumer of ``topic`` assigned every partition (no group)."""
    consumer = KafkaConsumer(**kp(server), **CONSUMER, isolation_level="read_committed")
    parts = consumer.partitions_for_topic(topic)
    consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
    return consumer


def transactional(server: ServedCluster, kp: Kp, tid: str, **extra: Any) -> KafkaProducer:
    """A transactional producer, its transactions initialized."""
    producer = KafkaProducer(**kp(server), **{**PRODUCER, **extra}, transactional_id=tid)
    bounded(producer.init_transactions)
    return producer


def crash_broker(server: ServedCluster, which: str, topic: str, tid: str, group: str | None = None) -> int:
    """Crash the partition leader of ``topic``-0 (``leader``) or ``tid``'s coordinator; return its id."""
    with server.locked() as cluster:
        leader = cluster.leader(topic, 0)
        coordinator = describe_transaction_row(cluster, tid).coordinator_id
        group_coordinator = group_view(cluster, group).coordinator if group else None
        victim = leader if which == "leader" else coordinator
        if which == "leader":  # the layout the case needs (deterministic for the seed)
            assert victim not in (coordinator, group_coordinator), "the partition leader is also a coordinator"
        cluster.crash(victim)
    return victim


def restart_broker(server: ServedCluster, broker: int) -> None:
    with server.locked() as cluster:
        cluster.restart(broker)


# -- 1. idempotent produce, lost ack ----------------------------------------------------------


def test_idempotent_produce_lost_ack_is_deduplicated(served, kp):
    server = served([("t", 1, 3)])
    producer = KafkaProducer(**kp(server), **PRODUCER, enable_idempotence=True, acks="all")
    with closing(producer):
        producer.send("t", b"warm-up").get(10)  # the producer id is in place before the fault
        with server.locked():
            fault = server.service.add_wire_fault("close-after", "Produce", 1)
        futures = [producer.send("t", f"v{i}".encode()) for i in range(10)]
        producer.flush(10)
        offsets = [f.get(5).offset for f in futures]
    with server.locked() as cluster:
        fired = next(f.fired for f in server.service.wire_faults if f.fault_id == fault)
        dedup = cluster.world.trace.marks.get(DEDUP_MARK, 0)
    assert fired, "the broker never saw the Produce the fault was armed on"
    assert dedup >= 1, "the retry of the appended batch never reached the broker's deduplication"
    assert log_values(server, "t") == ["warm-up"] + [f"v{i}" for i in range(10)]
    assert offsets == list(range(1, 11))


# -- 2. commit and abort ----------------------------------------------------------------------


def _commit_and_abort(server: ServedCluster, kp: Kp, tid: str, crash: str | None = None) -> None:
    producer = transactional(server, kp, tid)
    reader = committed_reader(server, kp, "t")
    with closing(producer, reader):
        producer.begin_transaction()
        for i in range(3):
            producer.send("t", f"c{i}".encode(), partition=i % 2)
        victim = None
        if crash:
            producer.flush(10)
            victim = crash_broker(server, crash, "t", tid)
        for i in range(3, 6):
            producer.send("t", f"c{i}".encode(), partition=i % 2)
        bounded(producer.commit_transaction)
        if victim is not None:
            restart_broker(server, victim)
        producer.begin_transaction()
        for i in range(4):
            producer.send("t", f"a{i}".encode(), partition=i % 2)
        producer.flush(10)
        bounded(producer.abort_transaction)
        producer.begin_transaction()
        producer.send("t", b"c-last", partition=0)
        bounded(producer.commit_transaction)
        got = consume(reader, 7) + drain(reader)
    expected = [f"c{i}" for i in range(6)] + ["c-last"]
    assert sorted(got) == sorted(expected)
    written = log_values(server, "t", 0) + log_values(server, "t", 1)
    assert sorted(v for v in written if v.startswith("c")) == sorted(expected)  # each committed record once


def test_transaction_commit_and_abort(served, kp):
    server = served([("t", 2, 3)])
    _commit_and_abort(server, kp, "tx-ca")


# -- 3. read_committed waits behind an open transaction ---------------------------------------


def test_read_committed_waits_for_the_last_stable_offset(served, kp):
    server = served([("t", 1, 3)])
    plain = KafkaProducer(**kp(server), **PRODUCER)
    producer = transactional(server, kp, "tx-lso")
    reader = committed_reader(server, kp, "t")
    with closing(plain, producer, reader):
        producer.begin_transaction()
        producer.send("t", b"open-0")
        producer.send("t", b"open-1")
        producer.flush(10)
        plain.send("t", b"after").get(10)  # after the open transaction: behind the LSO too
        assert drain(reader) == []
        with server.locked() as cluster:
            view = cluster.describe_partition("t", 0)
        assert (view.last_stable_offset, view.high_watermark) == (0, 3)
        bounded(producer.commit_transaction)
        got = consume(reader, 3)
    assert got == ["open-0", "open-1", "after"]


# -- 4. consume-transform-produce -------------------------------------------------------------


def _consume_transform_produce(server: ServedCluster, kp: Kp, tid: str, crash: str | None = None) -> None:
    source = KafkaProducer(**kp(server), **PRODUCER)
    with closing(source):
        for i in range(6):
            source.send("in", f"m{i}".encode())
        source.flush(10)
    consumer = KafkaConsumer("in", **kp(server), **CONSUMER, group_id="ctp", isolation_level="read_committed")
    producer = transactional(server, kp, tid)
    done = 0
    with closing(producer, consumer):
        victim = None
        deadline = time.monotonic() + 30
        while done < 4 and time.monotonic() < deadline:
            records = [r for rs in consumer.poll(timeout_ms=200, max_records=2).values() for r in rs]
            if not records:
                continue
            producer.begin_transaction()
            for r in records:
                producer.send("out", r.value.upper())
            if crash and victim is None:
                producer.flush(10)
                victim = crash_broker(server, crash, "out", tid, "ctp")
            offsets = {TopicPartition("in", 0): OffsetAndMetadata(records[-1].offset + 1, "", -1)}
            bounded(producer.send_offsets_to_transaction, offsets, consumer.group_metadata())
            bounded(producer.commit_transaction)
            if victim is not None and done == 0:
                restart_broker(server, victim)
            done += len(records)
    assert done == 4
    # A new consumer of the group resumes after what the transactions committed.
    again = KafkaConsumer("in", **kp(server), **CONSUMER, group_id="ctp", isolation_level="read_committed")
    reader = committed_reader(server, kp, "out")
    with closing(again, reader):
        rest = consume(again, 2) + drain(again)
        assert again.committed(TopicPartition("in", 0)) == 4
        out = consume(reader, 4) + drain(reader)
    assert rest == ["m4", "m5"]
    assert out == ["M0", "M1", "M2", "M3"]
    assert log_values(server, "out") == ["M0", "M1", "M2", "M3"]


def test_consume_transform_produce(served, kp):
    server = served([("in", 1, 3), ("out", 1, 3)])
    _consume_transform_produce(server, kp, "tx-ctp")


# -- 5. zombie fencing ------------------------------------------------------------------------


def test_zombie_is_fenced(served, kp):
    server = served([("t", 1, 3)])
    zombie = transactional(server, kp, "tx-z")
    with closing(zombie):
        zombie.begin_transaction()
        zombie.send("t", b"zombie").get(10)
        successor = transactional(server, kp, "tx-z")
        with closing(successor):
            with pytest.raises((ProducerFencedError, InvalidProducerEpochError)):
                zombie.send("t", b"zombie-2").get(10)
                bounded(zombie.commit_transaction)
            successor.begin_transaction()
            successor.send("t", b"successor")
            bounded(successor.commit_transaction)
        reader = committed_reader(server, kp, "t")
        with closing(reader):
            got = consume(reader, 1) + drain(reader)
    assert got == ["successor"]


# -- 6. transaction.timeout.ms ----------------------------------------------------------------


def test_transaction_timeout_aborts_a_stalled_producer(served, kp):
    config = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}
    server = served([("t", 1, 3)], config=config)
    stalled = transactional(server, kp, "tx-stall", transaction_timeout_ms=2_000)
    with closing(stalled):
        stalled.begin_transaction()
        stalled.send("t", b"stalled").get(10)
        with server.locked() as cluster:
            assert describe_transaction_row(cluster, "tx-stall").state == "Ongoing"
        assert wait_until(lambda: _txn_state(server, "tx-stall") == "CompleteAbort", 6)
        with pytest.raises((ProducerFencedError, InvalidProducerEpochError)):
            bounded(stalled.commit_transaction)
    reader = committed_reader(server, kp, "t")
    with closing(reader):
        assert drain(reader) == []
        tp = TopicPartition("t", 0)
        assert reader.end_offsets([tp])[tp] == 2  # the record and the abort marker


def _txn_state(server: ServedCluster, tid: str) -> str:
    with server.locked() as cluster:
        return describe_transaction_row(cluster, tid).state


# -- 7. rebalance when a member leaves --------------------------------------------------------


def test_group_rebalances_when_a_member_leaves(served, kp):
    server = served([("t", 2, 3)])
    a = KafkaConsumer("t", **kp(server), **CONSUMER, group_id="g7")
    b = KafkaConsumer("t", **kp(server), **CONSUMER, group_id="g7")
    stops = {a: threading.Event(), b: threading.Event()}

    def run(consumer: KafkaConsumer) -> None:  # one poll loop per consumer, as applications run them
        while not stops[consumer].is_set():
            consumer.poll(timeout_ms=200)
        consumer.close()

    threads = {c: threading.Thread(target=run, args=(c,), daemon=True) for c in (a, b)}
    for t in threads.values():
        t.start()
    try:
        assert wait_until(lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, 20)
        assert a.assignment() | b.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}
        stops[b].set()
        threads[b].join(10)
        assert wait_until(lambda: len(a.assignment()) == 2, 15)
        assert a.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}
    finally:
        for c, t in threads.items():
            stops[c].set()
            t.join(10)


# -- 8. a broker crash mid-transaction --------------------------------------------------------


def test_commit_and_abort_with_the_partition_leader_crashed(served, kp):
    server = served([("t", 2, 3)], config=CRASH_CONFIG)
    _commit_and_abort(server, kp, "tx-ca2", crash="leader")


def test_consume_transform_produce_with_the_partition_leader_crashed(served, kp):
    server = served([("in", 1, 3), ("out", 1, 3)], config=CRASH_CONFIG)
    _consume_transform_produce(server, kp, "tx-ctp2", crash="leader")


@pytest.mark.skip(reason=COORDINATOR_CRASH_BUG)
def test_commit_and_abort_with_the_transaction_coordinator_crashed(served, kp):
    server = served([("t", 2, 3)], config=CRASH_CONFIG)
    _commit_and_abort(server, kp, "tx-ca-crash", crash="coordinator")


@pytest.mark.skip(reason=COORDINATOR_CRASH_BUG)
def test_consume_transform_produce_with_the_transaction_coordinator_crashed(served, kp):
    server = served([("in", 1, 3), ("out", 1, 3)], config=CRASH_CONFIG)
    _consume_transform_produce(server, kp, "tx-ctp", crash="coordinator")
