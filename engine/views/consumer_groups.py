"""``kafka-consumer-groups.sh --describe`` for the simulated cluster, plus a frozen :class:`GroupView`.

:func:`describe_group` prints what Kafka 4.4's tool prints (``ConsumerGroupCommand``, the
kafka-tools jar; its output for classic, KIP-848, static and empty groups is kept in
tests/unit/views/fixtures/kafka_4_4_consumer_groups_*.txt, captured by
scripts/capture-consumer-groups.py): each row *preceded* by a newline, so the text starts with an
empty line; columns left-aligned and separated by one space; ``-`` for a missing value.

``--offsets`` (the default)
    GROUP, TOPIC, CONSUMER-ID and HOST as wide as their longest value (at least 15), PARTITION
    10, the offsets 15, CLIENT-ID last. Rows member by member (each member's partitions sorted),
    then the partitions with a committed offset and no owner. LOG-END-OFFSET is the partition's
    **high watermark** (``ListOffsets(latest)`` under read_uncommitted), LAG = LOG-END-OFFSET -
    CURRENT-OFFSET.
``--members``
    GROUP, CONSUMER-ID, [GROUP-INSTANCE-ID,] HOST, CLIENT-ID, #PARTITIONS; GROUP-INSTANCE-ID
    (at least 17 wide) only when a member has one (``group.instance.id``); #PARTITIONS is
    ``%-15s `` (a trailing space). ``--verbose`` adds CURRENT-EPOCH (15), CURRENT-ASSIGNMENT,
    TARGET-EPOCH (15) and TARGET-ASSIGNMENT (both assignments at least 20 wide, written
    ``topic:0,1;other:2``, the last one padded too). A classic member has no epochs and no target:
    ``-``.
``--state``
    GROUP, COORDINATOR (ID) (25), ASSIGNMENT-STRATEGY (20), STATE (20), #MEMBERS; ``--verbose``
    puts GROUP-EPOCH (15) and TARGET-ASSIGNMENT-EPOCH (25) before #MEMBERS (``-`` for a classic
    group).

Notices the tool writes to stderr ("has no active members", "is rebalancing") are put first in the
returned text, as a terminal shows them; an unknown group prints the tool's
``Error: Executing consumer group command failed due to ...GroupIdNotFoundException`` line.

Two columns are added on the right of ``--offsets``, which the real tool does not have:

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

With them CLIENT-ID is padded to its width (at least 15) like the other text columns.

Groups of both protocols
------------------------
:class:`GroupView` and :class:`MemberView` hold what either protocol shows: ``group_protocol``
(``"classic"`` or ``"consumer"``, KIP-848), the group epoch and target assignment epoch, each
member's epoch and target assignment (None for a classic group). :func:`group_view` reads a
classic group from the coordinator's :class:`~engine.group.metadata.GroupMetadata` and a KIP-848
group from :meth:`engine.group.consumer_group.ConsumerGroup.view` (its committed offsets are kept
in the coordinator's offsets store like a classic group's); the rendering takes either.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from engine import args
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for

if TYPE_CHECKING:
    from engine.group.coordinator import GroupCoordinator
    from engine.views.lookup import ClusterState

TopicPartitions = tuple[tuple[str, int], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class MemberView:
    """One member of a group.

    ``member_epoch`` and ``target_assignment`` are a consumer-protocol (KIP-848) member's; a
    classic member has None for both.
    """

    member_id: str
    client_id: str
    host: str
    subscription: tuple[str, ...]
    assignment: TopicPartitions
    group_instance_id: str | None = None
    member_epoch: int | None = None
    target_assignment: TopicPartitions | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class GroupView:
    """A consumer group at one instant, as its coordinator holds it."""

    group_id: str
    #: The coordinator's broker id (the leader of the group's ``__consumer_offsets`` partition).
    coordinator: int
    #: Kafka's state name: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead (classic);
    #: Empty, Assigning, Reconciling, Stable, Dead (consumer).
    state: str
    #: The classic generation (for a consumer group, its group epoch).
    generation: int
    #: The assignor's name (classic: the protocol the members agreed on; consumer: the server
    #: assignor, ``uniform`` or ``range``), None while there is none.
    protocol: str | None
    leader: str | None
    members: tuple[MemberView, ...]
    #: ``(topic, partition, offset)`` committed (plain, or by a committed transaction).
    committed: tuple[tuple[str, int, int], ...]
    #: ``(producer_id, topic, partition, offset)`` written in a transaction not decided yet.
    pending_transactional: tuple[tuple[int, str, int, int], ...]
    #: ``"classic"`` (JoinGroup/SyncGroup) or ``"consumer"`` (KIP-848 ConsumerGroupHeartbeat).
    group_protocol: str = "classic"
    #: A consumer group's epoch and its target assignment's epoch (None for a classic group).
    group_epoch: int | None = None
    assignment_epoch: int | None = None

    @property
    def assignment(self) -> dict[str, TopicPartitions]:
        """Return ``{member_id: partitions}``."""
        return {m.member_id: m.assignment for m in self.members}

    def committed_offset(self, topic: str, partition: int) -> int | None:
        """Return the committed offset of one partition, or None."""
        for t, p, o in self.committed:
            if (t, p) == (topic, partition):
                return o
        return None


#: The column headers of ``--describe`` (offsets, with this engine's LSO and LAG-TO-LSO),
#: ``--members`` (GROUP-INSTANCE-ID goes after CONSUMER-ID when a member is static; ``--verbose``
#: adds :data:`MEMBERS_VERBOSE`) and ``--state`` (``--verbose`` adds :data:`STATE_VERBOSE`
#: before #MEMBERS).
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
MEMBERS_VERBOSE = ("CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
STATE_HEADER = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
STATE_VERBOSE = ("GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH")


def _coordinator(cluster: ClusterState, group_id: str) -> tuple[int, GroupCoordinator | None]:
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


def group_view(cluster: ClusterState, group_id: str) -> GroupView | None:
    """Return the group as its coordinator holds it now, or None if no coordinator knows it.

    None also while the group's coordinator is down or loading: a view reads what a broker would
    answer, and ``describe_group`` prints the tool's "not found" line then.
    """
    args.check_str(group_id, "group id")
    coordinator, ext = _coordinator(cluster, group_id)
    if ext is None:
        return None
    g = ext.groups.get(group_id)
    committed = () if g is None else tuple((t, p, g.committed[(t, p)].offset) for t, p in sorted(g.committed))
    pending = (
        ()
        if g is None
        else tuple(
            (pid, t, p, g.pending_txn[pid][(t, p)].offset)
            for pid in sorted(g.pending_txn)
            for t, p in sorted(g.pending_txn[pid])
        )
    )
    cg = ext.consumer.groups.get(group_id)
    if cg is not None:  # a KIP-848 group; its offsets are kept like a classic group's
        v = cg.view()
        members = tuple(
            MemberView(
                m.member_id,
                m.client_id,
                m.client_host,
                m.subscribed_topics,
                m.assignment,
                m.instance_id,
                m.member_epoch,
                m.target_assignment,
            )
            for m in v.members
        )
        return GroupView(
            group_id,
            coordinator,
            v.state,
            v.group_epoch,
            v.assignor,
            None,
            members,
            committed,
            pending,
            "consumer",
            v.group_epoch,
            v.assignment_epoch,
        )
    if g is None:
        return None
    members = tuple(
        MemberView(
            m.member_id,
            m.client_id,
            m.client_host,
            m.subscription.topics,
            m.assignment.partitions,
            m.group_instance_id,
        )
        for m in g.members.values()
    )
    return GroupView(
        group_id, coordinator, g.state.value, g.generation, g.protocol, g.leader, members, committed, pending
    )


def leader_offsets(cluster: ClusterState | None, topic: str, partition: int) -> tuple[int | None, int | None]:
    """Return the leader's (HW, LSO) of a partition, or Nones when it has no live leader."""
    if cluster is None:
        return None, None
    state = cluster.controller.partitions.get((topic, partition))
    broker = cluster.brokers.get(state.leader) if state is not None else None
    r = broker.replicas.get((topic, partition)) if broker is not None and broker.is_up else None
    if r is None or not r.is_leader:
        return None, None
    return r.high_watermark, r.last_stable_offset


