"""One replica's log as frozen batch summaries, each with its transaction outcome, for pictures.

:func:`replica_log` reads the same batches as :func:`engine.views.dump.dump_log` (the replica's
log on its broker's disk, so a crashed broker's replica can be read) and gives each one a *kind*:

==================  =================================================================
kind                batch
==================  =================================================================
``plain``           data from a non-transactional producer (idempotent or not)
``open``            transactional data no marker of its producer has ended yet
``committed``       transactional data ended by a later COMMIT marker of its producer
``aborted``         transactional data ended by a later ABORT marker of its producer
``commit-marker``   a control batch holding a COMMIT marker
``abort-marker``    a control batch holding an ABORT marker
==================  =================================================================

A transactional data batch belongs to the first marker after it with the same producer id (the
epoch is not compared: a transaction-version-2 marker carries the bumped epoch, KIP-890). The
replica's HW and LSO come from its in-memory state; both are -1 when the broker has not loaded
the partition (it is down, or has just restarted).

Invariants: read-only; the same log gives the same summaries. It draws nothing and knows no
notebook: ``eos_magics.views.svg`` turns a :class:`ReplicaLog` into a picture.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engine.log.records import COMMIT
from engine.views import lookup

if TYPE_CHECKING:
    from engine.log.records import RecordBatch
    from engine.views.lookup import ClusterState


#: Every kind a batch summary can have, in legend order.
KINDS = ("plain", "open", "committed", "aborted", "commit-marker", "abort-marker")


@dataclasses.dataclass(frozen=True, slots=True)
class BatchSummary:
    """One record batch: its offsets, producer fields and kind (see the module table)."""

    base_offset: int
    last_offset: int
    count: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    partition_leader_epoch: int
    is_transactional: bool
    is_control: bool
    #: ``COMMIT`` or ``ABORT`` for a marker, else None.
    control_type: str | None
    coordinator_epoch: int
    create_time: int
    size_bytes: int
    #: Byte position in the segment, as the dump prints it.
    position: int
    kind: str

    @property
    def is_marker(self) -> bool:
        """Return True for a COMMIT or ABORT marker batch."""
        return self.is_control


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicaLog:
    """A replica's log at one instant: its batches and its offsets."""

    topic: str
    partition: int
    broker_id: int
    time_ms: int
    #: The broker's status (``up``, ``crashed``, ``paused``).
    status: str
    is_leader: bool
    log_start_offset: int
    log_end_offset: int
    #: -1 when the broker has not loaded the partition.
    high_watermark: int
    #: -1 when the broker has not loaded the partition.
    last_stable_offset: int
    batches: tuple[BatchSummary, ...]


def batch_kinds(batches: Sequence[RecordBatch]) -> list[str]:
    """Return each batch's kind (see the module table): a later marker of its producer decides a transactional one."""
    kinds: list[str] = []
    pending: dict[int, list[int]] = {}
    for i, b in enumerate(batches):
        if b.is_control:
            commit = b.control_type == COMMIT
            for j in pending.pop(b.producer_id, ()):
                kinds[j] = "committed" if commit else "aborted"
            kinds.append("commit-marker" if commit else "abort-marker")
        elif b.is_transactional:
            pending.setdefault(b.producer_id, []).append(i)
            kinds.append("open")
        else:
            kinds.append("plain")
    return kinds


def summarize(batches: list[RecordBatch]) -> tuple[BatchSummary, ...]:
    """Return the summaries of contiguous batches, each transactional one with its outcome."""
    out = []
    position = 0
    for b, kind in zip(batches, batch_kinds(batches), strict=True):
        out.append(
            BatchSummary(
                b.base_offset,
                b.last_offset,
                b.count,
                b.producer_id,
                b.producer_epoch,
                b.base_sequence,
                b.last_sequence,
                b.partition_leader_epoch,
                b.is_transactional,
                b.is_control,
                b.control_type if b.is_control else None,
                b.coordinator_epoch,
                b.create_time,
                b.size_bytes,
                position,
                kind,
            )
        )
        position += b.size_bytes
    return tuple(out)


def replica_log(cluster: ClusterState, topic: str, partition: int = 0, broker: int | None = None) -> ReplicaLog:
    """Return one replica's log (the leader's by default) as batch summaries with its offsets.

    Raises as :func:`~engine.views.lookup.hosting_broker` does: ``UnknownTopicOrPartitionException``,
    ``ValueError`` (no such broker), ``LeaderNotAvailableException`` (no leader and no ``broker``),
    ``NotLeaderOrFollowerException`` (the broker hosts no replica of the partition).
    """
    b = lookup.hosting_broker(cluster, topic, partition, broker)
    node = cluster.brokers[b]
    log = node.disk.get(f"log:{topic}-{partition}")
    batches = list(log.batches) if log is not None else []
    replica = node.replicas.get((topic, partition))
    return ReplicaLog(
        topic,
        partition,
        b,
        cluster.now_ms,
        node.status.value,
        replica is not None and replica.is_leader,
        log.log_start_offset if log is not None else 0,
        log.log_end_offset if log is not None else 0,
        replica.high_watermark if replica is not None else -1,
        replica.last_stable_offset if replica is not None else -1,
        summarize(batches),
    )
