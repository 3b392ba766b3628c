"""Kafka's ``TransactionManagerTest``, paraphrased against the simulated cluster.

Goal: the transactional producer (``engine/client/transaction_manager.py`` and its state
machine ``engine/client/transactions.py``) behaves as Kafka's client ``TransactionManager``
(clients/src/test/java/org/apache/kafka/clients/producer/internals/TransactionManagerTest.java,
Oct 2024 trunk). Method: each test is named after the Kafka test it paraphrases and drives real
producers on a small fixed-seed cluster end to end; where Kafka's test scripts a broker answer
with a mock client, this one provokes the same answer from the real brokers and coordinators
(a second instance that fences the first, a network rule that drops, delays or holds one kind
of message, a record over ``max.request.size``, a partition that does not exist). The requests
the producer sent and the answers it got are read back from the trace.

The client's transition table is compared pair by pair with Kafka's ``State.isTransitionValid``.

Kafka tests not paraphrased here, and why:

- testTransactionalIdAuthorizationFailureInFindCoordinator, ...InInitProducerId,
  ...InAddOffsetsToTxn, ...InTxnOffsetCommit, ...InAddPartitions,
  testGroupAuthorizationFailureInFindCoordinator, ...InTxnOffsetCommit,
  testTopicAuthorizationFailureInAddPartitions,
  testCommitWithTopicAuthorizationFailureInAddPartitionsInFlight,
  testRecoveryFromAbortableErrorTransactionStarted, testRecoveryFromAbortableErrorProduceRequestInRetry,
  testHandlingOfTransactionalIdAuthorizationFailedErrorOnTxnOffsetCommit: no ACLs in the engine.
- testUnsupportedFindCoordinator, testUnsupportedInitTransactions,
  testUnsupportedForMessageFormatInTxnOffsetCommit, testHandlingOfUnsupportedForMessageFormatErrorOnTxnOffsetCommit,
  testSendOffsetWithGroupMetadataFailAsAutoDowngradeTxnCommitNotEnabled,
  testTransitionToFatalErrorWhenRetriedBatchIsExpired: no API version negotiation.
- testTransactionAbortableExceptionInInitProducerId, ...InAddPartitions, ...InFindCoordinator,
  ...InEndTxn, ...InAddOffsetsToTxn, ...InTxnOffsetCommit, testInvalidTxnStateFailureInAddOffsetsToTxn,
  testInvalidTxnStateInAddPartitions, testHandlingOf{UnknownTopicPartition,CoordinatorLoading,
  InvalidProducerEpoch,ProducerFenced}ErrorOnTxnOffsetCommit, testHandlingOfUnknownTopicPartitionErrorOnAddPartitions,
  testAbortResendsAddPartitionErrorIfRetried, testRetriableErrors,
  testBumpTransactionalEpochOnRecoverableAddPartitionRequestError,
  testBumpTransactionalEpochOnRecoverableAddOffsetsRequestError,
  testBumpTransactionalEpochOnUnknownProducerIdError: the engine's coordinators and brokers never
  answer these codes in those places; provoking them would need a mocked response.
- testFencedInstanceIdInTxnOffsetCommitByGroupMetadata, testUnknownMemberIdInTxnOffsetCommitByGroupMetadata,
  testIllegalGenerationInTxnOffsetCommitByGroupMetadata: KIP-447 fencing is covered end to end by
  tests/scenarios/test_consumer_groups.py.
- testDefaultSequenceNumber, testBumpEpochAndResetSequenceNumbersAfterUnknownProducerId,
  testBatchFailureAfterProducerReset, testBatchCompletedAfterProducerReset,
  testDuplicateSequenceAfterProducerReset, testSequenceNumberOverflow, testProducerIdReset,
  testNoProducerIdResetAfterLastInFlightBatchSucceeds, testHealthyPartitionRetriesDuringEpochBump,
  testFailedInflightBatchAfterEpochBump, testAbortTransactionAndReuseSequenceNumberOnError,
  testAbortTransactionAndResetSequenceNumberOnUnknownProducerId,
  testNoFailedBatchHandlingWhenTxnManagerIsInFatalError: client-side sequence bookkeeping
  (``TxnPartitionMap``, unresolved sequences) with no counterpart in the engine's accumulator.
- testMaybeAddPartitionToTransaction, testAddPartitionToTransaction{Overrides,Retains}RetryBackoff*,
  testIsSendToPartitionAllowed*, testNoDrainWhenPartitionsPending, testAllowDrainInAbortableErrorState,
  testRaiseErrorWhenNoPartitionsPendingOnDrain, testMultipleAddPartitionsPerForOneProduce,
  testFlushPendingPartitionsOnCommit, testFindCoordinatorAllowedInAbortableErrorState,
  testSenderShutdownWithPendingTransactions, testDisconnectAndRetry, testLookupCoordinatorOn*,
  testCoordinatorNotAvailable, testTransitionToAbortableErrorOnMultipleBatchExpiry: internals of
  Kafka's request queue and Sender thread, or the same path as a test below.
- testHasOngoingTransaction{SuccessfulAbort,SuccessfulCommit,AbortableError,FatalError}:
  confluent-kafka has no ``hasOngoingTransaction``; the states are checked through ``p.txn.state``.
- testBackgroundInvalidStateTransitionIsFatal: the engine has no background thread; every
  transition runs inside an API call (the foreground case is paraphrased).
- testFailIfNotReadyForSendIdempotentProducerFatalError: no end-to-end path makes an idempotent
  producer fatal without a mocked answer.
- testCommitTransactionWithUnsentProduceRequest: the engine's flush and commit wait for
  ``linger.ms`` before sending a lingering batch, where Kafka's ``beginFlush`` sends it at once
  (a change in engine/client/producer.py, outside this module's reach).
- testDisallowCommitOnProduceFailure and testAllowAbortOnProduceFailure use
  OUT_OF_ORDER_SEQUENCE_NUMBER, abortable in Kafka since KIP-360; the engine keeps it fatal for a
  transactional producer (see engine/client/transactions.py), so they use other failed sends.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from engine import Cluster
from engine.client.message import TopicPartition
from engine.client.transactions import VALID_PREVIOUS, TransactionStateMachine, TxnClientState
from engine.errors import (
    IllegalStateError,
    InvalidProducerEpochException,
    ProducerFencedException,
    RecordTooLargeException,
    TimeoutException,
    TransactionAbortedException,
    UnknownTopicOrPartitionException,
)

T = TxnClientState

#: Short waits that keep a test fast but leave room for a few round trips.
_QUICK = {"request.timeout.ms": 1_000, "delivery.timeout.ms": 3_000}


# -- helpers ------------------------------------------------------------------------------------


def _cluster(seed: int = 5, partitions: int = 2, **config: Any) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2, **config})
    c.create_topic("t", partitions=partitions, replication_factor=3)
    return c


def _producer(c: Cluster, txn_id: str = "tx", *, init: bool = True, **config: Any) -> Any:
    p = c.producer({"transactional.id": txn_id, "linger.ms": 0, **config})
    if init:
        p.init_transactions()
    return p


def _mark(c: Cluster) -> int:
    """Return the trace position: the helpers below look only at events after it."""
    return len(c.world.trace.events)


def _sent(c: Cluster, p: Any, since: int, *types: str) -> list[dict[str, Any]]:
    """Return the details of every request of ``types`` that ``p`` sent since ``since``, in order."""
    return [
        dict(e.detail)
        for e in c.world.trace.events[since:]
        if e.node == p.name and e.kind == "send" and e.get("msg") in types
    ]


def _answers(c: Cluster, p: Any, since: int, *types: str) -> list[dict[str, Any]]:
    """Return the details of every response of ``types`` sent to ``p`` since ``since``, in order."""
    return [
        dict(e.detail)
        for e in c.world.trace.events[since:]
        if e.kind == "send" and e.get("to") == p.name and e.get("msg") in types
    ]


def _first(c: Cluster, since: int, match: Any) -> int:
    """Return the trace index of the first event after ``since`` that ``match`` accepts."""
    return next(e.index for e in c.world.trace.events[since:] if match(e))


def _read_committed(c: Cluster, partitions: tuple[int, ...] = (0, 1)) -> list[Any]:
    consumer = c.consumer({"isolation.level": "read_committed"})
    consumer.assign([("t", p) for p in partitions])
    out: list[Any] = []
    while got := consumer.consume(1000, timeout=1.0):
        out.extend(m.value() for m in got)
    return out


def _reports(box: list[Any]) -> Any:
    return lambda err, msg: box.append((err, msg))


def _markers(c: Cluster, partition: int = 0) -> list[str]:
    log = c.brokers[c.leader("t", partition)].disk.get(f"log:t-{partition}")
    return [b.control_type for b in log.batches if b.is_control]


def _fail_with_too_large(p: Any, partition: int = 0) -> Any:
    """Send a record over max.request.size (the producer must have max.request.size=1000); return its error."""
    box: list[Any] = []
    p.produce("t", value=b"x" * 2_000, partition=partition, on_delivery=_reports(box))
    p.poll(0)
    ((err, _),) = box
    assert isinstance(err, RecordTooLargeException)
    return err


def _assert_bumped_by_abort(c: Cluster, p: Any, since: int, pid: int, end_epoch: int) -> None:
    """The abort sent EndTxn(ABORT) at ``end_epoch``, then InitProducerId with the current id and epoch."""
    reqs = _sent(c, p, since, "EndTxnRequest", "InitProducerIdRequest")
    assert reqs[0]["msg"] == "EndTxnRequest"
    assert (reqs[0]["result"], reqs[0]["pid"], reqs[0]["epoch"]) == ("ABORT", pid, end_epoch)
    (end_answer,) = _answers(c, p, since, "EndTxnResponse")
    bumps = reqs[1:]
    assert bumps, "no InitProducerId after the abort: the epoch was not bumped"
    assert {r["msg"] for r in bumps} == {"InitProducerIdRequest"}
    # KIP-360: the bump names the producer id and the epoch the EndTxn answer left (TV2 bumps it once already).
    assert {(r["pid"], r["epoch"]) for r in bumps} == {(pid, end_answer["epoch"])}
    assert p.producer_id == pid
    assert p.producer_epoch == end_answer["epoch"] + 1
    assert p.txn.history[-3:] == [T.ABORTING_TRANSACTION, T.INITIALIZING, T.READY]


def _assert_next_transaction_starts_at_sequence_zero(c: Cluster, p: Any, partitions: tuple[int, ...] = (0,)) -> None:
    """The next transaction writes under the producer's current (bumped) epoch from sequence 0."""
    since, epoch = _mark(c), p.producer_epoch
    p.begin_transaction()
    for part in partitions:
        p.produce("t", value=f"next-{part}".encode(), partition=part)
    p.commit_transaction()
    produced = _sent(c, p, since, "ProduceRequest")
    assert sorted((r["tp"], r["seq"]) for r in produced) == [(f"t-{part}", 0) for part in partitions]
    assert {r["epoch"] for r in produced} == {epoch}
    assert [r["epoch"] for r in _sent(c, p, since, "EndTxnRequest")] == [epoch]


