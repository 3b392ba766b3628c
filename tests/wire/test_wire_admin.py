"""What admin tools and less common paths ask of a served cluster.

Goal: CreateTopics from confluent-kafka's AdminClient (and its refusals), gzip-compressed produce
read back, watermarks and a timestamp lookup through ListOffsets, the reads of
``kafka-transactions.sh`` (ListTransactions, DescribeTransactions, DescribeProducers) and
OffsetForLeaderEpoch answered from the engine's state, each checked against the engine's own views.

Method: a served cluster per test; confluent-kafka where it has the call, otherwise one request on a
raw logged-in socket built and read with kio (``raw_call``).
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.index import load_request_schema
from kio.schema.describe_producers.v0.request import TopicRequest
from kio.schema.offset_for_leader_epoch.v3.request import OffsetForLeaderPartition, OffsetForLeaderTopic

from engine.views.transactions import describe_producers_rows


def test_admin_client_creates_topics_and_gets_kafka_s_refusals(served, ck) -> None:
    server = served([("t", 1, 3)])
    admin = AdminClient(ck(server))
    futures = admin.create_topics([NewTopic("made", 3, 2), NewTopic("t", 1, 1), NewTopic("bad", 1, 9)])
    futures["made"].result(10)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS"):
        futures["t"].result(10)
    with pytest.raises(KafkaException, match="INVALID_REPLICATION_FACTOR"):
        futures["bad"].result(10)
    with server.locked() as cluster:
        assert cluster.topics["made"] == 3
        assert len(cluster.describe_partition("made", 2).replicas) == 2
    assert sorted(admin.list_topics(timeout=10).topics["made"].partitions) == [0, 1, 2]
    with server.locked() as cluster:
        closes = [dict(e.detail) for e in cluster.world.trace if e.name == "wire.close"]
    assert closes == [], closes


def test_gzip_batches_are_decompressed_and_read_back(served, ck, read_committed) -> None:
    server = served([("t", 1, 3)])
    p = Producer(ck(server, **{"compression.type": "gzip", "enable.idempotence": True, "linger.ms": 20}))
    for i in range(50):
        p.produce("t", value=f"zipped-{i}".encode() * 3)
    assert p.flush(15) == 0
    values = read_committed(ck(server), "t", expect=50)
    assert sorted(values) == sorted(f"zipped-{i}" * 3 for i in range(50))


def test_watermarks_and_a_timestamp_lookup(served, ck) -> None:
    server = served([("t", 1, 3)])
    p = Producer(ck(server))
    for i in range(7):
        p.produce("t", value=b"v%d" % i)
    assert p.flush(10) == 0
    c = Consumer({**ck(server), "group.id": "w"})
    try:
        assert c.get_watermark_offsets(TopicPartition("t", 0), timeout=10) == (0, 7)
        [found] = c.offsets_for_times([TopicPartition("t", 0, 0)], timeout=10)  # tests/wire/test_wire_list_offsets.py
        assert found.offset == 0
    finally:
        c.close()


def test_kafka_transactions_sh_reads_answer_from_the_engine_s_state(served, ck, txn_producer, raw_call) -> None:
    server = served([("t", 1, 3)])
    p = txn_producer(ck(server), "admin-tx")
    p.begin_transaction()
    p.produce("t", value=b"open")
    p.flush(10)
    listed = raw_call(server, 66, 0, load_request_schema(66, 0)())
    assert [(s.transactional_id, s.transaction_state) for s in listed.transaction_states] == [("admin-tx", "Ongoing")]
    coordinator = None
    with server.locked() as cluster:
        from engine.views.transactions import describe_transaction_row

        row = describe_transaction_row(cluster, "admin-tx")
        coordinator = row.coordinator_id
        expected_producers = describe_producers_rows(cluster, "t", 0)
        leader = cluster.leader("t")
    described = raw_call(server, 65, 0, load_request_schema(65, 0)(transactional_ids=("admin-tx",)), broker=coordinator)
    [state] = described.transaction_states
    assert (state.transaction_state, state.producer_id, state.producer_epoch) == ("Ongoing", row.producer_id, 0)
    assert [(t.topic, tuple(t.partitions)) for t in state.topics] == [("t", (0,))]
    producers = raw_call(
        server, 61, 0, load_request_schema(61, 0)(topics=(TopicRequest(name="t", partition_indexes=(0,)),)), leader
    )
    [part] = producers.topics[0].partitions
    assert [(a.producer_id, a.current_txn_start_offset) for a in part.active_producers] == [
        (r.producer_id, r.current_txn_start_offset) for r in expected_producers
    ]
    assert part.active_producers[0].current_txn_start_offset == 0
    p.abort_transaction(15)


def test_offset_for_leader_epoch_answers_from_the_leader_s_epoch_cache(served, ck, raw_call) -> None:
    server = served([("t", 1, 3)])
    p = Producer(ck(server))
    for i in range(4):
        p.produce("t", value=b"%d" % i)
    assert p.flush(10) == 0
    with server.locked() as cluster:
        leader = cluster.leader("t")
        epoch = cluster.describe_partition("t").leader_epoch
    request = load_request_schema(23, 3)(
        topics=(
            OffsetForLeaderTopic(topic="t", partitions=(OffsetForLeaderPartition(partition=0, leader_epoch=epoch),)),
        )
    )
    [part] = raw_call(server, 23, 3, request, leader).topics[0].partitions
    assert (int(part.error_code), part.leader_epoch, part.end_offset) == (0, epoch, 4)
    stale = load_request_schema(23, 3)(
        topics=(
            OffsetForLeaderTopic(
                topic="t",
                partitions=(OffsetForLeaderPartition(partition=0, leader_epoch=epoch, current_leader_epoch=epoch + 5),),
            ),
        )
    )
    [part] = raw_call(server, 23, 3, stale, leader).topics[0].partitions
    assert int(part.error_code) == 75  # UNKNOWN_LEADER_EPOCH: the client's epoch is ahead of the leader's
