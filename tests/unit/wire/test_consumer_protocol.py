"""The consumer protocol's payloads: ``engine.wire.consumer_protocol`` against kafka-python's own.

kafka-python's ``ConsumerProtocolSubscription`` and ``ConsumerProtocolAssignment`` (the classes its
consumer puts in JoinGroup and SyncGroup) are the oracle: what they write in every version must
decode to the same fields (topics, owned partitions, generation, user data, rack; (topic, partition)
pairs and user data), with the exact bytes kept as ``raw``, and what the module writes must be read
back by them. Newer versions' trailing fields and empty payloads are tolerated; short, null or
undecodable payloads raise ``ConsumerProtocolError`` with one line.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from engine.protocol import Assignment, Subscription
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
    assert decode_subscription(data).topics == ("payments", "orders")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_a_subscription_decodes_every_field_its_version_has_and_keeps_its_bytes(version: int) -> None:
    data = _kafka_python_subscription(version, ["orders"])
    assert decode_subscription(data) == Subscription(
        ("orders",),
        owned=(("orders", 0), ("orders", 2)) if version >= 1 else (),
        generation=6 if version >= 2 else -1,
        user_data=b"sticky-state",
        rack="rack-a" if version >= 3 else None,
        raw=data,
    )


@pytest.mark.parametrize(
    "subscription",
    [
        Subscription(("t",)),
        Subscription(("t",), user_data=b"u", owned=(("t", 1), ("t", 0)), generation=4),
        Subscription(("t",), generation=4, rack="r"),
    ],
)
def test_an_engine_subscription_is_written_as_version_3_with_every_field(subscription: Subscription) -> None:
    # version 3, as Kafka 4.4's consumer and librdkafka 2.16 write: below version 2 librdkafka's
    # cooperative-sticky leader crashes (SIGSEGV), which the gateway's old version-0 rewrite did
    data = encode_subscription(subscription)
    assert data[:2] == b"\x00\x03"
    read = ConsumerProtocolSubscription.decode(data)
    assert (list(read.topics), read.user_data, read.generation_id, read.rack_id) == (
        ["t"],
        subscription.user_data,
        subscription.generation,
        subscription.rack,
    )
    assert decode_subscription(data) == dataclasses.replace(
        subscription, owned=tuple(sorted(subscription.owned)), raw=data
    )


def test_a_subscription_or_assignment_with_raw_bytes_is_written_as_those_bytes() -> None:
    assert encode_subscription(Subscription(("t",), raw=b"\x00\x09anything")) == b"\x00\x09anything"
    assert encode_assignment(Assignment((("t", 0),), raw=b"")) == b""


def test_a_subscription_of_a_newer_version_with_more_fields_decodes_to_its_topics() -> None:
    v3 = _kafka_python_subscription(3, ["orders"])
    v4 = b"\x00\x04" + v3[2:] + b"\x00\x00\x00\x2a fields of v4"
    assert decode_subscription(v4).topics == ("orders",)
    assert decode_subscription(v4).raw == v4


def test_empty_metadata_decodes_to_no_topics_and_an_empty_assignment_to_no_partitions() -> None:
    assert decode_subscription(b"") == Subscription((), raw=b"")
    assert decode_assignment(b"") == Assignment((), raw=b"")


def test_an_encoded_subscription_has_the_topics_kafka_python_reads_in_order() -> None:
    data = encode_subscription(Subscription(("b", "a")))
    read = ConsumerProtocolSubscription.decode(data)
    assert list(read.topics) == ["b", "a"]
    assert (read.user_data, list(read.owned_partitions), read.generation_id) == (None, [], -1)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_an_assignment_of_every_version_decodes_to_sorted_topic_partition_pairs(version: int) -> None:
    data = ConsumerProtocolAssignment(
        version=version, assigned_partitions=[("t", [3, 0]), ("s", [1])], user_data=b"u"
    ).encode()
    assert decode_assignment(data) == Assignment((("s", 1), ("t", 0), ("t", 3)), user_data=b"u", raw=data)


def test_an_encoded_assignment_groups_partitions_by_topic_for_kafka_python() -> None:
    data = encode_assignment(Assignment((("t", 2), ("s", 5), ("t", 0))))
    read = ConsumerProtocolAssignment.decode(data)
    assert data[:2] == b"\x00\x03"
    assert [(tp.topic, list(tp.partitions)) for tp in read.assigned_partitions] == [("s", [5]), ("t", [0, 2])]
    assert read.user_data is None


def test_an_empty_assignment_encodes_to_no_partitions() -> None:
    data = encode_assignment(Assignment())
    assert ConsumerProtocolAssignment.decode(data).assigned_partitions == []
    assert decode_assignment(data).partitions == ()


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
    data = encode_subscription(Subscription(tuple(topics)))
    assert decode_subscription(data).topics == tuple(topics)
    assert list(ConsumerProtocolSubscription.decode(data).topics) == topics


@PROFILE
@given(pairs=st.sets(st.tuples(topic_names, st.integers(0, 2**31 - 1)), max_size=30))
def test_any_set_of_partitions_round_trips_through_an_assignment(pairs: set[tuple[str, int]]) -> None:
    data = encode_assignment(Assignment(tuple(pairs)))
    assert decode_assignment(data).partitions == tuple(sorted(pairs))
    assert sorted(
        (tp.topic, p) for tp in ConsumerProtocolAssignment.decode(data).assigned_partitions for p in tp.partitions
    ) == sorted(pairs)
