"""The coordinator side of WriteTxnMarkers (Kafka's ``TransactionMarkerChannelManager``).

Once PREPARE_COMMIT / PREPARE_ABORT is replicated, one WriteTxnMarkersRequest goes to the leader
of each partition of the transaction (Kafka batches them per broker), stamped with the coordinator
epoch. A marker is retried every ``MARKER_RETRY_BACKOFF_MS`` until a leader has written it: giving
up would leave that partition's transaction open for ever (a hanging transaction). When the last
partition answers, COMPLETE_COMMIT / COMPLETE_ABORT is written, retried while this broker still
coordinates the id.

State owned: per transactional id, the partitions still waiting for their marker. The partition
leader's side, which appends the markers, is ``markers.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.coordinator.txn_state import TransactionState
from engine.errors import ErrorCode
from engine.protocol import WriteTxnMarkersRequest, WriteTxnMarkersResponse

if TYPE_CHECKING:
    from collections.abc import Iterable

    from engine.broker.broker import Broker
    from engine.coordinator.txn_log import TxnLogValue
    from engine.coordinator.txn_metadata import TransactionMetadata
    from engine.coordinator.txn_state_manager import TransactionStateManager

S = TransactionState
MARKER_RETRY_BACKOFF_MS = 100
MARKER_REQUEST_TIMEOUT_MS = 10_000


class TransactionMarkerChannel:
    """Sends the markers of ended transactions and writes their completion."""

    broker: Broker

    def __init__(self, state_manager: TransactionStateManager) -> None:
        self.state_manager = state_manager
        self.pending: dict[str, set[tuple[str, int]]] = {}

    def install(self, broker: Broker) -> None:
        """Attach to the broker (at start and every restart)."""
        self.broker = broker

    def reset(self) -> None:
        """Forget every marker in flight (a crash)."""
        self.pending = {}

    def forget(self, txn_ids: Iterable[str]) -> None:
        """Stop sending the markers of ids whose partition was unloaded (the next coordinator sends them)."""
        for txn_id in txn_ids:
            self.pending.pop(txn_id, None)

    def send_markers(self, md: TransactionMetadata, value: TxnLogValue) -> None:
        """Send the markers of a replicated PREPARE_* ``value`` to every partition it names."""
        txn_id = md.transactional_id
        pending = set(value.partitions)
        self.pending[txn_id] = pending
        if not pending:
            self._complete(md, value)
            return
        for tp in sorted(pending):
            self._send_marker(md, value, tp)

    def _send_marker(self, md: TransactionMetadata, value: TxnLogValue, tp: tuple[str, int]) -> None:
        broker = self.broker
        txn_id = md.transactional_id
        if not self.state_manager.is_current(md) or tp not in self.pending.get(txn_id, set()):
            return
        if self.state_manager.owner_error(txn_id) is not ErrorCode.NONE:
            return
        leader = broker.metadata.get(tp)
        if leader is None or leader.leader < 0:
            broker.set_timer(MARKER_RETRY_BACKOFF_MS, self._send_marker, md, value, tp)
            return
        p = self.state_manager.partition_of(txn_id)
        req = WriteTxnMarkersRequest(
            txn_id,
            value.producer_id,
            value.producer_epoch,
            self.state_manager.coordinator_epoch.get(p, 0),
            value.state is S.PREPARE_COMMIT,
            tp[0],
            tp[1],
        )
        broker.request(
            f"broker-{leader.leader}",
            req,
            lambda resp: self._marker_answer(md, value, tp, resp),
            timeout_ms=MARKER_REQUEST_TIMEOUT_MS,
        )

    def _marker_answer(
        self,
        md: TransactionMetadata,
        value: TxnLogValue,
        tp: tuple[str, int],
        resp: WriteTxnMarkersResponse | None,
    ) -> None:
        pending = self.pending.get(md.transactional_id)
        if not self.state_manager.is_current(md) or pending is None or tp not in pending:
            # An answer for metadata this coordinator has since reloaded: the reloaded copy owns
            # the markers now, and completing the stale copy would leave the real one stuck.
            return
        if resp is None or resp.error is not ErrorCode.NONE:
            # Retry until written: a marker may never be given up on, or the partition hangs.
            self.broker.set_timer(MARKER_RETRY_BACKOFF_MS, self._send_marker, md, value, tp)
            return
        pending.discard(tp)
        if not pending:
            self._complete(md, value)

    def _complete(self, md: TransactionMetadata, value: TxnLogValue) -> None:
        if not self.state_manager.is_current(md):
            return
        self.pending.pop(md.transactional_id, None)
        target = S.COMPLETE_COMMIT if value.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if md.pending_state is not None or md.state is not value.state:
            return
        done = md.prepare_complete(self.broker.world.now_ms)

        def written(ok: bool, _offset: int) -> None:
            if not ok:
                # Leadership moved (the next coordinator completes it on load) or the write failed
                # while this broker still coordinates: retry, as Kafka does, or the id stays stuck.
                if self.state_manager.owner_error(md.transactional_id) is ErrorCode.NONE:
                    self.broker.set_timer(MARKER_RETRY_BACKOFF_MS, self._complete, md, value)
                return
            self.broker.world.trace.emit(
                self.broker.name,
                "state",
                events.TXN_COMPLETE,
                ("txn_id", md.transactional_id),
                ("result", target.display_name),
                ("epoch", done.producer_epoch),
            )

        self.state_manager.append(md, done, written)
