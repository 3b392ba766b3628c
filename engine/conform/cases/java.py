"""Java client cases: the Java client matrix (kafka-clients 4.4.0, transaction version 2 where served).

Each case starts one driver JVM (:class:`~engine.conform.realtime_java_client.JavaClients`) and
writes its program with the Java client's calls; topics are made and faults carried out as in the
other cases. Against Kafka 4.4 the client speaks transaction version 2 (EndTxn v5, Produce v12,
TxnOffsetCommit v5), and so it does against ``eos serve``. The lost-ack case of
``tests/jvm/test_java_client_matrix.py`` needs a wire fault, which real Kafka has no means for; the
rest of that matrix is here: commit-abort, lso, consume-transform-produce, fencing, leader-killed,
timeout (``transaction.timeout.ms``: Kafka 4.4.0 answers the late commit INVALID_TXN_STATE) and
rebalance (classic protocol, range assignor: assignment sizes, never member ids).
"""

from __future__ import annotations

from typing import Any

from engine.conform.case import Ctx, case
from engine.conform.cases.common import make_topic
from engine.conform.cases.group import GROUP_BOUNDS
from engine.conform.realtime_java_client import JavaClientError, JavaClients, JavaConsumer, JavaProducer, java_config

NEEDS = ("create-topics",)  # a real cluster: not librdkafka's mock
PRODUCER = {"max.block.ms": 30_000, "request.timeout.ms": 10_000, "delivery.timeout.ms": 60_000, "linger.ms": 5}
CONSUMER = {
    "auto.offset.reset": "earliest",
    "enable.auto.commit": "false",
    "session.timeout.ms": 6_000,
    "heartbeat.interval.ms": 500,
    "fetch.max.wait.ms": 100,
}


def _jvm(ctx: Ctx) -> JavaClients:
    return ctx.keep(JavaClients())


def _cfg(ctx: Ctx, **extra: Any) -> dict[str, Any]:
    return {**java_config(ctx.target.client_config()), **extra}


def _txn(ctx: Ctx, jvm: JavaClients, short: str, **extra: Any) -> JavaProducer:
    p = jvm.producer(_cfg(ctx, **PRODUCER, **{"transactional.id": ctx.name(short)}, **extra))
    p.init_transactions()
    return p


def _attempt(ctx: Ctx, key: str, call: Any, *args: Any) -> Any:
    """Observe ``"ok"`` or the Java exception's simple class name."""
    try:
        call(*args)
    except JavaClientError as exc:
        return ctx.observe(key, exc.kind)
    return ctx.observe(key, "ok")


def _read(ctx: Ctx, jvm: JavaClients, topic: str, n: int, *, committed: bool = True) -> list[list[Any]]:
    """Read partition 0 from the start: (offset, value) of what came within a few seconds."""
    isolation = "read_committed" if committed else "read_uncommitted"
    c = jvm.consumer(_cfg(ctx, **CONSUMER, **{"isolation.level": isolation, "group.id": ctx.name("reader")}))
    try:
        c.assign([(topic, 0)])
        got = c.consume(n, 15.0) if n else []
        got += c.consume(1, 1.0)
    finally:
        c.close()
    return [[r.offset, r.value] for r in got]


@case("java.commit-abort", "java client", "commit, abort, commit: read_committed sees both commits only", needs=NEEDS)
def commit_abort(ctx: Ctx) -> None:
    topic = make_topic(ctx, "jca")
    jvm = _jvm(ctx)
    p = _txn(ctx, jvm, "jca")
    for result, values in (("commit", ["c0", "c1"]), ("abort", ["a0", "a1", "a2"]), ("commit", ["d0"])):
        p.begin_transaction()
        offsets = [p.produce(topic, v, partition=0) for v in values]
        ctx.observe(f"offsets-{values[0]}", offsets)
        _attempt(ctx, f"{result}-{values[0]}", p.commit_transaction if result == "commit" else p.abort_transaction)
    ctx.observe("read_committed", _read(ctx, jvm, topic, 3))
    ctx.observe("read_uncommitted", _read(ctx, jvm, topic, 6, committed=False))


