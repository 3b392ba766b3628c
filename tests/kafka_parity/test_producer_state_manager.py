"""Kafka's ``ProducerStateManagerTest``, paraphrased against the engine's producer state.

Each test carries the snake_case name of the Kafka test it paraphrases (Kafka trunk of October 2024,
``storage/src/test/java/org/apache/kafka/storage/internals/log/ProducerStateManagerTest.java``),
so the two files can be read side by side. They drive the engine's real
:class:`~engine.log.producer_state.ProducerStateManager`; the few that are about snapshot
files drive a :class:`~engine.broker.replica.Replica`, which owns the snapshots in the engine.
Kafka's ``appendEndTxnMarker`` returns an empty ``Optional`` for a marker without an open
transaction, and the engine's ``append_end_txn_marker`` returns None there: the helpers
complete a transaction only when one is returned, as Kafka's helper does.

Empty transactions (issue point 6a: a marker with no open transaction completes nothing): see
``test_append_txn_marker_with_no_producer_state``, ``test_recover_from_snapshot_empty_transaction``
and ``test_skip_empty_transactions``.

Kafka tests not paraphrased here, and why:

- ``testProducerSequenceWrapAround``, ``testProducerSequenceWithWrapAroundBatchRecord``,
  ``testProducerSequenceInvalidWrapAround``: sequences do not wrap at 2^31 - 1 in the engine.
- ``testTxnFirstOffsetMetadataCached``: no segment positions (``LogOffsetMetadata``) are kept.
- ``testHasLateTransaction``, ``testHasLateTransactionInitializedAfterReload``,
  ``testHasLateTransactionUpdatedAfterPartialTruncation``,
  ``testHasLateTransactionUpdatedAfterFullTruncation``: late-transaction detection is not modelled.
- ``testFetchSnapshotEmptySnapShot``: fetching snapshot files (tiered storage) is not modelled.
- ``testRemoveExpiredPidsOnReload``: the engine does not expire producers while loading a
  snapshot (only the broker's periodic check expires them); reported as a difference.
- ``testDeleteSnapshotsBefore``, ``testTruncateFullyAndStartAt``: no log start offset moves (no
  retention, no DeleteRecords, no full truncation), so snapshots are never deleted from below.
- ``testReloadSnapshots``, ``testLoadFromEmptySnapshotFile``, ``testLoadFromTruncatedSnapshotFile``,
  ``testLoadFromCorruptSnapshotFile``, ``testRemoveStraySnapshotsKeepCleanShutdownSnapshot``,
  ``testRemoveAllStraySnapshots``, ``testRemoveAndMarkSnapshotForDeletion``,
  ``testRemoveAndMarkSnapshotForDeletionAlreadyDeleted``: snapshot files, bytes and CRCs are not
  modelled (a snapshot is an object in a durable list).
- ``testSkipSnapshotIfOffsetUnchanged``: the engine writes a snapshot on every request, even at
  an unchanged offset; reported as a difference.
- ``testPidExpirationTimeout``: after expiry the engine answers UNKNOWN_PRODUCER_ID to a
  non-zero sequence (the pre-KIP-360 rule it models) where Kafka accepts; reported as a difference.
- ``testAppendEmptyControlBatch``: there is no compaction, so a control batch always holds its
  one marker record; an emptied control batch cannot occur.
- ``testEntryForVerification``, ``testSequenceAndEpochInVerificationEntry``,
  ``testThrowOutOfOrderSequenceWithVerificationSequenceCheck``,
  ``testVerificationStateEntryExpiration``: verification state entries are not part of the log
  layer (the engine's transaction-verification step lives in the coordinator).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine.broker.replica import Replica
from engine.errors import ErrorCode
from engine.log.producer_state import (
    AppendOrigin,
    BatchMetadata,
    CompletedTxn,
    LogValidationError,
    ProducerStateEntry,
    ProducerStateManager,
)
from engine.log.records import ABORT, COMMIT, NO_SEQUENCE, RecordBatch
from engine.log.txn_index import AbortedTxn
from engine.protocol import PartitionState
from engine.sim.disk import Disk

PID = 1
EPOCH = 0


# -- helpers (Kafka's appendClientEntry, appendReplicationEntry, appendEndTxnMarker) ----------------------------


def data_batch(pid: int, epoch: int, seq: int, n: int = 1, *, txn: bool = False, ts: int = 0) -> RecordBatch:
    """Return a data batch of ``n`` records with sequences ``seq .. seq + n - 1``."""
    return RecordBatch(
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
        create_time=ts,
        keys=(None,) * n,
        values=(b"v",) * n,
    )


def marker_batch(pid: int, epoch: int, kind: str, *, coordinator_epoch: int = 0, ts: int = 0) -> RecordBatch:
    """Return an end-transaction marker batch."""
    return RecordBatch.control(
        kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=coordinator_epoch, create_time=ts
    )


def append_entry(
    m: ProducerStateManager,
    pid: int,
    epoch: int,
    seq: int,
    offset: int,
    *,
    n: int = 1,
    txn: bool = False,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    ts: int = 0,
) -> None:
    """Validate and apply one data batch at ``offset`` (raises LogValidationError, changing nothing)."""
    info = m.prepare_update(pid, origin)
    info.append_data_batch(data_batch(pid, epoch, seq, n, txn=txn, ts=ts), offset)
    m.update(info)


def append_end_txn_marker(
    m: ProducerStateManager,
    pid: int,
    epoch: int,
    kind: str,
    offset: int,
    *,
    coordinator_epoch: int = 0,
    ts: int = 0,
    hw: int = 0,
) -> CompletedTxn | None:
    """Validate and apply a marker from the coordinator; complete the transaction it ends, if any."""
    info = m.prepare_update(pid, AppendOrigin.COORDINATOR)
    done = info.append_end_txn_marker(
        marker_batch(pid, epoch, kind, coordinator_epoch=coordinator_epoch, ts=ts), offset
    )
    m.update(info)
    if done is not None:
        m.complete_txn(done, hw)
    return done


def expect_error(code: ErrorCode, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> LogValidationError:
    """Call ``fn`` and return the LogValidationError it must raise with ``code``."""
    with pytest.raises(LogValidationError) as exc:
        fn(*args, **kwargs)
    assert exc.value.code is code, exc.value.message
    return exc.value


def first_seq(e: ProducerStateEntry) -> int:
    """Return Kafka's ``firstSeq``: the first sequence of the oldest cached batch, or -1."""
    return e.batches[0].first_seq if e.batches else NO_SEQUENCE


