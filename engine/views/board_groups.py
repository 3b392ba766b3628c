"""The dashboard's consumer-group rows: one :class:`GroupRow` per group its coordinator holds.

Role
----
``GroupRow`` is one consumer group as its coordinator holds it: protocol (classic or consumer),
state, generation (classic) or group epoch and target assignment epoch (consumer), per member its
client, member epoch (consumer) and assignment, and the group's lag (HW - committed offset, summed
over its partitions). It is read through :func:`engine.views.consumer_groups.group_view`, the view
``%eos_consumer_groups describe`` prints, so the panel and the text never disagree.
:class:`~engine.views.board.BoardState` holds the rows.

Invariants
----------
* Read-only, deterministic: groups sorted by id, members in the coordinator's order.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, NamedTuple

from engine.group.coordinator import GroupCoordinator
from engine.views.consumer_groups import group_view, leader_offsets

if TYPE_CHECKING:
    from engine.views.lookup import ClusterState

Key = tuple[str, int]


class GroupMember(NamedTuple):
    """One member of a group on the board (``epoch``: a consumer-protocol member's, else None)."""

    member_id: str
    client_id: str
    epoch: int | None
    assignment: tuple[Key, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class GroupRow:
    """One consumer group, as its coordinator holds it (:func:`engine.views.consumer_groups.group_view`)."""

    group_id: str
    coordinator: int
    #: ``"classic"`` or ``"consumer"`` (KIP-848).
    protocol: str
    state: str
    #: The classic generation, or a consumer group's group epoch.
    generation: int
    #: A consumer group's target assignment epoch (None for a classic group).
    assignment_epoch: int | None
    members: tuple[GroupMember, ...]
    #: HW - committed offset summed over the partitions with a committed offset (None: none yet,
    #: or a partition without a live leader).
    lag: int | None


def all_group_rows(cluster: ClusterState) -> tuple[GroupRow, ...]:
    """Read every consumer group the up coordinators hold, one row per group id (sorted by id).

    A group id is read as :func:`~engine.views.consumer_groups.group_view` answers for it (from
    the coordinator that leads its ``__consumer_offsets`` partition); a dead group, and an empty
    one with no offsets, have no row.
    """
    ids: set[str] = set()
    for b in sorted(cluster.brokers):
        broker = cluster.brokers[b]
        if broker.status.value != "up":
            continue
        for ext in broker.extensions:
            if isinstance(ext, GroupCoordinator):
                ids.update(ext.groups)
                ids.update(ext.consumer.groups)
    rows = []
    for gid in sorted(ids):
        v = group_view(cluster, gid)
        if v is None or v.state == "Dead" or not (v.members or v.committed or v.pending_transactional):
            continue  # an empty group an OffsetFetch made: nothing to show (Kafka keeps no such group)
        lag: int | None = None
        for t, p, offset in v.committed:
            hw, _lso = leader_offsets(cluster, t, p)
            if hw is None:
                lag = None
                break
            lag = (lag or 0) + hw - offset
        members = tuple(GroupMember(m.member_id, m.client_id, m.member_epoch, m.assignment) for m in v.members)
        rows.append(
            GroupRow(gid, v.coordinator, v.group_protocol, v.state, v.generation, v.assignment_epoch, members, lag)
        )
    return tuple(rows)
