"""kafka-python 3.0 against a served simulated cluster: exactly-once over the wire.

Each test is client code as it would be written for a real Kafka; only the connection settings
(``kp(server)``: bootstrap servers and SASL/PLAIN) and short timeouts differ. The outcomes are read
back from the cluster itself (the partition logs, the transaction coordinator) or consumed back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import InvalidProducerEpochError, KafkaError, ProducerFencedError
from kafka.structs import OffsetAndMetadata

from engine.serve.server import ServedCluster
from engine.views.transactions import describe_transaction_row

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


# -- helpers ----------------------------------------------------------------------------------


def log_values(server: ServedCluster, topic: str, partition: int = 0) -> list[str]:
    """The data records' values in the partition leader's log, in offset order (markers left out)."""
    with server.locked() as cluster:
        dump = cluster.dump_log(topic, partition)
    return [line.split(" payload: ", 1)[1] for line in dump.splitlines() if " payload: " in line]


def consume(consumer: KafkaConsumer, n: int, timeout_s: float = 15.0) -> list[str]:
    """Poll until ``n`` values arrived (or the timeout): return them all as text."""
    out: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            out.extend(r.value.decode() for r in records)
    return out


def drain(consumer: KafkaConsumer, quiet_s: float = 1.5) -> list[str]:
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
            try:
                c.close(timeout=2) if isinstance(c, KafkaProducer) else c.close()
            except Exception:  # a client that already failed must not hide the test's outcome
                pass


def committed_reader(
    server: ServedCluster, kp: Callable[..., dict[str, Any]], topic: str, **extra: Any
) -> KafkaConsumer:
    """A read_committed consumer of ``topic`` assigned every partition (no group)."""
    consumer = KafkaConsumer(**kp(server), **{**CONSUMER, **extra}, isolation_level="read_committed")
    parts = consumer.partitions_for_topic(topic)
    consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
    return consumer


def transactional(server: ServedCluster, kp: Callable[..., dict[str, Any]], tid: str, **extra: Any) -> KafkaProducer:
    producer = KafkaProducer(**kp(server), **{**PRODUCER, **extra}, transactional_id=tid)
    producer.init_transactions()
    return producer


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
    with server.locked():
        fired = [f for f in server.service.wire_faults if f.fault_id == fault]
    assert fired[0].fired, "the broker never saw the Produce the fault was armed on"
    values = log_values(server, "t")
    assert values == ["warm-up"] + [f"v{i}" for i in range(10)]
    assert offsets == list(range(1, 11))


# -- 2. commit and abort ----------------------------------------------------------------------


def _commit_and_abort(server: ServedCluster, kp: Callable[..., dict[str, Any]], crash: bool) -> None:
    producer = transactional(server, kp, "tx-ca")
    reader = committed_reader(server, kp, "t")
    with closing(producer, reader):
        producer.begin_transaction()
        for i in range(3):
            producer.send("t", f"c{i}".encode(), partition=i % 2)
        if crash:
            producer.flush(10)
            with server.locked() as cluster:
                leader = cluster.leader("t", 0)
                cluster.crash(leader)
        for i in range(3, 6):
            producer.send("t", f"c{i}".encode(), partition=i % 2)
        producer.commit_transaction()
        if crash:
            with server.locked() as cluster:
                cluster.restart(leader)
        producer.begin_transaction()
        for i in range(4):
            producer.send("t", f"a{i}".encode(), partition=i % 2)
        producer.flush(10)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("t", b"c-last", partition=0)
        producer.commit_transaction()

        got = consume(reader, 7)
        got += drain(reader)
    expected = [f"c{i}" for i in range(6)] + ["c-last"]
    assert sorted(got) == sorted(expected)
    written = log_values(server, "t", 0) + log_values(server, "t", 1)
    assert sorted(v for v in written if v.startswith("c")) == sorted(expected)  # each committed record once


def test_transaction_commit_and_abort(served, kp):
    server = served([("t", 2, 3)])
    _commit_and_abort(server, kp, crash=False)


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
        plain.send("t", b"after").get(10)  # past the open transaction: still behind the LSO
        assert drain(reader) == []
        with server.locked() as cluster:
            view = cluster.describe_partition("t", 0)
        assert view.last_stable_offset == 0 and view.high_watermark == 3
        producer.commit_transaction()
        got = consume(reader, 3)
    assert got == ["open-0", "open-1", "after"]


# -- 4. consume-transform-produce -------------------------------------------------------------


def _consume_transform_produce(server: ServedCluster, kp: Callable[..., dict[str, Any]], crash: bool) -> None:
    source = KafkaProducer(**kp(server), **PRODUCER)
    with closing(source):
        for i in range(6):
            source.send("in", f"m{i}".encode())
        source.flush(10)
    consumer = KafkaConsumer("in", **kp(server), **CONSUMER, group_id="ctp", isolation_level="read_committed")
    producer = transactional(server, kp, "tx-ctp")
    with closing(producer, consumer):
        done = 0
        round_ = 0
        while done < 4:
            records = [r for rs in consumer.poll(timeout_ms=500, max_records=2).values() for r in rs]
            if not records:
                continue
            producer.begin_transaction()
            for r in records:
                producer.send("out", r.value.upper())
            if crash and round_ == 0:
                producer.flush(10)
                with server.locked() as cluster:
                    leader = cluster.leader("out", 0)
                    cluster.crash(leader)
            tp = TopicPartition("in", 0)
            producer.send_offsets_to_transaction(
                {tp: OffsetAndMetadata(records[-1].offset + 1, "", -1)}, consumer.group_metadata()
            )
            producer.commit_transaction()
            if crash and round_ == 0:
                with server.locked() as cluster:
                    cluster.restart(leader)
            done += len(records)
            round_ += 1
    # A new consumer of the group resumes after what the transactions committed.
    again = KafkaConsumer("in", **kp(server), **CONSUMER, group_id="ctp", isolation_level="read_committed")
    reader = committed_reader(server, kp, "out")
    with closing(again, reader):
        rest = consume(again, 6 - done)
        rest += drain(again, 1.0)
        out = consume(reader, done) + drain(reader, 1.0)
    assert rest == [f"m{i}" for i in range(done, 6)]
    assert out == [f"M{i}" for i in range(done)]
    assert log_values(server, "out") == [f"M{i}" for i in range(done)]


def test_consume_transform_produce(served, kp):
    server = served([("in", 1, 3), ("out", 1, 3)])
    _consume_transform_produce(server, kp, crash=False)


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
                zombie.commit_transaction()
            successor.begin_transaction()
            successor.send("t", b"successor")
            successor.commit_transaction()
        reader = committed_reader(server, kp, "t")
        with closing(reader):
            got = consume(reader, 1) + drain(reader)
    assert got == ["successor"]


# -- 6. transaction.timeout.ms ----------------------------------------------------------------


def test_transaction_timeout_aborts_a_stalled_producer(served, kp):
    server = served([("t", 1, 3)], config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    stalled = transactional(server, kp, "tx-stall", transaction_timeout_ms=2_000)
    with closing(stalled):
        stalled.begin_transaction()
        stalled.send("t", b"stalled").get(10)
        time.sleep(3.5)
        with server.locked() as cluster:
            state = describe_transaction_row(cluster, "tx-stall").state
        assert state in ("CompleteAbort", "PrepareAbort")
        with pytest.raises(KafkaError):
            stalled.commit_transaction()
    reader = committed_reader(server, kp, "t")
    with closing(reader):
        assert drain(reader) == []
        assert reader.end_offsets([TopicPartition("t", 0)])[TopicPartition("t", 0)] == 2  # record and abort marker
    with server.locked() as cluster:
        assert describe_transaction_row(cluster, "tx-stall").state == "CompleteAbort"


# -- 7. rebalance when a member leaves --------------------------------------------------------


def test_group_rebalances_when_a_member_leaves(served, kp):
    server = served([("t", 2, 3)])
    a = KafkaConsumer("t", **kp(server), **CONSUMER, group_id="g7")
    b = KafkaConsumer("t", **kp(server), **CONSUMER, group_id="g7")
    with closing(a, b):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (len(a.assignment()) == 1 and len(b.assignment()) == 1):
            a.poll(timeout_ms=100)
            b.poll(timeout_ms=100)
        assert {p.partition for p in a.assignment() | b.assignment()} == {0, 1}
        assert len(a.assignment()) == len(b.assignment()) == 1
        b.close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(a.assignment()) < 2:
            a.poll(timeout_ms=100)
        assert a.assignment() == {TopicPartition("t", 0), TopicPartition("t", 1)}


# -- 8. a broker crash mid-transaction --------------------------------------------------------


def test_commit_and_abort_with_a_broker_crash(served, kp):
    server = served([("t", 2, 3)])
    _commit_and_abort(server, kp, crash=True)


def test_consume_transform_produce_with_a_broker_crash(served, kp):
    server = served([("in", 1, 3), ("out", 1, 3)])
    _consume_transform_produce(server, kp, crash=True)
