"""Kafka's ``TransactionStateManagerTest``, paraphrased against the simulated coordinator's state keeping.

Kafka's ``TransactionStateManager`` owns the loaded metadata of each ``__transaction_state``
partition, loads a partition (and the PREPARE_* it finds) when its broker becomes the leader,
removes it on emigration, appends transitions and finds timed-out transactions. In the engine
that is ``TransactionStateManager`` (``engine/coordinator/txn_state_manager.py``: ``load``,
``unload``, ``append``) and ``TransactionTimeouts`` (``txn_timeout.py``), driven by the coordinator's
broker hooks, so the tests drive a three-broker cluster with a raw client and real failovers (a
crash, or an isolated leader) instead of mocked logs. Each test is named after the Kafka test it
paraphrases (camelCase to snake_case) and its docstring names it.

Reference: apache/kafka ``core/src/test/scala/unit/kafka/coordinator/transaction/
TransactionStateManagerTest.scala`` (Oct 2024 trunk, 4.x) and ``TransactionLog.readTxnRecordValue``
(the last producer epoch is not in ``TransactionLogValue``: a loaded id has none).

Not paraphrased, because the engine does not model what they test:

- ``shouldRemoveCompleteCommitExpiredTransactionalIds``, ``shouldRemoveCompleteAbortExpiredTransactionalIds``,
  ``shouldRemoveEmptyExpiredTransactionalIds``, ``shouldNotRemoveExpiredTransactionalIdsIfLogAppendFails``,
  ``shouldNotRemoveOngoingTransactionalIds``, ``shouldNotRemovePrepareAbortTransactionalIds``,
  ``shouldNotRemovePrepareCommitTransactionalIds``, ``testTransactionalExpirationWithTooSmallBatchSize``,
  ``testTransactionalExpirationWithOfflineLogDir``, ``testTransactionExpirationShouldRespectBatchSize``,
  ``testTransactionExpirationShouldNotFailWithUninitializedTransactionMetadata``: no transactional-id
  expiration (DEAD, tombstones).
- ``testPartitionLoadMetric``: no metrics.
- ``testLoadTransactionMetadataWithCorruptedLog``, ``testIgnoreUnknownRecordType``: the simulated
  log stores value objects; it is never corrupt and has one record type.
- ``testDeleteLoadingPartition``, ``testAppendTransactionToLogWhileProducerFenced``,
  ``testAppendTransactionToLogWhilePendingStateChanged``: another thread changes the metadata or
  unloads the partition while a load or an append runs; the simulation handles one event at a time.
- ``testAppendFailToNotCoordinatorError``, ``testAppendFailToCoordinatorLoadingError``,
  ``testAppendFailToUnknownError``, ``testPendingStateNotResetOnRetryAppend``: the mapping of
  ReplicaManager append errors. A failed write has one outcome here: the request is answered
  COORDINATOR_NOT_AVAILABLE, also where Kafka answers NOT_COORDINATOR (the leadership was lost
  while the write was pending); marker completion retries its write without a special mode.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster
from engine.coordinator.txn_coordinator import TransactionCoordinator
from engine.coordinator.txn_log import TxnLogValue, records_of
from engine.coordinator.txn_metadata import TransactionMetadata
from engine.coordinator.txn_state import TransactionState
from engine.coordinator_lookup import KEY_TYPE_TRANSACTION, TRANSACTION_STATE_TOPIC, partition_for
from engine.errors import ErrorCode
from engine.protocol import (
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    WriteTxnMarkersRequest,
)
from tests.scenarios.conftest import RawClient

S = TransactionState
TXN_1, TXN_2 = "one", "two"
TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms default
LOADED_A_PREPARE = "coordinator: completing a PREPARE found on load"
TIMED_OUT = "coordinator: timed-out transaction aborted"


class _Harness:
    """A three-broker cluster with ``__transaction_state`` of ``partitions`` partitions and a raw client."""

    def __init__(self, version: int = 2, partitions: int = 1, **config: Any) -> None:
        self.c = Cluster(
            seed=7,
            brokers=3,
            config={
                "min.insync.replicas": 2,
                "transaction.version": version,
                "transaction.state.log.num.partitions": partitions,
                **config,
            },
        )
        self.c.create_topic("t", partitions=2, replication_factor=3)
        self.partitions = partitions
        self.client = RawClient(self.c.world)

    def ask(self, broker: int, body: Any, timeout_ms: int = 2_000) -> Any:
        """Send one request to a broker and run until it is answered."""
        box = self.client.call(f"broker-{broker}", body, timeout_ms=timeout_ms)
        self.c.run_until(lambda: bool(box))
        return box[0]

    def partition_of(self, txn_id: str) -> int:
        """Return the id's ``__transaction_state`` partition."""
        return partition_for(txn_id, self.partitions)

    def coordinator(self, txn_id: str) -> int:
        """Return the id's coordinator as the controller sees it (FindCoordinator creates the topic first)."""
        while True:
            state = self.c.controller.partitions.get((TRANSACTION_STATE_TOPIC, self.partition_of(txn_id)))
            if state is not None and state.leader >= 0:
                return state.leader
            self.ask(1, FindCoordinatorRequest(txn_id, KEY_TYPE_TRANSACTION))
            self.c.run_for(100)

    def tc(self, broker: int) -> TransactionCoordinator:
        """Return a broker's coordinator extension."""
        return self.c.brokers[broker].extensions[0]

    def md(self, txn_id: str) -> TransactionMetadata:
        """Return the loaded metadata of an id on its coordinator."""
        return self.tc(self.coordinator(txn_id)).describe()[txn_id]

    def send(self, txn_id: str, body: Any, timeout_ms: int = 2_000) -> Any:
        """Send a request to the coordinator of ``txn_id``."""
        return self.ask(self.coordinator(txn_id), body, timeout_ms)

    def init(self, txn_id: str, timeout_ms: int = TIMEOUT_MS) -> tuple[int, int]:
        """InitProducerId; return (producer id, epoch)."""
        resp = self.send(txn_id, InitProducerIdRequest(txn_id, timeout_ms))
        assert resp.error is ErrorCode.NONE, resp
        return resp.producer_id, resp.producer_epoch

    def add(self, txn_id: str, *tps: tuple[str, int]) -> ErrorCode:
        """AddPartitionsToTxn with the current producer id and epoch."""
        md = self.md(txn_id)
        return self.send(txn_id, AddPartitionsToTxnRequest(txn_id, md.producer_id, md.producer_epoch, tps)).error

    def end(self, txn_id: str, *, commit: bool) -> ErrorCode:
        """EndTxn with the current producer id and epoch."""
        md = self.md(txn_id)
        return self.send(txn_id, EndTxnRequest(txn_id, md.producer_id, md.producer_epoch, commit)).error

    def written(self, txn_id: str, broker: int | None = None) -> list[TxnLogValue]:
        """Return the values written for an id, read from a broker's replica of its partition."""
        b = self.coordinator(txn_id) if broker is None else broker
        log = self.c.brokers[b].replicas[(TRANSACTION_STATE_TOPIC, self.partition_of(txn_id))].log
        return [v for _o, k, v in records_of(log.batches) if k == txn_id and v is not None]

    def markers(self, tp: tuple[str, int]) -> list[tuple[str, int, int, int]]:
        """Return (COMMIT/ABORT, producer id, epoch, coordinator epoch) of the markers on a partition."""
        log = self.c.brokers[self.c.leader(*tp)].disk.get(f"log:{tp[0]}-{tp[1]}")
        return [
            (b.control_type, b.producer_id, b.producer_epoch, b.coordinator_epoch) for b in log.batches if b.is_control
        ]

    def end_and_crash(self, txn_id: str, *, commit: bool) -> int:
        """EndTxn whose coordinator crashes once PREPARE_* is logged, before any marker; return that broker."""
        md, old = self.md(txn_id), self.coordinator(txn_id)
        self.c.world.sites.force("coordinator.crash_after_prepare_logged")
        self.client.call(f"broker-{old}", EndTxnRequest(txn_id, md.producer_id, md.producer_epoch, commit))
        self.c.run_until(lambda: not self.c.brokers[old].is_up)
        return old

    def fail_over(self, txn_id: str) -> int:
        """Crash the id's coordinator; return the broker that took the partition over, once it has loaded it."""
        old, p = self.coordinator(txn_id), self.partition_of(txn_id)
        if self.c.brokers[old].is_up:
            self.c.crash(old)
        self.c.run_until(lambda: self.c.leader(TRANSACTION_STATE_TOPIC, p) not in (old, -1))
        new = self.coordinator(txn_id)
        self.c.run_until(lambda: p in self.tc(new).txns and p not in self.tc(new).loading)
        return new


