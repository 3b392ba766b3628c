"""Kafka's ``TransactionMetadataTest`` (4.x), paraphrased against ``engine/coordinator/txn_metadata.py``.

Each test is named after the Kafka test it paraphrases (camelCase to snake_case) and its docstring
names that test. As in Kafka, the metadata is built directly with the fields of Kafka's constructor
(``_metadata``), a transition is prepared with a ``prepare_*`` method and applied with
``complete(value, offset)``, and the assertions read the applied fields. Kafka's TV_0 is the
engine's transaction version 1; TV_2 is 2.

Reference: apache/kafka ``transaction-coordinator/src/test/java/org/apache/kafka/coordinator/
transaction/TransactionMetadataTest.java`` and ``TransactionMetadata.java`` / ``TransactionState.java``
at trunk ``d79bd502`` (2026-08-23, Kafka 4.2), and the Scala ``TransactionMetadataTest`` it replaced.

Differences in shape, not in outcome: the engine has no separate ``prepareFenceProducerEpoch``
(PREPARE_EPOCH_FENCE is never written): ``prepare_fence_and_abort`` stages the PREPARE_ABORT that
Kafka's fence is followed by, so the fence tests check that value. ``testFenceProducerNotAllowedIfItWouldOverflow``
follows Kafka 4.2 (KAFKA-20090, #21469: the fence at ``Short.MAX_VALUE`` keeps the epoch there
instead of refusing).

Not paraphrased: none; every test of the 4.x file has a counterpart here. (The client-side
``org.apache.kafka.clients.admin.TransactionState.parse`` half of ``testTransactionStateIdAndNameMapping``
is replaced by the display names the engine's ``kafka-transactions.sh`` prints.)
"""

from __future__ import annotations

import pytest

from engine.coordinator.txn_log import TxnLogValue
from engine.coordinator.txn_metadata import TransactionMetadata
from engine.coordinator.txn_state import MAX_PRODUCER_EPOCH, VALID_PREVIOUS_STATES, TransactionState, by_id
from engine.errors import IllegalStateError, ProducerFencedException

S = TransactionState
TXN = "txnlId"
PRODUCER_ID = 23423
NEW_PRODUCER_ID = 9893
TIMEOUT_MS = 30_000
NOW = 1_000_000  # Kafka's MockTime().milliseconds()
EXHAUSTED = MAX_PRODUCER_EPOCH - 1  # 32766
VERSIONS = pytest.mark.parametrize("version", [1, 2])


def _metadata(
    state: TransactionState,
    epoch: int,
    *,
    last_epoch: int = -1,
    prev_producer_id: int = -1,
    partitions: tuple[tuple[str, int], ...] = (),
    start_ms: int = -1,
    update_ms: int = NOW,
    version: int = 1,
) -> TransactionMetadata:
    """Build metadata with the fields Kafka's ``TransactionMetadata`` constructor takes."""
    md = TransactionMetadata(TXN, PRODUCER_ID, TIMEOUT_MS, update_ms, version)
    md.state = state
    md.producer_epoch = epoch
    md.last_producer_epoch = last_epoch
    md.prev_producer_id = prev_producer_id
    md.partitions = partitions
    md.txn_start_ms = start_ms
    return md


def _apply(md: TransactionMetadata, value: TxnLogValue) -> None:
    """Kafka's ``completeTransitionTo`` after a successful write."""
    md.complete(value, offset=len(md.history))


# -- InitProducerId: epoch bumps -----------------------------------------------------------------


def test_initialize_epoch() -> None:
    """TransactionMetadataTest.testInitializeEpoch."""
    md = _metadata(S.EMPTY, -1)
    _apply(md, md.prepare_increment_producer_epoch(TIMEOUT_MS, None, NOW))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID, 0, -1)


def test_normal_epoch_bump() -> None:
    """TransactionMetadataTest.testNormalEpochBump."""
    md = _metadata(S.EMPTY, 735)
    value = md.prepare_increment_producer_epoch(TIMEOUT_MS, None, NOW)
    assert md.pending_state is S.EMPTY
    with pytest.raises(IllegalStateError, match="pending"):  # prepareTransitionTo: one transition at a time
        md.prepare_add_partitions((("topic1", 0),), NOW)
    assert md.producer_epoch == 735  # nothing applies before the write completes
    _apply(md, value)
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID, 736, -1)
    assert md.prev_producer_id == PRODUCER_ID  # every transition records the producer id it starts from
    assert md.pending_state is None


