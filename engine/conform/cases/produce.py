"""Produce cases: idempotence, acks, retries through a leader crash or pause, size limits."""

from __future__ import annotations

from engine.conform.case import Bounds, Ctx, case
from engine.conform.cases.common import make_topic, read_partition, send

#: A producer that retries through a failover within the case's time.
RESILIENT = {"enable.idempotence": True, "acks": "all", "message.timeout.ms": 60_000, "request.timeout.ms": 10_000}


@case("produce.idempotent", "produce", "an idempotent producer's records get offsets 0..n-1 in order, read back once")
def idempotent(ctx: Ctx) -> None:
    topic = make_topic(ctx, "p")
    producer = ctx.producer(**{"enable.idempotence": True, "linger.ms": 5})
    values = [f"v-{i}" for i in range(50)]
    ctx.observe("offsets", send(producer, topic, values))
    ctx.observe("read", read_partition(ctx, topic, min_records=50))


@case("produce.acks-1", "produce", "acks=1 without idempotence: offsets and what is read")
def acks_one(ctx: Ctx) -> None:
    topic = make_topic(ctx, "a1")
    producer = ctx.producer(**{"enable.idempotence": False, "acks": 1})
    ctx.observe("offsets", send(producer, topic, [f"v-{i}" for i in range(10)]))
    ctx.observe("read", read_partition(ctx, topic, min_records=10))


@case(
    "produce.leader-killed",
    "produce",
    "acks=all, RF 3, min.insync.replicas 2: the leader killed between two bursts; every record once, in order",
    faults=True,
)
def leader_killed(ctx: Ctx) -> None:
    topic = make_topic(ctx, "k", 1, 3, **{"min.insync.replicas": "2"})
    producer = ctx.producer(**RESILIENT)
    first = send(producer, topic, [f"a-{i}" for i in range(20)])
    ctx.fault(f"kill leader {topic} 0")
    second = send(producer, topic, [f"b-{i}" for i in range(20)])
    ctx.observe("reports", first + second)
    ctx.observe("read", read_partition(ctx, topic, min_records=40))


@case(
    "produce.leader-killed-in-flight",
    "produce",
    "records in flight when the leader dies: retried under idempotence, none lost or written twice",
    faults=True,
)
def leader_killed_in_flight(ctx: Ctx) -> None:
    topic = make_topic(ctx, "f", 1, 3, **{"min.insync.replicas": "2"})
    producer = ctx.producer(**RESILIENT, **{"linger.ms": 20, "batch.num.messages": 10})
    reports: list[object] = []
    for i in range(100):
        producer.produce(topic, f"r-{i}".encode(), partition=0, on_delivery=lambda e, m: reports.append(e is None))
        if i == 50:
            ctx.fault(f"kill leader {topic} 0")
    producer.flush(90)
    ctx.observe("delivered", [len(reports), all(reports)])
    read = read_partition(ctx, topic, min_records=100)
    ctx.observe("values", [value for _offset, value in read])
    ctx.observe("offsets-dense", [offset for offset, _v in read] == list(range(len(read))))


@case(
    "produce.leader-paused",
    "produce",
    "the leader paused (SIGSTOP) until a new one is elected, then resumed: every record once, in order",
    faults=True,
    bounds=Bounds(3.0, 5.0),
)
def leader_paused(ctx: Ctx) -> None:
    topic = make_topic(ctx, "s", 1, 3, **{"min.insync.replicas": "2"})
    producer = ctx.producer(**{**RESILIENT, "request.timeout.ms": 5000})
    first = send(producer, topic, [f"a-{i}" for i in range(5)])
    paused = ctx.fault(f"pause leader {topic} 0")
    start = ctx.seconds()
    second = send(producer, topic, [f"b-{i}" for i in range(5)])
    ctx.timing("produce-through-pause", ctx.seconds() - start)
    ctx.fault(f"resume {paused}")
    ctx.observe("reports", first + second)
    ctx.observe("read", read_partition(ctx, topic, min_records=10))


@case("produce.record-too-large", "produce", "a record over the topic's max.message.bytes: MSG_SIZE_TOO_LARGE")
def record_too_large(ctx: Ctx) -> None:
    topic = make_topic(ctx, "big", 1, 3, **{"max.message.bytes": "2000"})
    producer = ctx.producer(**{"enable.idempotence": True, "message.max.bytes": 1_000_000})
    reports = send(producer, topic, ["x" * 5000])
    reports += send(producer, topic, ["small"])
    ctx.observe("reports", reports)
    ctx.observe("read", read_partition(ctx, topic, min_records=1))
