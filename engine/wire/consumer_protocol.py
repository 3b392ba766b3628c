"""The consumer group protocol's payloads: subscriptions in JoinGroup, assignments in SyncGroup.

A consumer's JoinGroup carries its subscription as opaque protocol metadata (Kafka's
``ConsumerProtocolSubscription``), and the leader's SyncGroup hands each member an opaque assignment
(``ConsumerProtocolAssignment``). Kafka's broker never reads either: it stores the bytes and hands
them on. The gateway reads them into the engine's :class:`~engine.protocol.Subscription` and
:class:`~engine.protocol.Assignment`, every field (topics, user data, owned partitions v1+, the
generation id v2+, the rack id v3+), and keeps the exact bytes in ``raw``, so the leader gets each
member's metadata, and each member its assignment, exactly as they were sent. Each payload is an
``int16`` version, then the version's fields; kio, generated from Kafka's message definitions,
reads and writes the fields, and this module adds only the version prefix.

Role: the only place the engine reads or writes these payloads; only what an engine client made
(``raw`` None) is ever written here.

What is simplified: a version newer than kio knows (3) is read with version 3's layout and its
trailing fields are ignored, as Kafka's own consumer does (its ``raw`` bytes still go to the leader
whole). What an engine client made is written as version 3, the version Kafka 4.4's consumer and
librdkafka 2.16 write (an older subscription crashes librdkafka's cooperative-sticky leader).
"""

from __future__ import annotations

import io
import itertools
import struct
from typing import Any

from kio.schema.consumer_protocol_assignment.v3 import ConsumerProtocolAssignment as AssignmentV3
from kio.schema.consumer_protocol_assignment.v3.data import TopicPartition as AssignedTopic
from kio.schema.consumer_protocol_subscription.v0 import ConsumerProtocolSubscription
from kio.schema.consumer_protocol_subscription.v1 import ConsumerProtocolSubscription as SubscriptionV1
from kio.schema.consumer_protocol_subscription.v2 import ConsumerProtocolSubscription as SubscriptionV2
from kio.schema.consumer_protocol_subscription.v3 import ConsumerProtocolSubscription as SubscriptionV3
from kio.schema.consumer_protocol_subscription.v3.data import TopicPartition as OwnedV3
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import DecodeError
from kio.static.primitive import i32

from engine.protocol import Assignment, Subscription

__all__ = [
    "ConsumerProtocolError",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]


class ConsumerProtocolError(ValueError):
    """A subscription or assignment payload that does not parse."""


_VERSION = struct.Struct(">h")
_SUBSCRIPTION_READERS = [
    entity_reader(cls) for cls in (ConsumerProtocolSubscription, SubscriptionV1, SubscriptionV2, SubscriptionV3)
]
#: Assignments are laid out alike in versions 0 to 3.
_ASSIGNMENT_READER = entity_reader(AssignmentV3)
#: What this module writes: version 3, as Kafka 4.4's consumer (``ConsumerProtocol``) and librdkafka
#: 2.16 do. Not older: librdkafka 2.16's cooperative-sticky leader crashes (SIGSEGV in
#: ``rd_kafka_cgrp_assignor_run``) on a member subscription below version 2.
_WRITTEN_VERSION = 3
_write_subscription = entity_writer(SubscriptionV3)
_write_assignment = entity_writer(AssignmentV3)


def decode_subscription(data: bytes) -> Subscription:
    """Read a JoinGroup protocol's metadata (empty metadata: no topics); ``raw`` is ``data`` itself.

    Raises
    ------
    ConsumerProtocolError
        The payload is shorter than its fields, has a negative version, a null array, or a topic
        that is null or not UTF-8.
    """
    raw = bytes(data)
    if not raw:
        return Subscription((), raw=raw)
    version, entity = _read(raw, "subscription", _SUBSCRIPTION_READERS)
    owned: tuple[tuple[str, int], ...] = ()
    if version >= 1:
        owned = _pairs(entity.owned_partitions, "subscription", "owned partitions")
    return Subscription(
        tuple(_not_null(entity.topics, "subscription", "topics")),
        owned=owned,
        generation=int(entity.generation_id) if version >= 2 else -1,
        user_data=None if entity.user_data is None else bytes(entity.user_data),
        rack=entity.rack_id if version >= 3 else None,
        raw=raw,
    )


