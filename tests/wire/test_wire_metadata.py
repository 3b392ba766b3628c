"""Metadata as Kafka 4.4 answers it: every live broker, the controller id, and topic auto-creation.

Goal: an empty served cluster (no topics) lists its brokers and a controller, so confluent-kafka's
AdminClient can create the first topic; a crashed broker stays listed until the controller fences it
(``broker.session.timeout.ms``), then its replicas are offline. A Metadata request naming an unknown
topic creates it when the request and ``auto.create.topics.enable`` allow it, with ``num.partitions``
and ``default.replication.factor``, and answers UNKNOWN_TOPIC_OR_PARTITION first, as Kafka 4's
``AutoTopicCreationManager`` does; an illegal name is INVALID_TOPIC_EXCEPTION.

Method: a served cluster per test; confluent-kafka's AdminClient and Producer, both libraries' consumers, and Metadata
v12 on a raw logged-in socket (``raw_call``) where the exact answer matters.
"""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.index import load_request_schema
from kio.schema.metadata.v12.request import MetadataRequestTopic

from engine.errors import ErrorCode

ZERO_UUID = uuid.UUID(int=0)


def _metadata(raw_call, server, names, *, allow=True, broker=1):
    topics = tuple(MetadataRequestTopic(topic_id=ZERO_UUID, name=n) for n in names)
    body = load_request_schema(3, 12)(
        topics=topics, allow_auto_topic_creation=allow, include_topic_authorized_operations=False
    )
    return raw_call(server, 3, 12, body, broker)


def test_an_empty_cluster_lists_its_brokers_and_a_controller_so_admin_can_create_the_first_topic(served, ck) -> None:
    server = served(())
    admin = AdminClient(ck(server))
    md = admin.list_topics(timeout=10)
    assert sorted(md.brokers) == [1, 2, 3]
    assert md.controller_id in (1, 2, 3)
    admin.create_topics([NewTopic("in", 1, 3)])["in"].result(15)
    with server.locked() as cluster:
        assert cluster.topics == {"in": 1}
        assert len(cluster.describe_partition("in").replicas) == 3


def test_a_crashed_broker_is_listed_until_fenced_then_its_replicas_are_offline(served, raw_call) -> None:
    server = served([("t", 1, 3)])
    with server.locked() as cluster:
        cluster.crash(3)
        session_ms = cluster.config.broker_session_timeout_ms
    before = _metadata(raw_call, server, ["t"])
    assert sorted(b.node_id for b in before.brokers) == [1, 2, 3]  # not fenced yet: still registered
    with server.locked() as cluster:
        cluster.run_for(session_ms + 2 * cluster.config.broker_heartbeat_interval_ms)
    after = _metadata(raw_call, server, ["t"])
    assert sorted(b.node_id for b in after.brokers) == [1, 2]
    assert after.controller_id in (1, 2)
    [part] = after.topics[0].partitions
    assert tuple(part.offline_replicas) == (3,)


def test_a_leader_the_answer_names_is_always_a_listed_broker(served, raw_call) -> None:
    """The asked broker never hears the controller move the leadership, so it still names the
    crashed leader after the controller fenced it; the answer then lists that broker, as a KRaft
    broker's image does (the fence and the leader move are one metadata batch). kafka-python 3.0.12's sender thread dies
    on a leader missing from the broker list (``UnknownBrokerIdError``)."""
    server = served([("t", 1, 3)])
    with server.locked() as cluster:
        leader = cluster.describe_partition("t").leader
        cluster.crash(leader)
        [asked] = [b for b in (1, 2, 3) if b != leader][:1]
        cluster.partition(["controller"], [asked], one_way=True)
        cluster.run_for(cluster.config.broker_session_timeout_ms + 2 * cluster.config.broker_heartbeat_interval_ms)
        assert not cluster.controller.is_live(leader)
    answer = _metadata(raw_call, server, ["t"], broker=asked)
    [part] = answer.topics[0].partitions
    assert part.leader_id == leader  # the stale image this test is about
    assert leader in {b.node_id for b in answer.brokers}


