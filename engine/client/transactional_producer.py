"""The transactional producer: confluent-kafka's transaction API over the simulated coordinator.

``init_transactions``, ``begin_transaction``, ``produce``, ``send_offsets_to_transaction``,
``commit_transaction``, ``abort_transaction``. Each call that talks to a coordinator *waits*: it
runs the simulation until the answer comes or ``timeout`` simulated seconds pass (then
``TimeoutException``). The client-side state machine is in ``engine/client/transactions.py``.

Errors (Kafka's ``TransactionManager``): a record that fails for good (unknown topic after
``max.block.ms``, expired after ``delivery.timeout.ms``, too large, rejected by the broker)
makes the transaction *abortable*: commit raises that error, and only ``abort_transaction`` (then
a new transaction) is allowed. A call that times out (``TimeoutException``) may be *retried*: the
same call again waits for the same result (a commit that timed out may already be completing, so
it cannot be aborted instead: retry it, or close the producer), as Kafka's ``KafkaProducer`` and
confluent-kafka allow.

Transaction version 1 sends AddPartitionsToTxn before the first batch to each partition (a
transaction the coordinator acknowledged no partition or offsets of ends without EndTxn, as in
Kafka); version 2 (KIP-890 part 2, the default) does not: partition leaders verify with the coordinator,
and every EndTxn returns a bumped epoch that the next transaction uses, with sequences from 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.args import wait_ms
from engine.client.message import TopicPartition
from engine.client.producer import Producer
from engine.client.transactions import TransactionStateMachine, TxnClientState
from engine.coordinator_lookup import KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION
from engine.errors import (
    ErrorCode,
    IllegalStateError,
    KafkaError,
    TimeoutException,
    TransactionAbortedException,
    exception_for,
)
from engine.group import txn_offsets
from engine.protocol import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from engine.sim import events
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.accumulator import PartitionQueue, ProducerBatch
    from engine.sim.world import World

T = TxnClientState
#: Coordinator errors after which the client looks the coordinator up again and retries.
_REFIND = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
_RETRY = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
    }
)
_FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})


class TransactionalProducer(Producer):
    """A producer with ``transactional.id`` set."""

    def __init__(
        self,
        world: World,
        bootstrap: list[str],
        config: dict[str, Any],
        *,
        transaction_version: int = 2,
        weakenings: Weakenings = CORRECT,
    ) -> None:
        super().__init__(world, bootstrap, config)
        self.weakenings = weakenings
        self.transactional_id: str = self.config.transactional_id or ""
        self.transaction_version = transaction_version
        self.txn = TransactionStateMachine(self.transactional_id)
        self.coordinators: dict[tuple[int, str], int] = {}
        self.added: set[tuple[str, int]] = set()
        self._adding: set[tuple[str, int]] = set()
        self._add_in_flight = False
        self._txn_has_data = False
        self._txn_offsets_sent = False
        self._need_epoch_bump = False
        self.last_error: KafkaError | None = None
        #: a call that raised TimeoutException and may be called again to wait for its result
        self._pending_call: str | None = None
        self.txn_metrics = dict.fromkeys(
            (
                "txn-init-time-ns-total",
                "txn-begin-time-ns-total",
                "txn-send-offsets-time-ns-total",
                "txn-commit-time-ns-total",
                "txn-abort-time-ns-total",
            ),
            0,
        )

    # ======================================================================================
    # public API
    # ======================================================================================

    def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id and epoch for ``transactional.id``, fencing older instances."""
        start = self.world.now_ms
        wait_ms(timeout, "init_transactions", default="max.block.ms")
        self._raise_if_fatal()
        resume = self._resuming("init_transactions")
        if not resume:
            if self.txn.state is not T.UNINITIALIZED:
                msg = (
                    f"init_transactions() was already called on this producer (it is {self.txn.state.name}); "
                    f"call it once per producer: to fence an older instance, create a new producer"
                )
                raise IllegalStateError(msg)
            self._pending_call = "init_transactions"
        request = InitProducerIdRequest(self.transactional_id, self.config.transaction_timeout_ms)
        self._resumable(lambda: self._obtain_epoch(timeout, "init_transactions", request, resume=resume))
        self.world.trace.emit(
            self.name,
            "state",
            events.TXN_INIT,
            ("txn_id", self.transactional_id),
            ("pid", self.producer_id),
            ("epoch", self.producer_epoch),
        )
        self._add_time("txn-init-time-ns-total", start)

    def begin_transaction(self) -> None:
        """Start a transaction (local: nothing is sent until the first record or offsets)."""
        self._raise_if_fatal()
        self._refuse_if_pending("begin_transaction")
        self.txn.require(T.READY, action="begin_transaction()")
        self.txn.transition_to(T.IN_TRANSACTION)
        self.added = set()
        self._txn_has_data = False
        self._txn_offsets_sent = False
        self.world.trace.emit(
            self.name, "state", events.TXN_BEGIN, ("txn_id", self.transactional_id), ("epoch", self.producer_epoch)
        )
        if self.observer is not None:
            self.observer.on_transaction(self, "begin", None)

    def send_offsets_to_transaction(
        self, offsets: list[TopicPartition], group_metadata: Any, timeout: float | None = None
    ) -> None:
        """Commit consumer offsets as part of the transaction (AddOffsetsToTxn, then TxnOffsetCommit).

        ``group_metadata`` (``consumer.group_metadata()``) lets the group coordinator fence a consumer
        that is no longer in that generation: the call then raises ``CommitFailedException``, an
        abortable error (KIP-447, :mod:`engine.group.txn_offsets`).
        """
        start = self.world.now_ms
        triples = _offset_triples(offsets)
        group_id, generation, member, instance = txn_offsets.group_fields(group_metadata)
        wait_ms(timeout, "send_offsets_to_transaction", default="max.block.ms")
        self._raise_if_fatal()
        self._refuse_if_pending("send_offsets_to_transaction")
        self._raise_if_abortable("send_offsets_to_transaction")
        self.txn.require(T.IN_TRANSACTION, action="send_offsets_to_transaction()")
        resp = self._coordinator_call(
            KEY_TYPE_TRANSACTION,
            self.transactional_id,
            lambda: AddOffsetsToTxnRequest(self.transactional_id, self.producer_id, self.producer_epoch, group_id),
            timeout,
            "send_offsets_to_transaction",
        )
        if resp.error is not ErrorCode.NONE:
            self._fail_call(resp.error, resp.error_message, abortable=True)
        self._txn_offsets_sent = True
        resp2 = self._coordinator_call(
            KEY_TYPE_GROUP,
            group_id,
            lambda: TxnOffsetCommitRequest(
                self.transactional_id,
                group_id,
                self.producer_id,
                self.producer_epoch,
                generation,
                member,
                instance,
                triples,
            ),
            timeout,
            "send_offsets_to_transaction",
        )
        if resp2.error is not ErrorCode.NONE:
            err = txn_offsets.fenced_commit_error(resp2.error, group_id, generation, self.transactional_id)
            if err is not None:
                self.world.trace.mark(self.name, "producer: stale group generation rejected (KIP-447)")
                self.last_error = err
                self.txn.transition_to(T.ABORTABLE_ERROR)
                raise err
            self._fail_call(resp2.error, resp2.error_message, abortable=True)
        self._add_time("txn-send-offsets-time-ns-total", start)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit: EndTxn(COMMIT).

        Raises the fatal error (fencing), the abortable error that any failed record or call of
        this transaction left (then call ``abort_transaction``), or ``TimeoutException`` (then call
        ``commit_transaction`` again: the commit may already be under way).
        """
        if self.observer is None:
            self._commit_transaction(timeout)
        else:
            self._observed_end("commit", self._commit_transaction, timeout)

    def _commit_transaction(self, timeout: float | None) -> None:
        start = self.world.now_ms
        wait_ms(timeout, "commit_transaction", default="max.block.ms")
        self._raise_if_fatal()
        if not self._resuming("commit_transaction"):
            self._raise_if_abortable("commit_transaction")
            self.txn.require(T.IN_TRANSACTION, action="commit_transaction()")
            self.txn.transition_to(T.COMMITTING_TRANSACTION)
            self._pending_call = "commit_transaction"

        def finish() -> None:
            self._flush_for_end(timeout)
            self._raise_if_fatal()
            self._raise_if_abortable("commit_transaction")
            self._end(committed=True, timeout=timeout)

        self._resumable(finish)
        self._add_time("txn-commit-time-ns-total", start)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: drop unsent records, wait for in-flight ones, then EndTxn(ABORT).

        After ``TimeoutException``, call ``abort_transaction`` again to wait for the same abort.
        """
        if self.observer is None:
            self._abort_transaction(timeout)
        else:
            self._observed_end("abort", self._abort_transaction, timeout)

    def _abort_transaction(self, timeout: float | None) -> None:
        start = self.world.now_ms
        wait_ms(timeout, "abort_transaction", default="max.block.ms")
        self._raise_if_fatal()
        if not self._resuming("abort_transaction"):
            self.txn.require(T.IN_TRANSACTION, T.ABORTABLE_ERROR, action="abort_transaction()")
            self.txn.transition_to(T.ABORTING_TRANSACTION)
            self._pending_call = "abort_transaction"
            # Kafka's beginAbort: partitions not yet sent to the coordinator are not added any more.
            self._adding.clear()
            aborted = TransactionAbortedException("the transaction was aborted before this record was sent")
            waiting, self._waiting_metadata = self._waiting_metadata, []
            for _deadline, topic, value, key, partition, cb, ts, _headers, token in waiting:
                self._outstanding -= 1
                self._fail_unsent(topic, partition, key, value, ts, cb, aborted, token)
            for q in self._queues.values():
                for b in [x for x in q.queue if x.wire is None and x.attempts == 0]:
                    q.queue.remove(b)
                    self._complete(q, b, -1, aborted)

        def finish() -> None:
            if self.txn.state is T.ABORTING_TRANSACTION:
                self._flush_for_end(timeout)
                self._raise_if_fatal()
                self._end(committed=False, timeout=timeout, keep_state=self._need_epoch_bump)
                self.last_error = None
            if self._need_epoch_bump:
                # KIP-360: after an abort caused by a sequence problem, get a fresh epoch.
                self._obtain_epoch(
                    timeout,
                    "abort_transaction",
                    InitProducerIdRequest(
                        self.transactional_id,
                        self.config.transaction_timeout_ms,
                        self.producer_id,
                        self.producer_epoch,
                    ),
                    resume=self.txn.state is T.INITIALIZING,
                )
                self._need_epoch_bump = False

        self._resumable(finish)
        self._add_time("txn-abort-time-ns-total", start)

    def metrics(self) -> dict[str, float]:
        """Return producer metrics plus Kafka's txn-*-time-ns-total (in simulated nanoseconds)."""
        return {**super().metrics(), **self.txn_metrics}

    def _observed_end(self, action: str, call: Callable[[float | None], None], timeout: float | None) -> None:
        """Run a commit or an abort, then tell the observer how it ended (returned, or what it raised)."""
        observer = self.observer
        try:
            call(timeout)
        except BaseException as exc:
            if observer is not None:
                observer.on_transaction(self, action, exc)
            raise
        if observer is not None:
            observer.on_transaction(self, action, None)

    # ======================================================================================
    # hooks into the producer
    # ======================================================================================

    def before_produce(self, topic: str) -> None:
        """Records may only be sent inside a transaction."""
        self._raise_if_fatal()
        self._refuse_if_pending("produce")
        self._raise_if_abortable("produce")
        self.txn.require(T.IN_TRANSACTION, action="produce()")
        self._txn_has_data = True

    def batch_is_transactional(self) -> bool:
        """Every batch of a transactional producer is transactional."""
        return True

    def may_send(self, batch: ProducerBatch) -> bool:
        """Version 1: a batch waits until its partition is added to the transaction."""
        if self.transaction_version >= 2 or batch.wire is not None:
            return True
        tp = (batch.topic, batch.partition)
        if tp in self.added:
            return True
        self._adding.add(tp)
        self._send_add_partitions()
        return False

    def on_send_error(self, err: KafkaError) -> None:
        """A failed record makes the transaction abortable (TransactionManager.maybeTransitionToErrorState)."""
        if isinstance(err, TransactionAbortedException) or not self.weakenings.abort_on_failed_send:
            return
        if self.txn.state in (T.IN_TRANSACTION, T.ABORTABLE_ERROR):
            # Kafka bumps the epoch after the abort whenever a send failed outside commit/abort
            # (TransactionManager.maybeTransitionToErrorState: canBumpEpoch() && !isCompleting()).
            self._need_epoch_bump = True
        if self.txn.state in (T.IN_TRANSACTION, T.COMMITTING_TRANSACTION):
            self.last_error = err
            self.txn.transition_to(T.ABORTABLE_ERROR)

    def _epoch_rejected(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        """INVALID_PRODUCER_EPOCH on a produce is abortable (KIP-588); PRODUCER_FENCED stays fatal."""
        if code is ErrorCode.INVALID_PRODUCER_EPOCH:
            self._fail(q, b, code, message)
            return
        self._fatal(code, message)

    def _fatal(self, code: ErrorCode, message: str | None, *, context: bool = True) -> None:
        if code in _FENCED:
            code = ErrorCode.PRODUCER_FENCED
            # The coordinator's text already names the id, the producer id and both epochs: say it once.
            named = message is not None and "producerId=" in message
            message = message if named else f"transactional.id={self.transactional_id} was fenced: {message}"
            context = context and not named
        super()._fatal(code, message, context=context)
        self.txn.transition_to(T.FATAL_ERROR)

    def _fail_partition(self, q: PartitionQueue, b: ProducerBatch, code: ErrorCode, message: str | None) -> None:
        # A sequence gap inside a transaction cannot be repaired: the producer is done.
        self._fatal(code, message)

    def _bump_epoch(self) -> None:
        # A transactional producer never bumps its own epoch: the abort path asks the coordinator.
        self._need_epoch_bump = True

    # ======================================================================================
    # internals
    # ======================================================================================

    def _obtain_epoch(
        self, timeout: float | None, action: str, request: InitProducerIdRequest, *, resume: bool = False
    ) -> None:
        """INITIALIZING → InitProducerId → READY with the new producer id and epoch (sequences reset)."""
        if not resume:
            self.txn.transition_to(T.INITIALIZING)
        resp = self._coordinator_call(KEY_TYPE_TRANSACTION, self.transactional_id, lambda: request, timeout, action)
        if resp.error is not ErrorCode.NONE:
            self._fail_call(resp.error, resp.error_message, abortable=False)
        self._set_epoch(resp.producer_id, resp.producer_epoch)
        self.txn.transition_to(T.READY)

    def _add_time(self, metric: str, start_ms: int) -> None:
        self.txn_metrics[metric] += (self.world.now_ms - start_ms) * 1_000_000

    def _raise_if_fatal(self) -> None:
        if not self.is_up:
            # A crashed client process can send nothing more; its transaction is the coordinator's now.
            msg = f"producer {self.name} is not running ({self.status.value}); create a new producer"
            raise IllegalStateError(msg)
        if self.fatal_error is not None:
            raise self.fatal_error

    def _raise_if_abortable(self, action: str) -> None:
        """Raise the transaction's abortable error, saying that only abort_transaction() is left."""
        if self.txn.state is not T.ABORTABLE_ERROR:
            return
        cause = self.last_error or exception_for(ErrorCode.UNKNOWN_SERVER_ERROR, "transaction is abortable")
        err = type(cause)(
            f"cannot {action}(): the transaction has an abortable error ({type(cause).__name__}: "
            f"{cause._base_message}); call abort_transaction(), then begin a new transaction",
            **cause.context,
        )
        raise err from cause

    def _resuming(self, action: str) -> bool:
        """Return True when ``action`` timed out before and this call waits for its result again."""
        if self._pending_call == action:
            return True
        self._refuse_if_pending(action)
        return False

    def _refuse_if_pending(self, action: str) -> None:
        if self._pending_call is None:
            return
        pending = self._pending_call
        msg = (
            f"cannot {action}(): {pending}() timed out and is still pending; call {pending}() again "
            f"to wait for its result (it may already be completing), or close this producer"
        )
        raise IllegalStateError(msg)

    def _resumable(self, work: Callable[[], None]) -> None:
        """Run the rest of a pending call: a timeout keeps it pending (retry it), anything else ends it."""
        try:
            work()
        except TimeoutException:
            if self.txn.state in (T.ABORTABLE_ERROR, T.FATAL_ERROR):
                self._pending_call = None
            raise
        except BaseException:
            self._pending_call = None
            raise
        self._pending_call = None

    def _set_epoch(self, producer_id: int, producer_epoch: int) -> None:
        changed = (producer_id, producer_epoch) != (self.producer_id, self.producer_epoch)
        self.producer_id, self.producer_epoch = producer_id, producer_epoch
        if changed:
            for q in self._queues.values():
                q.next_sequence = 0
                q.last_acked_sequence = -1
                q.unacked = []
        self._wake()

    def _fail_call(self, code: ErrorCode, message: str | None, *, abortable: bool) -> None:
        if code in _FENCED:
            self._fatal(code, message)
            raise self.fatal_error  # type: ignore[misc]
        err = exception_for(code, message, transactional_id=self.transactional_id)
        if abortable and self.txn.state in (T.IN_TRANSACTION, T.COMMITTING_TRANSACTION, T.ABORTABLE_ERROR):
            self.last_error = err
            self.txn.transition_to(T.ABORTABLE_ERROR)
        elif not abortable:
            self.fatal_error = err
            self.txn.transition_to(T.FATAL_ERROR)
        raise err

    def _deadline(self, timeout: float | None) -> int:
        ms = wait_ms(timeout, "timeout", default="max.block.ms")
        return self.world.now_ms + (self.config.max_block_ms if ms is None else ms)

    def _flush_for_end(self, timeout: float | None) -> None:
        start = self.world.now_ms
        end = self._deadline(timeout)
        self.world.run_until(lambda: self._outstanding == 0 or self.fatal_error is not None, deadline_ms=end)
        if self._outstanding and self.fatal_error is None:
            msg = (
                f"{self._outstanding} record(s) of the transaction were not delivered within "
                f"{end - start} ms of simulated time; call the same method again to keep waiting"
            )
            raise TimeoutException(msg)
        self._serve_reports()

    def _transaction_started(self, timeout: float | None) -> bool:
        """Whether the coordinator may know this transaction, so EndTxn must be sent (Kafka's ``transactionStarted``).

        Version 2: any record or offsets (partition leaders add partitions themselves). Version 1:
        only partitions or offsets the coordinator acknowledged, as in Kafka's
        ``TransactionManager.nextRequest``, which completes the transaction without EndTxn
        otherwise: the coordinator would answer INVALID_TXN_STATE to an EndTxn for a transaction
        it never saw. An AddPartitionsToTxn already on its way is waited for first, since Kafka
        sends one transactional request at a time.
        """
        if self.transaction_version >= 2:
            return self._txn_has_data or self._txn_offsets_sent or bool(self.added)
        start, end = self.world.now_ms, self._deadline(timeout)
        self.world.run_until(lambda: not self._add_in_flight or not self.is_up, deadline_ms=end)
        self._raise_if_fatal()
        if self._add_in_flight:
            msg = (
                f"AddPartitionsToTxn was not answered within {end - start} ms of simulated time; "
                f"call the same method again to keep waiting"
            )
            raise TimeoutException(msg)
        return self._txn_offsets_sent or bool(self.added)

    def _end(self, *, committed: bool, timeout: float | None, keep_state: bool = False) -> None:
        if self._transaction_started(timeout):
            resp = self._coordinator_call(
                KEY_TYPE_TRANSACTION,
                self.transactional_id,
                lambda: EndTxnRequest(self.transactional_id, self.producer_id, self.producer_epoch, committed),
                timeout,
                "commit_transaction" if committed else "abort_transaction",
            )
            if resp.error is not ErrorCode.NONE:
                self._fail_call(resp.error, resp.error_message, abortable=committed)
            if self.transaction_version >= 2 and resp.producer_epoch >= 0:
                self._set_epoch(resp.producer_id, resp.producer_epoch)
        self.world.trace.emit(
            self.name,
            "state",
            events.TXN_COMMIT if committed else events.TXN_ABORT,
            ("txn_id", self.transactional_id),
            ("epoch", self.producer_epoch),
        )
        self.added = set()
        if not keep_state:  # else an epoch bump follows: ABORTING_TRANSACTION -> INITIALIZING -> READY
            self.txn.transition_to(T.READY)

    def _send_add_partitions(self) -> None:
        if self._add_in_flight or not self._adding:
            return
        self._add_in_flight = True
        tps = tuple(sorted(self._adding))

        def answered(resp: AddPartitionsToTxnResponse | None) -> None:
            self._add_in_flight = False
            if resp is not None and resp.error is ErrorCode.NONE:
                self.added |= set(tps)
                self._adding -= set(tps)
                self._wake()
                self._send_add_partitions()
                return
            code = self.no_answer if resp is None else resp.error
            if code in _FENCED:
                self._fatal(code, resp.error_message if resp else None)
                return
            if code in _REFIND or code in _RETRY:
                if code in _REFIND:
                    self.coordinators.pop((KEY_TYPE_TRANSACTION, self.transactional_id), None)
                self.set_timer(self.config.retry_backoff_ms, self._send_add_partitions)
                return
            err = exception_for(code, resp.error_message if resp else None)
            self.last_error = err
            if self.txn.state in (T.IN_TRANSACTION, T.COMMITTING_TRANSACTION):
                self.txn.transition_to(T.ABORTABLE_ERROR)

        def send(coordinator: int) -> None:
            req = AddPartitionsToTxnRequest(self.transactional_id, self.producer_id, self.producer_epoch, tps)
            self.request(f"broker-{coordinator}", req, answered, timeout_ms=self.config.request_timeout_ms)

        self._with_coordinator(
            KEY_TYPE_TRANSACTION,
            self.transactional_id,
            send,
            lambda: (
                setattr(self, "_add_in_flight", False),
                self.set_timer(self.config.retry_backoff_ms, self._send_add_partitions),
            ),
        )

    # -- coordinator calls --------------------------------------------------------------------

    def _with_coordinator(
        self, key_type: int, key: str, then: Callable[[int], None], failed: Callable[[], Any]
    ) -> None:
        known = self.coordinators.get((key_type, key))
        if known is not None:
            then(known)
            return

        def found(resp: FindCoordinatorResponse | None) -> None:
            if resp is None or resp.error is not ErrorCode.NONE:
                failed()
                return
            self.coordinators[(key_type, key)] = resp.node_id
            then(resp.node_id)

        self.request(
            self._pick_broker(),
            FindCoordinatorRequest(key, key_type),
            found,
            timeout_ms=self.config.request_timeout_ms,
        )

    def _coordinator_call(
        self, key_type: int, key: str, make: Callable[[], Any], timeout: float | None, action: str
    ) -> Any:
        """Send a coordinator request, retrying retriable errors; wait for a final answer."""
        box: list[Any] = []
        start = self.world.now_ms
        end = self._deadline(timeout)

        def attempt() -> None:
            if box or self.world.now_ms >= end:
                return
            self._with_coordinator(key_type, key, send, lambda: self.set_timer(self.config.retry_backoff_ms, attempt))

        def send(coordinator: int) -> None:
            self.request(f"broker-{coordinator}", make(), answered, timeout_ms=self.config.request_timeout_ms)

        def answered(resp: Any) -> None:
            code = self.no_answer if resp is None else resp.error
            if code in _REFIND or resp is None:
                self.coordinators.pop((key_type, key), None)
                self.set_timer(self.config.retry_backoff_ms, attempt)
                return
            if code in _RETRY:
                self.set_timer(self.config.retry_backoff_ms, attempt)
                return
            box.append(resp)

        self._raise_if_fatal()
        attempt()
        self.world.run_until(lambda: bool(box) or not self.is_up, deadline_ms=end)
        self._raise_if_fatal()
        if not box:
            msg = (
                f"{action}() did not complete within {end - start} ms of simulated time; "
                f"call {action}() again to keep waiting for its result"
            )
            raise TimeoutException(msg)
        return box[0]


def _offset_triples(offsets: Any) -> tuple[tuple[str, int, int], ...]:
    """Check send_offsets_to_transaction's offsets: TopicPartitions with topic, partition and offset >= 0."""
    usage = (
        "send_offsets_to_transaction: offsets must be a list of TopicPartition(topic, partition, offset) "
        "with the next offset to read (offset >= 0), e.g. from consumer.position(consumer.assignment())"
    )
    if isinstance(offsets, (str, bytes)) or not hasattr(offsets, "__iter__"):
        raise TypeError(usage)
    out = []
    for tp in offsets:
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"{usage}; got {tp!r}")
        if not isinstance(tp.topic, str) or not tp.topic or not isinstance(tp.partition, int) or tp.partition < 0:
            raise ValueError(f"{usage}; got {tp!r}")
        if not isinstance(tp.offset, int) or tp.offset < 0:
            raise ValueError(f"{usage}; {tp.topic}-{tp.partition} has offset {tp.offset}")
        out.append((tp.topic, tp.partition, tp.offset))
    return tuple(out)