def first_data_offset(e: ProducerStateEntry) -> int:
    """Return Kafka's ``firstDataOffset``: the first offset of the oldest cached batch, or -1."""
    return e.batches[0].first_offset if e.batches else -1


def leader_replica(disk: Disk | None = None) -> Replica:
    """Return partition t-0 led by broker 1 alone (its own ISR), on ``disk``."""
    r = Replica("t", 0, 1, disk or Disk("broker-1"), segment_bytes=1 << 20)
    r.become_leader(PartitionState("t", 0, 1, 0, (1,), (1,)), now_ms=0)
    return r


# -- tests ----------------------------------------------------------------------------------------------------------


def test_basic_id_mapping() -> None:
    """Kafka: ProducerStateManagerTest.testBasicIdMapping."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0)
    append_entry(m, PID, EPOCH, 1, 1)
    # a duplicate is found by find_duplicate before validation; validated again, it is out of order
    assert m.find_duplicate(data_batch(PID, EPOCH, 1)) is not None
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append_entry, m, PID, EPOCH, 1, 2)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append_entry, m, PID, EPOCH, 5, 2)
    append_entry(m, PID, EPOCH + 1, 0, 3)
    assert m.producers[PID].producer_epoch == EPOCH + 1
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, append_entry, m, PID, EPOCH, 0, 4)


def test_append_txn_marker_with_no_producer_state() -> None:
    """Kafka: ProducerStateManagerTest.testAppendTxnMarkerWithNoProducerState."""
    m = ProducerStateManager("t-0")
    epoch = 2
    done = append_end_txn_marker(m, PID, epoch, COMMIT, 27)
    # 6a: no transaction was open, so the marker completes none and nothing becomes unstable
    assert done is None
    assert m.first_undecided_offset() is None
    assert m.first_unstable_offset() is None
    entry = m.producers[PID]
    assert (entry.producer_id, entry.producer_epoch, entry.last_seq) == (PID, epoch, NO_SEQUENCE)
    # the marker alone still fences older epochs and resets the sequence
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, append_entry, m, PID, 0, 0, 28)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append_entry, m, PID, epoch, 17, 28)
    append_entry(m, PID, epoch, 0, 28, ts=39)
    entry = m.producers[PID]
    assert (entry.producer_epoch, entry.last_seq) == (epoch, 0)


def test_no_validation_on_first_entry_when_loading_log() -> None:
    """Kafka: ProducerStateManagerTest.testNoValidationOnFirstEntryWhenLoadingLog."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, 5, 16, 735, origin=AppendOrigin.REPLICATION)
    entry = m.producers[PID]
    assert entry.producer_epoch == 5
    assert (first_seq(entry), entry.last_seq) == (16, 16)
    assert (first_data_offset(entry), entry.last_offset) == (735, 735)