# -- the transition table (point 4) --------------------------------------------------------------


def _kafka_is_transition_valid(source: TxnClientState, target: TxnClientState) -> bool:
    """Kafka's ``TransactionManager.State.isTransitionValid``, case by case."""
    if target is T.UNINITIALIZED:
        return source in (T.READY, T.ABORTABLE_ERROR)
    if target is T.INITIALIZING:
        return source in (T.UNINITIALIZED, T.ABORTING_TRANSACTION)
    if target is T.READY:
        return source in (T.INITIALIZING, T.COMMITTING_TRANSACTION, T.ABORTING_TRANSACTION)
    if target is T.IN_TRANSACTION:
        return source is T.READY
    if target is T.COMMITTING_TRANSACTION:
        return source is T.IN_TRANSACTION
    if target is T.ABORTING_TRANSACTION:
        return source in (T.IN_TRANSACTION, T.ABORTABLE_ERROR)
    if target is T.ABORTABLE_ERROR:
        return source in (T.IN_TRANSACTION, T.COMMITTING_TRANSACTION, T.ABORTABLE_ERROR, T.INITIALIZING)
    return True  # FATAL_ERROR: from anywhere


@pytest.mark.parametrize(
    ("source", "target"),
    list(itertools.product(TxnClientState, TxnClientState)),
    ids=lambda s: s.name,
)
def test_is_transition_valid(source: TxnClientState, target: TxnClientState) -> None:
    """Kafka's State.isTransitionValid: the client's table and its guard agree with Kafka's for every pair."""
    valid = _kafka_is_transition_valid(source, target)
    assert (source in VALID_PREVIOUS[target]) == valid
    machine = TransactionStateMachine("tx")
    machine.state = source
    if valid:
        machine.transition_to(target)
        assert machine.state is target
    else:
        with pytest.raises(IllegalStateError, match=f"cannot go from {source.name} to {target.name}"):
            machine.transition_to(target)
        assert machine.state is source


