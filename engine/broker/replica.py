"""One partition replica on one broker: its log, producer state, high watermark and role.

Durable parts live on the broker's disk and survive a crash: the :class:`PartitionLog`, the
aborted-transaction index, the producer-state snapshots and the high-watermark checkpoint.
Everything else here is volatile and rebuilt on restart: the producer-state table (from the
latest snapshot plus the log after it), the role, the ISR view and the followers' progress.

Leader duties (Kafka's ``Partition`` + ``UnifiedLog``)
-------------------------------------------------------
- validate and append producer batches (dedup window, sequence and epoch checks, staged);
- track each follower's log end offset; the high watermark (HW) is the smallest LEO in the ISR
  and never moves back while this broker leads;
- compute the last stable offset: ``LSO = min(first unstable offset, HW)``;
- propose ISR shrinks for followers that fell behind for ``replica.lag.time.max.ms`` and
  expansions for followers that caught up to the HW.

Follower duties: append what the leader sends (doing the producer-state bookkeeping as it goes,
so a new leader deduplicates retries), take the leader's HW, and truncate a divergent tail found
through the leader-epoch cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.errors import ErrorCode, IllegalStateError
from engine.log.partition_log import PartitionLog
from engine.log.producer_state import (
    AppendOrigin,
    CompletedTxn,
    LogValidationError,
    ProducerSnapshot,
    ProducerStateManager,
)
from engine.log.records import RecordBatch
from engine.log.txn_index import AbortedTxn, TransactionIndex
from engine.sim.disk import DurableList
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.protocol import PartitionState
    from engine.sim.disk import Disk
    from engine.sim.trace import Trace


#: Detail keys of the leader's ``log.append`` and ``log.hw`` events (``Trace.emit_fields``).
_APPEND_KEYS = ("tp", "offset", "last", "pid", "epoch", "first_seq", "last_seq", "txn")
_HW_KEYS = ("tp", "hw", "lso")


class HighWatermarkCheckpoint:
    """The durable high-watermark file of one broker (Kafka's replication-offset-checkpoint)."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: dict[str, int] = {}


class Replica:
    """A partition replica hosted on one broker."""

    def __init__(
        self,
        topic: str,
        partition: int,
        broker_id: int,
        disk: Disk,
        *,
        segment_bytes: int,
        weak: Weakenings = CORRECT,
        offset_hooks: list[Callable[[Replica], None]] | None = None,
        trace: Trace | None = None,
        node: str = "",
    ) -> None:
        self.weak = weak
        #: Where the leader's appends and HW/LSO moves are traced (None: not traced, as in unit tests).
        self._emit = trace.emit if trace is not None else None
        self._emit_fields = trace.emit_fields if trace is not None else None
        self._node = node
        #: The LSO last traced, so a ``log.lso`` event is emitted only when it moves.
        self._traced_lso = -1
        #: Observers' ``on_offsets`` hooks (the trace's shared list; see engine/sim/observer.py).
        self.offset_hooks: list[Callable[[Replica], None]] = offset_hooks if offset_hooks is not None else []
        self.topic = topic
        self.partition = partition
        self.tp = f"{topic}-{partition}"
        self.broker_id = broker_id
        self.log: PartitionLog = disk.open(f"log:{self.tp}", lambda: PartitionLog(self.tp, segment_bytes=segment_bytes))
        self.txn_index: TransactionIndex = disk.open(f"txnindex:{self.tp}", TransactionIndex)
        self.snapshots: DurableList = disk.open(f"snapshots:{self.tp}", DurableList)
        self._checkpoint: HighWatermarkCheckpoint = disk.open("hw-checkpoint", HighWatermarkCheckpoint)
        self.high_watermark = min(self._checkpoint.values.get(self.tp, 0), self.log.log_end_offset)
        self.producers = self._new_producer_state()
        self.state: PartitionState | None = None
        self.is_leader = False
        self.follower_leo: dict[int, int] = {}
        self.follower_caught_up_ms: dict[int, int] = {}
        self.pending_isr_change = False
        self.leader_epoch_start_offset = 0
        self.joining_isr: tuple[int, ...] = ()
        self.rebuild_producer_state()

    # -- producer state --------------------------------------------------------------------

    def _new_producer_state(self) -> ProducerStateManager:
        return ProducerStateManager(
            self.tp,
            window=self.weak.dedup_window,
            fence_epochs=self.weak.fence_epochs,
            reject_unknown=self.weak.reject_unknown_producer_sequence,
        )

    def take_snapshot(self, offset: int | None = None) -> ProducerSnapshot:
        """Write a producer-state snapshot at ``offset`` (the log end by default)."""
        snap = self.producers.snapshot(self.log.log_end_offset if offset is None else offset)
        self.snapshots.append(snap)
        return snap

    def rebuild_producer_state(self) -> None:
        """Rebuild the producer table from the latest usable snapshot plus the log after it."""
        self.producers = self._new_producer_state()
        leo = self.log.log_end_offset
        usable = [s for s in self.snapshots.items if s.offset <= leo]
        start = 0
        if usable:
            snap = usable[-1]
            self.producers.load_snapshot(snap)
            start = snap.offset
        self.producers.replay(self.log.read(start, 1 << 62) if start < leo else [], self.high_watermark)

    # -- roles -----------------------------------------------------------------------------

    def become_leader(self, state: PartitionState, now_ms: int) -> None:
        """Take leadership in ``state.leader_epoch``."""
        self.state = state
        self.is_leader = True
        # Kafka's leaderEpochStartOffset: a follower is in sync only once it holds everything this
        # leader had when it took over, even if the (possibly lagging) HW is lower.
        self.leader_epoch_start_offset = self.log.log_end_offset
        self.follower_leo = {r: 0 for r in state.replicas if r != self.broker_id}
        self.follower_caught_up_ms = dict.fromkeys(self.follower_leo, now_ms)
        self.joining_isr = ()
        self.pending_isr_change = False
        if self.offset_hooks:
            self._offsets_moved()

    def become_follower(self, state: PartitionState) -> None:
        """Follow ``state.leader`` in ``state.leader_epoch``."""
        self.state = state
        self.is_leader = False
        self.follower_leo = {}
        self.follower_caught_up_ms = {}

    # -- offsets ---------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        """Return the LEO."""
        return self.log.log_end_offset

    def set_high_watermark(self, hw: int) -> bool:
        """Move the HW (never beyond the LEO); return True if it moved."""
        hw = min(hw, self.log.log_end_offset)
        if hw == self.high_watermark:
            return False
        self.high_watermark = hw
        self._checkpoint.values[self.tp] = hw
        self.producers.on_high_watermark(hw)
        if self.is_leader and self._emit is not None:
            lso = self._traced_lso = self.last_stable_offset
            self._emit_fields(self._node, "state", events.LOG_HW, _HW_KEYS, self.tp, hw, lso)  # type: ignore[misc]
        if self.offset_hooks:
            self._offsets_moved()
        return True

    def _trace_append(self, batch: RecordBatch, offset: int) -> None:
        """Trace a data batch the leader appended (it also moved that producer's state)."""
        self._emit_fields(  # type: ignore[misc]
            self._node,
            "state",
            events.LOG_APPEND,
            _APPEND_KEYS,
            self.tp,
            offset,
            offset + batch.count - 1,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.last_sequence,
            batch.is_transactional,
        )

    def _trace_lso(self) -> None:
        """Trace the LSO when a marker moved it (an HW move traces it with the HW)."""
        lso = self.last_stable_offset
        if lso != self._traced_lso:
            self._traced_lso = lso
            self._emit(self._node, "state", events.LOG_LSO, ("tp", self.tp), ("lso", lso))  # type: ignore[misc]

    def _offsets_moved(self) -> None:
        """Tell the observers' ``on_offsets`` hooks that LEO, HW, LSO or the epoch may have moved."""
        for hook in self.offset_hooks:
            hook(self)

    @property
    def last_stable_offset(self) -> int:
        """Return the LSO: the first unstable offset, capped by the HW."""
        fuo = self.producers.first_unstable_offset()
        hw = self.high_watermark
        return hw if fuo is None or fuo > hw else fuo

    def maybe_advance_hw(self) -> bool:
        """Leader: set the HW to the smallest LEO in the ISR; return True if it moved.

        While an ISR expansion is in flight the *maximal* ISR counts (Kafka's KIP-497 rule): a
        follower about to join must already hold what the HW covers, or a record committed just
        before the join would be missing from an ISR member that may later be elected.
        """
        if self.state is None:
            raise IllegalStateError(f"{self.tp}: a leader duty on a replica that has no partition state yet")
        leo = self.log.log_end_offset
        new_hw = leo
        for r in (*self.state.isr, *self.joining_isr):
            if r != self.broker_id:
                f = self.follower_leo.get(r, 0)
                if f < new_hw:
                    new_hw = f
        if new_hw > self.high_watermark:
            return self.set_high_watermark(new_hw)
        return False

    # -- appends ---------------------------------------------------------------------------

    def append_as_leader(self, batch: RecordBatch, origin: AppendOrigin) -> tuple[int, bool, CompletedTxn | None]:
        """Validate and append a batch; return ``(base_offset, was_duplicate, completed_txn)``.

        ``completed_txn`` is None for data and for a marker of an empty transaction (no data of
        its producer since the previous marker): such a marker is appended and fences like any
        other, but completes nothing and adds no aborted-index entry (as in Kafka).

        Raises :class:`LogValidationError` with the code to answer; the log and producer state
        are then unchanged.
        """
        if self.state is None:
            raise IllegalStateError(f"{self.tp}: a leader duty on a replica that has no partition state yet")
        log = self.log
        offset = log.log_end_offset
        if batch.producer_id < 0:
            return self._appended(batch, offset, log.append(batch.assigned(offset, self.state.leader_epoch)))
        producers = self.producers
        if not batch.is_control and origin is AppendOrigin.CLIENT:
            # Only client batches carry sequences worth deduplicating (Kafka's analyzeAndValidateProducerState).
            dup = producers.find_duplicate(batch)
            if dup is not None:
                return dup.first_offset, True, None
            entry = producers.plain_entry(batch, origin)
            if entry is not None:
                # The common case, validated without a staged copy (see plain_entry).
                rolled = log.append(batch.assigned(offset, self.state.leader_epoch))
                producers.append_plain(entry, batch, offset)
                return self._appended(batch, offset, rolled)
        info = producers.prepare_update(batch.producer_id, origin)
        done = None
        if batch.is_control:
            done = info.append_end_txn_marker(batch, offset)
        else:
            info.append_data_batch(batch, offset)
        rolled = log.append(batch.assigned(offset, self.state.leader_epoch))
        producers.update(info)
        if done is not None:
            self._complete_txn(done)
        if rolled:
            self.take_snapshot()
        if self._emit is not None:
            if batch.is_control:
                self._trace_lso()
            else:
                self._trace_append(batch, offset)
        if self.offset_hooks:
            self._offsets_moved()
        return offset, False, done

    def _appended(self, batch: RecordBatch, offset: int, rolled: bool) -> tuple[int, bool, None]:
        """The tail of a data append outside a transaction's staged update: snapshot, trace, observers."""
        if rolled:
            self.take_snapshot()
        if self._emit is not None:
            self._trace_append(batch, offset)
        if self.offset_hooks:
            self._offsets_moved()
        return offset, False, None

    def append_as_follower(self, batches: tuple[RecordBatch, ...]) -> None:
        """Append batches copied from the leader (their offsets are the leader's).

        The fetched slice goes into the log in one append and, when every batch is plain, into
        producer state with one update per producer, as Kafka's follower appends a batch set
        (``Partition.appendRecordsToFollowerOrFutureReplica``, ``UnifiedLog.appendAsFollower``).
        Batches the log already holds are skipped. A slice that would roll the segment, or (for
        producer state) holds a transactional batch, a marker or a new producer or epoch, is
        applied batch by batch, so snapshots and transactions see every step as before.
        """
        log = self.log
        leo = log.log_end_offset
        if batches and batches[0].base_offset < leo:
            batches = tuple([b for b in batches if b.base_offset >= leo])
        if not batches:
            return
        if log.append_slice(batches):
            if not self.weak.followers_track_producer_state:
                return  # mutant M16: a new leader will not know the batches it copied
            if not self.producers.apply_replicated_plain(batches):
                for b in batches:
                    self._track_copied(b)
            return
        for b in batches:
            if b.base_offset < log.log_end_offset:
                continue
            rolled = log.append(b)
            if not self.weak.followers_track_producer_state:
                continue  # mutant M16: a new leader will not know the batches it copied
            self._track_copied(b)
            if rolled:
                self.take_snapshot()

    def _track_copied(self, batch: RecordBatch) -> None:
        """Do a copied batch's producer-state bookkeeping; index the transaction it aborted, if any."""
        done = self.producers.apply_replicated(batch, self.high_watermark)
        if done is not None and done.is_aborted:
            self.txn_index.append(self._aborted_entry(done))

    def _complete_txn(self, done: CompletedTxn) -> None:
        self.producers.complete_txn(done, self.high_watermark)
        if done.is_aborted:
            self.txn_index.append(self._aborted_entry(done))

    def _aborted_entry(self, done: CompletedTxn) -> AbortedTxn:
        """Build the index entry; its LSO is Kafka's ``lastStableOffset(completedTxn)``.

        That is the first offset of the earliest *other* open transaction, or the offset just
        past the marker when none is open (``ProducerStateManager.lastStableOffset``).
        """
        others = [first for first, pid in self.producers.ongoing_txns.items() if pid != done.producer_id]
        lso = min(others) if others else done.last_offset + 1
        return AbortedTxn(done.producer_id, done.first_offset, done.last_offset, lso)

    def truncate_to(self, offset: int) -> int:
        """Cut the log (and the txn index) back to ``offset`` and rebuild producer state."""
        removed = self.log.truncate_to(offset)
        if removed:
            self.txn_index.truncate_to(offset)
            self.snapshots.items[:] = [s for s in self.snapshots.items if s.offset <= offset]
            self.snapshots.flushed = min(self.snapshots.flushed, len(self.snapshots.items))
            if self.high_watermark > self.log.log_end_offset:
                self.high_watermark = self.log.log_end_offset
                self._checkpoint.values[self.tp] = self.high_watermark
            self.rebuild_producer_state()
            if self.offset_hooks:
                self._offsets_moved()
        return removed

    def check_min_isr(self, min_isr: int) -> LogValidationError | None:
        """Return the NOT_ENOUGH_REPLICAS error when the ISR is below ``min_isr``."""
        if self.state is None:
            raise IllegalStateError(f"{self.tp}: a leader duty on a replica that has no partition state yet")
        if len(self.state.isr) < min_isr:
            return LogValidationError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {list(self.state.isr)} is insufficient to satisfy the min.isr "
                f"requirement of {min_isr} for partition {self.tp}",
            )
        return None
