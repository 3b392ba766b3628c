"""Unit tests of the staged producer-state update: validation runs on a copy, ``update`` applies it.

Mirrors Kafka's ``testPrepareUpdateDoesNotMutate``: preparing and validating an append, even a
successful one, must leave the manager unchanged until ``update`` is called.
"""

from __future__ import annotations

import copy

import pytest

from engine.errors import ErrorCode
from engine.log.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    AppendOrigin,
    LogValidationError,
    ProducerStateManager,
)
from engine.log.records import RecordBatch


def _batch(seq: int, n: int = 1, epoch: int = 0, pid: int = 7, txn: bool = False) -> RecordBatch:
    return RecordBatch(
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
        keys=(None,) * n,
        values=(b"x",) * n,
    )


def _state(m: ProducerStateManager) -> tuple:
    return tuple(
        (pid, e.producer_epoch, tuple(e.batches), e.current_txn_first_offset) for pid, e in sorted(m.producers.items())
    )


def test_prepare_update_and_validation_mutate_nothing_until_update() -> None:
    m = ProducerStateManager("t-0")
    info = m.prepare_update(7, AppendOrigin.CLIENT)
    info.append_data_batch(_batch(0, 3), 0)
    m.update(info)
    before = copy.deepcopy(_state(m))
    info2 = m.prepare_update(7, AppendOrigin.CLIENT)
    info2.append_data_batch(_batch(3, 2, txn=True), 3)  # valid, and it starts a transaction
    assert _state(m) == before
    assert m.ongoing_txns == {}
    m.update(info2)
    assert _state(m) != before
    assert m.ongoing_txns == {3: 7}


def test_failed_validation_leaves_the_state_unchanged() -> None:
    m = ProducerStateManager("t-0")
    info = m.prepare_update(7, AppendOrigin.CLIENT)
    info.append_data_batch(_batch(0), 0)
    m.update(info)
    before = copy.deepcopy(_state(m))
    bad = m.prepare_update(7, AppendOrigin.CLIENT)
    with pytest.raises(LogValidationError) as exc:
        bad.append_data_batch(_batch(5), 1)
    assert exc.value.code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "5 (incoming seq. number), 0 (current end sequence number)" in exc.value.message
    assert _state(m) == before


def test_window_keeps_only_the_last_five_batches() -> None:
    m = ProducerStateManager("t-0")
    for seq in range(7):
        info = m.prepare_update(7, AppendOrigin.CLIENT)
        info.append_data_batch(_batch(seq), seq)
        m.update(info)
    entry = m.producers[7]
    assert len(entry.batches) == NUM_BATCHES_TO_RETAIN
    assert [b.first_seq for b in entry.batches] == [2, 3, 4, 5, 6]
    assert m.find_duplicate(_batch(2)) is not None
    assert m.find_duplicate(_batch(1)) is None


def test_new_epoch_must_start_at_sequence_zero() -> None:
    m = ProducerStateManager("t-0")
    info = m.prepare_update(7, AppendOrigin.CLIENT)
    info.append_data_batch(_batch(0), 0)
    m.update(info)
    bad = m.prepare_update(7, AppendOrigin.CLIENT)
    with pytest.raises(LogValidationError) as exc:
        bad.append_data_batch(_batch(4, epoch=1), 1)
    assert exc.value.code is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    good = m.prepare_update(7, AppendOrigin.CLIENT)
    good.append_data_batch(_batch(0, epoch=1), 1)
    m.update(good)
    assert m.producers[7].producer_epoch == 1


def test_replication_origin_accepts_what_the_leader_wrote_without_sequence_checks() -> None:
    m = ProducerStateManager("t-0")
    info = m.prepare_update(7, AppendOrigin.REPLICATION)
    info.append_data_batch(_batch(9), 0)  # a follower copies whatever the leader accepted
    m.update(info)
    assert m.producers[7].last_seq == 9


def test_non_transactional_batch_during_an_open_transaction_is_invalid_txn_state() -> None:
    m = ProducerStateManager("t-0")
    info = m.prepare_update(7, AppendOrigin.CLIENT)
    info.append_data_batch(_batch(0, txn=True), 0)
    m.update(info)
    bad = m.prepare_update(7, AppendOrigin.CLIENT)
    with pytest.raises(LogValidationError) as exc:
        bad.append_data_batch(_batch(1), 1)
    assert exc.value.code is ErrorCode.INVALID_TXN_STATE
