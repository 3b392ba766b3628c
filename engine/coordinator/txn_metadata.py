"""Per transactional id metadata on the coordinator, with staged transitions.

A transition is prepared, written to ``__transaction_state`` and completed (house style R5,
Kafka's ``prepareTransitionTo`` / ``completeTransitionTo``):

1. :meth:`TransactionMetadata.prepare` checks the target against the table of valid previous
   states, builds the new value (a frozen :class:`TxnLogValue`) and records ``pending_state``;
   nothing else changes. While a transition is pending, another one is refused
   (CONCURRENT_TRANSACTIONS is answered by the coordinator).
2. The coordinator appends the value to the log and waits until it is replicated.
3. :meth:`TransactionMetadata.complete` re-validates (the pending state matches, epochs only
   move forward, timestamps do not go back) and applies it. A failed write calls
   :meth:`TransactionMetadata.abort_pending` instead.
"""

from __future__ import annotations

from engine.coordinator.txn_log import TxnLogValue
from engine.coordinator.txn_state import VALID_PREVIOUS_STATES, TransactionState
from engine.errors import IllegalStateError


class TransactionMetadata:
    """The coordinator's view of one transactional id."""

    def __init__(
        self,
        transactional_id: str,
        producer_id: int,
        txn_timeout_ms: int,
        now_ms: int,
        client_transaction_version: int,
    ) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.prev_producer_id = -1
        self.next_producer_id = -1
        self.producer_epoch = -1
        self.last_producer_epoch = -1
        self.txn_timeout_ms = txn_timeout_ms
        self.state = TransactionState.EMPTY
        self.partitions: tuple[tuple[str, int], ...] = ()
        self.txn_start_ms = -1
        self.txn_last_update_ms = now_ms
        self.client_transaction_version = client_transaction_version
        self.pending_state: TransactionState | None = None
        self.history: list[tuple[int, TxnLogValue]] = []

    def current(self) -> TxnLogValue:
        """Return the applied state as a value."""
        return TxnLogValue(
            self.producer_id,
            self.prev_producer_id,
            self.next_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            self.state,
            self.partitions,
            self.txn_start_ms,
            self.txn_last_update_ms,
            self.client_transaction_version,
        )

    def prepare(
        self,
        target: TransactionState,
        now_ms: int,
        *,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        partitions: tuple[tuple[str, int], ...] | None = None,
        txn_timeout_ms: int | None = None,
    ) -> TxnLogValue:
        """Check and stage a transition; return the value to write (nothing applied yet)."""
        if self.pending_state is not None:
            msg = f"{self.transactional_id}: transition to {target.name} while {self.pending_state.name} is pending"
            raise IllegalStateError(msg)
        if self.state not in VALID_PREVIOUS_STATES[target]:
            msg = f"{self.transactional_id}: cannot go from {self.state.name} to {target.name}"
            raise IllegalStateError(msg)
        new_pid = self.producer_id if producer_id is None else producer_id
        new_epoch = self.producer_epoch if producer_epoch is None else producer_epoch
        if target is TransactionState.ONGOING:
            start = now_ms if self.state is not TransactionState.ONGOING else self.txn_start_ms
        elif target in (TransactionState.EMPTY,):
            start = -1
        else:
            start = self.txn_start_ms
        if partitions is None:
            partitions = () if target is TransactionState.EMPTY else self.partitions
        value = TxnLogValue(
            producer_id=new_pid,
            prev_producer_id=self.producer_id if new_pid != self.producer_id else self.prev_producer_id,
            next_producer_id=-1,
            producer_epoch=new_epoch,
            last_producer_epoch=self.producer_epoch if new_epoch != self.producer_epoch else self.last_producer_epoch,
            txn_timeout_ms=self.txn_timeout_ms if txn_timeout_ms is None else txn_timeout_ms,
            state=target,
            partitions=tuple(sorted(partitions)),
            txn_start_ms=start,
            txn_last_update_ms=now_ms,
            client_transaction_version=self.client_transaction_version,
        )
        self.pending_state = target
        return value

    def complete(self, value: TxnLogValue, offset: int) -> None:
        """Apply a written transition after re-validating it."""
        if self.pending_state is not value.state:
            msg = f"{self.transactional_id}: completing {value.state.name} but {self.pending_state} is pending"
            raise IllegalStateError(msg)
        if value.producer_id == self.producer_id and value.producer_epoch < self.producer_epoch:
            msg = f"{self.transactional_id}: epoch would go back from {self.producer_epoch} to {value.producer_epoch}"
            raise IllegalStateError(msg)
        if value.txn_last_update_ms < self.txn_last_update_ms:
            msg = f"{self.transactional_id}: update time would go back"
            raise IllegalStateError(msg)
        self.apply(value, offset)
        self.pending_state = None

    def apply(self, value: TxnLogValue, offset: int) -> None:
        """Set the state from a value (on completion, or when loading the log)."""
        self.producer_id = value.producer_id
        self.prev_producer_id = value.prev_producer_id
        self.next_producer_id = value.next_producer_id
        self.producer_epoch = value.producer_epoch
        self.last_producer_epoch = value.last_producer_epoch
        self.txn_timeout_ms = value.txn_timeout_ms
        self.state = value.state
        self.partitions = value.partitions
        self.txn_start_ms = value.txn_start_ms
        self.txn_last_update_ms = value.txn_last_update_ms
        self.client_transaction_version = value.client_transaction_version
        self.history.append((offset, value))

    def abort_pending(self) -> None:
        """Forget a prepared transition whose write failed."""
        self.pending_state = None
