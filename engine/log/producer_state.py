"""Producer state of one partition replica: the dedup window, epochs and open transactions.

Kafka keeps, per partition and producer id, the producer's epoch and the metadata of its last
:data:`NUM_BATCHES_TO_RETAIN` batches (``ProducerStateEntry``). Every append from an idempotent
or transactional producer is checked against it (``ProducerAppendInfo``), and the check is
*staged*: :meth:`ProducerStateManager.prepare_update` returns a working copy, validation and
bookkeeping run on the copy, and only :meth:`ProducerStateManager.update` applies it, after the
batch is in the log. A failed validation leaves nothing changed.

Followers run the same bookkeeping as they replicate (origin ``REPLICATION``), so a new leader
already knows the batches the old leader took and deduplicates their retries.

Snapshots
---------
A snapshot (written on segment roll and on clean shutdown) keeps **only each producer's last
batch**, as Kafka's ``ProducerStateManager.writeSnapshot`` does. After a restart the window is
one batch deep until the producer sends more: a retry of an older in-flight batch then gets
OUT_OF_ORDER_SEQUENCE_NUMBER instead of the original offset. The tests show it.

Transactions
------------
``ongoing_txns`` maps the first offset of each open transaction to its producer id, in offset
order, so the first undecided offset is the first key. ``unreplicated_txns`` holds transactions
already decided but whose marker is not yet below the high watermark; together they give the
first *unstable* offset, which bounds the last stable offset (LSO).

A marker ends a transaction only when its producer has one open (data since its previous
marker). A marker without such data -- a retried or fencing ABORT, a COMMIT of a transaction
that wrote nothing here -- is an *empty* transaction: as in Kafka's
``ProducerAppendInfo.appendEndTxnMarker`` it still updates the producer's epoch, coordinator
epoch and timestamp, but yields no :class:`CompletedTxn`, so it never holds back the LSO and
never enters the aborted-transaction index.

Producer-id expiry (``producer.id.expiration.ms``) is :meth:`ProducerStateManager.expire`, run by
the broker's periodic check; unlike Kafka, loading a snapshot does not expire producers.
Simplified: sequences do not wrap.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple

from engine.errors import ErrorCode
from engine.log.records import ABORT, NO_PRODUCER_EPOCH, RecordBatch

#: Kafka retains the metadata of the last 5 batches per producer because an idempotent
#: producer may have at most 5 requests in flight per partition; any retry it can send is
#: therefore one of the last 5 batches the broker accepted, and can be answered from the cache.
NUM_BATCHES_TO_RETAIN = 5


class AppendOrigin(enum.Enum):
    """Who is appending; it decides how strict validation is (as in Kafka)."""

    #: A producer's request to a leader: every check applies.
    CLIENT = "client"
    #: A follower copying the leader, or a replay of the log on load: the leader already
    #: validated, so only bookkeeping runs (an older epoch is accepted and noted).
    REPLICATION = "replication"
    #: The transaction coordinator writing a marker: markers are checked, data is not expected.
    COORDINATOR = "coordinator"


class LogValidationError(Exception):
    """A batch failed validation; ``code`` goes back to the client in the response."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class BatchMetadata(NamedTuple):
    """What the window keeps of one batch."""

    first_seq: int
    last_seq: int
    last_offset: int
    timestamp: int

    @property
    def first_offset(self) -> int:
        """Return the batch's base offset."""
        return self.last_offset - (self.last_seq - self.first_seq)


_new_tuple = tuple.__new__


