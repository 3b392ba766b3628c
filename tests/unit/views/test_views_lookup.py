"""Name checks of ``engine.views.lookup``: Kafka's topic-name rules, argument types, what exists.

Goal: the rules every public entry point relies on are Kafka's own (``Topic.validate``, the
internal topics, the '.'/'_' collision) and each refusal names what is wrong and what exists.
Method: call the pure checks directly with legal and illegal names, and the cluster lookups on
a small real cluster.
"""

from __future__ import annotations

import pytest

from engine import Cluster
from engine.errors import (
    InvalidTopicException,
    LeaderNotAvailableException,
    NotLeaderOrFollowerException,
    TopicExistsException,
    UnknownTopicOrPartitionException,
)
from engine.views import lookup


@pytest.mark.parametrize("name", ["a", "A-b_c.9", "-", "_", "x" * 249, "..a", "a.."])
def test_a_legal_topic_name_has_no_problem(name: str) -> None:
    assert lookup.topic_name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "phrase"),
    [
        ("", "can't be empty"),
        (".", '"." or ".."'),
        ("..", '"." or ".."'),
        ("x" * 250, "longer than 249"),
        ("a b", "ASCII alphanumerics"),
        ("a/b", "ASCII alphanumerics"),
        ("a:b", "ASCII alphanumerics"),
        ("ü", "ASCII alphanumerics"),
    ],
)
def test_an_illegal_topic_name_is_refused_with_kafkas_reason(name: str, phrase: str) -> None:
    problem = lookup.topic_name_problem(name)
    assert problem is not None
    assert phrase in problem
    with pytest.raises(InvalidTopicException):
        lookup.check_new_topic(name, {})


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state"])
def test_an_internal_topic_name_is_reserved_for_the_cluster(name: str) -> None:
    with pytest.raises(InvalidTopicException, match="internal topic"):
        lookup.check_new_topic(name, {})


def test_a_new_topic_that_exists_or_collides_on_dot_and_underscore_is_refused() -> None:
    existing = {"a.b": 1}
    with pytest.raises(TopicExistsException, match=r"'a\.b' already exists"):
        lookup.check_new_topic("a.b", existing)
    with pytest.raises(InvalidTopicException, match=r"collides with existing topic 'a\.b'"):
        lookup.check_new_topic("a_b", existing)
    assert lookup.check_new_topic("a-b", existing) == "a-b"
    with pytest.raises(InvalidTopicException, match="collides with existing topic '__consumer_offsets'"):
        lookup.check_new_topic("__consumer.offsets", {})


@pytest.mark.parametrize("value", [None, 3, b"t", ["t"]])
def test_a_topic_name_that_is_not_a_str_is_a_type_error(value: object) -> None:
    with pytest.raises(TypeError, match="topic name must be a str"):
        lookup.check_new_topic(value, {})


def test_cluster_lookups_name_what_exists() -> None:
    c = Cluster(seed=1, brokers=3)
    c.create_topic("t", partitions=2, replication_factor=2)
    assert lookup.require_partition(c, "t", 1).partition == 1
    assert lookup.require_topic(c, "t") == 2
    with pytest.raises(UnknownTopicOrPartitionException, match="no topic 'u' in the cluster; topics: t"):
        lookup.require_partition(c, "u", 0)
    with pytest.raises(UnknownTopicOrPartitionException, match="has partitions 0-1"):
        lookup.require_partition(c, "t", 2)
    with pytest.raises(ValueError, match="no broker 4; brokers: 1, 2, 3"):
        lookup.require_broker(c, 4)
    assert lookup.node_name(c, 2) == "broker-2"
    assert lookup.node_name(c, "controller") == "controller"
    with pytest.raises(ValueError, match="did you mean 'controller'"):
        lookup.node_name(c, "controler")
    with pytest.raises(TypeError, match="a node is a broker id"):
        lookup.node_name(c, 2.0)


def test_a_view_of_a_replica_names_the_replicas_when_there_is_no_leader_or_the_broker_has_none() -> None:
    c = Cluster(seed=1, brokers=3)
    c.create_topic("t", assignments=[(1, 2)])
    outsider = 3
    with pytest.raises(NotLeaderOrFollowerException, match=r"broker 3 hosts no replica of t-0; .* brokers 1, 2"):
        lookup.hosting_broker(c, "t", 0, outsider)
    assert lookup.hosting_broker(c, "t", 0, None) == c.leader("t", 0)
    c.crash(1)
    c.crash(2)
    c.run_for(12_000)
    with pytest.raises(LeaderNotAvailableException, match="broker=1, broker=2"):
        lookup.hosting_broker(c, "t", 0, None)
