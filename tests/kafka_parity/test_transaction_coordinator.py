"""Kafka's ``TransactionCoordinatorTest``, paraphrased against the simulated transaction coordinator.

Each test is named after the Kafka test it paraphrases (camelCase to snake_case) and its docstring
names that test, so the two files can be read side by side. Kafka drives its coordinator over mocks
(a ``TransactionStateManager`` that returns metadata built by hand); here a three-broker cluster
runs the real coordinator and a raw client sends exact InitProducerId, AddPartitionsToTxn and EndTxn
requests to it. A state Kafka builds by hand is reached with real requests (an EndTxn whose
WriteTxnMarkers requests are held stays in PREPARE_*); only an epoch near ``Short.MAX_VALUE`` is
set on the loaded metadata, as if the id had been initialised that many times. Where Kafka
parameterises over the client's transaction version, the test runs with ``transaction.version`` 1
(Kafka's TV_0/TV_1) and 2 (TV_2).

Reference: apache/kafka ``core/src/test/scala/unit/kafka/coordinator/transaction/
TransactionCoordinatorTest.scala`` and ``TransactionCoordinator.scala`` at trunk ``d79bd502``
(2026-08-23, Kafka 4.2; read through the confluentinc/kafka mirror of trunk), which includes
KAFKA-19367 (#19910, #19976), KAFKA-20090 (#21469, #21506) and KAFKA-18660 (#18730). KAFKA-20785
(#23204) is paraphrased from its description (its test is not in that snapshot).

The engine's PREPARE_* always has its markers in flight: it is Kafka's PREPARE_* with its pending
COMPLETE_* set, which Kafka's real flow always has once the PREPARE_* is written. Kafka tests that
build a PREPARE_* with nothing pending (``shouldRespondWithProducerFencedOnAddPartitionsWhenEpochsAreDifferent``)
are paraphrased with the nearest state the engine reaches, said in each docstring.

Not paraphrased, because the engine does not model what they test:

- ``testVerifyPartitionHandling``,
  ``shouldRespondWithErrorsNoneOnAddPartitionWhenOngoingVerifyOnlyAndPartitionsTheSame``,
  ``shouldRespondWithInvalidTxnStateWhenVerifyOnlyAndPartitionNotPresent``: verify-only
  AddPartitionsToTxn (KIP-890 part 1); the engine's partition leaders add the partition (part 2).
- ``shouldRespondWithInvalidRequestAddPartitionsToTransactionWhenTransactionalIdIsNull``,
  ``shouldRespondWithInvalidRequestOnEndTxnWhenTransactionalIdIsNull``: the simulated requests
  carry a ``str`` id (a null id exists only for InitProducerId, the idempotent case, kept below).
- ``shouldFailToAbortTransactionOnHandleInitPidWhenProducerEpochIsSmaller``,
  ``shouldNotAcceptSmallerEpochDuringTransactionExpiration``: another request thread bumps the
  epoch between two lock sections; the simulation handles one message at a time.
- ``shouldNotBumpEpochWhenAbortingExpiredTransactionIfAppendToLogFails``: the engine fences with a
  staged transition that a failed write discards, so there is no bumped in-memory epoch
  (``hasFailedEpochFence``) to keep; the same outcome is checked for InitProducerId in
  ``test_should_not_repeatedly_bump_epoch_due_to_init_pid_during_ongoing_txn_if_append_to_log_fails``.
- ``testDescribeTransactionsWithExpiringTransactionalId``: no transactional-id expiration (DEAD).
- ``shouldReturnWhenTransactionVersionDowngraded``, ``shouldReturnCorrectlyWhenTransactionVersionUpgraded``
  (2024 trunk): the transaction version is a fixed broker setting, never upgraded or downgraded.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster
from engine.coordinator.txn_coordinator import TransactionCoordinator
from engine.coordinator.txn_log import TxnLogValue, records_of
from engine.coordinator.txn_metadata import TransactionMetadata
from engine.coordinator.txn_state import MAX_PRODUCER_EPOCH, TransactionState
from engine.coordinator_lookup import KEY_TYPE_TRANSACTION, TRANSACTION_STATE_TOPIC
from engine.errors import CoordinatorLoadInProgressException, ErrorCode
from engine.protocol import (
    AddPartitionsToTxnRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    EndTxnResponse,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from tests.scenarios.conftest import RawClient

S = TransactionState
TXN = "known"
TIMEOUT_MS = 60_000
TP = ("t", 0)
EXHAUSTED = MAX_PRODUCER_EPOCH - 1  # 32766: the last epoch a client may be given
VERSIONS = pytest.mark.parametrize("version", [1, 2])
RETRY = pytest.mark.parametrize("is_retry", [False, True])
TIMED_OUT = "coordinator: timed-out transaction aborted"  # the trace mark of the expiry check


class _Harness:
    """A three-broker cluster, topic ``t`` and a raw client that sends requests to the coordinator."""

    def __init__(self, version: int = 2, **config: Any) -> None:
        self.c = Cluster(
            seed=11, brokers=3, config={"min.insync.replicas": 2, "transaction.version": version, **config}
        )
        self.c.create_topic("t", partitions=2, replication_factor=3)
        self.client = RawClient(self.c.world)

    def ask(self, broker: int, body: Any, timeout_ms: int = 2_000) -> Any:
        """Send one request to a broker and run until it is answered."""
        box = self.client.call(f"broker-{broker}", body, timeout_ms=timeout_ms)
        self.c.run_until(lambda: bool(box))
        return box[0]

    def coordinator(self, txn_id: str = TXN) -> int:
        """Return the coordinator of an id (FindCoordinator, retried while ``__transaction_state`` is created)."""
        while True:
            resp = self.ask(1, FindCoordinatorRequest(txn_id, KEY_TYPE_TRANSACTION))
            if resp.error is ErrorCode.NONE:
                return resp.node_id
            self.c.run_for(100)

    def other_broker(self, txn_id: str = TXN) -> int:
        """Return a live broker that does not coordinate the id."""
        return next(b for b in sorted(self.c.brokers) if b != self.coordinator(txn_id))

    def send(self, body: Any, txn_id: str = TXN, timeout_ms: int = 2_000) -> Any:
        """Send a request to the coordinator of ``txn_id``."""
        return self.ask(self.coordinator(txn_id), body, timeout_ms)

    def init(
        self, pid: int = -1, epoch: int = -1, txn_id: str = TXN, timeout_ms: int = TIMEOUT_MS
    ) -> InitProducerIdResponse:
        """InitProducerId, with the producer id and epoch of KIP-360 when given."""
        return self.send(InitProducerIdRequest(txn_id, timeout_ms, pid, epoch), txn_id)

    def add(self, pid: int, epoch: int, *tps: tuple[str, int], txn_id: str = TXN) -> ErrorCode:
        """AddPartitionsToTxn (``t-0`` when no partition is named); return the error."""
        return self.send(AddPartitionsToTxnRequest(txn_id, pid, epoch, tps or (TP,)), txn_id).error

    def end(self, pid: int, epoch: int, *, commit: bool, txn_id: str = TXN) -> EndTxnResponse:
        """EndTxn: commit or abort."""
        return self.send(EndTxnRequest(txn_id, pid, epoch, commit), txn_id)

    def tc(self, txn_id: str = TXN) -> TransactionCoordinator:
        """Return the coordinator extension of the id's coordinator."""
        return self.c.brokers[self.coordinator(txn_id)].extensions[0]

    def md(self, txn_id: str = TXN) -> TransactionMetadata:
        """Return the coordinator's loaded metadata of an id."""
        return self.tc(txn_id).describe()[txn_id]

    def written(self, txn_id: str = TXN) -> list[TxnLogValue]:
        """Return every value written for the id to the coordinator's ``__transaction_state`` partition."""
        tc = self.tc(txn_id)
        r = tc.broker.replicas[(TRANSACTION_STATE_TOPIC, tc.partition_of(txn_id))]
        return [v for _o, k, v in records_of(r.log.batches) if k == txn_id and v is not None]

    def markers(self, tp: tuple[str, int] = TP) -> list[tuple[str, int, int]]:
        """Return (COMMIT/ABORT, producer id, epoch) of every marker on the partition's leader."""
        log = self.c.brokers[self.c.leader(*tp)].disk.get(f"log:{tp[0]}-{tp[1]}")
        return [(b.control_type, b.producer_id, b.producer_epoch) for b in log.batches if b.is_control]

    def settle(self) -> None:
        """Let markers and the COMPLETE_* write finish."""
        self.c.run_for(500)

    def hold_markers(self) -> int:
        """Hold every WriteTxnMarkers request, so an ended transaction stays in PREPARE_*."""
        return self.c.add_rule("hold", body_type="WriteTxnMarkersRequest", count=None)

    def release_markers(self, rule: int) -> None:
        """Deliver the held markers and let the transaction complete."""
        self.c.remove_rule(rule)
        self.c.release(rule)
        self.settle()

    # -- reaching a state with real requests -------------------------------------------------

    def ready(self, inits: int = 1, epoch: int | None = None) -> tuple[int, int]:
        """InitProducerId ``inits`` times (EMPTY at epoch ``inits - 1``), then set ``epoch`` if given."""
        for _ in range(inits):
            resp = self.init()
            assert resp.error is ErrorCode.NONE, resp
        if epoch is not None:
            self.md().producer_epoch = epoch  # as if the id had been initialised that many times
        md = self.md()
        return md.producer_id, md.producer_epoch

    def ongoing(self, inits: int = 1, epoch: int | None = None) -> tuple[int, int]:
        """Reach ONGOING with ``t-0``; return (producer id, epoch)."""
        pid, e = self.ready(inits, epoch)
        assert self.add(pid, e) is ErrorCode.NONE
        return pid, e

    def completed(self, *, commit: bool, inits: int = 1) -> tuple[int, int]:
        """Reach COMPLETE_COMMIT or COMPLETE_ABORT; return (producer id, epoch now)."""
        pid, e = self.ongoing(inits)
        assert self.end(pid, e, commit=commit).error is ErrorCode.NONE
        self.settle()
        md = self.md()
        assert md.state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
        return pid, md.producer_epoch

    def preparing(self, *, commit: bool, inits: int = 1) -> tuple[int, int, int]:
        """Reach PREPARE_COMMIT or PREPARE_ABORT with the markers held; return (pid, epoch now, rule)."""
        pid, e = self.ongoing(inits)
        rule = self.hold_markers()
        assert self.end(pid, e, commit=commit).error is ErrorCode.NONE
        md = self.md()
        assert md.state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
        return pid, md.producer_epoch, rule

    def loading_coordinator(self) -> int:
        """Fail the coordinator over and return the new one while it still loads ``__transaction_state``."""
        for _ in range(10):  # a longer partition takes longer to load
            assert self.init().error is ErrorCode.NONE
        old = self.coordinator()
        p = self.tc().partition_of(TXN)
        self.c.crash(old)
        loading = [b for b in self.c.brokers.values() if b.broker_id != old]
        self.c.run_until(lambda: any(p in b.extensions[0].loading for b in loading))
        return next(b.broker_id for b in loading if p in b.extensions[0].loading)


