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
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
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


def test_create_topics_goes_to_the_controller_so_a_cut_off_controller_shows(served, ck) -> None:
    # The broker forwards CreateTopics to the controller (KIP-590): with the controller cut off, no
    # answer comes within the request's timeout and the topic is REQUEST_TIMED_OUT, not created.
    server = served([("t", 1, 3)])
    admin = AdminClient(ck(server))
    with server.locked() as cluster:
        cluster.isolate("controller")
    futures = admin.create_topics([NewTopic("cut", 1, 1)], operation_timeout=1.0, request_timeout=20.0)
    with pytest.raises(KafkaException, match="REQUEST_TIMED_OUT"):
        futures["cut"].result(20)
    with server.locked() as cluster:
        assert "cut" not in cluster.topics
        cluster.heal()
    admin.create_topics([NewTopic("cut", 1, 1)], request_timeout=20.0)["cut"].result(20)


def test_the_topic_configs_kafka_streams_sets_are_accepted_where_the_log_honours_them(served, ck) -> None:
    """Streams' changelog configs (``InternalTopicManager``) create the topic; values the log cannot honour do not."""
    server = served([("t", 1, 3)])
    admin = AdminClient(ck(server))
    changelog = {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
    repartition = {"cleanup.policy": "delete", "retention.ms": "-1", "segment.bytes": "52428800"}
    futures = admin.create_topics(
        [
            NewTopic("app-store-changelog", 2, 3, config=changelog),
            NewTopic("app-repartition", 2, 3, config=repartition),
            NewTopic("append-time", 1, 3, config={"message.timestamp.type": "LogAppendTime"}),
            NewTopic("other-policy", 1, 3, config={"cleanup.policy": "shred"}),
        ]
    )
    assert {name: _outcome(f) for name, f in futures.items()} == {
        "app-store-changelog": "ok",
        "app-repartition": "ok",
        "append-time": "INVALID_CONFIG",
        "other-policy": "INVALID_CONFIG",
    }
    with server.locked() as cluster:
        assert cluster.topics["app-store-changelog"] == 2
        assert "append-time" not in cluster.topics


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
    with server.locked() as cluster:
        from engine.views.transactions import describe_transaction_row

        row = describe_transaction_row(cluster, "admin-tx")
        coordinator = row.coordinator_id
        expected_producers = describe_producers_rows(cluster, "t", 0)
        leader = cluster.leader("t")
    # ListTransactions is answered by each broker's coordinator for the __transaction_state
    # partitions it leads (TransactionCoordinator.handleListTransactions): Kafka's admin client asks
    # every broker and unions the answers.
    listed = {
        b: [(s.transactional_id, s.transaction_state) for s in raw_call(server, 66, 0, list_all, b).transaction_states]
        for b in sorted(server.addresses)
        for list_all in [load_request_schema(66, 0)()]
    }
    assert listed == {b: [("admin-tx", "Ongoing")] if b == coordinator else [] for b in server.addresses}
    describe = load_request_schema(65, 0)(transactional_ids=("admin-tx",))
    described = raw_call(server, 65, 0, describe, broker=coordinator)
    [state] = described.transaction_states
    assert (state.transaction_state, state.producer_id, state.producer_epoch) == ("Ongoing", row.producer_id, 0)
    assert [(t.topic, tuple(t.partitions)) for t in state.topics] == [("t", (0,))]
    # Another broker does not coordinate the id: NOT_COORDINATOR, and the client looks it up.
    other = next(b for b in sorted(server.addresses) if b != coordinator)
    [elsewhere] = raw_call(server, 65, 0, describe, broker=other).transaction_states
    assert int(elsewhere.error_code) == 16  # NOT_COORDINATOR
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


def _outcome(future) -> str:
    """``ok``, or the name of the Kafka error a future failed with."""
    try:
        future.result(10)
    except KafkaException as exc:
        return exc.args[0].name()
    return "ok"


def test_create_topics_defaults_and_validate_only_as_kafka_4_4(served, ck, kp) -> None:
    """-1 partitions/RF take the defaults; validate_only checks the replication factor; 0 is refused."""
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic
    from kafka.errors import InvalidPartitionsError, InvalidReplicationFactorError

    server = served([("t", 1, 3)])
    admin = AdminClient(ck(server))
    futures = admin.create_topics(
        [NewTopic("dflt", -1, -1), NewTopic("v", 1, 1), NewTopic("vrf", 1, 9)], validate_only=True
    )
    assert {k: _outcome(f) for k, f in futures.items()} == {
        "dflt": "ok",
        "v": "ok",
        "vrf": "INVALID_REPLICATION_FACTOR",
    }
    assert _outcome(admin.create_topics([NewTopic("dflt", -1, -1)])["dflt"]) == "ok"
    with server.locked() as cluster:
        assert "v" not in cluster.topics
        assert cluster.topics["dflt"] == 1
        assert len(cluster.describe_partition("dflt").replicas) == 3
    kadmin = KafkaAdminClient(**kp(server))
    try:
        with pytest.raises(InvalidPartitionsError):
            kadmin.create_topics([KpNewTopic("zero", 0, 1)])
        with pytest.raises(InvalidReplicationFactorError):
            kadmin.create_topics([KpNewTopic("rf0", 1, 0)])
    finally:
        kadmin.close()


def test_describe_configs_of_topics_and_brokers(served, ck) -> None:
    server = served([("t", 1, 3)], config={"default.replication.factor": 2})
    admin = AdminClient(ck(server))
    created = admin.create_topics([NewTopic("made", 1, 3, config={"min.insync.replicas": "2"})])
    created["made"].result(10)
    futures = admin.describe_configs(
        [
            ConfigResource(ResourceType.TOPIC, "made"),
            ConfigResource(ResourceType.BROKER, "1"),
            ConfigResource(ResourceType.TOPIC, "nope"),
        ]
    )
    topic, broker, missing = (futures[r] for r in sorted(futures, key=lambda r: (r.name != "made", r.name)))
    configs = topic.result(10)
    mir = configs["min.insync.replicas"]
    assert (mir.value, mir.source, mir.is_read_only, mir.is_sensitive) == (
        "2",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
        False,
        False,
    )
    unclean = configs["unclean.leader.election.enable"]
    assert (unclean.value, unclean.source) == ("false", ConfigSource.DEFAULT_CONFIG.value)
    brokers = broker.result(10)
    drf = brokers["default.replication.factor"]
    assert (drf.value, drf.source, drf.is_read_only) == ("2", ConfigSource.STATIC_BROKER_CONFIG.value, True)
    assert brokers["broker.id"].value == "1"
    assert brokers["transaction.max.timeout.ms"].value == "900000"
    assert _outcome(missing) == "UNKNOWN_TOPIC_OR_PART"


def test_incremental_alter_configs_sets_a_topic_config(served, ck) -> None:
    server = served([("t", 1, 3)])
    admin = AdminClient(ck(server))
    set_mir = [ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)]
    unknown = [ConfigEntry("no.such", "2", incremental_operation=AlterConfigOpType.SET)]
    [ok] = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.TOPIC, "t", incremental_configs=set_mir)]
    ).values()
    assert _outcome(ok) == "ok"
    with server.locked() as cluster:
        assert cluster.topic_configs["t"].min_insync_replicas == 2
        assert cluster.brokers[1].min_insync_replicas("t") == 2
    [bad] = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.TOPIC, "t", incremental_configs=unknown)]
    ).values()
    assert _outcome(bad) == "INVALID_CONFIG"
    [gone] = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.TOPIC, "nope", incremental_configs=set_mir)]
    ).values()
    assert _outcome(gone) == "UNKNOWN_TOPIC_OR_PART"
    [described] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "t")]).values()
    entry = described.result(10)["min.insync.replicas"]
    assert (entry.value, entry.source) == ("2", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)