class CompletedTxn(NamedTuple):
    """A transaction ended by a marker in this partition."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerStateEntry:
    """One producer's state in one partition."""

    __slots__ = (
        "batches",
        "coordinator_epoch",
        "current_txn_first_offset",
        "last_timestamp",
        "producer_epoch",
        "producer_id",
    )

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        batches: list[BatchMetadata] | None = None,
        coordinator_epoch: int = -1,
        last_timestamp: int = -1,
        current_txn_first_offset: int | None = None,
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batches = batches if batches is not None else []
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset

    def copy(self) -> ProducerStateEntry:
        """Return a working copy (the window list is copied, its items are immutable)."""
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            list(self.batches),
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    @property
    def last_seq(self) -> int:
        """Return the last sequence accepted, or -1."""
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        """Return the last offset written by this producer, or -1."""
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, batch: RecordBatch) -> BatchMetadata | None:
        """Return the cached batch with the same epoch and sequence range, if any."""
        if batch.producer_epoch != self.producer_epoch:
            return None
        first, last = batch.base_sequence, batch.last_sequence
        for meta in self.batches:
            if meta.first_seq == first and meta.last_seq == last:
                return meta
        return None

    def add_batch(
        self,
        epoch: int,
        first_seq: int,
        last_seq: int,
        last_offset: int,
        timestamp: int,
        window: int = NUM_BATCHES_TO_RETAIN,
    ) -> None:
        """Record an accepted batch; a new epoch clears the window first."""
        if epoch != self.producer_epoch:
            self.batches = []
            self.producer_epoch = epoch
        batches = self.batches
        batches.append(_new_tuple(BatchMetadata, (first_seq, last_seq, last_offset, timestamp)))
        while len(batches) > window:
            del batches[0]
        self.last_timestamp = timestamp

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(producer_id={self.producer_id}, producer_epoch={self.producer_epoch}, "
            f"batches={self.batches!r}, coordinator_epoch={self.coordinator_epoch}, "
            f"current_txn_first_offset={self.current_txn_first_offset})"
        )


class ProducerAppendInfo:
    """A staged update for one producer: validated on a copy, applied by ``update``."""

    __slots__ = (
        "completed_txns",
        "current",
        "fence_epochs",
        "origin",
        "producer_id",
        "reject_unknown",
        "started_txn_offsets",
        "topic_partition",
        "updated",
        "window",
    )

    def __init__(
        self, topic_partition: str, producer_id: int, current: ProducerStateEntry | None, origin: AppendOrigin
    ) -> None:
        self.topic_partition = topic_partition
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.updated = current.copy() if current is not None else ProducerStateEntry(producer_id)
        self.started_txn_offsets: list[int] = []
        self.completed_txns: list[CompletedTxn] = []
        self.window = NUM_BATCHES_TO_RETAIN
        self.reject_unknown = True
        self.fence_epochs = True

    # -- checks -----------------------------------------------------------------------------

    def _check_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.updated.producer_epoch and self.origin is not AppendOrigin.REPLICATION and self.fence_epochs:
            raise LogValidationError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {self.producer_id} at offset {offset} in {self.topic_partition} is {epoch}, "
                f"which is smaller than the last seen epoch {self.updated.producer_epoch}",
            )

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        entry = self.updated
        if epoch != entry.producer_epoch:
            # A new epoch must start at sequence 0, unless the broker knew nothing of the producer.
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise LogValidationError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"Invalid sequence number for new epoch of producer {self.producer_id} in {self.topic_partition}: "
                    f"{epoch} (request epoch), {first_seq} (seq. number), {entry.producer_epoch} (current epoch)",
                )
            if first_seq != 0 and entry.producer_epoch == NO_PRODUCER_EPOCH and self.reject_unknown:
                # Modelled on pre-KIP-360 brokers: the broker has no state for this producer
                # (never seen, or lost) and cannot vouch for sequence continuity.
                raise LogValidationError(
                    ErrorCode.UNKNOWN_PRODUCER_ID,
                    f"Found no record of producer {self.producer_id} in {self.topic_partition} for a batch with "
                    f"sequence {first_seq} (expected sequence 0 from an unknown producer)",
                )
            return
        expected = entry.last_seq + 1
        if first_seq != expected:
            raise LogValidationError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {self.producer_id} at offset {offset} in "
                f"{self.topic_partition}: {first_seq} (incoming seq. number), {entry.last_seq} (current end "
                f"sequence number); expected {expected}",
            )

    # -- appends ----------------------------------------------------------------------------

    def append_data_batch(self, batch: RecordBatch, first_offset: int) -> None:
        """Validate and stage one data batch that will sit at ``first_offset``."""
        epoch = batch.producer_epoch
        last_offset = first_offset + batch.count - 1
        if self.origin is not AppendOrigin.REPLICATION:
            self._check_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            self._check_sequence(epoch, batch.base_sequence, first_offset)
        entry = self.updated
        if entry.current_txn_first_offset is not None and not batch.is_transactional:
            raise LogValidationError(
                ErrorCode.INVALID_TXN_STATE,
                f"Expected a transactional batch from producer {self.producer_id} in {self.topic_partition}: "
                f"it has a transaction open since offset {entry.current_txn_first_offset}",
            )
        if epoch < entry.producer_epoch:
            epoch = entry.producer_epoch  # only reachable with epoch fencing weakened (mutant M6)
        entry.add_batch(epoch, batch.base_sequence, batch.last_sequence, last_offset, batch.create_time, self.window)
        if batch.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            self.started_txn_offsets.append(first_offset)

    def append_end_txn_marker(self, batch: RecordBatch, offset: int) -> CompletedTxn | None:
        """Validate and stage an end-transaction marker at ``offset``; return the txn it ends.

        Returns None when the producer has no transaction open here (an empty transaction):
        the marker still moves the producer's epochs, but there is nothing to complete, so it
        neither affects the LSO nor gets an aborted-index entry (Kafka's ``appendEndTxnMarker``
        emits a ``CompletedTxn`` only when ``currentTxnFirstOffset`` is present).
        """
        entry = self.updated
        if self.origin is not AppendOrigin.REPLICATION:
            self._check_epoch(batch.producer_epoch, offset)
            if batch.coordinator_epoch < entry.coordinator_epoch:
                raise LogValidationError(
                    ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                    f"Marker for producer {self.producer_id} in {self.topic_partition} has coordinator epoch "
                    f"{batch.coordinator_epoch}, older than the last seen {entry.coordinator_epoch}",
                )
        first = entry.current_txn_first_offset
        done = CompletedTxn(self.producer_id, first, offset, batch.control_type == ABORT) if first is not None else None
        if batch.producer_epoch != entry.producer_epoch:
            # A marker written with a bumped epoch (transaction version 2) moves the producer
            # to the new epoch: the window of the old epoch no longer applies.
            entry.batches = []
            entry.producer_epoch = batch.producer_epoch
        entry.coordinator_epoch = batch.coordinator_epoch
        entry.current_txn_first_offset = None
        entry.last_timestamp = batch.create_time
        if done is not None:
            self.completed_txns.append(done)
        return done