def test_validate_transaction_timeout() -> None:
    """TransactionStateManagerTest.testValidateTransactionTimeout."""
    h = _Harness()
    for timeout_ms, ok in ((1, True), (-1, False), (0, False), (MAX_TIMEOUT_MS, True), (MAX_TIMEOUT_MS + 1, False)):
        resp = h.send(TXN_1, InitProducerIdRequest(TXN_1, timeout_ms))
        assert resp.error is (ErrorCode.NONE if ok else ErrorCode.INVALID_TRANSACTION_TIMEOUT), timeout_ms
        if ok:
            assert h.md(TXN_1).txn_timeout_ms == timeout_ms


def test_add_get_pids() -> None:
    """TransactionStateManagerTest.testAddGetPids."""
    h = _Harness()
    coordinator = h.coordinator(TXN_1)
    assert h.tc(coordinator).describe() == {}
    pid_1, _ = h.init(TXN_1)
    pid_2, _ = h.init(TXN_2)
    loaded = h.tc(coordinator).describe()
    assert sorted(loaded) == [TXN_1, TXN_2]
    assert (loaded[TXN_1].producer_id, loaded[TXN_2].producer_id) == (pid_1, pid_2)
    assert pid_1 != pid_2
    assert h.init(TXN_1)[0] == pid_1  # an id that exists keeps its producer id
    assert h.tc(coordinator).describe()[TXN_1] is loaded[TXN_1]