def test_bump_epoch_not_allowed_if_epochs_exhausted() -> None:
    """TransactionMetadataTest.testBumpEpochNotAllowedIfEpochsExhausted."""
    md = _metadata(S.EMPTY, EXHAUSTED)
    assert md.is_producer_epoch_exhausted
    with pytest.raises(IllegalStateError):
        md.prepare_increment_producer_epoch(TIMEOUT_MS, None, NOW)
    assert md.pending_state is None


def test_attempted_epoch_bump_with_newly_created_metadata() -> None:
    """TransactionMetadataTest.testAttemptedEpochBumpWithNewlyCreatedMetadata."""
    md = _metadata(S.EMPTY, -1)
    _apply(md, md.prepare_increment_producer_epoch(TIMEOUT_MS, 735, NOW))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID, 0, -1)


def test_epoch_bump_with_current_epoch_provided() -> None:
    """TransactionMetadataTest.testEpochBumpWithCurrentEpochProvided."""
    md = _metadata(S.EMPTY, 735)
    _apply(md, md.prepare_increment_producer_epoch(TIMEOUT_MS, 735, NOW))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID, 736, 735)


def test_attempted_epoch_bump_with_last_epoch() -> None:
    """TransactionMetadataTest.testAttemptedEpochBumpWithLastEpoch."""
    md = _metadata(S.EMPTY, 735, last_epoch=734)
    _apply(md, md.prepare_increment_producer_epoch(TIMEOUT_MS, 734, NOW))  # a retry of a call that succeeded
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID, 735, 734)


def test_attempted_epoch_bump_with_fenced_epoch() -> None:
    """TransactionMetadataTest.testAttemptedEpochBumpWithFencedEpoch."""
    md = _metadata(S.EMPTY, 735, last_epoch=734, prev_producer_id=PRODUCER_ID)
    with pytest.raises(ProducerFencedException):
        md.prepare_increment_producer_epoch(TIMEOUT_MS, 733, NOW)
    assert md.pending_state is None


# -- TV2 aborts with nothing added (KIP-890) ---------------------------------------------------------


def _assert_empty_abort_in_v2(md: TransactionMetadata) -> None:
    """PREPARE_ABORT with ``no_partition_added``: epoch + 1, and the abort time is the start time."""
    _apply(md, md.prepare_abort_or_commit(S.PREPARE_ABORT, 2, NOW + 1, no_partition_added=True))
    assert (md.state, md.producer_id, md.producer_epoch, md.last_producer_epoch) == (
        S.PREPARE_ABORT,
        PRODUCER_ID,
        736,
        735,
    )
    assert (md.txn_start_ms, md.txn_last_update_ms) == (NOW + 1, NOW + 1)


def test_transit_from_empty_to_prepare_abort_in_v2() -> None:
    """TransactionMetadataTest.testTransitFromEmptyToPrepareAbortInV2."""
    _assert_empty_abort_in_v2(_metadata(S.EMPTY, 735, version=2))


def test_transit_from_complete_abort_to_prepare_abort_in_v2() -> None:
    """TransactionMetadataTest.testTransitFromCompleteAbortToPrepareAbortInV2."""
    _assert_empty_abort_in_v2(_metadata(S.COMPLETE_ABORT, 735, start_ms=NOW - 1, version=2))


def test_transit_from_complete_commit_to_prepare_abort_in_v2() -> None:
    """TransactionMetadataTest.testTransitFromCompleteCommitToPrepareAbortInV2."""
    _assert_empty_abort_in_v2(_metadata(S.COMPLETE_COMMIT, 735, start_ms=NOW - 1, version=2))


# -- a wall clock that steps back is tolerated ------------------------------------------------------


