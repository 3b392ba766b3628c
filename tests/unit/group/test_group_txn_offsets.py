"""KIP-447's rules on their own: who may commit offsets, what a fenced producer is told, stable offsets.

Goal: the checks the group coordinator applies to (Txn)OffsetCommit and OffsetFetch, and the
translation the producer makes of a fenced answer, are Kafka's, case by case, without a cluster.
Method: call :mod:`engine.group.txn_offsets` on a :class:`~engine.group.metadata.GroupMetadata`
set up by hand (members, generation, state, pending offsets) and compare the error codes,
offsets and exceptions with what Kafka's ``GroupCoordinator`` and ``TxnOffsetCommitHandler`` give.
"""

from __future__ import annotations

import pytest

from engine.client.consumer import ConsumerGroupMetadata
from engine.config import IsolationLevel
from engine.errors import CommitFailedException, ErrorCode, IllegalStateError
from engine.group import txn_offsets
from engine.group.metadata import GroupMetadata, MemberMetadata
from engine.group.records import StoredOffset
from engine.group.state import GroupState

E = ErrorCode
TP = ("t", 0)


def _group(
    *, generation: int = 3, members: tuple[str, ...] = ("m1",), state: GroupState = GroupState.STABLE
) -> GroupMetadata:
    g = GroupMetadata("g", 0, 0)
    g.generation = generation
    g.state = state
    for mid in members:
        g.add(MemberMetadata(mid, None, "c", "/h", 1_000, 1_000, (("range", ("t",)),)))
    return g


# -- who may commit (validateOffsetCommit) --------------------------------------------------------


@pytest.mark.parametrize("transactional", [False, True])
@pytest.mark.parametrize(
    ("generation", "member", "expected"),
    [
        (3, "m1", E.NONE),
        (2, "m1", E.ILLEGAL_GENERATION),
        (3, "zombie", E.UNKNOWN_MEMBER_ID),
        (2, "zombie", E.UNKNOWN_MEMBER_ID),  # the member is checked before the generation
    ],
)
def test_a_commit_naming_a_member_must_name_a_current_member_and_generation(
    transactional: bool, generation: int, member: str, expected: ErrorCode
) -> None:
    g = _group()
    assert txn_offsets.validate_commit(g, generation, member, None, transactional=transactional) is expected


def test_mutant_m15_lets_a_stale_transactional_commit_through_but_still_fences_plain_ones() -> None:
    g = _group()
    for generation, member in ((2, "m1"), (3, "zombie")):
        weak = txn_offsets.validate_commit(
            g, generation, member, None, transactional=True, fence_stale_generation=False
        )
        assert weak is E.NONE
        plain = txn_offsets.validate_commit(
            g, generation, member, None, transactional=False, fence_stale_generation=False
        )
        assert plain is not E.NONE


def test_a_commit_naming_no_member_is_plain_only_for_an_empty_group_and_always_transactional() -> None:
    busy, empty = _group(), _group(members=(), state=GroupState.EMPTY)
    assert txn_offsets.validate_commit(busy, -1, "", None, transactional=False) is E.UNKNOWN_MEMBER_ID
    assert txn_offsets.validate_commit(empty, -1, "", None, transactional=False) is E.NONE
    assert txn_offsets.validate_commit(busy, -1, "", None, transactional=True) is E.NONE


def test_a_dead_group_takes_no_commit() -> None:
    g = _group(state=GroupState.DEAD)
    for transactional in (False, True):
        got = txn_offsets.validate_commit(g, 3, "m1", None, transactional=transactional)
        assert got is E.COORDINATOR_NOT_AVAILABLE


def test_an_older_producer_epoch_than_the_partition_saw_is_invalid() -> None:
    assert txn_offsets.producer_epoch_error(None, 0) is E.NONE
    assert txn_offsets.producer_epoch_error(4, 4) is E.NONE
    assert txn_offsets.producer_epoch_error(4, 5) is E.NONE
    assert txn_offsets.producer_epoch_error(4, 3) is E.INVALID_PRODUCER_EPOCH


# -- the producer's side --------------------------------------------------------------------------


def test_group_fields_come_from_the_consumers_group_metadata_or_a_bare_group_id() -> None:
    md = ConsumerGroupMetadata("g", 7, "m1")
    assert txn_offsets.group_fields(md) == ("g", 7, "m1", None)
    assert txn_offsets.group_fields("g") == ("g", -1, "", None)
    with pytest.raises(IllegalStateError, match=r"consumer\.group_metadata\(\)"):
        txn_offsets.group_fields(42)


@pytest.mark.parametrize("code", sorted(txn_offsets.GROUP_FENCED))
def test_a_fenced_txn_offset_commit_is_an_abortable_commit_failed(code: ErrorCode) -> None:
    err = txn_offsets.fenced_commit_error(code, "g", 7, "tx")
    assert isinstance(err, CommitFailedException)
    assert err.abortable
    assert "generation 7" in str(err)
    assert code.name in str(err)


@pytest.mark.parametrize("code", [E.NONE, E.COORDINATOR_NOT_AVAILABLE, E.INVALID_PRODUCER_EPOCH])
def test_other_answers_are_not_group_fencing(code: ErrorCode) -> None:
    assert txn_offsets.fenced_commit_error(code, "g", 7, "tx") is None


def test_only_read_committed_consumers_require_stable_offsets() -> None:
    assert txn_offsets.require_stable(IsolationLevel.READ_COMMITTED)
    assert not txn_offsets.require_stable(IsolationLevel.READ_UNCOMMITTED)


# -- pending offsets and OffsetFetch --------------------------------------------------------------


def test_pending_offsets_are_unstable_until_their_marker_settles_them() -> None:
    g = _group()
    g.committed[TP] = StoredOffset(2, 10, 0)
    txn_offsets.add_pending(g, 7, (("t", 0, 5), ("t", 1, 6)), 20, 0)
    assert txn_offsets.is_unstable(g, TP)
    assert txn_offsets.fetch_partition(g, TP, require_stable=True).error is E.UNSTABLE_OFFSET_COMMIT
    assert txn_offsets.fetch_partition(g, TP, require_stable=False).offset == 2
    assert txn_offsets.settle(g, 7, 22, commit=True) == [("t", 0), ("t", 1)]
    assert not txn_offsets.is_unstable(g, TP)
    answer = txn_offsets.fetch_partition(g, TP, require_stable=True)
    assert (answer.offset, answer.error) == (5, E.NONE)


def test_an_abort_marker_drops_the_pending_offsets_and_the_old_one_stands() -> None:
    g = _group()
    g.committed[TP] = StoredOffset(2, 10, 0)
    txn_offsets.add_pending(g, 7, (("t", 0, 5),), 20, 0)
    assert txn_offsets.settle(g, 7, 21, commit=False) == []
    assert g.pending_txn == {}
    assert txn_offsets.fetch_partition(g, TP, require_stable=True).offset == 2


def test_a_plain_commit_in_flight_is_unstable_too() -> None:
    g = _group()
    g.pending_commits[TP] = 1
    assert txn_offsets.is_unstable(g, TP)
    assert not txn_offsets.is_unstable(g, ("t", 1))


def test_no_group_or_no_offset_answers_minus_one() -> None:
    assert txn_offsets.fetch_partition(None, TP, require_stable=True).offset == -1
    assert txn_offsets.fetch_partition(_group(), TP, require_stable=True).offset == -1
