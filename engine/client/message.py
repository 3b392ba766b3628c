"""Client-side values shaped like confluent-kafka's ``Message`` and ``TopicPartition``, and their checks.

confluent-kafka exposes message fields as methods (``msg.value()``, ``msg.offset()``), so the
simulated clients do too: code written against them reads like code for real Kafka. A ``Message``
with ``error()`` set is an *error event* (offset -1001, no key or value), as confluent-kafka's
consumer returns them from ``poll``/``consume``.

The ``*_arg`` / ``*_wait_ms`` functions check what an application passes to the consumer (lists of
partitions, offsets, topic names, timeouts): a malformed argument is a ``TypeError`` (wrong shape
or type) or ``ValueError`` (a value out of range) whose message names the call and what to pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.errors import KafkaError

#: confluent-kafka's logical offsets (``confluent_kafka.OFFSET_*``).
OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001
LOGICAL_OFFSETS = (OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, OFFSET_INVALID)


class TopicPartition:
    """A topic, a partition and optionally an offset (confluent-kafka's ``TopicPartition``)."""

    __slots__ = ("error", "offset", "partition", "topic")

    def __init__(
        self, topic: str, partition: int = -1, offset: int = OFFSET_INVALID, error: KafkaError | None = None
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.error = error

    def key(self) -> tuple[str, int]:
        """Return ``(topic, partition)``."""
        return (self.topic, self.partition)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicPartition) and (self.topic, self.partition, self.offset) == (
            other.topic,
            other.partition,
            other.offset,
        )

    def __hash__(self) -> int:
        return hash((self.topic, self.partition, self.offset))

    def __repr__(self) -> str:
        return f"TopicPartition(topic={self.topic!r}, partition={self.partition}, offset={self.offset})"


class Message:
    """One record as a client sees it: delivered by a producer or returned by ``poll``.

    confluent-kafka's ``Message``; not the simulated network's envelope of a send
    (:class:`engine.sim.network.Message`), which only shares the name.
    """

    __slots__ = (
        "_error",
        "_headers",
        "_key",
        "_leader_epoch",
        "_offset",
        "_partition",
        "_timestamp",
        "_topic",
        "_value",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: Any,
        value: Any,
        *,
        headers: Any = None,
        timestamp: int = -1,
        error: KafkaError | None = None,
        leader_epoch: int = -1,
    ) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._headers = headers
        self._timestamp = timestamp
        self._error = error
        self._leader_epoch = leader_epoch

    def topic(self) -> str:
        """Return the topic."""
        return self._topic

    def partition(self) -> int:
        """Return the partition."""
        return self._partition

    def offset(self) -> int:
        """Return the offset (-1 when unknown, e.g. a failed delivery)."""
        return self._offset

    def key(self) -> Any:
        """Return the key."""
        return self._key

    def value(self) -> Any:
        """Return the value."""
        return self._value

    def headers(self) -> Any:
        """Return the headers."""
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        """Return ``(TIMESTAMP_CREATE_TIME, ms)`` as confluent-kafka does (type 1)."""
        return (1, self._timestamp)

    def error(self) -> KafkaError | None:
        """Return the delivery or fetch error, or None."""
        return self._error

    def leader_epoch(self) -> int:
        """Return the partition leader epoch the record was written in."""
        return self._leader_epoch

    def __repr__(self) -> str:
        err = f", error={self._error!r}" if self._error else ""
        return f"Message({self._topic}-{self._partition}@{self._offset}, key={self._key!r}, value={self._value!r}{err})"


# -- checking what an application passes ----------------------------------------------------------


def _usage(what: str) -> str:
    example = "[TopicPartition('t', 0)] or [('t', 0)]"
    return f"{what} takes a list of TopicPartition or (topic, partition) pairs, e.g. {example}"


def partition_arg(p: Any, what: str) -> TopicPartition:
    """Return a checked copy of one partition given to ``what`` (a TopicPartition or a pair).

    Raises TypeError for a wrong shape or type, ValueError for an empty topic, a negative
    partition or an offset that is neither >= 0 nor one of the logical offsets.
    """
    if isinstance(p, TopicPartition):
        topic, partition, offset = p.topic, p.partition, p.offset
    elif isinstance(p, (tuple, list)) and len(p) == 2:
        (topic, partition), offset = p, OFFSET_INVALID
    else:
        msg = f"{what} takes TopicPartition objects or (topic, partition) pairs; got {p!r}"
        raise TypeError(msg)
    if not isinstance(topic, str):
        msg = f"{what}: topic must be a non-empty str, got {topic!r} in {p!r}"
        raise TypeError(msg)
    if not topic:
        msg = f"{what}: topic must be a non-empty str, got '' in {p!r}"
        raise ValueError(msg)
    if isinstance(partition, bool) or not isinstance(partition, int):
        msg = f"{what}: partition must be an int, got {partition!r} in {p!r}"
        raise TypeError(msg)
    if partition < 0:
        msg = f"{what}: partition must be >= 0, got {partition} in {p!r} (give TopicPartition a partition)"
        raise ValueError(msg)
    if isinstance(offset, bool) or not isinstance(offset, int):
        msg = f"{what}: offset must be an int, got {offset!r} in {p!r}"
        raise TypeError(msg)
    if offset < 0 and offset not in LOGICAL_OFFSETS:
        msg = (
            f"{what}: {topic}-{partition} has offset {offset}; use an offset >= 0, OFFSET_BEGINNING (-2), "
            "OFFSET_END (-1), OFFSET_STORED (-1000) or OFFSET_INVALID (-1001, the default)"
        )
        raise ValueError(msg)
    return TopicPartition(topic, partition, offset)


def partition_list(partitions: Any, what: str) -> list[TopicPartition]:
    """Return checked copies of a list of partitions given to ``what``; refuse duplicates."""
    if isinstance(partitions, TopicPartition) or (
        isinstance(partitions, tuple) and len(partitions) == 2 and isinstance(partitions[0], str)
    ):
        msg = f"{what} takes a list of partitions; wrap it in a list: [{partitions!r}]"
        raise TypeError(msg)
    if isinstance(partitions, (str, bytes, Mapping)) or not isinstance(partitions, Iterable):
        msg = f"{_usage(what)}; got {partitions!r}"
        raise TypeError(msg)
    out: list[TopicPartition] = []
    seen: set[tuple[str, int]] = set()
    for p in partitions:
        tp = partition_arg(p, what)
        if tp.key() in seen:
            msg = f"{what} got {tp.topic}-{tp.partition} twice; list each partition once"
            raise ValueError(msg)
        seen.add(tp.key())
        out.append(tp)
    return out


def topic_names_arg(topics: Any, action: str) -> tuple[str, ...]:
    """Return the sorted distinct topic names of a subscription; refuse a bare str or non-str names."""
    if isinstance(topics, str):
        msg = f"{action} takes a list of topic names; wrap it in a list: [{topics!r}]"
        raise TypeError(msg)
    if isinstance(topics, (bytes, Mapping)) or not isinstance(topics, Iterable):
        msg = f"{action} takes a list of topic names, e.g. ['orders'], got {topics!r}"
        raise TypeError(msg)
    names = list(topics)
    for t in names:
        if not isinstance(t, str) or not t:
            msg = f"{action}: topic names must be non-empty str, got {t!r}"
            raise TypeError(msg)
    return tuple(sorted(set(names)))


def offsets_arg(message: Any, offsets: Any, action: str, *, strict: bool) -> tuple[tuple[str, int, int], ...]:
    """Check the ``message``/``offsets`` arguments of commit() and store_offsets(); return the triples.

    ``strict`` (store_offsets): every offset must be >= 0; otherwise negative ones are skipped,
    as librdkafka skips invalid offsets in a commit.
    """
    if message is not None and offsets is not None:
        msg = f"{action} takes a message or offsets, not both"
        raise ValueError(msg)
    if message is not None:
        if not isinstance(message, Message):
            msg = f"{action}: message must be a Message returned by poll() or consume(), got {message!r}"
            raise TypeError(msg)
        if message.error() is not None or message.offset() < 0:
            msg = f"{action}: {message!r} is an error event, not a record; it has no offset to commit"
            raise ValueError(msg)
        return ((message.topic(), message.partition(), message.offset() + 1),)
    if offsets is None:
        msg = f"{action} needs a message or offsets"
        raise ValueError(msg)
    usage = f"{action}: offsets must be a list of TopicPartition(topic, partition, offset)"
    if isinstance(offsets, (str, bytes, TopicPartition)) or not isinstance(offsets, (list, tuple)):
        raise TypeError(f"{usage}, got {offsets!r}")
    for tp in offsets:
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"{usage}; got {tp!r}")
    checked = partition_list(offsets, action)
    if strict:
        for tp in checked:
            if tp.offset < 0:
                msg = (
                    f"{action}: {tp.topic}-{tp.partition} has offset {tp.offset}; store the offset to read next (>= 0)"
                )
                raise ValueError(msg)
    return tuple((tp.topic, tp.partition, tp.offset) for tp in checked if tp.offset >= 0)