def test_tolerate_update_time_shift_during_epoch_bump() -> None:
    """TransactionMetadataTest.testTolerateUpdateTimeShiftDuringEpochBump."""
    md = _metadata(S.EMPTY, 1, start_ms=1)
    _apply(md, md.prepare_increment_producer_epoch(TIMEOUT_MS, 1, NOW - 1))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID, 2, 1)
    assert (md.txn_start_ms, md.txn_last_update_ms) == (-1, NOW - 1)


def test_tolerate_update_time_reset_during_producer_id_rotation() -> None:
    """TransactionMetadataTest.testTolerateUpdateTimeResetDuringProducerIdRotation."""
    md = _metadata(S.EMPTY, 1, start_ms=1)
    _apply(md, md.prepare_producer_id_rotation(PRODUCER_ID + 1, TIMEOUT_MS, NOW - 1, record_last_epoch=True))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID + 1, 0, 1)
    assert (md.txn_start_ms, md.txn_last_update_ms) == (-1, NOW - 1)


def test_tolerate_time_shift_during_add_partitions() -> None:
    """TransactionMetadataTest.testTolerateTimeShiftDuringAddPartitions."""
    md = _metadata(S.EMPTY, 1, start_ms=NOW)
    _apply(md, md.prepare_add_partitions((("topic1", 0),), NOW - 1))
    assert md.partitions == (("topic1", 0),)
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID, 1, -1)
    assert (md.txn_start_ms, md.txn_last_update_ms) == (NOW - 1, NOW - 1)  # from EMPTY, it starts now
    _apply(md, md.prepare_add_partitions((("topic2", 0),), NOW - 2))
    assert md.partitions == (("topic1", 0), ("topic2", 0))
    assert (md.txn_start_ms, md.txn_last_update_ms) == (NOW - 1, NOW - 2)  # ONGOING keeps its start


def _assert_prepare_tolerates_time_shift(target: TransactionState) -> None:
    """EndTxn at an earlier update time: the state moves on, the start time stays."""
    md = _metadata(S.ONGOING, 1, start_ms=1)
    _apply(md, md.prepare_abort_or_commit(target, 1, NOW - 1))
    assert (md.state, md.producer_id, md.producer_epoch, md.last_producer_epoch) == (target, PRODUCER_ID, 1, -1)
    assert (md.txn_start_ms, md.txn_last_update_ms) == (1, NOW - 1)


def test_tolerate_time_shift_during_prepare_commit() -> None:
    """TransactionMetadataTest.testTolerateTimeShiftDuringPrepareCommit."""
    _assert_prepare_tolerates_time_shift(S.PREPARE_COMMIT)


def test_tolerate_time_shift_during_prepare_abort() -> None:
    """TransactionMetadataTest.testTolerateTimeShiftDuringPrepareAbort."""
    _assert_prepare_tolerates_time_shift(S.PREPARE_ABORT)


def _assert_complete_tolerates_time_shift(prepared: TransactionState, done: TransactionState, version: int) -> None:
    """The markers are written at an earlier update time: the last epoch and the start time stay."""
    md = _metadata(prepared, 1, last_epoch=0, start_ms=1, version=version)
    _apply(md, md.prepare_complete(NOW - 1))
    assert (md.state, md.producer_id, md.producer_epoch, md.last_producer_epoch) == (done, PRODUCER_ID, 1, 0)
    assert (md.txn_start_ms, md.txn_last_update_ms) == (1, NOW - 1)


@VERSIONS
def test_tolerate_time_shift_during_complete_commit(version: int) -> None:
    """TransactionMetadataTest.testTolerateTimeShiftDuringCompleteCommit."""
    _assert_complete_tolerates_time_shift(S.PREPARE_COMMIT, S.COMPLETE_COMMIT, version)


@VERSIONS
def test_tolerate_time_shift_during_complete_abort(version: int) -> None:
    """TransactionMetadataTest.testTolerateTimeShiftDuringCompleteAbort."""
    _assert_complete_tolerates_time_shift(S.PREPARE_ABORT, S.COMPLETE_ABORT, version)


# -- fencing ------------------------------------------------------------------------------------------


