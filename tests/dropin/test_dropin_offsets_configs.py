"""The drop-in's ListOffsets, DeleteTopics and config calls answer as confluent-kafka against Kafka 4.4.

Goal: ``Consumer.offsets_for_times``, ``AdminClient.list_offsets``, ``delete_topics``,
``describe_configs`` and ``incremental_alter_configs`` give the values Kafka 4.4 gave in the
conformance cases (``engine/conform/kafka-4.4.json``: ``fetch.offsets-for-times``,
``admin.delete-topic``, ``admin.delete-missing``, ``admin.describe-topic-configs``,
``admin.describe-missing-topic``), and the errors real confluent-kafka gives against ``eos serve``
(``_UNKNOWN_PARTITION``, ``_NOENT``, ``_INVALID_ARG``, ``INVALID_CONFIG`` ...).

Method: drop-in clients on a simulated cluster (the ``cluster`` fixture); no mocks.
"""

from __future__ import annotations

from typing import Any

import pytest

from eos_magics.kafka import Consumer, IsolationLevel, KafkaError, KafkaException, Producer, TopicPartition
from eos_magics.kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

BASE = 1_700_000_000_000


def _stamped(topic: str = "out", n: int = 4) -> None:
    p = Producer({"enable.idempotence": True})
    for i in range(n):
        p.produce(topic, f"t-{i}".encode(), partition=0, timestamp=BASE + 1000 * i)
    assert p.flush(10) == 0


def _code(future: Any) -> Any:
    with pytest.raises(KafkaException) as caught:
        future.result()
    return caught.value.args[0].name()


def test_offsets_for_times_before_exact_between_after_as_kafka(cluster: Any) -> None:
    _stamped()
    c = Consumer({"group.id": "ts"})
    asked = {"before": BASE - 5, "exact": BASE + 1000, "between": BASE + 1500, "after": BASE + 99_000}
    found = {k: c.offsets_for_times([TopicPartition("out", 0, ts)], timeout=5)[0] for k, ts in asked.items()}
    # Kafka 4.4 (fetch.offsets-for-times): 0, 1, 2, and -1 for a timestamp later than every record.
    assert {k: (tp.offset, tp.error) for k, tp in found.items()} == {
        "before": (0, None),
        "exact": (1, None),
        "between": (2, None),
        "after": (-1, None),
    }
    assert found["exact"].leader_epoch is not None and found["after"].leader_epoch is None


def test_offsets_for_times_missing_partitions(cluster: Any) -> None:
    _stamped()
    c = Consumer({"group.id": "ts"})
    with pytest.raises(KafkaException) as none:
        c.offsets_for_times([TopicPartition("nope", 0, 5)], timeout=5)
    assert none.value.args[0].code() == KafkaError._UNKNOWN_PARTITION
    known, missing = c.offsets_for_times([TopicPartition("out", 0, BASE), TopicPartition("nope", 0, 5)], timeout=5)
    assert (known.offset, known.error) == (0, None)
    assert (missing.offset, missing.error.code()) == (5, KafkaError.UNKNOWN_TOPIC_OR_PART)
    with pytest.raises(TypeError):
        c.offsets_for_times("out")  # type: ignore[arg-type]
    with pytest.raises(KafkaException) as empty:
        c.offsets_for_times([])
    assert empty.value.args[0].code() == KafkaError._INVALID_ARG


def test_list_offsets_specs_and_isolation(cluster: Any) -> None:
    _stamped()
    admin = AdminClient({})
    tp = TopicPartition("out", 0)
    specs = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "max": OffsetSpec.max_timestamp(),
        "ts": OffsetSpec.for_timestamp(BASE + 1500),
        "after": OffsetSpec.for_timestamp(BASE + 99_000),
    }
    got = {k: admin.list_offsets({tp: s})[tp].result() for k, s in specs.items()}
    assert {k: (r.offset, r.timestamp) for k, r in got.items()} == {
        "earliest": (0, -1),
        "latest": (4, -1),
        "max": (3, BASE + 3000),
        "ts": (2, BASE + 2000),
        "after": (-1, -1),
    }
    assert got["ts"].leader_epoch is not None and got["after"].leader_epoch is None
    committed = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED)
    assert committed[tp].result().offset == 4
    assert _code(admin.list_offsets({TopicPartition("nope", 0): OffsetSpec.latest()})[TopicPartition("nope", 0)]) == (
        "_NOENT"
    )
    with pytest.raises(TypeError, match="dict"):
        admin.list_offsets([tp])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative"):
        admin.list_offsets({TopicPartition("out", -1): OffsetSpec.latest()})
    with pytest.raises(TypeError, match="IsolationLevel"):
        admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=1)


def test_delete_topic_is_gone_and_can_be_created_again(cluster: Any) -> None:
    _stamped()
    admin = AdminClient({})
    assert admin.delete_topics(["out"], operation_timeout=30)["out"].result() is None
    assert "out" not in admin.list_topics(timeout=5).topics
    assert _code(admin.delete_topics(["out"])["out"]) == "UNKNOWN_TOPIC_OR_PART"  # Kafka 4.4: delete-again
    reports: list[Any] = []
    p = Producer({"message.timeout.ms": 35_000, "allow.auto.create.topics": False})
    p.produce("out", b"late", on_delivery=lambda err, msg: reports.append(err))
    p.flush(90)
    assert [e.code() for e in reports] in ([KafkaError.UNKNOWN_TOPIC_OR_PART], [KafkaError._MSG_TIMED_OUT])
    assert "out" not in cluster.topics
    assert admin.create_topics([NewTopic("out", 1, 3)])["out"].result() is None
    c = Consumer({"group.id": "after", "auto.offset.reset": "earliest"})
    assert c.get_watermark_offsets(TopicPartition("out", 0), timeout=5) == (0, 0)  # Kafka 4.4: read-after []
    with pytest.raises(ValueError, match="non-empty"):
        admin.delete_topics([])


