"""Kafka's ``TransactionCoordinator``: the request handlers and the transaction state machine.

The coordinator of a transactional id leads its ``__transaction_state`` partition
(``engine/coordinator_lookup.py``). Every transition is staged (``TransactionMetadata.prepare_*``),
written there and applied once replicated. The other mechanisms have their own modules:
``txn_state_manager.py`` (loading on failover, the writes), ``end_txn.py`` (EndTxn's decision
tables), ``marker_channel.py`` (sending markers, then COMPLETE_*), ``txn_timeout.py``
(``transaction.timeout.ms``), ``txn_verification.py`` (KIP-890 produce verification) and
``markers.py`` (partition leaders writing markers).

Requests (KIP-98, KIP-890)
--------------------------
``InitProducerId``   new id: a producer id with epoch 0. Known id: epoch + 1 (a new producer id
                     when the epoch is exhausted); an open transaction is first aborted with a
                     bumped epoch (zombie fencing; under version 2 the abort's one bump is the
                     fence, KAFKA-19367) and the client is told to retry (CONCURRENT_TRANSACTIONS).
``AddPartitionsToTxn``  from the client (transaction version 1) or from a partition leader
                     verifying a transactional produce (version 2): moves the id to ONGOING.
``AddOffsetsToTxn``  adds the group's ``__consumer_offsets`` partition.
``ListTransactions`` / ``DescribeTransactions``  the admin reads (KIP-664), answered from the
                     loaded metadata of the partitions this broker leads (``txn_state_manager.py``).
``EndTxn``           PREPARE_COMMIT / PREPARE_ABORT is written, the client is answered, markers
                     go to every partition, then COMPLETE_* is written. Version 2 bumps the epoch
                     on every end, so a delayed EndTxn from an earlier transaction is fenced
                     instead of ending the next one (KAFKA-17754).

Follows Kafka's coordinator as of apache/kafka trunk ``d79bd502`` (2026-08-23, Kafka 4.2), with
KAFKA-19367 (#19910, #19976), KAFKA-20090 (#21469, #21506), KAFKA-18660 (#18730) and KAFKA-20785
(#23204, read from its description).

Simplified: no transactional-id expiration (DEAD), no ``PREPARE_EPOCH_FENCE`` round trip (an
epoch fence goes straight to PREPARE_ABORT with the bumped epoch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.broker.extension import BrokerExtension
from engine.coordinator import end_txn
from engine.coordinator.marker_channel import TransactionMarkerChannel
from engine.coordinator.markers import MarkerWriter
from engine.coordinator.txn_metadata import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata, is_epoch_exhausted
from engine.coordinator.txn_state import TransactionState
from engine.coordinator.txn_state_manager import TransactionStateManager
from engine.coordinator.txn_timeout import TransactionTimeouts
from engine.coordinator.txn_verification import TransactionVerifier
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, partition_for
from engine.errors import ErrorCode, IllegalStateError, ProducerFencedException
from engine.protocol import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.broker.broker import Broker
    from engine.broker.produce import ProduceCall
    from engine.broker.replica import Replica
    from engine.coordinator.txn_log import TxnLogValue
    from engine.protocol import PartitionState
    from engine.sim.network import Message

S = TransactionState
_EMPTY_ID = "the transactional id is empty"


class TransactionCoordinator(BrokerExtension):
    """The transaction coordinator extension of one broker."""

    def __init__(self, weak: Weakenings = CORRECT) -> None:
        # ``weak`` exists to build weakened configurations (mutants) on purpose; the default is
        # Kafka's behaviour.
        self.weak = weak
        self.state_manager = TransactionStateManager(skip_replication_wait=not weak.replicate_transaction_state)
        self.marker_channel = TransactionMarkerChannel(self.state_manager)
        self.timeouts = TransactionTimeouts(
            self.state_manager, self._abort_timed_out, bump_epoch=weak.bump_epoch_on_timeout
        )
        self.verifier = TransactionVerifier(enabled=weak.verify_transactional_produce)
        self.markers: MarkerWriter | None = None

    # -- extension hooks --------------------------------------------------------------------

    def install(self, broker: Broker) -> None:
        """Register handlers and start the timeout check."""
        super().install(broker)
        if self.markers is None:
            self.markers = MarkerWriter(broker)
        self.state_manager.install(broker)
        self.marker_channel.install(broker)
        self.verifier.install(broker)
        broker.handlers[AddPartitionsToTxnRequest] = self._on_add_partitions
        broker.handlers[AddOffsetsToTxnRequest] = self._on_add_offsets
        broker.handlers[EndTxnRequest] = self._on_end_txn
        broker.handlers[WriteTxnMarkersRequest] = self.markers.handle
        broker.handlers[ListTransactionsRequest] = self._on_list_transactions
        broker.handlers[DescribeTransactionsRequest] = self._on_describe_transactions
        self.timeouts.install(broker)

    def on_crash(self) -> None:
        """Forget everything (the log keeps it)."""
        self.state_manager.reset()
        self.marker_channel.reset()
        if self.markers is not None:
            self.markers.reset()

    def on_become_leader(self, state: PartitionState) -> None:
        """Load a ``__transaction_state`` partition this broker now leads."""
        if state.topic == TRANSACTION_STATE_TOPIC:
            self.state_manager.load(state, self.marker_channel.send_markers)

    def on_become_follower(self, state: PartitionState) -> None:
        """Unload a partition this broker no longer leads; drop its markers and fail its pending writes."""
        if self.markers is not None:
            self.markers.on_leadership_lost((state.topic, state.partition))
        if state.topic != TRANSACTION_STATE_TOPIC:
            return
        self.marker_channel.forget(self.state_manager.unload(state.partition))
        self.state_manager.fail_writes(state.partition)

    def on_high_watermark(self, r: Replica) -> None:
        """Answer markers and complete ``__transaction_state`` writes now below the HW."""
        if self.markers is not None:
            self.markers.on_high_watermark(r)
        self.state_manager.on_high_watermark(r)

    def handles_init_producer_id(self, m: Message) -> bool:
        """Answer InitProducerId for a transactional id."""
        self._on_init_producer_id(m)
        return True

    def intercept_produce(self, call: ProduceCall, index: int, r: Replica) -> bool:
        """Transaction version 2: verify that a transactional producer is in a transaction here."""
        return self.verifier.intercept(call, index, r)

    # -- views ----------------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Return the cluster's transaction.version."""
        return self.broker.config.transaction_version

    @property
    def txns(self) -> dict[int, dict[str, TransactionMetadata]]:
        """Return the metadata of each loaded (or loading) ``__transaction_state`` partition."""
        return self.state_manager.txns

    @property
    def loading(self) -> set[int]:
        """Return the ``__transaction_state`` partitions still loading."""
        return self.state_manager.loading

    @property
    def coordinator_epoch(self) -> dict[int, int]:
        """Return the coordinator epoch of each ``__transaction_state`` partition this broker leads."""
        return self.state_manager.coordinator_epoch

    def partition_of(self, transactional_id: str) -> int:
        """Return the ``__transaction_state`` partition of an id."""
        return self.state_manager.partition_of(transactional_id)

    def describe(self) -> dict[str, TransactionMetadata]:
        """Return the loaded metadata of every transactional id this broker coordinates."""
        return self.state_manager.describe()

    # -- ListTransactions / DescribeTransactions (KIP-664) -------------------------------------

    def _on_list_transactions(self, m: Message) -> None:
        """The ids of the partitions this broker leads (``handleListTransactions``)."""
        self.broker.respond(m, self.state_manager.list_transactions(m.body, self.broker.world.now_ms))

    def _on_describe_transactions(self, m: Message) -> None:
        """Each id's state, as its coordinator holds it (``handleDescribeTransactions``)."""
        ids = m.body.transactional_ids
        answer = tuple(self.state_manager.describe_transaction(t) for t in ids)
        self.broker.respond(m, DescribeTransactionsResponse(answer))

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
        code = self.state_manager.owner_error(txn_id)
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
            # the aborting epoch is never handed out to the new instance.
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

        self.state_manager.append(md, value, written)

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
        code = self.state_manager.owner_error(txn_id)
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
        txn_id: str,
        pid: int,
        epoch: int,
        tps: tuple[tuple[str, int], ...],
        reply: Callable[[ErrorCode, str | None], Any],
    ) -> None:
        if not txn_id:
            reply(ErrorCode.INVALID_REQUEST, _EMPTY_ID)
            return
        if self.state_manager.owner_error(txn_id) is ErrorCode.NONE:
            # KAFKA-18660: a transition in flight is answered before the producer id is judged. After
            # a version-2 commit that moved the id to a new producer id, the next transaction's first
            # produce carries that id while the markers (Kafka's pending COMPLETE_*) are still being
            # written: it must retry (CONCURRENT_TRANSACTIONS), not fail (INVALID_PRODUCER_ID_MAPPING).
            known = self.txns[self.partition_of(txn_id)].get(txn_id)
            if known is not None and (known.pending_state is not None or known.state.is_prepare):
                reply(ErrorCode.CONCURRENT_TRANSACTIONS, None)
                return
        md, code, text = self._check_producer(txn_id, pid, epoch)
        if code is not ErrorCode.NONE:
            reply(code, text)
            return
        if md is None:
            raise IllegalStateError(f"the producer check of {txn_id} passed without its metadata")
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
        self.state_manager.append(
            md,
            value,
            lambda ok, _o: reply(ErrorCode.NONE if ok else ErrorCode.COORDINATOR_NOT_AVAILABLE, None),
        )

    def _verify_partitions(self, req: AddPartitionsToTxnRequest) -> tuple[ErrorCode, str | None]:
        """Whether the partitions are already in the producer's transaction (a version-1 produce's check).

        Kafka's ``TransactionCoordinator.handleVerifyPartitionsInTransaction``: nothing is written;
        a partition the transaction lacks is TRANSACTION_ABORTABLE (the leader answers older produce
        versions INVALID_TXN_STATE instead, ``AddPartitionsToTxnManager``).
        """
        code = self.state_manager.owner_error(req.transactional_id)
        if code is not ErrorCode.NONE:
            return code, None
        md = self.txns[self.partition_of(req.transactional_id)].get(req.transactional_id)
        if md is None or md.producer_id != req.producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if md.producer_epoch != req.producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if md.state.is_prepare:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        if not set(req.partitions) <= set(md.partitions):
            return ErrorCode.TRANSACTION_ABORTABLE, "the partition was not added to the transaction"
        return ErrorCode.NONE, None

    def _on_add_partitions(self, m: Message) -> None:
        req: AddPartitionsToTxnRequest = m.body
        if req.verify_only:
            code, text = self._verify_partitions(req)
            self.broker.respond(m, AddPartitionsToTxnResponse(code, text))
            return
        self._add_partitions(
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
        code = self.state_manager.owner_error(req.transactional_id)
        if code is not ErrorCode.NONE:
            broker.respond(m, EndTxnResponse(code))
            return
        md = self.txns[self.partition_of(req.transactional_id)].get(req.transactional_id)
        if md is None:
            text = f"transactional.id {req.transactional_id} has no producer id {req.producer_id}"
            broker.respond(m, EndTxnResponse(ErrorCode.INVALID_PRODUCER_ID_MAPPING, error_message=text))
            return
        version = req.transaction_version or self.version  # Kafka: per request (EndTxn v5+ is version 2)
        decide = end_txn.decide_v2 if version >= 2 else end_txn.decide_v1
        decision = decide(broker, md, req, fence_epochs=self.weak.fence_epochs)
        if isinstance(decision, EndTxnResponse):
            broker.respond(m, decision)
            return
        self._begin_end(md, decision, lambda resp: broker.respond(m, resp))

    def _fence_and_abort(self, md: TransactionMetadata, *, respond_init: Message | None, bump: bool = True) -> None:
        """Abort the open transaction with a bumped epoch; answer a waiting InitProducerId once written.

        Under version 2 a fence at the last epoch a client may hold moves the id to a new producer id
        when the abort completes (KAFKA-20090), as an EndTxn at that epoch would.
        """
        broker = self.broker
        next_pid = NO_PRODUCER_ID
        if bump and self.version >= 2 and md.is_producer_epoch_exhausted:
            broker.world.trace.mark(broker.name, "coordinator: epoch exhausted at a fence, new id")
            next_pid = broker.allocate_producer_id()
        value = md.prepare_fence_and_abort(self.version, broker.world.now_ms, bump=bump, next_producer_id=next_pid)
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
                self.marker_channel.send_markers(md, value)

        self.state_manager.append(md, value, written)

    def _abort_timed_out(self, md: TransactionMetadata, bump: bool) -> None:
        self._fence_and_abort(md, respond_init=None, bump=bump)
