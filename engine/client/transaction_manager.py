"""The producer's transaction manager: producer id, epoch and the transaction (Kafka's ``TransactionManager``).

One object per producer holds the whole producer-id/epoch state machine, for both halves:

- *idempotent* (``enable.idempotence``, no ``transactional.id``): InitProducerId to any broker at
  start; the producer bumps its own epoch and restarts sequences (KIP-360) once nothing is in
  flight, after a batch failed with used sequences, a sequence gap or an unknown producer id;
  INVALID_PRODUCER_EPOCH and PRODUCER_FENCED on a produce are fatal.
- *transactional* (``transactional.id``): the states and their legal predecessors are the table
  of :mod:`engine.client.transactions`, and every change goes through its ``transition_to``. A
  failed send makes the transaction abortable and asks for an epoch bump, which the abort gets
  from the coordinator (InitProducerId with the current id and epoch); a sequence gap or fencing
  is fatal; INVALID_PRODUCER_EPOCH on a produce is abortable (KIP-588).

The transactional calls that wait (``init_transactions``, ``commit_transaction``...) are in
:mod:`engine.client.transactional_calls`; the sender consults this object on whether and how a
batch may go (``may_send_any``, ``may_send``, ``stamp``), on what an error means
(``epoch_rejection_is_abortable``, ``sequence_gap_is_fatal``) and tells it about failures
(``on_send_error``, ``bump_epoch``, ``fatal``). As Kafka's ``TransactionManager`` it holds no
producer and no sender: the producer hands it the network node, the accumulator (whose
sequences an epoch change restarts) and two callables, ``wake_sender`` and ``abort_batches``
(Kafka's ``Sender`` aborts the accumulator's batches when the transaction manager has a fatal
error; here that happens at once, in the same event).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.client.coordinator_calls import REFIND, RETRY, CoordinatorCalls
from engine.client.transactions import TransactionStateMachine, TxnClientState
from engine.coordinator_lookup import KEY_TYPE_TRANSACTION
from engine.errors import ErrorCode, KafkaError, TransactionAbortedException, exception_for
from engine.protocol import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, InitProducerIdRequest
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.accumulator import PartitionQueue, ProducerBatch, RecordAccumulator
    from engine.client.base import ClientNode
    from engine.config import ProducerConfig
    from engine.protocol import InitProducerIdResponse

T = TxnClientState
#: Errors that fence this producer: another instance has the transactional id (or a newer epoch).
FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})


class TransactionManager:
    """The producer id, epoch and (with ``transactional.id``) transaction state of one producer."""

    def __init__(
        self,
        client: ClientNode,
        config: ProducerConfig,
        accumulator: RecordAccumulator,
        *,
        wake_sender: Callable[[], None],
        abort_batches: Callable[[KafkaError], None],
        transaction_version: int = 2,
        weakenings: Weakenings = CORRECT,
    ) -> None:
        self.client = client
        self.config = config
        self.accumulator = accumulator
        self.wake_sender = wake_sender
        self.abort_batches = abort_batches
        self.idempotent = config.enable_idempotence
        self.transactional_id: str = config.transactional_id or ""
        self.transactional = config.transactional
        self.transaction_version = transaction_version
        self.weakenings = weakenings
        self.producer_id = -1
        self.producer_epoch = -1
        self._init_in_flight = False
        self._epoch_bump_pending = False
        #: the transaction's client state (None: not a transactional producer)
        self.txn = TransactionStateMachine(self.transactional_id) if self.transactional else None
        self.coordinators = CoordinatorCalls(client, config.request_timeout_ms, config.retry_backoff_ms)
        self.added: set[tuple[str, int]] = set()
        self._adding: set[tuple[str, int]] = set()
        self._add_in_flight = False
        self.txn_has_data = False
        self.txn_offsets_sent = False
        self.need_epoch_bump = False
        self.last_error: KafkaError | None = None
        #: the error that left the producer unusable (fencing, a sequence gap in a transaction...)
        self.fatal_error: KafkaError | None = None

    @property
    def state(self) -> TxnClientState:
        """Return the transaction's state (transactional producers only)."""
        return self.txn.state  # type: ignore[union-attr]

    def transition_to(self, target: TxnClientState) -> None:
        """Move the transaction to ``target`` (the table of :mod:`engine.client.transactions` decides)."""
        self.txn.transition_to(target)  # type: ignore[union-attr]

    def start(self) -> None:
        """An idempotent producer asks for its producer id at once; a transactional one waits for init."""
        if self.idempotent and not self.transactional:
            self._init_producer_id()

    # -- what the sender asks -----------------------------------------------------------------

    def may_send_any(self) -> bool:
        """Return True when batches may go: the producer has an id and no epoch bump is waiting."""
        return (not self.idempotent or self.producer_id >= 0) and not self._epoch_bump_pending

    def may_send(self, batch: ProducerBatch) -> bool:
        """Return True when ``batch`` may go; version 1 waits until its partition is in the transaction."""
        if not self.transactional or self.transaction_version >= 2 or batch.wire is not None:
            return True
        tp = (batch.topic, batch.partition)
        if tp in self.added:
            return True
        self._adding.add(tp)
        self.send_add_partitions()
        return False

    def stamp(self, q: PartitionQueue, b: ProducerBatch) -> None:
        """Give a batch sent for the first time its sequences, producer id and epoch."""
        if self.idempotent:
            b.base_sequence = q.next_sequence
            q.next_sequence += len(b.values)
            b.producer_id, b.producer_epoch = self.producer_id, self.producer_epoch
        b.is_transactional = self.transactional

    # -- what the sender reports --------------------------------------------------------------

    def on_send_error(self, err: KafkaError) -> None:
        """A record failed for good: the transaction becomes abortable (maybeTransitionToErrorState)."""
        if not self.transactional:
            return
        if isinstance(err, TransactionAbortedException) or not self.weakenings.abort_on_failed_send:
            return
        if self.state in (T.IN_TRANSACTION, T.ABORTABLE_ERROR):
            # Kafka bumps the epoch after the abort whenever a send failed outside commit/abort
            # (TransactionManager.maybeTransitionToErrorState: canBumpEpoch() && !isCompleting()).
            self.need_epoch_bump = True
        if self.state in (T.IN_TRANSACTION, T.COMMITTING_TRANSACTION):
            self.last_error = err
            self.transition_to(T.ABORTABLE_ERROR)

    def epoch_rejection_is_abortable(self, code: ErrorCode) -> bool:
        """Whether a produce refused for its epoch fails only its batch (else the producer is done).

        INVALID_PRODUCER_EPOCH in a transaction is abortable (KIP-588); PRODUCER_FENCED, and any
        epoch refusal of a producer without transactions, is fatal.
        """
        return self.transactional and code is ErrorCode.INVALID_PRODUCER_EPOCH

    def sequence_gap_is_fatal(self) -> bool:
        """Whether a sequence error the producer cannot retry is fatal.

        Inside a transaction a sequence gap cannot be repaired: the producer is done. Without one
        the sender fails the partition's later batches and the epoch is bumped (KIP-360).
        """
        return self.transactional

    def bump_epoch(self) -> None:
        """Bump the epoch and restart sequences once nothing is in flight (KIP-360).

        A transactional producer never bumps its own epoch: the next abort asks the coordinator.
        """
        if not self.idempotent:
            return
        if self.transactional:
            self.need_epoch_bump = True
            return
        if self._epoch_bump_pending:
            return
        self._epoch_bump_pending = True
        self._try_bump_epoch()

    def _try_bump_epoch(self) -> None:
        c = self.client
        queues = self.accumulator.queues
        if any(q.in_flight for q in queues.values()):
            c.set_timer(self.config.retry_backoff_ms, self._try_bump_epoch)
            return
        self._epoch_bump_pending = False
        self.producer_epoch += 1
        for q in queues.values():
            q.next_sequence = 0
            q.last_acked_sequence = -1
            for x in q.queue:
                if x.wire is not None:
                    x.wire = None  # re-stamped with the new epoch and sequences
                    x.base_sequence = -1
            q.unacked = []
        c.world.trace.emit(
            c.name, "state", events.PRODUCER_EPOCH_BUMP, ("pid", self.producer_id), ("epoch", self.producer_epoch)
        )
        self.wake_sender()

    def fatal(self, code: ErrorCode, message: str | None, *, context: bool = True) -> None:
        """Enter the fatal state and abort every batch with its error.

        ``context`` adds ``[producer_id=… producer_epoch=…]`` to the message.
        """
        if self.transactional and code in FENCED:
            code = ErrorCode.PRODUCER_FENCED
            # The coordinator's text already names the id, the producer id and both epochs: say it once.
            named = message is not None and "producerId=" in message
            message = message if named else f"transactional.id={self.transactional_id} was fenced: {message}"
            context = context and not named
        ids = {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch} if context else {}
        err = exception_for(code, message, **ids)
        self.fatal_error = err
        self.abort_batches(err)
        if self.transactional:
            self.transition_to(T.FATAL_ERROR)

    # -- producer id and epoch ----------------------------------------------------------------

    def _init_producer_id(self) -> None:
        if self._init_in_flight:
            return
        self._init_in_flight = True
        c = self.client
        c.request(
            c.pick_broker(),
            InitProducerIdRequest(),
            self._on_init_producer_id,
            timeout_ms=self.config.request_timeout_ms,
        )

    def _on_init_producer_id(self, resp: InitProducerIdResponse | None) -> None:
        self._init_in_flight = False
        c = self.client
        if resp is None or resp.error is not ErrorCode.NONE:
            c.set_timer(self.config.retry_backoff_ms, self._init_producer_id)
            return
        self.producer_id, self.producer_epoch = resp.producer_id, resp.producer_epoch
        c.world.trace.emit(
            c.name, "state", events.PRODUCER_ID, ("pid", self.producer_id), ("epoch", self.producer_epoch)
        )
        self.wake_sender()

    def set_epoch(self, producer_id: int, producer_epoch: int) -> None:
        """Take the coordinator's producer id and epoch; a new one restarts every partition's sequences."""
        changed = (producer_id, producer_epoch) != (self.producer_id, self.producer_epoch)
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        if changed:
            for q in self.accumulator.queues.values():
                q.next_sequence = 0
                q.last_acked_sequence = -1
                q.unacked = []
        self.wake_sender()

    # -- the transaction ----------------------------------------------------------------------

    def raise_if_abortable(self, action: str) -> None:
        """Raise the transaction's abortable error, saying that only abort_transaction() is left."""
        if self.state is not T.ABORTABLE_ERROR:
            return
        cause = self.last_error or exception_for(ErrorCode.UNKNOWN_SERVER_ERROR, "transaction is abortable")
        err = type(cause)(
            f"cannot {action}(): the transaction has an abortable error ({type(cause).__name__}: "
            f"{cause.base_message}); call abort_transaction(), then begin a new transaction",
            **cause.context,
        )
        raise err from cause

    def fail_call(self, code: ErrorCode, message: str | None, *, abortable: bool) -> None:
        """Raise a coordinator's error: fencing is fatal, else abortable or fatal as the call says."""
        if code in FENCED:
            self.fatal(code, message)
            raise self.fatal_error  # type: ignore[misc]
        err = exception_for(code, message, transactional_id=self.transactional_id)
        if abortable and self.state in (T.IN_TRANSACTION, T.COMMITTING_TRANSACTION, T.ABORTABLE_ERROR):
            self.last_error = err
            self.transition_to(T.ABORTABLE_ERROR)
        elif not abortable:
            self.fatal_error = err
            self.transition_to(T.FATAL_ERROR)
        raise err

    def begin(self) -> None:
        """READY → IN_TRANSACTION, with nothing added yet."""
        self.txn.require(T.READY, action="begin_transaction()")  # type: ignore[union-attr]
        self.transition_to(T.IN_TRANSACTION)
        self.added = set()
        self.txn_has_data = False
        self.txn_offsets_sent = False

    def begin_abort(self) -> None:
        """Kafka's beginAbort: partitions not yet sent to the coordinator are not added any more."""
        self.transition_to(T.ABORTING_TRANSACTION)
        self._adding.clear()

    def add_pending(self) -> bool:
        """Return True while an AddPartitionsToTxn is on its way."""
        return self._add_in_flight

    def send_add_partitions(self) -> None:
        """Version 1: add the partitions that wait to the transaction (one request at a time)."""
        if self._add_in_flight or not self._adding:
            return
        self._add_in_flight = True
        c = self.client
        tps = tuple(sorted(self._adding))

        def answered(resp: AddPartitionsToTxnResponse | None) -> None:
            self._add_in_flight = False
            if resp is not None and resp.error is ErrorCode.NONE:
                self.added |= set(tps)
                self._adding -= set(tps)
                self.wake_sender()
                self.send_add_partitions()
                return
            code = c.no_answer if resp is None else resp.error
            if code in FENCED:
                self.fatal(code, resp.error_message if resp else None)
                return
            if code in REFIND or code in RETRY:
                if code in REFIND:
                    self.coordinators.forget(KEY_TYPE_TRANSACTION, self.transactional_id)
                c.set_timer(self.config.retry_backoff_ms, self.send_add_partitions)
                return
            err = exception_for(code, resp.error_message if resp else None)
            self.last_error = err
            if self.state in (T.IN_TRANSACTION, T.COMMITTING_TRANSACTION):
                self.transition_to(T.ABORTABLE_ERROR)

        def send(coordinator: int) -> None:
            req = AddPartitionsToTxnRequest(self.transactional_id, self.producer_id, self.producer_epoch, tps)
            c.request(f"broker-{coordinator}", req, answered, timeout_ms=self.config.request_timeout_ms)

        def no_coordinator() -> None:
            self._add_in_flight = False
            c.set_timer(self.config.retry_backoff_ms, self.send_add_partitions)

        self.coordinators.with_coordinator(KEY_TYPE_TRANSACTION, self.transactional_id, send, no_coordinator)
