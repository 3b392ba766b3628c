"""A topic's ``max.message.bytes`` over the wire, as Kafka 4.4 serves it.

Goal: a record batch larger than the topic's ``max.message.bytes`` (else the broker's
``message.max.bytes``, 1048588) is refused by the leader with MESSAGE_TOO_LARGE and never written;
an idempotent confluent-kafka producer reports MSG_SIZE_TOO_LARGE for it, not fatally, and carries
on (librdkafka bumps its epoch locally for the sequence gap: measured on Kafka 4.4 and here, the
conformance case ``produce.record-too-large``). The config is created, described and altered as
Kafka's: DYNAMIC_TOPIC_CONFIG for an override, DEFAULT_CONFIG with the broker synonym otherwise.

Method: a served cluster per test; confluent-kafka's Producer and AdminClient; the leader's log
read under ``server.locked()``.
"""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic
from confluent_kafka.admin import ResourceType as Rt


def _send(producer: Producer, topic: str, value: bytes) -> tuple[str | None, int | None, bool]:
    """Produce one record and flush; return (error name or None, offset, fatal)."""
    reports: list[tuple[str | None, int | None, bool]] = []
    producer.produce(
        topic, value=value, on_delivery=lambda e, m: reports.append((e and e.name(), m.offset(), bool(e and e.fatal())))
    )
    assert producer.flush(15) == 0
    return reports[0]


def test_a_batch_over_max_message_bytes_is_refused_and_the_idempotent_producer_carries_on(served, ck, logged) -> None:
    server = served([("t", 1, 3)])
    admin = AdminClient(ck(server))
    admin.create_topics([NewTopic("big", 1, 3, config={"max.message.bytes": "2000"})])["big"].result(10)
    p = Producer(ck(server, **{"enable.idempotence": True}))
    assert _send(p, "big", b"x" * 5000) == ("MSG_SIZE_TOO_LARGE", None, False)
    assert _send(p, "big", b"small") == (None, 0, False)
    assert logged(server, "big") == [b"small"]
    with server.locked() as cluster:
        refused = [e for e in cluster.world.trace if e.name == "produce.error" and dict(e.detail)["tp"] == "big-0"]
    assert [dict(e.detail)["error"] for e in refused] == ["MESSAGE_TOO_LARGE"]

    # Raised by IncrementalAlterConfigs, the same record now fits.
    raise_it = [ConfigEntry("max.message.bytes", "10000", incremental_operation=AlterConfigOpType.SET)]
    [ok] = admin.incremental_alter_configs([ConfigResource(Rt.TOPIC, "big", incremental_configs=raise_it)]).values()
    ok.result(10)
    assert _send(p, "big", b"x" * 5000) == (None, 1, False)
    p.flush(5)

    described = admin.describe_configs([ConfigResource(Rt.TOPIC, "big"), ConfigResource(Rt.TOPIC, "t")])
    big, plain = (described[r].result(10)["max.message.bytes"] for r in sorted(described, key=lambda r: r.name))
    assert (big.value, big.source, big.is_read_only) == ("10000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False)
    assert (plain.value, plain.source) == ("1048588", ConfigSource.DEFAULT_CONFIG.value)


def test_the_broker_s_message_max_bytes_is_the_default_of_every_topic(served, ck, logged) -> None:
    server = served([("t", 1, 3)], config={"message.max.bytes": 3000})
    p = Producer(ck(server, **{"enable.idempotence": True}))
    assert _send(p, "t", b"y" * 4000)[0] == "MSG_SIZE_TOO_LARGE"
    assert _send(p, "t", b"y" * 2000) == (None, 0, False)
    assert logged(server, "t") == [b"y" * 2000]
    admin = AdminClient(ck(server))  # held: its futures fail once the handle is gone
    [broker] = admin.describe_configs([ConfigResource(Rt.BROKER, "1")]).values()
    entry = broker.result(10)["message.max.bytes"]
    assert (entry.value, entry.source, entry.is_read_only) == ("3000", ConfigSource.STATIC_BROKER_CONFIG.value, False)
