"""aiokafka 0.14 against a served simulated cluster: exactly-once over the wire.

Each test is client code as it would be written for a real Kafka; only the connection settings
(``kp(server)``: bootstrap servers and SASL/PLAIN) and short timeouts differ. Outcomes are read back
from the cluster itself (the partition logs, the transaction coordinator) or consumed back. Each
test runs its coroutine under :func:`run`, which bounds it: a server that never answers fails the
test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import InvalidProducerEpoch, ProducerFenced

from engine.serve.realtime_server import ServedCluster
from engine.views.consumer_groups import group_view
from engine.views.transactions import describe_transaction_row

pytestmark = pytest.mark.slow

Kp = Callable[..., dict[str, Any]]

#: The engine's group coordinator refuses session timeouts under 6 s (group.min.session.timeout.ms).
SESSION_MS = 6_000
PRODUCER = {"request_timeout_ms": 5_000, "retry_backoff_ms": 50, "linger_ms": 5}
CONSUMER = {
    "auto_offset_reset": "earliest",
    "enable_auto_commit": False,
    "session_timeout_ms": SESSION_MS,
    "heartbeat_interval_ms": 500,
    "request_timeout_ms": 8_000,
    "fetch_max_wait_ms": 100,
    "retry_backoff_ms": 50,
    "metadata_max_age_ms": 5_000,
}
#: The broker's coverage mark for a retried batch answered from its producer state, not appended again.
DEDUP_MARK = "dedup: duplicate batch answered from cache"
#: Broker settings for the crash cases: the controller fences a dead broker after 3 s, not 9 s.
CRASH_CONFIG = {"broker.session.timeout.ms": 3_000, "broker.heartbeat.interval.ms": 500}


# -- helpers ----------------------------------------------------------------------------------


def log_values(server: ServedCluster, topic: str, partition: int = 0) -> list[str]:
    """The data records' values in the partition leader's log, in offset order (markers left out)."""
    with server.locked() as cluster:
        dump = cluster.dump_log(topic, partition)
    return [line.split(" payload: ", 1)[1] for line in dump.splitlines() if " payload: " in line]


def txn_state(server: ServedCluster, tid: str) -> str:
    with server.locked() as cluster:
        return describe_transaction_row(cluster, tid).state


async def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Check ``predicate`` every 50 ms until it holds (True) or the timeout passes (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def consume(consumer: AIOKafkaConsumer, n: int, timeout_s: float = 15.0, **getmany: Any) -> list[str]:
    """Fetch until ``n`` values arrived (or the timeout): return them as text."""
    out: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=200, **getmany)).values():
            out.extend(r.value.decode() for r in records)
    return out


async def drain(consumer: AIOKafkaConsumer, quiet_s: float = 1.0) -> list[str]:
    """Fetch until nothing more arrives for ``quiet_s``: return what did."""
    out: list[str] = []
    last = time.monotonic()
    while time.monotonic() - last < quiet_s:
        got = [r.value.decode() for rs in (await consumer.getmany(timeout_ms=200)).values() for r in rs]
        if got:
            out.extend(got)
            last = time.monotonic()
    return out


@asynccontextmanager
async def started(*clients: Any) -> AsyncIterator[None]:
    """Start the clients, stop them at the end."""
    for c in clients:
        await c.start()
    try:
        yield
    finally:
        for c in clients:
            with suppress(Exception):  # a client that already failed must not hide the test's outcome
                await asyncio.wait_for(c.stop(), 5)


def committed_reader(server: ServedCluster, kp: Kp, topic: str) -> AIOKafkaConsumer:
    """A read_committed consumer of every partition of ``topic`` (no group)."""
    return AIOKafkaConsumer(topic, **kp(server), **CONSUMER, isolation_level="read_committed")


def transactional(server: ServedCluster, kp: Kp, tid: str, **extra: Any) -> AIOKafkaProducer:
    return AIOKafkaProducer(**kp(server), **{**PRODUCER, **extra}, transactional_id=tid)


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


def test_idempotent_produce_lost_ack_is_deduplicated(served, kp, run_async):
    server = served([("t", 1, 3)])

    async def body() -> list[int]:
        producer = AIOKafkaProducer(**kp(server), **PRODUCER, enable_idempotence=True, acks="all")
        async with started(producer):
            await producer.send_and_wait("t", b"warm-up")  # the producer id is in place before the fault
            with server.locked():
                server.service.add_wire_fault("close-after", "Produce", 1)
            futures = [await producer.send("t", f"v{i}".encode()) for i in range(10)]
            return [(await f).offset for f in futures]

    offsets = run_async(body())
    with server.locked() as cluster:
        assert all(f.fired for f in server.service.wire_faults), "the broker never saw the faulted Produce"
        dedup = cluster.world.trace.marks.get(DEDUP_MARK, 0)
    assert dedup >= 1, "the retry of the appended batch never reached the broker's deduplication"
    assert log_values(server, "t") == ["warm-up"] + [f"v{i}" for i in range(10)]
    assert offsets == list(range(1, 11))


# -- 2. commit and abort ----------------------------------------------------------------------


async def _commit_and_abort(server: ServedCluster, kp: Kp, tid: str, crash: str | None = None) -> None:
    producer = transactional(server, kp, tid)
    reader = committed_reader(server, kp, "t")
    async with started(producer, reader):
        victim = None
        async with producer.transaction():
            for i in range(3):
                await producer.send("t", f"c{i}".encode(), partition=i % 2)
            if crash:
                await producer.flush()
                victim = crash_broker(server, crash, "t", tid)
            for i in range(3, 6):
                await producer.send("t", f"c{i}".encode(), partition=i % 2)
        if victim is not None:
            restart_broker(server, victim)
        await producer.begin_transaction()
        for i in range(4):
            await producer.send("t", f"a{i}".encode(), partition=i % 2)
        await producer.flush()
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send("t", b"c-last", partition=0)
        got = await consume(reader, 7) + await drain(reader)
    expected = [f"c{i}" for i in range(6)] + ["c-last"]
    assert sorted(got) == sorted(expected)
    written = log_values(server, "t", 0) + log_values(server, "t", 1)
    assert sorted(v for v in written if v.startswith("c")) == sorted(expected)  # each committed record once


def test_transaction_commit_and_abort(served, kp, run_async):
    server = served([("t", 2, 3)])
    run_async(_commit_and_abort(server, kp, "tx-ca"))


# -- 3. read_committed waits behind an open transaction ---------------------------------------


def test_read_committed_waits_for_the_last_stable_offset(served, kp, run_async):
    server = served([("t", 1, 3)])

    async def body() -> list[str]:
        plain = AIOKafkaProducer(**kp(server), **PRODUCER)
        producer = transactional(server, kp, "tx-lso")
        reader = committed_reader(server, kp, "t")
        async with started(plain, producer, reader):
            await producer.begin_transaction()
            await producer.send("t", b"open-0")
            await producer.send_and_wait("t", b"open-1")
            await plain.send_and_wait("t", b"after")  # after the open transaction: behind the LSO too
            assert await drain(reader) == []
            with server.locked() as cluster:
                view = cluster.describe_partition("t", 0)
            assert (view.last_stable_offset, view.high_watermark) == (0, 3)
            await producer.commit_transaction()
            return await consume(reader, 3)

    assert run_async(body()) == ["open-0", "open-1", "after"]


# -- 4. consume-transform-produce -------------------------------------------------------------


async def _consume_transform_produce(server: ServedCluster, kp: Kp, tid: str, crash: str | None = None) -> None:
    source = AIOKafkaProducer(**kp(server), **PRODUCER)
    async with started(source):
        for i in range(6):
            await source.send("in", f"m{i}".encode())
        await source.flush()
    consumer = AIOKafkaConsumer("in", **kp(server), **CONSUMER, group_id="ctp", isolation_level="read_committed")
    producer = transactional(server, kp, tid)
    done = 0
    async with started(producer, consumer):
        victim = None
        deadline = time.monotonic() + 30
        while done < 4 and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200, max_records=2)
            records = [r for rs in batch.values() for r in rs]
            if not records:
                continue
            async with producer.transaction():
                for r in records:
                    await producer.send("out", r.value.upper())
                if crash and victim is None:
                    await producer.flush()
                    victim = crash_broker(server, crash, "out", tid, "ctp")
                offsets = {TopicPartition("in", 0): records[-1].offset + 1}
                await producer.send_offsets_to_transaction(offsets, "ctp")
            if victim is not None and done == 0:
                restart_broker(server, victim)
            done += len(records)
    assert done == 4
    # A new consumer of the group resumes after what the transactions committed.
    again = AIOKafkaConsumer("in", **kp(server), **CONSUMER, group_id="ctp", isolation_level="read_committed")
    reader = committed_reader(server, kp, "out")
    async with started(again, reader):
        rest = await consume(again, 2) + await drain(again)
        assert await again.committed(TopicPartition("in", 0)) == 4
        out = await consume(reader, 4) + await drain(reader)
    assert rest == ["m4", "m5"]
    assert out == ["M0", "M1", "M2", "M3"]
    assert log_values(server, "out") == ["M0", "M1", "M2", "M3"]


def test_consume_transform_produce(served, kp, run_async):
    server = served([("in", 1, 3), ("out", 1, 3)])
    run_async(_consume_transform_produce(server, kp, "tx-ctp"))


# -- 5. zombie fencing ------------------------------------------------------------------------


def test_zombie_is_fenced(served, kp, run_async):
    server = served([("t", 1, 3)])

    async def body() -> list[str]:
        zombie = transactional(server, kp, "tx-z")
        async with started(zombie):
            await zombie.begin_transaction()
            await zombie.send_and_wait("t", b"zombie")
            successor = transactional(server, kp, "tx-z")
            async with started(successor):
                with pytest.raises((ProducerFenced, InvalidProducerEpoch)):
                    await zombie.send_and_wait("t", b"zombie-2")
                    await zombie.commit_transaction()
                async with successor.transaction():
                    await successor.send("t", b"successor")
        reader = committed_reader(server, kp, "t")
        async with started(reader):
            return await consume(reader, 1) + await drain(reader)

    assert run_async(body()) == ["successor"]


# -- 6. transaction.timeout.ms ----------------------------------------------------------------


def test_transaction_timeout_aborts_a_stalled_producer(served, kp, run_async):
    config = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}
    server = served([("t", 1, 3)], config=config)

    async def body() -> None:
        stalled = transactional(server, kp, "tx-stall", transaction_timeout_ms=2_000)
        async with started(stalled):
            await stalled.begin_transaction()
            await stalled.send_and_wait("t", b"stalled")
            assert txn_state(server, "tx-stall") == "Ongoing"
            assert await wait_until(lambda: txn_state(server, "tx-stall") == "CompleteAbort", 6)
            with pytest.raises((ProducerFenced, InvalidProducerEpoch)):
                await stalled.commit_transaction()
        reader = committed_reader(server, kp, "t")
        async with started(reader):
            assert await drain(reader) == []
            tp = TopicPartition("t", 0)
            assert (await reader.end_offsets([tp]))[tp] == 2  # the record and the abort marker

    run_async(body())


# -- 7. rebalance when a member leaves --------------------------------------------------------


def test_group_rebalances_when_a_member_leaves(served, kp, run_async):
    server = served([("t", 2, 3)])
    both = {TopicPartition("t", 0), TopicPartition("t", 1)}

    async def body() -> None:
        a = AIOKafkaConsumer("t", **kp(server), **CONSUMER, group_id="g7")
        b = AIOKafkaConsumer("t", **kp(server), **CONSUMER, group_id="g7")
        async with started(a, b):
            # Both keep fetching, as applications do; the group coordinator balances them.
            polls = [asyncio.ensure_future(_poll_forever(c)) for c in (a, b)]
            try:
                assert await wait_until(lambda: len(a.assignment()) == 1 and len(b.assignment()) == 1, 20)
                assert a.assignment() | b.assignment() == both
                polls[1].cancel()
                await b.stop()
                assert await wait_until(lambda: a.assignment() == both, 15)
            finally:
                for p in polls:
                    p.cancel()

    run_async(body())


async def _poll_forever(consumer: AIOKafkaConsumer) -> None:
    while True:
        await consumer.getmany(timeout_ms=200)


# -- 8. a broker crash mid-transaction --------------------------------------------------------


def test_commit_and_abort_with_the_partition_leader_crashed(served, kp, run_async):
    server = served([("t", 2, 3)], config=CRASH_CONFIG)
    run_async(_commit_and_abort(server, kp, "tx-ca2", crash="leader"))


def test_consume_transform_produce_with_the_partition_leader_crashed(served, kp, run_async):
    server = served([("in", 1, 3), ("out", 1, 3)], config=CRASH_CONFIG)
    run_async(_consume_transform_produce(server, kp, "tx-ctp2", crash="leader"))


def test_commit_and_abort_with_the_transaction_coordinator_crashed(served, kp, run_async):
    server = served([("t", 2, 3)], config=CRASH_CONFIG)
    run_async(_commit_and_abort(server, kp, "tx-ca-crash", crash="coordinator"))


def test_consume_transform_produce_with_the_transaction_coordinator_crashed(served, kp, run_async):
    server = served([("in", 1, 3), ("out", 1, 3)], config=CRASH_CONFIG)
    run_async(_consume_transform_produce(server, kp, "tx-ctp", crash="coordinator"))