def test_fence_producer_after_epochs_exhausted() -> None:
    """TransactionMetadataTest.testFenceProducerAfterEpochsExhausted."""
    md = _metadata(S.ONGOING, EXHAUSTED)
    assert md.is_producer_epoch_exhausted
    value = md.prepare_fence_and_abort(1, NOW)  # Kafka: PREPARE_EPOCH_FENCE in memory, then PREPARE_ABORT
    assert (value.state, value.producer_epoch, value.last_producer_epoch) == (S.PREPARE_ABORT, MAX_PRODUCER_EPOCH, -1)
    assert md.pending_state is S.PREPARE_ABORT
    _apply(md, value)
    assert (md.producer_id, md.producer_epoch) == (PRODUCER_ID, MAX_PRODUCER_EPOCH)


def _assert_fence_refused(state: TransactionState) -> None:
    """Only an ONGOING transaction can be fenced (PREPARE_EPOCH_FENCE's valid previous states)."""
    md = _metadata(state, EXHAUSTED)
    assert md.is_producer_epoch_exhausted
    with pytest.raises(IllegalStateError):
        md.prepare_fence_and_abort(1, NOW)
    assert md.pending_state is None


def test_invalid_transition_from_complete_commit_to_fence() -> None:
    """TransactionMetadataTest.testInvalidTransitionFromCompleteCommitToFence."""
    _assert_fence_refused(S.COMPLETE_COMMIT)


def test_invalid_transition_from_complete_abort_to_fence() -> None:
    """TransactionMetadataTest.testInvalidTransitionFromCompleteAbortToFence."""
    _assert_fence_refused(S.COMPLETE_ABORT)


def test_fence_producer_not_allowed_if_it_would_overflow() -> None:
    """TransactionMetadataTest.testFenceProducerNotAllowedIfItWouldOverflow (Kafka 4.2, KAFKA-20090 #21469).

    Kafka 4.0 threw here; since #21469 the fence at ``Short.MAX_VALUE`` logs an error and keeps
    the epoch, so no value past a Java short is ever staged.
    """
    md = _metadata(S.ONGOING, MAX_PRODUCER_EPOCH)
    assert md.is_producer_epoch_exhausted
    for version in (1, 2):
        value = md.prepare_fence_and_abort(version, NOW)
        assert (value.state, value.producer_epoch) == (S.PREPARE_ABORT, MAX_PRODUCER_EPOCH)
        md.abort_pending()


# -- producer id rotation and TV2 epoch bumps on EndTxn ---------------------------------------------


def test_rotate_producer_id() -> None:
    """TransactionMetadataTest.testRotateProducerId."""
    md = _metadata(S.EMPTY, EXHAUSTED)
    _apply(md, md.prepare_producer_id_rotation(NEW_PRODUCER_ID, TIMEOUT_MS, NOW, record_last_epoch=True))
    assert (md.producer_id, md.prev_producer_id) == (NEW_PRODUCER_ID, PRODUCER_ID)
    assert (md.producer_epoch, md.last_producer_epoch) == (0, EXHAUSTED)


def test_epoch_bump_on_end_txn() -> None:
    """TransactionMetadataTest.testEpochBumpOnEndTxn."""
    md = _metadata(S.ONGOING, 10, start_ms=NOW, version=2)
    _apply(md, md.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, NOW - 1))
    assert (md.producer_id, md.producer_epoch, md.client_transaction_version) == (PRODUCER_ID, 11, 2)
    _apply(md, md.prepare_complete(NOW))
    assert (md.state, md.producer_id, md.producer_epoch, md.client_transaction_version) == (
        S.COMPLETE_COMMIT,
        PRODUCER_ID,
        11,
        2,
    )


def test_epoch_bump_on_end_txn_overflow() -> None:
    """TransactionMetadataTest.testEpochBumpOnEndTxnOverflow."""
    md = _metadata(S.ONGOING, EXHAUSTED, start_ms=NOW, version=2)
    assert md.is_producer_epoch_exhausted
    _apply(md, md.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, NOW - 1, next_producer_id=NEW_PRODUCER_ID))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (PRODUCER_ID, MAX_PRODUCER_EPOCH, EXHAUSTED)
    assert (md.next_producer_id, md.client_transaction_version) == (NEW_PRODUCER_ID, 2)
    _apply(md, md.prepare_complete(NOW))
    assert (md.producer_id, md.producer_epoch, md.last_producer_epoch) == (NEW_PRODUCER_ID, 0, EXHAUSTED)
    assert (md.prev_producer_id, md.next_producer_id, md.client_transaction_version) == (PRODUCER_ID, -1, 2)


