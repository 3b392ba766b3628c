"""What a KIP-848 consumer group writes to ``__consumer_offsets``, and how a new coordinator reads it back.

Role
----
Kafka's group coordinator stores a consumer group as several compacted record types
(``GroupCoordinatorRecordHelpers``); this module has the same keys, values and tombstones (value
``None``), and :func:`replay` rebuilds the groups of a partition after a failover. The classic
records and offsets are :mod:`engine.group.records`' (whose replay skips these keys).

===========================================================  ==========================================
key (Kafka's record)                                         value
===========================================================  ==========================================
``ConsumerGroupMetadataKey(group)``                          group epoch
``ConsumerGroupMemberMetadataKey(group, member)``            instance/rack/client ids, host,
                                                             subscription, assignor, rebalance timeout
``ConsumerGroupTargetAssignmentMetadataKey(group)``          assignment epoch (and, here, the assignor)
``ConsumerGroupTargetAssignmentMemberKey(group, member)``    the member's target partitions
``ConsumerGroupCurrentMemberAssignmentKey(group, member)``   member epoch, previous epoch, state,
                                                             assigned and pending-revocation partitions
===========================================================  ==========================================

A member that leaves or is fenced gets tombstones for its three member keys; a group deleted (an
empty group turned classic by a JoinGroup) gets tombstones for its two group keys.

Invariants
----------
* :func:`replay` applies records in log order, the last value per key winning, as compaction would.
* Members come back with no timers: the loading coordinator starts every member's session then
  (``GroupMetadataManager.onLoaded``), so a member must heartbeat the new coordinator in time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from engine.group.member_reconciliation import MemberAssignment, MemberState, TopicPartition
from engine.log.records import RecordBatch


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataKey:
    """Key of a consumer group's epoch."""

    group: str

    def __str__(self) -> str:
        return f"consumer_group_metadata::group={self.group}"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    """The group epoch."""

    epoch: int

    def __str__(self) -> str:
        return f"epoch={self.epoch}"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataKey:
    """Key of one member's metadata."""

    group: str
    member_id: str

    def __str__(self) -> str:
        return f"consumer_group_member_metadata::group={self.group},member={self.member_id}"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    """What the member told the coordinator."""

    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    rebalance_timeout_ms: int

    def __str__(self) -> str:
        return f"subscribed={list(self.subscribed_topic_names)},assignor={self.server_assignor}"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    """Key of the target assignment's epoch."""

    group: str

    def __str__(self) -> str:
        return f"consumer_group_target_assignment_metadata::group={self.group}"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    """The target assignment's epoch (the assignor is kept alongside, for ConsumerGroupDescribe)."""

    assignment_epoch: int
    assignor: str = ""

    def __str__(self) -> str:
        return f"assignmentEpoch={self.assignment_epoch}"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberKey:
    """Key of one member's target partitions."""

    group: str
    member_id: str

    def __str__(self) -> str:
        return f"consumer_group_target_assignment_member::group={self.group},member={self.member_id}"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    """One member's target partitions."""

    topic_partitions: tuple[TopicPartition, ...]

    def __str__(self) -> str:
        return f"[{', '.join(f'{t}-{p}' for t, p in self.topic_partitions)}]"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    """Key of one member's current assignment."""

    group: str
    member_id: str

    def __str__(self) -> str:
        return f"consumer_group_current_member_assignment::group={self.group},member={self.member_id}"


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    """One member's epochs, state and partitions."""

    member_epoch: int
    previous_member_epoch: int
    state: str
    assigned_partitions: tuple[TopicPartition, ...]
    partitions_pending_revocation: tuple[TopicPartition, ...]

    def __str__(self) -> str:
        tps = ", ".join(f"{t}-{p}" for t, p in self.assigned_partitions)
        return f"memberEpoch={self.member_epoch},state={self.state},assigned=[{tps}]"

    @classmethod
    def of(cls, a: MemberAssignment) -> ConsumerGroupCurrentMemberAssignmentValue:
        """Return the record of an in-memory assignment."""
        return cls(
            a.member_epoch,
            a.previous_member_epoch,
            a.state.value,
            tuple(sorted(a.assigned)),
            tuple(sorted(a.pending_revocation)),
        )

    def to_assignment(self) -> MemberAssignment:
        """Return the in-memory assignment this record holds."""
        return MemberAssignment(
            self.member_epoch,
            self.previous_member_epoch,
            MemberState(self.state),
            frozenset(self.assigned_partitions),
            frozenset(self.partitions_pending_revocation),
        )


#: The key types of this module (a consumer group's records).
CONSUMER_GROUP_KEYS = (
    ConsumerGroupMetadataKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey,
)


@dataclasses.dataclass(slots=True)
class LoadedConsumerGroup:
    """What :func:`replay` found for one consumer group (last value per key; tombstones remove)."""

    epoch: int | None = None
    assignment_epoch: int = 0
    assignor: str = ""
    members: dict[str, ConsumerGroupMemberMetadataValue] = dataclasses.field(default_factory=dict)
    targets: dict[str, tuple[TopicPartition, ...]] = dataclasses.field(default_factory=dict)
    current: dict[str, ConsumerGroupCurrentMemberAssignmentValue] = dataclasses.field(default_factory=dict)


def replay(batches: Iterable[RecordBatch]) -> dict[str, LoadedConsumerGroup]:
    """Rebuild every consumer group of a ``__consumer_offsets`` partition from its batches, in order.

    A group whose metadata key was last a tombstone is left out.
    """
    groups: dict[str, LoadedConsumerGroup] = {}
    for b in batches:
        if b.is_control:
            continue
        for i, key in enumerate(b.keys):
            if not isinstance(key, CONSUMER_GROUP_KEYS):
                continue
            value: Any = b.values[i]
            g = groups.setdefault(key.group, LoadedConsumerGroup())
            if isinstance(key, ConsumerGroupMetadataKey):
                g.epoch = None if value is None else value.epoch
            elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
                g.assignment_epoch, g.assignor = (0, "") if value is None else (value.assignment_epoch, value.assignor)
            elif isinstance(key, ConsumerGroupMemberMetadataKey):
                _put(g.members, key.member_id, value)
            elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
                _put(g.targets, key.member_id, None if value is None else value.topic_partitions)
            else:
                _put(g.current, key.member_id, value)
    return {gid: g for gid, g in sorted(groups.items()) if g.epoch is not None}


def _put(d: dict[str, Any], k: str, v: Any) -> None:
    if v is None:
        d.pop(k, None)
    else:
        d[k] = v


def records_batch(records: list[tuple[Any, Any]], now_ms: int) -> RecordBatch:
    """Build the batch of one heartbeat's records (``(key, value)`` pairs; value ``None``: tombstone)."""
    keys = tuple(k for k, _ in records)
    values = tuple(v for _, v in records)
    size = 61 + sum(24 + len(str(k)) + len(str(v)) for k, v in records)
    return RecordBatch(
        producer_id=-1,
        producer_epoch=-1,
        is_transactional=False,
        create_time=now_ms,
        keys=keys,
        values=values,
        size_bytes=size,
    )
