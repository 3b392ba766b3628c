"""The transaction coordinator: one per ``__transaction_state`` partition leader.

The coordinator of a transactional id is the leader of partition
``abs(javaHashCode(id)) % transaction.state.log.num.partitions`` of ``__transaction_state``
(see ``engine/coordinator_lookup.py``). Its state lives in that partition: every transition is
staged (``TransactionMetadata.prepare``), appended, replicated below the HW, then completed.
The coordinator epoch is the partition's leader epoch; markers carry it, and a partition
rejects markers from an older coordinator.

Requests (KIP-98, KIP-890)
--------------------------
``InitProducerId``   new id: a producer id with epoch 0. Known id: epoch + 1 (a new producer id
                     when the epoch is exhausted); an open transaction is first aborted with a
                     bumped epoch (zombie fencing) and the client is told to retry
                     (CONCURRENT_TRANSACTIONS).
``AddPartitionsToTxn``  from the client (transaction version 1) or from a partition leader
                     verifying a transactional produce (version 2): moves the id to ONGOING.
``AddOffsetsToTxn``  adds the group's ``__consumer_offsets`` partition.
``EndTxn``           PREPARE_COMMIT / PREPARE_ABORT is written, the client is answered, markers
                     go to every partition, then COMPLETE_* is written. Version 2 bumps the epoch
                     on every end, so a delayed EndTxn from an earlier transaction is fenced
                     instead of ending the next one (KAFKA-17754).

Failover: when this broker becomes leader of a ``__transaction_state`` partition it answers
COORDINATOR_LOAD_IN_PROGRESS while it loads the partition, then completes every PREPARE_* it
found by sending the markers again. Expired transactions (``transaction.timeout.ms``) are
aborted with a bumped epoch by a periodic check.

Simplified: no transactional-id expiration (DEAD), no ``PREPARE_EPOCH_FENCE`` round trip (an
epoch fence goes straight to PREPARE_ABORT with the bumped epoch), one marker request per
partition, and loading takes ``LOAD_MS_PER_BATCH`` per batch of the partition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.broker.extension import BrokerExtension
from engine.coordinator.markers import MarkerWriter
from engine.coordinator.txn_log import TxnLogValue, records_of
from engine.coordinator.txn_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    is_epoch_exhausted,
)
from engine.coordinator.txn_state import MAX_PRODUCER_EPOCH, TransactionState
from engine.coordinator_lookup import (
    CONSUMER_OFFSETS_TOPIC,
    KEY_TYPE_TRANSACTION,
    TRANSACTION_STATE_TOPIC,
    partition_for,
)
from engine.errors import ErrorCode, ProducerFencedException
from engine.log.records import RecordBatch
from engine.protocol import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.broker.broker import Broker
    from engine.broker.replica import Replica
    from engine.protocol import PartitionState, ProduceRequest
    from engine.sim.network import Message
    from engine.sim.scheduler import Timer

S = TransactionState
LOAD_MS_PER_BATCH = 1
#: How long the coordinator waits for a ``__transaction_state`` write to replicate.
WRITE_TIMEOUT_MS = 5_000
MARKER_RETRY_BACKOFF_MS = 100
MARKER_REQUEST_TIMEOUT_MS = 10_000
#: Kafka's add.partitions.to.txn.retry.backoff.ms default: how soon a partition leader asks again.
VERIFY_RETRY_BACKOFF_MS = 20
_EMPTY_ID = "the transactional id is empty"


class TransactionCoordinator(BrokerExtension):
    """The transaction coordinator extension of one broker."""

    def __init__(self, weak: Weakenings = CORRECT) -> None:
        # ``weak`` exists to build weakened configurations (mutants) on purpose; the default is
        # Kafka's behaviour.
        self.weak = weak
        self.skip_replication_wait = not weak.replicate_transaction_state
        self.bump_epoch_on_timeout = weak.bump_epoch_on_timeout
        self.txns: dict[int, dict[str, TransactionMetadata]] = {}
        self.loading: set[int] = set()
        self.coordinator_epoch: dict[int, int] = {}
        self._writes: dict[int, list[tuple[int, Callable[[bool, int], None], Timer]]] = {}
        self._markers_pending: dict[str, set[tuple[str, int]]] = {}
        self.markers: MarkerWriter | None = None

    # -- extension hooks --------------------------------------------------------------------

    def install(self, broker: Broker) -> None:
        """Register handlers and start the expiry check."""
        super().install(broker)
        if self.markers is None:
            self.markers = MarkerWriter(broker)
        broker.handlers[AddPartitionsToTxnRequest] = self._on_add_partitions
        broker.handlers[AddOffsetsToTxnRequest] = self._on_add_offsets
        broker.handlers[EndTxnRequest] = self._on_end_txn
        broker.handlers[WriteTxnMarkersRequest] = self.markers.handle
        interval = broker.config.transaction_abort_timed_out_transaction_cleanup_interval_ms
        broker.set_timer(interval, self._expire_tick)

    def on_crash(self) -> None:
        """Forget everything (the log keeps it)."""
        self.txns = {}
        self.loading = set()
        self.coordinator_epoch = {}
        self._writes = {}
        self._markers_pending = {}
        if self.markers is not None:
            self.markers.reset()

    @property
    def version(self) -> int:
        """Return the cluster's transaction.version."""
        return self.broker.config.transaction_version

    def on_become_leader(self, state: PartitionState) -> None:
        """Load a ``__transaction_state`` partition this broker now leads."""
        if state.topic != TRANSACTION_STATE_TOPIC:
            return
        p = state.partition
        self.loading.add(p)
        self.coordinator_epoch[p] = state.leader_epoch
        self.txns[p] = {}
        r = self.broker.replicas[(state.topic, p)]
        self.broker.set_timer(max(1, LOAD_MS_PER_BATCH * len(r.log)), self._finish_load, p, state.leader_epoch)

    def on_become_follower(self, state: PartitionState) -> None:
        """Unload a partition this broker no longer leads; fail its pending writes."""
        if self.markers is not None:
            self.markers.on_leadership_lost((state.topic, state.partition))
        if state.topic != TRANSACTION_STATE_TOPIC:
            return
        p = state.partition
        self.loading.discard(p)
        for txn_id in sorted(self.txns.pop(p, {})):
            self._markers_pending.pop(txn_id, None)
        for _required, callback, timer in self._writes.pop(p, []):
            timer.cancel()
            callback(False, -1)

    def on_high_watermark(self, r: Replica) -> None:
        """Complete writes and answer markers now below the HW."""
        if self.markers is not None:
            self.markers.on_high_watermark(r)
        if r.topic != TRANSACTION_STATE_TOPIC:
            return
        writes = self._writes.get(r.partition)
        if not writes:
            return
        hw = r.high_watermark
        ready = [w for w in writes if w[0] <= hw]
        self._writes[r.partition] = [w for w in writes if w[0] > hw]
        for _required, callback, timer in ready:
            timer.cancel()
            callback(True, _required - 1)

    def handles_init_producer_id(self, m: Message) -> bool:
        """Answer InitProducerId for a transactional id."""
        self._on_init_producer_id(m)
        return True

    def intercept_produce(self, m: Message, r: Replica, req: ProduceRequest) -> bool:
        """Transaction version 2: verify that a transactional producer is in a transaction here."""
        batch = req.batch
        if not batch.is_transactional or self.version < 2 or req.transactional_id is None:
            return False
        if not self.weak.verify_transactional_produce:
            return False  # mutant M8
        entry = r.producers.producers.get(batch.producer_id)
        if (
            entry is not None
            and entry.current_txn_first_offset is not None
            and entry.producer_epoch == batch.producer_epoch
        ):
            return False
        self._verify(m, self.broker.world.now_ms + req.timeout_ms)
        return True

    def _verify(self, m: Message, deadline_ms: int) -> None:
        """Ask the coordinator whether the producer is in a transaction here (adding the partition)."""
        req: ProduceRequest = m.body
        batch = req.batch
        broker = self.broker
        coordinator, code = broker.coordinator_for(req.transactional_id or "", KEY_TYPE_TRANSACTION)
        if code is not ErrorCode.NONE:
            broker.produce_error(m, ErrorCode.NOT_ENOUGH_REPLICAS, "transaction coordinator not available")
            return
        verify = AddPartitionsToTxnRequest(
            req.transactional_id,
            batch.producer_id,
            batch.producer_epoch,
            ((req.topic, req.partition),),
            from_broker=True,
        )
        broker.request(
            f"broker-{coordinator}",
            verify,
            lambda resp: self._verified(m, resp, deadline_ms),
            timeout_ms=MARKER_REQUEST_TIMEOUT_MS,
        )

    def _verified(self, m: Message, resp: AddPartitionsToTxnResponse | None, deadline_ms: int) -> None:
        broker = self.broker
        if (
            resp is not None
            and resp.error is ErrorCode.CONCURRENT_TRANSACTIONS
            and broker.world.now_ms + VERIFY_RETRY_BACKOFF_MS < deadline_ms
        ):
            # The previous transaction is still writing its markers: retry on the broker, as Kafka
            # 4.0 does (KAFKA-18654, add.partitions.to.txn.retry.backoff.ms), not via the client.
            broker.set_timer(VERIFY_RETRY_BACKOFF_MS, self._verify, m, deadline_ms)
            return
        if resp is not None and resp.error is ErrorCode.NONE:
            broker.world.trace.mark(broker.name, "partition: transactional produce verified with the coordinator")
            broker.continue_produce(m, verified=True)
            return
        if resp is None or resp.error.retriable:
            broker.produce_error(m, ErrorCode.NOT_ENOUGH_REPLICAS, "could not verify the transaction; retry")
            return
        code = (
            ErrorCode.INVALID_PRODUCER_EPOCH if resp.error is ErrorCode.PRODUCER_FENCED else ErrorCode.INVALID_TXN_STATE
        )
        broker.world.trace.mark(broker.name, "partition: transactional produce rejected by verification")
        broker.produce_error(m, code, resp.error_message or resp.error.name)

    # -- ownership and the log ----------------------------------------------------------------

    def partition_of(self, transactional_id: str) -> int:
        """Return the ``__transaction_state`` partition of an id."""
        return partition_for(transactional_id, self.broker.config.transaction_state_log_num_partitions)

    def _owner_error(self, transactional_id: str) -> ErrorCode:
        p = self.partition_of(transactional_id)
        r = self.broker.replicas.get((TRANSACTION_STATE_TOPIC, p))
        if r is None or not r.is_leader or p not in self.txns:
            return ErrorCode.NOT_COORDINATOR
        if p in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def _finish_load(self, p: int, leader_epoch: int) -> None:
        r = self.broker.replicas.get((TRANSACTION_STATE_TOPIC, p))
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
        self.broker.world.trace.emit(
            self.broker.name,
            "state",
            "coordinator.loaded",
            ("partition", p),
            ("epoch", leader_epoch),
            ("ids", len(txns)),
        )
        for txn_id in sorted(txns):
            md = txns[txn_id]
            if md.state.is_prepare:
                self.broker.world.trace.mark(self.broker.name, "coordinator: completing a PREPARE found on load")
                self._send_markers(md, md.current())

    def _write(self, md: TransactionMetadata, value: TxnLogValue, done: Callable[[bool, int], None]) -> None:
        """Append a transition and call ``done(ok, offset)`` once it is replicated (or failed)."""
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
            "txn_state.write",
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

    def _write_expired(self, p: int, required: int) -> None:
        writes = self._writes.get(p, [])
        for w in writes:
            if w[0] == required:
                writes.remove(w)
                w[1](False, -1)
                return

    # -- InitProducerId -----------------------------------------------------------------------

    def _on_init_producer_id(self, m: Message) -> None:
        req: InitProducerIdRequest = m.body
        broker = self.broker
        txn_id = req.transactional_id or ""
        # Kafka's order: an empty id, then the timeout, then the coordinator's ownership.
        if not txn_id:
            broker.respond(m, InitProducerIdResponse(ErrorCode.INVALID_REQUEST, error_message=_EMPTY_ID))
            return
        if not 0 < req.transaction_timeout_ms <= broker.config.transaction_max_timeout_ms:
            broker.respond(
                m,
                InitProducerIdResponse(
                    ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                    error_message=(
                        f"transaction.timeout.ms {req.transaction_timeout_ms} is not between 1 and "
                        f"transaction.max.timeout.ms {broker.config.transaction_max_timeout_ms}"
                    ),
                ),
            )
            return
        code = self._owner_error(txn_id)
        if code is not ErrorCode.NONE:
            broker.respond(m, InitProducerIdResponse(code))
            return
        expected: tuple[int, int] | None = None
        if (req.producer_id < 0) != (req.producer_epoch < 0):
            text = "InitProducerId needs both producer id and epoch, or neither"
            broker.respond(m, InitProducerIdResponse(ErrorCode.INVALID_REQUEST, error_message=text))
            return
        if req.producer_id >= 0 and self.weak.check_init_producer_epoch:  # else mutant M18: ignore them
            expected = (req.producer_id, req.producer_epoch)
        txns = self.txns[self.partition_of(txn_id)]
        md = txns.get(txn_id)
        now = broker.world.now_ms
        if md is None:
            md = txns[txn_id] = TransactionMetadata(
                txn_id, broker.allocate_producer_id(), req.transaction_timeout_ms, now, self.version
            )
        if md.pending_state is not None:
            broker.respond(m, InitProducerIdResponse(ErrorCode.CONCURRENT_TRANSACTIONS))
            return
        if expected is not None and not self._init_may_use(md, expected):
            text = (
                f"producer id {expected[0]} epoch {expected[1]} of transactional.id {txn_id} was fenced: "
                f"it now has producer id {md.producer_id} epoch {md.producer_epoch}"
            )
            broker.respond(m, InitProducerIdResponse(ErrorCode.PRODUCER_FENCED, error_message=text))
            return
        if md.state.is_prepare:
            broker.respond(m, InitProducerIdResponse(ErrorCode.CONCURRENT_TRANSACTIONS))
            return
        if md.state is S.ONGOING:
            # Zombie fencing: abort the open transaction with a bumped epoch, then let the new
            # producer retry (CONCURRENT_TRANSACTIONS); the retry bumps the epoch once more, so
            # the aborting epoch is never handed out.
            broker.world.trace.mark(broker.name, "coordinator: open transaction aborted to fence a new producer")
            self._fence_and_abort(md, respond_init=m)
            return
        try:
            if md.is_producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
                broker.world.trace.mark(broker.name, "coordinator: epoch exhausted, new producer id")
                new_pid = broker.allocate_producer_id()
                value = md.prepare_producer_id_rotation(
                    new_pid, req.transaction_timeout_ms, now, record_last_epoch=expected is not None
                )
            else:
                value = md.prepare_increment_producer_epoch(
                    req.transaction_timeout_ms, None if expected is None else expected[1], now
                )
        except ProducerFencedException as exc:
            broker.world.trace.mark(broker.name, "coordinator: InitProducerId from a fenced epoch refused")
            broker.respond(m, InitProducerIdResponse(ErrorCode.PRODUCER_FENCED, error_message=exc.message))
            return

        def written(ok: bool, _offset: int) -> None:
            if ok:
                broker.respond(m, InitProducerIdResponse(ErrorCode.NONE, value.producer_id, value.producer_epoch))
            else:
                broker.respond(m, InitProducerIdResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE))

        self._write(md, value, written)

    @staticmethod
    def _init_may_use(md: TransactionMetadata, expected: tuple[int, int]) -> bool:
        """KIP-360: may an InitProducerId that names ``expected`` (producer id, epoch) go on?

        Yes for a brand-new id (no epoch yet), for the current producer id (its epoch is checked
        when it is bumped), and for the previous producer id with an exhausted epoch (a retry of
        the call that moved the id to a new producer id). Anything else is fenced.
        """
        pid, epoch = expected
        return (
            md.producer_epoch == NO_PRODUCER_EPOCH
            or pid == md.producer_id
            or (pid == md.prev_producer_id and is_epoch_exhausted(epoch))
        )

    # -- AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------------

    def _check_producer(
        self, txn_id: str, producer_id: int, producer_epoch: int
    ) -> tuple[TransactionMetadata | None, ErrorCode, str | None]:
        code = self._owner_error(txn_id)
        if code is not ErrorCode.NONE:
            return None, code, None
        md = self.txns[self.partition_of(txn_id)].get(txn_id)
        if md is None or md.producer_id != producer_id:
            return (
                None,
                ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                f"transactional.id {txn_id} has no producer id {producer_id}",
            )
        if producer_epoch != md.producer_epoch and (self.weak.fence_epochs or producer_epoch > md.producer_epoch):
            text = (
                f"There is a newer producer with the same transactionalId which fences the current one: "
                f"transactional.id={txn_id} producerId={producer_id} epoch={producer_epoch} "
                f"(current epoch {md.producer_epoch})"
            )
            return md, ErrorCode.PRODUCER_FENCED, text
        return md, ErrorCode.NONE, None

    def _add_partitions(
        self,
        m: Message,
        txn_id: str,
        pid: int,
        epoch: int,
        tps: tuple[tuple[str, int], ...],
        reply: Callable[[ErrorCode, str | None], Any],
    ) -> None:
        if not txn_id:
            reply(ErrorCode.INVALID_REQUEST, _EMPTY_ID)
            return
        md, code, text = self._check_producer(txn_id, pid, epoch)
        if code is not ErrorCode.NONE:
            reply(code, text)
            return
        assert md is not None
        if md.pending_state is not None or md.state.is_prepare:
            reply(ErrorCode.CONCURRENT_TRANSACTIONS, None)
            return
        if md.state is S.ONGOING and set(tps) <= set(md.partitions):
            reply(ErrorCode.NONE, None)
            return
        if md.state not in (S.EMPTY, S.ONGOING, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            reply(ErrorCode.INVALID_TXN_STATE, f"{txn_id} is {md.state.display_name}")
            return
        value = md.prepare_add_partitions(tps, self.broker.world.now_ms)
        self._write(
            md,
            value,
            lambda ok, _o: reply(ErrorCode.NONE if ok else ErrorCode.COORDINATOR_NOT_AVAILABLE, None),
        )

    def _on_add_partitions(self, m: Message) -> None:
        req: AddPartitionsToTxnRequest = m.body
        self._add_partitions(
            m,
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            req.partitions,
            lambda code, text: self.broker.respond(m, AddPartitionsToTxnResponse(code, text)),
        )

    def _on_add_offsets(self, m: Message) -> None:
        req: AddOffsetsToTxnRequest = m.body
        n = self.broker.config.offsets_topic_num_partitions
        tp = (CONSUMER_OFFSETS_TOPIC, partition_for(req.group_id, n))
        self._add_partitions(
            m,
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            (tp,),
            lambda code, text: self.broker.respond(m, AddOffsetsToTxnResponse(code, text)),
        )

    # -- EndTxn --------------------------------------------------------------------------------

    def _on_end_txn(self, m: Message) -> None:
        req: EndTxnRequest = m.body
        broker = self.broker
        if not req.transactional_id:
            broker.respond(m, EndTxnResponse(ErrorCode.INVALID_REQUEST, error_message=_EMPTY_ID))
            return
        code = self._owner_error(req.transactional_id)
        if code is not ErrorCode.NONE:
            broker.respond(m, EndTxnResponse(code))
            return
        md = self.txns[self.partition_of(req.transactional_id)].get(req.transactional_id)
        if md is None:
            text = f"transactional.id {req.transactional_id} has no producer id {req.producer_id}"
            broker.respond(m, EndTxnResponse(ErrorCode.INVALID_PRODUCER_ID_MAPPING, error_message=text))
            return
        if self.version >= 2:
            decision = self._end_decision_v2(md, req)
        else:
            decision = self._end_decision_v1(md, req)
        if isinstance(decision, EndTxnResponse):
            broker.respond(m, decision)
            return
        self._begin_end(md, decision, lambda resp: broker.respond(m, resp))

    def _fenced_text(self, md: TransactionMetadata, req: EndTxnRequest) -> str:
        return (
            f"There is a newer producer with the same transactionalId which fences the current one: "
            f"transactional.id={md.transactional_id} producerId={req.producer_id} epoch={req.producer_epoch} "
            f"(current epoch {md.producer_epoch})"
        )

    def _invalid_state(self, md: TransactionMetadata, req: EndTxnRequest) -> EndTxnResponse:
        text = f"cannot {'commit' if req.committed else 'abort'} {md.transactional_id}: it is {md.state.display_name}"
        return EndTxnResponse(ErrorCode.INVALID_TXN_STATE, error_message=text)

    def _end_decision_v1(self, md: TransactionMetadata, req: EndTxnRequest) -> TxnLogValue | EndTxnResponse:
        """EndTxn under transaction version 1: the client's epoch must be the current one.

        ==============  ========================  ========================
        state           commit                    abort
        ==============  ========================  ========================
        Ongoing         PREPARE_COMMIT            PREPARE_ABORT
        PrepareCommit   CONCURRENT_TRANSACTIONS   INVALID_TXN_STATE
        PrepareAbort    INVALID_TXN_STATE         CONCURRENT_TRANSACTIONS
        CompleteCommit  NONE (a retry)            INVALID_TXN_STATE
        CompleteAbort   INVALID_TXN_STATE         NONE (a retry)
        Empty           INVALID_TXN_STATE         INVALID_TXN_STATE
        ==============  ========================  ========================
        """
        if md.producer_id != req.producer_id:
            text = f"transactional.id {md.transactional_id} has no producer id {req.producer_id}"
            return EndTxnResponse(ErrorCode.INVALID_PRODUCER_ID_MAPPING, error_message=text)
        stale = req.producer_epoch < md.producer_epoch and not self.weak.fence_epochs  # mutant M6 lets it pass
        if req.producer_epoch != md.producer_epoch and not stale:
            return EndTxnResponse(ErrorCode.PRODUCER_FENCED, error_message=self._fenced_text(md, req))
        if md.pending_state is not None:
            return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
        state, commit = md.state, req.committed
        if state is S.ONGOING:
            target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            return md.prepare_abort_or_commit(target, 1, self.broker.world.now_ms)
        if (state, commit) in ((S.COMPLETE_COMMIT, True), (S.COMPLETE_ABORT, False)):
            return EndTxnResponse(ErrorCode.NONE, md.producer_id, md.producer_epoch)
        if (state, commit) in ((S.PREPARE_COMMIT, True), (S.PREPARE_ABORT, False)):
            return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
        return self._invalid_state(md, req)

    def _end_decision_v2(self, md: TransactionMetadata, req: EndTxnRequest) -> TxnLogValue | EndTxnResponse:
        """EndTxn under transaction version 2 (KIP-890): every end bumps the epoch.

        A *retry* carries the epoch before the bump (or, when the bump moved the id to a new
        producer id, the previous producer id at epoch ``Short.MAX_VALUE - 1``); a *current* call
        carries the stored epoch. Kafka's table, for the states a current or retried call meets:

        ==============  =================  ================  =================  ================
        state           abort, retry       abort, current    commit, retry      commit, current
        ==============  =================  ================  =================  ================
        Ongoing         PRODUCER_FENCED    PREPARE_ABORT     PRODUCER_FENCED    PREPARE_COMMIT
        PrepareCommit   INVALID_TXN_STATE  PRODUCER_FENCED   CONCURRENT_TXNS    PRODUCER_FENCED
        PrepareAbort    CONCURRENT_TXNS    PRODUCER_FENCED   INVALID_TXN_STATE  PRODUCER_FENCED
        Empty           PRODUCER_FENCED    PREPARE_ABORT     PRODUCER_FENCED    INVALID_TXN_STATE
        CompleteAbort   NONE               PREPARE_ABORT     INVALID_TXN_STATE  INVALID_TXN_STATE
        CompleteCommit  INVALID_TXN_STATE  PREPARE_ABORT     NONE               INVALID_TXN_STATE
        ==============  =================  ================  =================  ================

        An abort from Empty or Complete* marks nothing: a client may abort without knowing
        whether anything was added (apache/kafka#19568).
        """
        epoch = req.producer_epoch
        if not self.weak.fence_epochs and epoch < md.producer_epoch:
            epoch = md.producer_epoch  # mutant M6: an older epoch passes as the current one
        retry_on_overflow = (
            md.prev_producer_id == req.producer_id and epoch == MAX_PRODUCER_EPOCH - 1 and md.producer_epoch == 0
        )
        retry_on_bump = md.producer_epoch == epoch + 1
        state = md.state
        if state in (S.ONGOING, S.EMPTY, S.DEAD, S.PREPARE_EPOCH_FENCE):
            valid = epoch == md.producer_epoch
        elif state.is_prepare:
            valid = retry_on_bump
        else:
            valid = retry_on_bump or retry_on_overflow or epoch == md.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        if md.producer_id != req.producer_id and not retry_on_overflow:
            text = f"transactional.id {md.transactional_id} has no producer id {req.producer_id}"
            return EndTxnResponse(ErrorCode.INVALID_PRODUCER_ID_MAPPING, error_message=text)
        if not valid:
            return EndTxnResponse(ErrorCode.PRODUCER_FENCED, error_message=self._fenced_text(md, req))
        if md.pending_state is not None:
            return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
        commit, now = req.committed, self.broker.world.now_ms
        if state is S.ONGOING:
            target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            next_pid = self.broker.allocate_producer_id() if md.is_producer_epoch_exhausted else NO_PRODUCER_ID
            if next_pid != NO_PRODUCER_ID:
                self.broker.world.trace.mark(self.broker.name, "coordinator: epoch exhausted at EndTxn, new id")
            return md.prepare_abort_or_commit(target, 2, now, next_producer_id=next_pid)
        if state.is_complete or state is S.EMPTY:
            done = (state, commit) in ((S.COMPLETE_COMMIT, True), (S.COMPLETE_ABORT, False))
            if is_retry and done:
                return EndTxnResponse(ErrorCode.NONE, md.producer_id, md.producer_epoch)
            if not is_retry and not commit:
                next_pid = self.broker.allocate_producer_id() if md.is_producer_epoch_exhausted else NO_PRODUCER_ID
                return md.prepare_abort_or_commit(
                    S.PREPARE_ABORT, 2, now, next_producer_id=next_pid, no_partition_added=True
                )
            return self._invalid_state(md, req)
        if (state, commit) in ((S.PREPARE_COMMIT, True), (S.PREPARE_ABORT, False)):
            return EndTxnResponse(ErrorCode.CONCURRENT_TRANSACTIONS)
        return self._invalid_state(md, req)

    def _fence_and_abort(self, md: TransactionMetadata, *, respond_init: Message | None, bump: bool = True) -> None:
        """Abort the open transaction with a bumped epoch; answer a waiting InitProducerId once written."""
        broker = self.broker
        value = md.prepare_fence_and_abort(self.version, broker.world.now_ms, bump=bump)
        if respond_init is None:
            self._begin_end(md, value, None)
            return

        def answered(resp: EndTxnResponse) -> None:
            code = ErrorCode.CONCURRENT_TRANSACTIONS if resp.error is ErrorCode.NONE else resp.error
            broker.respond(respond_init, InitProducerIdResponse(code))

        self._begin_end(md, value, answered)

    def _begin_end(
        self,
        md: TransactionMetadata,
        value: TxnLogValue,
        answer: Callable[[EndTxnResponse], None] | None,
    ) -> None:
        """Write a staged PREPARE_COMMIT / PREPARE_ABORT, call ``answer`` with the result, then send the markers."""
        broker = self.broker

        def written(ok: bool, _offset: int) -> None:
            if ok:
                if value.next_producer_id != NO_PRODUCER_ID:
                    resp = EndTxnResponse(ErrorCode.NONE, value.next_producer_id, 0)
                else:
                    resp = EndTxnResponse(ErrorCode.NONE, value.producer_id, value.producer_epoch)
            else:
                resp = EndTxnResponse(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            if answer is not None:
                answer(resp)
            if ok:
                if broker.world.sites.fire("coordinator.crash_after_prepare_logged", broker.name):
                    # Crash before any marker leaves (scheduled: a node cannot die inside its own handler).
                    broker.world.scheduler.call_soon(broker.world.crash, broker.name)
                    return
                if broker.world.sites.fire("coordinator.power_loss_after_prepare_answered", broker.name):
                    # The answer and the markers leave; then the machine loses its page cache.
                    name = broker.name
                    broker.world.scheduler.call_later(
                        3, lambda: broker.world.crash(name, lose_unflushed_tail=True) if broker.is_up else None
                    )
                self._send_markers(md, value)

        self._write(md, value, written)

    # -- markers -------------------------------------------------------------------------------

    def _is_current(self, md: TransactionMetadata) -> bool:
        """Return True if ``md`` is the loaded metadata of its id (not an object from before a reload)."""
        txns = self.txns.get(self.partition_of(md.transactional_id))
        return txns is not None and txns.get(md.transactional_id) is md

    def _send_markers(self, md: TransactionMetadata, value: TxnLogValue) -> None:
        txn_id = md.transactional_id
        pending = set(value.partitions)
        self._markers_pending[txn_id] = pending
        if not pending:
            self._complete(md, value)
            return
        for tp in sorted(pending):
            self._send_marker(md, value, tp)

    def _send_marker(self, md: TransactionMetadata, value: TxnLogValue, tp: tuple[str, int]) -> None:
        broker = self.broker
        txn_id = md.transactional_id
        if not self._is_current(md) or tp not in self._markers_pending.get(txn_id, set()):
            return
        if self._owner_error(txn_id) is not ErrorCode.NONE:
            return
        state = broker.metadata.get(tp)
        if state is None or state.leader < 0:
            broker.set_timer(MARKER_RETRY_BACKOFF_MS, self._send_marker, md, value, tp)
            return
        p = self.partition_of(txn_id)
        req = WriteTxnMarkersRequest(
            txn_id,
            value.producer_id,
            value.producer_epoch,
            self.coordinator_epoch.get(p, 0),
            value.state is S.PREPARE_COMMIT,
            tp[0],
            tp[1],
        )
        broker.request(
            f"broker-{state.leader}",
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
        pending = self._markers_pending.get(md.transactional_id)
        if not self._is_current(md) or pending is None or tp not in pending:
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
        if not self._is_current(md):
            return
        self._markers_pending.pop(md.transactional_id, None)
        target = S.COMPLETE_COMMIT if value.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if md.pending_state is not None or md.state is not value.state:
            return
        done = md.prepare_complete(self.broker.world.now_ms)

        def written(ok: bool, _offset: int) -> None:
            if not ok:
                # Leadership moved (the next coordinator completes it on load) or the write failed
                # while this broker still coordinates: retry, as Kafka does, or the id stays stuck.
                if self._owner_error(md.transactional_id) is ErrorCode.NONE:
                    self.broker.set_timer(MARKER_RETRY_BACKOFF_MS, self._complete, md, value)
                return
            self.broker.world.trace.emit(
                self.broker.name,
                "state",
                "txn.complete",
                ("txn_id", md.transactional_id),
                ("result", target.display_name),
                ("epoch", done.producer_epoch),
            )

        self._write(md, done, written)

    # -- timeouts -----------------------------------------------------------------------------

    def _expire_tick(self) -> None:
        broker = self.broker
        now = broker.world.now_ms
        for p in sorted(self.txns):
            if p in self.loading:
                continue
            txns = self.txns[p]
            for txn_id in sorted(txns):
                md = txns[txn_id]
                if md.state is S.ONGOING and md.pending_state is None and now - md.txn_start_ms > md.txn_timeout_ms:
                    broker.world.trace.mark(broker.name, "coordinator: timed-out transaction aborted")
                    self._fence_and_abort(md, respond_init=None, bump=self.bump_epoch_on_timeout)
        broker.set_timer(broker.config.transaction_abort_timed_out_transaction_cleanup_interval_ms, self._expire_tick)

    # -- views --------------------------------------------------------------------------------

    def describe(self) -> dict[str, TransactionMetadata]:
        """Return the loaded metadata of every transactional id this broker coordinates."""
        out: dict[str, TransactionMetadata] = {}
        for p in sorted(self.txns):
            if p not in self.loading:
                out.update(self.txns[p])
        return dict(sorted(out.items()))