def test_control_record_bumps_producer_epoch() -> None:
    """Kafka: ProducerStateManagerTest.testControlRecordBumpsProducerEpoch."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0)
    append_end_txn_marker(m, PID, 1, ABORT, 1)
    entry = m.producers[PID]
    assert entry.producer_epoch == 1
    assert entry.current_txn_first_offset is None
    assert (first_seq(entry), entry.last_seq) == (NO_SEQUENCE, NO_SEQUENCE)
    append_entry(m, PID, 1, 0, 2)
    assert first_seq(m.producers[PID]) == 0


def test_prepare_update_does_not_mutate() -> None:
    """Kafka: ProducerStateManagerTest.testPrepareUpdateDoesNotMutate."""
    m = ProducerStateManager("t-0")
    info = m.prepare_update(PID, AppendOrigin.CLIENT)
    info.append_data_batch(data_batch(PID, EPOCH, 0, 6), 15)
    assert PID not in m.producers
    m.update(info)
    nxt = m.prepare_update(PID, AppendOrigin.CLIENT)
    nxt.append_data_batch(data_batch(PID, EPOCH, 6, 5), 26)
    entry = m.producers[PID]
    assert (first_seq(entry), entry.last_seq, entry.last_offset) == (0, 5, 20)
    m.update(nxt)
    entry = m.producers[PID]
    assert (first_seq(entry), entry.last_seq, entry.last_offset) == (0, 10, 30)


def test_update_producer_transaction_state() -> None:
    """Kafka: ProducerStateManagerTest.updateProducerTransactionState."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 9)
    info = m.prepare_update(PID, AppendOrigin.CLIENT)
    info.append_data_batch(data_batch(PID, EPOCH, 1, 5, txn=True), 16)
    staged = info.updated
    assert (staged.batches[-1].first_seq, staged.last_seq) == (1, 5)
    assert (staged.batches[-1].first_offset, staged.last_offset) == (16, 20)
    assert staged.current_txn_first_offset == 16
    info.append_data_batch(data_batch(PID, EPOCH, 6, 5, txn=True), 26)
    assert (staged.last_seq, staged.last_offset, staged.current_txn_first_offset) == (10, 30, 16)
    assert info.started_txn_offsets == [16]
    done = info.append_end_txn_marker(marker_batch(PID, EPOCH, COMMIT, coordinator_epoch=15), 40)
    assert done == CompletedTxn(PID, 16, 40, False)
    # the marker does not touch the cached batches, it only closes the transaction
    assert (staged.last_seq, staged.last_offset) == (10, 30)
    assert [b.first_offset for b in staged.batches] == [9, 16, 26]
    assert staged.current_txn_first_offset is None
    assert staged.coordinator_epoch == 15


