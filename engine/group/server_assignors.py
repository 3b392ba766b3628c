"""KIP-848 server-side assignors: ``uniform`` and ``range``, as Kafka's group coordinator computes them.

Role
----
A consumer group using the consumer protocol (KIP-848) has its target assignment computed by the
coordinator, not by a member. The broker setting ``group.consumer.assignors`` lists the assignors
it offers (Kafka's default ``uniform,range``; the first is the default); a member picks one with the
heartbeat's ``server_assignor``. The group uses the assignor its members name most often (ties: the
first in the setting's order; Kafka's ``ConsumerGroup.computePreferredServerAssignor``), else the
default.

=========  ==========================================================================================
assignor   what it computes (homogeneous subscriptions: every member subscribes to the same topics)
=========  ==========================================================================================
uniform    Kafka's ``UniformHomogeneousAssignmentBuilder``: every member's quota is
           ``total // members`` (the first ``total % members`` members, in member order, get one more);
           a member keeps the partitions of its current target up to its quota, and the partitions set
           free go, in topic then partition order, to the members still under quota. Sticky: only
           what must move moves.
range      Kafka's ``RangeAssignor`` (group coordinator): members sorted by instance id (static
           members first), then member id; for every topic each member in turn gets the next
           ``partitions // members`` consecutive partitions, the first ``partitions % members`` one more.
=========  ==========================================================================================

Heterogeneous subscriptions (members subscribed to different topics) are assigned per topic among
the members subscribed to it, with the same rules (Kafka's heterogeneous builders are stickier and
balance across topics; that refinement is not modelled).

Invariants
----------
* Deterministic: member ids and topic names are iterated sorted (Kafka iterates hash maps: a
  different but equally valid assignment; conformance compares counts, not which member got which).
* Every partition of a subscribed topic is assigned to exactly one subscribed member.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

TopicPartition = tuple[str, int]
Assignment = frozenset[TopicPartition]

#: Kafka's default of ``group.consumer.assignors``.
DEFAULT_ASSIGNORS: tuple[str, ...] = ("uniform", "range")


@dataclasses.dataclass(frozen=True, slots=True)
class MemberSpec:
    """What an assignor knows of a member: its subscription, instance id and current target."""

    subscribed_topics: frozenset[str]
    instance_id: str | None = None
    assignment: Assignment = frozenset()


def assign(name: str, members: Mapping[str, MemberSpec], partition_counts: Mapping[str, int]) -> dict[str, Assignment]:
    """Return the target assignment ``{member id: partitions}`` that assignor ``name`` computes.

    Topics missing from ``partition_counts`` (not created yet) are skipped, as Kafka's subscription
    metadata holds only existing topics.
    """
    if name not in _ASSIGNORS:
        raise ValueError(f"unknown server assignor {name!r}; known: {', '.join(sorted(_ASSIGNORS))}")
    out: dict[str, set[TopicPartition]] = {m: set() for m in sorted(members)}
    subscriptions = {members[mid].subscribed_topics for mid in members}
    if len(subscriptions) == 1:  # homogeneous: every member subscribes to the same topics
        topics = sorted(t for t in next(iter(subscriptions)) if t in partition_counts)
        for mid, tps in _ASSIGNORS[name](members, sorted(members), topics, partition_counts).items():
            out[mid] |= tps
    else:
        by_topic: dict[str, list[str]] = {}
        for mid in sorted(members):
            for t in sorted(members[mid].subscribed_topics):
                by_topic.setdefault(t, []).append(mid)
        for t in sorted(by_topic):
            if t in partition_counts:
                for mid, tps in _ASSIGNORS[name](members, by_topic[t], [t], partition_counts).items():
                    out[mid] |= tps
    return {mid: frozenset(tps) for mid, tps in out.items()}


def _uniform(
    members: Mapping[str, MemberSpec], member_ids: list[str], topics: list[str], counts: Mapping[str, int]
) -> dict[str, set[TopicPartition]]:
    """Kafka's ``UniformHomogeneousAssignmentBuilder.build``: keep up to the quota, fill the rest."""
    if not member_ids:
        return {}
    subscribed = set(topics)
    total = sum(counts[t] for t in topics)
    taken = {tp for mid in member_ids for tp in members[mid].assignment if tp[0] in subscribed}
    unassigned = [(t, p) for t in topics for p in range(counts[t]) if (t, p) not in taken]
    minimum, extra = divmod(total, len(member_ids))
    target: dict[str, set[TopicPartition]] = {}
    unfilled: list[tuple[str, int]] = []
    for mid in member_ids:
        quota = minimum + (1 if extra > 0 else 0)
        extra = max(extra - 1, 0)
        kept: set[TopicPartition] = set()
        for tp in sorted(members[mid].assignment):
            if tp[0] not in subscribed or tp[1] >= counts[tp[0]]:
                continue
            if quota > 0:
                kept.add(tp)
                quota -= 1
            else:
                unassigned.append(tp)
        target[mid] = kept
        if quota > 0:
            unfilled.append((mid, quota))
    i = 0
    for mid, quota in unfilled:
        for _ in range(quota):
            if i >= len(unassigned):
                break
            target[mid].add(unassigned[i])
            i += 1
    return target


def _range(
    members: Mapping[str, MemberSpec], member_ids: list[str], topics: list[str], counts: Mapping[str, int]
) -> dict[str, set[TopicPartition]]:
    """Kafka's ``RangeAssignor.assignHomogeneousGroup``: consecutive ranges per topic, in member order."""

    def order(mid: str) -> tuple[int, str, str]:
        iid = members[mid].instance_id
        return (0, iid, mid) if iid is not None else (1, "", mid)

    ordered = sorted(member_ids, key=order)
    target: dict[str, set[TopicPartition]] = {m: set() for m in ordered}
    for t in topics:
        quota, extra = divmod(counts[t], len(ordered)) if ordered else (0, 0)
        start = 0
        for i, mid in enumerate(ordered):
            n = quota + (1 if i < extra else 0)
            target[mid].update((t, p) for p in range(start, start + n))
            start += n
    return target


_ASSIGNORS = {"uniform": _uniform, "range": _range}


def preferred_assignor(member_choices: list[str | None], offered: tuple[str, ...]) -> str:
    """The assignor a group uses: the one its members name most (ties: ``offered`` order), else the default."""
    counts = dict.fromkeys(offered, 0)
    for c in member_choices:
        if c is not None and c in counts:
            counts[c] += 1
    best = max(offered, key=lambda n: (counts[n], -offered.index(n)))
    return best if counts[best] > 0 else offered[0]
