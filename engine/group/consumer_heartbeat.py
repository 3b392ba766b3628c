"""The KIP-848 half of the group coordinator: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Role
----
Kafka's ``GroupMetadataManager.consumerGroupHeartbeat`` for the simulated coordinator. One
heartbeat, in order (each step as Kafka's):

1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR) and find or create the group
   (epoch 0 creates it; a classic group with members: GROUP_ID_NOT_FOUND "Group g is not a consumer
   group" -- Kafka 4.x may convert such a classic group online, ``validateOnlineUpgrade``; not
   modelled);
2. find or create the member: epoch 0 joins (a static member whose instance id another live
   member holds: UNRELEASED_INSTANCE_ID; one that left with -2 is replaced, keeping its
   assignment); otherwise UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, or FENCED_MEMBER_EPOCH for an
   epoch ahead of the coordinator's, or behind it unless it is the previous epoch and the member
   owns a subset of its assignment (a lost response);
3. update the member; a changed subscription, assignor or rack, or a changed partition count of a
   subscribed topic, bumps the group epoch;
4. a group epoch ahead of the assignment epoch computes a new target assignment
   (:mod:`engine.group.server_assignors`);
5. reconcile the member toward its target (:mod:`engine.group.member_reconciliation`): revoke
   before assign; a member that does not revoke within its rebalance timeout is fenced;
6. restart the member's session (``group.consumer.session.timeout.ms``); answer with the epoch,
   ``group.consumer.heartbeat.interval.ms`` and the assignment (when it changed, or the request
   was a full one).

Epoch -1 leaves (the member is removed, the group epoch bumped); -2 is a static member's
temporary leave (it keeps its partitions reserved, epoch -2, until its session expires). A
session that expires fences the member as a leave does.

Every change is written as :mod:`engine.group.consumer_records` records and the heartbeat is
answered once they are replicated (Kafka's coordinator runtime). The in-memory state changes at
once; a heartbeat refused part-way, or whose records cannot be appended (too few in-sync
replicas), is rolled back to the group as it was before it (Kafka reverts its timeline to the last
written offset), so memory never holds a change the log lacks: the records are deltas, and a
later write on top of an unwritten change would leave the next coordinator an inconsistent group.
A failover reloads the groups; each member's session runs from the load.

A JoinGroup for a consumer group with members is answered INCONSISTENT_GROUP_PROTOCOL (Kafka 4.x
lets a classic member join a consumer group, ``classicGroupJoinToConsumerGroup``: not modelled);
an empty consumer group is deleted and the JoinGroup goes on as a classic one, as in Kafka.

Invariants
----------
* Deterministic: member ids come from the world's seeded rng; members iterate in join order.
* At most one holder per partition (revoke before assign), whatever the heartbeat order.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.errors import ErrorCode
from engine.group import consumer_records as rec
from engine.group.consumer_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    GroupSnapshot,
)
from engine.group.member_reconciliation import MemberAssignment, MemberState, ReconciliationError, reconcile
from engine.group.server_assignors import MemberSpec, assign, preferred_assignor
from engine.protocol import (
    ConsumerGroupDescribeGroup,
    ConsumerGroupDescribeMember,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.broker.broker import Broker
    from engine.group.coordinator import GroupCoordinator
    from engine.log.records import RecordBatch
    from engine.sim.network import Message

Records = list[tuple[Any, Any]]


class _RefusalError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.message)
        self.code = code
        self.message = message


class ConsumerGroups:
    """The consumer groups (KIP-848) of a :class:`~engine.group.coordinator.GroupCoordinator`."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.c = coordinator
        #: group id -> consumer group, for the partitions this broker coordinates.
        self.groups: dict[str, ConsumerGroup] = {}

    def install(self, broker: Broker) -> None:
        """Register the handlers; JoinGroup goes through :meth:`_on_join` first."""
        broker.handlers[ConsumerGroupHeartbeatRequest] = self._on_heartbeat
        broker.handlers[ConsumerGroupDescribeRequest] = self._on_describe
        classic_join = broker.handlers[JoinGroupRequest]
        broker.handlers[JoinGroupRequest] = lambda m: self._on_join(m, classic_join)

    @property
    def broker(self) -> Broker:
        """Return the broker hosting the coordinator."""
        return self.c.broker

    @property
    def assignors(self) -> tuple[str, ...]:
        """Return ``group.consumer.assignors`` (the first is the default)."""
        return tuple(a.strip() for a in self.broker.config.group_consumer_assignors.split(",") if a.strip())

    # -- ConsumerGroupHeartbeat ---------------------------------------------------------------

    def _on_heartbeat(self, m: Message) -> None:
        req: ConsumerGroupHeartbeatRequest = m.body
        code = self.c.check_coordinator(req.group_id)
        if code is not ErrorCode.NONE:
            self.broker.respond(m, ConsumerGroupHeartbeatResponse(code))
            return
        records: Records = []
        before = self.groups.get(req.group_id)
        snap = None if before is None else before.snapshot()
        try:
            g, resp = self._heartbeat(req, records)
        except _RefusalError as r:
            self._revert(req.group_id, before, snap)
            self.c.trace(
                events.CGROUP_HEARTBEAT_ERROR,
                ("group", req.group_id),
                ("member", req.member_id),
                ("error", r.code.name),
            )
            self.broker.respond(m, ConsumerGroupHeartbeatResponse(r.code, r.message))
            return
        self._write(
            g,
            records,
            lambda err: self.broker.respond(m, resp if err is ErrorCode.NONE else ConsumerGroupHeartbeatResponse(err)),
            undo=lambda: self._revert(req.group_id, before, snap),
        )

    def _heartbeat(
        self, req: ConsumerGroupHeartbeatRequest, records: Records
    ) -> tuple[ConsumerGroup, ConsumerGroupHeartbeatResponse]:
        self._validate(req)
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(req, records)
        g = self._group(req.group_id, create=req.member_epoch == JOIN_EPOCH, records=records)
        member = self._member(g, req, records)
        before = member.subscription_key()
        old_assigned = member.assignment.assigned
        is_new = member.member_id not in g.members
        member.instance_id = req.instance_id if req.instance_id is not None else member.instance_id
        member.rack_id = req.rack_id if req.rack_id is not None else member.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
        if req.subscribed_topic_names is not None:
            member.subscribed_topic_names = tuple(sorted(set(req.subscribed_topic_names)))
        if req.subscribed_topic_regex is not None:
            member.subscribed_topic_regex = req.subscribed_topic_regex or None
        member.client_id, member.client_host = req.client_id, req.client_host
        if is_new:
            g.add(member)
        bump = is_new or member.subscription_key() != before
        if bump or req.member_epoch == JOIN_EPOCH:
            records.append((rec.ConsumerGroupMemberMetadataKey(g.group_id, member.member_id), _member_value(member)))
        counts = self._partition_counts(g)
        if counts != g.subscription_metadata:
            g.subscription_metadata = counts
            bump = True
        if bump:
            g.group_epoch += 1
            records.append((rec.ConsumerGroupMetadataKey(g.group_id), rec.ConsumerGroupMetadataValue(g.group_epoch)))
        if g.group_epoch > g.assignment_epoch:
            self._update_target(g, records)
        owned = None if req.topic_partitions is None else frozenset(req.topic_partitions)
        self._reconcile(g, member, owned, records)
        self._schedule_session(g, member)
        full = req.member_epoch == JOIN_EPOCH or (
            req.rebalance_timeout_ms != -1
            and req.subscribed_topic_names is not None
            and req.topic_partitions is not None
        )
        assigned = member.assignment.assigned
        return g, ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.broker.config.group_consumer_heartbeat_interval_ms,
            assignment=tuple(sorted(assigned)) if full or assigned != old_assigned else None,
        )

    def _validate(self, req: ConsumerGroupHeartbeatRequest) -> None:
        """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
        bad = ErrorCode.INVALID_REQUEST
        if req.group_id == "":
            raise _RefusalError(bad, "GroupId can't be empty.")
        if req.instance_id == "":
            raise _RefusalError(bad, "InstanceId can't be empty.")
        if req.rack_id == "":
            raise _RefusalError(bad, "RackId can't be empty.")
        if req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH:
            if req.member_id == "":
                raise _RefusalError(bad, "MemberId can't be empty.")
        elif req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise _RefusalError(bad, "RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise _RefusalError(bad, "TopicPartitions must be empty when (re-)joining.")
            if not req.subscribed_topic_names and not req.subscribed_topic_regex:
                raise _RefusalError(bad, "Subscription must be provided in first request.")
        elif req.member_epoch == STATIC_LEAVE_EPOCH:
            if req.member_id == "":
                raise _RefusalError(bad, "MemberId can't be empty.")
            if req.instance_id is None:
                raise _RefusalError(bad, "InstanceId can't be null.")
        else:
            raise _RefusalError(bad, "MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self.assignors:
            raise _RefusalError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(self.assignors)}.",
            )
        if req.subscribed_topic_regex:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                raise _RefusalError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex is invalid: {exc}."
                ) from None

    def _group(self, group_id: str, *, create: bool, records: Records) -> ConsumerGroup:
        """Kafka's ``getOrMaybeCreateConsumerGroup``."""
        g = self.groups.get(group_id)
        if g is not None:
            return g
        classic = self.c.groups.get(group_id)
        if classic is not None and classic.members:
            raise _RefusalError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if not create:
            raise _RefusalError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        g = ConsumerGroup(group_id, self.c.partition_of(group_id))
        self.groups[group_id] = g
        self.c.group(group_id, create=True)  # the group's offsets live with the classic store
        self.c.trace(events.CGROUP_CREATED, ("group", group_id))
        return g

    def _member(self, g: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, records: Records) -> ConsumerGroupMember:
        mid = req.member_id or self._new_member_id()
        if req.instance_id is None:
            member = g.members.get(mid)
            if req.member_epoch == JOIN_EPOCH:
                if member is not None:  # a rejoin with epoch 0: it owns nothing now
                    g.set_assignment(member, MemberAssignment(0, member.member_epoch, MemberState.STABLE))
                    return member
                return ConsumerGroupMember(mid)
            if member is None:
                raise _RefusalError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {g.group_id}.")
        else:
            existing = g.members.get(g.static_members.get(req.instance_id, ""))
            if req.member_epoch == JOIN_EPOCH:
                if existing is None:
                    return ConsumerGroupMember(mid)
                if existing.member_epoch != STATIC_LEAVE_EPOCH:
                    raise _RefusalError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {mid} with instance id {req.instance_id} cannot join the group because "
                        f"the instance id is owned by {existing.member_id} member.",
                    )
                return self._replace_static(g, existing, mid, records)
            if existing is None:
                raise _RefusalError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if existing.member_id != mid:
                raise _RefusalError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {mid} with instance id {req.instance_id} was fenced by member "
                    f"{existing.member_id}.",
                )
            member = existing
        self._check_epoch(member, req)
        return member

    def _check_epoch(self, member: ConsumerGroupMember, req: ConsumerGroupHeartbeatRequest) -> None:
        """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``."""
        known = member.member_epoch
        if req.member_epoch > known:
            raise _RefusalError(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({req.member_epoch}) than the one known "
                f"by the group coordinator ({known}). The member must abandon all its partitions and rejoin.",
            )
        if req.member_epoch < known:
            owned = req.topic_partitions
            subset = owned is not None and set(owned) <= member.assignment.assigned
            if req.member_epoch != member.assignment.previous_member_epoch or not subset:
                raise _RefusalError(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch ({req.member_epoch}) than the one "
                    f"known by the group coordinator ({known}). The member must abandon all its partitions "
                    "and rejoin.",
                )

    def _replace_static(
        self, g: ConsumerGroup, old: ConsumerGroupMember, new_id: str, records: Records
    ) -> ConsumerGroupMember:
        """A static member back under a new member id takes over the old one's partitions and target.

        The new member is in the group when the heartbeat goes on, as the old one's copy (Kafka's
        ``maybeReplaceStaticMember``): with the same subscription the group epoch is not bumped, so
        no other member reconciles (``testStaticMemberGetsBackAssignmentUponRejoin``).
        """
        target = g.target.get(old.member_id)
        g.remove(old.member_id)
        records.extend(_member_tombstones(g.group_id, old.member_id))
        new = ConsumerGroupMember(new_id)
        for slot in (
            "instance_id",
            "rack_id",
            "rebalance_timeout_ms",
            "subscribed_topic_names",
            "subscribed_topic_regex",
            "server_assignor",
        ):
            setattr(new, slot, getattr(old, slot))
        g.add(new)
        g.set_assignment(new, old.assignment)
        if target is not None:
            g.target[new_id] = target
            records.append(
                (
                    rec.ConsumerGroupTargetAssignmentMemberKey(g.group_id, new_id),
                    rec.ConsumerGroupTargetAssignmentMemberValue(tuple(sorted(target))),
                )
            )
        return new

    def _new_member_id(self) -> str:
        """A member id like Kafka's ``Uuid.randomUuid().toString()`` (22 url-safe base64 characters)."""
        bits = self.broker.world.rng.stream(f"consumer-group-coordinator:{self.broker.name}").getrandbits(128)
        return base64.urlsafe_b64encode(bits.to_bytes(16, "big")).decode().rstrip("=")

    def _topics(self, member: ConsumerGroupMember) -> frozenset[str]:
        """The member's topics: its names and, with a regex, every existing topic it matches in full."""
        topics = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            pattern = re.compile(member.subscribed_topic_regex)
            existing = {t for t, _ in self.broker.metadata if not t.startswith("__")}
            topics |= {t for t in existing if pattern.fullmatch(t)}
        return frozenset(topics)

    def _partition_counts(self, g: ConsumerGroup) -> dict[str, int]:
        """The partition count of every existing topic some member subscribes to (subscription metadata)."""
        wanted = set().union(*(self._topics(m) for m in g.members.values())) if g.members else set()
        counts: dict[str, int] = {}
        for t, _ in sorted(self.broker.metadata):
            if t in wanted:
                counts[t] = counts.get(t, 0) + 1
        return counts

    def _update_target(self, g: ConsumerGroup, records: Records) -> None:
        """Compute the target for the group epoch (Kafka's ``updateTargetAssignment``); write what changed."""
        offered = self.assignors
        name = preferred_assignor([m.server_assignor for m in g.members.values()], offered)
        specs = {
            mid: MemberSpec(self._topics(m), m.instance_id, g.target.get(mid, frozenset()))
            for mid, m in g.members.items()
        }
        target = assign(name, specs, g.subscription_metadata)
        for mid in g.members:
            if target[mid] != g.target.get(mid):
                records.append(
                    (
                        rec.ConsumerGroupTargetAssignmentMemberKey(g.group_id, mid),
                        rec.ConsumerGroupTargetAssignmentMemberValue(tuple(sorted(target[mid]))),
                    )
                )
        g.target = target
        g.assignment_epoch = g.group_epoch
        g.assignor = name
        records.append(
            (
                rec.ConsumerGroupTargetAssignmentMetadataKey(g.group_id),
                rec.ConsumerGroupTargetAssignmentMetadataValue(g.assignment_epoch, name),
            )
        )
        self.c.trace(
            events.CGROUP_TARGET,
            ("group", g.group_id),
            ("epoch", g.assignment_epoch),
            ("assignor", name),
            ("target", {mid: [f"{t}-{p}" for t, p in sorted(tps)] for mid, tps in target.items()}),
        )

    def _reconcile(
        self, g: ConsumerGroup, member: ConsumerGroupMember, owned: frozenset[tuple[str, int]] | None, records: Records
    ) -> None:
        """Kafka's ``maybeReconcile``: move the member toward its target; time its revocation."""
        current = member.assignment
        target = g.target.get(member.member_id, frozenset())
        try:
            nxt = reconcile(
                current,
                g.assignment_epoch,
                target,
                owned,
                lambda tp: g.owner_epoch(member.member_id, tp),
                revoke_before_assign=self.c.weak.revoke_before_assign,
            )
        except ReconciliationError as exc:
            raise _RefusalError(ErrorCode.FENCED_MEMBER_EPOCH, str(exc)) from None
        if nxt != current:
            g.set_assignment(member, nxt)
            records.append(
                (
                    rec.ConsumerGroupCurrentMemberAssignmentKey(g.group_id, member.member_id),
                    rec.ConsumerGroupCurrentMemberAssignmentValue.of(nxt),
                )
            )
            self.c.trace(
                events.CGROUP_RECONCILED,
                ("group", g.group_id),
                ("member", member.member_id),
                ("epoch", nxt.member_epoch),
                ("state", nxt.state.value),
                ("assigned", [f"{t}-{p}" for t, p in sorted(nxt.assigned)]),
                ("revoking", [f"{t}-{p}" for t, p in sorted(nxt.pending_revocation)]),
            )
        if nxt.state is MemberState.UNREVOKED_PARTITIONS:
            if nxt != current or member.rebalance_timer is None:
                if member.rebalance_timer is not None:
                    member.rebalance_timer.cancel()
                timeout = max(member.rebalance_timeout_ms, 0)
                member.rebalance_timer = self.broker.set_timer(
                    timeout, self._fence_timed_out, g, member, nxt.member_epoch, "revocation timed out"
                )
        elif member.rebalance_timer is not None:
            member.rebalance_timer.cancel()
            member.rebalance_timer = None

    # -- leaving and fencing --------------------------------------------------------------------

    def _leave(self, req: ConsumerGroupHeartbeatRequest, records: Records) -> tuple[ConsumerGroup, Any]:
        """Kafka's ``consumerGroupLeave``."""
        g = self._group(req.group_id, create=False, records=records)
        if req.instance_id is None:
            member = g.members.get(req.member_id)
            if member is None:
                raise _RefusalError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group {g.group_id}."
                )
            self._fence(g, member, "the member left", records)
        else:
            member = g.members.get(g.static_members.get(req.instance_id, ""))
            if member is None:
                raise _RefusalError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise _RefusalError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member "
                    f"{member.member_id}.",
                )
            if req.member_epoch == STATIC_LEAVE_EPOCH:
                a = member.assignment
                left = MemberAssignment(STATIC_LEAVE_EPOCH, a.member_epoch, a.state, a.assigned, a.pending_revocation)
                g.set_assignment(member, left)
                records.append(
                    (
                        rec.ConsumerGroupCurrentMemberAssignmentKey(g.group_id, member.member_id),
                        rec.ConsumerGroupCurrentMemberAssignmentValue.of(left),
                    )
                )
                self.c.trace(events.CGROUP_STATIC_LEFT, ("group", g.group_id), ("member", member.member_id))
            else:
                self._fence(g, member, "the static member left", records)
        resp = ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE,
            member_id=req.member_id,
            member_epoch=req.member_epoch,
        )
        return g, resp

    def _fence(self, g: ConsumerGroup, member: ConsumerGroupMember, reason: str, records: Records) -> None:
        """Kafka's ``consumerGroupFenceMember``: remove the member, tombstone it, bump the group epoch."""
        g.remove(member.member_id)
        records.extend(_member_tombstones(g.group_id, member.member_id))
        g.group_epoch += 1
        g.subscription_metadata = self._partition_counts(g)
        records.append((rec.ConsumerGroupMetadataKey(g.group_id), rec.ConsumerGroupMetadataValue(g.group_epoch)))
        self.c.trace(
            events.CGROUP_MEMBER_REMOVED,
            ("group", g.group_id),
            ("member", member.member_id),
            ("reason", reason),
            ("group_epoch", g.group_epoch),
        )

    def _schedule_session(self, g: ConsumerGroup, member: ConsumerGroupMember) -> None:
        if member.session_timer is not None:
            member.session_timer.cancel()
        member.session_timer = self.broker.set_timer(
            self.broker.config.group_consumer_session_timeout_ms,
            self._fence_timed_out,
            g,
            member,
            None,
            "the member session expired",
        )

    def _fence_timed_out(self, g: ConsumerGroup, member: ConsumerGroupMember, epoch: int | None, reason: str) -> None:
        if self.groups.get(g.group_id) is not g or g.members.get(member.member_id) is not member:
            return
        if epoch is not None and member.member_epoch != epoch:
            return
        records: Records = []
        snap = g.snapshot()
        self._fence(g, member, reason, records)
        self._write(g, records, lambda err: None, undo=lambda: self._revert(g.group_id, g, snap))

    def _write(
        self,
        g: ConsumerGroup,
        records: Records,
        done: Callable[[ErrorCode], None],
        undo: Callable[[], None] | None = None,
    ) -> None:
        """Append ``records`` to the group's partition; ``done`` once replicated (at once if none).

        When the append itself fails (no leader here, too few in-sync replicas) nothing was written,
        so ``undo`` first puts the group back as it was before the change (Kafka's
        ``CoordinatorRuntime`` reverts the coordinator's timeline to the last written offset): the
        state in memory never runs ahead of the log, whose records are only deltas. Once appended,
        the records stay (a later leader either has them or reloads the group from its own log).
        """
        if not records:
            done(ErrorCode.NONE)
            return
        batch: RecordBatch = rec.records_batch(records, self.c.now_ms)
        base, err = self.c.append(g, batch)  # type: ignore[arg-type]
        if err is not ErrorCode.NONE:
            if undo is not None:
                undo()
            done(err)
            return
        self.c.await_replication(g.partition, base + batch.count, done)

    def _revert(self, group_id: str, before: ConsumerGroup | None, snap: GroupSnapshot | None) -> None:
        """Undo a change that was refused or not written: the group as ``snap`` saw it (none: forgotten).

        Members the change added lose their timers; a member whose session or revocation timer the
        change cancelled or replaced gets a fresh one, as after a load (Kafka retries a failed
        timer operation).
        """
        g = self.groups.get(group_id)
        if before is None or snap is None:
            if g is not None:
                del self.groups[group_id]
                for member in g.members.values():
                    member.cancel_timers()
                g.dead = True
            return
        if g is not before:
            return
        before.restore(snap)
        for (member, _), (_session, rebalance) in zip(snap.members, snap.timers, strict=True):
            if member.session_timer is None:
                self._schedule_session(before, member)
            a = member.assignment
            if a.state is MemberState.UNREVOKED_PARTITIONS and member.rebalance_timer is not rebalance:
                if member.rebalance_timer is not None:
                    member.rebalance_timer.cancel()
                member.rebalance_timer = self.broker.set_timer(
                    max(member.rebalance_timeout_ms, 0),
                    self._fence_timed_out,
                    before,
                    member,
                    a.member_epoch,
                    "revocation timed out",
                )
            elif a.state is not MemberState.UNREVOKED_PARTITIONS and member.rebalance_timer is not None:
                member.rebalance_timer.cancel()
                member.rebalance_timer = None

    # -- classic JoinGroup on a consumer group --------------------------------------------------

    def _on_join(self, m: Message, classic_join: Callable[[Message], None]) -> None:
        req: JoinGroupRequest = m.body
        g = self.groups.get(req.group_id)
        if g is not None and self.c.check_coordinator(req.group_id) is ErrorCode.NONE:
            if g.members:
                self.broker.respond(
                    m,
                    JoinGroupResponse(
                        ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                        member_id="",
                        error_message=f"Group {req.group_id} is a consumer group with members; "
                        "a classic member cannot join it here.",
                    ),
                )
                return
            self.delete(g)  # an empty consumer group becomes a classic one
        classic_join(m)

    def delete(self, g: ConsumerGroup) -> None:
        """Forget an empty consumer group and tombstone its group records."""
        del self.groups[g.group_id]
        g.dead = True
        self._write(
            g,
            [
                (rec.ConsumerGroupMetadataKey(g.group_id), None),
                (rec.ConsumerGroupTargetAssignmentMetadataKey(g.group_id), None),
            ],
            lambda err: None,
        )

    # -- ConsumerGroupDescribe ------------------------------------------------------------------

    def _on_describe(self, m: Message) -> None:
        req: ConsumerGroupDescribeRequest = m.body
        out = []
        for gid in req.group_ids:
            code = self.c.check_coordinator(gid)
            g = self.groups.get(gid) if code is ErrorCode.NONE else None
            if code is not ErrorCode.NONE:
                out.append(ConsumerGroupDescribeGroup(code, gid))
            elif g is None:
                msg = f"Group {gid} is not a consumer group." if gid in self.c.groups else f"Group {gid} not found."
                out.append(ConsumerGroupDescribeGroup(ErrorCode.GROUP_ID_NOT_FOUND, gid, msg))
            else:
                out.append(_describe(g))
        self.broker.respond(m, ConsumerGroupDescribeResponse(tuple(out)))

    # -- load and unload ----------------------------------------------------------------------

    def load(self, p: int, batches: Any) -> list[str]:
        """Rebuild the consumer groups of partition ``p``; every member's session starts now."""
        loaded = rec.replay(batches)
        mine = []
        for gid, lg in loaded.items():
            if self.c.partition_of(gid) != p:
                continue
            g = ConsumerGroup(gid, p)
            g.group_epoch = lg.epoch or 0
            g.assignment_epoch = lg.assignment_epoch
            g.assignor = lg.assignor
            for mid, mv in lg.members.items():
                member = ConsumerGroupMember(mid)
                member.instance_id, member.rack_id = mv.instance_id, mv.rack_id
                member.client_id, member.client_host = mv.client_id, mv.client_host
                member.subscribed_topic_names = mv.subscribed_topic_names
                member.subscribed_topic_regex = mv.subscribed_topic_regex
                member.server_assignor = mv.server_assignor
                member.rebalance_timeout_ms = mv.rebalance_timeout_ms
                g.add(member)
                if mid in lg.current:
                    g.set_assignment(member, lg.current[mid].to_assignment())
                if mid in lg.targets:
                    g.target[mid] = frozenset(lg.targets[mid])
                self._schedule_session(g, member)
            g.subscription_metadata = self._partition_counts(g)
            self.groups[gid] = g
            self.c.group(gid, create=True)
            mine.append(gid)
        return mine

    def unload(self, p: int) -> None:
        """Forget the consumer groups of partition ``p`` (Dead); their timers stop."""
        for gid in sorted(g for g, grp in self.groups.items() if grp.partition == p):
            g = self.groups.pop(gid)
            for member in g.members.values():
                member.cancel_timers()
            g.dead = True

    def views(self) -> tuple[Any, ...]:
        """Return :meth:`ConsumerGroup.view` of every consumer group here, by group id."""
        return tuple(self.groups[gid].view() for gid in sorted(self.groups))