def test_out_of_sequence_after_control_record_epoch_bump() -> None:
    """Kafka: ProducerStateManagerTest.testOutOfSequenceAfterControlRecordEpochBump."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0, txn=True)
    append_entry(m, PID, EPOCH, 1, 1, txn=True)
    bumped = 1
    append_end_txn_marker(m, PID, bumped, ABORT, 2)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append_entry, m, PID, bumped, 2, 3, txn=True)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append_entry, m, PID, bumped + 1, 2, 3, txn=True)
    append_entry(m, PID, bumped, 0, 3, txn=True)
    entry = m.producers[PID]
    assert (entry.producer_epoch, entry.last_seq) == (bumped, 0)


def test_non_transactional_append_with_ongoing_transaction() -> None:
    """Kafka: ProducerStateManagerTest.testNonTransactionalAppendWithOngoingTransaction."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0, txn=True)
    expect_error(ErrorCode.INVALID_TXN_STATE, append_entry, m, PID, EPOCH, 1, 1)
    assert m.producers[PID].last_seq == 0


def test_truncate_and_reload_removes_out_of_range_snapshots() -> None:
    """Kafka: ProducerStateManagerTest.testTruncateAndReloadRemovesOutOfRangeSnapshots."""
    r = leader_replica()
    for seq in range(5):
        r.append_as_leader(data_batch(PID, EPOCH, seq), AppendOrigin.CLIENT)
        r.take_snapshot()
    assert [s.offset for s in r.snapshots.items] == [1, 2, 3, 4, 5]
    r.truncate_to(3)
    # Kafka also drops snapshots at or below the log start offset; the engine's never moves from 0
    assert [s.offset for s in r.snapshots.items] == [1, 2, 3]
    assert r.producers.producers[PID].last_seq == 2


def test_take_snapshot() -> None:
    """Kafka: ProducerStateManagerTest.testTakeSnapshot."""
    r = leader_replica()
    r.append_as_leader(data_batch(PID, EPOCH, 0, ts=0), AppendOrigin.CLIENT)
    r.append_as_leader(data_batch(PID, EPOCH, 1, ts=1), AppendOrigin.CLIENT)
    snap = r.take_snapshot()
    assert r.snapshots.items == [snap]
    assert snap.offset == 2
    (entry,) = snap.entries
    assert (entry.producer_id, entry.producer_epoch, entry.last_sequence, entry.last_offset) == (PID, EPOCH, 1, 1)


def test_recover_from_snapshot_unfinished_transaction() -> None:
    """Kafka: ProducerStateManagerTest.testRecoverFromSnapshotUnfinishedTransaction."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0, txn=True)
    append_entry(m, PID, EPOCH, 1, 1, txn=True)
    recovered = ProducerStateManager("t-0")
    recovered.load_snapshot(m.snapshot(2))
    entry = recovered.producers[PID]
    # only the last batch survives a snapshot
    assert (first_data_offset(entry), first_seq(entry), entry.last_offset, entry.last_seq) == (1, 1, 1, 1)
    assert entry.current_txn_first_offset == 0
    assert recovered.first_undecided_offset() == 0
    append_entry(recovered, PID, EPOCH, 2, 2, txn=True)
    assert recovered.producers[PID].last_seq == 2


def test_recover_from_snapshot_finished_transaction() -> None:
    """Kafka: ProducerStateManagerTest.testRecoverFromSnapshotFinishedTransaction."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0, txn=True)
    append_entry(m, PID, EPOCH, 1, 1, txn=True)
    append_end_txn_marker(m, PID, EPOCH, ABORT, 2)
    recovered = ProducerStateManager("t-0")
    recovered.load_snapshot(m.snapshot(3))
    entry = recovered.producers[PID]
    assert (first_data_offset(entry), first_seq(entry), entry.last_offset, entry.last_seq) == (1, 1, 1, 1)
    assert entry.current_txn_first_offset is None
    assert recovered.first_undecided_offset() is None


