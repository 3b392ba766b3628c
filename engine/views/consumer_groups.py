"""``kafka-consumer-groups.sh --describe`` for the simulated cluster, plus a frozen :class:`GroupView`.

:func:`describe_group` prints what the real tool prints (views.md §3.3, ``ConsumerGroupCommand``):
each row *preceded* by a newline, so the text starts with an empty line; columns left-aligned and
separated by one space; GROUP, TOPIC, CONSUMER-ID and HOST as wide as their longest value (at
least 15), PARTITION 10, the offsets 15; ``-`` for a missing value. As in the real tool,
LOG-END-OFFSET is the partition's **high watermark** (``ListOffsets(latest)`` under
read_uncommitted), and LAG = LOG-END-OFFSET - CURRENT-OFFSET.

Two columns are added on the right, which the real tool does not have:

``LSO``
    the partition's last stable offset (what a read_committed consumer can reach);
``LAG-TO-LSO``
    LSO - CURRENT-OFFSET.

Why: with transactions the real LAG often never reaches 0, because the HW counts offsets that
hold no record a read_committed consumer is given:

- an *open* (or hanging) transaction's records sit below the HW but above the LSO: a consumer
  that has read everything it may read still shows LAG = their count (LAG-TO-LSO = 0);
- every transaction ends with a marker, which takes an offset. A client that commits its
  *position* (``commit()`` without arguments, Kafka's ``commitSync()``) has moved past the
  marker; one that commits ``last record + 1`` (``commit(message)``, many frameworks) stays one
  below it and shows LAG = LAG-TO-LSO = 1 for ever (librdkafka #2539, #3917; kafbat/kafka-ui
  #1039). LAG-TO-LSO does not hide that case: the marker is below the LSO too.

Choices: rows are sorted by (topic, partition); partitions with a committed offset but no owner
show ``-`` as consumer; the ``--members --verbose`` ASSIGNMENT column uses the Scala tool's
``topic(0,1)`` form. Notices that the real tool writes to stderr ("has no active members",
"is rebalancing") are put first in the returned text, as a terminal would show them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from engine import args
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for

if TYPE_CHECKING:
    from engine.cluster import Cluster
    from engine.group.coordinator import GroupCoordinator


@dataclasses.dataclass(frozen=True, slots=True)
class MemberView:
    """One member of a group."""

    member_id: str
    client_id: str
    host: str
    subscription: tuple[str, ...]
    assignment: tuple[tuple[str, int], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class GroupView:
    """A consumer group at one instant, as its coordinator holds it."""

    group_id: str
    #: The coordinator's broker id (the leader of the group's ``__consumer_offsets`` partition).
    coordinator: int
    #: Kafka's state name: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead.
    state: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberView, ...]
    #: ``(topic, partition, offset)`` committed (plain, or by a committed transaction).
    committed: tuple[tuple[str, int, int], ...]
    #: ``(producer_id, topic, partition, offset)`` written in a transaction not decided yet.
    pending_transactional: tuple[tuple[int, str, int, int], ...]

    @property
    def assignment(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """Return ``{member_id: partitions}``."""
        return {m.member_id: m.assignment for m in self.members}

    def committed_offset(self, topic: str, partition: int) -> int | None:
        """Return the committed offset of one partition, or None."""
        for t, p, o in self.committed:
            if (t, p) == (topic, partition):
                return o
        return None


#: The column headers of ``--describe`` (offsets, with this engine's LSO and LAG-TO-LSO),
#: ``--members`` (``--verbose`` adds ASSIGNMENT) and ``--state``.
OFFSETS_HEADER = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
    "LSO",
    "LAG-TO-LSO",
)
MEMBERS_HEADER = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
STATE_HEADER = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")


def _coordinator(cluster: Cluster, group_id: str) -> tuple[int, GroupCoordinator | None]:
    n = cluster.config.offsets_topic_num_partitions
    state = cluster.controller.partitions.get((CONSUMER_OFFSETS_TOPIC, partition_for(group_id, n)))
    if state is None or state.leader < 0:
        return -1, None
    broker = cluster.brokers.get(state.leader)
    if broker is None or not broker.is_up:
        return state.leader, None
    from engine.group.coordinator import GroupCoordinator

    for ext in broker.extensions:
        if isinstance(ext, GroupCoordinator):
            return state.leader, ext
    return state.leader, None


def group_view(cluster: Cluster, group_id: str) -> GroupView | None:
    """Return the group as its coordinator holds it now, or None if no coordinator knows it.

    None also while the group's coordinator is down or loading: a view reads what a broker would
    answer, and ``describe_group`` prints the tool's "does not exist" line then.
    """
    args.check_str(group_id, "group id")
    coordinator, ext = _coordinator(cluster, group_id)
    g = ext.groups.get(group_id) if ext is not None else None
    if g is None:
        return None
    members = tuple(
        MemberView(m.member_id, m.client_id, m.client_host, m.subscription.topics, m.assignment.partitions)
        for m in g.members.values()
    )
    committed = tuple((t, p, g.committed[(t, p)].offset) for t, p in sorted(g.committed))
    pending = tuple(
        (pid, t, p, g.pending_txn[pid][(t, p)].offset)
        for pid in sorted(g.pending_txn)
        for t, p in sorted(g.pending_txn[pid])
    )
    return GroupView(
        group_id, coordinator, g.state.value, g.generation, g.protocol, g.leader, members, committed, pending
    )


def _offsets(cluster: Cluster, topic: str, partition: int) -> tuple[int | None, int | None]:
    """Return the leader's (HW, LSO) of a partition, or Nones when it has no live leader."""
    state = cluster.controller.partitions.get((topic, partition))
    broker = cluster.brokers.get(state.leader) if state is not None else None
    r = broker.replicas.get((topic, partition)) if broker is not None and broker.is_up else None
    if r is None or not r.is_leader:
        return None, None
    return r.high_watermark, r.last_stable_offset