def _retry_epoch(version: int, epoch: int) -> int:
    """Kafka's ``requestEpoch``: a TV2 call that already bumped the epoch carries the one before."""
    return epoch - 1 if version >= 2 else epoch


# -- InitProducerId --------------------------------------------------------------------------


def test_should_return_invalid_request_when_transactional_id_is_empty() -> None:
    """TransactionCoordinatorTest.shouldReturnInvalidRequestWhenTransactionalIdIsEmpty."""
    h = _Harness()
    for _ in range(2):
        resp = h.ask(1, InitProducerIdRequest("", TIMEOUT_MS))
        assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.INVALID_REQUEST, -1, -1)


def test_should_accept_init_pid_and_return_next_pid_when_transactional_id_is_null() -> None:
    """TransactionCoordinatorTest.shouldAcceptInitPidAndReturnNextPidWhenTransactionalIdIsNull."""
    h = _Harness()
    first, second = h.ask(1, InitProducerIdRequest()), h.ask(1, InitProducerIdRequest())
    assert (first.error, first.producer_epoch) == (ErrorCode.NONE, 0)
    assert (second.error, second.producer_id, second.producer_epoch) == (ErrorCode.NONE, first.producer_id + 1, 0)


@VERSIONS
def test_should_init_pid_with_epoch_zero_for_new_transactional_id(version: int) -> None:
    """TransactionCoordinatorTest.shouldInitPidWithEpochZeroForNewTransactionalId."""
    h = _Harness(version)
    resp = h.init()
    assert (resp.error, resp.producer_epoch) == (ErrorCode.NONE, 0)
    md = h.md()
    assert (md.producer_id, md.producer_epoch, md.state) == (resp.producer_id, 0, S.EMPTY)
    assert md.client_transaction_version == version


def test_should_generate_new_producer_id_if_no_state_and_producer_id_and_epoch_provided() -> None:
    """TransactionCoordinatorTest.shouldGenerateNewProducerIdIfNoStateAndProducerIdAndEpochProvided."""
    h = _Harness()
    resp = h.init(pid=10, epoch=1)  # a producer recovering from UNKNOWN_PRODUCER_ID on an unknown id
    assert (resp.error, resp.producer_epoch) == (ErrorCode.NONE, 0)
    assert resp.producer_id != 10
    assert h.md().producer_id == resp.producer_id


def test_should_generate_new_producer_id_if_epochs_exhausted() -> None:
    """TransactionCoordinatorTest.shouldGenerateNewProducerIdIfEpochsExhausted."""
    h = _Harness()
    pid, _ = h.ready(epoch=EXHAUSTED)
    resp = h.init()
    assert resp.error is ErrorCode.NONE
    assert resp.producer_id != pid
    assert resp.producer_epoch == 0
    md = h.md()
    assert (md.producer_id, md.prev_producer_id, md.producer_epoch) == (resp.producer_id, pid, 0)


def test_should_respond_with_not_coordinator_on_init_pid_when_not_coordinator() -> None:
    """TransactionCoordinatorTest.shouldRespondWithNotCoordinatorOnInitPidWhenNotCoordinator."""
    h = _Harness()
    resp = h.ask(h.other_broker(), InitProducerIdRequest(TXN, TIMEOUT_MS))
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NOT_COORDINATOR, -1, -1)


def test_should_respond_with_coordinator_load_in_progress_on_init_pid_when_coordinator_loading() -> None:
    """TransactionCoordinatorTest.shouldRespondWithCoordinatorLoadInProgressOnInitPidWhenCoordinatorLoading."""
    h = _Harness()
    loading = h.loading_coordinator()
    resp = h.ask(loading, InitProducerIdRequest(TXN, TIMEOUT_MS))
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1, -1)


# -- AddPartitionsToTxn ----------------------------------------------------------------------


def test_should_respond_with_invalid_pid_mapping_on_add_partitions_to_transaction_when_transactional_id_not_present() -> None:  # noqa: E501  # fmt: skip
    """TransactionCoordinatorTest.shouldRespondWithInvalidPidMappingOnAddPartitionsToTransactionWhenTransactionalIdNotPresent."""
    h = _Harness()
    assert h.add(0, 1, txn_id="never-initialised") is ErrorCode.INVALID_PRODUCER_ID_MAPPING


def test_should_respond_with_invalid_request_add_partitions_to_transaction_when_transactional_id_is_empty() -> None:
    """TransactionCoordinatorTest.shouldRespondWithInvalidRequestAddPartitionsToTransactionWhenTransactionalIdIsEmpty."""
    h = _Harness()
    resp = h.ask(1, AddPartitionsToTxnRequest("", 0, 1, (TP,)))
    assert resp.error is ErrorCode.INVALID_REQUEST


def test_should_respond_with_not_coordinator_on_add_partitions_when_not_coordinator() -> None:
    """TransactionCoordinatorTest.shouldRespondWithNotCoordinatorOnAddPartitionsWhenNotCoordinator."""
    h = _Harness()
    pid, epoch = h.ready()
    resp = h.ask(h.other_broker(), AddPartitionsToTxnRequest(TXN, pid, epoch, (TP,)))
    assert resp.error is ErrorCode.NOT_COORDINATOR