def test_foreground_invalid_state_transition_is_recoverable() -> None:
    """Kafka's testForegroundInvalidStateTransitionIsRecoverable: a refused call leaves the producer usable."""
    c = _cluster()
    p = _producer(c, init=False)
    with pytest.raises(IllegalStateError, match=r"init_transactions\(\)"):
        p.abort_transaction()
    assert p.txn.state is T.UNINITIALIZED
    assert p.fatal_error is None
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"v", partition=1)
    p.commit_transaction()
    assert _read_committed(c) == [b"v"]


# -- init_transactions once (point 4) ------------------------------------------------------------


def test_initialize_transactions_twice_raises_error() -> None:
    """Kafka's testInitializeTransactionsTwiceRaisesError: a second init_transactions() is IllegalStateError."""
    c = _cluster()
    p = _producer(c)
    pid, epoch = p.producer_id, p.producer_epoch
    since = _mark(c)
    with pytest.raises(IllegalStateError, match="already called"):
        p.init_transactions()
    assert _sent(c, p, since, "InitProducerIdRequest") == []  # nothing reached the coordinator
    assert (p.producer_id, p.producer_epoch, p.txn.state) == (pid, epoch, T.READY)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.commit_transaction()
    with pytest.raises(IllegalStateError, match="already called"):
        p.init_transactions()  # READY again after a commit: still refused
    assert _sent(c, p, since, "InitProducerIdRequest") == []
    assert _read_committed(c) == [b"a"]


def test_retry_init_transactions_after_timeout() -> None:
    """Kafka's testRetryInitTransactionsAfterTimeout: only init_transactions() may follow its timeout, and only once."""
    c = _cluster()
    p = _producer(c, init=False)
    rule = c.add_rule("hold", dst=p.name, body_type="InitProducerIdResponse")
    with pytest.raises(TimeoutException, match=r"init_transactions\(\) again"):
        p.init_transactions(timeout=2)
    assert p.txn.state is T.INITIALIZING
    refused = (
        p.begin_transaction,
        p.commit_transaction,
        p.abort_transaction,
        lambda: p.produce("t", value=b"x", partition=0),
        lambda: p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], "g"),
    )
    for call in refused:
        with pytest.raises(IllegalStateError, match=r"init_transactions\(\) timed out"):
            call()
    c.release(rule)  # the coordinator's answer arrives; the application has not retried yet
    c.run_for(100)
    assert p.txn.state is T.INITIALIZING
    p.init_transactions()
    assert p.txn.state is T.READY
    assert p.producer_id >= 0
    with pytest.raises(IllegalStateError, match="already called"):
        p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"after-retry", partition=0)
    p.commit_transaction()
    assert _read_committed(c) == [b"after-retry"]


# -- INVALID_PRODUCER_EPOCH on a produce is abortable (point 3) -----------------------------------


