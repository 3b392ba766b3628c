"""Client-side values shaped like confluent-kafka's ``Message`` and ``TopicPartition``.

confluent-kafka exposes message fields as methods (``msg.value()``, ``msg.offset()``), so the
simulated clients do too: code written against them reads like code for real Kafka.
"""

from __future__ import annotations

from typing import Any

from engine.errors import KafkaError


class TopicPartition:
    """A topic, a partition and optionally an offset (confluent-kafka's ``TopicPartition``)."""

    __slots__ = ("error", "offset", "partition", "topic")

    def __init__(self, topic: str, partition: int = -1, offset: int = -1001, error: KafkaError | None = None) -> None:
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
    """One record as a client sees it: delivered by a producer or returned by ``poll``."""

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