def _member_value(m: ConsumerGroupMember) -> rec.ConsumerGroupMemberMetadataValue:
    return rec.ConsumerGroupMemberMetadataValue(
        m.instance_id,
        m.rack_id,
        m.client_id,
        m.client_host,
        m.subscribed_topic_names,
        m.subscribed_topic_regex,
        m.server_assignor,
        m.rebalance_timeout_ms,
    )


def _member_tombstones(group_id: str, member_id: str) -> Records:
    """Kafka's order: current assignment, target assignment, then member metadata."""
    return [
        (rec.ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None),
        (rec.ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None),
        (rec.ConsumerGroupMemberMetadataKey(group_id, member_id), None),
    ]


def _describe(g: ConsumerGroup) -> ConsumerGroupDescribeGroup:
    members = tuple(
        ConsumerGroupDescribeMember(
            m.member_id,
            m.instance_id,
            m.rack_id,
            m.member_epoch,
            m.client_id,
            m.client_host,
            m.subscribed_topic_names,
            m.subscribed_topic_regex,
            tuple(sorted(m.assignment.assigned)),
            tuple(sorted(g.target.get(m.member_id, frozenset()))),
        )
        for m in g.members.values()
    )
    state = g.state
    return ConsumerGroupDescribeGroup(
        ErrorCode.NONE,
        g.group_id,
        group_state=state.value if state is not ConsumerGroupState.DEAD else "Dead",
        group_epoch=g.group_epoch,
        assignment_epoch=g.assignment_epoch,
        assignor_name=g.assignor,
        members=members,
    )
