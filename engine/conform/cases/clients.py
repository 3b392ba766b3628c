"""Cases with kafka-python, where it differs from librdkafka: its own transactions and read_committed fetches."""

from __future__ import annotations

from typing import Any

from engine.conform.case import Ctx, case
from engine.conform.cases.common import make_topic, read_partition, send
from engine.conform.cases.txn import transactional


def _kafka_python(ctx: Ctx, kind: str, **config: Any) -> Any:
    from kafka import KafkaConsumer, KafkaProducer

    from engine.record.kafka_python import recording

    make = KafkaProducer if kind == "producer" else KafkaConsumer
    return ctx.keep(recording(make(**ctx.target.kafka_python_config(), **config), ctx.recorder))


@case(
    "clients.kafka-python-read-committed",
    "fetch",
    "kafka-python's read_committed consumer across a committed and an aborted transaction",
    needs=("kafka-python",),
)
def kafka_python_read_committed(ctx: Ctx) -> None:
    from kafka import TopicPartition

    topic = make_topic(ctx, "kp")
    producer = transactional(ctx)
    for label, commit in (("c", True), ("a", False), ("d", True)):
        producer.begin_transaction()
        send(producer, topic, [f"{label}-{i}" for i in range(2)])
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    consumer = _kafka_python(ctx, "consumer", isolation_level="read_committed", enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    read: list[list[Any]] = []
    end = ctx.seconds() + 20
    while len(read) < 4 and ctx.seconds() < end:
        for records in consumer.poll(timeout_ms=300).values():
            read.extend([r.offset, r.value.decode()] for r in records)
    ctx.observe("read", read)
    ctx.observe("position", consumer.position(TopicPartition(topic, 0)))


@case(
    "clients.kafka-python-transactions",
    "transactions",
    "kafka-python's transactional producer: a commit and an abort, read by librdkafka under both isolations",
    needs=("kafka-python",),
)
def kafka_python_transactions(ctx: Ctx) -> None:
    topic = make_topic(ctx, "kpt")
    producer = _kafka_python(ctx, "producer", transactional_id=ctx.name("kp"), enable_idempotence=True)
    producer.init_transactions()
    producer.begin_transaction()
    offsets = [producer.send(topic, f"c-{i}".encode(), partition=0).get(30).offset for i in range(3)]
    producer.commit_transaction()
    producer.begin_transaction()
    offsets += [producer.send(topic, f"a-{i}".encode(), partition=0).get(30).offset for i in range(2)]
    producer.abort_transaction()
    ctx.observe("offsets", offsets)
    ctx.observe("read_committed", read_partition(ctx, topic, min_records=3))
    ctx.observe("read_uncommitted", read_partition(ctx, topic, isolation="read_uncommitted", min_records=5))