@pytest.mark.parametrize("cause", ["new_instance", "transaction_timeout"])
def test_invalid_producer_epoch_from_produce(cause: str) -> None:
    """Kafka's testInvalidProducerEpochFromProduce: abortable; the abort's EndTxn goes first.

    After a new instance fenced the producer, that EndTxn is refused as fenced. After the
    coordinator's own timeout abort, a TV2 producer's EndTxn(ABORT) at its epoch is a retry of that
    abort (KAFKA-19367, Kafka 4.1: the abort bumped the epoch once): it is answered with the new
    epoch, and the producer carries on.
    """
    c = _cluster(**{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    p = _producer(c, **{"transaction.timeout.ms": 2_000})
    p.begin_transaction()
    p.produce("t", value=b"first", partition=0)
    p.flush()
    began_at = p.producer_epoch
    if cause == "new_instance":
        _producer(c)  # fences p: its open transaction is aborted with a bumped epoch
    else:
        c.run_for(4_000)  # the coordinator aborts the timed-out transaction with a bumped epoch
    box: list[Any] = []
    p.produce("t", value=b"stale", partition=0, on_delivery=_reports(box))
    p.flush()
    ((err, _),) = box
    assert isinstance(err, InvalidProducerEpochException)  # not ProducerFencedException
    assert p.txn.state is T.ABORTABLE_ERROR
    assert p.fatal_error is None
    with pytest.raises(InvalidProducerEpochException, match=r"call abort_transaction\(\)"):
        p.commit_transaction()
    with pytest.raises(InvalidProducerEpochException):
        p.produce("t", value=b"more", partition=1)
    since = _mark(c)
    if cause == "transaction_timeout":
        p.abort_transaction()  # a retry of the coordinator's abort: NONE, with the epoch it bumped to
        sent = _sent(c, p, since, "EndTxnRequest")
        assert (sent[0]["result"], sent[0]["epoch"]) == ("ABORT", began_at)
        assert [a["error"] for a in _answers(c, p, since, "EndTxnResponse")] == ["NONE"]
        assert p.fatal_error is None
        p.begin_transaction()
        p.produce("t", value=b"after-timeout", partition=0)
        p.commit_transaction()
        assert _read_committed(c) == [b"after-timeout"]
        return
    with pytest.raises(ProducerFencedException):
        p.abort_transaction()
    # The abort starts with EndTxn(ABORT) at the stale epoch; the coordinator refuses it as fenced,
    # so the InitProducerId that would follow (KIP-360) is never sent.
    (end,) = _sent(c, p, since, "EndTxnRequest", "InitProducerIdRequest")
    assert (end["msg"], end["result"], end["epoch"]) == ("EndTxnRequest", "ABORT", p.producer_epoch)
    assert [a["error"] for a in _answers(c, p, since, "EndTxnResponse")] == ["PRODUCER_FENCED"]
    assert p.txn.state is T.FATAL_ERROR
    with pytest.raises(ProducerFencedException):
        p.begin_transaction()
    c.run_for(500)
    assert _read_committed(c) == []


def test_invalid_producer_epoch_convert_to_producer_fenced_in_end_txn() -> None:
    """Kafka's testInvalidProducerEpochConvertToProducerFencedInEndTxn: a fenced EndTxn is fatal for every call."""
    c = _cluster()
    old = _producer(c)
    old.begin_transaction()
    old.produce("t", value=b"zombie", partition=0)
    old.flush()
    _producer(c)  # a new instance fences old
    since = _mark(c)
    with pytest.raises(ProducerFencedException):
        old.commit_transaction()
    assert [r["result"] for r in _sent(c, old, since, "EndTxnRequest")] == ["COMMIT"]
    assert [a["error"] for a in _answers(c, old, since, "EndTxnResponse")] == ["PRODUCER_FENCED"]
    assert old.txn.state is T.FATAL_ERROR
    for call in (
        old.begin_transaction,
        old.commit_transaction,
        old.abort_transaction,
        old.init_transactions,
        lambda: old.send_offsets_to_transaction([TopicPartition("t", 0, 1)], "g"),
        lambda: old.produce("t", value=b"x", partition=0),
    ):
        with pytest.raises(ProducerFencedException):
            call()
    c.run_for(500)
    assert _read_committed(c) == []


def test_producer_fenced_in_add_partition_to_txn() -> None:
    """Kafka's testProducerFencedInAddPartitionToTxn: the record fails as fenced and the producer is fatal."""
    c = _cluster(**{"transaction.version": 1})
    old = _producer(c)
    old.begin_transaction()
    _producer(c)
    since = _mark(c)
    box: list[Any] = []
    old.produce("t", value=b"zombie", partition=0, on_delivery=_reports(box))
    old.flush()
    old.poll(0)
    ((err, _),) = box
    assert isinstance(err, ProducerFencedException)
    (add,) = _sent(c, old, since, "AddPartitionsToTxnRequest")
    assert add["epoch"] == old.producer_epoch
    assert _sent(c, old, since, "ProduceRequest") == []  # version 1: nothing is sent before the partition is added
    assert old.txn.state is T.FATAL_ERROR
    for call in (
        old.begin_transaction,
        old.commit_transaction,
        old.abort_transaction,
        lambda: old.send_offsets_to_transaction([TopicPartition("t", 0, 1)], "g"),
    ):
        with pytest.raises(ProducerFencedException):
            call()


@pytest.mark.parametrize("version", [1, 2])
def test_producer_fenced_in_add_offsets_to_txn(version: int) -> None:
    """Kafka's testProducerFencedInAddOffSetsToTxn: a fenced AddOffsetsToTxn is fatal, and no offsets are committed."""
    c = _cluster(**{"transaction.version": version})
    old = _producer(c)
    old.begin_transaction()
    _producer(c)
    since = _mark(c)
    with pytest.raises(ProducerFencedException):
        old.send_offsets_to_transaction([TopicPartition("t", 0, 1)], "g")
    assert len(_sent(c, old, since, "AddOffsetsToTxnRequest")) == 1
    assert _sent(c, old, since, "TxnOffsetCommitRequest") == []
    assert old.txn.state is T.FATAL_ERROR
    with pytest.raises(ProducerFencedException):
        old.abort_transaction()
    c.run_for(500)
    view = c.group_view("g")
    assert view is None or view.committed == ()


# -- InitProducerId fenced (the KIP-360 bump meets a newer instance) ---------------------------------


def _bump_interrupted_by_new_instance(c: Cluster) -> tuple[Any, Any, int]:
    """Leave ``p`` in the epoch bump after an abort, its InitProducerId lost, while a new instance initialises.

    Return the old producer, the new one, and the trace position before the abort.
    """
    p = _producer(c, **{"max.request.size": 1_000})
    p.begin_transaction()
    p.produce("t", value=b"ok", partition=0)
    _fail_with_too_large(p)
    p.flush()
    since = _mark(c)
    rule = c.add_rule("drop", src=p.name, body_type="InitProducerIdRequest", count=None)
    with pytest.raises(TimeoutException, match=r"abort_transaction\(\) again"):
        p.abort_transaction(timeout=2)
    assert p.txn.state is T.INITIALIZING  # EndTxn done, the bump is still to come
    c.remove_rule(rule)
    new = _producer(c)
    return p, new, since


def test_producer_fenced_exception_in_init_producer_id() -> None:
    """Kafka's testProducerFencedExceptionInInitProducerId: a fenced InitProducerId is fatal for every call."""
    c = _cluster(**{"transaction.version": 1})
    p, _new, _since = _bump_interrupted_by_new_instance(c)
    with pytest.raises(ProducerFencedException):
        p.abort_transaction()  # the retried bump: InitProducerId with a stale epoch
    assert p.txn.state is T.FATAL_ERROR
    for call in (
        p.init_transactions,
        p.begin_transaction,
        p.commit_transaction,
        p.abort_transaction,
        lambda: p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], "g"),
        lambda: p.produce("t", value=b"x", partition=0),
    ):
        with pytest.raises(ProducerFencedException):
            call()


def test_fence_producer_in_init_producer_id_after_end_txn() -> None:
    """Like Kafka's verifyProducerFencedForInitProducerId, for the KIP-360 bump right after a successful EndTxn."""
    c = _cluster()
    p, new, since = _bump_interrupted_by_new_instance(c)
    pid, epoch = p.producer_id, p.producer_epoch
    with pytest.raises(ProducerFencedException):
        p.abort_transaction()
    (end,) = _sent(c, p, since, "EndTxnRequest")
    assert [a["error"] for a in _answers(c, p, since, "EndTxnResponse")] == ["NONE"]
    assert end["epoch"] == epoch - 1  # transaction version 2: the EndTxn answer bumped the epoch once
    bumps = _sent(c, p, since, "InitProducerIdRequest")
    assert {(r["pid"], r["epoch"]) for r in bumps} == {(pid, epoch)}
    assert _answers(c, p, since, "InitProducerIdResponse")[-1]["error"] == "PRODUCER_FENCED"
    assert new.producer_epoch > epoch
    new.begin_transaction()  # the new instance is not disturbed
    new.produce("t", value=b"new", partition=1)
    new.commit_transaction()
    assert _read_committed(c) == [b"new"]


