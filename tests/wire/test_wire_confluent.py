"""confluent-kafka (librdkafka 2.16) against a served simulated cluster: the EOS matrix.

Goal: unchanged client code, written as for a real Kafka (only the bootstrap and SASL settings
differ), gets Kafka's exactly-once guarantees from the simulated cluster over real sockets:
idempotent retries deduplicated, aborted records invisible to read_committed, the LSO holding
readers behind an open transaction, transactional offsets that survive a restart, zombies fenced,
``transaction.timeout.ms`` enforced, groups rebalancing, and all of it also across a broker crash.

Method: one served cluster per test (``served`` fixture: a thread with its own asyncio loop);
faults are made under ``server.locked()`` between the application's calls, or armed as wire
faults counted in requests. Outcomes are read back through a read_committed consumer and from
the leaders' logs.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from engine.views.transactions import describe_transaction_row

pytestmark = pytest.mark.slow


def test_an_idempotent_producer_s_retry_after_a_lost_ack_is_written_once(served, ck, logged) -> None:
    server = served([("t", 1, 3)])
    with server.locked():
        server.service.add_wire_fault("close-after", "Produce", 1)
    p = Producer(ck(server, **{"enable.idempotence": True, "linger.ms": 20}))
    reports: list[Any] = []
    for i in range(20):
        p.produce("t", value=f"v{i}".encode(), on_delivery=lambda err, msg: reports.append(err))
    assert p.flush(20) == 0
    assert reports == [None] * 20
    values = logged(server, "t")
    assert sorted(values) == sorted(f"v{i}".encode() for i in range(20)), "a retried batch was appended twice"
    with server.locked() as cluster:
        fired = [e for e in cluster.world.trace if e.name == "wire.fault"]
    assert len(fired) == 1, "the lost ack was never injected"


def test_a_read_committed_consumer_sees_the_committed_transaction_and_not_the_aborted_one(
    served, ck, read_committed, txn_producer
) -> None:
    server = served([("t", 3, 3)])
    p = txn_producer(ck(server), "tx-commit-abort")
    p.begin_transaction()
    for i in range(6):
        p.produce("t", value=f"c{i}".encode(), partition=i % 3)
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(6):
        p.produce("t", value=f"a{i}".encode(), partition=i % 3)
    p.abort_transaction(15)
    assert sorted(read_committed(ck(server), "t", expect=6)) == [f"c{i}" for i in range(6)]


def test_a_read_committed_consumer_waits_behind_an_open_transaction(served, ck, read_committed, txn_producer) -> None:
    server = served([("t", 1, 3)])
    p = txn_producer(ck(server), "tx-open")
    p.begin_transaction()
    p.produce("t", value=b"open-0")
    p.flush(10)
    with server.locked() as cluster:
        view = cluster.describe_partition("t")
        assert view.last_stable_offset == 0 < view.high_watermark, "the open transaction does not hold the LSO"
    assert read_committed(ck(server), "t", seconds=3) == []
    p.commit_transaction(15)
    assert read_committed(ck(server), "t", group="reader-2", expect=1) == ["open-0"]


def consume_transform_produce(
    server: Any, ck: Any, read_committed: Any, txn_producer: Any, *, crash_leader: bool = False
) -> list[str]:
    """Copy in -> out in two transactions with the input offsets; optionally crash out's leader midway."""
    src = Producer(ck(server))
    for i in range(10):
        src.produce("in", value=f"m{i}".encode())
    assert src.flush(10) == 0
    consumer = Consumer(
        {
            **ck(server),
            "group.id": "ctp",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["in"])
    p = txn_producer(ck(server), "tx-ctp")
    copied = 0
    deadline = time.monotonic() + 30
    crashed = None
    restarted = False
    while copied < 10 and time.monotonic() < deadline:
        msgs = [m for m in consumer.consume(5, 1.0) if not m.error()]
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce("out", value=m.value().upper())
        if crash_leader and crashed is None:
            with server.locked() as cluster:
                crashed = cluster.leader("out")
                cluster.crash(crashed)
        try:
            retrying(
                lambda: p.send_offsets_to_transaction(
                    consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 15
                )
            )
            retrying(lambda: p.commit_transaction(30))
            copied += len(msgs)
        except KafkaException as exc:
            if not exc.args[0].txn_requires_abort():
                raise
            # What an exactly-once application does: abort, and read the input again from the group's offsets.
            p.abort_transaction(30)
            for tp in consumer.committed(consumer.assignment(), 10):
                consumer.seek(TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
        if crashed is not None and not restarted:
            restarted = True
            with server.locked() as cluster:
                cluster.restart(crashed)
    consumer.close()
    return read_committed(ck(server), "out", expect=10, seconds=15)


def retrying(call: Any, attempts: int = 50) -> Any:
    """Call a transactional API again while it raises a retriable error, as librdkafka asks."""
    for _ in range(attempts - 1):
        try:
            return call()
        except KafkaException as exc:
            if not exc.args[0].retriable():
                raise
            time.sleep(0.2)
    return call()


def committed_offset(server: Any, ck: Any) -> int:
    c = Consumer({**ck(server), "group.id": "ctp", "enable.auto.commit": False})
    try:
        [tp] = c.committed([TopicPartition("in", 0)], 10)
    finally:
        c.close()
    return tp.offset


def test_consume_transform_produce_commits_its_offsets_with_the_transaction(
    served, ck, read_committed, txn_producer
) -> None:
    server = served([("in", 1, 3), ("out", 1, 3)])
    assert sorted(consume_transform_produce(server, ck, read_committed, txn_producer)) == sorted(
        f"M{i}" for i in range(10)
    )
    assert committed_offset(server, ck) == 10, "the offsets sent to the transaction are not the group's"
    again = Consumer(
        {**ck(server), "group.id": "ctp", "isolation.level": "read_committed", "auto.offset.reset": "earliest"}
    )
    again.subscribe(["in"])
    leftover = [m for m in again.consume(10, 3.0) if not m.error()]
    again.close()
    assert leftover == [], "a restarted consumer re-read input the transactions had consumed"


def test_consume_transform_produce_stays_exactly_once_across_a_broker_crash(
    served, ck, read_committed, txn_producer
) -> None:
    server = served([("in", 1, 3), ("out", 1, 3)])
    out = consume_transform_produce(server, ck, read_committed, txn_producer, crash_leader=True)
    assert sorted(out) == sorted(f"M{i}" for i in range(10)), "output lost or duplicated across the crash"
    assert committed_offset(server, ck) == 10


def test_a_transaction_committed_across_a_leader_crash_is_read_once_and_the_aborted_one_never(
    served, ck, read_committed, txn_producer
) -> None:
    server = served([("t", 1, 3)])
    p = txn_producer(ck(server), "tx-crash")
    p.begin_transaction()
    for i in range(5):
        p.produce("t", value=f"c{i}".encode())
    p.flush(10)
    with server.locked() as cluster:
        leader = cluster.leader("t")
        cluster.crash(leader)
    for i in range(5, 8):
        p.produce("t", value=f"c{i}".encode())
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce("t", value=b"a0")
    p.abort_transaction(30)
    with server.locked() as cluster:
        cluster.restart(leader)
    assert sorted(read_committed(ck(server), "t", expect=8, seconds=15)) == [f"c{i}" for i in range(8)]


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(
    served, ck, read_committed, txn_producer
) -> None:
    server = served([("t", 1, 3)])
    zombie = txn_producer(ck(server), "tx-zombie")
    zombie.begin_transaction()
    zombie.produce("t", value=b"zombie-0")
    zombie.flush(10)
    successor = txn_producer(ck(server), "tx-zombie")
    successor.begin_transaction()
    successor.produce("t", value=b"successor-0")
    successor.commit_transaction(15)
    zombie.produce("t", value=b"zombie-1")
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(15)
    assert raised.value.args[0].fatal() or raised.value.args[0].code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ), raised.value
    assert read_committed(ck(server), "t", expect=1) == ["successor-0"]


def test_transaction_timeout_ms_aborts_a_stalled_producer_s_transaction(
    served, ck, read_committed, txn_producer
) -> None:
    server = served([("t", 1, 3)], config={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    p = txn_producer(
        ck(server),
        "tx-stalled",
        **{"transaction.timeout.ms": 2000, "socket.timeout.ms": 2000, "message.timeout.ms": 2000},
    )
    p.begin_transaction()
    p.produce("t", value=b"stalled")
    p.flush(10)
    deadline = time.monotonic() + 10
    state = ""
    while time.monotonic() < deadline:
        with server.locked() as cluster:
            state = describe_transaction_row(cluster, "tx-stalled").state
        if state in ("CompleteAbort",):
            break
        time.sleep(0.2)
    assert state == "CompleteAbort", f"the coordinator left the stalled transaction {state}"
    assert read_committed(ck(server), "t", seconds=3) == []
    with server.locked() as cluster:
        assert cluster.describe_partition("t").last_stable_offset == cluster.describe_partition("t").high_watermark


def test_a_group_rebalances_when_a_member_leaves(served, ck) -> None:
    server = served([("t", 4, 3)])
    conf = {
        **ck(server),
        "group.id": "g",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "auto.offset.reset": "earliest",
    }
    assigned: dict[str, set[int]] = {"a": set(), "b": set()}

    def track(name: str) -> Any:
        def on_assign(consumer: Any, partitions: list[TopicPartition]) -> None:
            assigned[name] = {tp.partition for tp in partitions}

        return on_assign

    a, b = Consumer(conf), Consumer(conf)
    a.subscribe(["t"], on_assign=track("a"))
    b.subscribe(["t"], on_assign=track("b"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (assigned["a"] and assigned["b"]):
        a.poll(0.1)
        b.poll(0.1)
    assert assigned["a"] and assigned["b"] and assigned["a"] | assigned["b"] == {0, 1, 2, 3}
    b.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and assigned["a"] != {0, 1, 2, 3}:
        a.poll(0.1)
    a.close()
    assert assigned["a"] == {0, 1, 2, 3}, "the remaining member did not take the partitions of the one that left"
