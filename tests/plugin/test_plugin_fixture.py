"""The ``eos_cluster`` fixture used directly: its seed, its markers, the pass-through and the fault helpers.

Goal: the fixture's cluster gets the CRC-32 of the node id as its seed, or the ``eos_seed``
marker's; the ``eos_cluster`` marker sets brokers, broker config and topics; attributes pass
through to the ``engine.Cluster``; ``lose_next_ack`` drops one ProduceResponse (of one topic),
``hold_end_txn``/``release`` keep a commit's answer, ``pause_producer`` makes a zombie; ``check``
reads every partition first, as ``Session.check`` does; the plugin keeps pytest's assertion
rewriting off the engine, as before it was installed.

Method: these tests take the fixture themselves (the plugin is installed, so this session has
it) and compare with the engine's own views: the trace, ``describe_partition``, the node status.
The inner-session behaviour (the verdict, the failure report, processes) is in
``test_plugin_reports.py``. A run with ``--eos-seed N`` gives every test seed N: the seed tests
expect it then.
"""

from __future__ import annotations

import pytest

from engine.errors import TimeoutException
from engine.sim.node import NodeStatus
from eos_magics.pytest_plugin import EosTestCluster, derived_seed, has_drop_in


def expected_seed(request: pytest.FixtureRequest, otherwise: int) -> int:
    option = request.config.getoption("eos_seed")
    return otherwise if option is None else option


def test_the_seed_is_the_crc32_of_the_node_id(eos_cluster: EosTestCluster, request: pytest.FixtureRequest) -> None:
    assert eos_cluster.seed == expected_seed(request, derived_seed(request.node.nodeid))
    assert derived_seed("tests/x.py::test_y") == 3_775_685_000  # zlib.crc32: the same in every process


@pytest.mark.eos_seed(123)
def test_the_eos_seed_marker_sets_the_seed(eos_cluster: EosTestCluster, request: pytest.FixtureRequest) -> None:
    assert eos_cluster.seed == expected_seed(request, 123)


@pytest.mark.eos_cluster(
    brokers=5,
    config={"min.insync.replicas": 3},
    topics={"orders": 3, "audit": {"partitions": 2, "config": {"min.insync.replicas": 1}}},
)
def test_the_eos_cluster_marker_sets_brokers_config_and_topics(eos_cluster: EosTestCluster) -> None:
    assert sorted(eos_cluster.brokers) == [1, 2, 3, 4, 5]
    assert eos_cluster.topics == {"orders": 3, "audit": 2}
    assert eos_cluster.config.min_insync_replicas == 3
    assert eos_cluster.topic_configs["audit"].min_insync_replicas == 1
    # default.replication.factor: three replicas, as a Session's cluster has
    assert len(eos_cluster.describe_partition("orders", 2).replicas) == 3


def test_without_a_marker_three_brokers_and_no_topic(eos_cluster: EosTestCluster) -> None:
    assert (len(eos_cluster.brokers), eos_cluster.topics) == (3, {})
    assert eos_cluster.config.min_insync_replicas == 2
    assert eos_cluster.patched == has_drop_in()


def test_the_engine_is_not_assertion_rewritten() -> None:
    # pytest marks every package of a plugin's distribution for rewriting; the plugin takes them off.
    import engine.journal

    assert "@pytest_ar" not in vars(engine.journal)


@pytest.mark.eos_cluster(topics={"orders": 1})
def test_the_clusters_calls_a_test_makes_are_named(eos_cluster: EosTestCluster) -> None:
    leader = eos_cluster.leader("orders", 0)
    eos_cluster.crash(leader)
    eos_cluster.run_for(10_000)
    assert eos_cluster.leader("orders", 0) not in (-1, leader)
    eos_cluster.restart(leader)
    assert eos_cluster.world.nodes[f"broker-{leader}"].status is NodeStatus.UP
    assert eos_cluster.fingerprint() == eos_cluster.cluster.fingerprint()
    assert "__getattr__" not in vars(EosTestCluster)  # nothing is forwarded by name at run time
    with pytest.raises(AttributeError):
        _ = eos_cluster.no_such_thing
    with pytest.raises(AttributeError):
        _ = eos_cluster.dump_log  # named on the Cluster only: eos_cluster.cluster.dump_log


