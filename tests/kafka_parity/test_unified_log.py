"""The producer-state and transaction parts of Kafka's ``UnifiedLogTest``, paraphrased.

Each test carries the snake_case name of the Kafka test it paraphrases (Kafka trunk of October 2024,
``core/src/test/scala/unit/kafka/log/UnifiedLogTest.scala``), so the two files can be read side
by side. Kafka's ``UnifiedLog`` is the engine's :class:`~engine.broker.replica.Replica` (log,
producer state, aborted-transaction index, snapshots, high watermark); the tests drive real
replicas on a simulated disk. "Close and reopen the log" is a new ``Replica`` on the same
:class:`~engine.sim.disk.Disk` (a broker restart), and a read_committed read is bounded by the
LSO exactly as the broker bounds a fetch (``Broker.fetch_upper_bound``).

Empty transactions (issue point 6a: a marker with no open transaction adds no aborted-index
entry and does not affect the LSO): see ``test_zombie_coordinator_fenced_empty_transaction`` and
``test_end_txn_with_fenced_producer_epoch``.

Kafka tests about producers and transactions not paraphrased here, and why:

- ``testTruncateFullyAndStartBelowFirstUnstableOffset``, ``testTruncateFullyAndStart``,
  ``testProducerIdMapTruncateFullyAndStartAt``: there is no full truncation to a new start offset.
- ``testRebuildProducerIdMapWithCompactedData``, ``testRebuildProducerStateWithEmptyCompactedBatch``,
  ``testUpdateProducerIdMapWithCompactedData``, ``testCompactionDeletesProducerStateSnapshots``:
  compaction is not modelled.
- ``testRetentionDeletesProducerStateSnapshots``, ``testRetentionIdempotency``,
  ``testLogStartOffsetMovementDeletesSnapshots``, ``testDeleteSnapshotsOnIncrementLogStartOffset``,
  ``testProducerIdExpirationOnSegmentDeletion``,
  ``testLastStableOffsetDoesNotExceedLogStartOffsetMidSegment``,
  ``testLastStableOffsetDoesNotExceedLogStartOffsetAfterSegmentDeletion``: retention,
  DeleteRecords and log start offset moves are not modelled.
- ``testInitializationOfProducerSnapshotsUpgradePath``: no message format versions.
- ``testLoadingLogDeletesProducerStateSnapshotsPastLogEndOffset``: the engine ignores a snapshot
  past the log end on load but does not delete it; reported as a difference.
- ``testTakeSnapshotOnRollAndDeleteSnapshotOnRecoveryPointCheckpoint``: no explicit roll, no
  recovery point.
- ``testProducerExpireCheckAfterDelete``, ``testPeriodicProducerIdExpiration``: the periodic
  expiry task belongs to the broker in the engine, not to the log.
- ``testAppendToTransactionIndexFailure``: disk I/O errors are not modelled.
- ``testOffsetSnapshot``: no segment positions (``LogOffsetMetadata``).
- ``testTransactionIsOngoingAndVerificationGuard``, ``testEmptyTransactionStillClearsVerificationGuard``,
  ``testDisabledVerificationClearsVerificationGuard``, ``testEnablingVerificationWhenRequestIsAtLogLayer``,
  ``testAllowNonZeroSequenceOnFirstAppendNonZeroEpoch``: verification guards are not part of the
  log layer in the engine (the last one also meets the engine's pre-KIP-360 UNKNOWN_PRODUCER_ID
  rule for an unknown producer; reported as a difference).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine.broker.replica import Replica
from engine.errors import ErrorCode
from engine.log.producer_state import AppendOrigin, LogValidationError
from engine.log.records import ABORT, COMMIT, NO_PRODUCER_ID, RecordBatch
from engine.log.txn_index import AbortedTxn
from engine.protocol import PartitionState
from engine.sim.disk import Disk

SEGMENT_BYTES = 1 << 20


# -- helpers (Kafka's LogTestUtils) --------------------------------------------------------------------------------


def batch(pid: int = NO_PRODUCER_ID, epoch: int = -1, seq: int = -1, n: int = 1, *, txn: bool = False) -> RecordBatch:
    """Return a data batch of ``n`` records (no producer id: a plain, non-idempotent batch)."""
    return RecordBatch(
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
        keys=(None,) * n,
        values=tuple(f"v{i}".encode() for i in range(n)),
    )


def marker(pid: int, epoch: int, kind: str, coordinator_epoch: int = 0) -> RecordBatch:
    """Return an end-transaction marker batch."""
    return RecordBatch.control(
        kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=coordinator_epoch, create_time=0
    )


def create_log(disk: Disk | None = None, *, segment_bytes: int = SEGMENT_BYTES) -> Replica:
    """Return partition t-0 on broker 1, leading alone (its own ISR), on a new disk or on ``disk``."""
    r = Replica("t", 0, 1, disk or Disk("broker-1"), segment_bytes=segment_bytes)
    r.become_leader(PartitionState("t", 0, 1, 0, (1,), (1,)), now_ms=0)
    return r


def reopen(disk: Disk, *, segment_bytes: int = SEGMENT_BYTES) -> Replica:
    """Restart broker 1: a new replica on the same disk rebuilds its volatile state from the durable files."""
    return create_log(disk, segment_bytes=segment_bytes)


def append(r: Replica, b: RecordBatch, origin: AppendOrigin = AppendOrigin.CLIENT) -> int:
    """Append as leader; return the base offset."""
    return r.append_as_leader(b, origin)[0]


def transactional_appender(r: Replica, pid: int, epoch: int) -> Callable[[int], int]:
    """Return Kafka's ``appendTransactionalAsLeader``: a function appending ``n`` records of one producer."""
    seq = 0

    def go(n: int) -> int:
        nonlocal seq
        offset = append(r, batch(pid, epoch, seq, n, txn=True))
        seq += n
        return offset

    return go


