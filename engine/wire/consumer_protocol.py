"""The consumer group protocol's payloads: subscriptions in JoinGroup, assignments in SyncGroup.

A consumer's JoinGroup carries its subscription as opaque protocol metadata (Kafka's
``ConsumerProtocolSubscription``), and the leader's SyncGroup hands each member an opaque assignment
(``ConsumerProtocolAssignment``); the broker never reads either, but the gateway must, because the
engine's group coordinator works with topic names and (topic, partition) pairs. Each payload is an
``int16`` version, then the version's fields; kio, generated from Kafka's message definitions,
reads and writes the fields, and this module adds only the version prefix.

What is simplified: only the topics of a subscription and the partitions of an assignment are
returned; user data, owned partitions (v1+), the generation id (v2+) and the rack id (v3+) are read
past. A version newer than kio knows (3) is read with version 3's layout and its trailing fields are
ignored, as Kafka's own consumer does. What this module writes is always version 0, with null user
data, which every client reads.
"""

from __future__ import annotations

import io
import itertools
import struct
from collections.abc import Iterable
from typing import Any

from kio.schema.consumer_protocol_assignment.v0 import ConsumerProtocolAssignment
from kio.schema.consumer_protocol_assignment.v0.data import TopicPartition as AssignedTopic
from kio.schema.consumer_protocol_assignment.v3 import ConsumerProtocolAssignment as AssignmentV3
from kio.schema.consumer_protocol_subscription.v0 import ConsumerProtocolSubscription
from kio.schema.consumer_protocol_subscription.v1 import ConsumerProtocolSubscription as SubscriptionV1
from kio.schema.consumer_protocol_subscription.v2 import ConsumerProtocolSubscription as SubscriptionV2
from kio.schema.consumer_protocol_subscription.v3 import ConsumerProtocolSubscription as SubscriptionV3
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import DecodeError

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
_write_subscription = entity_writer(ConsumerProtocolSubscription)
_write_assignment = entity_writer(ConsumerProtocolAssignment)


def decode_subscription(data: bytes) -> tuple[str, ...]:
    """Return the topics of a JoinGroup member's subscription (``()`` for empty metadata).

    Raises
    ------
    ConsumerProtocolError
        The payload is shorter than its fields, has a negative version, a null array, or a topic
        that is null or not UTF-8.
    """
    if not data:
        return ()
    _, entity = _read(data, "subscription", _SUBSCRIPTION_READERS)
    return tuple(_not_null(entity.topics, "subscription", "topics"))


def encode_subscription(topics: Iterable[str]) -> bytes:
    """Return a version-0 subscription of ``topics``, in the order given, with null user data."""
    entity = ConsumerProtocolSubscription(topics=tuple(topics), user_data=None)
    return _write(0, _write_subscription, entity)


def decode_assignment(data: bytes) -> tuple[tuple[str, int], ...]:
    """Return the (topic, partition) pairs of a SyncGroup assignment, sorted (``()`` for empty bytes).

    Raises
    ------
    ConsumerProtocolError
        On a malformed payload, as :func:`decode_subscription` does.
    """
    if not data:
        return ()
    _, entity = _read(data, "assignment", [_ASSIGNMENT_READER])
    return tuple(
        sorted(
            (str(t.topic), int(p))
            for t in _not_null(entity.assigned_partitions, "assignment", "assigned partitions")
            for p in _not_null(t.partitions, "assignment", f"partitions of {t.topic!r}")
        )
    )


def encode_assignment(pairs: Iterable[tuple[str, int]]) -> bytes:
    """Return a version-0 assignment of (topic, partition) pairs, topics and partitions sorted, null user data."""
    topics = tuple(
        AssignedTopic(topic=TopicName(topic), partitions=tuple(p for _, p in group))
        for topic, group in itertools.groupby(sorted(pairs), key=lambda pair: pair[0])
    )
    return _write(0, _write_assignment, ConsumerProtocolAssignment(assigned_partitions=topics, user_data=None))


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