def encode_subscription(subscription: Subscription) -> bytes:
    """Return the subscription's ``raw`` bytes, or write it as version 3 (null rack when it has none)."""
    if subscription.raw is not None:
        return subscription.raw
    s = subscription
    entity = SubscriptionV3(
        topics=tuple(TopicName(t) for t in s.topics),
        user_data=s.user_data,
        owned_partitions=tuple(
            OwnedV3(topic=TopicName(topic), partitions=tuple(i32(p) for _, p in group))
            for topic, group in itertools.groupby(sorted(s.owned), key=lambda pair: pair[0])
        ),
        generation_id=i32(s.generation),
        rack_id=s.rack,
    )
    return _write(_WRITTEN_VERSION, _write_subscription, entity)


def decode_assignment(data: bytes) -> Assignment:
    """Read a SyncGroup assignment, partitions sorted (empty bytes: no partitions); ``raw`` is ``data``.

    Raises
    ------
    ConsumerProtocolError
        On a malformed payload, as :func:`decode_subscription` does.
    """
    raw = bytes(data)
    if not raw:
        return Assignment((), raw=raw)
    _, entity = _read(raw, "assignment", [_ASSIGNMENT_READER])
    return Assignment(
        _pairs(entity.assigned_partitions, "assignment", "assigned partitions"),
        user_data=None if entity.user_data is None else bytes(entity.user_data),
        raw=raw,
    )


def encode_assignment(assignment: Assignment) -> bytes:
    """Return the assignment's ``raw`` bytes, or write it as version 3, topics and partitions sorted."""
    if assignment.raw is not None:
        return assignment.raw
    topics = tuple(
        AssignedTopic(topic=TopicName(topic), partitions=tuple(i32(p) for _, p in group))
        for topic, group in itertools.groupby(sorted(assignment.partitions), key=lambda pair: pair[0])
    )
    entity = AssignmentV3(assigned_partitions=topics, user_data=assignment.user_data)
    return _write(_WRITTEN_VERSION, _write_assignment, entity)


def _pairs(topics: Any, what: str, field: str) -> tuple[tuple[str, int], ...]:
    """Return the sorted (topic, partition) pairs of a payload's topic-partitions array."""
    return tuple(
        sorted(
            (str(t.topic), int(p))
            for t in _not_null(topics, what, field)
            for p in _not_null(t.partitions, what, f"partitions of {t.topic!r}")
        )
    )


def _read(data: bytes, what: str, readers: list[Any]) -> tuple[int, Any]:
    """Read the version prefix and the entity after it (the newest reader for newer versions)."""
    buf = bytes(data)
    if len(buf) < _VERSION.size:
        msg = f"consumer protocol {what} of {len(buf)} byte(s) is too short for its version"
        raise ConsumerProtocolError(msg)
    (version,) = _VERSION.unpack_from(buf)
    if version < 0:
        msg = f"consumer protocol {what} has negative version {version}"
        raise ConsumerProtocolError(msg)
    try:
        entity, _ = readers[min(version, len(readers) - 1)](buf, _VERSION.size)
    except (DecodeError, ValueError) as e:
        msg = f"consumer protocol {what} v{version} does not parse: {type(e).__name__}: {e}"
        raise ConsumerProtocolError(msg) from None
    return version, entity


def _not_null(array: Any, what: str, field: str) -> Any:
    """Return an array the payload read, refusing null (length -1) where Kafka's schema does not allow it."""
    if array is None:
        msg = f"consumer protocol {what} has a null array of {field}"
        raise ConsumerProtocolError(msg)
    return array


def _write(version: int, writer: Any, entity: Any) -> bytes:
    """Return the version prefix and the entity written by ``writer``."""
    buf = io.BytesIO()
    buf.write(_VERSION.pack(version))
    writer(buf, entity)
    return buf.getvalue()