def append_non_transactional(r: Replica, n: int) -> int:
    """Append ``n`` plain records; return the base offset."""
    return append(r, batch(n=n))


def append_end_txn_marker(r: Replica, pid: int, epoch: int, kind: str, coordinator_epoch: int = 0) -> int:
    """Append a marker as the coordinator would; return its offset."""
    return append(r, marker(pid, epoch, kind, coordinator_epoch), AppendOrigin.COORDINATOR)


def read_committed(r: Replica, offset: int) -> list[RecordBatch]:
    """Read from ``offset`` with read_committed isolation: nothing at or past the LSO."""
    upper = r.last_stable_offset
    return r.log.read(offset, 1 << 30, upper) if upper > offset else []


def expect_error(code: ErrorCode, fn: Callable[..., object], *args: object) -> None:
    """Call ``fn`` and check it raises LogValidationError with ``code``."""
    with pytest.raises(LogValidationError) as exc:
        fn(*args)
    assert exc.value.code is code, exc.value.message


def follower_copy(leader: Replica, broker_id: int = 2) -> Replica:
    """Return a follower replica on another broker that has copied the leader's whole log."""
    f = Replica("t", 0, broker_id, Disk(f"broker-{broker_id}"), segment_bytes=SEGMENT_BYTES)
    f.become_follower(PartitionState("t", 0, leader.broker_id, 0, (1, broker_id), (1, broker_id)))
    f.append_as_follower(tuple(leader.log.batches))
    return f


# -- tests ----------------------------------------------------------------------------------------------------------


def test_truncate_below_first_unstable_offset() -> None:
    """Kafka: UnifiedLogTest.testTruncateBelowFirstUnstableOffset."""
    disk = Disk("broker-1")
    log = create_log(disk)
    append_non_transactional(log, 3)
    append(log, batch(17, 10, 0, 2, txn=True))
    assert log.producers.first_unstable_offset() == 3
    reopened = reopen(disk)
    assert reopened.producers.first_unstable_offset() == 3
    reopened.truncate_to(0)
    assert reopened.producers.first_unstable_offset() is None
    assert reopened.producers.producers == {}


def test_active_producers() -> None:
    """Kafka: UnifiedLogTest.testActiveProducers."""
    log = create_log()

    def state(pid: int) -> tuple[int, int, int | None, int]:
        e = log.producers.producers[pid]
        return e.producer_epoch, e.last_seq, e.current_txn_first_offset, e.coordinator_epoch

    transactional_appender(log, 1, 5)(5)
    assert state(1) == (5, 4, 0, -1)
    append_end_txn_marker(log, 1, 5, COMMIT, coordinator_epoch=15)
    assert state(1) == (5, 4, None, 15)
    append(log, batch(2, 5, 0, 3))
    assert state(2) == (5, 2, None, -1)


