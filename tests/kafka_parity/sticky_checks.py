"""Kafka's sticky assignor test helpers, for :mod:`engine.client.sticky_assignor` (not a test module).

``AbstractStickyAssignorTest.verifyValidityAndBalance`` and, for the cooperative assignor,
``CooperativeStickyAssignorTest.verifyValidityAndBalance``: no partition is revoked and assigned
in one round; while partitions are revoked, the members rejoin owning what they were given and
the assignor runs again (at most 4 times); the final assignment is valid and balanced.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.client.sticky_assignor import StickyMember, cooperative_sticky_assign

TP = tuple[str, int]
GENERATION = 1


def member(topics: Iterable[str], owned: Iterable[TP] = (), generation: int = GENERATION) -> StickyMember:
    """A subscription (Kafka's ``buildSubscriptionV2Above``)."""
    return StickyMember(tuple(topics), tuple(owned), generation)


def parts(*tps: TP) -> list[TP]:
    """The sorted list of partitions (the engine's assignors return sorted lists)."""
    return sorted(tps)


def settle(subs: dict[str, StickyMember], assignment: dict[str, list[TP]], ppt: dict[str, int]) -> dict[str, list[TP]]:
    """Run the follow-up rebalances the cooperative protocol needs; check and return the final assignment.

    ``subs`` is updated to the members' last subscriptions (owning what they were given), as in
    Kafka's test.
    """
    rounds = 0
    while _revoking(subs, assignment):
        for m, tps in assignment.items():
            subs[m] = member(subs[m].topics, tps)
        assignment = cooperative_sticky_assign(subs, ppt)
        rounds += 1
        assert rounds <= 4, "the cooperative assignor did not settle in 4 follow-up rebalances"
    check_valid_and_balanced(subs, assignment, ppt)
    return assignment


def _revoking(subs: dict[str, StickyMember], assignment: dict[str, list[TP]]) -> bool:
    added: set[TP] = set()
    revoked: set[TP] = set()
    for m, tps in assignment.items():
        added |= set(tps) - set(subs[m].owned)
        revoked |= set(subs[m].owned) - set(tps)
    both = added & revoked
    assert not both, f"assigned in the same rebalance they are revoked from their owner: {sorted(both)}"
    return bool(revoked)


def check_valid_and_balanced(
    subs: dict[str, StickyMember], assignment: dict[str, list[TP]], ppt: dict[str, int]
) -> None:
    """Every subscribed partition once, to a member subscribed to its topic; no fuller member holds
    a partition an emptier one (by 2 or more) could take."""
    assert sorted(assignment) == sorted(subs)
    seen: dict[TP, str] = {}
    for m, tps in assignment.items():
        for tp in tps:
            assert tp[0] in subs[m].topics, f"{m} is given {tp} of a topic it does not subscribe to"
            assert tp not in seen, f"{tp} is given to both {seen[tp]} and {m}"
            seen[tp] = m
    wanted = {(t, p) for s in subs.values() for t in s.topics for p in range(ppt.get(t, 0))}
    assert set(seen) == wanted, f"unassigned: {sorted(wanted - set(seen))}"
    ids = sorted(assignment)
    for a in ids:
        for b in ids:
            if len(assignment[a]) + 1 < len(assignment[b]):
                movable = [tp for tp in assignment[b] if tp[0] in subs[a].topics]
                assert not movable, f"{b} holds {movable} that emptier {a} could take: not balanced"


def fully_balanced(assignment: dict[str, list[TP]]) -> bool:
    """Kafka's ``isFullyBalanced``: member sizes differ by at most one."""
    sizes = [len(tps) for tps in assignment.values()]
    return max(sizes) - min(sizes) <= 1
