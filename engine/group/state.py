"""The classic consumer group's state machine (Kafka's ``GroupMetadata.scala`` / ``ClassicGroupState``).

Modelled: the classic (eager, pre-KIP-848) group protocol, one protocol type ``consumer``.

==========================  ===========================================================================
state                       received X ⇒ next state
==========================  ===========================================================================
Empty                       first JoinGroup ⇒ PreparingRebalance; partition unloaded ⇒ Dead
PreparingRebalance          every member rejoined, or the rebalance timeout ⇒ CompletingRebalance
                            (the generation is bumped); nobody left ⇒ Empty; unloaded ⇒ Dead
CompletingRebalance         leader's SyncGroup written to the log ⇒ Stable; a member joins, leaves, or
                            its session expires ⇒ PreparingRebalance; unloaded ⇒ Dead
Stable                      a new member, a leave, a session expiry, the leader rejoining or a member
                            changing its subscription ⇒ PreparingRebalance; unloaded ⇒ Dead
Dead                        (terminal for this object: the coordinator forgot the group; a new group
                            object is made if the partition is loaded again)
==========================  ===========================================================================

``VALID_PREVIOUS`` is Kafka's ``validPreviousStates`` table, keyed by the target state.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

from engine.errors import IllegalStateError


class GroupState(enum.Enum):
    """A group's state; the values are Kafka's names, as ``kafka-consumer-groups.sh --state`` prints them."""

    #: No members; committed offsets may remain. JoinGroup ⇒ PreparingRebalance.
    EMPTY = "Empty"
    #: Waiting for every member to (re)join. All joined / timeout ⇒ CompletingRebalance (or Empty).
    PREPARING_REBALANCE = "PreparingRebalance"
    #: Joined; waiting for the leader's assignment in SyncGroup. Leader's sync stored ⇒ Stable.
    COMPLETING_REBALANCE = "CompletingRebalance"
    #: Everyone has an assignment; heartbeats flow. Membership change ⇒ PreparingRebalance.
    STABLE = "Stable"
    #: Unloaded (the coordinator moved) or deleted. Terminal.
    DEAD = "Dead"


VALID_PREVIOUS: Final[Mapping[GroupState, frozenset[GroupState]]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalGroupTransitionError(IllegalStateError):
    """A group was asked to move to a state its current state does not lead to (a coordinator bug)."""

    def __init__(self, group_id: str, current: GroupState, target: GroupState) -> None:
        allowed = ", ".join(sorted(s.value for s in VALID_PREVIOUS[target]))
        super().__init__(
            f"group {group_id!r} cannot go from {current.value} to {target.value}: "
            f"{target.value} is only entered from {allowed}"
        )
        self.group_id = group_id
        self.current = current
        self.target = target


def check_transition(group_id: str, current: GroupState, target: GroupState) -> None:
    """Raise :class:`IllegalGroupTransitionError` unless ``current`` may move to ``target``."""
    if current not in VALID_PREVIOUS[target]:
        raise IllegalGroupTransitionError(group_id, current, target)
