"""The consumer's side of the classic group protocol (Kafka's ``ConsumerCoordinator``).

Driven by timers and responses on the consumer's node, like the Java client's heartbeat thread,
so it runs whenever the simulation runs (during ``poll``, ``flush``, ``run_for`` ...), never
while the node is paused or down.

Member states (:class:`MemberState`)
------------------------------------
==========  =================================================================================
state       received X ⇒ next state
==========  =================================================================================
UNJOINED    subscribe / rejoin needed ⇒ JOINING (after FindCoordinator, key type 0)
JOINING     JoinGroup MEMBER_ID_REQUIRED ⇒ JOINING again with the id; JoinGroup NONE ⇒
            SYNCING (the leader runs the selected assignor first); coordinator errors ⇒ rediscover
SYNCING     SyncGroup NONE ⇒ STABLE: eager, the partitions are assigned; cooperative, the
            partitions no longer assigned are revoked (on_revoke with just those), the new ones
            added (on_assign with just those), and if it revoked any ⇒ UNJOINED and rejoin at
            once; REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID ⇒ UNJOINED, rejoin
STABLE      heartbeat REBALANCE_IN_PROGRESS ⇒ eager: revoke everything and rejoin; cooperative:
            rejoin keeping (and reading) every partition; heartbeat ILLEGAL_GENERATION /
            UNKNOWN_MEMBER_ID ⇒ partitions *lost* (on_lost), rejoin; leave ⇒ UNJOINED
==========  =================================================================================

The protocol (KIP-429) follows ``partition.assignment.strategy``
(:mod:`engine.client.assignors`): with ``cooperative-sticky`` the member's JoinGroup subscription
carries the partitions it owns and the generation it owns them in, it keeps fetching them while
the group rebalances, and a partition moves in two rebalances: its owner revokes it in the first
(the leader's assignment leaves it out), and the follow-up rebalance its rejoin starts assigns it
(Kafka's ``ConsumerCoordinator.onJoinComplete``).

Heartbeats go every ``heartbeat.interval.ms`` from the first JoinGroup answer on. A paused
consumer sends none, so the coordinator evicts it after ``session.timeout.ms``; when it resumes it
still believes in its old generation (``group_metadata()`` says so) until a heartbeat or a commit
tells it otherwise -- exactly the zombie KIP-447 fences.

Committed offsets are read with OffsetFetch; under read_committed it requires stable offsets and
retries while a transaction holds one (:mod:`engine.group.txn_offsets`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from engine import trace_events as events
from engine.client import assignors
from engine.client.base import METADATA_TIMEOUT_MS
from engine.coordinator_lookup import KEY_TYPE_GROUP
from engine.errors import ErrorCode
from engine.group import txn_offsets
from engine.group.metadata import CONSUMER_PROTOCOL_TYPE
from engine.protocol import (
    Assignment,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Subscription,
    SyncGroupRequest,
    SyncGroupResponse,
)

if TYPE_CHECKING:
    from engine.client.base import ClientNode
    from engine.config import ConsumerConfig, IsolationLevel


class MemberState(enum.Enum):
    """Where the consumer is in joining its group (the module docstring's table)."""

    UNJOINED = "UNJOINED"
    JOINING = "JOINING"
    SYNCING = "SYNCING"
    STABLE = "STABLE"


#: Answers after which the coordinator must be looked up again.
COORDINATOR_ERRORS = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
    }
)
#: Answers retried as they are, after the backoff.
RETRY_ERRORS = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNSTABLE_OFFSET_COMMIT})

Offsets = tuple[tuple[str, int, int], ...]


class RebalanceListener(Protocol):
    """What a group member tells and reads of its consumer (Kafka's ``ConsumerCoordinator`` and the
    ``ConsumerRebalanceListener`` it invokes): the assignment it owns and the changes the group makes.
    """

    assigned: list[tuple[str, int]]
    closed: bool
    isolation_level: IsolationLevel

    def on_group_assignment(self, tps: list[tuple[str, int]]) -> None:
        """The group gave the consumer ``tps`` (an eager assignment)."""
        ...

    def on_group_revoke_partitions(self, tps: list[tuple[str, int]], then: Callable[[], None]) -> None:
        """The group takes ``tps`` back (cooperative); ``then()`` once the consumer let them go."""
        ...

    def on_group_add_partitions(self, tps: list[tuple[str, int]]) -> None:
        """The group adds ``tps`` (cooperative)."""
        ...

    def on_group_revoke(self, *, lost: bool) -> None:
        """The whole assignment is revoked (``lost``: taken without a rebalance)."""
        ...


