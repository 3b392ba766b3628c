"""Moving one KIP-848 member's assignment toward its target: Kafka's ``CurrentAssignmentBuilder``.

Role
----
The coordinator holds, for every member, its *current* assignment (what it may own now, with a
member epoch) and its *target* assignment (what the assignor wants it to own, with the group's
assignment epoch). On every heartbeat :func:`reconcile` computes the member's next current
assignment. The rule that makes KIP-848 safe: **a partition is revoked from its owner before it is
assigned elsewhere** -- a partition of the target that another member still owns (assigned or
pending revocation, :attr:`Partition epochs <engine.group.consumer_group.ConsumerGroup.partition_epochs>`)
is held back ("unreleased") until that member has acknowledged its revocation.

==========================  ==============================================================================
member state                next step (``reconcile``)
==========================  ==============================================================================
STABLE                      member epoch = target epoch: unchanged; else compute the next assignment
UNREVOKED_PARTITIONS        the member still reports a partition it must revoke: unchanged; else compute
                            the next assignment with epoch + 1
UNRELEASED_PARTITIONS       compute again: partitions others have released are now assigned
UNKNOWN                     only a member that reports owning nothing continues; else FENCED_MEMBER_EPOCH
==========================  ==============================================================================

Computing the next assignment: ``kept = current ∩ target``; ``revoke = current − kept``;
``add = target − kept`` minus partitions still held by another member (unreleased). If the member
still owns something in ``revoke`` it goes to UNREVOKED_PARTITIONS, keeping its epoch, with
``assigned = kept``; otherwise it takes ``kept ∪ add`` and the target epoch, in UNRELEASED_PARTITIONS
if something was held back, else STABLE.

Invariants
----------
* Pure: no I/O, no clock; the same inputs give the same member.
* ``revoke_before_assign=False`` is mutant M19 (:mod:`engine.weakenings`): nothing is held back,
  so a partition may be assigned while its old owner still holds it.
* The epoch never decreases; a member leaves UNREVOKED_PARTITIONS only once its owned partitions
  (from the heartbeat; ``None``: unchanged, taken as still owning) no longer include any to revoke.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable

from engine.errors import ErrorCode

TopicPartition = tuple[str, int]
Assignment = frozenset[TopicPartition]


class MemberState(enum.Enum):
    """Kafka's ``MemberState`` of a consumer-protocol member (its names, as ConsumerGroupDescribe shows)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True, slots=True)
class MemberAssignment:
    """A member's current assignment: epochs, state, owned and pending-revocation partitions."""

    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Assignment = frozenset()
    pending_revocation: Assignment = frozenset()


class ReconciliationError(Exception):
    """The member cannot be reconciled (FENCED_MEMBER_EPOCH): it must give up its partitions and rejoin."""

    code = ErrorCode.FENCED_MEMBER_EPOCH


def reconcile(
    current: MemberAssignment,
    target_epoch: int,
    target: Assignment,
    owned: frozenset[TopicPartition] | None,
    owner_epoch: Callable[[TopicPartition], int],
    *,
    revoke_before_assign: bool = True,
) -> MemberAssignment:
    """Return the member's next assignment (Kafka's ``CurrentAssignmentBuilder.build``).

    Parameters
    ----------
    current
        The member's assignment now.
    target_epoch, target
        The group's assignment epoch and the member's target partitions.
    owned
        The partitions the member reported in this heartbeat; ``None`` when it did not say.
    owner_epoch
        The epoch of the member *other than this one* that holds a partition, or -1 when free.
    revoke_before_assign
        False only for mutant M19: a partition another member holds is assigned at once.
    """
    if not revoke_before_assign:

        def owner_epoch(_tp: TopicPartition) -> int:
            return -1

    state = current.state
    if state is MemberState.STABLE:
        if current.member_epoch == target_epoch:
            return current
        return _next(current, current.member_epoch, target_epoch, target, owned, owner_epoch)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, current.pending_revocation):
            return current
        return _next(current, current.member_epoch + 1, target_epoch, target, owned, owner_epoch)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(current, current.member_epoch, target_epoch, target, owned, owner_epoch)
    if owned is None or owned:
        raise ReconciliationError(
            "The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin."
        )
    return _next(current, target_epoch, target_epoch, target, owned, owner_epoch)


def _owns_any(owned: frozenset[TopicPartition] | None, revoking: Assignment) -> bool:
    """Kafka's ``ownsRevokedPartitions``: an unreported set counts as still owning them."""
    if owned is None:
        return True
    return bool(owned & revoking)


def _with_epoch(current: MemberAssignment, epoch: int) -> tuple[int, int]:
    """Kafka's ``updateMemberEpoch``: the previous epoch moves only when the epoch changes."""
    if epoch == current.member_epoch:
        return epoch, current.previous_member_epoch
    return epoch, current.member_epoch


def _next(
    current: MemberAssignment,
    epoch_if_revoking: int,
    target_epoch: int,
    target: Assignment,
    owned: frozenset[TopicPartition] | None,
    owner_epoch: Callable[[TopicPartition], int],
) -> MemberAssignment:
    kept = current.assigned & target
    revoke = current.assigned - kept
    pending = set(target - kept)
    unreleased = {tp for tp in pending if owner_epoch(tp) != -1}
    pending -= unreleased
    if revoke and _owns_any(owned, revoke):
        epoch, prev = _with_epoch(current, epoch_if_revoking)
        return MemberAssignment(epoch, prev, MemberState.UNREVOKED_PARTITIONS, frozenset(kept), frozenset(revoke))
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    epoch, prev = _with_epoch(current, target_epoch)
    return MemberAssignment(epoch, prev, state, frozenset(kept | pending), frozenset())
