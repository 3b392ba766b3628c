"""L15: a partition has at most one owner in a KIP-848 consumer group, at every moment.

Role
----
The consumer protocol's safety rule (KIP-848, Kafka's ``CurrentAssignmentBuilder``): a partition
is revoked from its owner before it is assigned to another member. A member *holds* a partition
while it is in its current assignment or pending revocation (what
``ConsumerGroup.partition_epochs`` tracks). :class:`GroupOwnership` is a read-only observer: each
time a coordinator reconciles a member (the ``cgroup.reconciled`` event, emitted
once the member's new assignment is in place), it reads that coordinator's group and reports
every partition two members hold at once as an ``L15-two-owners`` anomaly. Checking at each
reconciliation is enough: only a reconciliation (or a static member's replacement, which hands
the old member's partitions to the new one and removes the old) gives a member partitions.

Mutant M19 (``Weakenings.revoke_before_assign=False``) breaks the rule; this check catches it.

Invariants
----------
* It never changes the run: it reads the coordinator's in-memory group, draws no randomness and
  emits no trace event (the fingerprint is the same with it attached).
* It reads each coordinator's own state: a stale coordinator (crashed, or cut off) is judged on
  what it holds, never mixed with the new one's.
* Anomalies are reported once per (group, partition, holders), in the order they arose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.check.anomaly import Anomaly
from engine.group.coordinator import GroupCoordinator

if TYPE_CHECKING:
    from engine.cluster import Cluster
    from engine.sim.trace import TraceEvent

__all__ = ["L15_TWO_OWNERS", "RECONCILED", "GroupOwnership", "two_owners"]

L15_TWO_OWNERS = "L15-two-owners"
#: The coordinator's event after it gave a member its next assignment.
RECONCILED = events.CGROUP_RECONCILED


def two_owners(holdings: dict[str, frozenset[tuple[str, int]]]) -> dict[tuple[str, int], tuple[str, ...]]:
    """Return every partition held by more than one member, with its holders (in ``holdings`` order)."""
    holders: dict[tuple[str, int], list[str]] = {}
    for member_id, held in holdings.items():
        for tp in sorted(held):
            holders.setdefault(tp, []).append(member_id)
    return {tp: tuple(ids) for tp, ids in sorted(holders.items()) if len(ids) > 1}


class GroupOwnership:
    """Observer: after each KIP-848 reconciliation, report partitions with two holders (L15).

    Parameters
    ----------
    cluster
        The cluster to watch; attach with :meth:`attach`.
    """

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._seen: set[tuple[str, tuple[str, int], tuple[str, ...]]] = set()
        self.anomalies: list[Anomaly] = []

    @classmethod
    def attach(cls, cluster: Cluster) -> GroupOwnership:
        """Build the observer and attach it to the cluster's world; return it."""
        watcher = cls(cluster)
        cluster.world.attach(watcher)
        return watcher

    def on_event(self, event: TraceEvent) -> None:
        """A coordinator reconciled a member: check that coordinator's group."""
        if event.name != RECONCILED:
            return
        group_id = event.get("group")
        broker = self._cluster.world.nodes.get(event.node)
        for ext in getattr(broker, "extensions", ()):
            if isinstance(ext, GroupCoordinator):
                g = ext.consumer.groups.get(group_id)
                if g is not None:
                    self._check(event, group_id, g.members.values())

    def _check(self, event: TraceEvent, group_id: str, members: object) -> None:
        holdings = {
            m.member_id: m.assignment.assigned | m.assignment.pending_revocation
            for m in members  # type: ignore[attr-defined]
        }
        for tp, ids in two_owners(holdings).items():
            key = (group_id, tp, ids)
            if key in self._seen:
                continue
            self._seen.add(key)
            self.anomalies.append(
                Anomaly(
                    L15_TWO_OWNERS,
                    key=tp,
                    values=ids,
                    message=f"group {group_id!r} on {event.node} at {event.time_ms} ms: {tp[0]}-{tp[1]} is held by "
                    f"{len(ids)} members at once ({', '.join(ids)}); KIP-848 revokes a partition before it "
                    "assigns it elsewhere",
                )
            )