def test_should_respond_with_coordinator_load_in_progress_on_add_partitions_when_coordinator_loading() -> None:
    """TransactionCoordinatorTest.shouldRespondWithCoordinatorLoadInProgressOnAddPartitionsWhenCoordinatorLoading."""
    h = _Harness()
    loading = h.loading_coordinator()
    resp = h.ask(loading, AddPartitionsToTxnRequest(TXN, 0, 1, (TP,)))
    assert resp.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def _assert_add_partitions_concurrent_while_preparing(*, commit: bool) -> None:
    """Kafka's validateConcurrentTransactions: PREPARE_* answers CONCURRENT_TRANSACTIONS."""
    h = _Harness()
    pid, epoch, _rule = h.preparing(commit=commit)
    assert h.add(pid, epoch, ("t", 1)) is ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.md().partitions == (TP,)


def test_should_respond_with_concurrent_transactions_on_add_partitions_when_state_is_prepare_commit() -> None:
    """TransactionCoordinatorTest.shouldRespondWithConcurrentTransactionsOnAddPartitionsWhenStateIsPrepareCommit."""
    _assert_add_partitions_concurrent_while_preparing(commit=True)


def test_should_respond_with_concurrent_transaction_on_add_partitions_when_state_is_prepare_abort() -> None:
    """TransactionCoordinatorTest.shouldRespondWithConcurrentTransactionOnAddPartitionsWhenStateIsPrepareAbort."""
    _assert_add_partitions_concurrent_while_preparing(commit=False)


def test_should_respond_with_producer_fenced_on_add_partitions_when_epochs_are_different() -> None:
    """TransactionCoordinatorTest.shouldRespondWithProducerFencedOnAddPartitionsWhenEpochsAreDifferent.

    Kafka builds PREPARE_COMMIT with no transition pending; the engine's PREPARE_* always writes
    its markers (a pending COMPLETE_*, answered CONCURRENT_TRANSACTIONS first since KAFKA-18660),
    so the stale epoch is checked here where no transition is in flight: after COMPLETE_COMMIT.
    """
    h = _Harness()
    pid, epoch = h.completed(commit=True)
    assert h.add(pid, epoch - 1) is ErrorCode.PRODUCER_FENCED
    pid, epoch, _rule = h.preparing(commit=True, inits=0)
    assert h.add(pid, epoch - 1) is ErrorCode.CONCURRENT_TRANSACTIONS  # the markers are in flight


def test_should_return_concurrent_txn_on_add_partitions_if_end_txn_v2_epoch_overflow_and_not_complete() -> None:
    """TransactionCoordinatorTest.shouldReturnConcurrentTxnOnAddPartitionsIfEndTxnV2EpochOverflowAndNotComplete.

    KAFKA-18660: a version-2 commit at the last epoch moves the id to a new producer id; the next
    transaction's first produce carries that id while the markers of the commit are still being
    written, and is told to retry (it was INVALID_PRODUCER_ID_MAPPING before the fix).
    """
    h = _Harness(2)
    pid, epoch = h.ongoing(epoch=EXHAUSTED)
    rule = h.hold_markers()
    resp = h.end(pid, epoch, commit=True)
    assert resp.error is ErrorCode.NONE and resp.producer_id != pid and resp.producer_epoch == 0
    new_pid = resp.producer_id
    md = h.md()
    assert (md.state, md.producer_id, md.producer_epoch, md.next_producer_id) == (
        S.PREPARE_COMMIT,
        pid,
        MAX_PRODUCER_EPOCH,
        new_pid,
    )
    assert h.add(new_pid, 0) is ErrorCode.CONCURRENT_TRANSACTIONS
    h.release_markers(rule)
    assert (h.md().state, h.md().producer_id) == (S.COMPLETE_COMMIT, new_pid)
    assert h.add(new_pid, 0) is ErrorCode.NONE


def _assert_add_partitions_starts_or_extends(h: _Harness, previous: TransactionState, pid: int, epoch: int) -> None:
    """Kafka's validateSuccessfulAddPartitions: a new ONGOING value is written."""
    before = h.written()
    assert h.md().state is previous
    assert h.add(pid, epoch, ("t", 1)) is ErrorCode.NONE
    after = h.written()
    assert len(after) == len(before) + 1
    value = after[-1]
    assert value.state is S.ONGOING
    assert ("t", 1) in value.partitions
    if previous is S.ONGOING:
        assert value.txn_start_ms == before[-1].txn_start_ms  # the open transaction keeps its start
    else:
        assert value.txn_start_ms == value.txn_last_update_ms  # a new transaction starts now
    assert h.md().current() == value


def test_should_append_new_metadata_to_log_on_add_partitions_when_partitions_added() -> None:
    """TransactionCoordinatorTest.shouldAppendNewMetadataToLogOnAddPartitionsWhenPartitionsAdded."""
    h = _Harness()
    pid, epoch = h.ready()
    _assert_add_partitions_starts_or_extends(h, S.EMPTY, pid, epoch)


def test_should_respond_with_success_on_add_partitions_when_state_is_ongoing() -> None:
    """TransactionCoordinatorTest.shouldRespondWithSuccessOnAddPartitionsWhenStateIsOngoing."""
    h = _Harness()
    pid, epoch = h.ongoing()
    _assert_add_partitions_starts_or_extends(h, S.ONGOING, pid, epoch)
    assert h.md().partitions == (TP, ("t", 1))


@VERSIONS
def test_should_respond_with_success_on_add_partitions_when_state_is_complete_commit(version: int) -> None:
    """TransactionCoordinatorTest.shouldRespondWithSuccessOnAddPartitionsWhenStateIsCompleteCommit."""
    h = _Harness(version)
    pid, epoch = h.completed(commit=True)
    _assert_add_partitions_starts_or_extends(h, S.COMPLETE_COMMIT, pid, epoch)
    assert h.md().partitions == (("t", 1),)  # the completed transaction's partitions are not carried over


@VERSIONS
def test_should_respond_with_success_on_add_partitions_when_state_is_complete_abort(version: int) -> None:
    """TransactionCoordinatorTest.shouldRespondWithSuccessOnAddPartitionsWhenStateIsCompleteAbort."""
    h = _Harness(version)
    pid, epoch = h.completed(commit=False)
    _assert_add_partitions_starts_or_extends(h, S.COMPLETE_ABORT, pid, epoch)


def test_should_respond_with_errors_none_on_add_partition_when_no_errors_and_partitions_the_same() -> None:
    """TransactionCoordinatorTest.shouldRespondWithErrorsNoneOnAddPartitionWhenNoErrorsAndPartitionsTheSame."""
    h = _Harness()
    pid, epoch = h.ongoing()
    before = h.written()
    assert h.add(pid, epoch) is ErrorCode.NONE
    assert h.written() == before  # answered at once, nothing appended


# -- EndTxn ------------------------------------------------------------------------------------


@VERSIONS
def test_should_reply_with_invalid_pid_mapping_on_end_txn_when_txn_id_doesnt_exist(version: int) -> None:
    """TransactionCoordinatorTest.shouldReplyWithInvalidPidMappingOnEndTxnWhenTxnIdDoesntExist."""
    h = _Harness(version)
    resp = h.end(0, 0, commit=True, txn_id="never-initialised")
    assert resp.error is ErrorCode.INVALID_PRODUCER_ID_MAPPING


@VERSIONS
def test_should_reply_with_invalid_pid_mapping_on_end_txn_when_pid_dosent_match_mapped(version: int) -> None:
    """TransactionCoordinatorTest.shouldReplyWithInvalidPidMappingOnEndTxnWhenPidDosentMatchMapped."""
    h = _Harness(version)
    pid, epoch = h.ongoing()
    assert h.end(pid + 1, epoch, commit=True).error is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.md().state is S.ONGOING