# -- the KIP-360 epoch bump after an abortable error ------------------------------------------------


def test_bump_transactional_epoch_on_abortable_error() -> None:
    """Kafka's testBumpTransactionalEpochOnAbortableError: after a failed send the abort bumps the epoch."""
    c = _cluster()
    p = _producer(c, **{"max.request.size": 1_000})
    pid, epoch = p.producer_id, p.producer_epoch
    p.begin_transaction()
    for value in (b"r0", b"r1"):
        p.produce("t", value=value, partition=0)
        p.flush()
    _fail_with_too_large(p)
    assert p.txn.state is T.ABORTABLE_ERROR
    since = _mark(c)
    p.abort_transaction()
    _assert_bumped_by_abort(c, p, since, pid, epoch)
    assert p.txn.history[-4:] == [T.ABORTABLE_ERROR, T.ABORTING_TRANSACTION, T.INITIALIZING, T.READY]
    _assert_next_transaction_starts_at_sequence_zero(c, p)
    assert _read_committed(c) == [b"next-0"]


def test_bump_transactional_epoch_on_timeout() -> None:
    """Kafka's testBumpTransactionalEpochOnTimeout: a batch expired in flight makes the abort bump the epoch."""
    c = _cluster()
    p = _producer(c, **_QUICK)
    pid, epoch = p.producer_id, p.producer_epoch
    p.begin_transaction()
    p.produce("t", value=b"acked", partition=0)
    p.flush()
    rule = c.add_rule("drop", src=p.name, body_type="ProduceRequest", count=None)
    box: list[Any] = []
    p.produce("t", value=b"lost", partition=0, on_delivery=_reports(box))
    p.flush()
    c.remove_rule(rule)
    ((err, _),) = box
    assert isinstance(err, TimeoutException)
    assert "delivery.timeout.ms" in str(err)
    assert p.txn.state is T.ABORTABLE_ERROR
    since = _mark(c)
    p.abort_transaction()
    _assert_bumped_by_abort(c, p, since, pid, epoch)
    _assert_next_transaction_starts_at_sequence_zero(c, p, (0, 1))
    assert sorted(_read_committed(c)) == [b"next-0", b"next-1"]


def test_bump_epoch_after_timeout_without_pending_inflight_requests() -> None:
    """Kafka's testBumpEpochAfterTimeoutWithoutPendingInflightRequests: the idempotent producer bumps on its own."""
    c = _cluster()
    p = c.producer({"linger.ms": 0, **_QUICK})
    p.produce("t", value=b"a", partition=0)
    p.flush()
    pid, epoch = p.producer_id, p.producer_epoch
    since = _mark(c)
    rule = c.add_rule("drop", src=p.name, body_type="ProduceRequest", count=None)
    box: list[Any] = []
    p.produce("t", value=b"b", partition=0, on_delivery=_reports(box))
    p.flush()
    c.remove_rule(rule)
    ((err, _),) = box
    assert isinstance(err, TimeoutException)
    assert (p.producer_id, p.producer_epoch) == (pid, epoch + 1)  # local bump, no coordinator
    p.produce("t", value=b"c", partition=0)
    assert p.flush() == 0
    assert _sent(c, p, since, "InitProducerIdRequest") == []
    last = _sent(c, p, since, "ProduceRequest")[-1]
    assert (last["epoch"], last["seq"]) == (epoch + 1, 0)
    assert _read_committed(c, (0,)) == [b"a", b"c"]


def test_epoch_bump_after_last_inflight_batch_fails() -> None:
    """Kafka's testEpochBumpAfterLastInflightBatchFails: the bump waits until the last in-flight batch has failed."""
    c = _cluster()
    p = _producer(c, **{**_QUICK, "max.request.size": 1_000})
    pid, epoch = p.producer_id, p.producer_epoch
    p.begin_transaction()
    rule = c.add_rule(
        "drop",
        src=p.name,
        body_type="ProduceRequest",
        where=lambda m: any(x.partition == 1 for x in m.body.partitions),
        count=None,
    )
    box: list[Any] = []
    p.produce("t", value=b"in-flight", partition=1, on_delivery=_reports(box))
    c.run_for(50)
    _fail_with_too_large(p, partition=0)
    assert p.txn.state is T.ABORTABLE_ERROR
    assert box == []  # the batch to t-1 is still in flight
    since = _mark(c)
    p.abort_transaction()
    c.remove_rule(rule)
    ((err, _),) = box
    assert isinstance(err, TimeoutException)  # it was not dropped by the abort: it had been sent
    failed = _first(c, since, lambda e: e.node == p.name and e.name == "produce.failed" and e.get("tp") == "t-1")
    end = _first(c, since, lambda e: e.node == p.name and e.kind == "send" and e.get("msg") == "EndTxnRequest")
    bump = _first(c, since, lambda e: e.node == p.name and e.kind == "send" and e.get("msg") == "InitProducerIdRequest")
    assert failed < end < bump
    _assert_bumped_by_abort(c, p, since, pid, epoch)
    _assert_next_transaction_starts_at_sequence_zero(c, p, (0, 1))


def test_can_bump_epoch_during_coordinator_disconnect() -> None:
    """Kafka's testCanBumpEpochDuringCoordinatorDisconnect: a bump cut off from the coordinator completes on retry."""
    c = _cluster()
    p = _producer(c, **{"max.request.size": 1_000})
    pid, epoch = p.producer_id, p.producer_epoch
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    _fail_with_too_large(p)
    since = _mark(c)
    rule = c.add_rule("drop", src=p.name, body_type="InitProducerIdRequest", count=None)
    with pytest.raises(TimeoutException, match=r"abort_transaction\(\) again"):
        p.abort_transaction(timeout=2)
    assert p.txn.state is T.INITIALIZING
    with pytest.raises(IllegalStateError, match=r"abort_transaction\(\) timed out"):
        p.begin_transaction()
    c.remove_rule(rule)
    p.abort_transaction()
    assert len(_sent(c, p, since, "EndTxnRequest")) == 1  # the retry goes on with the bump, not a second EndTxn
    _assert_bumped_by_abort(c, p, since, pid, epoch)
    _assert_next_transaction_starts_at_sequence_zero(c, p)
    assert _read_committed(c) == [b"next-0"]


# -- failed sends: the transaction becomes abortable -----------------------------------------------


