"""Group membership on the coordinator: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, session expiry.

This follows Kafka's classic ``GroupCoordinator`` (``handleJoinGroup`` … ``onCompleteJoin``):

- A member joining without an id gets one back with MEMBER_ID_REQUIRED (KIP-394) and joins again
  with it; until then the id is *pending* and expires after the session timeout.
- A new member, a leaving or expired member, the leader rejoining or a changed subscription
  moves the group to PreparingRebalance. Members learn it from their next heartbeat
  (REBALANCE_IN_PROGRESS) and rejoin; their JoinGroup is parked. The join completes when every
  member has rejoined, or at the rebalance timeout (the largest ``max.poll.interval.ms``), when
  the members that did not rejoin are dropped. An Empty group waits
  ``group.initial.rebalance.delay.ms`` first, extended while new members keep arriving.
- Completing the join bumps the generation; the leader gets every member's subscription,
  computes the assignment (range assignor, client side) and sends it in its SyncGroup. The
  coordinator writes the group to ``__consumer_offsets`` and, once replicated, answers every
  parked SyncGroup: the group is Stable.
- A member whose session expires (no heartbeat, commit or join for ``session.timeout.ms``) is
  removed and the group rebalances. A paused consumer is exactly such a member.

- Static members (KIP-345, ``group.instance.id``) join without the MEMBER_ID_REQUIRED round
  trip; one that rejoins with its instance id replaces its old member id and keeps its
  assignment, without a rebalance when the group is Stable (:meth:`Membership._join_static`); a
  request naming the instance with another member id gets FENCED_INSTANCE_ID
  (:meth:`GroupMetadata.validate_member`). A static member that did not rejoin in time is not
  dropped at the end of the join (only its session expiry removes it).
- A step that empties the group (the last leave, the last expiry) completes the join in the same
  step and appends the Empty group (generation + 1, no members); a LeaveGroup is answered once
  that record is replicated, as Kafka's coordinator runtime answers a write only once committed.

Not modelled: the pending-sync timeout of recent Kafka versions, ``group.max.size``, reverting a
static member's new id when storing it fails (the JoinGroup gets the error; the new id stays).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.errors import ErrorCode
from engine.group.metadata import GroupMetadata, MemberMetadata
from engine.group.records import group_batch
from engine.group.state import GroupState
from engine.protocol import (
    NO_ASSIGNMENT,
    Assignment,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.group.coordinator import GroupCoordinator
    from engine.sim.network import Message

#: Kafka's ``group.min.session.timeout.ms`` and ``group.max.session.timeout.ms``.
GROUP_MIN_SESSION_TIMEOUT_MS = 6_000
GROUP_MAX_SESSION_TIMEOUT_MS = 1_800_000

#: A group record a step appended: ``(end offset, append error)``; its request is answered once replicated.
Written = tuple[int, ErrorCode]


class Membership:
    """The membership half of a :class:`~engine.group.coordinator.GroupCoordinator`."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.c = coordinator

    def install(self, broker: Broker) -> None:
        """Register the membership handlers."""
        broker.handlers[JoinGroupRequest] = self._on_join
        broker.handlers[SyncGroupRequest] = self._on_sync
        broker.handlers[HeartbeatRequest] = self._on_heartbeat
        broker.handlers[LeaveGroupRequest] = self._on_leave

    @property
    def broker(self) -> Broker:
        """Return the broker hosting the coordinator."""
        return self.c.broker

    def _current(self, g: GroupMetadata) -> bool:
        return self.c.groups.get(g.group_id) is g

    def _new_member_id(self, client_id: str) -> str:
        h = f"{self.broker.world.rng.stream(f'group-coordinator:{self.broker.name}').getrandbits(128):032x}"
        return f"{client_id}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    # -- JoinGroup --------------------------------------------------------------------------

    def _on_join(self, m: Message) -> None:
        req: JoinGroupRequest = m.body
        code = self.c.check_coordinator(req.group_id)
        g = None
        if code is ErrorCode.NONE:
            if not req.protocol_type or not req.protocols:
                code = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            elif not GROUP_MIN_SESSION_TIMEOUT_MS <= req.session_timeout_ms <= GROUP_MAX_SESSION_TIMEOUT_MS:
                code = ErrorCode.INVALID_SESSION_TIMEOUT
            else:
                g = self.c.group(req.group_id, create=req.member_id == "")
                code = self._join_error(g, req)
        if g is None or code is not ErrorCode.NONE:
            self.c.trace(events.GROUP_JOIN_ERROR, ("group", req.group_id), ("error", code.name))
            self.broker.respond(m, JoinGroupResponse(code, member_id=req.member_id))
            return
        if g.is_(GroupState.EMPTY) and not g.members:
            g.protocol_type = req.protocol_type
        if req.member_id == "" and req.group_instance_id is not None:
            self._join_static(g, m)
            return
        if req.member_id == "":
            member_id = self._new_member_id(req.client_id or m.src)
            g.pending_members[member_id] = self.broker.set_timer(
                req.session_timeout_ms, self._expire_pending, g, member_id
            )
            self.broker.respond(m, JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id))
            return
        if req.member_id in g.pending_members:
            g.pending_members.pop(req.member_id).cancel()
            self._add_member(g, req.member_id, m)
            return
        self._join_known(g, g.members[req.member_id], m)

    def _add_member(self, g: GroupMetadata, member_id: str, m: Message) -> None:
        """Kafka's ``addMemberThenRebalanceOrCompleteJoin``."""
        req: JoinGroupRequest = m.body
        member = MemberMetadata(
            member_id,
            req.group_instance_id,
            req.client_id or m.src,
            f"/{m.src}",
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocols,
        )
        if g.is_(GroupState.PREPARING_REBALANCE) and g.initial_join:
            g.new_member_added = True
        g.add(member)
        self._park_join(g, member, m)
        self.c.trace(events.GROUP_MEMBER_ADDED, ("group", g.group_id), ("member", member.member_id))
        self._maybe_prepare_rebalance(g, f"new member {member.member_id} joined")
        self._maybe_complete_join(g)

    def _join_static(self, g: GroupMetadata, m: Message) -> None:
        """A static member joins without a member id (KIP-345; ``classicGroupJoinNewStaticMember``).

        No MEMBER_ID_REQUIRED round trip. An unknown instance id is added like a new member. A
        known one replaces the member it had (``updateStaticMemberThenRebalanceOrCompleteJoin``):
        the old member id is fenced (its parked requests get FENCED_INSTANCE_ID), the new one keeps
        the assignment. In Stable, unless the group's selected protocol would change, there is no
        rebalance: the group record is stored with the new member id and, once replicated, the
        member gets the current generation with the *previous* leader id (JoinGroup < v9 has no
        skip-assignment flag, so a returning leader must not think it leads and reassign).
        """
        req: JoinGroupRequest = m.body
        instance = req.group_instance_id or ""
        new_id = self._new_member_id(req.client_id or m.src)
        old_id = g.static_members.get(instance)
        if old_id is None:
            self._add_member(g, new_id, m)
            return
        old = g.members[old_id]
        for parked, resp in ((old.awaiting_join, JoinGroupResponse), (old.awaiting_sync, SyncGroupResponse)):
            if parked is not None:
                self.broker.respond(parked, resp(ErrorCode.FENCED_INSTANCE_ID))
        old.awaiting_join = old.awaiting_sync = None
        previous_leader = g.leader
        member = g.replace_static_member(old_id, new_id)
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        self.c.trace(
            events.GROUP_STATIC_REPLACED,
            ("group", g.group_id),
            ("instance", instance),
            ("old", old_id),
            ("member", new_id),
        )
        if g.is_(GroupState.STABLE) and g.protocol == g.select_protocol():
            self.schedule_expiry(g, member)
            assignments = {mid: x.assignment for mid, x in g.members.items()}
            record = g.to_record(self.c.now_ms, assignments)
            base, code = self.c.append(g, group_batch(g.group_id, record, self.c.now_ms))
            done = JoinGroupResponse(ErrorCode.NONE, g.generation, g.protocol, previous_leader or "", new_id, ())
            self.answer_after(
                g, (base + 1, code), m, lambda err: done if err is ErrorCode.NONE else JoinGroupResponse(err)
            )
            return
        self._park_join(g, member, m)
        if g.is_(GroupState.PREPARING_REBALANCE):
            self._maybe_complete_join(g)
        else:
            self._prepare_rebalance(g, f"static member {new_id} ({instance}) rejoined")

    def _join_error(self, g: GroupMetadata | None, req: JoinGroupRequest) -> ErrorCode:
        if g is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if g.members and (req.protocol_type != g.protocol_type or not g.supports(req.protocols)):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if req.member_id and req.member_id not in g.pending_members:
            return g.validate_member(req.member_id, req.group_instance_id)
        return ErrorCode.NONE

    def _join_known(self, g: GroupMetadata, member: MemberMetadata, m: Message) -> None:
        req: JoinGroupRequest = m.body
        changed = req.protocols != member.protocols
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        if g.is_(GroupState.PREPARING_REBALANCE):
            self._park_join(g, member, m)
            self._maybe_complete_join(g)
        elif g.is_(GroupState.COMPLETING_REBALANCE) and not changed:
            # The member missed the JoinGroup response: give it the current generation again.
            self.schedule_expiry(g, member)
            self.broker.respond(m, self._join_response(g, member))
        elif g.is_(GroupState.STABLE) and not changed and member.member_id != g.leader:
            self.schedule_expiry(g, member)
            self.broker.respond(m, self._join_response(g, member))
        else:
            self._park_join(g, member, m)
            reason = "leader rejoined" if member.member_id == g.leader and not changed else "subscription changed"
            self._maybe_prepare_rebalance(g, f"{member.member_id}: {reason}")

    def _park_join(self, g: GroupMetadata, member: MemberMetadata, m: Message) -> None:
        member.awaiting_join = m
        self.schedule_expiry(g, member)

    def _join_response(self, g: GroupMetadata, member: MemberMetadata) -> JoinGroupResponse:
        members: tuple[JoinGroupMember, ...] = ()
        if member.member_id == g.leader:
            members = tuple(
                JoinGroupMember(x.member_id, x.group_instance_id, x.metadata(g.protocol)) for x in g.members.values()
            )
        return JoinGroupResponse(ErrorCode.NONE, g.generation, g.protocol, g.leader or "", member.member_id, members)

    # -- rebalancing ------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, g: GroupMetadata, reason: str) -> Written | None:
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            return self._prepare_rebalance(g, reason)
        return None

    def _prepare_rebalance(self, g: GroupMetadata, reason: str) -> Written | None:
        if g.is_(GroupState.COMPLETING_REBALANCE):
            self._answer_syncs(g, ErrorCode.REBALANCE_IN_PROGRESS)
        initial = g.is_(GroupState.EMPTY)
        g.transition_to(GroupState.PREPARING_REBALANCE, self.c.now_ms)
        g.initial_join = initial
        g.new_member_added = False
        if g.join_timer is not None:
            g.join_timer.cancel()
        self.c.trace(events.GROUP_REBALANCE, ("group", g.group_id), ("generation", g.generation), ("reason", reason))
        if initial:
            g.rebalance_deadline_ms = self.c.now_ms + g.rebalance_timeout_ms()
            g.join_timer = self.broker.set_timer(
                self.broker.config.group_initial_rebalance_delay_ms, self._join_deadline, g
            )
            return None
        if g.all_members_joined():
            # Kafka's maybeCompleteJoinElseSchedule: nobody to wait for (the last member left, or
            # the only one rejoined), so the join completes in the same step (an emptied group's
            # record is written with the leave or expiry that emptied it).
            return self._complete_join(g)
        g.join_timer = self.broker.set_timer(g.rebalance_timeout_ms(), self._join_deadline, g)
        return None

    def _maybe_complete_join(self, g: GroupMetadata) -> Written | None:
        if g.is_(GroupState.PREPARING_REBALANCE) and not g.initial_join and g.all_members_joined():
            return self._complete_join(g)
        return None

    def _join_deadline(self, g: GroupMetadata) -> None:
        if not self._current(g) or not g.is_(GroupState.PREPARING_REBALANCE):
            return
        remaining = g.rebalance_deadline_ms - self.c.now_ms
        if g.initial_join and g.new_member_added and remaining > 0:
            g.new_member_added = False
            delay = min(self.broker.config.group_initial_rebalance_delay_ms, remaining)
            g.join_timer = self.broker.set_timer(delay, self._join_deadline, g)
            return
        self._complete_join(g)

    def _complete_join(self, g: GroupMetadata) -> Written | None:
        """Start the next generation; an emptied group's record is appended and its ``(end, error)`` returned."""
        if g.join_timer is not None:
            g.join_timer.cancel()
            g.join_timer = None
        g.initial_join = False
        for mid in [mid for mid, x in g.members.items() if x.awaiting_join is None and x.group_instance_id is None]:
            self.c.trace(
                events.GROUP_MEMBER_REMOVED, ("group", g.group_id), ("member", mid), ("reason", "did not rejoin")
            )
            g.remove(mid)
        # A static member that did not rejoin stays (Kafka removes dynamic ones only) until its
        # session expires; the leader must be a member that rejoined (maybeElectNewJoinedLeader).
        joined = [mid for mid, x in g.members.items() if x.awaiting_join is not None]
        if g.members and not joined:
            g.join_timer = self.broker.set_timer(g.rebalance_timeout_ms(), self._join_deadline, g)
            return None
        if g.leader is not None and g.leader not in joined:
            g.leader = joined[0]
        g.generation += 1
        if not g.members:
            g.protocol = None
            g.transition_to(GroupState.EMPTY, self.c.now_ms)
            self.c.trace(events.GROUP_EMPTY, ("group", g.group_id), ("generation", g.generation))
            base, code = self.c.append(g, group_batch(g.group_id, g.to_record(self.c.now_ms), self.c.now_ms))
            return base + 1, code
        g.protocol = g.select_protocol()
        g.transition_to(GroupState.COMPLETING_REBALANCE, self.c.now_ms)
        self.c.trace(
            events.GROUP_GENERATION,
            ("group", g.group_id),
            ("generation", g.generation),
            ("leader", g.leader),
            ("members", list(g.members)),
        )
        for member in list(g.members.values()):
            parked, member.awaiting_join = member.awaiting_join, None
            if parked is not None:
                self.broker.respond(parked, self._join_response(g, member))
            self.schedule_expiry(g, member)
        return None

    def _answer_syncs(self, g: GroupMetadata, code: ErrorCode) -> None:
        """Answer every parked SyncGroup: its member's assignment when ``code`` is NONE, else ``code``."""
        for member in g.members.values():
            parked, member.awaiting_sync = member.awaiting_sync, None
            if parked is not None:
                self.broker.respond(
                    parked, SyncGroupResponse(code, member.assignment if code is ErrorCode.NONE else NO_ASSIGNMENT)
                )

    # -- SyncGroup --------------------------------------------------------------------------

    def _on_sync(self, m: Message) -> None:
        req: SyncGroupRequest = m.body
        code, g, member = self._find_member(req.group_id, req.member_id)
        if code is ErrorCode.NONE:
            code = self._member_error(g, member, req.generation_id, req.group_instance_id)
        if code is ErrorCode.NONE and g is not None and g.is_(GroupState.PREPARING_REBALANCE):
            code = ErrorCode.REBALANCE_IN_PROGRESS
        if g is None or member is None or code is not ErrorCode.NONE:
            self.c.trace(events.GROUP_SYNC_ERROR, ("group", req.group_id), ("error", code.name))
            self.broker.respond(m, SyncGroupResponse(code))
            return
        self.schedule_expiry(g, member)
        if g.is_(GroupState.STABLE):
            self.broker.respond(m, SyncGroupResponse(ErrorCode.NONE, member.assignment))
            return
        member.awaiting_sync = m
        if member.member_id != g.leader:
            return
        assignments = {
            mid: dataclasses.replace(a, partitions=tuple(sorted(a.partitions)))
            for mid, a in req.assignments
            if mid in g.members
        }
        gen = g.generation
        batch = group_batch(g.group_id, g.to_record(self.c.now_ms, assignments), self.c.now_ms)
        base, code = self.c.append(g, batch)
        if code is not ErrorCode.NONE:
            self._group_stored(g, gen, assignments, code)
            return
        self.c.await_replication(g.partition, base + 1, lambda code: self._group_stored(g, gen, assignments, code))

    def _group_stored(self, g: GroupMetadata, gen: int, assignments: dict[str, Assignment], code: ErrorCode) -> None:
        if not self._current(g) or g.generation != gen or not g.is_(GroupState.COMPLETING_REBALANCE):
            return
        if code is not ErrorCode.NONE:
            self._answer_syncs(g, code)
            self._prepare_rebalance(g, f"storing the assignment failed: {code.name}")
            return
        for member in g.members.values():
            member.assignment = assignments.get(member.member_id, NO_ASSIGNMENT)
        g.transition_to(GroupState.STABLE, self.c.now_ms)
        self.c.trace(
            events.GROUP_STABLE,
            ("group", g.group_id),
            ("generation", gen),
            ("assignment", {mid: [f"{t}-{p}" for t, p in a.partitions] for mid, a in sorted(assignments.items())}),
        )
        self._answer_syncs(g, ErrorCode.NONE)

    def _find_member(
        self, group_id: str, member_id: str
    ) -> tuple[ErrorCode, GroupMetadata | None, MemberMetadata | None]:
        """Return the coordinator check's code, the group (None unless this coordinator has it) and the member."""
        code = self.c.check_coordinator(group_id)
        g = self.c.group(group_id, create=False) if code is ErrorCode.NONE else None
        return code, g, g.members.get(member_id) if g is not None else None

    def _member_error(
        self,
        g: GroupMetadata | None,
        member: MemberMetadata | None,
        generation_id: int,
        instance_id: str | None = None,
    ) -> ErrorCode:
        if g is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if member is None and instance_id is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        code = g.validate_member(member.member_id if member is not None else "", instance_id)
        if code is not ErrorCode.NONE:
            return code
        if generation_id != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    # -- Heartbeat and LeaveGroup -----------------------------------------------------------

    def _on_heartbeat(self, m: Message) -> None:
        req: HeartbeatRequest = m.body
        code, g, member = self._find_member(req.group_id, req.member_id)
        if code is ErrorCode.NONE:
            code = self._member_error(g, member, req.generation_id, req.group_instance_id)
        if g is not None and member is not None and code is ErrorCode.NONE:
            self.schedule_expiry(g, member)
            if g.is_(GroupState.PREPARING_REBALANCE):
                code = ErrorCode.REBALANCE_IN_PROGRESS
        if code is not ErrorCode.NONE:
            self.c.trace(
                events.GROUP_HEARTBEAT_ERROR, ("group", req.group_id), ("member", req.member_id), ("error", code.name)
            )
        self.broker.respond(m, HeartbeatResponse(code))

    def _on_leave(self, m: Message) -> None:
        req: LeaveGroupRequest = m.body
        code, g, member = self._find_member(req.group_id, req.member_id)
        if code is ErrorCode.NONE and g is not None and req.group_instance_id is not None:
            # KIP-345 (classicGroupLeaveToClassicGroup): an instance id with no member id names the
            # static member (an admin removal); with a member id, it must be that member's.
            mid = g.static_members.get(req.group_instance_id) if req.member_id == "" else req.member_id
            code = g.validate_member(mid or "", req.group_instance_id)
            member = g.members.get(mid or "") if code is ErrorCode.NONE else None
        elif code is ErrorCode.NONE and member is None:
            code = ErrorCode.UNKNOWN_MEMBER_ID
        written = None
        if g is not None and member is not None and code is ErrorCode.NONE:
            self.c.trace(events.GROUP_MEMBER_LEFT, ("group", g.group_id), ("member", member.member_id))
            written = self._remove_member(g, member, req.reason or "member left")
        self.answer_after(g, written, m, lambda code: LeaveGroupResponse(code), code)

    def answer_after(
        self,
        g: GroupMetadata | None,
        written: Written | None,
        m: Message,
        response: Callable[[ErrorCode], object],
        code: ErrorCode = ErrorCode.NONE,
    ) -> None:
        """Answer ``m`` once the record a request wrote is replicated (at once if it wrote none).

        Kafka's coordinator runtime completes a request's response only when the records it
        produced are committed (``CoordinatorRuntime.scheduleWriteOperation``), so a client that
        saw its LeaveGroup answered knows the group's Empty record survives a failover.
        """
        if g is None or written is None or code is not ErrorCode.NONE:
            self.broker.respond(m, response(code))
            return
        end, err = written
        if err is not ErrorCode.NONE:
            self.broker.respond(m, response(err))
            return
        self.c.await_replication(g.partition, end, lambda err: self.broker.respond(m, response(err)))

    # -- expiry -----------------------------------------------------------------------------

    def schedule_expiry(self, g: GroupMetadata, member: MemberMetadata) -> None:
        """(Re)start a member's session timer (a heartbeat, commit, join or sync proves it alive)."""
        if member.expiry_timer is not None:
            member.expiry_timer.cancel()
        member.expiry_timer = self.broker.set_timer(member.session_timeout_ms, self._expire, g, member)

    def _expire(self, g: GroupMetadata, member: MemberMetadata) -> None:
        if not self._current(g) or g.members.get(member.member_id) is not member:
            return
        if member.awaiting_join is not None:
            self.schedule_expiry(g, member)  # kept alive while its JoinGroup is parked
            return
        self.c.trace(
            events.GROUP_MEMBER_EXPIRED,
            ("group", g.group_id),
            ("member", member.member_id),
            ("session_timeout_ms", member.session_timeout_ms),
        )
        self._remove_member(g, member, f"session of {member.member_id} expired")

    def _expire_pending(self, g: GroupMetadata, member_id: str) -> None:
        if self._current(g) and g.pending_members.pop(member_id, None) is not None:
            self._maybe_complete_join(g)

    def _remove_member(self, g: GroupMetadata, member: MemberMetadata, reason: str) -> Written | None:
        """Remove a member and rebalance (Kafka's ``removeMemberAndUpdateClassicGroup``).

        Returns the ``(end offset, error)`` of the Empty record when the member was the last one.
        """
        for parked in (member.awaiting_join, member.awaiting_sync):
            if parked is not None:
                resp = JoinGroupResponse if parked is member.awaiting_join else SyncGroupResponse
                self.broker.respond(parked, resp(ErrorCode.UNKNOWN_MEMBER_ID))
        member.awaiting_join = member.awaiting_sync = None
        g.remove(member.member_id)
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            return self._prepare_rebalance(g, reason)
        if g.is_(GroupState.PREPARING_REBALANCE):
            return self._maybe_complete_join(g)
        return None

    def unload(self, g: GroupMetadata, *, answer: bool) -> None:
        """Forget a group whose partition this broker no longer leads; parked requests get NOT_COORDINATOR."""
        if g.join_timer is not None:
            g.join_timer.cancel()
        for timer in g.pending_members.values():
            timer.cancel()
        for member in g.members.values():
            if member.expiry_timer is not None:
                member.expiry_timer.cancel()
            if answer and member.awaiting_join is not None:
                self.broker.respond(member.awaiting_join, JoinGroupResponse(ErrorCode.NOT_COORDINATOR))
            if answer and member.awaiting_sync is not None:
                self.broker.respond(member.awaiting_sync, SyncGroupResponse(ErrorCode.NOT_COORDINATOR))
            member.awaiting_join = member.awaiting_sync = None
        g.transition_to(GroupState.DEAD, self.c.now_ms)
