"""Transaction cases: commit, abort, the LSO, fencing, the timeout, consume-transform-produce, failures."""

from __future__ import annotations

from typing import Any

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from engine.conform.case import Bounds, Ctx, case
from engine.conform.cases.common import CALL_S, make_topic, read_partition, send
from engine.record.confluent import error_name


def transactional(ctx: Ctx, short: str = "tx", **config: Any) -> Any:
    """Return a transactional producer whose init_transactions() has run."""
    producer = ctx.producer(**{"transactional.id": ctx.name(short), **config})
    producer.init_transactions(CALL_S)
    return producer


def _both_reads(ctx: Ctx, topic: str, partition: int = 0, committed: int = 0) -> None:
    ctx.observe(f"read_committed-{partition}", read_partition(ctx, topic, partition, min_records=committed))
    ctx.observe(f"read_uncommitted-{partition}", read_partition(ctx, topic, partition, isolation="read_uncommitted"))


@case("txn.commit", "transactions", "a committed transaction over two partitions, read under both isolations")
def commit(ctx: Ctx) -> None:
    topic = make_topic(ctx, "c", 2)
    producer = transactional(ctx)
    producer.begin_transaction()
    for i in range(6):
        producer.produce(topic, f"c-{i}".encode(), partition=i % 2)
    ctx.attempt("commit", producer.commit_transaction, CALL_S)
    for p in (0, 1):
        _both_reads(ctx, topic, p, committed=3)


@case("txn.abort", "transactions", "an aborted transaction: read_committed skips it, read_uncommitted sees it")
def abort(ctx: Ctx) -> None:
    topic = make_topic(ctx, "a")
    producer = transactional(ctx)
    producer.begin_transaction()
    send(producer, topic, [f"a-{i}" for i in range(5)])
    ctx.attempt("abort", producer.abort_transaction, CALL_S)
    producer.begin_transaction()
    send(producer, topic, [f"c-{i}" for i in range(2)])
    ctx.attempt("commit", producer.commit_transaction, CALL_S)
    _both_reads(ctx, topic, committed=2)


@case("txn.lso", "transactions", "an open transaction holds read_committed at the LSO; its commit releases it")
def lso(ctx: Ctx) -> None:
    topic = make_topic(ctx, "l")
    send(ctx.producer(**{"enable.idempotence": True}), topic, ["before-0", "before-1"])
    producer = transactional(ctx)
    producer.begin_transaction()
    send(producer, topic, [f"open-{i}" for i in range(3)])
    ctx.observe("while-open-committed", read_partition(ctx, topic, min_records=2, seconds=6))
    ctx.observe("while-open-uncommitted", read_partition(ctx, topic, isolation="read_uncommitted", min_records=5))
    reader = ctx.consumer(**{"group.id": ctx.name("lso"), "isolation.level": "read_committed"})
    tp = TopicPartition(topic, 0)
    reader.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    end = ctx.seconds() + 4
    while ctx.seconds() < end:
        reader.consume(10, 0.2)
    ctx.observe("position-at-lso", reader.position([tp])[0].offset)
    ctx.observe("high-watermark", reader.get_watermark_offsets(tp, timeout=10, cached=False)[1])
    ctx.attempt("commit", producer.commit_transaction, CALL_S)
    ctx.observe("after-commit", read_partition(ctx, topic, min_records=5))


@case("txn.fencing", "transactions", "a second producer with the same transactional.id fences the first (zombie)")
def fencing(ctx: Ctx) -> None:
    topic = make_topic(ctx, "z")
    zombie = transactional(ctx, "same")
    zombie.begin_transaction()
    send(zombie, topic, ["zombie-0"])
    successor = transactional(ctx, "same")
    ctx.attempt("zombie-commit", zombie.commit_transaction, CALL_S)
    successor.begin_transaction()
    send(successor, topic, ["new-0", "new-1"])
    ctx.attempt("successor-commit", successor.commit_transaction, CALL_S)
    _both_reads(ctx, topic, committed=2)


@case(
    "txn.timeout",
    "transactions",
    "transaction.timeout.ms passes: the coordinator aborts, the producer's commit fails, nothing is visible",
    bounds=Bounds(2.0, 3.0),
)
def timeout(ctx: Ctx) -> None:
    topic = make_topic(ctx, "to")
    producer = transactional(ctx, **{"transaction.timeout.ms": 2000})
    producer.begin_transaction()
    send(producer, topic, [f"late-{i}" for i in range(3)])
    ctx.sleep(5.0)
    try:
        producer.commit_transaction(CALL_S)
        ctx.observe("commit", "ok")
    except Exception as exc:
        err = exc.args[0] if exc.args else None
        ctx.observe("commit", error_name(exc))
        ctx.observe(
            "commit-error-kind",
            {"fatal": err.fatal(), "abortable": err.txn_requires_abort()} if hasattr(err, "fatal") else None,
        )
    ctx.observe("read_committed", read_partition(ctx, topic, seconds=5))
    ctx.observe("read_uncommitted", read_partition(ctx, topic, isolation="read_uncommitted", min_records=3))


