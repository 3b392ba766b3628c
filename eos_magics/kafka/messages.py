"""confluent-kafka's ``Message`` and ``TopicPartition`` over the engine's own, at no copying cost.

:class:`Message` subclasses :class:`engine.client.message.Message` with no slots of its own, so a
record the engine hands out becomes a drop-in ``Message`` by assigning its class (:func:`adopt`):
nothing is copied on the hot path. The accessors then answer as confluent-kafka's do: ``error()``
is a confluent :class:`~eos_magics.kafka.errors.KafkaError` (converted once, on first call),
``offset()``, ``partition()`` and ``leader_epoch()`` are None when unknown, ``len()`` is the
value's size, and the ``set_*`` methods exist. ``latency()`` is None: the simulation does not
measure the time from ``produce()`` to the acknowledgement.

:class:`TopicPartition` subclasses the engine's, so the engine's clients take it as it is; it adds
``metadata`` and ``leader_epoch`` and compares as confluent-kafka's does (topic and partition only).
"""

from __future__ import annotations

from typing import Any

from engine.client.message import OFFSET_INVALID
from engine.client.message import Message as _EngineMessage
from engine.client.message import TopicPartition as _EngineTopicPartition
from eos_magics.kafka.calls import add_stubs
from eos_magics.kafka.errors import KafkaError, from_engine

__all__ = [
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "Message",
    "TopicPartition",
    "adopt",
    "adopt_all",
    "topic_partitions",
]

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2


class Message(_EngineMessage):
    """A record or an error event, as confluent-kafka's ``Message`` (constructor for tests and mocks).

    All parameters are optional, as in confluent-kafka: ``Message(topic='t', value=b'v', offset=3)``.
    """

    __slots__ = ()

    def __init__(
        self,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        key: Any = None,
        value: Any = None,
        headers: Any = None,
        error: KafkaError | None = None,
        timestamp: tuple[int, int] | None = None,
        latency: float | None = None,
        leader_epoch: int | None = None,
    ) -> None:
        super().__init__(
            topic,  # type: ignore[arg-type]
            -1 if partition is None else partition,
            OFFSET_INVALID if offset is None else offset,
            key,
            value,
            headers=headers,
            error=error,  # type: ignore[arg-type]
            leader_epoch=-1 if leader_epoch is None else leader_epoch,
        )
        # A constructed message keeps its timestamp type and latency with the timestamp.
        self._timestamp = (*(timestamp or (TIMESTAMP_NOT_AVAILABLE, 0)), latency)  # type: ignore[assignment]

    def error(self) -> KafkaError | None:  # type: ignore[override]
        """Return the error (a confluent ``KafkaError``) of an error event or failed delivery, else None."""
        err = self._error
        if err is None or err.__class__ is KafkaError:
            return err  # type: ignore[return-value]
        converted = self._error = from_engine(err, delivery=True)  # type: ignore[assignment]
        return converted  # type: ignore[return-value]

    def offset(self) -> int | None:
        """Return the offset, or None when unknown (a failed delivery, an error event)."""
        off = self._offset
        return off if off >= 0 else None

    def partition(self) -> int | None:
        """Return the partition, or None when unknown."""
        p = self._partition
        return p if p >= 0 else None

    def timestamp(self) -> tuple[int, int]:
        """Return ``(timestamp type, ms)``: ``(TIMESTAMP_CREATE_TIME, ms)``, or ``(TIMESTAMP_NOT_AVAILABLE, -1)``."""
        ts = self._timestamp
        if ts.__class__ is tuple:
            return (ts[0], ts[1])  # type: ignore[index]
        return (TIMESTAMP_CREATE_TIME, ts) if ts >= 0 else (TIMESTAMP_NOT_AVAILABLE, -1)

    def latency(self) -> float | None:
        """Return the latency given to the constructor; None for records (the simulation does not measure it)."""
        ts = self._timestamp
        return ts[2] if ts.__class__ is tuple else None  # type: ignore[index]

    def leader_epoch(self) -> int | None:  # type: ignore[override]
        """Return the leader epoch the record was written in, or None when unknown."""
        e = self._leader_epoch
        return e if e >= 0 else None

    def __len__(self) -> int:
        v = self._value
        return 0 if v is None else len(v)

    def set_value(self, value: Any) -> None:
        """Replace the value."""
        self._value = value

    def set_key(self, key: Any) -> None:
        """Replace the key."""
        self._key = key

    def set_headers(self, headers: Any) -> None:
        """Replace the headers."""
        self._headers = headers

    def set_topic(self, topic: str) -> None:
        """Replace the topic."""
        self._topic = topic

    def set_error(self, error: KafkaError | None) -> None:
        """Replace the error."""
        self._error = error  # type: ignore[assignment]


add_stubs(Message, "Message")


def adopt(message: _EngineMessage) -> Message:
    """Make an engine message a drop-in one in place (no copy) and return it."""
    message.__class__ = Message
    return message  # type: ignore[return-value]


def adopt_all(messages: list[_EngineMessage]) -> list[Message]:
    """:func:`adopt` every message of a list, in place; return the list."""
    for m in messages:
        m.__class__ = Message
    return messages  # type: ignore[return-value]


class TopicPartition(_EngineTopicPartition):
    """A topic, a partition, an offset, and optional metadata and leader epoch (confluent-kafka's)."""

    __slots__ = ("leader_epoch", "metadata")

    def __init__(
        self,
        topic: str,
        partition: int = -1,
        offset: int = OFFSET_INVALID,
        metadata: str | None = None,
        leader_epoch: int | None = None,
    ) -> None:
        if not isinstance(topic, str):
            raise TypeError(f"argument 1 must be str, not {type(topic).__name__}")
        for name, v in (("partition", partition), ("offset", offset)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"TopicPartition: {name} must be an int, not {type(v).__name__}")
        if metadata is not None and not isinstance(metadata, str):
            raise TypeError(f"TopicPartition: metadata must be a str or None, not {type(metadata).__name__}")
        super().__init__(topic, partition, offset)
        self.metadata = metadata
        self.leader_epoch = leader_epoch

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _EngineTopicPartition):
            return NotImplemented
        return (self.topic, self.partition) == (other.topic, other.partition)

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __lt__(self, other: _EngineTopicPartition) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __repr__(self) -> str:
        return (
            f"TopicPartition{{topic={self.topic},partition={self.partition},offset={self.offset},"
            f"leader_epoch={self.leader_epoch},error={self.error}}}"
        )

    __str__ = __repr__


def topic_partitions(tps: list[_EngineTopicPartition]) -> list[TopicPartition]:
    """Return drop-in copies of the engine's TopicPartitions (errors converted)."""
    out = []
    for t in tps:
        tp = TopicPartition(t.topic, t.partition, t.offset)
        if t.error is not None:
            tp.error = from_engine(t.error)  # type: ignore[assignment]
        out.append(tp)
    return out