class ProducerStateManager:
    """All producers' state in one partition replica (volatile; rebuilt from snapshot + log)."""

    def __init__(
        self,
        topic_partition: str,
        *,
        window: int = NUM_BATCHES_TO_RETAIN,
        fence_epochs: bool = True,
        reject_unknown: bool = True,
    ) -> None:
        self.window = window
        self.fence_epochs = fence_epochs
        self.reject_unknown = reject_unknown
        self.topic_partition = topic_partition
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns: dict[int, int] = {}
        self.unreplicated_txns: dict[int, CompletedTxn] = {}
        self.last_map_offset = 0

    def expire(self, cutoff_ms: int) -> list[int]:
        """Forget producers last seen before ``cutoff_ms`` with no open transaction; return their ids."""
        gone = [
            pid
            for pid, e in sorted(self.producers.items())
            if e.last_timestamp < cutoff_ms and e.current_txn_first_offset is None
        ]
        for pid in gone:
            del self.producers[pid]
        return gone

    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        """Return a staged update for one producer; nothing here changes until ``update``."""
        info = ProducerAppendInfo(self.topic_partition, producer_id, self.producers.get(producer_id), origin)
        info.window = self.window
        info.fence_epochs = self.fence_epochs
        info.reject_unknown = self.reject_unknown
        return info

    def plain_entry(self, batch: RecordBatch, origin: AppendOrigin) -> ProducerStateEntry | None:
        """Return the producer's entry when ``batch`` is plain, else None; nothing changes here.

        Plain: a non-transactional data batch from a producer this partition knows, in the
        producer's current epoch, with no transaction open, and (from a client) with the next
        expected sequence. Every check of the staged path passes for such a batch and its update
        only adds it to the window, so :meth:`append_plain` may apply it in place, after the
        batch is in the log. Anything else (None) takes :meth:`prepare_update`.
        """
        entry = self.producers.get(batch.producer_id)
        if not _plain_for(entry, batch):
            return None
        if origin is AppendOrigin.CLIENT:
            batches = entry.batches
            if batch.base_sequence != (batches[-1].last_seq + 1 if batches else 0):
                return None
        elif origin is not AppendOrigin.REPLICATION:
            return None
        return entry

    def append_plain(self, entry: ProducerStateEntry, batch: RecordBatch, first_offset: int) -> None:
        """Record a batch :meth:`plain_entry` accepted, now at ``first_offset`` in the log."""
        n = len(batch.values)
        first_seq = batch.base_sequence
        entry.add_batch(
            entry.producer_epoch,
            first_seq,
            first_seq + n - 1 if first_seq >= 0 else -1,
            first_offset + n - 1,
            batch.create_time,
            self.window,
        )

    def find_duplicate(self, batch: RecordBatch) -> BatchMetadata | None:
        """Return the cached metadata of an identical earlier batch, if the window holds one."""
        entry = self.producers.get(batch.producer_id)
        return entry.find_duplicate(batch) if entry is not None else None

    def update(self, info: ProducerAppendInfo) -> None:
        """Apply a staged update (after its batch is in the log)."""
        self.producers[info.producer_id] = info.updated
        for first_offset in info.started_txn_offsets:
            self.ongoing_txns[first_offset] = info.producer_id

    def complete_txn(self, txn: CompletedTxn, high_watermark: int) -> None:
        """Take a decided transaction off the open list; keep it as unstable above the HW.

        Only non-empty transactions get here: a marker with no open transaction returns no
        :class:`CompletedTxn` from :meth:`ProducerAppendInfo.append_end_txn_marker`.
        """
        self.ongoing_txns.pop(txn.first_offset, None)
        if txn.last_offset >= high_watermark:
            self.unreplicated_txns[txn.first_offset] = txn

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget decided transactions whose markers are now below the high watermark."""
        if self.unreplicated_txns:
            for first in [f for f, t in self.unreplicated_txns.items() if t.last_offset < high_watermark]:
                del self.unreplicated_txns[first]

    def first_undecided_offset(self) -> int | None:
        """Return the first offset of the earliest open transaction, or None."""
        return min(self.ongoing_txns) if self.ongoing_txns else None

    def first_unstable_offset(self) -> int | None:
        """Return the first offset that read_committed may not pass yet, or None.

        That is the earliest of the open transactions and the decided ones whose marker is not
        yet replicated below the high watermark.
        """
        if not self.ongoing_txns and not self.unreplicated_txns:
            return None
        candidates = []
        if self.ongoing_txns:
            candidates.append(min(self.ongoing_txns))
        if self.unreplicated_txns:
            candidates.append(min(self.unreplicated_txns))
        return min(candidates) if candidates else None

    # -- snapshots --------------------------------------------------------------------------

    def snapshot(self, offset: int) -> ProducerSnapshot:
        """Return a snapshot at ``offset`` keeping only each producer's last batch."""
        entries = []
        for pid in sorted(self.producers):
            e = self.producers[pid]
            last = e.batches[-1] if e.batches else None
            entries.append(
                SnapshotEntry(
                    pid,
                    e.producer_epoch,
                    e.coordinator_epoch,
                    e.current_txn_first_offset,
                    e.last_timestamp,
                    last.first_seq if last else -1,
                    last.last_seq if last else -1,
                    last.last_offset if last else -1,
                    last.timestamp if last else -1,
                )
            )
        return ProducerSnapshot(offset, tuple(entries))

    def load_snapshot(self, snap: ProducerSnapshot) -> None:
        """Replace all state with a snapshot's (the window becomes one batch deep)."""
        self.producers = {}
        self.ongoing_txns = {}
        self.unreplicated_txns = {}
        for s in snap.entries:
            batches = (
                [BatchMetadata(s.first_sequence, s.last_sequence, s.last_offset, s.timestamp)]
                if s.last_offset >= 0
                else []
            )
            self.producers[s.producer_id] = ProducerStateEntry(
                s.producer_id,
                s.producer_epoch,
                batches,
                s.coordinator_epoch,
                s.last_timestamp,
                s.current_txn_first_offset,
            )
            if s.current_txn_first_offset is not None:
                self.ongoing_txns[s.current_txn_first_offset] = s.producer_id
        self.ongoing_txns = dict(sorted(self.ongoing_txns.items()))
        self.last_map_offset = snap.offset

    def replay(self, batches: list[RecordBatch], high_watermark: int) -> None:
        """Rebuild state from log batches (origin REPLICATION), as on load or truncation."""
        for b in batches:
            self.apply_replicated(b, high_watermark)

    def apply_replicated_plain(self, batches: Sequence[RecordBatch]) -> bool:
        """Do the bookkeeping of a follower's fetched slice, one update per producer, if every batch is plain.

        Plain as :meth:`plain_entry` says for a replicated batch (or no producer id at all). Then
        each producer's window gets its batches of the slice in one step, as Kafka's follower
        gathers one ``ProducerAppendInfo`` per producer for a fetched batch set and updates each
        once (``UnifiedLog.analyzeAndValidateProducerState``). The state is what
        :meth:`apply_replicated` batch by batch leaves. Returns False, changing nothing, when
        some batch is not plain: the caller then applies the batches one by one.
        """
        producers = self.producers
        groups: dict[int, list[BatchMetadata]] = {}
        for b in batches:
            pid = b.producer_id
            if pid < 0:
                continue
            entry = producers.get(pid)
            if not _plain_for(entry, b):
                return False
            n = len(b.values)
            first_seq = b.base_sequence
            meta = _new_tuple(
                BatchMetadata,
                (first_seq, first_seq + n - 1 if first_seq >= 0 else -1, b.base_offset + n - 1, b.create_time),
            )
            group = groups.get(pid)
            if group is None:
                groups[pid] = [meta]
            else:
                group.append(meta)
        window = self.window
        for pid, metas in groups.items():
            entry = producers[pid]
            kept = entry.batches
            kept.extend(metas)
            if len(kept) > window:
                del kept[: len(kept) - window]
            entry.last_timestamp = metas[-1].timestamp
        self.last_map_offset = batches[-1].next_offset
        return True

    def apply_replicated(self, batch: RecordBatch, high_watermark: int) -> CompletedTxn | None:
        """Do the bookkeeping for one batch copied from the leader or read from the log.

        Returns the transaction a marker ended, or None (a data batch, or an empty transaction).
        """
        self.last_map_offset = batch.next_offset
        if batch.producer_id < 0:
            return None
        entry = self.plain_entry(batch, AppendOrigin.REPLICATION)
        if entry is not None:
            self.append_plain(entry, batch, batch.base_offset)
            return None
        info = self.prepare_update(batch.producer_id, AppendOrigin.REPLICATION)
        if batch.is_control:
            done = info.append_end_txn_marker(batch, batch.base_offset)
            self.update(info)
            if done is not None:
                self.complete_txn(done, high_watermark)
            return done
        info.append_data_batch(batch, batch.base_offset)
        self.update(info)
        return None


class SnapshotEntry(NamedTuple):
    """One producer in a snapshot: only its last batch (what Kafka's snapshot file holds)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    current_txn_first_offset: int | None
    last_timestamp: int
    first_sequence: int
    last_sequence: int
    last_offset: int
    timestamp: int


class ProducerSnapshot(NamedTuple):
    """A producer-state snapshot taken at ``offset`` (the log end when it was written)."""

    offset: int
    entries: tuple[SnapshotEntry, ...]


def _plain_for(entry: ProducerStateEntry | None, batch: RecordBatch) -> bool:
    """True if ``batch`` is a plain data batch for ``entry``: known producer, its epoch, no transaction open."""
    return not (
        entry is None
        or batch.is_transactional
        or batch.is_control
        or entry.current_txn_first_offset is not None
        or batch.producer_epoch != entry.producer_epoch
    )