def test_delete_partition() -> None:
    """TransactionStateManagerTest.testDeletePartition."""
    h = _Harness(partitions=2)
    assert (h.partition_of("b"), h.partition_of("a")) == (0, 1)  # as in Kafka's test
    h.init("b")
    h.init("a")
    leader_0, leader_1 = h.coordinator("b"), h.coordinator("a")
    assert leader_0 != leader_1
    h.c.isolate(leader_0)  # the controller moves partition 0 away; partition 1 stays
    h.c.run_until(lambda: h.c.leader(TRANSACTION_STATE_TOPIC, 0) not in (leader_0, -1))
    h.c.heal()
    h.c.run_for(3_000)
    assert "b" not in h.tc(leader_0).describe()
    assert h.ask(leader_0, InitProducerIdRequest("b", TIMEOUT_MS)).error is ErrorCode.NOT_COORDINATOR
    assert h.coordinator("a") == leader_1
    assert h.tc(leader_1).describe()["a"].producer_epoch == 0


def test_load_and_remove_transactions_for_partition() -> None:
    """TransactionStateManagerTest.testLoadAndRemoveTransactionsForPartition."""
    h = _Harness()
    # Id two: Ongoing, PrepareAbort, CompleteAbort, then Empty at the next epoch.
    h.init(TXN_2)
    assert h.add(TXN_2, ("t", 0), ("t", 1)) is ErrorCode.NONE
    assert h.end(TXN_2, commit=False) is ErrorCode.NONE
    h.c.run_for(500)
    h.init(TXN_2)
    # Id one: Ongoing with two partitions, then two more, then PrepareCommit; the coordinator dies.
    h.init(TXN_1)
    assert h.add(TXN_1, ("t", 0)) is ErrorCode.NONE
    assert h.add(TXN_1, ("t", 1)) is ErrorCode.NONE
    old = h.end_and_crash(TXN_1, commit=True)
    new = h.fail_over(TXN_1)
    loaded = h.tc(new).describe()
    for txn_id in (TXN_1, TXN_2):
        last = h.written(txn_id, new)[-1]
        # The latest value of each id, except the last producer epoch: the log does not keep it.
        assert loaded[txn_id].current() == TxnLogValue(**{**_fields(last), "last_producer_epoch": -1})
    assert loaded[TXN_1].state is S.PREPARE_COMMIT
    assert h.written(TXN_1, new)[-1].last_producer_epoch == 0  # written under TV2, forgotten on load
    assert (loaded[TXN_2].state, loaded[TXN_2].producer_epoch) == (S.EMPTY, 2)
    # Remove: the partition moves away again and the broker forgets both ids.
    h.c.restart(old)
    h.c.run_for(5_000)
    h.c.isolate(new)
    h.c.run_until(lambda: h.c.leader(TRANSACTION_STATE_TOPIC, 0) not in (new, -1))
    h.c.heal()
    h.c.run_for(3_000)
    assert h.tc(new).describe() == {}
    assert h.ask(new, InitProducerIdRequest(TXN_1, TIMEOUT_MS)).error is ErrorCode.NOT_COORDINATOR


