"""Kafka's ``CurrentAssignmentBuilderTest``, ``UniformHomogeneousAssignmentBuilderTest`` and ``RangeAssignorTest``
(group coordinator, apache/kafka ``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/``),
where they apply to :mod:`engine.group.member_reconciliation` and :mod:`engine.group.server_assignors`.
"""

from __future__ import annotations

import pytest

from engine.group.member_reconciliation import MemberAssignment, MemberState, ReconciliationError, reconcile
from engine.group.server_assignors import MemberSpec, assign



def _tps(*ps: int, topic: str = "t") -> frozenset[tuple[str, int]]:
    return frozenset((topic, p) for p in ps)


def test_stable_to_stable() -> None:
    m = MemberAssignment(10, 9, MemberState.STABLE, _tps(1, 2))
    out = reconcile(m, 11, _tps(1, 2), _tps(1, 2), lambda tp: -1)
    assert (out.member_epoch, out.previous_member_epoch, out.state, out.assigned) == (
        11,
        10,
        MemberState.STABLE,
        _tps(1, 2),
    )


def test_stable_to_unrevoked_partitions() -> None:
    m = MemberAssignment(10, 9, MemberState.STABLE, _tps(1, 2))
    out = reconcile(m, 11, _tps(2, 3), _tps(1, 2), lambda tp: -1)
    assert (out.member_epoch, out.state, out.assigned, out.pending_revocation) == (
        10,
        MemberState.UNREVOKED_PARTITIONS,
        _tps(2),
        _tps(1),
    )


def test_unrevoked_partitions_to_stable() -> None:
    m = MemberAssignment(10, 9, MemberState.UNREVOKED_PARTITIONS, _tps(2), _tps(1))
    out = reconcile(m, 11, _tps(2, 3), _tps(2), lambda tp: -1)
    assert (out.member_epoch, out.state, out.assigned) == (11, MemberState.STABLE, _tps(2, 3))


def test_remains_in_unrevoked_partitions() -> None:
    m = MemberAssignment(10, 9, MemberState.UNREVOKED_PARTITIONS, _tps(2), _tps(1))
    assert reconcile(m, 11, _tps(2, 3), _tps(1, 2), lambda tp: -1) is m
    assert reconcile(m, 11, _tps(2, 3), None, lambda tp: -1) is m


def test_stable_to_unreleased_partitions() -> None:
    m = MemberAssignment(10, 9, MemberState.STABLE, _tps(1))
    out = reconcile(m, 11, _tps(1, 2), _tps(1), lambda tp: 10 if tp == ("t", 2) else -1)
    assert (out.member_epoch, out.state, out.assigned) == (11, MemberState.UNRELEASED_PARTITIONS, _tps(1))


def test_unreleased_partitions_to_stable() -> None:
    m = MemberAssignment(11, 10, MemberState.UNRELEASED_PARTITIONS, _tps(1))
    out = reconcile(m, 11, _tps(1, 2), _tps(1), lambda tp: -1)
    assert (out.member_epoch, out.state, out.assigned) == (11, MemberState.STABLE, _tps(1, 2))


def test_unknown_state() -> None:
    m = MemberAssignment(11, 10, MemberState.UNKNOWN, _tps(1))
    with pytest.raises(ReconciliationError):
        reconcile(m, 11, _tps(1), _tps(1), lambda tp: -1)
    assert reconcile(m, 11, _tps(1), frozenset(), lambda tp: -1).state is MemberState.STABLE


def test_reassignment_with_two_members_and_one_topic() -> None:
    """UniformHomogeneousAssignmentBuilderTest: stickiness when a member joins."""
    before = assign("uniform", {"A": MemberSpec(frozenset({"t"}))}, {"t": 4})
    assert before == {"A": _tps(0, 1, 2, 3)}
    after = assign(
        "uniform", {"A": MemberSpec(frozenset({"t"}), None, before["A"]), "B": MemberSpec(frozenset({"t"}))}, {"t": 4}
    )
    assert after["A"] <= before["A"] and len(after["A"]) == len(after["B"]) == 2
    assert after["A"] | after["B"] == _tps(0, 1, 2, 3)


def test_first_assignment_two_members_two_topics_same_partitions() -> None:
    """RangeAssignorTest: consecutive ranges per topic, members in id order."""
    specs = {m: MemberSpec(frozenset({"a", "b"})) for m in ("B", "A")}
    out = assign("range", specs, {"a": 3, "b": 3})
    assert out["A"] == _tps(0, 1, topic="a") | _tps(0, 1, topic="b")
    assert out["B"] == _tps(2, topic="a") | _tps(2, topic="b")