def test_delete_missing_topic(cluster: Any) -> None:
    assert _code(AdminClient({}).delete_topics(["nope"])["nope"]) == "UNKNOWN_TOPIC_OR_PART"


def test_describe_topic_configs_as_kafka(cluster: Any) -> None:
    admin = AdminClient({})
    admin.create_topics([NewTopic("c", 1, 3, config={"min.insync.replicas": "2"})])["c"].result()
    resource = ConfigResource(ResourceType.TOPIC, "c")
    entries = admin.describe_configs([resource])[resource].result()
    mir = entries["min.insync.replicas"]
    # Kafka 4.4 (admin.describe-topic-configs): ["2", DYNAMIC_TOPIC_CONFIG (1), not read-only].
    assert [mir.value, mir.source.value, mir.is_read_only] == ["2", 1, False]
    assert mir.source is ConfigSource.DYNAMIC_TOPIC_CONFIG and not mir.is_default
    seg = entries["segment.bytes"]
    assert seg.source is ConfigSource.DEFAULT_CONFIG and seg.is_default and "log.segment.bytes" in seg.synonyms
    # Kafka 4.4 (admin.describe-topic-configs): both Kafka's defaults, DEFAULT_CONFIG, writable; the
    # engine's logs delete and compact nothing, which is what these values do on Kafka.
    for key, value in (("cleanup.policy", "delete"), ("retention.ms", "604800000"), ("retention.bytes", "-1")):
        entry = entries[key]
        assert [entry.value, entry.source.value, entry.is_read_only] == [value, 5, False], key
    missing = ConfigResource(ResourceType.TOPIC, "nope")
    assert _code(admin.describe_configs([missing])[missing]) == "UNKNOWN_TOPIC_OR_PART"


def test_describe_broker_configs(cluster: Any) -> None:
    admin = AdminClient({})
    one = ConfigResource(ResourceType.BROKER, "1")
    entries = admin.describe_configs([one])[one].result()
    assert entries["broker.id"].value == "1" and entries["broker.id"].is_read_only
    assert entries["min.insync.replicas"].value == "2"  # the cluster's setting
    assert entries["min.insync.replicas"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert not entries["log.segment.bytes"].is_read_only  # dynamically updatable on Kafka
    bad = ConfigResource(ResourceType.BROKER, "x")
    assert _code(admin.describe_configs([bad])[bad]) == "_INVALID_ARG"
    two = [ConfigResource(ResourceType.BROKER, "1"), ConfigResource(ResourceType.BROKER, "2")]
    assert _code(admin.describe_configs(two)[two[0]]) == "_CONFLICT"
    with pytest.raises(ValueError, match="non-empty"):
        admin.describe_configs([])


def _alter(admin: AdminClient, name: str, *entries: ConfigEntry, **kwargs: Any) -> Any:
    r = ConfigResource(ResourceType.TOPIC, name, incremental_configs=list(entries))
    return admin.incremental_alter_configs([r], **kwargs)[r]


def test_incremental_alter_configs(cluster: Any) -> None:
    admin = AdminClient({})
    set_ = AlterConfigOpType.SET
    assert _alter(admin, "t", ConfigEntry("min.insync.replicas", "3", incremental_operation=set_)).result() is None
    assert cluster.topic_configs["t"].min_insync_replicas == 3
    t = ConfigResource(ResourceType.TOPIC, "t")
    assert admin.describe_configs([t])[t].result()["min.insync.replicas"].value == "3"
    unset = ConfigEntry("min.insync.replicas", None, incremental_operation=AlterConfigOpType.DELETE)
    assert _alter(admin, "t", unset).result() is None
    assert admin.describe_configs([t])[t].result()["min.insync.replicas"].value == "2"  # the broker's again
    checked = _alter(
        admin, "t", ConfigEntry("min.insync.replicas", "1", incremental_operation=set_), validate_only=True
    )
    assert checked.result() is None and cluster.topic_configs["t"].min_insync_replicas is None
    assert _code(_alter(admin, "t", ConfigEntry("bogus.name", "1", incremental_operation=set_))) == "INVALID_CONFIG"
    compact = _alter(admin, "t", ConfigEntry("cleanup.policy", "compact", incremental_operation=set_))
    assert _code(compact) == "INVALID_CONFIG"
    with pytest.raises(KafkaException, match="fixed at Kafka's default delete"):
        compact.result()
    assert _code(_alter(admin, "t", ConfigEntry("min.insync.replicas", "x", incremental_operation=set_))) == (
        "INVALID_CONFIG"
    )
    assert _code(_alter(admin, "nope", ConfigEntry("min.insync.replicas", "2", incremental_operation=set_))) == (
        "UNKNOWN_TOPIC_OR_PART"
    )
    broker = ConfigResource(
        ResourceType.BROKER,
        "1",
        incremental_configs=[ConfigEntry("log.segment.bytes", "2000000", incremental_operation=set_)],
    )
    assert _code(admin.incremental_alter_configs([broker])[broker]) == "INVALID_REQUEST"
    with pytest.raises(TypeError, match=r"\.value"):
        _alter(admin, "t", ConfigEntry("min.insync.replicas", "2"))
    with pytest.raises(ValueError, match="incremental_configs"):
        admin.incremental_alter_configs([ConfigResource(ResourceType.TOPIC, "t")])