def _fields(value: TxnLogValue) -> dict[str, Any]:
    """Return a value's fields by name."""
    return {name: getattr(value, name) for name in TxnLogValue.__dataclass_fields__}


def test_complete_transition_when_append_succeeded() -> None:
    """TransactionStateManagerTest.testCompleteTransitionWhenAppendSucceeded."""
    h = _Harness()
    h.init(TXN_1)
    assert h.add(TXN_1, ("t", 0), ("t", 1)) is ErrorCode.NONE
    md = h.md(TXN_1)
    assert (md.state, md.partitions, md.pending_state) == (S.ONGOING, (("t", 0), ("t", 1)), None)
    assert md.current() == h.written(TXN_1)[-1]
    for follower in (b for b in h.c.brokers if b != h.coordinator(TXN_1)):
        assert h.written(TXN_1, follower)[-1] == md.current()  # completed only once replicated


def test_append_fail_to_coordinator_not_available_error() -> None:
    """TransactionStateManagerTest.testAppendFailToCoordinatorNotAvailableError (the REQUEST_TIMED_OUT case)."""
    h = _Harness(1)
    pid, epoch = h.init(TXN_1)
    before = h.md(TXN_1).current()
    coordinator = h.coordinator(TXN_1)
    for b in h.c.brokers:
        if b != coordinator:
            h.c.crash(b)  # the write can never reach the ISR
    request = AddPartitionsToTxnRequest(TXN_1, pid, epoch, (("t", 0),))
    resp = h.ask(coordinator, request, timeout_ms=20_000)
    assert resp.error is ErrorCode.COORDINATOR_NOT_AVAILABLE
    md = h.tc(coordinator).describe()[TXN_1]
    assert md.current() == before  # the transition was not applied ...
    assert md.pending_state is None  # ... and the id can transition again


def test_should_return_not_coordinator_error_if_transaction_id_partition_not_owned() -> None:
    """TransactionStateManagerTest.shouldReturnNotCoordinatorErrorIfTransactionIdPartitionNotOwned."""
    h = _Harness()
    coordinator = h.coordinator(TXN_1)
    for b in sorted(h.c.brokers):
        if b != coordinator:
            assert h.tc(b).describe() == {}
            resp = h.ask(b, InitProducerIdRequest(TXN_1, TIMEOUT_MS))
            assert resp.error is ErrorCode.NOT_COORDINATOR