def _consume_transform_produce(ctx: Ctx, *, commit: bool) -> None:
    source = make_topic(ctx, "in")
    sink = make_topic(ctx, "out")
    send(ctx.producer(**{"enable.idempotence": True}), source, [f"in-{i}" for i in range(10)])
    group = ctx.name("app")
    consumer = ctx.consumer(
        **{
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([source])
    producer = transactional(ctx, "app")
    taken: list[Any] = []
    end = ctx.seconds() + CALL_S
    while len(taken) < 10 and ctx.seconds() < end:
        taken.extend(m for m in consumer.consume(10, 0.5) if m.error() is None)
    ctx.observe("taken", [m.offset() for m in taken])
    producer.begin_transaction()
    for m in taken:
        producer.produce(sink, m.value().decode().replace("in-", "out-").encode(), partition=0)
    offsets = [TopicPartition(source, 0, taken[-1].offset() + 1)] if taken else []
    ctx.attempt(
        "send-offsets", producer.send_offsets_to_transaction, offsets, consumer.consumer_group_metadata(), CALL_S
    )
    if commit:
        ctx.attempt("commit", producer.commit_transaction, CALL_S)
    else:
        producer.flush(CALL_S)
        ctx.attempt("abort", producer.abort_transaction, CALL_S)
    consumer.close()
    checker = ctx.consumer(**{"group.id": group, "enable.auto.commit": False})
    committed = checker.committed([TopicPartition(source, 0)], timeout=CALL_S)
    ctx.observe("committed", [tp.offset for tp in committed])
    ctx.observe("input-read", read_partition(ctx, source, min_records=10))
    ctx.observe("output", read_partition(ctx, sink, min_records=10 if commit else 0, seconds=8))


@case("txn.consume-transform-produce", "transactions", "send_offsets_to_transaction then commit: output and offsets")
def consume_transform_produce(ctx: Ctx) -> None:
    _consume_transform_produce(ctx, commit=True)


@case(
    "txn.consume-transform-produce-abort",
    "transactions",
    "send_offsets_to_transaction then abort: no output, the group's offsets unchanged",
)
def consume_transform_produce_abort(ctx: Ctx) -> None:
    _consume_transform_produce(ctx, commit=False)


@case("txn.empty-commit", "transactions", "begin then commit with no records (transaction version 1)")
def empty_commit(ctx: Ctx) -> None:
    producer = transactional(ctx)
    producer.begin_transaction()
    ctx.attempt("commit", producer.commit_transaction, CALL_S)
    producer.begin_transaction()
    ctx.attempt("abort", producer.abort_transaction, CALL_S)


@case(
    "txn.coordinator-killed",
    "transactions",
    "the transaction coordinator's broker killed mid-transaction: the commit completes on the new one",
    faults=True,
)
def coordinator_killed(ctx: Ctx) -> None:
    topic = make_topic(ctx, "ck")
    producer = transactional(ctx, "coord", **{"transaction.timeout.ms": 60_000})
    producer.begin_transaction()
    send(producer, topic, [f"c-{i}" for i in range(5)])
    ctx.fault(f"kill coordinator transaction {ctx.name('coord')}")
    ctx.attempt("commit", producer.commit_transaction, 60)
    producer.begin_transaction()
    send(producer, topic, ["after-0"])
    ctx.attempt("commit-after", producer.commit_transaction, 60)
    ctx.observe("read_committed", read_partition(ctx, topic, min_records=6))


@case(
    "txn.leader-killed",
    "transactions",
    "the leader of a written partition killed mid-transaction: the transaction commits whole",
    faults=True,
)
def leader_killed(ctx: Ctx) -> None:
    topic = make_topic(ctx, "lk", 1, 3, **{"min.insync.replicas": "2"})
    producer = transactional(ctx, "lk", **{"message.timeout.ms": 60_000, "transaction.timeout.ms": 60_000})
    producer.begin_transaction()
    first = send(producer, topic, [f"a-{i}" for i in range(10)])
    ctx.fault(f"kill leader {topic} 0")
    second = send(producer, topic, [f"b-{i}" for i in range(10)])
    ctx.observe("reports", first + second)
    ctx.attempt("commit", producer.commit_transaction, 60)
    ctx.observe("read_committed", read_partition(ctx, topic, min_records=20))