def _s(x: object) -> str:
    return "-" if x is None else str(x)


def not_found(group_id: str) -> str:
    """Return what Kafka 4.4's tool prints for a group no coordinator knows (or a dead one)."""
    return (
        "\nError: Executing consumer group command failed due to "
        f"org.apache.kafka.common.errors.GroupIdNotFoundException: Group {group_id} not found.\n"
    )


def _notice(view: GroupView) -> str:
    if view.state == "Empty":
        return f"\nConsumer group '{view.group_id}' has no active members.\n"
    if view.state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        return f"\nWarning: Consumer group '{view.group_id}' is rebalancing.\n"
    return ""


def describe_group(
    cluster: ClusterState, group_id: str, *, members: bool = False, state: bool = False, verbose: bool = False
) -> str:
    """Return ``kafka-consumer-groups.sh --describe --group <id>`` (``--members``, ``--state`` variants)."""
    return render(group_view(cluster, group_id), cluster, group_id, members=members, state=state, verbose=verbose)


def render(
    view: GroupView | None,
    cluster: ClusterState,
    group_id: str,
    *,
    members: bool = False,
    state: bool = False,
    verbose: bool = False,
) -> str:
    """Return the tool's text for ``view`` (None: the group is not found)."""
    if view is None or view.state == "Dead":
        return not_found(group_id)
    if state:
        return _notice(view) + describe_state(cluster, view, verbose=verbose)
    if members:
        return _notice(view) + describe_members(view, verbose=verbose)
    return _notice(view) + describe_offsets(cluster, view)