def test_should_only_consider_transactions_in_the_ongoing_state_to_abort() -> None:
    """TransactionStateManagerTest.shouldOnlyConsiderTransactionsInTheOngoingStateToAbort."""
    h = _Harness(1, **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500})
    ids = {
        "ongoing": 1_000,
        "not-expiring": 10_000,
        "prepare-commit": 1_000,
        "prepare-abort": 1_000,
        "complete-commit": 1_000,
        "complete-abort": 1_000,
    }
    for txn_id, timeout_ms in ids.items():
        h.init(txn_id, timeout_ms)
        assert h.add(txn_id, ("t", 0)) is ErrorCode.NONE
    assert h.end("complete-abort", commit=False) is ErrorCode.NONE
    assert h.end("complete-commit", commit=True) is ErrorCode.NONE
    h.c.run_for(200)
    h.c.add_rule("hold", body_type="WriteTxnMarkersRequest", count=None)  # the prepared ones stay prepared
    assert h.end("prepare-commit", commit=True) is ErrorCode.NONE
    assert h.end("prepare-abort", commit=False) is ErrorCode.NONE
    epochs = {txn_id: h.md(txn_id).producer_epoch for txn_id in ids}
    h.c.run_for(2_000)
    assert h.c.world.trace.marks[TIMED_OUT] == 1
    states = {txn_id: h.md(txn_id).state for txn_id in ids}
    assert states == {
        "ongoing": S.PREPARE_ABORT,  # aborted by the coordinator (its markers are held too)
        "not-expiring": S.ONGOING,
        "prepare-commit": S.PREPARE_COMMIT,
        "prepare-abort": S.PREPARE_ABORT,
        "complete-commit": S.COMPLETE_COMMIT,
        "complete-abort": S.COMPLETE_ABORT,
    }
    bumped = {txn_id for txn_id in ids if h.md(txn_id).producer_epoch != epochs[txn_id]}
    assert bumped == {"ongoing"}


def _assert_load_completes_prepare(*, commit: bool) -> None:
    """Kafka's verifyWritesTxnMarkersInPrepareState: a PREPARE_* found on load gets its markers."""
    h = _Harness()
    pid, epoch = h.init(TXN_1)
    assert h.add(TXN_1, ("t", 0), ("t", 1)) is ErrorCode.NONE
    h.end_and_crash(TXN_1, commit=commit)
    assert h.markers(("t", 0)) == h.markers(("t", 1)) == []
    new = h.fail_over(TXN_1)
    prepare = h.written(TXN_1, new)[-1]
    assert prepare.state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
    assert h.c.world.trace.marks[LOADED_A_PREPARE] == 1
    h.c.run_for(1_000)
    marker = "COMMIT" if commit else "ABORT"
    coordinator_epoch = h.tc(new).coordinator_epoch[0]
    for tp in (("t", 0), ("t", 1)):
        assert h.markers(tp) == [(marker, pid, epoch + 1, coordinator_epoch)]
    assert h.md(TXN_1).state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)


def test_should_write_txn_markers_for_transaction_in_prepared_commit_state() -> None:
    """TransactionStateManagerTest.shouldWriteTxnMarkersForTransactionInPreparedCommitState."""
    _assert_load_completes_prepare(commit=True)


def test_should_write_txn_markers_for_transaction_in_prepared_abort_state() -> None:
    """TransactionStateManagerTest.shouldWriteTxnMarkersForTransactionInPreparedAbortState."""
    _assert_load_completes_prepare(commit=False)