def _expire_before_the_partition_is_added(c: Cluster) -> tuple[Any, Any]:
    """Transaction version 1: AddPartitionsToTxn never arrives, so the record expires unsent in the queue."""
    p = _producer(c, **_QUICK)
    p.begin_transaction()
    rule = c.add_rule("drop", src=p.name, body_type="AddPartitionsToTxnRequest", count=None)
    box: list[Any] = []
    p.produce("t", value=b"never-sent", partition=0, on_delivery=_reports(box))
    p.flush()
    c.remove_rule(rule)
    ((err, _),) = box
    return p, err


def test_transition_to_abortable_error_on_batch_expiry() -> None:
    """Kafka's testTransitionToAbortableErrorOnBatchExpiry: a batch expired unsent makes the transaction abortable."""
    c = _cluster(**{"transaction.version": 1})
    since = _mark(c)
    p, err = _expire_before_the_partition_is_added(c)
    assert isinstance(err, TimeoutException)
    assert "delivery.timeout.ms" in str(err)
    assert _sent(c, p, since, "ProduceRequest") == []
    assert p.txn.state is T.ABORTABLE_ERROR
    assert p.fatal_error is None
    with pytest.raises(TimeoutException, match=r"call abort_transaction\(\)"):
        p.commit_transaction()
    assert _sent(c, p, since, "EndTxnRequest") == []


def test_recovery_from_abortable_error_transaction_not_started() -> None:
    """Kafka's testRecoveryFromAbortableErrorTransactionNotStarted: no EndTxn for a transaction never started."""
    c = _cluster(**{"transaction.version": 1})
    p, _err = _expire_before_the_partition_is_added(c)
    pid, epoch = p.producer_id, p.producer_epoch
    since = _mark(c)
    p.abort_transaction()
    assert _sent(c, p, since, "EndTxnRequest") == []
    assert {(r["pid"], r["epoch"]) for r in _sent(c, p, since, "InitProducerIdRequest")} == {(pid, epoch)}
    assert (p.txn.state, p.producer_epoch) == (T.READY, epoch + 1)
    c.run_for(2_000)
    assert _sent(c, p, since, "AddPartitionsToTxnRequest") == []  # the abandoned partition is not added later
    p.begin_transaction()
    p.produce("t", value=b"next", partition=0)
    p.commit_transaction()
    assert _read_committed(c) == [b"next"]


def test_cancel_unsent_add_partitions_and_produce_on_abort() -> None:
    """Kafka's testCancelUnsentAddPartitionsAndProduceOnAbort: unsent records fail as aborted, and no EndTxn is sent."""
    c = _cluster(**{"transaction.version": 1})
    p = _producer(c)
    epoch = p.producer_epoch
    p.begin_transaction()
    since = _mark(c)
    box: list[Any] = []
    p.produce("t", value=b"unsent", partition=0, on_delivery=_reports(box))
    p.abort_transaction()
    p.poll(0)
    ((err, _),) = box
    assert isinstance(err, TransactionAbortedException)
    assert (
        _sent(c, p, since, "AddPartitionsToTxnRequest", "ProduceRequest", "EndTxnRequest", "InitProducerIdRequest")
        == []
    )
    assert (p.txn.state, p.producer_epoch) == (T.READY, epoch)  # an aborted record is no failed send: no bump
    p.begin_transaction()
    p.produce("t", value=b"next", partition=0)
    p.commit_transaction()
    assert _read_committed(c) == [b"next"]


def test_drop_commit_on_batch_expiry() -> None:
    """Kafka's testDropCommitOnBatchExpiry: a batch that expires during commit fails the commit; the abort bumps."""
    c = _cluster()
    p = _producer(c, **_QUICK)
    pid, epoch = p.producer_id, p.producer_epoch
    p.begin_transaction()
    since = _mark(c)
    rule = c.add_rule("drop", src=p.name, body_type="ProduceRequest", count=None)
    p.produce("t", value=b"lost", partition=0)
    with pytest.raises(TimeoutException, match=r"call abort_transaction\(\)"):
        p.commit_transaction()
    c.remove_rule(rule)
    assert _sent(c, p, since, "EndTxnRequest") == []  # the commit was dropped before EndTxn
    assert p.txn.state is T.ABORTABLE_ERROR  # not a pending commit: abort is allowed at once
    since = _mark(c)
    p.abort_transaction()
    _assert_bumped_by_abort(c, p, since, pid, epoch)
    assert _read_committed(c) == []


def test_abortable_error_while_abort_in_progress() -> None:
    """Kafka's testAbortableErrorWhileAbortInProgress: a batch failing during the abort does not make it abortable."""
    c = _cluster()
    p = _producer(c, **_QUICK)
    p.begin_transaction()
    rule = c.add_rule("drop", src=p.name, body_type="ProduceRequest", count=None)
    box: list[Any] = []
    p.produce("t", value=b"in-flight", partition=0, on_delivery=_reports(box))
    c.run_for(50)
    p.abort_transaction()  # waits for the in-flight batch, which expires meanwhile
    c.remove_rule(rule)
    ((err, _),) = box
    assert isinstance(err, TimeoutException)
    assert T.ABORTABLE_ERROR not in p.txn.history
    assert p.txn.state is T.READY
    p.begin_transaction()
    p.produce("t", value=b"next", partition=1)
    p.commit_transaction()
    assert _read_committed(c) == [b"next"]


def test_abort_resends_produce_request_if_retried() -> None:
    """Kafka's testAbortResendsProduceRequestIfRetried: a retried batch is resent before EndTxn; no bump."""
    c = _cluster()
    p = _producer(c, **{"request.timeout.ms": 1_000})
    epoch = p.producer_epoch
    p.begin_transaction()
    since = _mark(c)
    c.add_rule("drop", dst=p.name, body_type="ProduceResponse", count=1)
    box: list[Any] = []
    p.produce("t", value=b"retried", partition=0, on_delivery=_reports(box))
    c.run_for(50)
    p.abort_transaction()
    p.poll(0)
    ((err, msg),) = box
    assert err is None
    assert msg.offset() == 0
    reqs = [r["msg"] for r in _sent(c, p, since, "ProduceRequest", "EndTxnRequest", "InitProducerIdRequest")]
    assert reqs == ["ProduceRequest", "ProduceRequest", "EndTxnRequest"]
    assert p.txn.state is T.READY
    assert p.producer_epoch == epoch + 1  # only transaction version 2's bump in the EndTxn answer
    assert _read_committed(c) == []
    assert _markers(c) == ["ABORT"]