@VERSIONS
def test_should_reply_with_producer_fenced_on_end_txn_when_epoch_is_not_same_as_transaction(version: int) -> None:
    """TransactionCoordinatorTest.shouldReplyWithProducerFencedOnEndTxnWhenEpochIsNotSameAsTransaction."""
    h = _Harness(version)
    pid, epoch = h.ongoing(inits=2)
    assert h.end(pid, epoch - 1, commit=True).error is ErrorCode.PRODUCER_FENCED
    assert h.md().state is S.ONGOING


@RETRY
def test_end_txn_when_status_is_complete_commit_and_result_is_commit_in_v1(is_retry: bool) -> None:
    """TransactionCoordinatorTest.testEndTxnWhenStatusIsCompleteCommitAndResultIsCommitInV1."""
    h = _Harness(1)
    pid, epoch = h.completed(commit=True, inits=2)
    before = h.written()
    resp = h.end(pid, epoch - 1 if is_retry else epoch, commit=True)
    assert resp.error is (ErrorCode.PRODUCER_FENCED if is_retry else ErrorCode.NONE)
    assert h.written() == before


@RETRY
def test_end_txn_when_status_is_complete_commit_and_result_is_commit_in_v2(is_retry: bool) -> None:
    """TransactionCoordinatorTest.testEndTxnWhenStatusIsCompleteCommitAndResultIsCommitInV2."""
    h = _Harness(2)
    pid, epoch = h.completed(commit=True)
    before = h.written()
    resp = h.end(pid, epoch - 1 if is_retry else epoch, commit=True)
    if is_retry:
        assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NONE, pid, epoch)
    else:
        assert resp.error is ErrorCode.INVALID_TXN_STATE  # the same epoch is the next EndTxn, not a retry
    assert h.written() == before


@RETRY
def test_end_txn_when_status_is_complete_abort_and_result_is_abort_in_v1(is_retry: bool) -> None:
    """TransactionCoordinatorTest.testEndTxnWhenStatusIsCompleteAbortAndResultIsAbortInV1."""
    h = _Harness(1)
    pid, epoch = h.completed(commit=False, inits=2)
    resp = h.end(pid, epoch - 1 if is_retry else epoch, commit=False)
    assert resp.error is (ErrorCode.PRODUCER_FENCED if is_retry else ErrorCode.NONE)


def _assert_empty_abort_written(h: _Harness, before: list[TxnLogValue], pid: int, epoch: int) -> None:
    """A TV2 abort with nothing added: PREPARE_ABORT at epoch + 1, started at the abort (KIP-890, 6b).

    With no partition to mark, COMPLETE_ABORT follows at once.
    """
    h.settle()
    new = h.written()[len(before) :]
    assert [v.state for v in new] == [S.PREPARE_ABORT, S.COMPLETE_ABORT]
    value = new[0]
    assert (value.producer_id, value.producer_epoch, value.partitions) == (pid, epoch + 1, ())
    assert value.txn_start_ms == value.txn_last_update_ms > before[-1].txn_last_update_ms
    row = h.c.admin().describe_transaction(TXN)
    assert (row.state, row.producer_epoch, row.start_time_ms) == ("CompleteAbort", epoch + 1, value.txn_start_ms)


@RETRY
def test_should_return_ok_on_end_txn_when_status_is_complete_abort_and_result_is_abort_in_v2(is_retry: bool) -> None:
    """TransactionCoordinatorTest.shouldReturnOkOnEndTxnWhenStatusIsCompleteAbortAndResultIsAbortInV2."""
    h = _Harness(2)
    pid, epoch = h.completed(commit=False)
    before = h.written()
    resp = h.end(pid, epoch - 1 if is_retry else epoch, commit=False)
    if is_retry:
        assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NONE, pid, epoch)
        assert h.written() == before
    else:
        assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
        _assert_empty_abort_written(h, before, pid, epoch)


@VERSIONS
def test_should_return_invalid_txn_request_on_end_txn_request_when_status_is_complete_abort_and_result_is_not_abort(
    version: int,
) -> None:
    """TransactionCoordinatorTest.shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteAbortAndResultIsNotAbort.

    Under TV2 a commit at the retry epoch is fenced since KAFKA-20785 (apache/kafka#23204), as
    only a coordinator-side abort leaves that combination; at the current epoch it stays
    INVALID_TXN_STATE. TV1 is unchanged.
    """
    h = _Harness(version)
    pid, epoch = h.completed(commit=False, inits=2)
    retry = h.end(pid, _retry_epoch(version, epoch), commit=True).error
    assert retry is (ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_TXN_STATE)
    if version >= 2:
        assert h.end(pid, epoch, commit=True).error is ErrorCode.INVALID_TXN_STATE
    assert h.md().state is S.COMPLETE_ABORT


def test_should_return_invalid_txn_request_on_end_txn_request_when_status_is_complete_commit_and_result_is_not_commit() -> None:  # noqa: E501  # fmt: skip
    """TransactionCoordinatorTest.shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsCompleteCommitAndResultIsNotCommit."""
    h = _Harness(1)
    pid, epoch = h.completed(commit=True)
    assert h.end(pid, epoch, commit=False).error is ErrorCode.INVALID_TXN_STATE


@RETRY
def test_end_txn_request_when_status_is_complete_commit_and_result_is_abort_in_v1(is_retry: bool) -> None:
    """TransactionCoordinatorTest.testEndTxnRequestWhenStatusIsCompleteCommitAndResultIsAbortInV1."""
    h = _Harness(1)
    pid, epoch = h.completed(commit=True, inits=2)
    resp = h.end(pid, epoch - 1 if is_retry else epoch, commit=False)
    assert resp.error is (ErrorCode.PRODUCER_FENCED if is_retry else ErrorCode.INVALID_TXN_STATE)


@RETRY
def test_end_txn_request_when_status_is_complete_commit_and_result_is_abort_in_v2(is_retry: bool) -> None:
    """TransactionCoordinatorTest.testEndTxnRequestWhenStatusIsCompleteCommitAndResultIsAbortInV2."""
    h = _Harness(2)
    pid, epoch = h.completed(commit=True)
    before = h.written()
    resp = h.end(pid, epoch - 1 if is_retry else epoch, commit=False)
    if is_retry:
        # A retry of the commit that asks for the opposite result.
        assert resp.error is ErrorCode.INVALID_TXN_STATE
        assert h.written() == before
    else:
        assert (resp.error, resp.producer_epoch) == (ErrorCode.NONE, epoch + 1)
        _assert_empty_abort_written(h, before, pid, epoch)


@VERSIONS
def test_should_return_concurrent_transactions_on_end_txn_request_when_status_is_prepare_commit(version: int) -> None:
    """TransactionCoordinatorTest.shouldReturnConcurrentTransactionsOnEndTxnRequestWhenStatusIsPrepareCommit."""
    h = _Harness(version)
    pid, epoch, rule = h.preparing(commit=True)
    request_epoch = _retry_epoch(version, epoch)
    assert h.end(pid, request_epoch, commit=True).error is ErrorCode.CONCURRENT_TRANSACTIONS
    # The other row of endTransaction's PrepareCommit case: under version 1 the opposite result is
    # an invalid state. Under version 2 the markers are in flight, which Kafka holds as a pending
    # CompleteCommit, and since KAFKA-18464 a pending transition is answered before anything else.
    # (Kafka's unit test builds PrepareCommit with nothing pending, a state a running coordinator
    # never shows a client: it sets the pending Complete* before it answers the EndTxn.)
    opposite = ErrorCode.INVALID_TXN_STATE if version == 1 else ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.end(pid, request_epoch, commit=False).error is opposite
    h.release_markers(rule)
    assert h.md().state is S.COMPLETE_COMMIT


@VERSIONS
def test_should_return_invalid_txn_request_on_end_txn_request_when_status_is_prepare_abort(version: int) -> None:
    """TransactionCoordinatorTest.shouldReturnInvalidTxnRequestOnEndTxnRequestWhenStatusIsPrepareAbort."""
    h = _Harness(version)
    pid, epoch, rule = h.preparing(commit=False)
    request_epoch = _retry_epoch(version, epoch)
    # Version 2: the markers in flight are a pending CompleteAbort, answered first (KAFKA-18464).
    opposite = ErrorCode.INVALID_TXN_STATE if version == 1 else ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.end(pid, request_epoch, commit=True).error is opposite
    assert h.end(pid, request_epoch, commit=False).error is ErrorCode.CONCURRENT_TRANSACTIONS
    h.release_markers(rule)
    assert h.md().state is S.COMPLETE_ABORT