@case("java.lso", "java client", "an open transaction holds endOffsets (read_committed) at the LSO", needs=NEEDS)
def lso(ctx: Ctx) -> None:
    topic = make_topic(ctx, "jlso")
    jvm = _jvm(ctx)
    p = _txn(ctx, jvm, "jlso")
    p.begin_transaction()
    p.produce(topic, "first", partition=0)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, f"open-{i}", partition=0)
    c = jvm.consumer(_cfg(ctx, **CONSUMER, **{"isolation.level": "read_committed", "group.id": ctx.name("lso")}))
    c.assign([(topic, 0)])
    ctx.observe("while-open", [[r.offset, r.value] for r in c.consume(1, 5.0) + c.consume(1, 1.0)])
    ctx.observe("end-offset-while-open", c.end_offsets([(topic, 0)])[(topic, 0)])
    _attempt(ctx, "commit", p.commit_transaction)
    # commitTransaction returns once PREPARE_COMMIT is written: the markers (and the LSO) follow, so
    # the records are read first and the end offset asked after them (Kafka 4.4 still said 2 at once).
    ctx.observe("after", [[r.offset, r.value] for r in c.consume(3, 10.0)])
    ctx.observe("end-offset-after", c.end_offsets([(topic, 0)])[(topic, 0)])
    c.close()


@case(
    "java.consume-transform-produce",
    "java client",
    "sendOffsetsToTransaction: the committed offsets move with the commit, not with the abort",
    needs=NEEDS,
)
def consume_transform_produce(ctx: Ctx) -> None:
    src, out = make_topic(ctx, "jin"), make_topic(ctx, "jout")
    jvm = _jvm(ctx)
    seed = jvm.producer(_cfg(ctx, **PRODUCER))
    for i in range(4):
        seed.produce(src, f"m{i}", partition=0)
    seed.close()
    c: JavaConsumer = jvm.consumer(
        _cfg(ctx, **CONSUMER, **{"group.id": ctx.name("ctp"), "isolation.level": "read_committed"})
    )
    c.subscribe([src])
    records = c.consume(4, 20.0)
    ctx.observe("consumed", [[r.offset, r.value] for r in records])
    p = _txn(ctx, jvm, "jctp")
    for result, part in (("commit", records[:2]), ("abort", records[2:])):
        p.begin_transaction()
        for r in part:
            p.produce(out, (r.value or "").upper(), partition=0)
        _attempt(ctx, f"offsets-{result}", p.send_offsets_to_transaction, [(src, 0, part[-1].offset + 1)], c)
        _attempt(ctx, result, p.commit_transaction if result == "commit" else p.abort_transaction)
        ctx.observe(f"committed-after-{result}", c.committed([(src, 0)])[(src, 0)])
    c.close()
    ctx.observe("out", _read(ctx, jvm, out, 2))


@case("java.fencing", "java client", "a second producer with the same transactional.id fences the first", needs=NEEDS)
def fencing(ctx: Ctx) -> None:
    topic = make_topic(ctx, "jz")
    jvm = _jvm(ctx)
    zombie = _txn(ctx, jvm, "same")
    zombie.begin_transaction()
    zombie.produce(topic, "zombie", partition=0)
    successor = _txn(ctx, jvm, "same")
    _attempt(ctx, "zombie-commit", zombie.commit_transaction)
    successor.begin_transaction()
    successor.produce(topic, "successor", partition=0)
    _attempt(ctx, "successor-commit", successor.commit_transaction)
    ctx.observe("read_committed", _read(ctx, jvm, topic, 1))


@case(
    "java.leader-killed",
    "java client",
    "the written partition's leader killed mid-transaction: the transaction commits whole",
    faults=True,
    needs=NEEDS,
)
def leader_killed(ctx: Ctx) -> None:
    topic = make_topic(ctx, "jlk", 1, 3, **{"min.insync.replicas": "2"})
    jvm = _jvm(ctx)
    p = _txn(ctx, jvm, "jlk", **{"transaction.timeout.ms": 60_000})
    p.begin_transaction()
    first = [p.produce(topic, f"a-{i}", partition=0) for i in range(5)]
    ctx.fault(f"kill leader {topic} 0")
    second = [p.produce(topic, f"b-{i}", partition=0) for i in range(5)]
    ctx.observe("offsets", first + second)
    _attempt(ctx, "commit", p.commit_transaction)
    ctx.observe("read_committed", _read(ctx, jvm, topic, 10))


