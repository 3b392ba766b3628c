"""Fetch cases: aborted ranges, a leader change under a reader, ListOffsets, out-of-range resets."""

from __future__ import annotations

from confluent_kafka import TopicPartition

from engine.conform.case import Ctx, case
from engine.conform.cases.common import CALL_S, make_topic, read_partition, send
from engine.conform.cases.txn import transactional


@case("fetch.aborted-ranges", "fetch", "two producers' transactions interleaved, one aborted: each isolation's reads")
def aborted_ranges(ctx: Ctx) -> None:
    topic = make_topic(ctx, "r")
    kept, dropped = transactional(ctx, "kept"), transactional(ctx, "dropped")
    kept.begin_transaction()
    dropped.begin_transaction()
    for i in range(3):
        send(kept, topic, [f"kept-{i}"])
        send(dropped, topic, [f"dropped-{i}"])
    ctx.attempt("abort", dropped.abort_transaction, CALL_S)
    ctx.attempt("commit", kept.commit_transaction, CALL_S)
    dropped.begin_transaction()
    send(dropped, topic, ["dropped-late"])
    ctx.attempt("abort-again", dropped.abort_transaction, CALL_S)
    send(ctx.producer(**{"enable.idempotence": True}), topic, ["plain"])
    ctx.observe("read_committed", read_partition(ctx, topic, min_records=4))
    ctx.observe("read_uncommitted", read_partition(ctx, topic, isolation="read_uncommitted", min_records=8))


@case(
    "fetch.leader-change",
    "fetch",
    "a reader across a leader crash: every record once, in order",
    faults=True,
)
def leader_change(ctx: Ctx) -> None:
    topic = make_topic(ctx, "lc", 1, 3, **{"min.insync.replicas": "2"})
    send(ctx.producer(**{"enable.idempotence": True}), topic, [f"v-{i}" for i in range(30)])
    reader = ctx.consumer(**{"group.id": ctx.name("r"), "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, 0, 0)])
    read: list[list[object]] = []
    while len(read) < 10:
        read.extend([m.offset(), m.value().decode()] for m in reader.consume(10, 0.5) if m.error() is None)
    ctx.fault(f"kill leader {topic} 0")
    end = ctx.seconds() + 60
    while len(read) < 30 and ctx.seconds() < end:
        read.extend([m.offset(), m.value().decode()] for m in reader.consume(10, 0.5) if m.error() is None)
    ctx.observe("read", read)


@case("fetch.watermarks", "fetch", "ListOffsets earliest and latest (get_watermark_offsets), before and after writes")
def watermarks(ctx: Ctx) -> None:
    topic = make_topic(ctx, "w")
    consumer = ctx.consumer(**{"group.id": ctx.name("w")})
    tp = TopicPartition(topic, 0)
    ctx.observe("empty", list(consumer.get_watermark_offsets(tp, timeout=CALL_S, cached=False)))
    send(ctx.producer(**{"enable.idempotence": True}), topic, [f"v-{i}" for i in range(7)])
    ctx.observe("after-7", list(consumer.get_watermark_offsets(tp, timeout=CALL_S, cached=False)))
    ctx.observe("read", read_partition(ctx, topic, min_records=7))


@case("fetch.offsets-for-times", "fetch", "ListOffsets by timestamp (offsets_for_times): before, between, after")
def offsets_for_times(ctx: Ctx) -> None:
    topic = make_topic(ctx, "ts")
    producer = ctx.producer(**{"enable.idempotence": True})
    base = 1_700_000_000_000
    for i in range(4):
        producer.produce(topic, f"t-{i}".encode(), partition=0, timestamp=base + 1000 * i)
    producer.flush(CALL_S)
    consumer = ctx.consumer(**{"group.id": ctx.name("ts")})
    asked = {"before": base - 5, "exact": base + 1000, "between": base + 1500, "after": base + 99_000}
    for label, ts in asked.items():
        try:
            answer = consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=CALL_S)
            ctx.observe(label, [answer[0].offset, str(answer[0].error.name()) if answer[0].error else None])
        except Exception as exc:
            ctx.observe(label, type(exc).__name__ + ": " + str(exc.args[0].name() if exc.args else exc))
    ctx.observe("read", read_partition(ctx, topic, min_records=4))


@case("fetch.out-of-range", "fetch", "a position past the end: auto.offset.reset earliest, latest and error")
def out_of_range(ctx: Ctx) -> None:
    topic = make_topic(ctx, "oor")
    send(ctx.producer(**{"enable.idempotence": True}), topic, [f"v-{i}" for i in range(5)])
    for reset in ("earliest", "latest", "error"):
        consumer = ctx.consumer(**{"group.id": ctx.name(reset), "auto.offset.reset": reset})
        consumer.assign([TopicPartition(topic, 0, 100)])
        got: list[object] = []
        errors: set[str] = set()
        end = ctx.seconds() + (5 if reset == "earliest" else 3)
        while ctx.seconds() < end and len(got) < 5 and not errors:
            for m in consumer.consume(10, 0.3):
                if m.error() is None:
                    got.append(m.offset())
                else:
                    errors.add(str(m.error().name()))
        ctx.observe(f"{reset}-read", got)
        ctx.observe(f"{reset}-errors", sorted(errors))
        if reset == "latest":
            ctx.observe("latest-position", consumer.position([TopicPartition(topic, 0)])[0].offset)
        consumer.close()
    ctx.observe("read", read_partition(ctx, topic, min_records=5))
