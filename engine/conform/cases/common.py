"""What many case programs do: make a topic, write records, read a partition to its end, watch a group.

Each helper is what a user's test would write with confluent-kafka, and each returns plain data
(offsets, values, partition numbers) for :meth:`~engine.conform.case.Ctx.observe`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition
from confluent_kafka.admin import NewTopic

from engine.conform.case import Ctx

#: How long a helper waits for a client call before the case gives up on it (seconds).
CALL_S = 30.0
#: How long a read to the end may take.
READ_S = 30.0


def make_topic(ctx: Ctx, short: str, partitions: int = 1, rf: int = 3, **config: str) -> str:
    """Create the topic ``short`` (run-unique name returned) and wait until each partition has a leader."""
    topic = ctx.name(short)
    admin = ctx.admin()
    if "create-topics" not in ctx.target.features:
        # librdkafka's mock serves no CreateTopics: its topics come from auto-creation on first use
        # (4 partitions), which the first Metadata request for the topic triggers.
        admin.list_topics(topic, timeout=CALL_S)
    else:
        futures = admin.create_topics([NewTopic(topic, partitions, rf, config=dict(config))], operation_timeout=CALL_S)
        futures[topic].result(CALL_S)
    wait_for_leaders(ctx, topic, partitions)
    wait_for_offsets(ctx, topic, partitions)
    return topic


def wait_for_offsets(ctx: Ctx, topic: str, partitions: int) -> bool:
    """Wait until every partition's leader answers ListOffsets, as a user's test waits for a new topic.

    On Kafka the controller tells the brokers of a new topic one by one: for a moment after Metadata
    names a leader, that broker may still answer NOT_LEADER_OR_FOLLOWER. Clients retry a produce
    or a fetch by themselves, but ``get_watermark_offsets`` raises; waiting here keeps that moment
    out of what a case observes.
    """
    probe = ctx.consumer(recorded=False, **{"group.id": ctx.name("probe")})

    def answered() -> bool:
        try:
            for p in range(partitions):
                probe.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)
        except Exception:
            return False
        return True

    done = ctx.wait_until(answered, CALL_S, 0.2)
    probe.close()
    return done


def wait_for_leaders(ctx: Ctx, topic: str, partitions: int) -> bool:
    """Wait until Metadata shows a leader for every partition of ``topic``."""
    admin = ctx.admin()

    def led() -> bool:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
        if meta is None or meta.error is not None or len(meta.partitions) < partitions:
            return False
        return all(p.leader >= 0 for p in meta.partitions.values())

    return ctx.wait_until(led, CALL_S, 0.2)


def send(producer: Any, topic: str, values: Iterable[str], partition: int = 0, **kwargs: Any) -> list[Any]:
    """Produce ``values`` to ``topic``-``partition`` and flush; return each report as ``[offset]`` or the error name."""
    reports: list[Any] = []

    def report(err: KafkaError | None, msg: Any) -> None:
        reports.append(str(err.name()) if err is not None else msg.offset())

    for value in values:
        producer.produce(topic, value.encode(), partition=partition, on_delivery=report, **kwargs)
    producer.flush(CALL_S)
    return reports


def read_partition(
    ctx: Ctx,
    topic: str,
    partition: int = 0,
    *,
    isolation: str = "read_committed",
    min_records: int = 0,
    seconds: float = READ_S,
) -> list[list[Any]]:
    """Read ``topic``-``partition`` from the start to its end; return ``[offset, value]`` pairs.

    Only read_committed reads go into the history ``eos check`` judges (see :meth:`Ctx.consumer`).
    The end is reached when the position is at the high watermark (read_uncommitted) or stops
    moving with no record for a second (read_committed stops at the LSO), and at least
    ``min_records`` were read.
    """
    consumer = ctx.consumer(
        recorded=isolation == "read_committed",
        **{"group.id": ctx.name("reader"), "isolation.level": isolation, "enable.auto.commit": False},
    )
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
    tp = TopicPartition(topic, partition)
    read: list[list[Any]] = []
    quiet_since = ctx.seconds()
    deadline = ctx.seconds() + seconds
    while ctx.seconds() < deadline:
        messages = consumer.consume(100, 0.3)
        got = [m for m in messages if m.error() is None]
        read.extend([m.offset(), m.value().decode()] for m in got)
        if got:
            quiet_since = ctx.seconds()
        if len(read) < min_records:
            continue
        high = consumer.get_watermark_offsets(tp, timeout=5, cached=False)[1]
        position = consumer.position([tp])[0].offset
        if isolation == "read_uncommitted" and position >= high:
            break
        if isolation == "read_committed" and (position >= high or ctx.seconds() - quiet_since > 1.5):
            break
    consumer.close()
    return read


def leaders(ctx: Ctx, topic: str) -> dict[int, int]:
    """Return partition -> leader id of ``topic`` now."""
    meta = ctx.admin().list_topics(topic, timeout=10).topics[topic]
    return {p: int(m.leader) for p, m in sorted(meta.partitions.items())}


def assignment_of(consumer: Any) -> list[int]:
    """Return the partitions assigned to ``consumer``, sorted."""
    return sorted(tp.partition for tp in consumer.assignment())


def poll_until(ctx: Ctx, consumers: list[Any], done: Any, seconds: float = 60.0) -> bool:
    """Poll every consumer in turn until ``done()`` is true; False after ``seconds``."""
    deadline = ctx.seconds() + seconds
    while ctx.seconds() < deadline:
        for c in consumers:
            c.poll(0.1)
        if done():
            return True
    return False