def _s(x: object) -> str:
    return "-" if x is None else str(x)


def _notice(view: GroupView) -> str:
    if view.state == "Empty":
        return f"\nConsumer group '{view.group_id}' has no active members.\n"
    if view.state in ("PreparingRebalance", "CompletingRebalance"):
        return f"\nWarning: Consumer group '{view.group_id}' is rebalancing.\n"
    return ""


def describe_group(
    cluster: Cluster, group_id: str, *, members: bool = False, state: bool = False, verbose: bool = False
) -> str:
    """Return ``kafka-consumer-groups.sh --describe --group <id>`` (``--members``, ``--state`` variants)."""
    view = group_view(cluster, group_id)
    if view is None or view.state == "Dead":
        return f"Error: Consumer group '{group_id}' does not exist.\n"
    if state:
        return describe_state(cluster, view)
    if members:
        return _notice(view) + describe_members(view, verbose=verbose)
    return _notice(view) + describe_offsets(cluster, view)


def describe_offsets(cluster: Cluster, view: GroupView) -> str:
    """The default ``--describe`` table (``--offsets``), with LSO and LAG-TO-LSO added on the right."""
    owner: dict[tuple[str, int], MemberView] = {}
    for m in view.members:
        for tp in m.assignment:
            owner[tp] = m
    committed = {(t, p): o for t, p, o in view.committed}
    rows = []
    for tp in sorted(set(owner) | set(committed)):
        m = owner.get(tp)
        current = committed.get(tp)
        hw, lso = _offsets(cluster, *tp)
        lag = hw - current if hw is not None and current is not None else None
        lag_lso = lso - current if lso is not None and current is not None else None
        rows.append(
            (
                view.group_id,
                tp[0],
                str(tp[1]),
                _s(current),
                _s(hw),
                _s(lag),
                m.member_id if m else "-",
                m.host if m else "-",
                m.client_id if m else "-",
                _s(lso),
                _s(lag_lso),
            )
        )
    header = OFFSETS_HEADER
    w = [max(15, *(len(r[i]) for r in rows)) if rows else 15 for i in range(len(header))]
    widths = (w[0], w[1], 10, 15, 15, 15, w[6], w[7], w[8], 15)
    return "".join("\n" + _row(r, widths) for r in (header, *rows)) + "\n"


def describe_members(view: GroupView, *, verbose: bool = False) -> str:
    """``--describe --members`` (and ``--verbose``: the ASSIGNMENT column, Scala tool style)."""
    header = list(MEMBERS_HEADER)
    rows = []
    for m in view.members:
        row = [view.group_id, m.member_id, m.host, m.client_id, str(len(m.assignment))]
        if verbose:
            row.append(_assignment(m.assignment))
        rows.append(tuple(row))
    if verbose:
        header.append("ASSIGNMENT")
    w = [max(15, *(len(r[i]) for r in rows)) if rows else 15 for i in range(4)]
    widths = (*w, 15) if verbose else tuple(w)
    return "".join("\n" + _row(tuple(r), widths) for r in (tuple(header), *rows)) + "\n"


def _assignment(tps: tuple[tuple[str, int], ...]) -> str:
    if not tps:
        return "-"
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return ", ".join(f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in sorted(by_topic.items()))


def describe_state(cluster: Cluster, view: GroupView) -> str:
    """``--describe --state``: coordinator as ``host:port  (id)``, strategy, state, member count."""
    coordinator = f"broker-{view.coordinator}:9092  ({view.coordinator})"
    header = STATE_HEADER
    row = (view.group_id, coordinator, view.protocol or "", view.state, str(len(view.members)))
    widths = (max(15, len(view.group_id)), max(25, len(coordinator)), 20, 20)
    return "".join("\n" + _row(r, widths) for r in (header, row)) + "\n"


def _row(values: tuple[str, ...], widths: tuple[int, ...]) -> str:
    """Left-align each value to its width; the last column is not padded (``%s``)."""
    cells = [v.ljust(widths[i]) for i, v in enumerate(values[:-1])]
    return " ".join([*cells, values[-1]])
