"""The sticky assignors: Kafka's ``AbstractStickyAssignor`` and ``CooperativeStickyAssignor``.

Role
----
``cooperative-sticky`` (KIP-429) computes, on the group leader, an assignment that is

* *balanced*: member sizes differ by at most one (when every member subscribes to the same
  topics; otherwise as even as the subscriptions allow);
* *sticky*: a member keeps the partitions it owned (its subscription's owned partitions), up to
  its quota;
* *cooperative*: a partition that moves from one member to another is left out of this round's
  assignment (:func:`cooperative_sticky_assign`), so its owner revokes it first; the owner rejoins
  at once after revoking, and the follow-up rebalance assigns it (``CooperativeStickyAssignor.
  adjustAssignment``).

Claims are checked first (``AbstractStickyAssignor.allSubscriptionsEqual``): a partition claimed by
two members of *different* generations goes to the one of the higher generation; claimed by two
members of the *same* generation, it is taken from both and counts as moving, so neither keeps
it and the next round assigns it. A member without a generation has ``-1``
(``DEFAULT_GENERATION``).

When all members subscribe to the same topics this is Kafka's ``ConstrainedAssignmentBuilder``,
step for step (minus rack awareness): owned partitions up to ``minQuota``/``maxQuota``, then the
rest dealt round-robin to the members still under quota. Otherwise it is a simplification of
Kafka's ``GeneralAssignmentBuilder``: owned (still subscribed) partitions are kept, each free
partition goes, fewest-candidates first, to the candidate member with fewest partitions, and
partitions then move from fuller to emptier members until no move would even them out; the
partitions that move owners are computed as ``CooperativeStickyAssignor.
computePartitionsTransferringOwnership`` does.

Invariants
----------
* Pure functions of their arguments; members are visited in member id order, partitions in
  ``(topic, partition)`` order: no hash order.
* Every partition of a subscribed topic the metadata knows goes to at most one member subscribed
  to it; with the eager :func:`sticky_assign`, to exactly one.
* :func:`cooperative_sticky_assign` never assigns a partition to one member while another member
  that still owns it (and keeps a valid claim) is told to keep it or revoke it in the same round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

#: The protocol name a consumer offers in JoinGroup.
COOPERATIVE_STICKY = "cooperative-sticky"
#: A member that reports no generation (``AbstractStickyAssignor.DEFAULT_GENERATION``).
DEFAULT_GENERATION = -1

TP = tuple[str, int]


@dataclasses.dataclass(frozen=True, slots=True)
class StickyMember:
    """What the assignor needs of one member's subscription (``AbstractStickyAssignor.MemberData``)."""

    topics: tuple[str, ...]
    #: Partitions the member owns now (ConsumerProtocolSubscription v1+ ``owned_partitions``).
    owned: tuple[TP, ...] = ()
    #: The generation it owned them in (v2+ ``generation_id``), or DEFAULT_GENERATION.
    generation: int = DEFAULT_GENERATION


@dataclasses.dataclass(frozen=True, slots=True)
class StickyResult:
    """The balanced sticky assignment and the partitions in it that change owners (partition -> new owner)."""

    assignment: dict[str, list[TP]]
    transferring: dict[TP, str]


def cooperative_sticky_assign(
    members: Mapping[str, StickyMember], partitions_per_topic: Mapping[str, int]
) -> dict[str, list[TP]]:
    """Return this round's cooperative assignment: :func:`sticky_assign` less the partitions that move owners."""
    result = sticky_assign(members, partitions_per_topic)
    return {m: [tp for tp in tps if result.transferring.get(tp) != m] for m, tps in result.assignment.items()}


def sticky_assign(members: Mapping[str, StickyMember], partitions_per_topic: Mapping[str, int]) -> StickyResult:
    """Return the balanced, sticky assignment of every member (sorted lists) and the moving partitions.

    Parameters
    ----------
    members
        Member id -> its subscription (topics, owned partitions, generation).
    partitions_per_topic
        Topic -> partition count, from the leader's metadata; topics missing are skipped.
    """
    ids = sorted(members)
    topics = sorted({t for m in ids for t in members[m].topics if partitions_per_topic.get(t, 0) > 0})
    every = [(t, p) for t in topics for p in range(partitions_per_topic[t])]
    valid = set(every)
    owned, multi = _resolve_claims(members, ids, valid)
    if len({frozenset(members[m].topics) for m in ids}) <= 1:
        assignment, transferring = _constrained(ids, owned, multi, every)
    else:
        assignment = _general(members, ids, owned, multi, every)
        transferring = _transferring(members, assignment)
    return StickyResult({m: sorted(assignment[m]) for m in ids}, transferring)