def _rotate_while(state: TransactionState, version: int) -> None:
    """Kafka's testRotateProducerIdInOngoingState helper: rotating with a transaction open."""
    md = _metadata(state, EXHAUSTED, prev_producer_id=PRODUCER_ID, version=version)
    md.prepare_producer_id_rotation(NEW_PRODUCER_ID, TIMEOUT_MS, NOW, record_last_epoch=False)


def test_rotate_producer_id_in_ongoing_state() -> None:
    """TransactionMetadataTest.testRotateProducerIdInOngoingState."""
    with pytest.raises(IllegalStateError, match="ONGOING"):
        _rotate_while(S.ONGOING, 1)


@VERSIONS
def test_rotate_producer_id_in_prepare_abort_state(version: int) -> None:
    """TransactionMetadataTest.testRotateProducerIdInPrepareAbortState."""
    with pytest.raises(IllegalStateError, match="PREPARE_ABORT"):
        _rotate_while(S.PREPARE_ABORT, version)


@VERSIONS
def test_rotate_producer_id_in_prepare_commit_state(version: int) -> None:
    """TransactionMetadataTest.testRotateProducerIdInPrepareCommitState."""
    with pytest.raises(IllegalStateError, match="PREPARE_COMMIT"):
        _rotate_while(S.PREPARE_COMMIT, version)


# -- the states -----------------------------------------------------------------------------------------


def test_transaction_state_id_and_name_mapping() -> None:
    """TransactionMetadataTest.testTransactionStateIdAndNameMapping."""
    names = {
        S.EMPTY: (0, "Empty"),
        S.ONGOING: (1, "Ongoing"),
        S.PREPARE_COMMIT: (2, "PrepareCommit"),
        S.PREPARE_ABORT: (3, "PrepareAbort"),
        S.COMPLETE_COMMIT: (4, "CompleteCommit"),
        S.COMPLETE_ABORT: (5, "CompleteAbort"),
        S.DEAD: (6, "Dead"),
        S.PREPARE_EPOCH_FENCE: (7, "PrepareEpochFence"),
    }
    for state in TransactionState:
        assert by_id(state.id) is state
        assert (state.id, state.display_name) == names[state]
    with pytest.raises(ValueError, match="no transaction state has id 8"):
        by_id(8)


def test_all_transaction_states_are_mapped() -> None:
    """TransactionMetadataTest.testAllTransactionStatesAreMapped, with Kafka's table of valid previous states."""
    assert set(TransactionState) == {
        S.EMPTY,
        S.ONGOING,
        S.PREPARE_COMMIT,
        S.PREPARE_ABORT,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
        S.DEAD,
        S.PREPARE_EPOCH_FENCE,
    }
    # TransactionState.java's static block (PREPARE_ABORT from EMPTY/COMPLETE_*: the TV2 abort).
    kafka = {
        S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.PREPARE_COMMIT: {S.ONGOING},
        S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
        S.COMPLETE_ABORT: {S.PREPARE_ABORT},
        S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
        S.PREPARE_EPOCH_FENCE: {S.ONGOING},
    }
    assert kafka == VALID_PREVIOUS_STATES
    # The table is what prepareTransitionTo enforces: PREPARE_COMMIT only from ONGOING.
    for state in TransactionState:
        md = _metadata(state, 1)
        if state in VALID_PREVIOUS_STATES[S.PREPARE_COMMIT]:
            assert md.prepare_abort_or_commit(S.PREPARE_COMMIT, 1, NOW).state is S.PREPARE_COMMIT
        else:
            with pytest.raises(IllegalStateError, match="cannot go from"):
                md.prepare_abort_or_commit(S.PREPARE_COMMIT, 1, NOW)
