"""Bad input at the public API of ``Cluster``, its views and its admin: rejected at once, cluster unharmed.

Goal: every public entry point of :class:`~engine.Cluster` (topics, faults, views, the
``kafka-transactions.sh`` admin) checks its arguments the way Kafka's own server and tools do --
topic names by Kafka's ``Topic.validate`` rules, partition counts, replication factors, manual
assignments, broker ids and node names -- and answers with the catalogue's named exception
(``InvalidTopicException``, ``UnknownTopicOrPartitionException``, ``TransactionalIdNotFoundException``
...) or a ``TypeError``/``ValueError`` that says what to pass; no ``AttributeError``, ``KeyError``
or ``IndexError`` from the engine's inside escapes. Method: one small cluster per case on a fixed
seed; make the bad call, check the exception class and a phrase of its message, then check that
the cluster still creates a topic, produces and consumes (a rejected call changed nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine import Cluster
from engine.errors import (
    ConfigError,
    CoordinatorNotAvailableException,
    InvalidPartitionsException,
    InvalidReplicaAssignmentException,
    InvalidReplicationFactorException,
    InvalidTopicException,
    KafkaError,
    LeaderNotAvailableException,
    NotLeaderOrFollowerException,
    TopicExistsException,
    TransactionalIdNotFoundException,
    UnknownTopicOrPartitionException,
)

Call = Callable[[Cluster], Any]

#: Kafka's controller answers INVALID_REPLICA_ASSIGNMENT for a bad manual assignment.
BadAssignment = InvalidReplicaAssignmentException


def _cluster(seed: int = 3) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=2, replication_factor=3)
    return c


def _still_works(c: Cluster) -> None:
    """Create a new topic, produce to it and read it back: the cluster is unharmed."""
    name = f"after-{len(c.topics)}"
    c.create_topic(name, partitions=1, replication_factor=3)
    p = c.producer({"linger.ms": 0})
    p.produce(name, value=b"still-works", partition=0)
    assert p.flush(timeout=10) == 0
    consumer = c.consumer()
    consumer.assign([(name, 0)])
    got = consumer.consume(10, timeout=5)
    assert [m.value() for m in got] == [b"still-works"]
    assert all(m.error() is None for m in got)
    for t in c.topics:
        c.describe_partition(t, 0)  # every topic the cluster lists is a real one


def _rejects(c: Cluster, call: Call, error: type[BaseException], match: str) -> BaseException:
    topics_before = dict(c.topics)
    with pytest.raises(error, match=match) as exc:
        call(c)
    assert not isinstance(exc.value, (AttributeError, KeyError, IndexError)), repr(exc.value)
    assert c.topics == topics_before, "a rejected call must not leave a topic behind"
    _still_works(c)
    return exc.value


# -- create_topic -------------------------------------------------------------------------------

CREATE_TOPIC_CASES: list[tuple[str, Call, type[BaseException], str]] = [
    ("name None", lambda c: c.create_topic(None), TypeError, "topic name must be a str"),
    ("name int", lambda c: c.create_topic(7), TypeError, "topic name must be a str"),
    ("name empty", lambda c: c.create_topic(""), InvalidTopicException, "can't be empty"),
    ("name dot", lambda c: c.create_topic("."), InvalidTopicException, r'cannot be "\." or "\.\."'),
    ("name dot dot", lambda c: c.create_topic(".."), InvalidTopicException, r'cannot be "\." or "\.\."'),
    ("name space", lambda c: c.create_topic("a b"), InvalidTopicException, "ASCII alphanumerics"),
    ("name slash", lambda c: c.create_topic("a/b"), InvalidTopicException, "ASCII alphanumerics"),
    ("name non-ascii", lambda c: c.create_topic("café"), InvalidTopicException, "ASCII alphanumerics"),
    ("name too long", lambda c: c.create_topic("a" * 250), InvalidTopicException, "longer than 249"),
    ("offsets topic", lambda c: c.create_topic("__consumer_offsets"), InvalidTopicException, "internal"),
    ("txn state topic", lambda c: c.create_topic("__transaction_state"), InvalidTopicException, "internal"),
    ("zero partitions", lambda c: c.create_topic("z", partitions=0), InvalidPartitionsException, "at least 1"),
    ("negative partitions", lambda c: c.create_topic("z", partitions=-3), InvalidPartitionsException, "at least 1"),
    ("partitions str", lambda c: c.create_topic("z", partitions="3"), TypeError, "partitions must be an int"),
    ("partitions float", lambda c: c.create_topic("z", partitions=2.0), TypeError, "partitions must be an int"),
    ("partitions bool", lambda c: c.create_topic("z", partitions=True), TypeError, "partitions must be an int"),
    ("rf zero", lambda c: c.create_topic("z", replication_factor=0), InvalidReplicationFactorException, "1 and 3"),
    (
        "rf above brokers",
        lambda c: c.create_topic("z", replication_factor=4),
        InvalidReplicationFactorException,
        "1 and 3",
    ),
    ("rf str", lambda c: c.create_topic("z", replication_factor="3"), TypeError, "replication_factor must be an int"),
    ("config not a dict", lambda c: c.create_topic("z", config="x"), TypeError, "config must be a dict"),
    (
        "config unknown key",
        lambda c: c.create_topic("z", config={"min.insync.replica": 2}),
        ConfigError,
        "did you mean",
    ),
    (
        "assign missing broker",
        lambda c: c.create_topic("z", assignments=[(1, 9)]),
        InvalidReplicaAssignmentException,
        "broker 9.*1, 2, 3",
    ),
    (
        "assign same broker twice",
        lambda c: c.create_topic("z", assignments=[(1, 1)]),
        InvalidReplicaAssignmentException,
        "more than once",
    ),
    (
        "assign uneven",
        lambda c: c.create_topic("z", assignments=[(1, 2), (3,)]),
        InvalidReplicaAssignmentException,
        "same number",
    ),
    (
        "assign empty replicas",
        lambda c: c.create_topic("z", assignments=[()]),
        InvalidReplicaAssignmentException,
        "empty replica list",
    ),
    ("assign no partitions", lambda c: c.create_topic("z", assignments=[]), InvalidPartitionsException, "at least 1"),
    ("assign str broker", lambda c: c.create_topic("z", assignments=[("1",)]), TypeError, "broker ids"),
    ("assign not a list", lambda c: c.create_topic("z", assignments="12"), TypeError, "list of replica"),
    (
        "assign vs partitions",
        lambda c: c.create_topic("z", partitions=3, assignments=[(1,)]),
        ValueError,
        "3 partitions",
    ),
    ("assign vs rf", lambda c: c.create_topic("z", replication_factor=2, assignments=[(1,)]), ValueError, "factor 2"),
]


@pytest.mark.parametrize(
    ("call", "error", "match"), [c[1:] for c in CREATE_TOPIC_CASES], ids=[c[0] for c in CREATE_TOPIC_CASES]
)
def test_create_topic_rejects_bad_input_and_the_cluster_keeps_working(call: Call, error: type, match: str) -> None:
    _rejects(_cluster(), call, error, match)


def test_create_topic_none_used_to_break_every_later_metadata_request() -> None:
    c = _cluster()
    with pytest.raises(TypeError):
        c.create_topic(None)
    consumer = c.consumer()
    md = consumer.list_topics(timeout=5)
    assert None not in md.topics
    _still_works(c)


def test_create_topic_twice_is_topic_exists() -> None:
    exc = _rejects(_cluster(), lambda c: c.create_topic("t"), TopicExistsException, "'t' already exists")
    assert isinstance(exc, KafkaError)


def test_a_name_that_differs_only_by_dot_and_underscore_collides_with_an_existing_topic() -> None:
    c = _cluster()
    c.create_topic("orders.eu")
    _rejects(
        c, lambda c: c.create_topic("orders_eu"), InvalidTopicException, "collides with existing topic 'orders.eu'"
    )


def test_legal_names_are_accepted_up_to_249_characters() -> None:
    c = _cluster()
    for name in ("a" * 249, "A.b_c-9", "-", "_x", "x.."):
        c.create_topic(name, replication_factor=1)
        assert c.describe_partition(name, 0).leader in c.brokers
    _still_works(c)


def test_replication_factor_minus_one_is_the_broker_default_as_in_kafka() -> None:
    c = _cluster()
    c.create_topic("d", replication_factor=-1)
    assert len(c.describe_partition("d", 0).replicas) == 3


def test_manual_assignments_set_the_partition_count_and_replicas() -> None:
    c = _cluster()
    c.create_topic("m", assignments=[(2, 3), (3, 1)])
    assert c.describe_partition("m", 1).replicas == (3, 1)
    assert c.topics["m"] == 2


# -- Cluster() ----------------------------------------------------------------------------------

CLUSTER_CASES: list[tuple[str, dict[str, Any], type[BaseException], str]] = [
    ("seed str", {"seed": "7"}, TypeError, "seed must be an int"),
    ("seed float", {"seed": 1.5}, TypeError, "seed must be an int"),
    ("seed None", {"seed": None}, TypeError, "seed must be an int"),
    ("brokers str", {"brokers": "3"}, TypeError, "brokers must be an int"),
    ("brokers bool", {"brokers": True}, TypeError, "brokers must be an int"),
    ("brokers zero", {"brokers": 0}, ConfigError, "at least one broker"),
    ("brokers too many", {"brokers": 101}, ConfigError, "at most 100"),
    ("config str", {"config": "min.insync.replicas=2"}, TypeError, "config must be a dict"),
]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"), [c[1:] for c in CLUSTER_CASES], ids=[c[0] for c in CLUSTER_CASES]
)
def test_cluster_rejects_arguments_of_the_wrong_type_or_range(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        Cluster(**kwargs)


# -- clients and time ---------------------------------------------------------------------------

CLIENT_CASES: list[tuple[str, Call, type[BaseException], str]] = [
    ("producer config str", lambda c: c.producer("linger.ms=5"), TypeError, "producer config must be a dict"),
    ("consumer config list", lambda c: c.consumer(["group.id"]), TypeError, "consumer config must be a dict"),
    ("run_for negative", lambda c: c.run_for(-5), ValueError, r"run_for\(ms\) must be >= 0"),
    ("run_for float", lambda c: c.run_for(1.5), TypeError, r"run_for\(ms\) must be an int"),
    ("run_until not callable", lambda c: c.run_until(True), TypeError, "takes a function"),
    ("schedule_faults list", lambda c: c.schedule_faults([(100, "crash")]), TypeError, "takes a FaultPlan"),
]


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in CLIENT_CASES], ids=[c[0] for c in CLIENT_CASES])
def test_clients_and_time_reject_arguments_of_the_wrong_type(call: Call, error: type, match: str) -> None:
    _rejects(_cluster(), call, error, match)


# -- node faults --------------------------------------------------------------------------------

NODE_CASES: list[tuple[str, Call, type[BaseException], str]] = [
    ("crash unknown broker id", lambda c: c.crash(9), ValueError, "no broker 9.*brokers: 1, 2, 3"),
    ("crash unknown name", lambda c: c.crash("brokr-1"), ValueError, "no node 'brokr-1'.*did you mean 'broker-1'"),
    ("restart unknown", lambda c: c.restart(0), ValueError, "no broker 0"),
    ("pause unknown", lambda c: c.pause("broker-4"), ValueError, "no node 'broker-4'.*known nodes: .*broker-1"),
    ("resume unknown", lambda c: c.resume(12), ValueError, "no broker 12"),
    ("isolate unknown", lambda c: c.isolate(9), ValueError, "no broker 9"),
    ("partition unknown", lambda c: c.partition([1], [9]), ValueError, "no broker 9"),
    ("partition unknown name", lambda c: c.partition(["controller"], ["ghost"]), ValueError, "no node 'ghost'"),
    ("partition not lists", lambda c: c.partition(1, [2]), TypeError, "lists of broker ids or node names"),
    ("partition overlap", lambda c: c.partition([1, 2], [2, 3]), ValueError, "in both groups"),
    ("node bool", lambda c: c.crash(True), TypeError, "broker id .* or a node name"),
    ("node float", lambda c: c.pause(1.0), TypeError, "broker id .* or a node name"),
    ("rule unknown broker", lambda c: c.add_rule("drop", dst=9), ValueError, "no broker 9"),
    ("rule unknown field", lambda c: c.add_rule("drop", dest="broker-1"), TypeError, "unknown rule field 'dest'"),
    ("rule bad kind", lambda c: c.add_rule("drop", kind="req"), ValueError, "request, response, oneway"),
    ("rule bad count", lambda c: c.add_rule("drop", count=0), ValueError, "count"),
    ("rule bad action", lambda c: c.add_rule("explode"), ValueError, "drop, delay, hold, duplicate"),
]


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in NODE_CASES], ids=[c[0] for c in NODE_CASES])
def test_fault_helpers_reject_unknown_nodes_naming_the_known_ones(call: Call, error: type, match: str) -> None:
    _rejects(_cluster(), call, error, match)


def test_remove_rule_ends_one_rule_and_an_unknown_rule_id_is_a_value_error() -> None:
    c = _cluster()
    rule = c.add_rule("drop", body_type="ProduceRequest", count=None)
    c.remove_rule(rule)
    _still_works(c)
    with pytest.raises(ValueError, match="no message fault rule 99"):
        c.remove_rule(99)
    c.remove_rule(rule)  # a rule that existed and is gone already: nothing to do
    _still_works(c)


def test_release_delivers_held_messages_of_one_rule_and_unknown_ids_are_value_errors() -> None:
    c = _cluster()
    rule = c.add_rule("hold", body_type="ProduceRequest", count=1)
    p = c.producer({"linger.ms": 0})
    p.produce("t", value=b"held", partition=0)
    c.run_for(200)
    assert c.describe_partition("t", 0).high_watermark == 0  # the produce request is held
    with pytest.raises(ValueError, match="no message fault rule 42"):
        c.release(42)
    with pytest.raises(ValueError, match="no held message 123456"):
        c.release(msg_id=123456)
    released = c.release(rule)
    assert len(released) == 1
    assert p.flush(timeout=10) == 0
    assert c.describe_partition("t", 0).high_watermark == 1
    _still_works(c)


def test_heal_restarts_crashed_nodes_resumes_paused_ones_and_ends_every_network_fault() -> None:
    c = _cluster()
    c.crash(1)
    c.pause(2)
    c.isolate(3)
    c.add_rule("hold", body_type="FetchRequest", count=None)
    c.heal()
    assert {b.status for b in c.describe_brokers()} == {"up"}
    assert c.world.network.blocked == set()
    assert c.world.network.held == {}
    c.run_for(15_000)  # the restarted broker registers again and catches up
    _still_works(c)


# -- views and admin ----------------------------------------------------------------------------

VIEW_CASES: list[tuple[str, Call, type[BaseException], str]] = [
    (
        "describe_partition unknown topic",
        lambda c: c.describe_partition("nope", 0),
        UnknownTopicOrPartitionException,
        "no topic 'nope'.*topics: t",
    ),
    (
        "describe_partition unknown partition",
        lambda c: c.describe_partition("t", 5),
        UnknownTopicOrPartitionException,
        "partitions 0-1",
    ),
    ("describe_partition negative", lambda c: c.describe_partition("t", -1), ValueError, "partition must be >= 0"),
    (
        "describe_partition str partition",
        lambda c: c.describe_partition("t", "0"),
        TypeError,
        "partition must be an int",
    ),
    ("describe_partition topic None", lambda c: c.describe_partition(None), TypeError, "topic must be a str"),
    (
        "producer_state unknown topic",
        lambda c: c.producer_state("nope"),
        UnknownTopicOrPartitionException,
        "no topic 'nope'",
    ),
    ("producer_state unknown broker", lambda c: c.producer_state("t", 0, broker=9), ValueError, "no broker 9.*1, 2, 3"),
    ("dump_log unknown topic", lambda c: c.dump_log("nope"), UnknownTopicOrPartitionException, "no topic 'nope'"),
    ("dump_log unknown partition", lambda c: c.dump_log("t", 9), UnknownTopicOrPartitionException, "partitions 0-1"),
    ("dump_log unknown broker", lambda c: c.dump_log("t", 0, broker=9), ValueError, "no broker 9"),
    (
        "dump_txn_index unknown topic",
        lambda c: c.dump_txn_index("nope"),
        UnknownTopicOrPartitionException,
        "no topic 'nope'",
    ),
    ("dump_txn_index unknown broker", lambda c: c.dump_txn_index("t", 0, broker=9), ValueError, "no broker 9"),
    ("leader unknown topic", lambda c: c.leader("nope"), UnknownTopicOrPartitionException, "no topic 'nope'"),
    ("leader unknown partition", lambda c: c.leader("t", 2), UnknownTopicOrPartitionException, "partitions 0-1"),
    ("describe_group None", lambda c: c.describe_group(None), TypeError, "group id must be a str"),
    ("group_view None", lambda c: c.group_view(None), TypeError, "group id must be a str"),
    (
        "txn describe unknown id",
        lambda c: c.transactions().describe("nobody"),
        TransactionalIdNotFoundException,
        "'nobody'",
    ),
    ("txn describe None", lambda c: c.transactions().describe(None), TypeError, "transactional id must be a str"),
    (
        "admin describe unknown id",
        lambda c: c.admin().describe_transaction("nobody"),
        TransactionalIdNotFoundException,
        "'nobody'",
    ),
    (
        "txn describe-producers unknown",
        lambda c: c.transactions().describe_producers("nope"),
        UnknownTopicOrPartitionException,
        "no topic 'nope'",
    ),
    (
        "txn describe-producers broker",
        lambda c: c.transactions().describe_producers("t", 0, 9),
        ValueError,
        "no broker 9",
    ),
    (
        "txn find-hanging unknown topic",
        lambda c: c.transactions().find_hanging(topic="nope"),
        UnknownTopicOrPartitionException,
        "no topic 'nope'",
    ),
    (
        "txn find-hanging unknown partition",
        lambda c: c.transactions().find_hanging(topic="t", partition=7),
        UnknownTopicOrPartitionException,
        "partitions 0-1",
    ),
    (
        "txn find-hanging unknown broker",
        lambda c: c.transactions().find_hanging(broker_id=9),
        ValueError,
        "no broker 9",
    ),
    (
        "txn abort unknown topic",
        lambda c: c.transactions().abort("nope", 0, 0),
        UnknownTopicOrPartitionException,
        "no topic 'nope'",
    ),
    (
        "txn abort negative offset",
        lambda c: c.transactions().abort("t", 0, -1),
        ValueError,
        "start offset must be >= 0",
    ),
    ("txn list negative filter", lambda c: c.transactions().list(-5), ValueError, "duration filter must be >= 0"),
    ("dump_transaction_state int", lambda c: c.dump_transaction_state(5), TypeError, "transactional id must be a str"),
]


@pytest.mark.parametrize(("call", "error", "match"), [c[1:] for c in VIEW_CASES], ids=[c[0] for c in VIEW_CASES])
def test_views_of_unknown_things_raise_named_errors_saying_what_exists(call: Call, error: type, match: str) -> None:
    _rejects(_cluster(), call, error, match)


def test_a_view_of_a_partition_without_a_leader_says_which_replicas_to_ask() -> None:
    c = Cluster(seed=3, brokers=3)
    c.create_topic("solo", assignments=[(2,)])
    c.crash(2)
    c.run_for(12_000)  # fenced after broker.session.timeout.ms; the only replica is gone
    assert c.leader("solo", 0) == -1
    with pytest.raises(LeaderNotAvailableException, match="broker=2"):
        c.dump_log("solo", 0)
    assert "Dumping" in c.dump_log("solo", 0, broker=2)  # a crashed broker's disk is still readable
    with pytest.raises(LeaderNotAvailableException, match="broker=2"):
        c.producer_state("solo", 0)
    with pytest.raises(NotLeaderOrFollowerException, match="broker 1 hosts no replica of solo-0"):
        c.dump_log("solo", 0, broker=1)


def test_describe_of_a_transactional_id_whose_coordinator_is_down_is_coordinator_not_available() -> None:
    c = _cluster()
    p = c.producer({"transactional.id": "tx-down", "linger.ms": 0})
    p.init_transactions()
    c.transactions().describe("tx-down")
    coordinator = c.transactions().client.describe_transaction("tx-down").coordinator_id
    c.crash(coordinator)
    with pytest.raises(CoordinatorNotAvailableException, match=f"broker {coordinator}"):
        c.transactions().describe("tx-down")