def test_end_txn_request_when_empty_transaction_state_for_abort_in_v1() -> None:
    """TransactionCoordinatorTest.TestEndTxnRequestWhenEmptyTransactionStateForAbortInV1."""
    h = _Harness(1)
    pid, epoch = h.ready()
    assert h.end(pid, epoch, commit=False).error is ErrorCode.INVALID_TXN_STATE
    assert h.md().state is S.EMPTY


@RETRY
def test_end_txn_request_when_empty_transaction_state_for_abort_in_v2(is_retry: bool) -> None:
    """TransactionCoordinatorTest.TestEndTxnRequestWhenEmptyTransactionStateForAbortInV2."""
    h = _Harness(2)
    pid, epoch = h.ready(inits=2)
    before = h.written()
    resp = h.end(pid, epoch - 1 if is_retry else epoch, commit=False)
    if is_retry:
        assert resp.error is ErrorCode.PRODUCER_FENCED
        assert h.written() == before
    else:
        assert (resp.error, resp.producer_epoch) == (ErrorCode.NONE, epoch + 1)
        _assert_empty_abort_written(h, before, pid, epoch)


@RETRY
def test_end_txn_request_when_empty_transaction_state_for_commit_in_v2(is_retry: bool) -> None:
    """TransactionCoordinatorTest.TestEndTxnRequestWhenEmptyTransactionStateForCommitInV2."""
    h = _Harness(2)
    pid, epoch = h.ready(inits=2)
    resp = h.end(pid, epoch - 1 if is_retry else epoch, commit=True)
    assert resp.error is (ErrorCode.PRODUCER_FENCED if is_retry else ErrorCode.INVALID_TXN_STATE)


def test_should_return_invalid_txn_request_on_end_txn_v2_if_not_end_txn_v2_retry() -> None:
    """TransactionCoordinatorTest.shouldReturnInvalidTxnRequestOnEndTxnV2IfNotEndTxnV2Retry."""
    h = _Harness(2)
    pid, epoch, rule = h.preparing(commit=True)
    # The bumped epoch itself is not a retry but the next EndTxn. Kafka's unit test, with nothing
    # pending, expects PRODUCER_FENCED; with the commit's markers in flight (a pending
    # CompleteCommit) Kafka answers CONCURRENT_TRANSACTIONS since KAFKA-18464, so that the next
    # transaction's EndTxn waits instead of fencing its own producer.
    assert h.end(pid, epoch, commit=True).error is ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.end(pid, epoch, commit=False).error is ErrorCode.CONCURRENT_TRANSACTIONS
    h.release_markers(rule)
    assert h.md().state is S.COMPLETE_COMMIT
    assert h.end(pid, epoch, commit=True).error is ErrorCode.INVALID_TXN_STATE


def test_should_return_ok_on_end_txn_v2_if_end_txn_v2_retry_epoch_overflow() -> None:
    """TransactionCoordinatorTest.shouldReturnOkOnEndTxnV2IfEndTxnV2RetryEpochOverflow."""
    h = _Harness(2)
    pid, _ = h.ongoing(epoch=EXHAUSTED)
    rule = h.hold_markers()
    first = h.end(pid, EXHAUSTED, commit=True)
    # The bump would reach Short.MAX_VALUE: the client is given the next producer id at epoch 0.
    assert first.error is ErrorCode.NONE
    new_pid = first.producer_id
    assert new_pid != pid
    assert first.producer_epoch == 0
    assert h.c.world.trace.marks["coordinator: epoch exhausted at EndTxn, new id"] == 1
    md = h.md()
    assert (md.state, md.producer_id, md.producer_epoch, md.next_producer_id) == (
        S.PREPARE_COMMIT,
        pid,
        MAX_PRODUCER_EPOCH,
        new_pid,
    )
    assert h.end(pid, EXHAUSTED, commit=True).error is ErrorCode.CONCURRENT_TRANSACTIONS  # still completing
    h.release_markers(rule)
    assert h.markers() == [("COMMIT", pid, MAX_PRODUCER_EPOCH)]
    md = h.md()
    assert (md.state, md.producer_id, md.prev_producer_id, md.producer_epoch) == (S.COMPLETE_COMMIT, new_pid, pid, 0)
    retry = h.end(pid, EXHAUSTED, commit=True)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, new_pid, 0)


def _assert_end_txn_appends_prepare(version: int, *, commit: bool) -> None:
    """EndTxn on an ONGOING transaction writes PREPARE_*, answers, then marks every partition."""
    h = _Harness(version)
    pid, epoch = h.ongoing(inits=2)
    resp = h.end(pid, epoch, commit=commit)
    ended = epoch + 1 if version >= 2 else epoch  # KIP-890: every end bumps the epoch
    assert (resp.error, resp.producer_epoch) == (ErrorCode.NONE, ended)
    prepare = h.written()[-1]
    assert prepare.state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert (prepare.producer_epoch, prepare.partitions) == (ended, (TP,))
    assert prepare.last_producer_epoch == (epoch if version >= 2 else -1)
    h.settle()
    assert h.md().state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert h.markers() == [("COMMIT" if commit else "ABORT", pid, ended)]


@VERSIONS
def test_should_append_prepare_commit_to_log_on_end_txn_when_status_is_ongoing_and_result_is_commit(
    version: int,
) -> None:
    """TransactionCoordinatorTest.shouldAppendPrepareCommitToLogOnEndTxnWhenStatusIsOngoingAndResultIsCommit."""
    _assert_end_txn_appends_prepare(version, commit=True)


@VERSIONS
def test_should_append_prepare_abort_to_log_on_end_txn_when_status_is_ongoing_and_result_is_abort(version: int) -> None:
    """TransactionCoordinatorTest.shouldAppendPrepareAbortToLogOnEndTxnWhenStatusIsOngoingAndResultIsAbort."""
    _assert_end_txn_appends_prepare(version, commit=False)


@VERSIONS
def test_should_respond_with_invalid_request_on_end_txn_when_transactional_id_is_empty(version: int) -> None:
    """TransactionCoordinatorTest.shouldRespondWithInvalidRequestOnEndTxnWhenTransactionalIdIsEmpty."""
    h = _Harness(version)
    assert h.ask(1, EndTxnRequest("", 0, 0, True)).error is ErrorCode.INVALID_REQUEST


@VERSIONS
def test_should_respond_with_not_coordinator_on_end_txn_when_is_not_coordinator_for_id(version: int) -> None:
    """TransactionCoordinatorTest.shouldRespondWithNotCoordinatorOnEndTxnWhenIsNotCoordinatorForId."""
    h = _Harness(version)
    pid, epoch = h.ongoing()
    assert h.ask(h.other_broker(), EndTxnRequest(TXN, pid, epoch, True)).error is ErrorCode.NOT_COORDINATOR


@VERSIONS
def test_should_respond_with_coordinator_load_in_progress_on_end_txn_when_coordinator_is_loading(version: int) -> None:
    """TransactionCoordinatorTest.shouldRespondWithCoordinatorLoadInProgressOnEndTxnWhenCoordinatorIsLoading."""
    h = _Harness(version)
    loading = h.loading_coordinator()
    assert h.ask(loading, EndTxnRequest(TXN, 0, 0, True)).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


@VERSIONS
def test_should_return_invalid_epoch_on_end_txn_when_epoch_is_larger(version: int) -> None:
    """TransactionCoordinatorTest.shouldReturnInvalidEpochOnEndTxnWhenEpochIsLarger."""
    h = _Harness(version)
    pid, epoch = h.completed(commit=True)
    assert h.end(pid, epoch + 1, commit=True).error is ErrorCode.PRODUCER_FENCED


