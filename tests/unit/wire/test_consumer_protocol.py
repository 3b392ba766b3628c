"""The consumer protocol's payloads: ``engine.wire.consumer_protocol`` against kafka-python's own.

kafka-python's ``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment`` (the classes its
consumer puts in JoinGroup and SyncGroup) are the oracle: what they write in every version must
decode to the same topics or (topic, partition) pairs, and what the module writes must be read back
by them. Newer versions' trailing fields and empty payloads are tolerated; short, null or
undecodable payloads raise ``ConsumerProtocolError`` with one line.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from engine.wire.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

PROFILE = settings(derandomize=True, max_examples=100, deadline=None)


def _kafka_python_subscription(version: int, topics: list[str]) -> bytes:
    """Return what kafka-python writes as a subscription of this version, every field filled."""
    return ConsumerProtocolSubscription(
        version=version,
        topics=topics,
        user_data=b"sticky-state",
        owned_partitions=[("orders", [0, 2])],
        generation_id=6,
        rack_id="rack-a",
    ).encode()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_a_subscription_of_every_version_decodes_to_its_topics_in_order(version: int) -> None:
    data = _kafka_python_subscription(version, ["payments", "orders"])
    assert decode_subscription(data) == ("payments", "orders")


def test_a_subscription_of_a_newer_version_with_more_fields_decodes_to_its_topics() -> None:
    v3 = _kafka_python_subscription(3, ["orders"])
    v4 = b"\x00\x04" + v3[2:] + b"\x00\x00\x00\x2a fields of v4"
    assert decode_subscription(v4) == ("orders",)


def test_empty_metadata_decodes_to_no_topics_and_an_empty_assignment_to_no_partitions() -> None:
    assert decode_subscription(b"") == ()
    assert decode_assignment(b"") == ()


def test_an_encoded_subscription_is_version_0_with_the_topics_kafka_python_reads() -> None:
    data = encode_subscription(["b", "a"])
    read = ConsumerProtocolSubscription.decode(data)
    assert data[:2] == b"\x00\x00"
    assert list(read.topics) == ["b", "a"]
    assert read.user_data is None


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_an_assignment_of_every_version_decodes_to_sorted_topic_partition_pairs(version: int) -> None:
    data = ConsumerProtocolAssignment(
        version=version, assigned_partitions=[("t", [3, 0]), ("s", [1])], user_data=b"u"
    ).encode()
    assert decode_assignment(data) == (("s", 1), ("t", 0), ("t", 3))


def test_an_encoded_assignment_groups_partitions_by_topic_for_kafka_python() -> None:
    data = encode_assignment([("t", 2), ("s", 5), ("t", 0)])
    read = ConsumerProtocolAssignment.decode(data)
    assert data[:2] == b"\x00\x00"
    assert [(tp.topic, list(tp.partitions)) for tp in read.assigned_partitions] == [("s", [5]), ("t", [0, 2])]
    assert read.user_data is None


def test_an_empty_assignment_encodes_to_no_partitions() -> None:
    data = encode_assignment([])
    assert ConsumerProtocolAssignment.decode(data).assigned_partitions == []
    assert decode_assignment(data) == ()


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"\x00", "too short"),
        (b"\xff\xff\x00\x00\x00\x00", "negative version -1"),
        (b"\x00\x00\x00\x00\x00\x02\x00\x01a", "BufferUnderflow"),
        (b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff", "null array"),
        (b"\x00\x00\xff\xff\xff\xfe", "negative array length"),
        (b"\x00\x00\x00\x00\x00\x01\xff\xff", "UnexpectedNull"),
        (b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe", "InvalidUnicode"),
    ],
    ids=["short", "negative-version", "cut", "null-topics", "negative-length", "null-topic", "bad-utf8"],
)
def test_a_malformed_subscription_or_assignment_raises_a_one_line_protocol_error(data: bytes, match: str) -> None:
    for decode, what in ((decode_subscription, "subscription"), (decode_assignment, "assignment")):
        with pytest.raises(ConsumerProtocolError, match=match) as caught:
            decode(data)
        assert what in str(caught.value)
        assert "\n" not in str(caught.value)
    assert issubclass(ConsumerProtocolError, ValueError)


def test_an_assignment_with_a_null_partition_array_is_a_protocol_error() -> None:
    data = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff\xff\xff\xff\xff"
    with pytest.raises(ConsumerProtocolError, match="null array of partitions of 't'"):
        decode_assignment(data)


topic_names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20)


@PROFILE
@given(topics=st.lists(topic_names, max_size=10))
def test_any_topic_list_round_trips_through_a_subscription(topics: list[str]) -> None:
    assert decode_subscription(encode_subscription(topics)) == tuple(topics)
    assert list(ConsumerProtocolSubscription.decode(encode_subscription(topics)).topics) == topics


@PROFILE
@given(pairs=st.sets(st.tuples(topic_names, st.integers(0, 2**31 - 1)), max_size=30))
def test_any_set_of_partitions_round_trips_through_an_assignment(pairs: set[tuple[str, int]]) -> None:
    data = encode_assignment(pairs)
    assert decode_assignment(data) == tuple(sorted(pairs))
    assert sorted(
        (tp.topic, p) for tp in ConsumerProtocolAssignment.decode(data).assigned_partitions for p in tp.partitions
    ) == sorted(pairs)