def test_fetch_up_to_last_stable_offset() -> None:
    """Kafka: UnifiedLogTest.testFetchUpToLastStableOffset."""
    log = create_log()
    p1 = transactional_appender(log, 1, 0)
    p2 = transactional_appender(log, 2, 0)
    p1(5)
    append_non_transactional(log, 3)
    p2(2)
    p1(4)
    append_non_transactional(log, 2)
    p1(10)

    def assert_lso_bounded_fetches() -> None:
        lso = log.last_stable_offset
        for offset in range(lso):
            assert read_committed(log, offset), offset
        for offset in range(lso, log.log_end_offset + 1):
            assert read_committed(log, offset) == [], offset

    assert_lso_bounded_fetches()
    log.set_high_watermark(log.log_end_offset)
    assert_lso_bounded_fetches()
    append_end_txn_marker(log, 1, 0, COMMIT)
    assert log.last_stable_offset == 0
    log.set_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 8
    assert_lso_bounded_fetches()
    append_end_txn_marker(log, 2, 0, ABORT)
    assert log.last_stable_offset == 8
    log.set_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == log.log_end_offset
    assert_lso_bounded_fetches()


def test_producer_id_map_offset_updated_for_non_idempotent_data() -> None:
    """Kafka: UnifiedLogTest.testProducerIdMapOffsetUpdatedForNonIdempotentData."""
    log = create_log()
    append_non_transactional(log, 1)
    snap = log.take_snapshot()
    assert snap.offset == 1
    assert log.snapshots.items[-1].offset == 1


def test_producer_id_map_truncate_to() -> None:
    """Kafka: UnifiedLogTest.testProducerIdMapTruncateTo."""
    log = create_log()
    append_non_transactional(log, 1)
    append_non_transactional(log, 1)
    log.take_snapshot()
    append_non_transactional(log, 1)
    log.take_snapshot()
    log.truncate_to(2)
    assert [s.offset for s in log.snapshots.items] == [2]
    assert log.producers.last_map_offset == 2
    log.truncate_to(1)
    # Kafka also writes a fresh snapshot at 1 after rebuilding; the engine only drops those above
    assert all(s.offset <= 1 for s in log.snapshots.items)
    assert log.producers.last_map_offset == 1
    log.truncate_to(0)
    assert log.snapshots.items == []
    assert log.producers.last_map_offset == 0


def test_producer_id_map_truncate_to_with_no_snapshots() -> None:
    """Kafka: UnifiedLogTest.testProducerIdMapTruncateToWithNoSnapshots."""
    log = create_log()
    append(log, batch(1, 0, 0))
    append(log, batch(1, 0, 1))
    log.snapshots.items.clear()
    log.truncate_to(1)
    assert sorted(log.producers.producers) == [1]
    assert log.producers.producers[1].last_seq == 0


def test_producer_snapshot_after_segment_roll_on_append() -> None:
    """Kafka: UnifiedLogTest.testProducerSnapshotAfterSegmentRollOnAppend."""
    first = batch(1, 0, 0)
    # The engine rolls right after the batch that fills the segment (Kafka: before the batch that
    # would overflow it), so a segment the size of one batch rolls after each append.
    log = create_log(segment_bytes=first.size_bytes)
    append(log, first)
    assert [s.offset for s in log.snapshots.items] == [1]
    append(log, batch(1, 0, 1))
    assert log.log.segment_bases == [0, 1, 2]
    log.truncate_to(1)
    assert [s.offset for s in log.snapshots.items] == [1]
    entry = log.producers.producers[1]
    assert (entry.batches[0].first_offset, entry.last_offset) == (0, 0)


def test_rebuild_transactional_state() -> None:
    """Kafka: UnifiedLogTest.testRebuildTransactionalState."""
    disk = Disk("broker-1")
    log = create_log(disk)
    append(log, batch(137, 5, 0, 3, txn=True))
    abort_offset = append_end_txn_marker(log, 137, 5, ABORT)
    log.set_high_watermark(abort_offset + 1)
    assert log.producers.first_unstable_offset() is None
    reopened = reopen(disk)
    reopened.set_high_watermark(abort_offset + 1)
    assert reopened.producers.first_unstable_offset() is None
    assert reopened.last_stable_offset == abort_offset + 1


