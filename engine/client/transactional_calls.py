"""The transactional producer's calls that wait: confluent-kafka's transaction API over the coordinator.

``init_transactions``, ``begin_transaction``, ``send_offsets_to_transaction``,
``commit_transaction``, ``abort_transaction``. Each call that talks to a coordinator *waits*: it
runs the simulation until the answer comes or ``timeout`` simulated seconds pass (then
``TimeoutException``). The state they move is the producer's transaction manager
(:mod:`engine.client.transaction_manager`, states in :mod:`engine.client.transactions`).

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

from engine import trace_events as events
from engine.args import wait_ms
from engine.client.message import TopicPartition
from engine.client.transactions import TxnClientState
from engine.coordinator_lookup import KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION
from engine.errors import ErrorCode, IllegalStateError, TimeoutException, TransactionAbortedException
from engine.group import txn_offsets
from engine.protocol import AddOffsetsToTxnRequest, EndTxnRequest, InitProducerIdRequest, TxnOffsetCommitRequest

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.base import ClientNode
    from engine.client.deliveries import Deliveries
    from engine.client.metadata_wait import MetadataWait
    from engine.client.sender import Sender
    from engine.client.transaction_manager import TransactionManager
    from engine.config import ProducerConfig

    #: Told how a transaction call ended: (``"begin"``/``"commit"``/``"abort"``, what it raised or None).
    TransactionDone = Callable[[str, BaseException | None], None]

T = TxnClientState


class TransactionalCalls:
    """The transaction API of one producer with ``transactional.id``.

    The producer's API half of Kafka's ``KafkaProducer.initTransactions``/``commitTransaction``...:
    handed the network node that runs the simulation while a call waits (``client``), the
    transaction manager whose state the calls move, the sender and the records waiting for
    metadata (an abort drops what was not sent), the delivery ledger (a commit flushes it), and
    ``transaction_done``, the producer's observer hook.
    """

    def __init__(
        self,
        client: ClientNode,
        config: ProducerConfig,
        transaction_manager: TransactionManager,
        sender: Sender,
        metadata_wait: MetadataWait,
        deliveries: Deliveries,
        transaction_done: TransactionDone,
    ) -> None:
        self.client = client
        self.config = config
        self.tm = transaction_manager
        self.sender = sender
        self.metadata_wait = metadata_wait
        self.deliveries = deliveries
        self.transaction_done = transaction_done
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

    def init_transactions(self, timeout: float | None) -> None:
        """Get the producer id and epoch for ``transactional.id``, fencing older instances."""
        c, tm = self.client, self.tm
        start = c.world.now_ms
        wait_ms(timeout, "init_transactions", default="max.block.ms")
        self.raise_if_fatal()
        resume = self._resuming("init_transactions")
        if not resume:
            if tm.state is not T.UNINITIALIZED:
                msg = (
                    f"init_transactions() was already called on this producer (it is {tm.state.name}); "
                    f"call it once per producer: to fence an older instance, create a new producer"
                )
                raise IllegalStateError(msg)
            self._pending_call = "init_transactions"
        request = InitProducerIdRequest(tm.transactional_id, self.config.transaction_timeout_ms)
        self._resumable(lambda: self._obtain_epoch(timeout, "init_transactions", request, resume=resume))
        c.world.trace.emit(
            c.name,
            "state",
            events.TXN_INIT,
            ("txn_id", tm.transactional_id),
            ("pid", tm.producer_id),
            ("epoch", tm.producer_epoch),
        )
        self._add_time("txn-init-time-ns-total", start)

    def begin_transaction(self) -> None:
        """Start a transaction (local: nothing is sent until the first record or offsets)."""
        c, tm = self.client, self.tm
        self.raise_if_fatal()
        self.refuse_if_pending("begin_transaction")
        tm.begin()
        c.world.trace.emit(
            c.name, "state", events.TXN_BEGIN, ("txn_id", tm.transactional_id), ("epoch", tm.producer_epoch)
        )
        self.transaction_done("begin", None)

    def send_offsets_to_transaction(
        self, offsets: list[TopicPartition], group_metadata: Any, timeout: float | None
    ) -> None:
        """Commit consumer offsets as part of the transaction (AddOffsetsToTxn, then TxnOffsetCommit)."""
        c, tm = self.client, self.tm
        start = c.world.now_ms
        triples = _offset_triples(offsets)
        group_id, generation, member, instance = txn_offsets.group_fields(group_metadata)
        wait_ms(timeout, "send_offsets_to_transaction", default="max.block.ms")
        self.raise_if_fatal()
        self.refuse_if_pending("send_offsets_to_transaction")
        tm.raise_if_abortable("send_offsets_to_transaction")
        tm.txn.require(T.IN_TRANSACTION, action="send_offsets_to_transaction()")  # type: ignore[union-attr]
        txn_id = tm.transactional_id
        resp = self._coordinator_call(
            KEY_TYPE_TRANSACTION,
            txn_id,
            lambda: AddOffsetsToTxnRequest(txn_id, tm.producer_id, tm.producer_epoch, group_id),
            timeout,
            "send_offsets_to_transaction",
        )
        if resp.error is not ErrorCode.NONE:
            tm.fail_call(resp.error, resp.error_message, abortable=True)
        tm.txn_offsets_sent = True
        resp2 = self._coordinator_call(
            KEY_TYPE_GROUP,
            group_id,
            lambda: TxnOffsetCommitRequest(
                txn_id, group_id, tm.producer_id, tm.producer_epoch, generation, member, instance, triples
            ),
            timeout,
            "send_offsets_to_transaction",
        )
        if resp2.error is not ErrorCode.NONE:
            err = txn_offsets.fenced_commit_error(resp2.error, group_id, generation, txn_id)
            if err is not None:
                c.world.trace.mark(c.name, "producer: stale group generation rejected (KIP-447)")
                tm.last_error = err
                tm.transition_to(T.ABORTABLE_ERROR)
                raise err
            tm.fail_call(resp2.error, resp2.error_message, abortable=True)
        self._add_time("txn-send-offsets-time-ns-total", start)

    def commit_transaction(self, timeout: float | None) -> None:
        """Flush, then commit: EndTxn(COMMIT)."""
        self._observed_end("commit", self._commit_transaction, timeout)

    def _commit_transaction(self, timeout: float | None) -> None:
        tm = self.tm
        start = self.client.world.now_ms
        wait_ms(timeout, "commit_transaction", default="max.block.ms")
        self.raise_if_fatal()
        if not self._resuming("commit_transaction"):
            tm.raise_if_abortable("commit_transaction")
            tm.txn.require(T.IN_TRANSACTION, action="commit_transaction()")  # type: ignore[union-attr]
            tm.transition_to(T.COMMITTING_TRANSACTION)
            self._pending_call = "commit_transaction"

        def finish() -> None:
            self._flush_for_end(timeout)
            self.raise_if_fatal()
            tm.raise_if_abortable("commit_transaction")
            self._end(committed=True, timeout=timeout)

        self._resumable(finish)
        self._add_time("txn-commit-time-ns-total", start)

    def abort_transaction(self, timeout: float | None) -> None:
        """Abort: drop unsent records, wait for in-flight ones, then EndTxn(ABORT)."""
        self._observed_end("abort", self._abort_transaction, timeout)

    def _abort_transaction(self, timeout: float | None) -> None:
        c, tm = self.client, self.tm
        start = c.world.now_ms
        wait_ms(timeout, "abort_transaction", default="max.block.ms")
        self.raise_if_fatal()
        if not self._resuming("abort_transaction"):
            tm.txn.require(T.IN_TRANSACTION, T.ABORTABLE_ERROR, action="abort_transaction()")  # type: ignore[union-attr]
            tm.begin_abort()
            self._pending_call = "abort_transaction"
            aborted = TransactionAbortedException("the transaction was aborted before this record was sent")
            self.metadata_wait.fail_all(lambda: aborted)
            self.sender.drop_queued(lambda b: b.wire is None and b.attempts == 0, lambda: aborted)

        def finish() -> None:
            if tm.state is T.ABORTING_TRANSACTION:
                self._flush_for_end(timeout)
                self.raise_if_fatal()
                self._end(committed=False, timeout=timeout, keep_state=tm.need_epoch_bump)
                tm.last_error = None
            if tm.need_epoch_bump:
                # KIP-360: after an abort caused by a sequence problem, get a fresh epoch.
                self._obtain_epoch(
                    timeout,
                    "abort_transaction",
                    InitProducerIdRequest(
                        tm.transactional_id, self.config.transaction_timeout_ms, tm.producer_id, tm.producer_epoch
                    ),
                    resume=tm.state is T.INITIALIZING,
                )
                tm.need_epoch_bump = False

        self._resumable(finish)
        self._add_time("txn-abort-time-ns-total", start)

    def _observed_end(self, action: str, call: Callable[[float | None], None], timeout: float | None) -> None:
        """Run a commit or an abort, then tell the observer how it ended (returned, or what it raised)."""
        try:
            call(timeout)
        except BaseException as exc:
            self.transaction_done(action, exc)
            raise
        self.transaction_done(action, None)

    # -- internals ----------------------------------------------------------------------------

    def _obtain_epoch(
        self, timeout: float | None, action: str, request: InitProducerIdRequest, *, resume: bool = False
    ) -> None:
        """INITIALIZING → InitProducerId → READY with the new producer id and epoch (sequences reset)."""
        tm = self.tm
        if not resume:
            tm.transition_to(T.INITIALIZING)
        resp = self._coordinator_call(KEY_TYPE_TRANSACTION, tm.transactional_id, lambda: request, timeout, action)
        if resp.error is not ErrorCode.NONE:
            tm.fail_call(resp.error, resp.error_message, abortable=False)
        tm.set_epoch(resp.producer_id, resp.producer_epoch)
        tm.transition_to(T.READY)

    def _add_time(self, metric: str, start_ms: int) -> None:
        self.txn_metrics[metric] += (self.client.world.now_ms - start_ms) * 1_000_000

    def check_produce(self) -> None:
        """Records of a transactional producer may only be sent inside a transaction."""
        tm = self.tm
        self.raise_if_fatal()
        self.refuse_if_pending("produce")
        tm.raise_if_abortable("produce")
        tm.txn.require(T.IN_TRANSACTION, action="produce()")  # type: ignore[union-attr]
        tm.txn_has_data = True

    def raise_if_fatal(self) -> None:
        """Raise when the producer can do nothing more: its process is down, or it met a fatal error."""
        c = self.client
        if not c.is_up:
            # A crashed client process can send nothing more; its transaction is the coordinator's now.
            msg = f"producer {c.name} is not running ({c.status.value}); create a new producer"
            raise IllegalStateError(msg)
        if self.tm.fatal_error is not None:
            raise self.tm.fatal_error

    def _resuming(self, action: str) -> bool:
        """Return True when ``action`` timed out before and this call waits for its result again."""
        if self._pending_call == action:
            return True
        self.refuse_if_pending(action)
        return False

    def refuse_if_pending(self, action: str) -> None:
        """Raise when another call timed out and must be called again first."""
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
            if self.tm.state in (T.ABORTABLE_ERROR, T.FATAL_ERROR):
                self._pending_call = None
            raise
        except BaseException:
            self._pending_call = None
            raise
        self._pending_call = None

    def _deadline(self, timeout: float | None) -> int:
        c = self.client
        ms = wait_ms(timeout, "timeout", default="max.block.ms")
        return c.world.now_ms + (self.config.max_block_ms if ms is None else ms)

    def _flush_for_end(self, timeout: float | None) -> None:
        c = self.client
        start = c.world.now_ms
        end = self._deadline(timeout)
        c.world.run_until(lambda: self.deliveries.outstanding == 0 or self.tm.fatal_error is not None, deadline_ms=end)
        if self.deliveries.outstanding and self.tm.fatal_error is None:
            msg = (
                f"{self.deliveries.outstanding} record(s) of the transaction were not delivered within "
                f"{end - start} ms of simulated time; call the same method again to keep waiting"
            )
            raise TimeoutException(msg)
        self.deliveries.serve()

    def _transaction_started(self, timeout: float | None) -> bool:
        """Whether the coordinator may know this transaction, so EndTxn must be sent (Kafka's ``transactionStarted``).

        Version 2: any record or offsets (partition leaders add partitions themselves). Version 1:
        only partitions or offsets the coordinator acknowledged, as in Kafka's
        ``TransactionManager.nextRequest``, which completes the transaction without EndTxn
        otherwise: the coordinator would answer INVALID_TXN_STATE to an EndTxn for a transaction
        it never saw. An AddPartitionsToTxn already on its way is waited for first, since Kafka
        sends one transactional request at a time.
        """
        c, tm = self.client, self.tm
        if tm.transaction_version >= 2:
            return tm.txn_has_data or tm.txn_offsets_sent or bool(tm.added)
        start, end = c.world.now_ms, self._deadline(timeout)
        c.world.run_until(lambda: not tm.add_pending() or not c.is_up, deadline_ms=end)
        self.raise_if_fatal()
        if tm.add_pending():
            msg = (
                f"AddPartitionsToTxn was not answered within {end - start} ms of simulated time; "
                f"call the same method again to keep waiting"
            )
            raise TimeoutException(msg)
        return tm.txn_offsets_sent or bool(tm.added)

    def _end(self, *, committed: bool, timeout: float | None, keep_state: bool = False) -> None:
        c, tm = self.client, self.tm
        if self._transaction_started(timeout):
            resp = self._coordinator_call(
                KEY_TYPE_TRANSACTION,
                tm.transactional_id,
                lambda: EndTxnRequest(tm.transactional_id, tm.producer_id, tm.producer_epoch, committed),
                timeout,
                "commit_transaction" if committed else "abort_transaction",
            )
            if resp.error is not ErrorCode.NONE:
                tm.fail_call(resp.error, resp.error_message, abortable=committed)
            if tm.transaction_version >= 2 and resp.producer_epoch >= 0:
                tm.set_epoch(resp.producer_id, resp.producer_epoch)
        c.world.trace.emit(
            c.name,
            "state",
            events.TXN_COMMIT if committed else events.TXN_ABORT,
            ("txn_id", tm.transactional_id),
            ("epoch", tm.producer_epoch),
        )
        tm.added = set()
        if not keep_state:  # else an epoch bump follows: ABORTING_TRANSACTION -> INITIALIZING -> READY
            tm.transition_to(T.READY)

    def _coordinator_call(
        self, key_type: int, key: str, make: Callable[[], Any], timeout: float | None, action: str
    ) -> Any:
        """Send a coordinator request, retrying retriable errors; wait for a final answer."""
        start = self.client.world.now_ms
        end = self._deadline(timeout)
        self.raise_if_fatal()
        resp = self.tm.coordinators.call(key_type, key, make, end)
        self.raise_if_fatal()
        if resp is None:
            msg = (
                f"{action}() did not complete within {end - start} ms of simulated time; "
                f"call {action}() again to keep waiting for its result"
            )
            raise TimeoutException(msg)
        return resp


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