def test_successful_reimmigration() -> None:
    """TransactionStateManagerTest.testSuccessfulReimmigration, and the fencing the new coordinator epoch brings."""
    h = _Harness()
    pid, _ = h.init(TXN_1)
    first = h.coordinator(TXN_1)
    assert h.tc(first).coordinator_epoch[0] == h.c.controller.partitions[(TRANSACTION_STATE_TOPIC, 0)].leader_epoch
    assert h.add(TXN_1, ("t", 0)) is ErrorCode.NONE
    assert h.end(TXN_1, commit=True) is ErrorCode.NONE
    h.c.run_for(500)
    old_epoch = h.tc(first).coordinator_epoch[0]
    assert h.markers(("t", 0))[-1][3] == old_epoch
    second = h.fail_over(TXN_1)
    new_epoch = h.tc(second).coordinator_epoch[0]
    assert new_epoch == h.c.controller.partitions[(TRANSACTION_STATE_TOPIC, 0)].leader_epoch > old_epoch
    assert h.add(TXN_1, ("t", 0)) is ErrorCode.NONE
    assert h.end(TXN_1, commit=False) is ErrorCode.NONE
    h.c.run_for(500)
    kind, _pid, epoch, coordinator_epoch = h.markers(("t", 0))[-1]
    assert (kind, coordinator_epoch) == ("ABORT", new_epoch)
    # A marker from the coordinator before the reload is fenced by the partition.
    stale = WriteTxnMarkersRequest(TXN_1, pid, epoch, old_epoch, True, "t", 0)
    assert h.ask(h.c.leader("t", 0), stale).error is ErrorCode.TRANSACTION_COORDINATOR_FENCED


@pytest.mark.parametrize("version", [1, 2])
def test_transaction_version_in_transaction_manager(version: int) -> None:
    """TransactionStateManagerTest.testTransactionVersionInTransactionManager."""
    h = _Harness(version)
    h.init(TXN_1)
    assert h.tc(h.coordinator(TXN_1)).version == version
    assert h.md(TXN_1).client_transaction_version == version
    assert h.add(TXN_1, ("t", 0)) is ErrorCode.NONE
    assert h.end(TXN_1, commit=True) is ErrorCode.NONE
    assert h.written(TXN_1)[-1].producer_epoch == (1 if version >= 2 else 0)  # only TV2 bumps on EndTxn


def test_list_transactions_filtering() -> None:
    """TransactionStateManagerTest.testListTransactionsFiltering (the duration filter ``kafka-transactions.sh`` has)."""
    h = _Harness()
    for txn_id in ("t0", "t1"):
        h.init(txn_id)
        assert h.add(txn_id, ("t", 0)) is ErrorCode.NONE
    h.c.run_for(1_000)
    h.init("t2")
    assert h.add("t2", ("t", 1)) is ErrorCode.NONE
    h.c.run_for(1_000)
    h.init("t4")
    assert h.add("t4", ("t", 1)) is ErrorCode.NONE
    assert h.end("t4", commit=True) is ErrorCode.NONE  # CompleteCommit keeps its start time
    h.c.run_for(1_000)
    admin = h.c.admin()

    def listed(duration_filter_ms: int) -> set[str]:
        return {row.transactional_id for row in admin.list_transactions(duration_filter_ms)}

    assert listed(0) == {"t0", "t1", "t2", "t4"}
    assert listed(1_500) == {"t0", "t1", "t2"}
    assert listed(2_500) == {"t0", "t1"}
    assert listed(5_000) == set()


def test_list_transactions_with_coordinator_loading_in_progress() -> None:
    """TransactionStateManagerTest.testListTransactionsWithCoordinatorLoadingInProgress."""
    h = _Harness()
    for _ in range(10):  # a longer partition takes longer to load
        h.init(TXN_1)
    old, p = h.coordinator(TXN_1), h.partition_of(TXN_1)
    h.c.crash(old)
    h.c.run_until(lambda: any(p in h.tc(b).loading for b in h.c.brokers if b != old))
    new = next(b for b in h.c.brokers if b != old and p in h.tc(b).loading)
    assert h.ask(new, ListTransactionsRequest()).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    h.c.run_until(lambda: p not in h.tc(new).loading)
    listed = h.ask(new, ListTransactionsRequest())
    assert (listed.error, [t.transactional_id for t in listed.transactions]) == (ErrorCode.NONE, [TXN_1])