def test_duplicate_appends() -> None:
    """Kafka: UnifiedLogTest.testDuplicateAppends."""
    log = create_log()
    pid, epoch = 1, 0
    for seq in range(6):
        append(log, batch(pid, epoch, seq))
    seq = 6
    multi = log.append_as_leader(batch(pid, epoch, seq, 3), AppendOrigin.CLIENT)
    assert multi[:2] == (6, False)
    dup = log.append_as_leader(batch(pid, epoch, seq, 3), AppendOrigin.CLIENT)
    assert dup[:2] == (6, True)
    assert log.log_end_offset == 9
    seq += 3
    # a batch overlapping the tail only partly is out of order
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, batch(pid, epoch, seq - 2, 2))
    # the oldest of the five cached batches is still answered from the cache
    assert log.append_as_leader(batch(pid, epoch, 2), AppendOrigin.CLIENT)[:2] == (2, True)
    # an older one is not: out of order
    expect_error(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, append, log, batch(pid, epoch, 1))
    orig = log.append_as_leader(batch(pid, epoch, seq), AppendOrigin.CLIENT)
    again = log.append_as_leader(batch(pid, epoch, seq), AppendOrigin.CLIENT)
    assert orig[:2] == (9, False)
    assert again[:2] == (9, True)
    assert log.log_end_offset == 10


def test_multiple_producer_ids_per_memory_record() -> None:
    """Kafka: UnifiedLogTest.testMultipleProducerIdsPerMemoryRecord."""
    log = create_log()
    sent = [batch(pid, 0, 0).assigned(pid - 1, 0) for pid in (1, 2, 3, 4)]
    log.append_as_follower(tuple(sent))
    read = log.log.read(0, 1 << 30)
    assert [(b.producer_id, b.base_offset, b.base_sequence) for b in read] == [
        (b.producer_id, b.base_offset, b.base_sequence) for b in sent
    ]
    assert sorted(log.producers.producers) == [1, 2, 3, 4]


def test_duplicate_append_to_follower() -> None:
    """Kafka: UnifiedLogTest.testDuplicateAppendToFollower."""
    log = create_log()
    assert log.log_end_offset == 0
    # a follower does not validate: the same sequences at new offsets are taken as they come
    log.append_as_follower((batch(1, 0, 0, 2).assigned(0, 0),))
    log.append_as_follower((batch(1, 0, 0, 2).assigned(2, 0),))
    assert log.log_end_offset == 4


def test_multiple_producers_with_duplicates_in_single_append() -> None:
    """Kafka: UnifiedLogTest.testMultipleProducersWithDuplicatesInSingleAppend."""
    log = create_log()
    pid1, pid2 = 1, 2
    layout = [(pid1, 0), (pid2, 0), (pid1, 1), (pid2, 1), (pid1, 1)]  # the last one repeats pid1's seq 1
    batches = tuple(batch(pid, 0, seq).assigned(offset, 0) for offset, (pid, seq) in enumerate(layout))
    assert log.log_end_offset == 0
    log.append_as_follower(batches)
    assert log.log_end_offset == 5


def test_old_producer_epoch() -> None:
    """Kafka: UnifiedLogTest.testOldProducerEpoch."""
    log = create_log()
    append(log, batch(1, 1, 0))
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, append, log, batch(1, 0, 0))
    assert log.log_end_offset == 1


def test_first_unstable_offset_no_transactional_data() -> None:
    """Kafka: UnifiedLogTest.testFirstUnstableOffsetNoTransactionalData."""
    log = create_log()
    append_non_transactional(log, 3)
    assert log.producers.first_unstable_offset() is None


def test_first_unstable_offset_with_transactional_data() -> None:
    """Kafka: UnifiedLogTest.testFirstUnstableOffsetWithTransactionalData."""
    log = create_log()
    pid, epoch = 137, 5
    first = append(log, batch(pid, epoch, 0, 3, txn=True))
    assert log.producers.first_unstable_offset() == first
    append(log, batch(pid, epoch, 3, 1, txn=True))
    assert log.producers.first_unstable_offset() == first
    commit = append_end_txn_marker(log, pid, epoch, COMMIT)
    # decided, but unstable until the high watermark passes the marker
    assert log.producers.first_unstable_offset() == first
    log.set_high_watermark(commit + 1)
    assert log.producers.first_unstable_offset() is None


def test_read_committed_with_concurrent_high_watermark_updates() -> None:
    """Kafka: UnifiedLogTest.testReadCommittedWithConcurrentHighWatermarkUpdates."""
    # Kafka races a writer thread against a thread moving the HW; the simulation is one thread,
    # so the HW moves to the log end at every point where the other thread could have run.
    log = create_log()
    write = transactional_appender(log, 15, 0)
    non_empty_reads = 0
    while log.log_end_offset < 50:
        start = log.log_end_offset
        write(1)
        log.set_high_watermark(log.log_end_offset)
        if read_committed(log, start):
            non_empty_reads += 1
        append_end_txn_marker(log, 15, 0, ABORT)
        log.set_high_watermark(log.log_end_offset)
    assert non_empty_reads == 0


