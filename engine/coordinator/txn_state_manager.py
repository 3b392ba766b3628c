"""The ``__transaction_state`` partitions one broker coordinates (Kafka's ``TransactionStateManager``).

State owned, per ``__transaction_state`` partition this broker leads: the metadata of each of its
transactional ids, whether it is still loading, its coordinator epoch (the partition's leader
epoch, which markers carry) and the transitions waiting to replicate.

* **Load** (``loadTransactionsForTxnTopicPartition``): on becoming leader the partition answers
  COORDINATOR_LOAD_IN_PROGRESS for ``LOAD_MS_PER_BATCH`` per batch of its log, then its records are
  replayed and every PREPARE_* found is handed back to be finished by sending its markers again.
* **Unload** (``removeTransactionsForTxnTopicPartition``): on losing leadership its metadata is
  dropped and its pending writes fail.
* **Append** (``appendTransactionToLog``): a staged transition counts once it is below the high
  watermark; a failed min-ISR check or ``WRITE_TIMEOUT_MS`` without replication discards it.
* **Admin reads** (``listTransactionStates``, ``getTransactionState``): ListTransactions and
  DescribeTransactions (KIP-664) are answered from the loaded metadata, as Kafka's coordinator does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.coordinator.txn_log import records_of
from engine.coordinator.txn_metadata import NO_PRODUCER_EPOCH, TransactionMetadata
from engine.coordinator.txn_state import TransactionState
from engine.coordinator_lookup import TRANSACTION_STATE_TOPIC, partition_for
from engine.errors import ErrorCode
from engine.log.records import RecordBatch
from engine.protocol import DescribedTransaction, ListedTransaction, ListTransactionsResponse

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.broker.broker import Broker
    from engine.broker.replica import Replica
    from engine.coordinator.txn_log import TxnLogValue
    from engine.protocol import ListTransactionsRequest, PartitionState
    from engine.sim.scheduler import Timer

    #: Called for each PREPARE_* found on load, with its metadata and current value.
    SendMarkers = Callable[[TransactionMetadata, TxnLogValue], None]

LOAD_MS_PER_BATCH = 1
#: How long the coordinator waits for a ``__transaction_state`` write to replicate.
WRITE_TIMEOUT_MS = 5_000


class TransactionStateManager:
    """Loaded transaction metadata and ``__transaction_state`` writes of one broker."""

    broker: Broker

    def __init__(self, *, skip_replication_wait: bool = False) -> None:
        # ``skip_replication_wait`` is mutant M9: a transition counts as soon as it is appended.
        self.skip_replication_wait = skip_replication_wait
        self.txns: dict[int, dict[str, TransactionMetadata]] = {}
        self.loading: set[int] = set()
        self.coordinator_epoch: dict[int, int] = {}
        self._writes: dict[int, list[tuple[int, Callable[[bool, int], None], Timer]]] = {}

    def install(self, broker: Broker) -> None:
        """Attach to the broker (at start and every restart)."""
        self.broker = broker

    def reset(self) -> None:
        """Forget everything (a crash; the log keeps it)."""
        self.txns = {}
        self.loading = set()
        self.coordinator_epoch = {}
        self._writes = {}

    # -- ownership ------------------------------------------------------------------------------

    def partition_of(self, transactional_id: str) -> int:
        """Return the ``__transaction_state`` partition of an id."""
        return partition_for(transactional_id, self.broker.config.transaction_state_log_num_partitions)

    def owner_error(self, transactional_id: str) -> ErrorCode:
        """Return NONE if this broker coordinates the id and has loaded it, else the error to answer."""
        p = self.partition_of(transactional_id)
        r = self.broker.replicas.get((TRANSACTION_STATE_TOPIC, p))
        if r is None or not r.is_leader or p not in self.txns:
            return ErrorCode.NOT_COORDINATOR
        if p in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def is_current(self, md: TransactionMetadata) -> bool:
        """Return True if ``md`` is the loaded metadata of its id (not an object from before a reload)."""
        txns = self.txns.get(self.partition_of(md.transactional_id))
        return txns is not None and txns.get(md.transactional_id) is md

    # -- load and unload ------------------------------------------------------------------------

    def load(self, state: PartitionState, send_markers: SendMarkers) -> None:
        """Start loading a partition this broker now leads; ``send_markers`` finishes each PREPARE_* found."""
        p = state.partition
        self.loading.add(p)
        self.coordinator_epoch[p] = state.leader_epoch
        self.txns[p] = {}
        r = self.broker.replicas[(state.topic, p)]
        delay = max(1, LOAD_MS_PER_BATCH * len(r.log))
        self.broker.set_timer(delay, self._finish_load, p, state.leader_epoch, send_markers)

    def _finish_load(self, p: int, leader_epoch: int, send_markers: SendMarkers) -> None:
        broker = self.broker
        r = broker.replicas.get((TRANSACTION_STATE_TOPIC, p))
        if r is None or not r.is_leader or r.state is None or r.state.leader_epoch != leader_epoch:
            return
        txns: dict[str, TransactionMetadata] = {}
        for offset, txn_id, value in records_of(r.log.batches):
            if value is None:
                txns.pop(txn_id, None)
                continue
            md = txns.get(txn_id)
            if md is None:
                md = txns[txn_id] = TransactionMetadata(
                    txn_id,
                    value.producer_id,
                    value.txn_timeout_ms,
                    value.txn_last_update_ms,
                    value.client_transaction_version,
                )
            md.apply(value, offset)
        for md in txns.values():
            # Kafka does not write the last epoch to the log: a retried InitProducerId that spans
            # a coordinator change is fenced (the rare case TransactionMetadata's comments accept).
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        self.txns[p] = txns
        self.loading.discard(p)
        broker.world.trace.emit(
            broker.name,
            "state",
            events.COORDINATOR_LOADED,
            ("partition", p),
            ("epoch", leader_epoch),
            ("ids", len(txns)),
        )
        for txn_id in sorted(txns):
            md = txns[txn_id]
            if md.state.is_prepare:
                broker.world.trace.mark(broker.name, "coordinator: completing a PREPARE found on load")
                send_markers(md, md.current())

    def unload(self, p: int) -> list[str]:
        """Drop a partition this broker no longer leads; return its transactional ids, sorted."""
        self.loading.discard(p)
        return sorted(self.txns.pop(p, {}))

    def fail_writes(self, p: int) -> None:
        """Fail every write still waiting to replicate on an unloaded partition."""
        for _required, callback, timer in self._writes.pop(p, []):
            timer.cancel()
            callback(False, -1)

    # -- append ---------------------------------------------------------------------------------

    def append(self, md: TransactionMetadata, value: TxnLogValue, done: Callable[[bool, int], None]) -> None:
        """Append a staged transition and call ``done(ok, offset)`` once it is replicated (or failed)."""
        broker = self.broker
        p = self.partition_of(md.transactional_id)
        r = broker.replicas.get((TRANSACTION_STATE_TOPIC, p))
        if r is None or not r.is_leader:
            md.abort_pending()
            done(False, -1)
            return
        err = r.check_min_isr(broker.min_insync_replicas(TRANSACTION_STATE_TOPIC))
        if err is not None:
            md.abort_pending()
            done(False, -1)
            return
        offset, _dup, _ = r.append_as_leader(
            RecordBatch(keys=(md.transactional_id,), values=(value,), create_time=broker.world.now_ms), None
        )  # type: ignore[arg-type]
        broker.world.trace.emit(
            broker.name,
            "state",
            events.TXN_STATE_WRITE,
            ("txn_id", md.transactional_id),
            ("state", value.state.name),
            ("pid", value.producer_id),
            ("epoch", value.producer_epoch),
            ("offset", offset),
        )

        def replicated(ok: bool, at: int) -> None:
            if not ok:
                md.abort_pending()
                done(False, -1)
                return
            md.complete(value, at)
            done(True, at)

        broker.after_append(r)
        if self.skip_replication_wait or offset < r.high_watermark:
            replicated(True, offset)
            return
        timer = broker.set_timer(WRITE_TIMEOUT_MS, self._write_expired, p, offset + 1)
        self._writes.setdefault(p, []).append((offset + 1, replicated, timer))

    def on_high_watermark(self, r: Replica) -> None:
        """Complete the writes now below the HW (``r`` may be any partition this broker leads)."""
        if r.topic != TRANSACTION_STATE_TOPIC:
            return
        writes = self._writes.get(r.partition)
        if not writes:
            return
        hw = r.high_watermark
        ready = [w for w in writes if w[0] <= hw]
        self._writes[r.partition] = [w for w in writes if w[0] > hw]
        for required, callback, timer in ready:
            timer.cancel()
            callback(True, required - 1)

    def _write_expired(self, p: int, required: int) -> None:
        writes = self._writes.get(p, [])
        for w in writes:
            if w[0] == required:
                writes.remove(w)
                w[1](False, -1)
                return

    # -- views ----------------------------------------------------------------------------------

    def describe(self) -> dict[str, TransactionMetadata]:
        """Return the metadata of every transactional id in a loaded partition, by id."""
        out: dict[str, TransactionMetadata] = {}
        for p in sorted(self.txns):
            if p not in self.loading:
                out.update(self.txns[p])
        return dict(sorted(out.items()))

    def list_transactions(self, req: ListTransactionsRequest, now_ms: int) -> ListTransactionsResponse:
        """Answer ListTransactions for the partitions this broker leads (Kafka's ``listTransactionStates``).

        COORDINATOR_LOAD_IN_PROGRESS while any of them loads; a state filter naming no state comes
        back in ``unknown_state_filters``; DEAD (an id being expired) is never listed. The duration
        filter keeps ``now - start > MS`` (a start of -1 always passes).
        """
        if self.loading:
            return ListTransactionsResponse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        by_name = {s.display_name: s for s in TransactionState}
        unknown = tuple(name for name in req.state_filters if name not in by_name)
        states = {by_name[name] for name in req.state_filters if name in by_name}
        rows = []
        for txn_id, md in self.describe().items():
            if md.state is TransactionState.DEAD:
                continue
            if req.producer_id_filters and md.producer_id not in req.producer_id_filters:
                continue
            if req.state_filters and md.state not in states:
                continue
            if req.duration_filter_ms >= 0 and now_ms - md.txn_start_ms <= req.duration_filter_ms:
                continue
            rows.append(ListedTransaction(txn_id, md.producer_id, md.state.display_name))
        return ListTransactionsResponse(ErrorCode.NONE, unknown, tuple(rows))

    def describe_transaction(self, transactional_id: str) -> DescribedTransaction:
        """Answer DescribeTransactions for one id (Kafka's ``TransactionCoordinator.handleDescribeTransactions``).

        INVALID_REQUEST for an empty id; NOT_COORDINATOR when this broker does not lead the id's
        partition, COORDINATOR_LOAD_IN_PROGRESS while it loads it; TRANSACTIONAL_ID_NOT_FOUND for
        an id it does not know (or a DEAD one).
        """
        if not transactional_id:
            return DescribedTransaction(transactional_id, ErrorCode.INVALID_REQUEST)
        code = self.owner_error(transactional_id)
        if code is not ErrorCode.NONE:
            return DescribedTransaction(transactional_id, code)
        md = self.txns[self.partition_of(transactional_id)].get(transactional_id)
        if md is None or md.state is TransactionState.DEAD:
            return DescribedTransaction(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        return DescribedTransaction(
            transactional_id,
            ErrorCode.NONE,
            md.state.display_name,
            md.producer_id,
            md.producer_epoch,
            md.txn_timeout_ms,
            md.txn_start_ms,
            tuple(sorted(md.partitions)),
        )
