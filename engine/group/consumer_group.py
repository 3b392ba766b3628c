"""One KIP-848 consumer group on its coordinator: group epoch, members, target assignment.

Role
----
The in-memory state of a group that uses the consumer protocol (``group.protocol=consumer``),
Kafka's ``modern/consumer/ConsumerGroup``. The heartbeat logic that changes it is in
:mod:`engine.group.consumer_heartbeat`; what it writes to ``__consumer_offsets`` in
:mod:`engine.group.consumer_records`. A group id is either a classic group
(:class:`~engine.group.metadata.GroupMetadata`) or a consumer group, never both at once; a
consumer group's committed offsets live in the coordinator's offsets store like a classic group's.

The group's state is not stored but derived, as in Kafka's ``ConsumerGroup.maybeUpdateGroupState``:

===========  ===================================================================================
state        when
===========  ===================================================================================
Empty        no members
Assigning    some member joined, left or changed its subscription: the group epoch is ahead of the
             target assignment's epoch (the next heartbeat computes a new target)
Reconciling  the target is computed; some member is not at the assignment epoch yet, or is still
             revoking or waiting for partitions (:mod:`engine.group.member_reconciliation`)
Stable       every member owns its target at the assignment epoch
Dead         the coordinator unloaded the group (its partition moved or the broker crashed)
===========  ===================================================================================

Read-only view for views and dashboards
---------------------------------------
:meth:`ConsumerGroup.view` returns a :class:`ConsumerGroupView` (frozen): ``protocol`` is
``"consumer"``, ``state`` (the names above), ``group_epoch``, ``assignment_epoch``, ``assignor``,
and ``members``, each a :class:`ConsumerMemberView` with ``member_id``, ``instance_id``,
``client_id``, ``client_host``, ``member_epoch``, ``state``, ``subscribed_topics``, ``assignment`` and
``target_assignment`` (sorted ``(topic, partition)`` tuples). The coordinator exposes the groups it
holds as ``GroupCoordinator.consumer.groups`` (``{group id: ConsumerGroup}``).

Invariants
----------
* ``partition_epochs`` maps every partition some member holds (assigned or pending revocation)
  to that member's epoch and id; a partition has at most one holder.
* Members iterate in join order; everything else sorted, never in hash order.
* :meth:`ConsumerGroup.snapshot` and :meth:`ConsumerGroup.restore` put the group back as it was
  (the same member objects, their fields, the epochs, targets and holders): a heartbeat whose
  records are not written leaves no trace in memory (Kafka's timeline revert).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING

from engine.errors import ErrorCode
from engine.group.member_reconciliation import Assignment, MemberAssignment, MemberState, TopicPartition

if TYPE_CHECKING:
    from engine.sim.scheduler import Timer

#: KIP-848 sentinel epochs of a heartbeat: join, leave, and a static member's temporary leave.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
#: The first OffsetCommit version a consumer-protocol member may commit with (it carries the epoch).
OFFSET_COMMIT_MIN_CONSUMER_VERSION = 9


class ConsumerGroupState(enum.Enum):
    """Kafka's ``ConsumerGroup.ConsumerGroupState``, named as ``kafka-consumer-groups.sh`` prints them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class ConsumerGroupMember:
    """One member: what it sent (subscription, assignor, ids) and its current assignment."""

    __slots__ = (
        "assignment",
        "client_host",
        "client_id",
        "instance_id",
        "member_id",
        "rack_id",
        "rebalance_timeout_ms",
        "rebalance_timer",
        "server_assignor",
        "session_timer",
        "subscribed_topic_names",
        "subscribed_topic_regex",
    )

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.instance_id: str | None = None
        self.rack_id: str | None = None
        self.client_id = ""
        self.client_host = ""
        self.rebalance_timeout_ms = -1
        self.subscribed_topic_names: tuple[str, ...] = ()
        self.subscribed_topic_regex: str | None = None
        self.server_assignor: str | None = None
        self.assignment = MemberAssignment(0, -1, MemberState.STABLE)
        self.session_timer: Timer | None = None
        self.rebalance_timer: Timer | None = None

    @property
    def member_epoch(self) -> int:
        """Return the member's epoch (0: just joined; -2: a static member that left temporarily)."""
        return self.assignment.member_epoch

    def subscription_key(self) -> tuple[object, ...]:
        """What, when it changes, bumps the group epoch (Kafka's ``hasMemberSubscriptionChanged``)."""
        return (self.subscribed_topic_names, self.subscribed_topic_regex, self.server_assignor, self.rack_id)

    def fields(self) -> tuple[object, ...]:
        """Return the member's state except its timers (see :meth:`set_fields`)."""
        return tuple(getattr(self, slot) for slot in _MEMBER_FIELDS)

    def set_fields(self, values: tuple[object, ...]) -> None:
        """Put back what :meth:`fields` returned."""
        for slot, v in zip(_MEMBER_FIELDS, values, strict=True):
            setattr(self, slot, v)

    def cancel_timers(self) -> None:
        """Cancel the session and rebalance timers."""
        for t in (self.session_timer, self.rebalance_timer):
            if t is not None:
                t.cancel()
        self.session_timer = self.rebalance_timer = None