@VERSIONS
def test_should_return_invalid_epoch_on_end_txn_when_epoch_is_smaller(version: int) -> None:
    """TransactionCoordinatorTest.shouldReturnInvalidEpochOnEndTxnWhenEpochIsSmaller."""
    h = _Harness(version)
    pid, epoch = h.completed(commit=True, inits=3)
    # One below what a retry would carry (TV2's retry is already one below the current epoch).
    assert h.end(pid, _retry_epoch(version, epoch) - 1, commit=True).error is ErrorCode.PRODUCER_FENCED


# -- InitProducerId on an existing id ------------------------------------------------------------


def _assert_init_increments_epoch_and_updates_metadata(h: _Harness, pid: int, epoch: int) -> None:
    """Kafka's validateIncrementEpochAndUpdateMetadata: epoch + 1, the new timeout, updated now."""
    sent = h.c.now_ms
    resp = h.init(timeout_ms=10_000)
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    md = h.md()
    assert (md.state, md.producer_id, md.producer_epoch, md.txn_timeout_ms) == (S.EMPTY, pid, epoch + 1, 10_000)
    assert (md.partitions, md.txn_start_ms) == ((), -1)
    assert md.current() == h.written()[-1]
    assert sent < md.txn_last_update_ms < h.c.now_ms  # updated when the request was handled


def test_should_increment_epoch_and_update_metadata_on_handle_init_pid_when_existing_empty_transaction() -> None:
    """TransactionCoordinatorTest.shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingEmptyTransaction."""
    h = _Harness(1)
    pid, epoch = h.ready()
    _assert_init_increments_epoch_and_updates_metadata(h, pid, epoch)


@VERSIONS
def test_should_increment_epoch_and_update_metadata_on_handle_init_pid_when_existing_complete_transaction(
    version: int,
) -> None:
    """TransactionCoordinatorTest.shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteTransaction."""
    h = _Harness(version)
    pid, epoch = h.completed(commit=False)
    _assert_init_increments_epoch_and_updates_metadata(h, pid, epoch)


@VERSIONS
def test_should_increment_epoch_and_update_metadata_on_handle_init_pid_when_existing_complete_commit_transaction(
    version: int,
) -> None:
    """TransactionCoordinatorTest.shouldIncrementEpochAndUpdateMetadataOnHandleInitPidWhenExistingCompleteCommitTransaction."""
    h = _Harness(version)
    pid, epoch = h.completed(commit=True)
    _assert_init_increments_epoch_and_updates_metadata(h, pid, epoch)


def _assert_init_waits_while_preparing(*, commit: bool) -> None:
    """Kafka's validateRespondsWithConcurrentTransactionsOnInitPidWhenInPrepareState."""
    h = _Harness()
    _pid, epoch, rule = h.preparing(commit=commit)
    before = h.written()
    resp = h.init()
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)
    assert h.written() == before
    h.release_markers(rule)
    assert h.init().producer_epoch == epoch + 1  # once complete, the retry gets the next epoch


def test_should_wait_for_commit_to_complete_on_handle_init_pid_and_existing_transaction_in_prepare_commit_state() -> (
    None
):
    """TransactionCoordinatorTest.shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareCommitState."""
    _assert_init_waits_while_preparing(commit=True)


def test_should_wait_for_commit_to_complete_on_handle_init_pid_and_existing_transaction_in_prepare_abort_state() -> (
    None
):
    """TransactionCoordinatorTest.shouldWaitForCommitToCompleteOnHandleInitPidAndExistingTransactionInPrepareAbortState."""
    _assert_init_waits_while_preparing(commit=False)


@VERSIONS
def test_should_abort_transaction_on_handle_init_pid_when_existing_transaction_in_ongoing_state(version: int) -> None:
    """TransactionCoordinatorTest.shouldAbortTransactionOnHandleInitPidWhenExistingTransactionInOngoingState."""
    h = _Harness(version)
    pid, epoch = h.ongoing(inits=2)
    resp = h.init()
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)
    # The fence bumps the epoch once (never handed out to the new instance); under TV2 that bump is
    # the abort's own (KAFKA-19367: before Kafka 4.1 the abort bumped once more, epoch + 2).
    aborting = epoch + 1
    prepare = h.written()[-1]
    assert (prepare.state, prepare.producer_id, prepare.producer_epoch) == (S.PREPARE_ABORT, pid, aborting)
    assert prepare.last_producer_epoch == (epoch if version >= 2 else -1)
    assert prepare.partitions == (TP,)
    h.settle()
    assert h.markers() == [("ABORT", pid, aborting)]
    retry = h.init()
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, pid, aborting + 1)


def _init_twice_with_the_first_fence_unwritten(h: _Harness) -> tuple[InitProducerIdResponse, InitProducerIdResponse]:
    """InitProducerId while the coordinator's followers are down (its fence cannot be written), then again.

    Between the two, the metadata must be as before the first (ONGOING, the same epoch, nothing
    pending): a fence that was not written bumped nothing.
    """
    coordinator = h.coordinator()
    before = h.md()
    state, epoch = before.state, before.producer_epoch
    followers = [b for b in sorted(h.c.brokers) if b != coordinator]
    for b in followers:
        h.c.crash(b)
    failed = h.ask(coordinator, InitProducerIdRequest(TXN, TIMEOUT_MS), timeout_ms=20_000)
    md = h.tc().describe()[TXN]
    assert (md.state, md.producer_epoch, md.pending_state) == (state, epoch, None)
    for b in followers:
        h.c.restart(b)
    h.c.run_for(5_000)
    return failed, h.ask(coordinator, InitProducerIdRequest(TXN, TIMEOUT_MS), timeout_ms=20_000)


def test_should_not_repeatedly_bump_epoch_due_to_init_pid_during_ongoing_txn_if_append_to_log_fails() -> None:
    """TransactionCoordinatorTest.shouldNotRepeatedlyBumpEpochDueToInitPidDuringOngoingTxnIfAppendToLogFails."""
    h = _Harness(1)
    pid, epoch = h.ongoing()
    failed, retried = _init_twice_with_the_first_fence_unwritten(h)
    assert failed.error is ErrorCode.COORDINATOR_NOT_AVAILABLE  # the PREPARE_ABORT write never replicated
    assert retried.error is ErrorCode.CONCURRENT_TRANSACTIONS
    h.settle()
    md = h.md()
    assert (md.state, md.producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)  # bumped once for both attempts
    assert h.markers() == [("ABORT", pid, epoch + 1)]


def _fence_at_the_last_epoch(h: _Harness) -> tuple[int, int, TxnLogValue]:
    """Open a transaction at ``Short.MAX_VALUE - 1`` and fence it with a new instance's InitProducerId.

    Return (producer id, the fenced epoch, the PREPARE_ABORT written): its epoch is ``Short.MAX_VALUE``
    under either transaction version.
    """
    pid, epoch = h.ongoing(epoch=EXHAUSTED)
    assert h.init().error is ErrorCode.CONCURRENT_TRANSACTIONS
    prepare = h.written()[-1]
    assert (prepare.state, prepare.producer_id, prepare.producer_epoch) == (S.PREPARE_ABORT, pid, MAX_PRODUCER_EPOCH)
    return pid, epoch, prepare


def test_should_use_last_epoch_to_fence_when_epochs_are_exhausted() -> None:
    """TransactionCoordinatorTest.shouldUseLastEpochToFenceWhenEpochsAreExhausted."""
    h = _Harness(1)
    pid, _, prepare = _fence_at_the_last_epoch(h)
    assert prepare.last_producer_epoch == -1
    h.settle()
    assert h.md().producer_epoch == MAX_PRODUCER_EPOCH
    retry = h.init()  # no epoch is left for this producer id: a new one
    assert (retry.error, retry.producer_epoch) == (ErrorCode.NONE, 0)
    assert retry.producer_id != pid


def test_init_producer_id_with_no_last_producer_data() -> None:
    """TransactionCoordinatorTest.testInitProducerIdWithNoLastProducerData."""
    h = _Harness()
    pid, _ = h.ready(inits=2)  # a new instance's InitProducerId leaves no last epoch (-1)
    assert h.md().last_producer_epoch == -1
    resp = h.init(pid=pid, epoch=0)
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert h.md().producer_epoch == 1