def test_recover_from_snapshot_empty_transaction() -> None:
    """Kafka: ProducerStateManagerTest.testRecoverFromSnapshotEmptyTransaction."""
    m = ProducerStateManager("t-0")
    ts = 1_234
    done = append_end_txn_marker(m, PID, EPOCH, ABORT, 0, ts=ts)
    # 6a: an ABORT with no data before it is an empty transaction: nothing completes, nothing is unstable
    assert done is None
    assert m.first_unstable_offset() is None
    recovered = ProducerStateManager("t-0")
    recovered.load_snapshot(m.snapshot(1))
    entry = recovered.producers[PID]
    assert entry.last_timestamp == ts
    assert entry.current_txn_first_offset is None
    assert recovered.first_unstable_offset() is None


def test_producer_state_after_fencing_abort_marker() -> None:
    """Kafka: ProducerStateManagerTest.testProducerStateAfterFencingAbortMarker."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0, txn=True, ts=100)
    done = append_end_txn_marker(m, PID, EPOCH + 1, ABORT, 1, ts=100)
    assert done == CompletedTxn(PID, 0, 1, True)
    entry = m.producers[PID]
    assert entry.current_txn_first_offset is None
    assert (entry.last_offset, first_data_offset(entry)) == (-1, -1)
    # the entry is kept so that its epoch keeps fencing
    assert m.expire(cutoff_ms=100) == []
    assert PID in m.producers
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, append_entry, m, PID, EPOCH, 1, 2, txn=True)


def test_accept_append_without_producer_state_on_replica() -> None:
    """Kafka: ProducerStateManagerTest.testAcceptAppendWithoutProducerStateOnReplica."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0, ts=0)
    append_entry(m, PID, EPOCH, 1, 1, ts=1)
    assert m.expire(cutoff_ms=70_000) == [PID]
    assert PID not in m.producers
    # a follower copies what the leader accepted, even a sequence it cannot check
    append_entry(m, PID, EPOCH, 2, 2, origin=AppendOrigin.REPLICATION, ts=70_001)
    entry = m.producers[PID]
    assert (entry.producer_epoch, first_seq(entry), entry.last_seq) == (EPOCH, 2, 2)


def test_accept_append_with_sequence_gaps_on_replica() -> None:
    """Kafka: ProducerStateManagerTest.testAcceptAppendWithSequenceGapsOnReplica."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 0)
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append_entry, m, PID, EPOCH, 3, 1)
    assert m.producers[PID].last_seq == 0
    append_entry(m, PID, EPOCH, 3, 1, origin=AppendOrigin.REPLICATION)
    assert m.producers[PID].last_seq == 3


def test_first_unstable_offset_after_truncation() -> None:
    """Kafka: ProducerStateManagerTest.testFirstUnstableOffsetAfterTruncation."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 99, txn=True)
    assert m.first_unstable_offset() == 99
    at_100 = m.snapshot(100)
    append_end_txn_marker(m, PID, EPOCH, COMMIT, 105, hw=100)
    m.on_high_watermark(106)
    assert m.first_unstable_offset() is None
    at_106 = m.snapshot(106)
    append_entry(m, PID, EPOCH, 1, 106)
    # truncating to 106 reloads the snapshot taken there, after the commit
    m.load_snapshot(at_106)
    assert m.first_unstable_offset() is None
    # truncating to 100 reloads the older snapshot, with the transaction still open
    m.load_snapshot(at_100)
    assert m.first_unstable_offset() == 99


def test_load_from_snapshot_retains_non_expired_producers() -> None:
    """Kafka: ProducerStateManagerTest.testLoadFromSnapshotRetainsNonExpiredProducers."""
    m = ProducerStateManager("t-0")
    append_entry(m, 1, EPOCH, 0, 0)
    append_entry(m, 2, EPOCH, 0, 1)
    snap = m.snapshot(2)
    assert len(m.producers) == 2
    m.load_snapshot(snap)
    assert sorted(m.producers) == [1, 2]
    assert (m.producers[1].last_seq, m.producers[1].last_offset) == (0, 0)
    assert (m.producers[2].last_seq, m.producers[2].last_offset) == (0, 1)


