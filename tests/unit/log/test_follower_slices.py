"""A follower appends a fetched slice at once (one log append, one producer-state update per producer).

Kafka's follower appends the batch set of a fetch as one ``LogAppendInfo`` and updates each
producer once (``UnifiedLog.appendAsFollower``, ``UnifiedLog.analyzeAndValidateProducerState``).
The engine does the same (``Replica.append_as_follower``, ``PartitionLog.append_slice``,
``ProducerStateManager.apply_replicated_plain``); these tests check that the state it leaves is
exactly what copying the same batches one at a time leaves, whatever the slices: log, epoch
cache, segments, producer windows, open transactions, the aborted-transaction index and the
snapshots written on segment rolls.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.broker.replica import Replica
from engine.log.partition_log import PartitionLog
from engine.log.producer_state import AppendOrigin
from engine.log.records import ABORT, COMMIT, NO_PRODUCER_ID, RecordBatch
from engine.protocol import PartitionState
from engine.sim.disk import Disk

#: Small segments, so some slices roll one (and take the batch-by-batch path).
SEGMENT_BYTES = 3000


def data(pid: int = NO_PRODUCER_ID, epoch: int = -1, seq: int = -1, n: int = 1, *, txn: bool = False) -> RecordBatch:
    return RecordBatch(
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
        create_time=seq,
        keys=(None,) * n,
        values=tuple(f"v{i}".encode() for i in range(n)),
    )


def leader_log() -> Replica:
    """Return a leader whose log mixes every kind of batch a follower copies."""
    r = Replica("t", 0, 1, Disk("broker-1"), segment_bytes=SEGMENT_BYTES)
    r.become_leader(PartitionState("t", 0, 1, 0, (1,), (1,)), now_ms=0)
    seqs = {1: 0, 2: 0, 3: 0}
    for i in range(60):
        if i % 7 == 3:
            r.append_as_leader(data(n=2), AppendOrigin.CLIENT)  # no producer id
        for pid in (1, 2):
            n = 1 + (i + pid) % 4
            r.append_as_leader(data(pid, 0 if i < 40 else 1, seqs[pid], n), AppendOrigin.CLIENT)
            seqs[pid] += n
            if i == 39:
                seqs[pid] = 0  # the epoch bump at i == 40 restarts the sequences
        if i % 10 < 4:  # pid 3: a transaction of four batches, then a marker
            r.append_as_leader(data(3, 0, seqs[3], 2, txn=True), AppendOrigin.CLIENT)
            seqs[3] += 2
            if i % 10 == 3:
                kind = ABORT if i % 20 == 3 else COMMIT
                marker = RecordBatch.control(kind, producer_id=3, producer_epoch=0, coordinator_epoch=0, create_time=i)
                r.append_as_leader(marker, AppendOrigin.COORDINATOR)
    return r


def follower() -> Replica:
    f = Replica("t", 0, 2, Disk("broker-2"), segment_bytes=SEGMENT_BYTES)
    f.become_follower(PartitionState("t", 0, 1, 0, (1, 2), (1, 2)))
    return f


def state(r: Replica) -> dict[str, Any]:
    """Return everything a follower's appends may change."""
    log = r.log
    p = r.producers
    return {
        "batches": [(b.base_offset, b.producer_id, b.base_sequence, len(b.values)) for b in log.batches],
        "leo": log.log_end_offset,
        "epochs": list(log.epoch_cache),
        "segments": (list(log.segment_bases), log.segment_size),
        "producers": {
            pid: (e.producer_epoch, list(e.batches), e.last_timestamp, e.current_txn_first_offset, e.coordinator_epoch)
            for pid, e in sorted(p.producers.items())
        },
        "ongoing": dict(p.ongoing_txns),
        "map_offset": p.last_map_offset,
        "aborted": list(r.txn_index.entries),
        "snapshots": [(s.offset, s.entries) for s in r.snapshots.items],
    }


@pytest.mark.parametrize("sizes", [(2,), (3, 1, 5), (7, 2), (64,), (1000,)])
def test_a_slice_leaves_the_state_that_batch_by_batch_copies_leave(sizes: tuple[int, ...]) -> None:
    leader = leader_log()
    batches = list(leader.log.batches)
    one_by_one, sliced = follower(), follower()
    for b in batches:
        one_by_one.append_as_follower((b,))
    i = k = 0
    while i < len(batches):
        n = sizes[k % len(sizes)]
        k += 1
        start = max(0, i - 1)  # every slice after the first repeats a batch the follower holds
        sliced.append_as_follower(tuple(batches[start : i + n]))
        i += n
    want = state(one_by_one)
    assert len(want["snapshots"]) >= 3, "the workload should roll segments"
    assert want["aborted"] and want["producers"][1][0] == 1, "the workload should abort and bump an epoch"
    assert state(sliced) == want


def test_a_slice_that_would_roll_the_segment_is_not_appended() -> None:
    log = PartitionLog("t-0", segment_bytes=SEGMENT_BYTES)
    big = [data(1, 0, 10 * i, 10).assigned(10 * i, 0) for i in range(40)]
    assert sum(b.size_bytes for b in big) >= SEGMENT_BYTES
    assert log.append_slice(big) is False
    assert (log.batches, log.log_end_offset, log.epoch_cache) == ([], 0, [])
    assert log.append_slice(big[:2]) is True
    assert (log.log_end_offset, log.epoch_cache, len(log.batches)) == (20, [(0, 0)], 2)


def test_a_slice_with_a_gap_raises_before_appending_anything() -> None:
    log = PartitionLog("t-0", segment_bytes=SEGMENT_BYTES)
    gap = [data(n=2).assigned(0, 0), data(n=2).assigned(3, 0)]
    with pytest.raises(ValueError, match="does not follow the log end 2"):
        log.append_slice(gap)
    assert (log.batches, log.log_end_offset) == ([], 0)