def test_end_txn_not_sent_if_incomplete_batches() -> None:
    """Kafka's testEndTxnNotSentIfIncompleteBatches: EndTxn waits for the last produce response."""
    c = _cluster()
    p = _producer(c)
    p.begin_transaction()
    since = _mark(c)
    c.add_rule("delay", dst=p.name, body_type="ProduceResponse", delay_ms=500)
    p.produce("t", value=b"slow", partition=0)
    p.commit_transaction()
    answered = _first(
        c, since, lambda e: e.node == p.name and e.kind == "deliver" and e.get("msg") == "ProduceResponse"
    )
    end = _first(c, since, lambda e: e.node == p.name and e.kind == "send" and e.get("msg") == "EndTxnRequest")
    assert answered < end
    assert c.world.trace.events[end].time_ms >= c.world.trace.events[since].time_ms + 500
    assert _read_committed(c) == [b"slow"]


def test_disallow_commit_on_produce_failure() -> None:
    """Kafka's testDisallowCommitOnProduceFailure: a failed record forbids the commit; abort then works."""
    c = _cluster()
    p = _producer(c, **{"max.request.size": 1_000})
    p.begin_transaction()
    since = _mark(c)
    p.produce("t", value=b"good", partition=0)
    err = _fail_with_too_large(p, partition=1)
    with pytest.raises(RecordTooLargeException, match=r"call abort_transaction\(\)") as raised:
        p.commit_transaction()
    assert raised.value.__cause__ is err
    assert _sent(c, p, since, "EndTxnRequest") == []
    with pytest.raises(IllegalStateError, match=r"abort_transaction\(\)"):
        p.begin_transaction()
    p.abort_transaction()
    assert [r["result"] for r in _sent(c, p, since, "EndTxnRequest")] == ["ABORT"]
    assert p.txn.state is T.READY
    assert _read_committed(c) == []


def test_allow_abort_on_produce_failure() -> None:
    """Kafka's testAllowAbortOnProduceFailure: a record that never found its partition; the abort bumps the epoch."""
    c = _cluster()
    p = _producer(c, **{"max.block.ms": 2_000})
    pid, epoch = p.producer_id, p.producer_epoch
    p.begin_transaction()
    box: list[Any] = []
    p.produce("t", value=b"good", partition=0)
    p.produce("t", value=b"nowhere", partition=99, on_delivery=_reports(box))
    p.flush()
    ((err, _),) = box
    assert isinstance(err, UnknownTopicOrPartitionException)
    assert p.txn.state is T.ABORTABLE_ERROR
    since = _mark(c)
    p.abort_transaction()
    _assert_bumped_by_abort(c, p, since, pid, epoch)
    _assert_next_transaction_starts_at_sequence_zero(c, p)
    assert _read_committed(c) == [b"next-0"]


# -- wrong-state calls ----------------------------------------------------------------------------


def test_not_ready_for_send_before_init_transactions() -> None:
    """Kafka's testNotReadyForSendBeforeInitTransactions (and testFailIfNotReadyForSendNoProducerId)."""
    c = _cluster()
    p = _producer(c, init=False)
    for call in (
        lambda: p.produce("t", value=b"x", partition=0),
        p.begin_transaction,
        p.commit_transaction,
        p.abort_transaction,
        lambda: p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], "g"),
    ):
        with pytest.raises(IllegalStateError, match=r"init_transactions\(\) first"):
            call()
    assert p.txn.state is T.UNINITIALIZED
    assert len(p) == 0


def test_not_ready_for_send_before_begin_transaction() -> None:
    """Kafka's testNotReadyForSendBeforeBeginTransaction (and testFailIfNotReadyForSendNoOngoingTransaction)."""
    c = _cluster()
    p = _producer(c)
    since = _mark(c)
    for call in (
        lambda: p.produce("t", value=b"x", partition=0),
        p.commit_transaction,
        p.abort_transaction,
        lambda: p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], "g"),
    ):
        with pytest.raises(IllegalStateError, match=r"begin_transaction\(\) first"):
            call()
    assert p.txn.state is T.READY
    assert _sent(c, p, since, "EndTxnRequest", "AddOffsetsToTxnRequest", "ProduceRequest") == []


def test_not_ready_for_send_after_abortable_error() -> None:
    """Kafka's testNotReadyForSendAfterAbortableError (and testFailIfNotReadyForSendAfterAbortableError)."""
    c = _cluster()
    p = _producer(c, **{"max.request.size": 1_000})
    p.begin_transaction()
    _fail_with_too_large(p)
    since = _mark(c)
    for call in (
        lambda: p.produce("t", value=b"x", partition=0),
        lambda: p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], "g"),
        p.commit_transaction,
    ):
        with pytest.raises(RecordTooLargeException, match=r"call abort_transaction\(\)"):
            call()
    for call in (p.begin_transaction, p.init_transactions):
        with pytest.raises(IllegalStateError):
            call()
    assert _sent(c, p, since, "ProduceRequest", "AddOffsetsToTxnRequest", "EndTxnRequest") == []
    assert p.txn.state is T.ABORTABLE_ERROR
    p.abort_transaction()
    assert p.txn.state is T.READY


def test_fail_if_not_ready_for_send_idempotent_producer() -> None:
    """Kafka's testFailIfNotReadyForSendIdempotentProducer: without transactional.id, sends need no init."""
    c = _cluster()
    p = c.producer({"linger.ms": 0})
    p.produce("t", value=b"plain", partition=0)
    assert p.flush() == 0
    for call in (p.init_transactions, p.begin_transaction, p.commit_transaction, p.abort_transaction):
        with pytest.raises(IllegalStateError, match=r"transactional\.id"):
            call()
    assert _read_committed(c, (0,)) == [b"plain"]


# -- a call that timed out is called again ---------------------------------------------------------


def _end_times_out(c: Cluster, p: Any, first: str, lost: str) -> int:
    """Open a transaction with one record, then let ``first`` (commit/abort) time out; return the trace position."""
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.flush()
    since = _mark(c)
    rule = c.add_rule("drop", body_type=lost, count=None)
    with pytest.raises(TimeoutException, match=rf"call {first}_transaction\(\) again"):
        getattr(p, f"{first}_transaction")(timeout=2)
    c.remove_rule(rule)
    return since


