"""Kafka's ``RoundRobinAssignorTest`` against :mod:`engine.client.roundrobin_assignor`.

Goal: the engine's round-robin assignor deals partitions as Kafka's ``RoundRobinAssignor`` does,
static members by instance id first. Method: each test follows the Kafka test of the same name
(apache/kafka ``clients/src/test/java/org/apache/kafka/clients/consumer/RoundRobinAssignorTest.java``)
with its inputs and expected assignments.
"""

from __future__ import annotations

from engine.client.roundrobin_assignor import roundrobin_assign

T1, T2 = "topic1", "topic2"


def test_one_consumer_no_topic() -> None:
    assert roundrobin_assign({"c": []}, {}) == {"c": []}


def test_one_consumer_nonexistent_topic() -> None:
    assert roundrobin_assign({"c": [T1]}, {T2: 1}) == {"c": []}


def test_one_consumer_one_topic() -> None:
    assert roundrobin_assign({"c": [T1]}, {T1: 3}) == {"c": [(T1, 0), (T1, 1), (T1, 2)]}


def test_only_assigns_partitions_from_subscribed_topics() -> None:
    assert roundrobin_assign({"c": [T1]}, {T1: 3, "other": 3}) == {"c": [(T1, 0), (T1, 1), (T1, 2)]}


def test_one_consumer_multiple_topics() -> None:
    assert roundrobin_assign({"c": [T1, T2]}, {T1: 1, T2: 2}) == {"c": [(T1, 0), (T2, 0), (T2, 1)]}


def test_two_consumers_one_topic_one_partition() -> None:
    assert roundrobin_assign({"c1": [T1], "c2": [T1]}, {T1: 1}) == {"c1": [(T1, 0)], "c2": []}


def test_two_consumers_one_topic_two_partitions() -> None:
    assert roundrobin_assign({"c1": [T1], "c2": [T1]}, {T1: 2}) == {"c1": [(T1, 0)], "c2": [(T1, 1)]}


def test_multiple_consumers_mixed_topics() -> None:
    got = roundrobin_assign({"consumer1": [T1], "consumer2": [T1, T2], "consumer3": [T1]}, {T1: 3, T2: 2})
    assert got == {"consumer1": [(T1, 0)], "consumer2": [(T1, 1), (T2, 0), (T2, 1)], "consumer3": [(T1, 2)]}


def test_two_dynamic_consumers_two_topics_six_partitions() -> None:
    got = roundrobin_assign({"consumer1": [T1, T2], "consumer2": [T1, T2]}, {T1: 3, T2: 3})
    assert got == {"consumer1": [(T1, 0), (T1, 2), (T2, 1)], "consumer2": [(T1, 1), (T2, 0), (T2, 2)]}


def test_two_static_consumers_two_topics_six_partitions() -> None:
    # consumer-a sorts first by member id, but instance ids decide.
    subs = {"consumer-b": [T1, T2], "consumer-a": [T1, T2]}
    got = roundrobin_assign(subs, {T1: 3, T2: 3}, {"consumer-b": "instance1", "consumer-a": "instance2"})
    assert got == {"consumer-b": [(T1, 0), (T1, 2), (T2, 1)], "consumer-a": [(T1, 1), (T2, 0), (T2, 2)]}


def test_one_static_consumer_and_one_dynamic_consumer_two_topics_six_partitions() -> None:
    subs = {"consumer-b": [T1, T2], "consumer-a": [T1, T2]}
    got = roundrobin_assign(subs, {T1: 3, T2: 3}, {"consumer-b": "instance1"})
    assert got == {"consumer-b": [(T1, 0), (T1, 2), (T2, 1)], "consumer-a": [(T1, 1), (T2, 0), (T2, 2)]}


def test_static_member_round_robin_assignment_persistent() -> None:
    static = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    subs = {m: [T1, T2] for m in [*static, "consumer4"]}
    expected = {
        "consumer1": [(T1, 0), (T2, 1)],
        "consumer2": [(T1, 1), (T2, 2)],
        "consumer3": [(T1, 2)],
        "consumer4": [(T2, 0)],
    }
    assert roundrobin_assign(subs, {T1: 3, T2: 3}, static) == expected
    del subs["consumer4"]
    subs["consumer5"] = [T1, T2]
    expected["consumer5"] = expected.pop("consumer4")
    assert roundrobin_assign(subs, {T1: 3, T2: 3}, static) == expected


def test_static_member_round_robin_assignment_persistent_after_member_id_changes() -> None:
    by_instance = {
        "instance1": [(T1, 0), (T1, 3), (T2, 1), (T2, 4)],
        "instance2": [(T1, 1), (T1, 4), (T2, 2)],
        "instance3": [(T1, 2), (T2, 0), (T2, 3)],
    }
    for ids in (
        {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"},
        {"consumer4": "instance1", "consumer5": "instance2", "consumer6": "instance3"},
        {"z": "instance1", "y": "instance2", "x": "instance3"},
    ):
        got = roundrobin_assign({m: [T1, T2] for m in ids}, {T1: 5, T2: 5}, ids)
        assert {ids[m]: tps for m, tps in got.items()} == by_instance
