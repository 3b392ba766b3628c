"""The range assignor (Kafka's ``RangeAssignor``, ``partition.assignment.strategy`` default ``range``).

The classic protocol computes the assignment on the *client*: the group leader receives every
member's subscription in its JoinGroup response, runs the assignor, and sends the result in its
SyncGroup. The coordinator only stores and hands it out.

Per topic, the members subscribed to it are sorted by member id; with ``n`` partitions and ``m``
members, each gets ``n // m`` consecutive partitions and the first ``n % m`` members one more::

    4 partitions, 2 members  ->  a: 0 1   b: 2 3
    5 partitions, 2 members  ->  a: 0 1 2 b: 3 4
    2 partitions, 3 members  ->  a: 0     b: 1     c: -

Simplified: static members (``group.instance.id``) are sorted by member id like the others; Kafka
sorts them by instance id first. Rack-aware assignment (KIP-881) is not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: The protocol name a consumer offers in JoinGroup.
RANGE = "range"


def range_assign(
    subscriptions: Mapping[str, Iterable[str]], partitions_per_topic: Mapping[str, int]
) -> dict[str, list[tuple[str, int]]]:
    """Return ``{member_id: [(topic, partition), ...]}`` for every member (sorted lists).

    ``subscriptions`` maps member ids to their subscribed topics; topics missing from
    ``partitions_per_topic`` (unknown to the leader's metadata) are skipped, as Kafka does.
    """
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in sorted(subscriptions)}
    by_topic: dict[str, list[str]] = {}
    for member in sorted(subscriptions):
        for topic in sorted(set(subscriptions[member])):
            by_topic.setdefault(topic, []).append(member)
    for topic in sorted(by_topic):
        n = partitions_per_topic.get(topic)
        if n is None or n <= 0:
            continue
        members = by_topic[topic]
        per, extra = divmod(n, len(members))
        for i, member in enumerate(members):
            start = per * i + min(i, extra)
            length = per + (1 if i < extra else 0)
            out[member].extend((topic, p) for p in range(start, start + length))
    for member in out:
        out[member].sort()
    return out
