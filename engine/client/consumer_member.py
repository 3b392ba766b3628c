"""The consumer's side of the KIP-848 consumer group protocol (``group.protocol=consumer``).

Role
----
Kafka's ``ConsumerMembershipManager`` / ``ConsumerHeartbeatRequestManager`` (and librdkafka's
``rd_kafka_cgrp`` consumer-protocol half): one ConsumerGroupHeartbeat request does everything the
classic protocol's JoinGroup, SyncGroup, Heartbeat and LeaveGroup did. The coordinator computes
the assignment (``group.remote.assignor``: uniform or range); the member reconciles it --
revoking what it must give up first, then taking what it was given -- and acknowledges with its
next heartbeat. Driven by timers and responses on the consumer's node like
:mod:`engine.client.group_member`, whose coordinator lookup, offset commits and offset fetches it
reuses; a paused node sends nothing, so the coordinator fences it after its session timeout.

Member states (:class:`ConsumerMemberState`, Kafka's ``MemberState``)
---------------------------------------------------------------------
===============  ===========================================================================
state            received X => next state
===============  ===========================================================================
UNSUBSCRIBED     subscribe => JOINING (heartbeat at once, epoch 0, every field)
JOINING          heartbeat NONE with an assignment that differs from the owned one =>
                 RECONCILING; the same (or none) => STABLE
RECONCILING      the next poll ran the callbacks (revoked partitions first: on_revoke, then
                 auto-commit; then the added ones: on_assign) => ACKNOWLEDGING
ACKNOWLEDGING    heartbeat sent at once with the owned partitions => STABLE, or RECONCILING
                 when a newer target arrived meanwhile
STABLE           heartbeat NONE with a new assignment => RECONCILING
any member       FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID => FENCED: partitions lost (on_lost in
                 the next poll), then JOINING with epoch 0 and the same member id
any member       close()/unsubscribe() => PREPARE_LEAVING => LEAVING (heartbeat epoch -1, a
                 static member -2, not waited for) => UNSUBSCRIBED
any member       UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
                 GROUP_MAX_SIZE_REACHED, INVALID_REQUEST ... => FATAL (poll() raises it)
===============  ===========================================================================

``STALE`` (the poll timer of ``max.poll.interval.ms`` expired) is not reached: the engine does not
enforce ``max.poll.interval.ms`` on the client (:mod:`engine.client.consumer`).

Invariants
----------
* The member id is made by the client (KIP-1082, Kafka 4.x and librdkafka 2.16): a UUID from the
  seeded stream ``consumer-member:<client>``, written as Kafka's ``Uuid.toString`` (22 characters
  of URL-safe base64), kept across fencing, made anew by a restarted process.
* Subscribed topics, server assignor, rebalance timeout and owned partitions are sent only when
  they changed since the last heartbeat (every field when joining), as ``HeartbeatState`` does.
* At most one heartbeat is in flight; the next one goes after the interval the coordinator gave,
  or at once when there is something to acknowledge, to join or to leave.
* Callbacks run in the application's next ``poll``/``consume`` as confluent-kafka runs them: a
  reconciliation that revokes calls ``on_revoke(revoked)`` and then ``on_assign(added)`` even when
  nothing was added; one that only adds calls ``on_assign(added)``. The owned partitions change,
  and the acknowledgement goes, only once they ran (librdkafka's incremental assign/unassign).
* Commits (OffsetCommit, and TxnOffsetCommit through ``group_metadata()``) carry the member epoch
  as generation id (KIP-848, KIP-447), so the coordinator refuses a fenced member's commits.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from engine import trace_events as events
from engine.client.group_member import COORDINATOR_ERRORS, RETRY_ERRORS, GroupMember, Offsets, RebalanceListener
from engine.errors import ErrorCode
from engine.protocol import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, OffsetCommitRequest

if TYPE_CHECKING:
    from engine.client.base import ClientNode
    from engine.config import ConsumerConfig

#: The member epoch of a heartbeat that leaves the group; a static member's, which keeps its place.
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
#: Answers after which the member has lost its partitions and rejoins with epoch 0.
FENCING_ERRORS = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})

Partitions = tuple[tuple[str, int], ...]
#: What :meth:`ConsumerMember._request` compares a field with when it was not sent since the last reset.
_UNSENT = object()


class ConsumerMemberState(enum.Enum):
    """Where the member is (the module docstring's table; Kafka's ``MemberState``)."""

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"
    FATAL = "FATAL"
    STALE = "STALE"


_IN_GROUP = (
    ConsumerMemberState.JOINING,
    ConsumerMemberState.RECONCILING,
    ConsumerMemberState.ACKNOWLEDGING,
    ConsumerMemberState.STABLE,
)


class IncrementListener(RebalanceListener, Protocol):
    """What a KIP-848 member tells its consumer beyond :class:`RebalanceListener`: each reconciliation step."""

    def on_group_increment(
        self,
        revoked: tuple[tuple[str, int], ...],
        added: tuple[tuple[str, int], ...],
        *,
        lost: bool,
        done: Callable[[], None],
        leaving: bool = False,
        current: Callable[[], bool] | None = None,
        keep: Callable[[tuple[tuple[str, int], ...]], tuple[tuple[str, int], ...]] | None = None,
    ) -> None:
        """Revoke ``revoked`` and add ``added`` in the next poll; ``done()`` when applied."""
        ...

    def before_poll(self) -> None:
        """Run what the consumer queued for its next poll (rebalance callbacks)."""
        ...


class ConsumerMember(GroupMember):
    """Membership of one consumer in a KIP-848 group: member id, epoch, heartbeats, reconciliation."""

    def __init__(self, client: ClientNode, consumer: IncrementListener, config: ConsumerConfig, group_id: str) -> None:
        super().__init__(client, consumer, config, group_id)
        self.consumer: IncrementListener = consumer
        self.state: ConsumerMemberState = ConsumerMemberState.UNSUBSCRIBED  # type: ignore[assignment]
        self.member_epoch = 0
        self.server_assignor: str | None = config.group_remote_assignor
        #: The coordinator's latest assignment for this member (None: none received yet).
        self.target: frozenset[tuple[str, int]] | None = None
        #: The partitions the member owns (reconciled), as the coordinator last heard or will hear.
        self.owned: frozenset[tuple[str, int]] = frozenset()
        self.interval_ms = config.heartbeat_interval_ms
        self._sent: dict[str, object] = {}
        self._hb_inflight = False
        self._hb_again = False
        self._reconciling = False
        #: The error that fenced the member last (None: never fenced).
        self.fenced_by: ErrorCode | None = None

    # generation_id is the member epoch (group_metadata(), OffsetCommit, TxnOffsetCommit).
    @property  # type: ignore[override]
    def generation_id(self) -> int:
        """The member epoch, as the generation id of commits and ``group_metadata()``."""
        return self.member_epoch if self.state in _IN_GROUP or self.member_epoch > 0 else -1

    @generation_id.setter
    def generation_id(self, value: int) -> None:
        self.member_epoch = max(value, 0)

    def _new_member_id(self) -> str:
        """KIP-1082: the client makes its member id (Kafka's ``Uuid.toString``)."""
        bits = self.client.world.rng.stream(f"consumer-member:{self.client.name}").getrandbits(128)
        return base64.urlsafe_b64encode(bits.to_bytes(16, "big")).decode().rstrip("=")

    def _to(self, state: ConsumerMemberState) -> None:
        if state is not self.state:
            self._trace(events.GROUP_MEMBER_STATE, ("from", self.state.value), ("to", state.value))
            self.state = state

    # -- joining ----------------------------------------------------------------------------

    def subscribe(self, topics: tuple[str, ...]) -> None:
        """Set the subscription; join, or send the new one with the next heartbeat."""
        self.subscription = topics
        if self.state is ConsumerMemberState.UNSUBSCRIBED:
            self.join()
        elif self.state in _IN_GROUP:
            self._heartbeat_now()

    def join(self) -> None:
        """Join with epoch 0 (first subscribe, after fencing, after a restart)."""
        if self.state not in (ConsumerMemberState.UNSUBSCRIBED, ConsumerMemberState.FENCED):
            return
        if not self.subscription or self.fatal is not None or self.consumer.closed:
            return
        if not self.member_id:
            self.member_id = self._new_member_id()
        self.member_epoch = 0
        self._sent = {}
        self._epoch += 1
        self._to(ConsumerMemberState.JOINING)
        self._heartbeat_now()

    def request_rejoin(self, reason: str) -> None:
        """Nothing to do: the coordinator drives every change of assignment (no client-side rebalance)."""

    # -- heartbeats -------------------------------------------------------------------------

    def _heartbeat_now(self) -> None:
        self._hb_token += 1
        if self._hb_inflight:
            self._hb_again = True
            return
        self._heartbeat(self._hb_token)

    def _heartbeat(self, token: int) -> None:
        if token != self._hb_token or self._hb_inflight:
            return
        if self.state not in _IN_GROUP and self.state is not ConsumerMemberState.LEAVING:
            return
        self.with_coordinator(lambda: self._send_heartbeat(token))

    def _request(self) -> ConsumerGroupHeartbeatRequest:
        """Build the next heartbeat: fields that changed since the last one (all of them when joining)."""
        everything = self.state is ConsumerMemberState.JOINING
        fields: dict[str, object] = {
            "rebalance_timeout_ms": self.config.max_poll_interval_ms,
            "subscribed_topic_names": tuple(sorted(self.subscription)),
            "server_assignor": self.server_assignor,
            "topic_partitions": tuple(sorted(self.owned)),
        }
        # A field never sent (or forgotten after a failed heartbeat) differs from every value, an
        # empty owned set included: the next heartbeat is then a full one, and the coordinator
        # answers a full heartbeat with the whole assignment (Kafka's SentFields start at null).
        changed = {k: v for k, v in fields.items() if everything or self._sent.get(k, _UNSENT) != v}
        if self.server_assignor is None:
            changed.pop("server_assignor", None)
        self._sent.update(changed)
        return ConsumerGroupHeartbeatRequest(
            self.group_id,
            self.member_id,
            self.member_epoch,
            self.group_instance_id,
            client_id=self.client.name,
            **changed,  # type: ignore[arg-type]
        )

    def _send_heartbeat(self, token: int) -> None:
        if token != self._hb_token or self._hb_inflight:
            return
        if self.state not in _IN_GROUP:
            return
        req = self._request()
        self._hb_inflight = True
        epoch = self._epoch
        if self.state is ConsumerMemberState.ACKNOWLEDGING:
            self._to(ConsumerMemberState.STABLE if self.target == self.owned else ConsumerMemberState.RECONCILING)
        self._send(req, lambda r: self._on_heartbeat(epoch, r), self._heartbeat_timeout_ms)

    def _on_heartbeat(self, epoch: int, resp: ConsumerGroupHeartbeatResponse | None) -> None:
        self._hb_inflight = False
        if epoch != self._epoch:
            return
        code = self.client.no_answer if resp is None else resp.error
        if resp is None or code is not ErrorCode.NONE:
            self._heartbeat_failed(code)
            return
        if resp.member_id:
            self.member_id = resp.member_id
        if resp.heartbeat_interval_ms > 0:
            self.interval_ms = resp.heartbeat_interval_ms
        if resp.member_epoch != self.member_epoch:
            self._trace(events.GROUP_JOINED, ("member", self.member_id), ("generation", resp.member_epoch))
        self.member_epoch = resp.member_epoch
        if resp.assignment is not None:
            self.target = frozenset(resp.assignment)
        if self.state is ConsumerMemberState.JOINING and self.target is None:
            self.target = frozenset()
        self._maybe_reconcile()
        self._next_heartbeat()

    def _next_heartbeat(self) -> None:
        self._hb_token += 1
        if self._hb_again or self.state is ConsumerMemberState.ACKNOWLEDGING:
            self._hb_again = False
            self._heartbeat(self._hb_token)
        else:
            self.client.set_timer(self.interval_ms, self._heartbeat, self._hb_token)

    def _heartbeat_failed(self, code: ErrorCode) -> None:
        self._trace(events.GROUP_HEARTBEAT_FAILED, ("error", code.name))
        # The coordinator may not have seen what that heartbeat carried (an acknowledged revocation,
        # a new subscription): the next one sends every field, as Kafka's
        # AbstractHeartbeatRequestManager.onFailure/onErrorResponse call resetHeartbeatState().
        self._sent = {}
        if code in COORDINATOR_ERRORS or code in RETRY_ERRORS:
            if code in COORDINATOR_ERRORS:
                self.coordinator_dead()
            self._hb_token += 1
            self.client.set_timer(self.config.retry_backoff_ms, self._heartbeat, self._hb_token)
        elif code in FENCING_ERRORS:
            self._fence(code)
        else:
            # UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, GROUP_MAX_SIZE_REACHED ...
            self.fatal = code
            self._epoch += 1
            self._to(ConsumerMemberState.FATAL)

    # -- reconciliation ---------------------------------------------------------------------

    def _maybe_reconcile(self) -> None:
        if self.target is None or self._reconciling or self.state not in _IN_GROUP:
            return
        if self.target == self.owned:
            if self.state in (ConsumerMemberState.JOINING, ConsumerMemberState.RECONCILING):
                self._to(ConsumerMemberState.STABLE)
            return
        if self.state is ConsumerMemberState.ACKNOWLEDGING:
            return  # the acknowledgement goes first; the heartbeat it sends moves on to RECONCILING
        self._to(ConsumerMemberState.RECONCILING)
        target = self.target
        revoked = tuple(sorted(self.owned - target))
        added = tuple(sorted(target - self.owned))
        self._reconciling = True
        epoch = self._epoch
        self._trace(
            events.GROUP_RECONCILE,
            ("generation", self.member_epoch),
            ("revoke", [f"{t}-{p}" for t, p in revoked]),
            ("assign", [f"{t}-{p}" for t, p in added]),
        )

        def keep(tps: Partitions) -> Partitions:
            # A newer target that arrived while this one waited for the poll may have taken some
            # back (the coordinator released them on a heartbeat that reported them not owned yet).
            return tuple(tp for tp in tps if self.target is not None and tp in self.target)

        self.consumer.on_group_increment(
            revoked,
            added,
            lost=False,
            done=lambda: self._reconciled(epoch, (target - set(added)) | set(keep(added))),
            current=lambda: epoch == self._epoch,
            keep=keep,
        )

    def _reconciled(self, epoch: int, target: frozenset[tuple[str, int]]) -> None:
        self._reconciling = False
        if epoch != self._epoch or self.state is not ConsumerMemberState.RECONCILING:
            return
        self.owned = target
        # The acknowledgement always carries the owned partitions, changed or not: Kafka's
        # LocalAssignment has a local epoch that every reconciliation bumps, so its heartbeat
        # sends them (the coordinator reads an absent set as "still owning" what it revokes).
        self._sent.pop("topic_partitions", None)
        self._to(ConsumerMemberState.ACKNOWLEDGING)
        self._heartbeat_now()

    # -- fencing ----------------------------------------------------------------------------

    def _fence(self, code: ErrorCode) -> None:
        """FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the partitions are lost; rejoin with epoch 0 after on_lost."""
        self._trace(events.GROUP_FENCED, ("error", code.name), ("generation", self.member_epoch))
        self.fenced_by = code
        self._epoch += 1
        self._reconciling = False
        self.member_epoch = 0
        self.target = None
        self._to(ConsumerMemberState.FENCED)
        lost = tuple(sorted(self.consumer.assigned))
        epoch = self._epoch

        def released() -> None:
            self.owned = frozenset()
            if epoch == self._epoch and self.state is ConsumerMemberState.FENCED:
                self.join()

        self.consumer.on_group_increment(lost, (), lost=True, done=released)

    # -- leaving ----------------------------------------------------------------------------

    def leave(self, reason: str) -> None:
        """Send the leave heartbeat (epoch -1, a static member -2) without waiting, and forget the membership."""
        if self.state in _IN_GROUP:
            self._to(ConsumerMemberState.PREPARE_LEAVING)
            owned = tuple(sorted(self.consumer.assigned))
            if owned:
                # librdkafka revokes what it owns (on_revoke) within close(), before the leave heartbeat.
                self.consumer.on_group_increment(owned, (), lost=False, done=lambda: None, leaving=True)
                self.consumer.before_poll()
            self._to(ConsumerMemberState.LEAVING)
            if self.coordinator >= 0:
                static = self.group_instance_id is not None
                leave_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH if static else LEAVE_GROUP_MEMBER_EPOCH
                req = ConsumerGroupHeartbeatRequest(
                    self.group_id, self.member_id, leave_epoch, self.group_instance_id, client_id=self.client.name
                )
                self._send(req, lambda _r: None, self.config.request_timeout_ms)
        self._trace(events.GROUP_LEAVE, ("member", self.member_id), ("reason", reason))
        self.reset()

    def reset(self) -> None:
        """Forget epoch, assignment and every in-flight answer (leave, crash); keep the member id."""
        super().reset()
        self.member_epoch = 0
        self.target = None
        self.owned = frozenset()
        self._sent = {}
        self._hb_inflight = False
        self._hb_again = False
        self._reconciling = False
        self.state = ConsumerMemberState.UNSUBSCRIBED

    def on_crash(self) -> None:
        """A crashed process forgets everything, its member id too (a restart joins as a new member)."""
        super().on_crash()
        self.member_id = ""

    # -- offsets ----------------------------------------------------------------------------

    def may_auto_commit(self) -> bool:
        """Return True while the member has an epoch (a KIP-848 member commits while it reconciles too)."""
        return self.state in _IN_GROUP and self.member_epoch > 0

    def commit(self, offsets: Offsets, done: Callable[[ErrorCode], None], *, retry_until_ms: int) -> None:
        """Send an OffsetCommit with the member epoch as generation; coordinator errors are retried.

        STALE_MEMBER_EPOCH is retried with the new epoch when the member moved on meanwhile (Kafka's
        ``CommitRequestManager``); FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID fence the member.
        """

        def send() -> None:
            in_group = bool(self.subscription) and self.member_epoch > 0
            gen, member = (self.member_epoch, self.member_id) if in_group else (-1, "")
            req = OffsetCommitRequest(self.group_id, gen, member, self.group_instance_id, offsets)
            self._send(req, lambda r: answered(gen, r), self.config.request_timeout_ms)

        def answered(gen: int, resp: object) -> None:
            code = self.client.no_answer if resp is None else resp.error  # type: ignore[attr-defined]
            retry = code in COORDINATOR_ERRORS or code in RETRY_ERRORS
            if code is ErrorCode.STALE_MEMBER_EPOCH and gen != self.member_epoch and self.member_epoch > 0:
                retry = True
            if retry and self.client.world.now_ms < retry_until_ms:
                if code in COORDINATOR_ERRORS:
                    self.coordinator_dead()
                self._later(self.with_coordinator, send)
                return
            if code in FENCING_ERRORS and gen == self.member_epoch and self.state in _IN_GROUP:
                self._fence(code)
            done(code)

        self.with_coordinator(send)