def _resolve_claims(
    members: Mapping[str, StickyMember], ids: list[str], valid: set[TP]
) -> tuple[dict[str, list[TP]], set[TP]]:
    """Return each member's valid owned partitions and those claimed twice in one generation."""
    owned: dict[str, list[TP]] = {m: [] for m in ids}
    owner_of: dict[TP, str] = {}
    multi: set[TP] = set()
    for m in ids:
        gen = members[m].generation
        for tp in dict.fromkeys(members[m].owned):
            if tp not in valid:
                continue
            other = owner_of.get(tp)
            if other is None:
                owned[m].append(tp)
                owner_of[tp] = m
                continue
            other_gen = members[other].generation
            if gen == other_gen:
                multi.add(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                owner_of[tp] = m
            elif gen > other_gen:
                owned[m].append(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                owner_of[tp] = m
    return owned, multi


def _constrained(
    ids: list[str], owned: dict[str, list[TP]], multi: set[TP], every: list[TP]
) -> tuple[dict[str, list[TP]], dict[TP, str]]:
    """Kafka's ``ConstrainedAssignmentBuilder`` (every member subscribes to the same topics)."""
    n = len(ids)
    total = len(every)
    if n == 0:
        return {}, {}
    min_q, extra = divmod(total, n)
    max_q = min_q + (1 if extra else 0)
    over = 0  # members given max_q so far (at most ``extra``)
    assignment: dict[str, list[TP]] = {m: [] for m in ids}
    maybe_revoked: dict[TP, str] = {}
    under: list[str] = []
    exact: list[str] = []
    for m in ids:
        mine = sorted((tp for tp in owned[m] if tp not in multi), key=lambda tp: (tp[1], tp[0]))
        if len(mine) < min_q:
            assignment[m].extend(mine)
            under.append(m)
        elif len(mine) >= max_q and over < extra:
            over += 1
            if over == extra:
                exact.clear()
            assignment[m].extend(mine[:max_q])
            maybe_revoked.update(dict.fromkeys(mine[max_q:], m))
        else:
            assignment[m].extend(mine[:min_q])
            maybe_revoked.update(dict.fromkeys(mine[min_q:], m))
            if over < extra:
                exact.append(m)
    taken = {tp for tps in assignment.values() for tp in tps}
    free = [tp for tp in every if tp not in taken]
    under.sort()
    exact.sort()
    transferring: dict[TP, str] = {}
    nxt = 0  # the under-quota iterator: the index of the next member it returns
    for tp in free:
        if nxt < len(under):
            member, last = under[nxt], nxt
            nxt += 1
        elif not under and not exact:
            msg = f"sticky assignor: no member under quota for {tp[0]}-{tp[1]} (a bug)"
            raise AssertionError(msg)
        elif not under:
            member, last = exact.pop(0), -1
        else:
            member, last, nxt = under[0], 0, 1
        assignment[member].append(tp)
        if (tp in maybe_revoked and maybe_revoked[tp] != member) or tp in multi:
            transferring[tp] = member
        count = len(assignment[member])
        if count == min_q and last >= 0:
            del under[last]
            nxt -= 1
            exact.append(member)
        elif count == max_q:
            over += 1
    return assignment, transferring


def _general(
    members: Mapping[str, StickyMember], ids: list[str], owned: dict[str, list[TP]], multi: set[TP], every: list[TP]
) -> dict[str, list[TP]]:
    """Balanced sticky assignment for members subscribed to different topics (simplified, see the docstring)."""
    can = {tp: [m for m in ids if tp[0] in members[m].topics] for tp in every}
    assignment = {m: [tp for tp in owned[m] if tp[0] in members[m].topics and tp not in multi] for m in ids}
    taken = {tp for tps in assignment.values() for tp in tps}
    for tp in sorted((tp for tp in every if tp not in taken), key=lambda tp: (len(can[tp]), tp)):
        if can[tp]:
            best = min(can[tp], key=lambda m: (len(assignment[m]), m))
            assignment[best].append(tp)
    moved = True
    while moved:
        moved = False
        for src in sorted(ids, key=lambda m: (-len(assignment[m]), m)):
            for tp in sorted(assignment[src]):
                dst = min(can[tp], key=lambda m: (len(assignment[m]), m))
                if len(assignment[dst]) + 1 < len(assignment[src]):
                    assignment[src].remove(tp)
                    assignment[dst].append(tp)
                    moved = True
                    break
            if moved:
                break
    return assignment


def _transferring(members: Mapping[str, StickyMember], assignment: Mapping[str, Iterable[TP]]) -> dict[TP, str]:
    """Partitions some member gains while another gives them up (``computePartitionsTransferringOwnership``)."""
    added: dict[TP, str] = {}
    revoked: set[TP] = set()
    for m in sorted(assignment):
        mine = set(assignment[m])
        had = set(members[m].owned)
        added.update((tp, m) for tp in sorted(mine - had))
        revoked.update(had - mine)
    return {tp: m for tp, m in sorted(added.items()) if tp in revoked}
