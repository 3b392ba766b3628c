"""confluent-kafka's ``OffsetSpec`` (what ``list_offsets`` asks for) and ``ListOffsetsResultInfo`` (its answer).

``OffsetSpec.earliest()``, ``latest()`` and ``max_timestamp()`` are Kafka's special ListOffsets
timestamps -2, -1 and -3; ``for_timestamp(ts)`` asks for the first record at or after ``ts``.
Plain value holders: nothing here talks to the cluster.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["ListOffsetsResultInfo", "OffsetSpec"]


class OffsetSpec:
    """What ``list_offsets`` asks of a partition: earliest, latest, max timestamp, or a timestamp."""

    _values: ClassVar[dict[int, OffsetSpec]] = {}

    def __new__(cls, index: int) -> Any:
        if index < 0:
            return cls._values[index]
        return TimestampSpec(index)

    @property
    def _value(self) -> int:
        raise NotImplementedError

    @classmethod
    def earliest(cls) -> OffsetSpec:
        """The log start offset."""
        return cls._values[-2]

    @classmethod
    def latest(cls) -> OffsetSpec:
        """The end: the high watermark, or the last stable offset for read_committed."""
        return cls._values[-1]

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        """The record with the largest timestamp (KIP-734)."""
        return cls._values[-3]

    @classmethod
    def for_timestamp(cls, timestamp: int) -> OffsetSpec:
        """The first record whose timestamp is at least ``timestamp`` (ms)."""
        return TimestampSpec(timestamp)

    def __int__(self) -> int:
        """Kafka's ListOffsets timestamp this asks for (-1 latest, -2 earliest, -3 max timestamp)."""
        return self._value

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, OffsetSpec):
            return NotImplemented
        return self._value < int(other)


class TimestampSpec(OffsetSpec):
    """The first record at or after ``timestamp``."""

    def __new__(cls, _: int) -> Any:
        return object.__new__(cls)

    def __init__(self, timestamp: int) -> None:
        self.timestamp = timestamp

    @property
    def _value(self) -> int:
        return self.timestamp


class _Special(OffsetSpec):
    #: Kafka's special ListOffsets timestamp of this kind
    _special: ClassVar[int]

    def __new__(cls, _: int) -> Any:
        return object.__new__(cls)

    @property
    def _value(self) -> int:
        return self._special


class MaxTimestampSpec(_Special):
    """The record with the largest timestamp."""

    _special = -3


class LatestSpec(_Special):
    """The end of the partition."""

    _special = -1


class EarliestSpec(_Special):
    """The start of the partition."""

    _special = -2


OffsetSpec._values.update({-3: MaxTimestampSpec(-3), -2: EarliestSpec(-2), -1: LatestSpec(-1)})


class ListOffsetsResultInfo:
    """What a ``list_offsets`` future resolves to: the offset, its record's timestamp (-1: none), its leader epoch."""

    def __init__(self, offset: int, timestamp: int, leader_epoch: int) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.leader_epoch: int | None = leader_epoch if leader_epoch >= 0 else None
