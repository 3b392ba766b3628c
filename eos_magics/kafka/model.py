"""confluent-kafka's small value classes (``confluent_kafka._model``), with the same fields.

``ConsumerGroupTopicPartitions`` is what ``AdminClient.list_consumer_group_offsets`` takes and
returns; ``Node`` and the enums describe brokers and groups in admin results.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["ConsumerGroupState", "ConsumerGroupTopicPartitions", "ConsumerGroupType", "IsolationLevel", "Node"]


class ConsumerGroupTopicPartitions:
    """A consumer group id and (optionally) its partitions."""

    def __init__(self, group_id: str, topic_partitions: list[Any] | None = None) -> None:
        self.group_id = group_id
        self.topic_partitions = topic_partitions

    def __repr__(self) -> str:
        return f"ConsumerGroupTopicPartitions(group_id={self.group_id!r}, topic_partitions={self.topic_partitions!r})"


class Node:
    """A broker: id, host, port, rack."""

    def __init__(self, id: int, host: str, port: int, rack: str | None = None) -> None:
        self.id = id
        self.id_string = str(id)
        self.host = host
        self.port = port
        self.rack = rack

    def __str__(self) -> str:
        return f"({self.id}) {self.host}:{self.port} {f'(Rack - {self.rack})' if self.rack else ''}"


class ConsumerGroupState(enum.Enum):
    """A consumer group's state (confluent-kafka's numbering)."""

    UNKNOWN = 0
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5

    @classmethod
    def from_kafka(cls, name: str) -> ConsumerGroupState:
        """Return the state for Kafka's name (``PreparingRebalance``, ``Stable`` ...)."""
        table = {
            "PreparingRebalance": cls.PREPARING_REBALANCING,
            "CompletingRebalance": cls.COMPLETING_REBALANCING,
            "Stable": cls.STABLE,
            "Dead": cls.DEAD,
            "Empty": cls.EMPTY,
        }
        return table.get(name, cls.UNKNOWN)


class ConsumerGroupType(enum.Enum):
    """A consumer group's protocol type."""

    UNKNOWN = 0
    CONSUMER = 1
    CLASSIC = 2


class IsolationLevel(enum.Enum):
    """A consumer's isolation level."""

    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1