@pytest.mark.eos_cluster(topics={"a": 1, "b": 1})
def test_lose_next_ack_of_a_topic_drops_its_next_produce_response_and_the_retry_is_deduplicated(
    eos_cluster: EosTestCluster,
) -> None:
    eos_cluster.lose_next_ack("b")
    p = eos_cluster.producer()
    p.produce("a", value=b"a-1", partition=0)
    p.flush()
    assert eos_cluster.world.network.active_rule_ids(), "a ProduceResponse of topic a was dropped"
    p.produce("b", value=b"b-1", partition=0)
    p.flush()
    dropped = [e for e in eos_cluster.world.trace.select(kind="drop") if str(e.get("reason")).startswith("rule")]
    assert len(dropped) == 1
    assert eos_cluster.describe_partition("b", 0).high_watermark == 1  # written once, acknowledged on the retry
    assert eos_cluster.check().ok
    with pytest.raises(ValueError, match="no topic 'c'"):
        eos_cluster.lose_next_ack("c")


@pytest.mark.eos_cluster(topics={"a": 1})
def test_drop_response_loses_the_nth_answer_of_a_kind_as_eos_server_does(eos_cluster: EosTestCluster) -> None:
    eos_cluster.drop_response("Produce", nth=2)
    p = eos_cluster.producer({"enable.idempotence": True})
    for i in range(3):
        p.produce("a", value=b"a-%d" % i, partition=0)
        p.flush()
        dropped = [e for e in eos_cluster.world.trace.select(kind="drop") if str(e.get("reason")).startswith("rule")]
        assert len(dropped) == (0 if i == 0 else 1), f"after record {i}"
    assert eos_cluster.world.network.active_rule_ids() == []  # it acted once and is gone
    assert eos_cluster.describe_partition("a", 0).high_watermark == 3  # the retry was deduplicated
    assert eos_cluster.check().ok
    with pytest.raises(ValueError, match=r"no request 'Produc' in the simulation; one of: .*EndTxn"):
        eos_cluster.drop_response("Produc")
    with pytest.raises(ValueError, match="nth must be a positive int"):
        eos_cluster.drop_response("Produce", nth=0)


@pytest.mark.eos_cluster(topics={"orders": 1})
def test_hold_end_txn_keeps_the_commit_answer_until_release(eos_cluster: EosTestCluster) -> None:
    p = eos_cluster.producer({"transactional.id": "t1"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("orders", value=b"o-1", partition=0)
    rule = eos_cluster.hold_end_txn()
    with pytest.raises(TimeoutException, match="did not complete"):
        p.commit_transaction(timeout=2.0)
    # the coordinator committed (its marker is written); only its answer is held
    assert eos_cluster.describe_partition("orders", 0).last_stable_offset == 2
    assert len(eos_cluster.release(rule)) == 1
    p.commit_transaction(timeout=5.0)
    assert eos_cluster.check().ok


def test_pause_producer_makes_a_zombie_until_resumed(eos_cluster: EosTestCluster) -> None:
    with pytest.raises(ValueError, match="no producer yet"):
        eos_cluster.pause_producer()
    first = eos_cluster.producer({"client.id": "app"})
    last = eos_cluster.producer()
    assert eos_cluster.pause_producer() == last.name
    assert eos_cluster.world.nodes[last.name].status is NodeStatus.PAUSED
    assert eos_cluster.pause_producer("app") == first.name == "app"
    eos_cluster.resume("app")
    assert eos_cluster.pause_producer(first) == "app"
    with pytest.raises(TypeError, match="pause_producer"):
        eos_cluster.pause_producer(3)


@pytest.mark.eos_cluster(topics={"orders": 2})
def test_check_reads_every_partition_first(eos_cluster: EosTestCluster) -> None:
    p = eos_cluster.producer()
    for i in range(4):
        p.produce("orders", value=f"o-{i}", partition=i % 2)
    p.flush()
    assert eos_cluster.check(final_read=False).kinds() == {"unseen": 2}
    assert eos_cluster.check().ok
    readers = [op for op in eos_cluster.history if op.f == "poll" and op.type == "ok" and op.mops]
    assert sorted(m.value for op in readers for m in op.mops) == ["o-0", "o-1", "o-2", "o-3"]
    assert eos_cluster.check("at-least-once").ok  # a second check reads again, with a new reader
    assert "eos-check-reader-2" in eos_cluster.world.nodes
