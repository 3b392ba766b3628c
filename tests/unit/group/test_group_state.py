"""The group state machine: Kafka's valid-previous-states table and the one named transition error.

Goal: every transition the coordinator makes is one Kafka's ``GroupMetadata`` allows, and a wrong
one fails loudly, naming the group and both states. Method: walk the table exhaustively against
Kafka's ``validPreviousStates`` and drive :class:`~engine.group.metadata.GroupMetadata` directly.
"""

from __future__ import annotations

import pytest

from engine.errors import IllegalStateError
from engine.group.metadata import GroupMetadata
from engine.group.state import VALID_PREVIOUS, GroupState, IllegalGroupTransitionError

S = GroupState

#: Kafka's GroupMetadata.scala, spelled out once more by hand.
KAFKA = {
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.DEAD: set(S),
}


def test_state_values_are_the_names_the_kafka_tools_print() -> None:
    assert [s.value for s in S] == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]


@pytest.mark.parametrize(("target", "source"), [(t, s) for t in S for s in S])
def test_transition_is_allowed_exactly_when_kafka_allows_it(target: GroupState, source: GroupState) -> None:
    g = GroupMetadata("g", 0, 0)
    g.state = source
    if source in KAFKA[target]:
        g.transition_to(target, 5)
        assert g.state is target
        assert g.state_since_ms == 5
    else:
        with pytest.raises(IllegalGroupTransitionError):
            g.transition_to(target, 5)
        assert g.state is source
    assert set(VALID_PREVIOUS[target]) == KAFKA[target]


def test_illegal_transition_names_the_group_both_states_and_the_allowed_sources() -> None:
    g = GroupMetadata("orders-app", 7, 0)
    with pytest.raises(IllegalStateError) as exc:
        g.transition_to(S.STABLE, 1)
    assert str(exc.value) == (
        "group 'orders-app' cannot go from Empty to Stable: Stable is only entered from CompletingRebalance"
    )


def test_a_full_rebalance_cycle_walks_the_table() -> None:
    g = GroupMetadata("g", 0, 0)
    for target in (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.STABLE, S.PREPARING_REBALANCE, S.EMPTY, S.DEAD):
        g.transition_to(target, 0)
    assert g.state is S.DEAD