def test_first_unstable_offset() -> None:
    """Kafka: ProducerStateManagerTest.testFirstUnstableOffset."""
    m = ProducerStateManager("t-0")
    epoch = 5
    other = 2
    assert m.first_undecided_offset() is None
    append_entry(m, PID, epoch, 0, 99, txn=True)
    assert (m.first_undecided_offset(), m.first_unstable_offset()) == (99, 99)
    append_entry(m, other, epoch, 0, 105, txn=True)
    assert (m.first_undecided_offset(), m.first_unstable_offset()) == (99, 99)
    append_end_txn_marker(m, PID, epoch, COMMIT, 109)
    # decided, but its marker is not replicated yet: still unstable
    assert (m.first_undecided_offset(), m.first_unstable_offset()) == (105, 99)
    m.on_high_watermark(100)
    assert m.first_unstable_offset() == 99
    m.on_high_watermark(110)
    assert m.first_unstable_offset() == 105
    append_end_txn_marker(m, other, epoch, ABORT, 112, hw=110)
    assert (m.first_undecided_offset(), m.first_unstable_offset()) == (None, 105)
    m.on_high_watermark(113)
    assert m.first_unstable_offset() is None


def test_producers_with_ongoing_transactions_dont_expire() -> None:
    """Kafka: ProducerStateManagerTest.testProducersWithOngoingTransactionsDontExpire."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, 5, 0, 99, txn=True, ts=0)
    assert m.first_undecided_offset() == 99
    assert m.expire(cutoff_ms=86_400_001) == []
    assert PID in m.producers
    assert m.first_undecided_offset() == 99


def test_sequence_not_validated_for_group_metadata_topic() -> None:
    """Kafka: ProducerStateManagerTest.testSequenceNotValidatedForGroupMetadataTopic."""
    m = ProducerStateManager("__consumer_offsets-0")
    append_entry(m, PID, EPOCH, NO_SEQUENCE, 99, txn=True, origin=AppendOrigin.COORDINATOR)
    append_entry(m, PID, EPOCH, NO_SEQUENCE, 100, txn=True, origin=AppendOrigin.COORDINATOR)
    entry = m.producers[PID]
    assert entry.last_offset == 100
    assert entry.current_txn_first_offset == 99


def test_old_epoch_for_control_record() -> None:
    """Kafka: ProducerStateManagerTest.testOldEpochForControlRecord."""
    m = ProducerStateManager("t-0")
    assert m.first_undecided_offset() is None
    append_entry(m, PID, 5, 0, 99, txn=True)
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, append_end_txn_marker, m, PID, 3, COMMIT, 100)
    assert m.first_undecided_offset() == 99


def test_coordinator_fencing() -> None:
    """Kafka: ProducerStateManagerTest.testCoordinatorFencing."""
    m = ProducerStateManager("t-0")
    epoch = 5
    append_entry(m, PID, epoch, 0, 99, txn=True)
    append_end_txn_marker(m, PID, epoch, COMMIT, 100, coordinator_epoch=1)
    assert m.producers[PID].coordinator_epoch == 1
    append_end_txn_marker(m, PID, epoch, COMMIT, 101, coordinator_epoch=1)
    append_end_txn_marker(m, PID, epoch, COMMIT, 102, coordinator_epoch=2)
    assert m.producers[PID].coordinator_epoch == 2
    expect_error(
        ErrorCode.TRANSACTION_COORDINATOR_FENCED, append_end_txn_marker, m, PID, epoch, COMMIT, 103, coordinator_epoch=1
    )


def test_coordinator_fenced_after_reload() -> None:
    """Kafka: ProducerStateManagerTest.testCoordinatorFencedAfterReload."""
    m = ProducerStateManager("t-0")
    append_entry(m, PID, EPOCH, 0, 99, txn=True)
    append_end_txn_marker(m, PID, EPOCH, COMMIT, 100, coordinator_epoch=1)
    recovered = ProducerStateManager("t-0")
    recovered.load_snapshot(m.snapshot(101))
    assert recovered.producers[PID].coordinator_epoch == 1
    expect_error(
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        append_end_txn_marker,
        recovered,
        PID,
        EPOCH,
        COMMIT,
        101,
        coordinator_epoch=0,
    )


def test_last_stable_offset_completed_txn() -> None:
    """Kafka: ProducerStateManagerTest.testLastStableOffsetCompletedTxn."""
    # Kafka asks lastStableOffset(completedTxn) directly; the engine writes that value into the
    # aborted index, so the transactions are aborted here and the entries read back.
    r = leader_replica()
    p1, p2, p3 = PID, PID + 1, PID + 2
    for p in (p1, p2, p3):
        r.append_as_leader(data_batch(p, EPOCH, 0, txn=True), AppendOrigin.CLIENT)  # offsets 0, 1, 2

    def abort(pid: int) -> AbortedTxn:
        offset = r.append_as_leader(marker_batch(pid, EPOCH, ABORT), AppendOrigin.COORDINATOR)[0]
        r.set_high_watermark(offset + 1)
        return r.txn_index.entries[-1]

    assert abort(p1) == AbortedTxn(p1, 0, 3, 1)  # p2's transaction is the next one still open
    assert r.producers.first_unstable_offset() == 1
    assert abort(p3) == AbortedTxn(p3, 2, 4, 1)
    assert r.producers.first_unstable_offset() == 1
    assert abort(p2) == AbortedTxn(p2, 1, 5, 6)  # none open: just past the marker
    assert r.producers.first_unstable_offset() is None
    assert r.last_stable_offset == r.high_watermark == 6


def test_skip_empty_transactions() -> None:
    """Kafka: ProducerStateManagerTest.testSkipEmptyTransactions."""
    m = ProducerStateManager("t-0")
    seq = 0

    def data(info: Any, first: int, last: int) -> None:
        nonlocal seq
        n = last - first + 1
        info.append_data_batch(data_batch(PID, EPOCH, seq, n, txn=True), first)
        seq += n

    def end(info: Any, kind: str, offset: int) -> CompletedTxn | None:
        return info.append_end_txn_marker(marker_batch(PID, EPOCH, kind, coordinator_epoch=27), offset)

    first = m.prepare_update(PID, AppendOrigin.CLIENT)
    data(first, 16, 20)
    assert first.started_txn_offsets == [16]
    m.update(first)
    m.on_high_watermark(21)
    assert m.first_unstable_offset() == 16

    # one staged update: ends the open transaction, then empty ones, one full one, and opens another
    second = m.prepare_update(PID, AppendOrigin.CLIENT)
    committed = end(second, COMMIT, 21)
    assert committed == CompletedTxn(PID, 16, 21, False)
    assert end(second, COMMIT, 22) is None
    assert end(second, ABORT, 23) is None
    data(second, 24, 27)
    aborted = end(second, ABORT, 28)
    assert aborted == CompletedTxn(PID, 24, 28, True)
    assert end(second, ABORT, 29) is None
    data(second, 30, 31)
    assert second.started_txn_offsets == [24, 30]
    assert second.completed_txns == [committed, aborted]
    m.update(second)
    m.complete_txn(committed, 21)
    m.complete_txn(aborted, 21)
    m.on_high_watermark(32)
    assert m.first_unstable_offset() == 30


def test_read_write_snapshot() -> None:
    """Kafka: ProducerStateManagerTest.testReadWriteSnapshot."""
    m = ProducerStateManager("t-0")
    m.producers[1] = ProducerStateEntry(
        1, 2, [BatchMetadata(0, 1, 2, -1)], coordinator_epoch=3, last_timestamp=-1, current_txn_first_offset=1
    )
    m.producers[11] = ProducerStateEntry(11, 12, [], coordinator_epoch=13, last_timestamp=123_456)
    loaded = ProducerStateManager("t-0")
    loaded.load_snapshot(m.snapshot(3))
    assert sorted(loaded.producers) == [1, 11]
    for pid in (1, 11):
        want, got = m.producers[pid], loaded.producers[pid]
        assert (got.producer_id, got.producer_epoch, got.coordinator_epoch) == (
            want.producer_id,
            want.producer_epoch,
            want.coordinator_epoch,
        )
        assert (got.last_timestamp, got.current_txn_first_offset, got.batches) == (
            want.last_timestamp,
            want.current_txn_first_offset,
            want.batches,
        )
    assert loaded.ongoing_txns == {1: 1}
    assert loaded.last_map_offset == 3
