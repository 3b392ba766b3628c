"""Transaction verification of a produce, on the partition leader (KIP-890).

Under ``transaction.version`` 2 a partition leader does not append a transactional batch from a
producer it has no open transaction for: it first sends AddPartitionsToTxn to the coordinator
itself (Kafka's ``AddPartitionsToTxnManager``, started from ``ReplicaManager.appendRecords``), which
adds the partition to the transaction (the client no longer does, KIP-890 part 2). The produce is
parked until the answer; then it is appended or refused:

=========================  ==========================================================
coordinator answer         the produce
=========================  ==========================================================
NONE                       appended (``continue_produce``)
CONCURRENT_TRANSACTIONS    asked again after ``VERIFY_RETRY_BACKOFF_MS`` while the produce's
                           timeout lasts (KAFKA-18654); then as any retriable error
retriable, or no answer    NOT_ENOUGH_REPLICAS, which the producer retries
PRODUCER_FENCED            INVALID_PRODUCER_EPOCH
TRANSACTION_ABORTABLE      TRANSACTION_ABORTABLE (verify-only: the partition was never added)
anything else              INVALID_TXN_STATE
=========================  ==========================================================

The request decides how (``ProduceRequest.transaction_version``, read by the wire from the Produce
version as Kafka's ``AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation``
does): version 2 (Produce v12+, and the engine's own producers on a version-2 cluster) adds the
partition; version 1 (Produce v11 and older: librdkafka, kafka-python, aiokafka, which add their
partitions themselves) only verifies that it was added (``verify_only``), so those clients keep
transaction version 1 on the same cluster.

This is a partition-leader duty housed with the coordinator; it owns no state (a parked produce
lives in its callbacks). Mutant M8 turns it off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.coordinator_lookup import KEY_TYPE_TRANSACTION
from engine.errors import ErrorCode
from engine.protocol import AddPartitionsToTxnRequest

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.broker.produce import ProduceCall
    from engine.broker.replica import Replica
    from engine.protocol import AddPartitionsToTxnResponse, ProduceRequest

#: Kafka's add.partitions.to.txn.retry.backoff.ms default: how soon a partition leader asks again.
VERIFY_RETRY_BACKOFF_MS = 20
#: How long a partition leader waits for the coordinator's answer (as long as for a marker's).
VERIFY_REQUEST_TIMEOUT_MS = 10_000


class TransactionVerifier:
    """Verifies transactional produces with the coordinator before they are appended."""

    broker: Broker

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled

    def install(self, broker: Broker) -> None:
        """Attach to the broker (at start and every restart)."""
        self.broker = broker

    def intercept(self, call: ProduceCall, index: int, r: Replica) -> bool:
        """Return True if the partition's batch must be verified first (it is then answered later)."""
        req: ProduceRequest = call.request.body
        batch = call.part(index).batch
        if not batch.is_transactional or self.broker.config.transaction_version < 2 or req.transactional_id is None:
            return False
        if not self.enabled:
            return False  # mutant M8
        entry = r.producers.producers.get(batch.producer_id)
        if (
            entry is not None
            and entry.current_txn_first_offset is not None
            and entry.producer_epoch == batch.producer_epoch
        ):
            return False
        self._verify(call, index, self.broker.world.now_ms + req.timeout_ms)
        return True

    def _verify(self, call: ProduceCall, index: int, deadline_ms: int) -> None:
        """Ask the coordinator whether the producer is in a transaction here (adding the partition)."""
        req: ProduceRequest = call.request.body
        part = call.part(index)
        batch = part.batch
        broker = self.broker
        coordinator, code = broker.coordinator_for(req.transactional_id or "", KEY_TYPE_TRANSACTION)
        if code is not ErrorCode.NONE:
            broker.produce_error(call, index, ErrorCode.NOT_ENOUGH_REPLICAS, "transaction coordinator not available")
            return
        verify = AddPartitionsToTxnRequest(
            req.transactional_id,
            batch.producer_id,
            batch.producer_epoch,
            ((part.topic, part.partition),),
            from_broker=True,
            verify_only=0 < req.transaction_version < 2,
        )
        broker.request(
            f"broker-{coordinator}",
            verify,
            lambda resp: self._verified(call, index, resp, deadline_ms),
            timeout_ms=VERIFY_REQUEST_TIMEOUT_MS,
        )

    def _verified(
        self, call: ProduceCall, index: int, resp: AddPartitionsToTxnResponse | None, deadline_ms: int
    ) -> None:
        broker = self.broker
        if (
            resp is not None
            and resp.error is ErrorCode.CONCURRENT_TRANSACTIONS
            and broker.world.now_ms + VERIFY_RETRY_BACKOFF_MS < deadline_ms
        ):
            # The previous transaction is still writing its markers: retry on the broker, as Kafka
            # 4.0 does (KAFKA-18654, add.partitions.to.txn.retry.backoff.ms), not via the client.
            broker.set_timer(VERIFY_RETRY_BACKOFF_MS, self._verify, call, index, deadline_ms)
            return
        if resp is not None and resp.error is ErrorCode.NONE:
            broker.world.trace.mark(broker.name, "partition: transactional produce verified with the coordinator")
            broker.continue_produce(call, index, verified=True)
            return
        if resp is None or resp.error.retriable:
            broker.produce_error(call, index, ErrorCode.NOT_ENOUGH_REPLICAS, "could not verify the transaction; retry")
            return
        if resp.error is ErrorCode.PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        elif resp.error is ErrorCode.TRANSACTION_ABORTABLE:
            code = ErrorCode.TRANSACTION_ABORTABLE  # the wire answers Produce v10 and older INVALID_TXN_STATE
        else:
            code = ErrorCode.INVALID_TXN_STATE
        broker.world.trace.mark(broker.name, "partition: transactional produce rejected by verification")
        broker.produce_error(call, index, code, resp.error_message or resp.error.name)