def _retry_after_timeout(first: str) -> None:
    """The EndTxn of ``first`` is lost on its way: every other call is refused until ``first`` is called again."""
    c = _cluster()
    p = _producer(c)
    since = _end_times_out(c, p, first, lost="EndTxnRequest")  # the coordinator never saw it
    assert p.txn.state is (T.COMMITTING_TRANSACTION if first == "commit" else T.ABORTING_TRANSACTION)
    other = "abort" if first == "commit" else "commit"
    for call in (
        p.init_transactions,
        p.begin_transaction,
        getattr(p, f"{other}_transaction"),
        lambda: p.produce("t", value=b"x", partition=0),
    ):
        with pytest.raises(IllegalStateError, match=rf"{first}_transaction\(\) timed out"):
            call()
    getattr(p, f"{first}_transaction")()
    assert p.txn.state is T.READY
    assert {r["result"] for r in _sent(c, p, since, "EndTxnRequest")} == {first.upper()}
    p.begin_transaction()  # and the producer carries on
    p.produce("t", value=b"b", partition=1)
    p.commit_transaction()
    assert sorted(_read_committed(c)) == ([b"a", b"b"] if first == "commit" else [b"b"])


def test_retry_abort_transaction_after_timeout() -> None:
    """Kafka's testRetryAbortTransactionAfterTimeout: after the timeout only abort_transaction() is allowed."""
    _retry_after_timeout("abort")


def test_retry_commit_transaction_after_timeout() -> None:
    """Kafka's testRetryCommitTransactionAfterTimeout: after the timeout only commit_transaction() is allowed."""
    _retry_after_timeout("commit")


def _retry_after_lost_answer(first: str) -> None:
    """The coordinator ended the transaction but its answer was lost: the retried call gets the same result."""
    c = _cluster()
    p = _producer(c)
    epoch = p.producer_epoch
    since = _end_times_out(c, p, first, lost="EndTxnResponse")
    getattr(p, f"{first}_transaction")()
    ends = _sent(c, p, since, "EndTxnRequest")
    assert len(ends) == 2
    assert {(r["result"], r["epoch"]) for r in ends} == {(first.upper(), epoch)}
    # Both answers (the lost one and the retry's) carry the same outcome and bumped epoch (KIP-890).
    assert [(a["error"], a["epoch"]) for a in _answers(c, p, since, "EndTxnResponse")] == [("NONE", epoch + 1)] * 2
    assert p.producer_epoch == epoch + 1
    c.run_for(500)
    assert _markers(c) == [first.upper()]  # one outcome, written once
    assert _read_committed(c) == ([b"a"] if first == "commit" else [])


def test_retry_abort_transaction() -> None:
    """Kafka's testRetryAbortTransaction: a retried abort is answered as the abort already done."""
    _retry_after_lost_answer("abort")


def test_retry_commit_transaction() -> None:
    """Kafka's testRetryCommitTransaction: a retried commit is answered as the commit already done."""
    _retry_after_lost_answer("commit")


def _switch_after_timeout(first: str, second: str) -> None:
    """``first`` timed out: ``second`` is refused, and ``first`` called again still finishes."""
    c = _cluster()
    p = _producer(c)
    _end_times_out(c, p, first, lost="EndTxnResponse")
    with pytest.raises(IllegalStateError, match=rf"{first}_transaction\(\) timed out and is still pending"):
        getattr(p, f"{second}_transaction")()
    getattr(p, f"{first}_transaction")()
    assert p.txn.state is T.READY
    assert _markers(c) == [first.upper()]


def test_retry_abort_transaction_after_commit_timeout() -> None:
    """Kafka's testRetryAbortTransactionAfterCommitTimeout: a commit that timed out cannot become an abort."""
    _switch_after_timeout("commit", "abort")


def test_retry_commit_transaction_after_abort_timeout() -> None:
    """Kafka's testRetryCommitTransactionAfterAbortTimeout: an abort that timed out cannot become a commit."""
    _switch_after_timeout("abort", "commit")


# -- the ordinary path -------------------------------------------------------------------------------


def test_basic_transaction() -> None:
    """Kafka's testBasicTransaction: records and consumer offsets committed together."""
    c = _cluster()
    p = _producer(c)
    p.begin_transaction()
    since = _mark(c)
    p.produce("t", value=b"v0", partition=0)
    p.flush()
    p.send_offsets_to_transaction([TopicPartition("t", 1, 1)], "g")
    assert c.group_view("g").committed == ()  # pending until the transaction commits
    p.commit_transaction()
    msgs = [
        r["msg"]
        for r in _sent(
            c, p, since, "ProduceRequest", "AddOffsetsToTxnRequest", "TxnOffsetCommitRequest", "EndTxnRequest"
        )
    ]
    assert msgs == ["ProduceRequest", "AddOffsetsToTxnRequest", "TxnOffsetCommitRequest", "EndTxnRequest"]
    c.run_for(500)
    assert _read_committed(c) == [b"v0"]
    assert c.group_view("g").committed == (("t", 1, 1),)
    assert p.txn.state is T.READY


@pytest.mark.parametrize(("version", "epochs"), [(1, [0, 0, 0]), (2, [0, 1, 2])])
def test_transaction_manager_enables_v2(version: int, epochs: list[int]) -> None:
    """Like Kafka's testTransactionManagerEnablesV2: version 2 bumps the epoch at every EndTxn, version 1 does not."""
    c = _cluster(**{"transaction.version": version})
    p = _producer(c)
    seen = []
    for i in range(3):
        since = _mark(c)
        p.begin_transaction()
        p.produce("t", value=f"x{i}".encode(), partition=0)
        p.commit_transaction()
        (req,) = _sent(c, p, since, "ProduceRequest")
        seen.append(req["epoch"])
        # Version 2 starts every transaction at sequence 0 under its new epoch; version 1 goes on counting.
        assert req["seq"] == (0 if version == 2 else i)
    assert seen == epochs
    assert _sent(c, p, 0, "InitProducerIdRequest")[-1]["epoch"] == -1  # no bump asked for: only init_transactions
    assert _read_committed(c) == [b"x0", b"x1", b"x2"]