def describe_offsets(
    cluster: ClusterState | None, view: GroupView, *, ends: dict[tuple[str, int], tuple[int, int]] | None = None
) -> str:
    """The default ``--describe`` table (``--offsets``), with LSO and LAG-TO-LSO added on the right.

    ``ends`` gives each partition's (HW, LSO) instead of reading them from ``cluster`` (a board
    replayed at a past step, or a test).
    """
    committed = {(t, p): o for t, p, o in view.committed}
    order: list[tuple[tuple[str, int], MemberView | None]] = []
    owned: set[tuple[str, int]] = set()
    for m in view.members:
        for tp in sorted(m.assignment):
            if tp not in owned:
                owned.add(tp)
                order.append((tp, m))
    order.extend((tp, None) for tp in sorted(set(committed) - owned))
    rows = []
    for tp, m in order:
        current = committed.get(tp)
        hw, lso = ends.get(tp, (None, None)) if ends is not None else leader_offsets(cluster, *tp)
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
    w = _widths(OFFSETS_HEADER, rows)
    widths = (w[0], w[1], 10, 15, 15, 15, w[6], w[7], w[8], 15)
    return "".join("\n" + _row(r, widths) for r in (OFFSETS_HEADER, *rows)) + "\n"


def describe_members(view: GroupView, *, verbose: bool = False) -> str:
    """``--describe --members`` (``--verbose``: epochs, current and target assignments)."""
    static = any(m.group_instance_id is not None for m in view.members)
    #: (header, least width; 0: exactly 15) of each column, as the tool's printMembers sizes them
    columns = [("GROUP", 15), ("CONSUMER-ID", 15), *([("GROUP-INSTANCE-ID", 17)] if static else [])]
    columns += [("HOST", 15), ("CLIENT-ID", 15), ("#PARTITIONS", 0)]
    if verbose:
        columns += [("CURRENT-EPOCH", 0), ("CURRENT-ASSIGNMENT", 20), ("TARGET-EPOCH", 0), ("TARGET-ASSIGNMENT", 20)]
    rows = []
    for m in view.members:
        row = [view.group_id, m.member_id, *([_s(m.group_instance_id)] if static else [])]
        row += [m.host, m.client_id, str(len(m.assignment))]
        if verbose:
            target = None if m.target_assignment is None else assignment_text(m.target_assignment)
            row += [_s(m.member_epoch), assignment_text(m.assignment), _s(view.assignment_epoch), _s(target)]
        rows.append(tuple(row))
    widths = tuple(
        15 if least == 0 else max(least, *(len(r[i]) for r in rows)) if rows else max(least, 15)
        for i, (_, least) in enumerate(columns)
    )
    header = tuple(name for name, _ in columns)
    tail = "" if verbose else " "
    return "".join("\n" + _row(r, widths, pad_last=True) + tail for r in (header, *rows)) + "\n"


def assignment_text(tps: TopicPartitions) -> str:
    """Return partitions as Kafka 4.4's tool writes them: ``orders:0,1;payments:0`` (``-`` if none)."""
    if not tps:
        return "-"
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return ";".join(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items()))


def describe_state(cluster: ClusterState, view: GroupView, *, verbose: bool = False) -> str:
    """``--describe --state``: coordinator as ``host:port  (id)``, strategy, state, member count.

    ``--verbose`` adds the group epoch and target assignment epoch (``-`` for a classic group).
    """
    coordinator = f"broker-{view.coordinator}:9092  ({view.coordinator})"
    header = STATE_HEADER
    row = (view.group_id, coordinator, view.protocol or "-", view.state, str(len(view.members)))
    widths: tuple[int, ...] = (max(15, len(view.group_id)), max(25, len(coordinator)), 20, 20)
    if verbose:
        header = (*STATE_HEADER[:4], *STATE_VERBOSE, STATE_HEADER[4])
        row = (*row[:4], _s(view.group_epoch), _s(view.assignment_epoch), row[4])
        widths = (*widths, 15, 25)
    return "".join("\n" + _row(r, widths) for r in (header, row)) + "\n"


def _widths(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[int]:
    """Each column as wide as its longest value, at least 15 (the header does not count)."""
    return [max(15, *(len(r[i]) for r in rows)) if rows else 15 for i in range(len(header))]


def _row(values: tuple[str, ...], widths: tuple[int, ...], *, pad_last: bool = False) -> str:
    """Left-align each value to its width; the last column is padded only with ``pad_last``."""
    cells = [v.ljust(widths[i]) for i, v in enumerate(values[:-1])]
    last = values[-1].ljust(widths[len(values) - 1]) if pad_last else values[-1]
    return " ".join([*cells, last])
