"""Aborting transactions open longer than ``transaction.timeout.ms``.

Kafka's ``TransactionCoordinator.abortTimedOutTransactions`` over
``TransactionStateManager.timedOutTransactions``: every
``transaction.abort.timed.out.transaction.cleanup.interval.ms`` the coordinator finds each
ONGOING transaction of a loaded partition, with no transition pending, that started more than its
timeout ago, and aborts it with a bumped epoch, which fences the producer that stalled (mutant M14
aborts without the bump). Owns no state: the check reschedules itself. Not to be confused with
transactional-id expiration (``transactional.id.expiration.ms``), which is not modelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.coordinator.txn_state import TransactionState

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.broker.broker import Broker
    from engine.coordinator.txn_metadata import TransactionMetadata
    from engine.coordinator.txn_state_manager import TransactionStateManager


class TransactionTimeouts:
    """The periodic check that aborts timed-out transactions."""

    broker: Broker

    def __init__(
        self,
        state_manager: TransactionStateManager,
        abort: Callable[[TransactionMetadata, bool], None],
        *,
        bump_epoch: bool = True,
    ) -> None:
        self.state_manager = state_manager
        self.abort = abort  # abort(metadata, bump_epoch)
        self.bump_epoch = bump_epoch

    def install(self, broker: Broker) -> None:
        """Attach to the broker and schedule the first check (at start and every restart)."""
        self.broker = broker
        broker.set_timer(broker.config.transaction_abort_timed_out_transaction_cleanup_interval_ms, self._tick)

    def _tick(self) -> None:
        broker = self.broker
        now = broker.world.now_ms
        for p in sorted(self.state_manager.txns):
            if p in self.state_manager.loading:
                continue
            txns = self.state_manager.txns[p]
            for txn_id in sorted(txns):
                md = txns[txn_id]
                if (
                    md.state is TransactionState.ONGOING
                    and md.pending_state is None
                    and now - md.txn_start_ms > md.txn_timeout_ms
                ):
                    broker.world.trace.mark(broker.name, "coordinator: timed-out transaction aborted")
                    self.abort(md, self.bump_epoch)
        broker.set_timer(broker.config.transaction_abort_timed_out_transaction_cleanup_interval_ms, self._tick)