class GroupMember:
    """Membership of one consumer in its group: coordinator, member id, generation, heartbeats."""

    def __init__(self, client: ClientNode, consumer: RebalanceListener, config: ConsumerConfig, group_id: str) -> None:
        self.client = client
        self.consumer = consumer
        self.group_id = group_id
        self.config = config
        self.coordinator = -1
        self.member_id = ""
        self.generation_id = -1
        self.group_instance_id: str | None = config.group_instance_id
        self.state: MemberState = MemberState.UNJOINED
        self.subscription: tuple[str, ...] = ()
        #: The assignors offered, preferred first, and their protocol (EAGER or COOPERATIVE).
        self.strategies = assignors.strategies(config.partition_assignment_strategy)
        self.protocol = assignors.protocol_of(self.strategies)
        #: The assignor the coordinator selected for the current generation.
        self.selected = self.strategies[0]
        self.is_leader = False
        self.fatal: ErrorCode | None = None
        self._finding = False
        self._coordinator_waiters: list[Callable[[], None]] = []
        #: Bumped whenever in-flight join/sync/heartbeat answers must be ignored.
        self._epoch = 0
        self._heartbeating = False
        self._hb_token = 0
        #: In-flight coordinator requests: message id -> callback.
        self._inflight: dict[int, Callable[[Any], None]] = {}

    # -- helpers ----------------------------------------------------------------------------

    def _trace(self, name: str, *detail: tuple[str, object]) -> None:
        c = self.client
        c.world.trace.emit(c.name, "state", name, ("group", self.group_id), *detail)

    def _later(self, fn: Callable[..., None], *args: object) -> None:
        self.client.set_timer(self.config.retry_backoff_ms, fn, *args)

    def _send(self, body: object, callback: Callable[[Any], None], timeout_ms: int) -> None:
        """Send to the coordinator; the request fails at once (``None``) if the coordinator is marked dead."""
        box: list[int] = []

        def answered(resp: Any) -> None:
            if box:
                self._inflight.pop(box[0], None)
            callback(resp)

        msg_id = self.client.request(f"broker-{self.coordinator}", body, answered, timeout_ms=timeout_ms)
        box.append(msg_id)
        self._inflight[msg_id] = answered

    @property
    def _heartbeat_timeout_ms(self) -> int:
        """How long a heartbeat may go unanswered before the coordinator is taken for gone.

        Kafka learns of a crashed coordinator from the dropped connection; the simulated network
        drops messages silently, so an answer missing for ``heartbeat.interval.ms`` (at least
        1 s) stands for that.
        """
        return max(1_000, min(self.config.heartbeat_interval_ms, self.config.request_timeout_ms))

    def with_coordinator(self, then: Callable[[], None]) -> None:
        """Run ``then()`` once the coordinator is known (FindCoordinator, key type 0)."""
        if self.coordinator >= 0:
            then()
            return
        self._coordinator_waiters.append(then)
        if self._finding:
            return
        self._finding = True
        target = self.client.pick_broker()
        self.client.request(
            target,
            FindCoordinatorRequest(self.group_id, KEY_TYPE_GROUP),
            self._on_coordinator,
            timeout_ms=METADATA_TIMEOUT_MS,
        )

    def _on_coordinator(self, resp: FindCoordinatorResponse | None) -> None:
        self._finding = False
        if resp is None or resp.error is not ErrorCode.NONE or resp.node_id < 0:
            self._later(self._retry_find)
            return
        self.coordinator = resp.node_id
        self._trace(events.GROUP_COORDINATOR, ("broker", resp.node_id))
        waiters, self._coordinator_waiters = self._coordinator_waiters, []
        for w in waiters:
            w()

    def _retry_find(self) -> None:
        if self._coordinator_waiters and not self._finding:
            waiters, self._coordinator_waiters = self._coordinator_waiters, []
            for w in waiters:
                self.with_coordinator(w)

    def coordinator_dead(self) -> None:
        """Forget the coordinator; the next request looks it up again."""
        if self.coordinator >= 0:
            self._trace(events.GROUP_COORDINATOR_LOST, ("broker", self.coordinator))
        self.coordinator = -1
        # Kafka disconnects from the old coordinator: its in-flight requests fail and are retried.
        inflight, self._inflight = self._inflight, {}
        for msg_id in sorted(inflight):
            self.client.cancel_request(msg_id)
            inflight[msg_id](None)

    # -- joining ----------------------------------------------------------------------------

    def subscribe(self, topics: tuple[str, ...]) -> None:
        """Set the subscription; join, or rejoin when it changed."""
        changed = topics != self.subscription
        self.subscription = topics
        if self.state is MemberState.UNJOINED:
            self.join()
        elif changed:
            self.request_rejoin("subscription changed")

    def join(self) -> None:
        """Start (re)joining unless a join is already under way."""
        if self.state in (MemberState.JOINING, MemberState.SYNCING) or not self.subscription or self.fatal is not None:
            return
        if self.consumer.closed:
            return  # a rejoin scheduled before close() must not bring a closed consumer back
        self.state = MemberState.JOINING
        self._epoch += 1
        self.with_coordinator(lambda epoch=self._epoch: self._send_join(epoch))

    def _send_join(self, epoch: int) -> None:
        if epoch != self._epoch or self.state is not MemberState.JOINING:
            return
        cfg = self.config
        req = JoinGroupRequest(
            self.group_id,
            cfg.session_timeout_ms,
            cfg.max_poll_interval_ms,
            self.member_id,
            self.group_instance_id,
            CONSUMER_PROTOCOL_TYPE,
            tuple((name, self._subscription()) for name in self.strategies),
            client_id=self.client.name,
        )
        self._send(req, lambda r: self._on_join(epoch, r), cfg.max_poll_interval_ms + 5_000)

    @property
    def cooperative(self) -> bool:
        """True when the member runs the incremental protocol (KIP-429)."""
        return self.protocol == assignors.COOPERATIVE

    def _subscription(self) -> Subscription:
        """The JoinGroup metadata: topics; cooperative, also the owned partitions and their generation."""
        if not self.cooperative:
            return Subscription(self.subscription)
        return Subscription(self.subscription, tuple(self.consumer.assigned), self.generation_id)

    def _on_join(self, epoch: int, resp: JoinGroupResponse | None) -> None:
        if epoch != self._epoch or self.state is not MemberState.JOINING:
            return
        code = self.client.no_answer if resp is None else resp.error
        if resp is not None and code is ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            self._send_join(epoch)
            return
        if resp is None or code is not ErrorCode.NONE:
            self._join_failed(epoch, code)
            return
        self.member_id = resp.member_id
        self.generation_id = resp.generation_id
        self.is_leader = resp.leader == resp.member_id
        self.selected = resp.protocol_name or self.strategies[0]
        self.state = MemberState.SYNCING
        self._trace(
            events.GROUP_JOINED,
            ("member", self.member_id),
            ("generation", self.generation_id),
            ("leader", self.is_leader),
        )
        self._start_heartbeats()
        if self.is_leader:
            self._assign_as_leader(epoch, resp)
        else:
            self._send_sync(epoch, ())

    def _join_failed(self, epoch: int, code: ErrorCode) -> None:
        self._trace(events.GROUP_JOIN_FAILED, ("error", code.name))
        if code in COORDINATOR_ERRORS:
            self.coordinator_dead()
        elif code is ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation_id = -1
        elif code is ErrorCode.ILLEGAL_GENERATION:
            self.generation_id = -1
        elif code not in RETRY_ERRORS and code is not ErrorCode.REBALANCE_IN_PROGRESS:
            self.fatal = code  # INCONSISTENT_GROUP_PROTOCOL, INVALID_SESSION_TIMEOUT ...: poll() raises it
            self.state = MemberState.UNJOINED
            return
        self.state = MemberState.UNJOINED
        self._later(self.join)

    def _assign_as_leader(self, epoch: int, resp: JoinGroupResponse) -> None:
        topics = sorted({t for m in resp.members for t in m.subscription.topics})
        counts = self.client.partition_counts
        if any(t not in counts for t in topics):
            self.client.refresh_metadata(lambda: self._compute_assignment(epoch, resp))
            return
        self._compute_assignment(epoch, resp)

    def _compute_assignment(self, epoch: int, resp: JoinGroupResponse) -> None:
        if epoch != self._epoch or self.state is not MemberState.SYNCING:
            return
        subs = {m.member_id: m.subscription for m in resp.members}
        instances = {m.member_id: m.group_instance_id for m in resp.members}
        result = assignors.assign(self.selected, subs, self.client.partition_counts, instances)
        self._trace(
            events.GROUP_ASSIGNMENT_COMPUTED,
            ("generation", resp.generation_id),
            ("assignment", {mid: [f"{t}-{p}" for t, p in tps] for mid, tps in result.items()}),
        )
        self._send_sync(epoch, tuple((mid, Assignment(tuple(tps))) for mid, tps in result.items()))

    def _send_sync(self, epoch: int, assignments: tuple[tuple[str, Assignment], ...]) -> None:
        req = SyncGroupRequest(self.group_id, self.generation_id, self.member_id, self.group_instance_id, assignments)
        self._send(req, lambda r: self._on_sync(epoch, r), self.config.max_poll_interval_ms + 5_000)

    def _on_sync(self, epoch: int, resp: SyncGroupResponse | None) -> None:
        if epoch != self._epoch or self.state is not MemberState.SYNCING:
            return
        code = self.client.no_answer if resp is None else resp.error
        if resp is None or code is not ErrorCode.NONE:
            self.state = MemberState.JOINING  # so _join_failed's bookkeeping applies
            self._join_failed(epoch, code)
            return
        self.state = MemberState.STABLE
        self._trace(
            events.GROUP_SYNCED,
            ("generation", self.generation_id),
            ("assignment", [f"{t}-{p}" for t, p in resp.assignment.partitions]),
        )
        if not self.cooperative:
            self.consumer.on_group_assignment(list(resp.assignment.partitions))
            return
        assigned = set(resp.assignment.partitions)
        owned = set(self.consumer.assigned)
        revoked = sorted(owned - assigned)
        if revoked:
            gen = self.generation_id
            self.consumer.on_group_revoke_partitions(revoked, lambda: self._rejoin_after_revoke(gen))
        self.consumer.on_group_add_partitions(sorted(assigned - owned))

    def _rejoin_after_revoke(self, generation: int) -> None:
        """Rejoin at once once the partitions that move are revoked, so the follow-up rebalance assigns them."""
        if generation == self.generation_id and self.state is MemberState.STABLE:
            self._rejoin("revoked partitions that move to another member")

    # -- rebalance triggers -----------------------------------------------------------------

    def request_rejoin(self, reason: str) -> None:
        """Join again: eager, revoking every partition first; cooperative, keeping them (KIP-429)."""
        if self.state in (MemberState.JOINING, MemberState.SYNCING):
            return
        if not self.cooperative:
            self._trace(events.GROUP_REJOIN, ("reason", reason))
            self.consumer.on_group_revoke(lost=False)
            self.state = MemberState.UNJOINED
            self.join()
            return
        self._rejoin(reason)

    def _rejoin(self, reason: str) -> None:
        self._trace(events.GROUP_REJOIN, ("reason", reason))
        self.state = MemberState.UNJOINED
        self.join()

    def _lose(self, code: ErrorCode) -> None:
        """The coordinator no longer knows this generation (or member): partitions are lost."""
        if code is ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
        self.generation_id = -1
        self._trace(events.GROUP_FENCED, ("error", code.name))
        self.consumer.on_group_revoke(lost=True)
        self._epoch += 1
        self.state = MemberState.UNJOINED
        self.join()

    # -- heartbeats -------------------------------------------------------------------------

    def _start_heartbeats(self) -> None:
        if not self._heartbeating:
            self._heartbeating = True
            self._hb_token += 1
            self.client.set_timer(self.config.heartbeat_interval_ms, self._heartbeat, self._hb_token)

    def _heartbeat(self, token: int) -> None:
        if token != self._hb_token:
            return
        if self.state not in (MemberState.SYNCING, MemberState.STABLE) or self.generation_id < 0:
            self._heartbeating = False
            return
        self.with_coordinator(lambda: self._send_heartbeat(token))

    def _send_heartbeat(self, token: int) -> None:
        if token != self._hb_token:
            return
        req = HeartbeatRequest(self.group_id, self.generation_id, self.member_id, self.group_instance_id)
        gen = self.generation_id
        self._send(req, lambda r: self._on_heartbeat(token, gen, r), self._heartbeat_timeout_ms)

    def _on_heartbeat(self, token: int, gen: int, resp: HeartbeatResponse | None) -> None:
        if token != self._hb_token:
            return
        self.client.set_timer(self.config.heartbeat_interval_ms, self._heartbeat, token)
        code = self.client.no_answer if resp is None else resp.error
        if gen != self.generation_id or code is ErrorCode.NONE:
            return
        if code in COORDINATOR_ERRORS:
            self.coordinator_dead()
        elif code is ErrorCode.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self.request_rejoin("heartbeat: REBALANCE_IN_PROGRESS")
        elif code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
            self._lose(code)
        elif code is ErrorCode.FENCED_INSTANCE_ID:
            # Another instance took this group.instance.id: fatal, as in the Java client.
            self._trace(events.GROUP_FENCED, ("error", code.name))
            self.fatal = code
            self._hb_token += 1
            self.state = MemberState.UNJOINED

    # -- leaving ----------------------------------------------------------------------------

    def leave(self, reason: str) -> None:
        """Send LeaveGroup (no wait) and forget the membership; a static member sends none (KIP-345)."""
        if self.member_id and self.coordinator >= 0 and self.group_instance_id is None:
            self._send(
                LeaveGroupRequest(self.group_id, self.member_id, reason),
                lambda _r: None,
                self.config.request_timeout_ms,
            )
        self._trace(events.GROUP_LEAVE, ("member", self.member_id), ("reason", reason))
        self.reset()

    def reset(self) -> None:
        """Forget member id, generation and every in-flight answer (leave, crash)."""
        self.member_id = ""
        self.generation_id = -1
        self.state = MemberState.UNJOINED
        self.is_leader = False
        self._epoch += 1
        self._heartbeating = False
        self._hb_token += 1

    def on_crash(self) -> None:
        """A crashed consumer process forgets its membership and its coordinator."""
        self.reset()
        self.coordinator = -1
        self._finding = False
        self._coordinator_waiters = []
        self._inflight = {}

    # -- offsets ----------------------------------------------------------------------------

    def may_auto_commit(self) -> bool:
        """Return True when an automatic commit may go: not while a rebalance is under way."""
        return self.state is MemberState.STABLE

    def commit(self, offsets: Offsets, done: Callable[[ErrorCode], None], *, retry_until_ms: int) -> None:
        """Send an OffsetCommit; ``done(code)`` gets the final answer (coordinator errors are retried)."""
        if self.subscription:
            if self.state is not MemberState.STABLE:
                done(ErrorCode.REBALANCE_IN_PROGRESS)
                return
            gen, member = self.generation_id, self.member_id
        else:
            gen, member = -1, ""
        req = OffsetCommitRequest(self.group_id, gen, member, self.group_instance_id, offsets)

        def send() -> None:
            self._send(req, answered, self.config.request_timeout_ms)

        def answered(resp: OffsetCommitResponse | None) -> None:
            code = self.client.no_answer if resp is None else resp.error
            retry = code in COORDINATOR_ERRORS or code in RETRY_ERRORS
            if retry and self.client.world.now_ms < retry_until_ms:
                if code in COORDINATOR_ERRORS:
                    self.coordinator_dead()
                self._later(self.with_coordinator, send)
                return
            if code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID) and gen == self.generation_id:
                self._lose(code)
            elif code is ErrorCode.REBALANCE_IN_PROGRESS and self.state is MemberState.STABLE:
                self.request_rejoin("commit: REBALANCE_IN_PROGRESS")
            done(code)

        self.with_coordinator(send)

    def fetch_committed(
        self, partitions: tuple[tuple[str, int], ...], done: Callable[[ErrorCode, dict[tuple[str, int], int]], None]
    ) -> None:
        """Send an OffsetFetch (require_stable under read_committed, KIP-447), retrying until stable."""
        stable = txn_offsets.require_stable(self.consumer.isolation_level)
        req = OffsetFetchRequest(self.group_id, partitions, require_stable=stable)

        def send() -> None:
            self._send(req, answered, self.config.request_timeout_ms)

        def answered(resp: OffsetFetchResponse | None) -> None:
            code = self.client.no_answer if resp is None else resp.error
            if resp is not None and code is ErrorCode.NONE:
                if txn_offsets.any_unstable(resp.partitions):
                    self.client.world.trace.mark(self.client.name, txn_offsets.UNSTABLE_OFFSET_RETRIED)
                    code = ErrorCode.UNSTABLE_OFFSET_COMMIT
                else:
                    done(ErrorCode.NONE, {(p.topic, p.partition): p.offset for p in resp.partitions})
                    return
            if code in COORDINATOR_ERRORS:
                self.coordinator_dead()
            if code in COORDINATOR_ERRORS or code in RETRY_ERRORS:
                self._later(self.with_coordinator, send)
                return
            done(code, {})

        self.with_coordinator(send)