def test_delete_topics_then_the_name_is_created_again_empty(served, ck) -> None:
    server = served([("t", 2, 3), ("keep", 1, 3)])
    # A Metadata request for "t" from a live producer (or from AdminClient.list_topics, a producer
    # handle too) would create "t" again by auto-creation (auto.create.topics.enable is on by
    # default), as it does against Kafka: neither may ask to.
    no_auto = {"allow.auto.create.topics": False}
    p = Producer(ck(server, **no_auto))
    for i in range(6):
        p.produce("t", value=b"old-%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    admin = AdminClient(ck(server, **no_auto))
    futures = admin.delete_topics(["t", "nope"], operation_timeout=10)
    assert {k: _outcome(f) for k, f in futures.items()} == {"t": "ok", "nope": "UNKNOWN_TOPIC_OR_PART"}
    md = admin.list_topics(topic="t", timeout=10)
    assert md.topics["t"].error is not None and md.topics["t"].error.name() == "UNKNOWN_TOPIC_OR_PART"
    with server.locked() as cluster:
        assert "t" not in cluster.topics
        assert all(k[0] != "t" for b in cluster.brokers.values() for k in b.replicas)
        assert all(not n.endswith(("t-0", "t-1")) for b in cluster.brokers.values() for n in b.disk.names())
    admin.create_topics([NewTopic("t", 1, 3)])["t"].result(10)
    with server.locked() as cluster:
        assert cluster.topics["t"] == 1
    fresh = Producer(ck(server))
    fresh.produce("t", value=b"new")
    assert fresh.flush(10) == 0
    with server.locked() as cluster:
        leader = cluster.leader("t")
        values = [v for batch in cluster.brokers[leader].replicas[("t", 0)].log.batches for v in batch.values]
    assert values == [b"new"]
    [internal] = admin.delete_topics(["__consumer_offsets"]).values()
    assert _outcome(internal) == "UNKNOWN_TOPIC_OR_PART"  # not created yet, as on Kafka


def test_describe_cluster_lists_the_live_brokers(served, ck, raw_call) -> None:
    server = served([("t", 1, 3)])
    admin = AdminClient(ck(server))
    described = admin.describe_cluster(request_timeout=10).result(10)
    assert described.cluster_id == "eos-magics-simulated"
    assert sorted(n.id for n in described.nodes) == [1, 2, 3]
    assert described.controller.id == 1
    with server.locked() as cluster:
        cluster.crash(3)
        cluster.run_for(cluster.config.broker_session_timeout_ms + 2 * cluster.config.broker_heartbeat_interval_ms)
    described = admin.describe_cluster(request_timeout=10).result(10)
    assert sorted(n.id for n in described.nodes) == [1, 2]
    # DescribeCluster v2 itself (librdkafka falls back to Metadata where it is not advertised).
    request = load_request_schema(60, 2)(include_cluster_authorized_operations=False, include_fenced_brokers=True)
    answer = raw_call(server, 60, 2, request)
    assert (int(answer.error_code), answer.cluster_id, answer.controller_id) == (0, "eos-magics-simulated", 1)
    assert [(b.broker_id, b.is_fenced) for b in answer.brokers] == [(1, False), (2, False), (3, True)]
