"""What the group coordinator writes to ``__consumer_offsets``, and how it reads it back on load.

Two record types, keyed as in Kafka (``GroupMetadataManager``; compaction would keep the latest
value per key, but the simulation does not compact):

===================================  ====================================================
key                                  value
===================================  ====================================================
``offset_commit::group=g,            ``offset=42`` -- the next offset the group reads
partition=t-0``                      (:class:`OffsetCommitValue`)
``group_metadata::group=g``          generation, protocol, leader and every member with its
                                     subscription and assignment (:class:`GroupMetadataValue`)
===================================  ====================================================

``str()`` of keys and values reads like the pre-3.8 ``kafka-dump-log.sh --offsets-decoder``,
so :func:`engine.views.dump.dump_log` prints them legibly.

Plain commits are non-transactional batches. A transactional commit (TxnOffsetCommit) is a
transactional batch of the producer's id and epoch; its offsets count only once a COMMIT marker
of that producer follows it in the same partition, and an ABORT marker discards them.
:func:`replay` applies exactly that rule, so a coordinator that loads the partition after a
failover knows the same committed and pending offsets the old one did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from engine.log.records import COMMIT, RecordBatch
from engine.protocol import Assignment, Subscription

#: Rough encoded sizes (Kafka's key/value schemas), for the batch size estimate.
_RECORD_OVERHEAD_BYTES = 24


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Key of a committed offset."""

    group: str
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"offset_commit::group={self.group},partition={self.topic}-{self.partition}"


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset: the next record the group will read."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = -1

    def __str__(self) -> str:
        return f"offset={self.offset}"


@dataclasses.dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Key of a group's membership record."""

    group: str

    def __str__(self) -> str:
        return f"group_metadata::group={self.group}"


@dataclasses.dataclass(frozen=True, slots=True)
class MemberRecord:
    """One member as stored with its group: its metadata for the group's protocol and its assignment.

    Kafka's ``GroupMetadataValue.MemberMetadata`` keeps both as the bytes the clients sent
    (``subscription``, ``assignment``); the record keeps them read, with those bytes in ``raw``,
    so a coordinator that loads the group after a failover hands back exactly what it was sent.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: Subscription
    assignment: Assignment


@dataclasses.dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A group's membership at the end of a rebalance (written by the leader's SyncGroup)."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[MemberRecord, ...]

    def __str__(self) -> str:
        assignment = ", ".join(
            f"{m.member_id}=[{', '.join(f'{t}-{p}' for t, p in m.assignment.partitions)}]" for m in self.members
        )
        return (
            f'{{"protocolType":"{self.protocol_type}","protocol":"{self.protocol or ""}",'
            f'"generationId":{self.generation},"assignment":"{{{assignment}}}"}}'
        )


def offsets_batch(
    group: str,
    offsets: Iterable[tuple[str, int, int]],
    now_ms: int,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
) -> RecordBatch:
    """Build the batch of one OffsetCommit (transactional when ``producer_id`` ≥ 0)."""
    keys = []
    values = []
    for topic, partition, offset in offsets:
        keys.append(OffsetCommitKey(group, topic, partition))
        values.append(OffsetCommitValue(offset, "", now_ms))
    return _batch(tuple(keys), tuple(values), now_ms, producer_id, producer_epoch)


def group_batch(group: str, value: GroupMetadataValue, now_ms: int) -> RecordBatch:
    """Build the batch that stores a group's membership."""
    return _batch((GroupMetadataKey(group),), (value,), now_ms, -1, -1)


def _batch(keys: tuple[Any, ...], values: tuple[Any, ...], now_ms: int, pid: int, epoch: int) -> RecordBatch:
    size = 61 + sum(_RECORD_OVERHEAD_BYTES + len(str(k)) + len(str(v)) for k, v in zip(keys, values, strict=True))
    return RecordBatch(
        producer_id=pid,
        producer_epoch=epoch,
        is_transactional=pid >= 0,
        create_time=now_ms,
        keys=keys,
        values=values,
        size_bytes=size,
    )


@dataclasses.dataclass(slots=True)
class StoredOffset:
    """An offset as the coordinator caches it, with the log offset of the record that holds it."""

    offset: int
    record_offset: int
    commit_timestamp: int


@dataclasses.dataclass(slots=True)
class LoadedGroup:
    """What :func:`replay` found for one group."""

    metadata: GroupMetadataValue | None = None
    committed: dict[tuple[str, int], StoredOffset] = dataclasses.field(default_factory=dict)
    #: producer id -> partition -> offset written in a still undecided transaction
    pending_txn: dict[int, dict[tuple[str, int], StoredOffset]] = dataclasses.field(default_factory=dict)


def replay(batches: Iterable[RecordBatch]) -> dict[str, LoadedGroup]:
    """Rebuild every group's state from a ``__consumer_offsets`` partition's batches, in order."""
    groups: dict[str, LoadedGroup] = {}
    # producer id -> groups with pending offsets of that producer (markers name no group)
    pending_groups: dict[int, set[str]] = {}
    for b in batches:
        if b.is_control:
            for gid in sorted(pending_groups.pop(b.producer_id, set())):
                complete_txn(
                    groups[gid].committed,
                    groups[gid].pending_txn,
                    b.producer_id,
                    b.base_offset,
                    commit=b.control_type == COMMIT,
                )
            continue
        for i, key in enumerate(b.keys):
            value = b.values[i]
            if isinstance(key, GroupMetadataKey):
                groups.setdefault(key.group, LoadedGroup()).metadata = value
            elif isinstance(key, OffsetCommitKey):
                g = groups.setdefault(key.group, LoadedGroup())
                tp = (key.topic, key.partition)
                if value is None:
                    g.committed.pop(tp, None)
                    continue
                stored = StoredOffset(value.offset, b.base_offset + i, value.commit_timestamp)
                if b.is_transactional:
                    g.pending_txn.setdefault(b.producer_id, {})[tp] = stored
                    pending_groups.setdefault(b.producer_id, set()).add(key.group)
                else:
                    g.committed[tp] = stored
    return groups


def complete_txn(
    committed: dict[tuple[str, int], StoredOffset],
    pending_txn: dict[int, dict[tuple[str, int], StoredOffset]],
    producer_id: int,
    marker_offset: int,
    *,
    commit: bool,
) -> list[tuple[str, int]]:
    """Apply a marker to one group's pending offsets of ``producer_id``; return the partitions committed.

    Only offsets written *before* the marker belong to the transaction it ends. On COMMIT an
    offset replaces the cached one unless that one was written later in the log (a plain commit
    after the transactional one wins, as in Kafka's ``handleTxnCompletion``).
    """
    pending = pending_txn.get(producer_id)
    if not pending:
        return []
    done = sorted(tp for tp, s in pending.items() if s.record_offset < marker_offset)
    moved = []
    for tp in done:
        stored = pending.pop(tp)
        if commit:
            current = committed.get(tp)
            if current is None or current.record_offset < stored.record_offset:
                committed[tp] = stored
                moved.append(tp)
    if not pending:
        del pending_txn[producer_id]
    return moved
