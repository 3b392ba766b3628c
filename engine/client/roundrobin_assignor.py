"""The round-robin assignor (Kafka's ``RoundRobinAssignor``, librdkafka's ``roundrobin``).

Role
----
Deals every partition of every subscribed topic, topics by name and partitions in order, to the
members one after another, skipping a member not subscribed to the partition's topic::

    t0 with 3 partitions, t1 with 3, members a and b subscribed to both
    ->  a: t0-0 t0-2 t1-1     b: t0-1 t1-0 t1-2

Members are dealt to in Kafka's ``AbstractPartitionAssignor.MemberInfo`` order: static members
(``group.instance.id``) first, by instance id, then the others by member id, so a static member
restarting under a new member id gets the same partitions
(``RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges``).

Invariants
----------
* A pure function of its arguments: no ownership, no stickiness (an eager assignor).
* Every partition of a topic someone subscribes to and the metadata knows goes to exactly one
  member subscribed to it; topics missing from ``partitions_per_topic`` are skipped, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: The protocol name a consumer offers in JoinGroup.
ROUNDROBIN = "roundrobin"


def member_order(members: Iterable[str], instance_ids: Mapping[str, str | None] | None = None) -> list[str]:
    """Return member ids in ``MemberInfo`` order: static members by instance id first, then by member id."""
    ids = instance_ids or {}
    static = sorted((m for m in members if ids.get(m) is not None), key=lambda m: (ids[m], m))
    dynamic = sorted(m for m in members if ids.get(m) is None)
    return static + dynamic


def roundrobin_assign(
    subscriptions: Mapping[str, Iterable[str]],
    partitions_per_topic: Mapping[str, int],
    instance_ids: Mapping[str, str | None] | None = None,
) -> dict[str, list[tuple[str, int]]]:
    """Return ``{member_id: [(topic, partition), ...]}`` for every member (sorted lists).

    Parameters
    ----------
    subscriptions
        Member id -> subscribed topic names.
    partitions_per_topic
        Topic -> partition count, from the leader's metadata.
    instance_ids
        Member id -> ``group.instance.id`` (None or absent: a dynamic member).
    """
    topics_of = {m: frozenset(ts) for m, ts in subscriptions.items()}
    order = member_order(topics_of, instance_ids)
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in sorted(topics_of)}
    if not order:
        return out
    wanted = sorted({t for ts in topics_of.values() for t in ts})
    turn = 0
    for topic in wanted:
        for p in range(max(partitions_per_topic.get(topic, 0), 0)):
            while topic not in topics_of[order[turn % len(order)]]:
                turn += 1
            out[order[turn % len(order)]].append((topic, p))
            turn += 1
    for member in out:
        out[member].sort()
    return out