def test_transaction_index_updated() -> None:
    """Kafka: UnifiedLogTest.testTransactionIndexUpdated."""
    log = create_log()
    pid1, pid2, pid3, pid4 = 1, 2, 3, 4
    a1, a2, a3, a4 = (transactional_appender(log, p, 0) for p in (pid1, pid2, pid3, pid4))
    a1(5)  # next offset 5
    append_non_transactional(log, 3)  # 8
    a2(2)  # 10
    a1(4)  # 14
    a3(3)  # 17
    append_non_transactional(log, 2)  # 19
    a1(10)  # 29
    append_end_txn_marker(log, pid1, 0, ABORT)  # 30
    a2(6)  # 36
    a4(3)  # 39
    append_non_transactional(log, 10)  # 49
    a3(9)  # 58
    append_end_txn_marker(log, pid3, 0, COMMIT)  # 59
    a4(8)  # 67
    a2(7)  # 74
    append_end_txn_marker(log, pid2, 0, ABORT)  # 75
    append_non_transactional(log, 10)  # 85
    a4(4)  # 89
    append_end_txn_marker(log, pid4, 0, COMMIT)  # 90
    assert log.txn_index.entries == [AbortedTxn(pid1, 0, 29, 8), AbortedTxn(pid2, 8, 74, 36)]
    log.set_high_watermark(30)
    assert log.producers.first_unstable_offset() == 8
    log.set_high_watermark(75)
    assert log.producers.first_unstable_offset() == 36
    log.set_high_watermark(log.log_end_offset)
    assert log.producers.first_unstable_offset() is None


def test_transaction_index_updated_through_replication() -> None:
    """Kafka: UnifiedLogTest.testTransactionIndexUpdatedThroughReplication."""
    pid1, pid2, pid3, pid4 = 1, 2, 3, 4
    seqs = dict.fromkeys((pid1, pid2, pid3, pid4), 0)
    out: list[RecordBatch] = []

    def txn(pid: int, offset: int, n: int) -> None:
        out.append(batch(pid, 0, seqs[pid], n, txn=True).assigned(offset, 0))
        seqs[pid] += n

    def plain(offset: int, n: int) -> None:
        out.append(batch(n=n).assigned(offset, 0))

    def end(pid: int, offset: int, kind: str) -> None:
        out.append(marker(pid, 0, kind).assigned(offset, 0))

    txn(pid1, 0, 5)
    plain(5, 3)
    txn(pid2, 8, 2)
    txn(pid1, 10, 4)
    txn(pid3, 14, 3)
    plain(17, 2)
    txn(pid1, 19, 10)
    end(pid1, 29, ABORT)
    txn(pid2, 30, 6)
    txn(pid4, 36, 3)
    plain(39, 10)
    txn(pid3, 49, 9)
    end(pid3, 58, COMMIT)
    txn(pid4, 59, 8)
    txn(pid2, 67, 7)
    end(pid2, 74, ABORT)
    plain(75, 10)
    txn(pid4, 85, 4)
    end(pid4, 89, COMMIT)

    log = Replica("t", 0, 2, Disk("broker-2"), segment_bytes=SEGMENT_BYTES)
    log.append_as_follower(tuple(out))
    assert log.txn_index.entries == [AbortedTxn(pid1, 0, 29, 8), AbortedTxn(pid2, 8, 74, 36)]
    log.set_high_watermark(30)
    assert log.producers.first_unstable_offset() == 8
    log.set_high_watermark(75)
    assert log.producers.first_unstable_offset() == 36
    log.set_high_watermark(log.log_end_offset)
    assert log.producers.first_unstable_offset() is None


def test_zombie_coordinator_fenced() -> None:
    """Kafka: UnifiedLogTest.testZombieCoordinatorFenced."""
    log = create_log()
    pid, epoch = 1, 0
    write = transactional_appender(log, pid, epoch)
    write(10)
    append_end_txn_marker(log, pid, epoch, ABORT, coordinator_epoch=1)
    write(5)
    append_end_txn_marker(log, pid, epoch, COMMIT, coordinator_epoch=2)
    expect_error(ErrorCode.TRANSACTION_COORDINATOR_FENCED, append_end_txn_marker, log, pid, epoch, ABORT, 1)
    assert log.log_end_offset == 17