def test_a_producer_to_an_unknown_topic_auto_creates_it_and_delivers(served, ck) -> None:
    server = served(())
    p = Producer(ck(server))
    delivered = []
    p.produce("auto", b"first", on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert p.flush(20) == 0
    assert delivered == [(None, 0)]
    with server.locked() as cluster:
        assert cluster.topics == {"auto": 1}  # num.partitions
        assert len(cluster.describe_partition("auto").replicas) == 3  # default.replication.factor


def test_the_first_answer_for_an_auto_created_topic_is_unknown_then_it_has_a_leader(served, raw_call) -> None:
    server = served([("t", 1, 3)], config={"num.partitions": 2, "default.replication.factor": 2})
    [first] = _metadata(raw_call, server, ["fresh"]).topics
    assert (first.name, first.error_code) == ("fresh", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    with server.locked() as cluster:
        assert cluster.topics["fresh"] == 2
        assert len(cluster.describe_partition("fresh", 1).replicas) == 2
    deadline = time.monotonic() + 5
    while True:
        [again] = _metadata(raw_call, server, ["fresh"]).topics
        if again.error_code == ErrorCode.NONE or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert again.error_code == ErrorCode.NONE
    assert sorted(p.partition_index for p in again.partitions) == [0, 1]
    assert all(p.leader_id > 0 for p in again.partitions)
    [bad] = _metadata(raw_call, server, ["no/slash"]).topics
    assert bad.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_no_auto_creation_when_the_request_or_the_cluster_forbids_it(served, raw_call) -> None:
    server = served([("t", 1, 3)])
    [refused] = _metadata(raw_call, server, ["asked-not-to"], allow=False).topics
    assert refused.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    off = served([("t", 1, 3)], config={"auto.create.topics.enable": False})
    [unknown] = _metadata(raw_call, off, ["nope"]).topics
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    for s in (server, off):
        with s.locked() as cluster:
            assert sorted(cluster.topics) == ["t"]


def test_a_subscribing_consumer_creates_a_topic_only_when_its_metadata_request_allows_it(served, ck, kp) -> None:
    # Each client decides what its Metadata v12 says (the frames were read): kafka-python's consumer
    # sends allow_auto_topic_creation=true, librdkafka's sends false for a subscription to topics it has
    # no local handle of (its allow.auto.create.topics=false default, and true too: rdkafka_cgrp.c).
    from kafka import KafkaConsumer

    server = served([("t", 1, 3)])
    consumers = (
        ("not-made", lambda: Consumer({**ck(server), "group.id": "g1", "allow.auto.create.topics": False}), 0.2),
        ("made", lambda: KafkaConsumer(**kp(server), group_id="g2", allow_auto_create_topics=True), 200),
    )
    for topic, make, timeout in consumers:
        c = make()
        c.subscribe([topic])
        deadline = time.monotonic() + 4
        try:
            while time.monotonic() < deadline:
                c.poll(timeout)
                with server.locked() as cluster:
                    if topic in cluster.topics:
                        break
        finally:
            c.close()
    with server.locked() as cluster:
        assert sorted(cluster.topics) == ["made", "t"]


def test_a_topic_id_is_the_same_on_every_broker_and_new_when_the_name_is_created_again(served, raw_call) -> None:
    """KIP-848 clients map their assignment's topic ids through Metadata: an id names one topic's life."""
    server = served([("t", 1, 3)])
    [on_1] = _metadata(raw_call, server, ["t"], allow=False, broker=1).topics
    [on_2] = _metadata(raw_call, server, ["t"], allow=False, broker=2).topics
    assert on_1.topic_id == on_2.topic_id != ZERO_UUID
    with server.locked() as cluster:
        cluster.delete_topic("t")
        cluster.create_topic("t", partitions=1, replication_factor=3)
    deadline = time.monotonic() + 5
    while True:
        [again] = _metadata(raw_call, server, ["t"], allow=False).topics
        if (again.error_code == ErrorCode.NONE and again.partitions) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert again.error_code == ErrorCode.NONE
    assert again.topic_id not in (on_1.topic_id, ZERO_UUID)