def test_fence_producer_when_mapping_exists_with_different_producer_id() -> None:
    """TransactionCoordinatorTest.testFenceProducerWhenMappingExistsWithDifferentProducerId."""
    h = _Harness()
    old_pid, _ = h.ready(epoch=EXHAUSTED)
    new_pid = h.init().producer_id  # the id now maps to a new producer id
    assert new_pid != old_pid
    resp = h.init(pid=old_pid, epoch=1)
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert (h.md().producer_id, h.md().producer_epoch) == (new_pid, 0)


def test_init_producer_id_with_current_epoch_provided() -> None:
    """TransactionCoordinatorTest.testInitProducerIdWithCurrentEpochProvided."""
    h = _Harness()
    pid, epoch = h.ready(inits=2)
    bumped = h.init(pid=pid, epoch=epoch)
    assert (bumped.error, bumped.producer_id, bumped.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    assert h.md().last_producer_epoch == epoch
    # The producer retries after a lost answer: the same result, not another bump.
    retry = h.init(pid=pid, epoch=epoch)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    assert h.md().producer_epoch == epoch + 1


def test_init_producer_id_stale_current_epoch_provided() -> None:
    """TransactionCoordinatorTest.testInitProducerIdStaleCurrentEpochProvided."""
    h = _Harness()
    pid, epoch = h.ready()
    assert h.init().producer_epoch == epoch + 1  # a new instance
    resp = h.init(pid=pid, epoch=epoch)  # the old instance tries to go on
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.PRODUCER_FENCED, -1, -1)
    assert h.md().producer_epoch == epoch + 1


def test_retry_init_producer_id_after_producer_id_rotation() -> None:
    """TransactionCoordinatorTest.testRetryInitProducerIdAfterProducerIdRotation."""
    h = _Harness()
    pid, _ = h.ready(epoch=EXHAUSTED)
    rotated = h.init(pid=pid, epoch=EXHAUSTED)
    assert rotated.error is ErrorCode.NONE
    assert rotated.producer_id != pid
    assert rotated.producer_epoch == 0
    md = h.md()
    assert (md.prev_producer_id, md.last_producer_epoch) == (pid, EXHAUSTED)
    retry = h.init(pid=pid, epoch=EXHAUSTED)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, rotated.producer_id, 0)


def test_init_producer_id_with_invalid_epoch_after_producer_id_rotation() -> None:
    """TransactionCoordinatorTest.testInitProducerIdWithInvalidEpochAfterProducerIdRotation."""
    h = _Harness()
    pid, _ = h.ready(epoch=EXHAUSTED)
    rotated = h.init(pid=pid, epoch=EXHAUSTED)
    assert (rotated.error, rotated.producer_epoch) == (ErrorCode.NONE, 0)
    stale = h.init(pid=pid, epoch=EXHAUSTED - 1)
    assert (stale.error, stale.producer_id, stale.producer_epoch) == (ErrorCode.PRODUCER_FENCED, -1, -1)


def test_should_remove_transactions_for_partition_on_emigration() -> None:
    """TransactionCoordinatorTest.shouldRemoveTransactionsForPartitionOnEmigration."""
    h = _Harness()
    pid, epoch = h.ready()
    old, p = h.coordinator(), h.tc().partition_of(TXN)
    h.c.isolate(old)  # the controller moves the partition's leadership away
    h.c.run_until(lambda: h.c.leader(TRANSACTION_STATE_TOPIC, p) not in (old, -1))
    h.c.heal()
    h.c.run_for(3_000)
    assert h.c.brokers[old].extensions[0].describe() == {}
    assert h.ask(old, InitProducerIdRequest(TXN, TIMEOUT_MS)).error is ErrorCode.NOT_COORDINATOR
    assert h.coordinator() != old
    assert (h.md().producer_id, h.md().producer_epoch) == (pid, epoch)


# -- transaction timeouts --------------------------------------------------------------------------