@case(
    "java.timeout",
    "java client",
    "transaction.timeout.ms passes: the coordinator aborts, the commit fails, a new producer's transaction works",
    needs=NEEDS,
)
def timeout(ctx: Ctx) -> None:
    topic = make_topic(ctx, "jto")
    jvm = _jvm(ctx)
    # settings.py: the coordinator looks for timed-out transactions every second on both targets.
    stalled = _txn(ctx, jvm, "jto", **{"transaction.timeout.ms": 2_000})
    stalled.begin_transaction()
    ctx.observe("offsets", [stalled.produce(topic, f"late-{i}", partition=0) for i in range(3)])
    ctx.sleep(5.0)
    try:
        stalled.commit_transaction()
        ctx.observe("commit", "ok")
    except JavaClientError as exc:
        ctx.observe("commit", exc.names())
    _attempt(ctx, "abort-after", stalled.abort_transaction)
    stalled.close(1)
    ctx.observe("read_committed", _read(ctx, jvm, topic, 0))
    successor = _txn(ctx, jvm, "jto")
    successor.begin_transaction()
    ctx.observe("successor-offset", successor.produce(topic, "after", partition=0))
    _attempt(ctx, "successor-commit", successor.commit_transaction)
    ctx.observe("read_committed-after", _read(ctx, jvm, topic, 1))
    ctx.observe("read_uncommitted", _read(ctx, jvm, topic, 4, committed=False))


def _events(consumer: JavaConsumer) -> list[list[Any]]:
    """The rebalance callbacks so far as [kind, how many partitions] (which ones follow member ids)."""
    out: list[list[Any]] = []
    for event in consumer.rebalances:
        kind, _, parts = event.partition(" ")
        out.append([kind, len([p for p in parts.strip("[]").split(",") if p.strip()])])
    consumer.rebalances.clear()
    return out


def _poll_until(ctx: Ctx, consumers: list[JavaConsumer], done: Any, timeout_s: float = 30.0) -> bool:
    """Poll each of ``consumers`` in turn (0.2 s) until ``done()``; False after ``timeout_s``."""

    def step() -> bool:
        for c in consumers:
            c.poll(0.2)
        return bool(done())

    return ctx.wait_until(step, timeout_s, 0.0)


@case(
    "java.rebalance",
    "java client",
    "a second Java consumer joins (range: 2 and 2), then closes: the first owns all four again",
    bounds=GROUP_BOUNDS,
    needs=NEEDS,
)
def rebalance(ctx: Ctx) -> None:
    topic = make_topic(ctx, "jrb", 4)
    jvm = _jvm(ctx)
    conf = _cfg(
        ctx,
        **CONSUMER,
        **{
            "group.id": ctx.name("g"),
            "group.protocol": "classic",
            "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor",
        },
    )
    first = ctx.keep(jvm.consumer(conf))
    first.subscribe([topic])
    ctx.observe("first-alone", _poll_until(ctx, [first], lambda: len(first.assignment()) == 4))
    second = jvm.consumer(conf)
    start = ctx.seconds()
    second.subscribe([topic])

    def split() -> bool:
        a, b = first.assignment(), second.assignment()
        return len(a) == 2 and len(b) == 2 and sorted(a + b) == [(topic, p) for p in range(4)]

    ctx.observe("stable", _poll_until(ctx, [second, first], split))
    ctx.timing("until-stable", ctx.seconds() - start)
    halves = [[p for _t, p in c.assignment()] for c in (first, second)]
    ctx.observe("ranges-contiguous", all(h in ([0, 1], [2, 3]) for h in halves))
    ctx.observe("second-events", _events(second))
    start = ctx.seconds()
    second.close()
    ctx.observe("all-four", _poll_until(ctx, [first], lambda: len(first.assignment()) == 4))
    ctx.timing("until-all-four", ctx.seconds() - start)
    ctx.observe("first-events", _events(first))