#: A member's slots that :meth:`ConsumerGroupMember.fields` saves (all but the id and the timers).
_MEMBER_FIELDS = tuple(
    s for s in ConsumerGroupMember.__slots__ if s not in ("member_id", "session_timer", "rebalance_timer")
)


@dataclasses.dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """What :meth:`ConsumerGroup.restore` needs to put a group back (see :meth:`ConsumerGroup.snapshot`)."""

    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[tuple[ConsumerGroupMember, tuple[object, ...]], ...]
    static_members: dict[str, str]
    target: dict[str, Assignment]
    partition_epochs: dict[TopicPartition, tuple[int, str]]
    subscription_metadata: dict[str, int]
    dead: bool
    #: Each member's ``(session_timer, rebalance_timer)`` then, in :attr:`members` order.
    timers: tuple[tuple[Timer | None, Timer | None], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerMemberView:
    """A member as views show it (see the module docstring)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    state: str
    subscribed_topics: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]
    target_assignment: tuple[TopicPartition, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupView:
    """A consumer-protocol group as views show it (see the module docstring)."""

    group_id: str
    protocol: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ConsumerMemberView, ...]


class ConsumerGroup:
    """A KIP-848 consumer group on its coordinator (Kafka's ``ConsumerGroup``)."""

    def __init__(self, group_id: str, partition: int) -> None:
        self.group_id = group_id
        #: The ``__consumer_offsets`` partition that holds the group.
        self.partition = partition
        self.group_epoch = 0
        self.assignment_epoch = 0
        #: The assignor that computed the current target (Kafka's ConsumerGroupDescribe ``AssignorName``).
        self.assignor = ""
        self.members: dict[str, ConsumerGroupMember] = {}
        #: ``instance id`` -> member id of static members.
        self.static_members: dict[str, str] = {}
        #: member id -> its target partitions at :attr:`assignment_epoch`.
        self.target: dict[str, Assignment] = {}
        #: partition -> (epoch, member id) of the member holding it.
        self.partition_epochs: dict[TopicPartition, tuple[int, str]] = {}
        #: topic -> partition count the current group epoch was computed with.
        self.subscription_metadata: dict[str, int] = {}
        self.dead = False

    # -- state --------------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        """Return the derived state (the table in the module docstring)."""
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            a = m.assignment
            if a.state is not MemberState.STABLE or a.member_epoch != self.assignment_epoch:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def subscribed_topics(self) -> tuple[str, ...]:
        """Return every topic some member subscribes to, sorted."""
        return tuple(sorted({t for m in self.members.values() for t in m.subscribed_topic_names}))

    # -- snapshot and restore ------------------------------------------------------------------

    def snapshot(self) -> GroupSnapshot:
        """Return the group's state now, for :meth:`restore` (timers are not part of it)."""
        return GroupSnapshot(
            self.group_epoch,
            self.assignment_epoch,
            self.assignor,
            tuple((m, m.fields()) for m in self.members.values()),
            dict(self.static_members),
            dict(self.target),
            dict(self.partition_epochs),
            dict(self.subscription_metadata),
            self.dead,
            tuple((m.session_timer, m.rebalance_timer) for m in self.members.values()),
        )

    def restore(self, snap: GroupSnapshot) -> list[ConsumerGroupMember]:
        """Put the group back as :meth:`snapshot` saw it; return the members it drops (timers cancelled).

        Members keep their identity (timers that check ``members[id] is member`` stay valid); a
        member the snapshot has is given back its fields, one it lacks is dropped. Timers are left
        as they are: the caller restarts the ones the reverted change cancelled.
        """
        kept = {m.member_id: m for m, _ in snap.members}
        dropped = [m for mid, m in self.members.items() if kept.get(mid) is not m]
        for m in dropped:
            m.cancel_timers()
        for m, values in snap.members:
            m.set_fields(values)
        self.members = kept
        self.group_epoch, self.assignment_epoch, self.assignor = snap.group_epoch, snap.assignment_epoch, snap.assignor
        self.static_members = dict(snap.static_members)
        self.target = dict(snap.target)
        self.partition_epochs = dict(snap.partition_epochs)
        self.subscription_metadata = dict(snap.subscription_metadata)
        self.dead = snap.dead
        return dropped

    # -- members ------------------------------------------------------------------------------

    def add(self, member: ConsumerGroupMember) -> None:
        """Add (or replace) a member."""
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerGroupMember | None:
        """Remove a member, free its partitions and drop its target."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.cancel_timers()
        self._release(member)
        self.target.pop(member_id, None)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        return member

    def set_assignment(self, member: ConsumerGroupMember, assignment: MemberAssignment) -> None:
        """Give a member its new current assignment, keeping :attr:`partition_epochs` in step."""
        self._release(member)
        member.assignment = assignment
        for tp in sorted(assignment.assigned | assignment.pending_revocation):
            self.partition_epochs[tp] = (assignment.member_epoch, member.member_id)

    def _release(self, member: ConsumerGroupMember) -> None:
        a = member.assignment
        for tp in sorted(a.assigned | a.pending_revocation):
            if self.partition_epochs.get(tp, (0, ""))[1] == member.member_id:
                del self.partition_epochs[tp]

    def owner_epoch(self, member_id: str, tp: TopicPartition) -> int:
        """Kafka's ``currentPartitionEpoch`` for another member than ``member_id``: -1 when free."""
        held = self.partition_epochs.get(tp)
        return -1 if held is None or held[1] == member_id else held[0]

    # -- offsets ------------------------------------------------------------------------------

    def validate_offset_commit(
        self, member_id: str, member_epoch: int, *, transactional: bool, api_version: int | None = None
    ) -> ErrorCode:
        """Kafka's ``ConsumerGroup.validateOffsetCommit`` and ``OffsetMetadataManager``'s mapping.

        Epoch < 0 with no members: a commit outside group management, accepted. An unknown member:
        UNKNOWN_MEMBER_ID. A plain OffsetCommit below v9 (``api_version``; None is the engine's own
        client, the newest) from a member: UNSUPPORTED_VERSION, since v9 is the first to carry the
        member epoch (KIP-848). A different epoch: STALE_MEMBER_EPOCH for OffsetCommit;
        TxnOffsetCommit turns it into ILLEGAL_GENERATION (``validateTransactionalOffsetCommit``).
        """
        if member_epoch < 0 and not self.members:
            return ErrorCode.NONE
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and api_version is not None and api_version < OFFSET_COMMIT_MIN_CONSUMER_VERSION:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION if transactional else ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    # -- views --------------------------------------------------------------------------------

    def view(self) -> ConsumerGroupView:
        """Return the read-only view described in the module docstring."""
        members = tuple(
            ConsumerMemberView(
                m.member_id,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.member_epoch,
                m.assignment.state.value,
                m.subscribed_topic_names,
                tuple(sorted(m.assignment.assigned)),
                tuple(sorted(self.target.get(m.member_id, frozenset()))),
            )
            for m in self.members.values()
        )
        return ConsumerGroupView(
            self.group_id,
            "consumer",
            self.state.value,
            self.group_epoch,
            self.assignment_epoch,
            self.assignor,
            members,
        )
