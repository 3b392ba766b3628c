"""The range assignor: Kafka's ``RangeAssignor`` arithmetic, per topic, members sorted by id.

Goal: the partitions a group's leader hands out are exactly the ones a real Kafka client would
compute, so a scenario's assignment can be checked against the Kafka docs by hand. Method: call
:func:`~engine.client.assignor.range_assign` on small subscriptions and compare whole results.
"""

from __future__ import annotations

from engine.client.assignor import range_assign


def test_four_partitions_two_members_get_two_consecutive_partitions_each() -> None:
    assert range_assign({"b": ["t"], "a": ["t"]}, {"t": 4}) == {"a": [("t", 0), ("t", 1)], "b": [("t", 2), ("t", 3)]}


def test_uneven_split_gives_the_extra_partitions_to_the_first_members_in_id_order() -> None:
    got = range_assign({"m1": ["t"], "m2": ["t"], "m3": ["t"]}, {"t": 5})
    assert got == {"m1": [("t", 0), ("t", 1)], "m2": [("t", 2), ("t", 3)], "m3": [("t", 4)]}


def test_more_members_than_partitions_leaves_the_last_members_empty() -> None:
    assert range_assign({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 2}) == {"a": [("t", 0)], "b": [("t", 1)], "c": []}


def test_each_topic_is_split_on_its_own_so_the_first_member_gets_the_extra_partition_of_every_topic() -> None:
    got = range_assign({"a": ["x", "y"], "b": ["x", "y"]}, {"x": 3, "y": 3})
    assert got == {"a": [("x", 0), ("x", 1), ("y", 0), ("y", 1)], "b": [("x", 2), ("y", 2)]}


def test_a_topic_only_some_members_subscribe_to_is_split_among_those_members() -> None:
    got = range_assign({"a": ["x"], "b": ["x", "y"]}, {"x": 2, "y": 2})
    assert got == {"a": [("x", 0)], "b": [("x", 1), ("y", 0), ("y", 1)]}


def test_a_topic_missing_from_the_metadata_is_skipped() -> None:
    assert range_assign({"a": ["t", "ghost"]}, {"t": 1}) == {"a": [("t", 0)]}
