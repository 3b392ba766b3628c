"""Replaying ``__consumer_offsets``: plain offsets, group metadata, transactional offsets and markers.

Goal: a coordinator that loads a partition after a failover knows exactly the committed and
pending offsets the old one knew. Method: build the batches the coordinator writes (with
:func:`~engine.group.records.offsets_batch`, :func:`~engine.group.records.group_batch` and
``RecordBatch.control``), give them offsets, and replay them.
"""

from __future__ import annotations

from engine.group.records import (
    GroupMetadataValue,
    MemberRecord,
    StoredOffset,
    complete_txn,
    group_batch,
    offsets_batch,
    replay,
)
from engine.log.records import RecordBatch
from engine.protocol import Assignment, Subscription


def _log(*batches: RecordBatch) -> list[RecordBatch]:
    out, offset = [], 0
    for b in batches:
        out.append(b.assigned(offset, 0))
        offset += b.count
    return out


def _marker(kind: str, pid: int) -> RecordBatch:
    return RecordBatch.control(kind, producer_id=pid, producer_epoch=0, coordinator_epoch=0, create_time=0)


def _offsets(loaded: dict, group: str = "g") -> dict:
    return {tp: s.offset for tp, s in loaded[group].committed.items()}


def test_later_plain_commit_of_a_partition_replaces_the_earlier_one() -> None:
    loaded = replay(_log(offsets_batch("g", [("t", 0, 1), ("t", 1, 1)], 0), offsets_batch("g", [("t", 0, 5)], 1)))
    assert _offsets(loaded) == {("t", 0): 5, ("t", 1): 1}


def test_transactional_offsets_count_only_after_their_producers_commit_marker() -> None:
    log = _log(offsets_batch("g", [("t", 0, 3)], 0, producer_id=7, producer_epoch=0))
    assert _offsets(replay(log)) == {}
    assert replay(log)["g"].pending_txn[7][("t", 0)].offset == 3
    loaded = replay(_log(offsets_batch("g", [("t", 0, 3)], 0, producer_id=7, producer_epoch=0), _marker("COMMIT", 7)))
    assert _offsets(loaded) == {("t", 0): 3}
    assert loaded["g"].pending_txn == {}


def test_abort_marker_drops_the_transactional_offsets_and_keeps_the_plain_one() -> None:
    loaded = replay(
        _log(
            offsets_batch("g", [("t", 0, 2)], 0),
            offsets_batch("g", [("t", 0, 9)], 0, producer_id=7, producer_epoch=0),
            _marker("ABORT", 7),
        )
    )
    assert _offsets(loaded) == {("t", 0): 2}
    assert loaded["g"].pending_txn == {}


def test_marker_of_another_producer_leaves_pending_offsets_pending() -> None:
    loaded = replay(_log(offsets_batch("g", [("t", 0, 3)], 0, producer_id=7, producer_epoch=0), _marker("COMMIT", 8)))
    assert _offsets(loaded) == {}
    assert set(loaded["g"].pending_txn) == {7}


def test_one_marker_settles_the_producers_offsets_in_every_group_of_the_partition() -> None:
    loaded = replay(
        _log(
            offsets_batch("g1", [("t", 0, 1)], 0, producer_id=7, producer_epoch=0),
            offsets_batch("g2", [("t", 0, 2)], 0, producer_id=7, producer_epoch=0),
            _marker("COMMIT", 7),
        )
    )
    assert _offsets(loaded, "g1") == {("t", 0): 1}
    assert _offsets(loaded, "g2") == {("t", 0): 2}


def test_plain_commit_written_after_a_transactional_one_wins_when_the_transaction_commits() -> None:
    loaded = replay(
        _log(
            offsets_batch("g", [("t", 0, 3)], 0, producer_id=7, producer_epoch=0),
            offsets_batch("g", [("t", 0, 10)], 0),
            _marker("COMMIT", 7),
        )
    )
    assert _offsets(loaded) == {("t", 0): 10}


def test_complete_txn_settles_only_offsets_written_before_the_marker() -> None:
    committed: dict = {}
    pending = {7: {("t", 0): StoredOffset(3, 5, 0), ("t", 1): StoredOffset(4, 12, 0)}}
    assert complete_txn(committed, pending, 7, 10, commit=True) == [("t", 0)]
    assert committed == {("t", 0): StoredOffset(3, 5, 0)}
    assert pending == {7: {("t", 1): StoredOffset(4, 12, 0)}}  # the next transaction's, written after it


def test_group_metadata_record_is_kept_and_printed_like_the_offsets_decoder() -> None:
    member = MemberRecord(
        "m-1", None, "c", "/c", 300_000, 45_000, Subscription(("t",)), Assignment((("t", 0), ("t", 1)))
    )
    value = GroupMetadataValue("consumer", 3, "range", "m-1", 0, (member,))
    loaded = replay(_log(group_batch("g", value, 0)))
    assert loaded["g"].metadata == value
    batch = group_batch("g", value, 0)
    assert str(batch.keys[0]) == "group_metadata::group=g"
    assert (
        str(value) == '{"protocolType":"consumer","protocol":"range","generationId":3,"assignment":"{m-1=[t-0, t-1]}"}'
    )
    assert str(offsets_batch("g", [("t", 0, 5)], 0).keys[0]) == "offset_commit::group=g,partition=t-0"
