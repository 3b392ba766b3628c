"""One consumer group as its coordinator holds it in memory: members, generation, offsets.

Everything here is volatile: a coordinator rebuilds it from ``__consumer_offsets`` when it
becomes leader of the group's partition (:func:`engine.group.records.replay`), and drops it when
it stops leading or crashes. Requests parked on a member (a JoinGroup waiting for the rebalance,
a SyncGroup waiting for the leader's assignment) are network messages answered later.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.errors import ErrorCode
from engine.group.records import GroupMetadataValue, MemberRecord, StoredOffset
from engine.group.state import GroupState, check_transition
from engine.protocol import NO_ASSIGNMENT, Assignment, Subscription

if TYPE_CHECKING:
    from engine.sim.network import Message
    from engine.sim.scheduler import Timer

#: The protocol type of consumer groups (Kafka Connect's would be ``connect``).
CONSUMER_PROTOCOL_TYPE = "consumer"
_NO_SUBSCRIPTION = Subscription(())


class MemberMetadata:
    """One member of a group."""

    __slots__ = (
        "assignment",
        "awaiting_join",
        "awaiting_sync",
        "client_host",
        "client_id",
        "expiry_timer",
        "group_instance_id",
        "member_id",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
    )

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocols: tuple[tuple[str, Subscription], ...],
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocols = protocols
        self.assignment: Assignment = NO_ASSIGNMENT
        self.awaiting_join: Message | None = None
        self.awaiting_sync: Message | None = None
        self.expiry_timer: Timer | None = None

    @property
    def subscription(self) -> Subscription:
        """Return the metadata of the member's first protocol (the consumer protocol's subscription)."""
        return self.protocols[0][1] if self.protocols else _NO_SUBSCRIPTION

    def metadata(self, protocol: str | None) -> Subscription:
        """Return the member's metadata for ``protocol`` (Kafka's ``ClassicGroupMember.metadata``), else its first."""
        return next((sub for name, sub in self.protocols if name == protocol), self.subscription)

    def to_record(self, protocol: str | None = None) -> MemberRecord:
        """Return the member as stored in the group's metadata record, with its metadata for ``protocol``."""
        return MemberRecord(
            self.member_id,
            self.group_instance_id,
            self.client_id,
            self.client_host,
            self.rebalance_timeout_ms,
            self.session_timeout_ms,
            self.metadata(protocol),
            self.assignment,
        )


class GroupMetadata:
    """One group on its coordinator."""

    def __init__(self, group_id: str, partition: int, now_ms: int) -> None:
        self.group_id = group_id
        #: The ``__consumer_offsets`` partition that holds the group.
        self.partition = partition
        self.state = GroupState.EMPTY
        self.state_since_ms = now_ms
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.leader: str | None = None
        #: Members in join order (the first one leads; Kafka keeps a LinkedHashMap too).
        self.members: dict[str, MemberMetadata] = {}
        #: ``group.instance.id`` -> member id of the static members (KIP-345).
        self.static_members: dict[str, str] = {}
        #: Member ids handed out with MEMBER_ID_REQUIRED, not yet used to join; each has a timer.
        self.pending_members: dict[str, Timer] = {}
        self.join_timer: Timer | None = None
        self.initial_join = False
        self.new_member_added = False
        self.rebalance_deadline_ms = 0
        self.committed: dict[tuple[str, int], StoredOffset] = {}
        #: Plain OffsetCommits appended but not yet replicated, per partition (KIP-447 stability:
        #: :func:`engine.group.txn_offsets.is_unstable`).
        self.pending_commits: dict[tuple[str, int], int] = {}
        #: producer id -> partition -> offset of a transaction not decided yet.
        self.pending_txn: dict[int, dict[tuple[str, int], StoredOffset]] = {}

    # -- state ------------------------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        """Return True when the group is in ``state``."""
        return self.state is state

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        """Move to ``target`` (raises IllegalGroupTransitionError when the table forbids it)."""
        check_transition(self.group_id, self.state, target)
        self.state = target
        self.state_since_ms = now_ms

    # -- members ----------------------------------------------------------------------------

    def add(self, member: MemberMetadata) -> None:
        """Add a member; the first member of a group leads it."""
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader is None:
            self.leader = member.member_id

    def remove(self, member_id: str) -> MemberMetadata | None:
        """Remove a member; if it led, the next member in join order leads."""
        member = self.members.pop(member_id, None)
        if member is not None and member.expiry_timer is not None:
            member.expiry_timer.cancel()
            member.expiry_timer = None
        if member is not None and self.static_members.get(member.group_instance_id or "") == member_id:
            del self.static_members[member.group_instance_id or ""]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def replace_static_member(self, old_id: str, new_id: str) -> MemberMetadata:
        """Give a static member a new member id, keeping its assignment (``ClassicGroup.replaceStaticMember``).

        The member moves to the end of the join order, as in Kafka's map; it keeps the lead if it led.
        """
        old = self.members.pop(old_id)
        if old.expiry_timer is not None:
            old.expiry_timer.cancel()
            old.expiry_timer = None
        new = MemberMetadata(
            new_id,
            old.group_instance_id,
            old.client_id,
            old.client_host,
            old.rebalance_timeout_ms,
            old.session_timeout_ms,
            old.protocols,
        )
        new.assignment = old.assignment
        self.members[new_id] = new
        if old.group_instance_id is not None:
            self.static_members[old.group_instance_id] = new_id
        if self.leader == old_id:
            self.leader = new_id
        return new

    def validate_member(self, member_id: str, instance_id: str | None) -> ErrorCode:
        """Kafka's ``ClassicGroup.validateMember``: FENCED_INSTANCE_ID when the instance id maps to another member."""
        if instance_id is not None:
            known = self.static_members.get(instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if known != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    def all_members_joined(self) -> bool:
        """Return True when every member has a JoinGroup parked and no member id is pending."""
        return not self.pending_members and all(m.awaiting_join is not None for m in self.members.values())

    def rebalance_timeout_ms(self) -> int:
        """Return the longest rebalance timeout of the members (Kafka's ``group.rebalanceTimeoutMs``)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports(self, protocols: tuple[tuple[str, Any], ...]) -> bool:
        """Return True when ``protocols`` share a name with every current member's."""
        names = {p[0] for p in protocols}
        return all(names & {p[0] for p in m.protocols} for m in self.members.values())

    def select_protocol(self) -> str:
        """Return the first protocol of the leader's list that every member supports."""
        members = list(self.members.values())
        for name, _ in members[0].protocols:
            if all(any(p[0] == name for p in m.protocols) for m in members):
                return name
        return members[0].protocols[0][0]

    def to_record(self, now_ms: int, assignments: dict[str, Assignment] | None = None) -> GroupMetadataValue:
        """Return the group's membership as stored in ``__consumer_offsets`` (with ``assignments`` if given)."""
        members = []
        for m in self.members.values():
            rec = m.to_record(self.protocol)
            if assignments is not None:
                rec = dataclasses.replace(rec, assignment=assignments.get(m.member_id, NO_ASSIGNMENT))
            members.append(rec)
        return GroupMetadataValue(
            self.protocol_type or CONSUMER_PROTOCOL_TYPE,
            self.generation,
            self.protocol,
            self.leader,
            now_ms,
            tuple(members),
        )