@VERSIONS
def test_should_abort_expired_transactions_in_ongoing_state_and_bump_epoch(version: int) -> None:
    """TransactionCoordinatorTest.shouldAbortExpiredTransactionsInOngoingStateAndBumpEpoch."""
    h = _Harness(version, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    assert h.init(timeout_ms=1_000).error is ErrorCode.NONE
    pid, epoch = h.ongoing(inits=0)
    h.c.run_for(3_000)
    assert h.c.world.trace.marks[TIMED_OUT] == 1
    aborting = epoch + 1  # once, also under TV2 (KAFKA-19367)
    prepare = next(v for v in h.written() if v.state is S.PREPARE_ABORT)
    assert (prepare.producer_id, prepare.producer_epoch, prepare.partitions) == (pid, aborting, (TP,))
    assert (h.md().state, h.md().producer_epoch) == (S.COMPLETE_ABORT, aborting)
    assert h.markers() == [("ABORT", pid, aborting)]
    assert h.end(pid, epoch, commit=True).error is ErrorCode.PRODUCER_FENCED


def test_should_not_cause_epoch_overflow_when_init_pid_during_ongoing_txn_v2() -> None:
    """TransactionCoordinatorTest.shouldNotCauseEpochOverflowWhenInitPidDuringOngoingTxnV2 (KAFKA-19367).

    At the last epoch a client may hold, the fence bumps once to ``Short.MAX_VALUE``; before the
    fix the TV2 abort bumped a second time past it. The id moves to a new producer id once the
    abort completes (KAFKA-20090).
    """
    h = _Harness(2)
    pid, _, prepare = _fence_at_the_last_epoch(h)
    assert prepare.last_producer_epoch == EXHAUSTED  # the fenced epoch: bumped once, not twice
    assert prepare.next_producer_id not in (-1, pid)
    assert all(v.producer_epoch <= MAX_PRODUCER_EPOCH for v in h.written())


def test_tv2_allows_epoch_re_bumping_after_failed_write() -> None:
    """TransactionCoordinatorTest.testTV2AllowsEpochReBumpingAfterFailedWrite (KAFKA-19367, #19976).

    The first InitProducerId's fence cannot be written (COORDINATOR_NOT_AVAILABLE): nothing was
    bumped, so the second bumps once from the same epoch and aborts (CONCURRENT_TRANSACTIONS),
    and the third gets the epoch after that.
    """
    h = _Harness(2)
    pid, epoch = h.ongoing(inits=2)
    failed, retried = _init_twice_with_the_first_fence_unwritten(h)
    assert failed.error is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert retried.error is ErrorCode.CONCURRENT_TRANSACTIONS
    h.settle()
    assert (h.md().state, h.md().producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    retry = h.init()
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, pid, epoch + 2)


def _time_out(h: _Harness, *, epoch: int | None = None) -> tuple[int, int]:
    """Open a transaction with a 1 s timeout and let the coordinator abort it; return (pid, the client's epoch)."""
    assert h.init(timeout_ms=1_000).error is ErrorCode.NONE
    pid, e = h.ongoing(inits=0, epoch=epoch)
    h.c.run_for(3_000)
    assert h.c.world.trace.marks[TIMED_OUT] == 1
    assert h.md().state is S.COMPLETE_ABORT
    return pid, e


def test_should_treat_a_late_client_abort_after_a_timeout_abort_as_a_retry_tv2() -> None:
    """KAFKA-19367's client-visible effect (testRecoveryFromEpochOverflow's flow, below the boundary).

    A TV2 producer whose transaction the coordinator aborted on timeout still holds the epoch it
    began with; its abort_transaction() EndTxn(ABORT) carries that epoch, one below the abort's,
    so it is a retry of the abort: NONE with the current producer id and epoch, and the producer
    can carry on. With the double bump (before Kafka 4.1) it was PRODUCER_FENCED.
    """
    h = _Harness(2, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    pid, epoch = _time_out(h)
    resp = h.end(pid, epoch, commit=False)
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)
    assert h.add(pid, epoch + 1) is ErrorCode.NONE  # the next transaction starts at the epoch it was given


def test_should_fence_a_commit_that_raced_a_timeout_abort_tv2() -> None:
    """KAFKA-20785 (apache/kafka#23204): a commit at the retry epoch meeting COMPLETE_ABORT is fenced.

    Only the coordinator can have aborted the transaction the producer is committing, so the
    producer is told it was fenced (PRODUCER_FENCED), not that it broke the protocol
    (INVALID_TXN_STATE, which this answer was before the fix).
    """
    h = _Harness(2, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    pid, epoch = _time_out(h)
    resp = h.end(pid, epoch, commit=True)
    assert resp.error is ErrorCode.PRODUCER_FENCED
    assert "aborted by the coordinator" in (resp.error_message or "")
    assert h.end(pid, epoch + 1, commit=True).error is ErrorCode.INVALID_TXN_STATE  # the current epoch: as before


def test_should_handle_timeout_at_epoch_overflow_boundary_correctly_and_late_client_abort_request_tv2() -> None:
    """TransactionCoordinatorTest.shouldHandleTimeoutAtEpochOverflowBoundaryCorrectlyAndLateClientAbortRequestTV2.

    KAFKA-20090: a timeout abort at ``Short.MAX_VALUE - 1`` bumps to ``Short.MAX_VALUE`` and moves
    the id to a new producer id at epoch 0 when the abort completes; the producer's late
    EndTxn(ABORT) at the old id and epoch is a retry, answered with the new id and epoch 0 (before
    the fix it was given epoch 32767, and its next commit wrote 32768).
    """
    h = _Harness(2, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    pid, epoch = _time_out(h, epoch=EXHAUSTED)
    prepare = next(v for v in h.written() if v.state is S.PREPARE_ABORT)
    assert (prepare.producer_id, prepare.producer_epoch) == (pid, MAX_PRODUCER_EPOCH)
    assert prepare.last_producer_epoch == epoch
    new_pid = prepare.next_producer_id
    assert new_pid not in (-1, pid)
    md = h.md()
    assert (md.producer_id, md.producer_epoch, md.prev_producer_id) == (new_pid, 0, pid)
    resp = h.end(pid, epoch, commit=False)
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NONE, new_pid, 0)
    assert h.add(new_pid, 0) is ErrorCode.NONE
    assert h.end(new_pid, 0, commit=True).error is ErrorCode.NONE
    h.settle()
    assert all(v.producer_epoch <= MAX_PRODUCER_EPOCH for v in h.written())


def test_should_handle_timeout_at_epoch_overflow_boundary_correctly_and_retry_init_producer_id_tv2() -> None:
    """TransactionCoordinatorTest.shouldHandleTimeoutAtEpochOverflowBoundaryCorrectlyAndRetryInitProducerIdTV2.

    After the rotation, the producer's InitProducerId with its old id and epoch (KIP-360) is a
    retry: the new id at epoch 0, without a bump.
    """
    h = _Harness(2, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    pid, epoch = _time_out(h, epoch=EXHAUSTED)
    new_pid = h.md().producer_id
    resp = h.init(pid=pid, epoch=epoch)
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NONE, new_pid, 0)


def test_should_rotate_producer_id_when_init_pid_fences_ongoing_txn_at_epoch_overflow_boundary_tv2() -> None:
    """TransactionCoordinatorTest.shouldRotateProducerIdWhenInitPidFencesOngoingTxnAtEpochOverflowBoundaryTV2."""
    h = _Harness(2)
    pid, epoch, prepare = _fence_at_the_last_epoch(h)
    new_pid = prepare.next_producer_id
    assert new_pid not in (-1, pid)
    h.settle()
    assert (h.md().state, h.md().producer_id, h.md().producer_epoch) == (S.COMPLETE_ABORT, new_pid, 0)
    resp = h.end(pid, epoch, commit=False)
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.NONE, new_pid, 0)


def test_should_not_abort_expired_transactions_that_have_a_pending_state_transition() -> None:
    """TransactionCoordinatorTest.shouldNotAbortExpiredTransactionsThatHaveAPendingStateTransition."""
    h = _Harness(1, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    assert h.init(timeout_ms=1_000).error is ErrorCode.NONE
    h.ongoing(inits=0)
    md = h.md()
    md.prepare_abort_or_commit(S.PREPARE_COMMIT, 1, h.c.now_ms)  # staged, as Kafka's test does, never written
    h.c.run_for(3_000)
    assert h.c.world.trace.marks.get(TIMED_OUT, 0) == 0
    assert (md.state, md.pending_state) == (S.ONGOING, S.PREPARE_COMMIT)
    md.abort_pending()
    h.c.run_for(1_000)
    assert h.c.world.trace.marks[TIMED_OUT] == 1


def test_should_not_bump_epoch_with_pending_transaction() -> None:
    """TransactionCoordinatorTest.shouldNotBumpEpochWithPendingTransaction."""
    h = _Harness(1)
    pid, epoch = h.ongoing()
    md = h.md()
    md.prepare_abort_or_commit(S.PREPARE_COMMIT, 1, h.c.now_ms)  # a transition in flight
    resp = h.init(pid=pid, epoch=10)
    assert (resp.error, resp.producer_id, resp.producer_epoch) == (ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1)
    assert (md.producer_epoch, md.state) == (epoch, S.ONGOING)
    md.abort_pending()
    # The same with a real transition in flight: an AddPartitionsToTxn whose write is replicating.
    coordinator = h.coordinator()
    first = h.client.call(f"broker-{coordinator}", AddPartitionsToTxnRequest(TXN, pid, epoch, (("t", 1),)))
    second = h.client.call(f"broker-{coordinator}", InitProducerIdRequest(TXN, TIMEOUT_MS, pid, epoch))
    h.c.run_until(lambda: bool(first) and bool(second))
    assert first[0].error is ErrorCode.NONE
    assert second[0].error is ErrorCode.CONCURRENT_TRANSACTIONS
    assert (md.state, md.producer_epoch, md.partitions) == (S.ONGOING, epoch, (TP, ("t", 1)))


# -- describe ----------------------------------------------------------------------------------------


def test_describe_transactions() -> None:
    """TransactionCoordinatorTest.testDescribeTransactions."""
    h = _Harness()
    pid, epoch = h.ongoing()
    row = h.c.admin().describe_transaction(TXN)
    md = h.md()
    assert (row.coordinator_id, row.transactional_id, row.state) == (h.coordinator(), TXN, "Ongoing")
    assert (row.producer_id, row.producer_epoch, row.transaction_timeout_ms) == (pid, epoch, TIMEOUT_MS)
    assert row.start_time_ms == md.txn_start_ms == h.written()[-1].txn_last_update_ms
    assert row.topic_partitions == (TP,)


def test_describe_transactions_with_empty_transactional_id() -> None:
    """TransactionCoordinatorTest.testDescribeTransactionsWithEmptyTransactionalId; another broker: NOT_COORDINATOR."""
    h = _Harness()
    h.ongoing()
    coordinator = h.coordinator()
    [empty, known] = h.ask(coordinator, DescribeTransactionsRequest(("", TXN))).transactions
    assert (empty.transactional_id, empty.error, known.error) == ("", ErrorCode.INVALID_REQUEST, ErrorCode.NONE)
    other = next(b for b in h.c.brokers if b != coordinator)
    [elsewhere] = h.ask(other, DescribeTransactionsRequest((TXN,))).transactions
    assert elsewhere.error is ErrorCode.NOT_COORDINATOR


def test_describe_transactions_while_coordinator_loading() -> None:
    """TransactionCoordinatorTest.testDescribeTransactionsWhileCoordinatorLoading."""
    h = _Harness()
    loading = h.loading_coordinator()
    # The coordinator answers COORDINATOR_LOAD_IN_PROGRESS; the admin asks again until its timeout.
    with pytest.raises(CoordinatorLoadInProgressException):
        h.c.admin().describe_transaction(TXN, timeout_ms=5)
    row = h.c.admin().describe_transaction(TXN)  # asked again after retry.backoff.ms: loaded by then
    assert (row.coordinator_id, row.transactional_id) == (loading, TXN)