def test_zombie_coordinator_fenced_empty_transaction() -> None:
    """Kafka: UnifiedLogTest.testZombieCoordinatorFencedEmptyTransaction."""
    pid, epoch = 1, 0
    disk = Disk("broker-1")
    log = Replica("t", 0, 1, disk, segment_bytes=SEGMENT_BYTES)
    # a committed transaction arrives by replication, then this replica leads (leader epoch 1)
    log.append_as_follower(
        (batch(pid, epoch, 0, 10, txn=True).assigned(0, 1), marker(pid, epoch, COMMIT).assigned(10, 1))
    )
    log.become_leader(PartitionState("t", 0, 1, 1, (1,), (1,)), now_ms=0)
    log.set_high_watermark(11)
    assert log.producers.first_unstable_offset() is None
    # two ABORTs with no data before them (a retried abort): appended, but empty transactions
    answers = [log.append_as_leader(marker(pid, epoch, ABORT, 2), AppendOrigin.COORDINATOR) for _ in range(2)]
    assert [a[:2] for a in answers] == [(11, False), (12, False)]
    assert log.log_end_offset == 13
    expect_error(ErrorCode.TRANSACTION_COORDINATOR_FENCED, append_end_txn_marker, log, pid, epoch, ABORT, 1)
    # 6a: no aborted-index entry, neither on this replica nor on a follower copying it
    assert log.txn_index.entries == []
    assert follower_copy(log).txn_index.entries == []
    # 6a: the empty transactions never hold back the LSO
    assert log.producers.first_unstable_offset() is None
    log.set_high_watermark(13)
    assert log.last_stable_offset == 13
    assert [a[2] for a in answers] == [None, None]  # no completed transaction
    assert log.producers.producers[pid].coordinator_epoch == 2


def test_end_txn_with_fenced_producer_epoch() -> None:
    """Kafka: UnifiedLogTest.testEndTxnWithFencedProducerEpoch."""
    disk = Disk("broker-1")
    log = create_log(disk)
    pid, epoch = 1, 5
    append_end_txn_marker(log, pid, epoch, ABORT, coordinator_epoch=1)
    expect_error(ErrorCode.INVALID_PRODUCER_EPOCH, append_end_txn_marker, log, pid, epoch - 1, ABORT, 1)
    assert log.log_end_offset == 1
    # 6a: the lone ABORT ended no transaction: no index entry, and it does not hold back the LSO
    assert log.txn_index.entries == []
    assert log.producers.first_unstable_offset() is None
    reopened = reopen(disk)
    assert reopened.producers.first_unstable_offset() is None
    assert reopened.producers.producers[pid].producer_epoch == epoch


def test_last_stable_offset_with_mixed_producer_data() -> None:
    """Kafka: UnifiedLogTest.testLastStableOffsetWithMixedProducerData."""
    log = create_log()
    epoch = 5
    pid1, pid2 = 137, 983
    first = append(log, batch(pid1, epoch, 0, 3, txn=True))
    assert log.producers.first_unstable_offset() == first
    append_non_transactional(log, 3)
    second = append(log, batch(pid2, epoch, 0, 3, txn=True))
    assert log.producers.first_unstable_offset() == first
    abort = append_end_txn_marker(log, pid1, epoch, ABORT)
    log.set_high_watermark(abort + 1)
    assert log.producers.first_unstable_offset() == second
    assert log.last_stable_offset == second
    commit = append_end_txn_marker(log, pid2, epoch, COMMIT)
    log.set_high_watermark(commit + 1)
    assert log.producers.first_unstable_offset() is None
    assert log.last_stable_offset == log.log_end_offset


def test_aborted_transaction_spanning_multiple_segments() -> None:
    """Kafka: UnifiedLogTest.testAbortedTransactionSpanningMultipleSegments."""
    pid, epoch = 137, 5
    first_batch = batch(pid, epoch, 0, 3, txn=True)
    log = create_log(segment_bytes=first_batch.size_bytes)
    first = append(log, first_batch)
    assert log.producers.first_unstable_offset() == first
    append(log, batch(pid, epoch, 3, 3, txn=True))  # lands in the second segment
    assert log.log.segment_bases[1] == 3
    assert log.producers.first_unstable_offset() == first
    abort = append_end_txn_marker(log, pid, epoch, ABORT)
    log.set_high_watermark(abort + 1)
    assert log.producers.first_unstable_offset() is None
    # a read_committed fetch from 0 carries the aborted transaction, from its first offset
    upper = log.last_stable_offset
    assert read_committed(log, 0)
    aborted = log.txn_index.collect(0, upper)
    assert [(t.producer_id, t.first_offset) for t in aborted] == [(pid, 0)]
