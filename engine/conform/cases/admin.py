"""Admin cases: an empty cluster, topics created and deleted and refused, auto-creation, descriptions."""

from __future__ import annotations

from confluent_kafka.admin import ConfigResource, NewTopic, ResourceType

from engine.conform.case import Ctx, case
from engine.conform.cases.common import CALL_S, make_topic, read_partition, send, wait_for_leaders


@case("admin.empty-cluster", "admin", "a fresh cluster lists its brokers; the first topic is created and led")
def empty_cluster(ctx: Ctx) -> None:
    admin = ctx.admin()
    ctx.observe("brokers", len(admin.list_topics(timeout=CALL_S).brokers))
    topic = ctx.name("in")
    futures = admin.create_topics([NewTopic(topic, 1, 3)], operation_timeout=CALL_S)
    ctx.attempt("create", futures[topic].result, CALL_S)
    ctx.observe("led", wait_for_leaders(ctx, topic, 1))
    ctx.observe("replicas", replicas_of(ctx, topic))


def replicas_of(ctx: Ctx, topic: str) -> list[int]:
    """Return the replica count of each partition of ``topic``, once a broker's Metadata lists them.

    Kafka's brokers learn a new topic from the controller one by one, so for a moment after the
    leaders show up another broker may still answer without it; wait that out as a user's test would.
    """
    admin = ctx.admin()
    counts: list[int] = []

    def listed() -> bool:
        meta = admin.list_topics(topic, timeout=10).topics.get(topic)
        counts[:] = [] if meta is None or meta.error else [len(p.replicas) for p in meta.partitions.values()]
        return bool(counts)

    ctx.wait_until(listed, CALL_S, 0.2)
    return counts


def _create(ctx: Ctx, key: str, topic: str, partitions: int, rf: int, **options: object) -> None:
    futures = ctx.admin().create_topics([NewTopic(topic, partitions, rf)], operation_timeout=CALL_S, **options)
    ctx.attempt(key, futures[topic].result, CALL_S)


@case("admin.create-refusals", "admin", "TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS")
def create_refusals(ctx: Ctx) -> None:
    topic = make_topic(ctx, "t", 2)
    _create(ctx, "again", topic, 2, 3)
    _create(ctx, "rf-over-brokers", ctx.name("rf"), 1, 4)
    _create(ctx, "zero-partitions", ctx.name("zero"), 0, 3)
    meta = ctx.admin().list_topics(timeout=CALL_S).topics
    ctx.observe("refused-topics-absent", [ctx.name("rf") in meta, ctx.name("zero") in meta])


@case("admin.create-validate-only", "admin", "validate_only checks a topic and creates nothing")
def validate_only(ctx: Ctx) -> None:
    topic = ctx.name("v")
    _create(ctx, "validate", topic, 3, 3, validate_only=True)
    ctx.sleep(1.0)
    ctx.observe("exists", topic in ctx.admin().list_topics(timeout=CALL_S).topics)


@case("admin.delete-topic", "admin", "a deleted topic is gone from Metadata, and its name can be created again")
def delete_topic(ctx: Ctx) -> None:
    topic = make_topic(ctx, "d", 2)
    producer = ctx.producer(**{"enable.idempotence": True})
    ctx.observe("before", send(producer, topic, ["x-0", "x-1"]))
    ctx.observe("read-before", read_partition(ctx, topic, 0, min_records=2))
    admin = ctx.admin()
    ctx.attempt("delete", admin.delete_topics([topic], operation_timeout=CALL_S)[topic].result, CALL_S)
    ctx.observe("gone", ctx.wait_until(lambda: topic not in admin.list_topics(timeout=10).topics, CALL_S, 0.2))
    ctx.attempt("delete-again", admin.delete_topics([topic], operation_timeout=CALL_S)[topic].result, CALL_S)

    def recreate() -> bool:
        futures = admin.create_topics([NewTopic(topic, 1, 3)], operation_timeout=CALL_S)
        try:
            futures[topic].result(CALL_S)
        except Exception:
            return False
        return True

    # Kafka deletes a topic's partitions asynchronously: a create may be refused for a moment.
    ctx.observe("recreated", ctx.wait_until(recreate, CALL_S, 0.5))
    wait_for_leaders(ctx, topic, 1)
    ctx.observe("read-after", read_partition(ctx, topic, 0, isolation="read_uncommitted", seconds=5))


@case("admin.delete-missing", "admin", "deleting a topic that does not exist answers UNKNOWN_TOPIC_OR_PART")
def delete_missing(ctx: Ctx) -> None:
    topic = ctx.name("nope")
    ctx.attempt("delete", ctx.admin().delete_topics([topic], operation_timeout=CALL_S)[topic].result, CALL_S)


@case("admin.auto-create-by-producer", "admin", "a producer to an unknown topic creates it (auto.create.topics.enable)")
def auto_create(ctx: Ctx) -> None:
    topic = ctx.name("auto")
    producer = ctx.producer(**{"enable.idempotence": True})
    ctx.observe("delivered", send(producer, topic, [f"a-{i}" for i in range(3)]))
    ctx.observe("replicas", replicas_of(ctx, topic))
    ctx.observe("read", read_partition(ctx, topic, 0, min_records=3))


@case("admin.consumer-no-auto-create", "admin", "allow.auto.create.topics=false subscribes without creating")
def consumer_no_auto_create(ctx: Ctx) -> None:
    topic = ctx.name("ghost")
    consumer = ctx.consumer(**{"group.id": ctx.name("g"), "allow.auto.create.topics": False})
    consumer.subscribe([topic])
    errors = set()
    end = ctx.seconds() + 4
    while ctx.seconds() < end:
        m = consumer.poll(0.2)
        if m is not None and m.error() is not None:
            errors.add(str(m.error().name()))
    ctx.observe("errors", sorted(errors))
    ctx.observe("exists", topic in ctx.admin().list_topics(timeout=CALL_S).topics)


#: Topic configs both targets model, observed with their value and source.
TOPIC_KEYS = ("min.insync.replicas", "cleanup.policy", "retention.ms")


@case("admin.describe-topic-configs", "admin", "describe_configs: a value set at creation and defaults, with sources")
def describe_topic_configs(ctx: Ctx) -> None:
    topic = make_topic(ctx, "c", 1, **{"min.insync.replicas": "2"})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = ctx.admin().describe_configs([resource])[resource].result(CALL_S)
    for key in TOPIC_KEYS:
        entry = entries.get(key)
        ctx.observe(key, None if entry is None else [entry.value, entry.source, entry.is_read_only])


@case("admin.describe-missing-topic", "admin", "describe_configs of a topic that does not exist")
def describe_missing(ctx: Ctx) -> None:
    resource = ConfigResource(ResourceType.TOPIC, ctx.name("nope"))
    ctx.attempt("describe", ctx.admin().describe_configs([resource])[resource].result, CALL_S)


@case("admin.describe-cluster", "admin", "describe_cluster: the brokers, a controller among them, a cluster id")
def describe_cluster(ctx: Ctx) -> None:
    cluster = ctx.admin().describe_cluster(request_timeout=CALL_S).result(CALL_S)
    ids = sorted(int(n.id) for n in cluster.nodes)
    ctx.observe("brokers", ids)
    ctx.observe("controller-is-a-broker", cluster.controller is not None and int(cluster.controller.id) in ids)
    ctx.observe("has-cluster-id", bool(cluster.cluster_id))
