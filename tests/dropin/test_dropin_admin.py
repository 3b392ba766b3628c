"""The drop-in AdminClient: confluent-kafka's calls and resolved futures on the simulated cluster.

``create_topics`` (success, an existing topic as the future's ``TOPIC_ALREADY_EXISTS``, an
unmodelled topic setting as ``INVALID_CONFIG``), ``list_topics``, consumer-group offsets and
descriptions, ``describe_cluster``, the transactions extensions, and a call with no meaning here.
"""

from __future__ import annotations

from typing import Any

import pytest

from eos_magics.kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    NotSimulatedError,
    Producer,
    TopicPartition,
)
from eos_magics.kafka.admin import AdminClient, NewTopic


def test_create_topics_returns_resolved_futures_with_confluent_errors(cluster: Any) -> None:
    admin = AdminClient({"bootstrap.servers": "localhost:9092"})
    fs = admin.create_topics(
        [NewTopic("new", 3, 3), NewTopic("t", 1, 1), NewTopic("cfg", 1, 1, config={"cleanup.policy": "compact"})]
    )
    assert fs["new"].result() is None
    with pytest.raises(KafkaException) as exists:
        fs["t"].result()
    assert exists.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    with pytest.raises(KafkaException) as bad:
        fs["cfg"].result()
    assert bad.value.args[0].code() == KafkaError.INVALID_CONFIG
    md = admin.list_topics(timeout=5)
    assert len(md.topics["new"].partitions) == 3
    assert all(len(p.replicas) == 3 for p in md.topics["new"].partitions.values())
    assert cluster.topics["new"] == 3
    with pytest.raises(TypeError, match="NewTopic"):
        admin.create_topics(["new"])  # type: ignore[list-item]


def test_consumer_group_offsets_and_descriptions(cluster: Any) -> None:
    p = Producer({})
    for i in range(3):
        p.produce("t", f"v{i}", partition=0)
    p.flush()
    c = Consumer({"group.id": "grp", "auto.offset.reset": "earliest", "client.id": "reader"})
    c.subscribe(["t"])
    seen = 0
    while seen < 3:
        m = c.poll(0.5)
        seen += m is not None and m.error() is None
    c.commit(asynchronous=False)
    admin = AdminClient({})
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("grp")])["grp"].result()
    assert {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}[("t", 0)] == 3
    one = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("grp", [TopicPartition("out", 0)])])
    assert one["grp"].result().topic_partitions[0].offset == -1001
    desc = admin.describe_consumer_groups(["grp", "nobody"])
    grp = desc["grp"].result()
    assert grp.state is ConsumerGroupState.STABLE and grp.members[0].client_id == "reader"
    assert sorted(tp.partition for tp in grp.members[0].assignment.topic_partitions) == [0, 1]
    assert desc["nobody"].result().state is ConsumerGroupState.DEAD
    listed = admin.list_consumer_groups().result()
    assert [g.group_id for g in listed.valid] == ["grp"]
    cl = admin.describe_cluster().result()
    assert len(cl.nodes) == 3 and cl.controller.id in {n.id for n in cl.nodes}
    with pytest.raises(ValueError, match="single consumer group"):
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("a"), ConsumerGroupTopicPartitions("b")])


def test_transactions_extensions(cluster: Any) -> None:
    p = Producer({"transactional.id": "hanging"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", b"open", partition=0)
    p.flush()
    admin = AdminClient({})
    rows = admin.list_transactions().result()
    assert any(r.transactional_id == "hanging" for r in rows)
    assert admin.describe_transactions(["hanging"])["hanging"].result().transactional_id == "hanging"
    producers = admin.describe_producers([TopicPartition("t", 0)])[TopicPartition("t", 0)].result()
    start = producers[0].current_txn_start_offset
    assert start == 0
    assert admin.abort_transaction(TopicPartition("t", 0, start)).result() is None
    view = cluster.describe_partition("t", 0)
    assert view.last_stable_offset == view.high_watermark == 2  # the record and the abort marker


def test_calls_with_no_meaning_raise_one_line(cluster: Any) -> None:
    admin = AdminClient({})
    with pytest.raises(NotSimulatedError) as caught:
        admin.delete_records([TopicPartition("t", 0, 1)])
    text = str(caught.value)
    assert "\n" not in text and "delete_records" in text and "docs/testing.md" in text
    assert caught.value.args[0].code() == KafkaError._NOT_IMPLEMENTED
    with pytest.raises(NotImplementedError):
        admin.create_topics([NewTopic("x", 1, 1)], validate_only=True)
    assert "t" in admin.list_topics().topics  # still working
