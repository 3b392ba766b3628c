"""Per transactional id metadata on the coordinator, with staged transitions.

A transition is prepared, written to ``__transaction_state`` and completed (house style R5,
Kafka's ``prepareTransitionTo`` / ``completeTransitionTo``):

1. A ``prepare_*`` method checks the target against the table of valid previous
   states, builds the new value (a frozen :class:`TxnLogValue`) and records ``pending_state``;
   nothing else changes. While a transition is pending, another one is refused
   (CONCURRENT_TRANSACTIONS is answered by the coordinator).
2. The coordinator appends the value to the log and waits until it is replicated.
3. :meth:`TransactionMetadata.complete` re-validates (the pending state matches, epochs only
   move forward) and applies it. A failed write calls :meth:`TransactionMetadata.abort_pending`
   instead. As in Kafka, an update time earlier than the last one is accepted: the wall clock
   may step back (TransactionMetadataTest.testTolerate*TimeShift*).
"""

from __future__ import annotations

from engine.coordinator.txn_log import TxnLogValue
from engine.coordinator.txn_state import MAX_PRODUCER_EPOCH, VALID_PREVIOUS_STATES, TransactionState
from engine.errors import IllegalStateError, ProducerFencedException

S = TransactionState
#: Kafka's RecordBatch.NO_PRODUCER_ID and NO_PRODUCER_EPOCH.
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def is_epoch_exhausted(epoch: int) -> bool:
    """Return True for ``Short.MAX_VALUE - 1`` and above: a client may never be given the last epoch."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


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

    # -- the transitions Kafka's coordinator asks for (TransactionMetadata.prepare*) ------------

    def prepare_increment_producer_epoch(
        self, txn_timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> TxnLogValue:
        """InitProducerId on a known id: EMPTY with the epoch bumped, or the same answer for a retry.

        ``expected_epoch`` is the epoch the client sent (KIP-360), ``None`` for a new instance.
        The client's current epoch is bumped (``last_producer_epoch`` remembers it, so a retry of
        this call gets the same result); the epoch before that (``last_producer_epoch``) means
        the client is retrying a call that succeeded; any other epoch is fenced.
        """
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            msg = (
                f"transactional.id {self.transactional_id}: epoch {expected_epoch} is neither the current epoch "
                f"{self.producer_epoch} nor the last one {self.last_producer_epoch}"
            )
            raise ProducerFencedException(msg, transactional_id=self.transactional_id)
        if epoch > MAX_PRODUCER_EPOCH - 1 and epoch != self.producer_epoch:
            msg = f"{self.transactional_id}: cannot allocate any more epochs for producer id {self.producer_id}"
            raise IllegalStateError(msg)
        return self._stage_init(now_ms, txn_timeout_ms, producer_epoch=epoch, last_producer_epoch=last)

    def prepare_producer_id_rotation(
        self, new_producer_id: int, txn_timeout_ms: int, now_ms: int, *, record_last_epoch: bool
    ) -> TxnLogValue:
        """InitProducerId once the epoch is exhausted: a new producer id at epoch 0."""
        if self.state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT):
            msg = f"{self.transactional_id}: cannot rotate producer ids while a transaction is {self.state.name}"
            raise IllegalStateError(msg)
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._stage_init(
            now_ms, txn_timeout_ms, producer_id=new_producer_id, producer_epoch=0, last_producer_epoch=last
        )

    def _stage_init(self, now_ms: int, txn_timeout_ms: int, **producer: int) -> TxnLogValue:
        """Stage what InitProducerId leaves: EMPTY, no transaction open, the new ``producer`` id and epochs."""
        return self._stage(S.EMPTY, now_ms, txn_timeout_ms=txn_timeout_ms, partitions=(), txn_start_ms=-1, **producer)

    def prepare_add_partitions(self, partitions: tuple[tuple[str, int], ...], now_ms: int) -> TxnLogValue:
        """AddPartitionsToTxn: ONGOING with the partitions merged; a new transaction starts now."""
        ongoing = self.state is S.ONGOING
        merged = tuple(sorted(set(self.partitions if ongoing else ()) | set(partitions)))
        return self._stage(S.ONGOING, now_ms, partitions=merged, txn_start_ms=self.txn_start_ms if ongoing else now_ms)

    def prepare_fence_and_abort(
        self,
        transaction_version: int,
        now_ms: int,
        *,
        bump: bool = True,
        next_producer_id: int = NO_PRODUCER_ID,
    ) -> TxnLogValue:
        """Abort the open transaction with a bumped epoch (InitProducerId of a new instance, or a timeout).

        Kafka writes nothing for PREPARE_EPOCH_FENCE: it bumps the epoch in memory and goes on to
        PREPARE_ABORT. Version 1: the markers carry epoch + 1 and ``last_producer_epoch`` is -1.
        Version 2 (Kafka 4.1+, KAFKA-19367): the abort's own bump *is* the fence, so the markers
        carry epoch + 1, once, and ``last_producer_epoch`` is the fenced epoch: the stalled
        producer's later EndTxn(ABORT) is taken for a retry of this abort and answered with the
        new epoch, so it can carry on. At ``Short.MAX_VALUE - 1`` version 2 also moves the id to
        ``next_producer_id`` on completion (KAFKA-20090). An epoch already at ``Short.MAX_VALUE``
        stays there (Kafka logs an error since KAFKA-20090 instead of throwing). ``bump=False``
        is mutant M14. Only an ONGOING transaction can be fenced (the states PREPARE_EPOCH_FENCE
        is entered from).
        """
        if self.state not in VALID_PREVIOUS_STATES[S.PREPARE_EPOCH_FENCE]:
            msg = f"{self.transactional_id}: cannot fence the epoch of a transaction that is {self.state.name}"
            raise IllegalStateError(msg)
        if not bump:
            return self._stage(S.PREPARE_ABORT, now_ms)
        epoch = min(self.producer_epoch + 1, MAX_PRODUCER_EPOCH)
        last = self.producer_epoch if transaction_version >= 2 else NO_PRODUCER_EPOCH
        next_pid = next_producer_id if transaction_version >= 2 else NO_PRODUCER_ID
        return self._stage(
            S.PREPARE_ABORT, now_ms, producer_epoch=epoch, last_producer_epoch=last, next_producer_id=next_pid
        )

    def prepare_abort_or_commit(
        self,
        target: TransactionState,
        transaction_version: int,
        now_ms: int,
        *,
        next_producer_id: int = NO_PRODUCER_ID,
        no_partition_added: bool = False,
    ) -> TxnLogValue:
        """EndTxn: PREPARE_COMMIT or PREPARE_ABORT; version 2 bumps the epoch (KIP-890).

        ``next_producer_id`` is the id the transactional id moves to when the bump reaches the
        last epoch (version 2). A version-2 abort with nothing added (``no_partition_added``)
        starts its transaction now, as Kafka records it.
        """
        if transaction_version >= 2:
            overflow = self.producer_epoch >= MAX_PRODUCER_EPOCH and target is S.PREPARE_ABORT
            epoch, last = (self.producer_epoch if overflow else self.producer_epoch + 1), self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._stage(
            target,
            now_ms,
            producer_epoch=epoch,
            last_producer_epoch=last,
            next_producer_id=next_producer_id,
            partitions=() if no_partition_added else self.partitions,
            txn_start_ms=now_ms if no_partition_added else self.txn_start_ms,
        )

    def prepare_complete(self, now_ms: int) -> TxnLogValue:
        """After the markers: COMPLETE_COMMIT or COMPLETE_ABORT, on the next producer id if one was chosen."""
        target = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.client_transaction_version >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch = self.next_producer_id, 0
        else:
            pid, epoch = self.producer_id, self.producer_epoch
        return self._stage(target, now_ms, producer_id=pid, producer_epoch=epoch, partitions=())

    def _stage(
        self,
        target: TransactionState,
        now_ms: int,
        *,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        last_producer_epoch: int | None = None,
        next_producer_id: int = NO_PRODUCER_ID,
        partitions: tuple[tuple[str, int], ...] | None = None,
        txn_timeout_ms: int | None = None,
        txn_start_ms: int | None = None,
    ) -> TxnLogValue:
        """Check a transition against the state table and stage it; return the value to write.

        As in Kafka's ``prepareTransitionTo``, the previous producer id of every transition is the
        producer id it starts from, and nothing is applied until :meth:`complete`.
        """
        if self.pending_state is not None:
            msg = f"{self.transactional_id}: transition to {target.name} while {self.pending_state.name} is pending"
            raise IllegalStateError(msg)
        if self.state not in VALID_PREVIOUS_STATES[target]:
            msg = f"{self.transactional_id}: cannot go from {self.state.name} to {target.name}"
            raise IllegalStateError(msg)
        value = TxnLogValue(
            producer_id=self.producer_id if producer_id is None else producer_id,
            prev_producer_id=self.producer_id,
            next_producer_id=next_producer_id,
            producer_epoch=self.producer_epoch if producer_epoch is None else producer_epoch,
            last_producer_epoch=self.last_producer_epoch if last_producer_epoch is None else last_producer_epoch,
            txn_timeout_ms=self.txn_timeout_ms if txn_timeout_ms is None else txn_timeout_ms,
            state=target,
            partitions=tuple(sorted(self.partitions if partitions is None else partitions)),
            txn_start_ms=self.txn_start_ms if txn_start_ms is None else txn_start_ms,
            txn_last_update_ms=now_ms,
            client_transaction_version=self.client_transaction_version,
        )
        if value.producer_id < 0 or value.producer_epoch < 0:
            msg = f"{self.transactional_id}: illegal producer id {value.producer_id} or epoch {value.producer_epoch}"
            raise IllegalStateError(msg)
        self.pending_state = target
        return value

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        """Return True once the epoch is ``Short.MAX_VALUE - 1``: the last one is kept for fencing."""
        return is_epoch_exhausted(self.producer_epoch)

    def complete(self, value: TxnLogValue, offset: int) -> None:
        """Apply a written transition after re-validating it."""
        if self.pending_state is not value.state:
            msg = f"{self.transactional_id}: completing {value.state.name} but {self.pending_state} is pending"
            raise IllegalStateError(msg)
        if value.producer_id == self.producer_id and value.producer_epoch < self.producer_epoch:
            msg = f"{self.transactional_id}: epoch would go back from {self.producer_epoch} to {value.producer_epoch}"
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
