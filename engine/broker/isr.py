"""The leader's side of replication: followers' fetches, their progress, the HW and the ISR.

Kafka keeps this in ``Partition`` (``updateFollowerFetchState``, ``maybeIncrementLeaderHW``,
``maybeShrinkIsr``, ``maybeExpandIsr``) and ``ReplicaManager.fetchMessages`` with a
``DelayedFetch`` for followers; the ISR change itself goes to the controller as an
``AlterPartition`` request. Here:

- A follower's :class:`~engine.protocol.ReplicaFetchRequest` names every partition it follows on
  this broker. Each partition is checked (leadership, the follower's leader epoch, the tail of
  its log against this leader's epoch history), then its fetch offset counts as the follower's
  progress, which may move the HW or earn it a place in the ISR.
- When no partition has anything to send, the request is parked for ``max_wait_ms``: at most one
  per follower (a newer fetch from the same follower replaces the parked one, whose sender gave
  it up). An append to any of its partitions, a leadership change of one of them, or the
  deadline answers it.
- The HW is the smallest LEO in the ISR (:meth:`Replica.maybe_advance_hw`); a follower that has
  not caught up for ``replica.lag.time.max.ms`` is proposed out of the ISR, one that reaches the
  HW (and the leader epoch's start offset) is proposed in. One proposal per partition is in
  flight at a time; while an expansion is pending the HW counts the joining replica (KIP-497).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from engine import trace_events as events
from engine.broker.names import CONTROLLER
from engine.errors import ErrorCode, IllegalStateError
from engine.protocol import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    ReplicaFetchPartitionData,
    ReplicaFetchResponse,
)

if TYPE_CHECKING:
    from engine.broker.replica import Replica
    from engine.broker.replica_manager import ReplicaManager
    from engine.config import BrokerConfig
    from engine.protocol import ReplicaFetchPartition, ReplicaFetchRequest
    from engine.rpc import RpcNode
    from engine.sim.network import Message
    from engine.sim.scheduler import Scheduler, Timer

__all__ = ["CONTROLLER", "LeaderReplication", "ParkedReplicaFetch"]

_NONE = ErrorCode.NONE


class ParkedReplicaFetch(NamedTuple):
    """A follower's fetch waiting for data on any of ``keys``."""

    request: Message
    keys: frozenset[tuple[str, int]]
    timer: Timer


class LeaderReplication:
    """Followers' fetches, progress, HW and ISR proposals for the partitions one broker leads.

    Handed what Kafka's ``Partition`` works with: the broker's network ``node`` (answers, timers,
    the ``AlterPartition`` request to the controller), the scheduler's clock, the broker's
    :class:`~engine.broker.replica_manager.ReplicaManager` and config, and ``hw_moved``: what a
    leader's HW move sets off (produces released, consumers' fetches woken, coordinators told).
    """

    __slots__ = ("config", "hw_moved", "manager", "node", "parked", "sched")

    def __init__(
        self,
        node: RpcNode,
        sched: Scheduler,
        manager: ReplicaManager,
        config: BrokerConfig,
        hw_moved: Callable[[Replica], None],
    ) -> None:
        self.node = node
        self.sched = sched
        self.manager = manager
        self.config = config
        self.hw_moved = hw_moved
        #: follower broker id → its parked fetch.
        self.parked: dict[int, ParkedReplicaFetch] = {}

    # -- followers' fetches ------------------------------------------------------------------

    def on_fetch(self, m: Message) -> None:
        """Handle a follower's fetch: record its progress, answer now or park it."""
        req: ReplicaFetchRequest = m.body
        old = self.parked.pop(req.replica_id, None)
        if old is not None:
            old.timer.cancel()  # its sender has moved on to this request
        ready = False
        for p in req.partitions:
            if self._progress(req.replica_id, p):
                ready = True
        if ready or req.max_wait_ms <= 0:
            self._answer(m)
            return
        keys = frozenset((p.topic, p.partition) for p in req.partitions)
        timer = self.node.set_timer(req.max_wait_ms, self._expired, req.replica_id, m)
        self.parked[req.replica_id] = ParkedReplicaFetch(m, keys, timer)

    def _check(self, p: ReplicaFetchPartition) -> Replica | ReplicaFetchPartitionData:
        """Return the replica led here, or the answer the partition gets without data.

        Not the leader (or no state yet), the follower on an older leader epoch (fenced), or its
        log's tail not matching this leader's epoch history (diverging: the answer names the end
        of the epoch it shares, KIP-279).
        """
        r, code = self.manager.leader_replica(p.topic, p.partition)
        if r is None or r.state is None:
            code = code if r is None else ErrorCode.NOT_LEADER_OR_FOLLOWER
            return ReplicaFetchPartitionData(p.topic, p.partition, code)
        if 0 <= p.current_leader_epoch < r.state.leader_epoch:
            return ReplicaFetchPartitionData(p.topic, p.partition, ErrorCode.FENCED_LEADER_EPOCH)
        if p.last_fetched_epoch >= 0:
            epoch, end = r.log.end_offset_for_epoch(p.last_fetched_epoch)
            if epoch != p.last_fetched_epoch or end < p.fetch_offset:
                return ReplicaFetchPartitionData(p.topic, p.partition, _NONE, r.high_watermark, (), (epoch, end))
        return r

    def _progress(self, follower: int, p: ReplicaFetchPartition) -> bool:
        """Check one partition of a follower's fetch and count its offset; return True if it has an answer now."""
        r = self._check(p)
        if isinstance(r, ReplicaFetchPartitionData):
            return True
        # Only a fetch whose tail matches this leader's epoch history counts as progress: a
        # divergent follower's offset must never move the HW or earn it a place in the ISR.
        self.follower_progress(r, follower, p.fetch_offset)
        return r.log.log_end_offset > p.fetch_offset

    def _partition_answer(self, p: ReplicaFetchPartition) -> ReplicaFetchPartitionData:
        r = self._check(p)
        if isinstance(r, ReplicaFetchPartitionData):
            return r
        log = r.log
        leo = log.log_end_offset
        batches = (
            tuple(log.read(p.fetch_offset, self.config.replica_fetch_max_bytes, leo)) if leo > p.fetch_offset else ()
        )
        return ReplicaFetchPartitionData(p.topic, p.partition, _NONE, r.high_watermark, batches)

    def _answer(self, m: Message) -> None:
        req: ReplicaFetchRequest = m.body
        answer = self._partition_answer
        self.node.respond(m, ReplicaFetchResponse(tuple([answer(p) for p in req.partitions])))

    def _expired(self, follower: int, m: Message) -> None:
        parked = self.parked.get(follower)
        if parked is not None and parked.request is m:
            del self.parked[follower]
            self._answer(m)

    def wake(self, key: tuple[str, int]) -> None:
        """Answer the parked fetches that include ``key`` (new data, or its leadership moved)."""
        parked = self.parked
        for follower in [f for f, p in parked.items() if key in p.keys]:
            p = parked.pop(follower)
            p.timer.cancel()
            self._answer(p.request)

    def on_crash(self) -> None:
        """Parked fetches are volatile."""
        self.parked = {}

    # -- progress and the HW ---------------------------------------------------------------

    def follower_progress(self, r: Replica, follower: int, fetch_offset: int) -> None:
        """A follower holds everything below ``fetch_offset``: update its LEO, the HW, the ISR."""
        if follower not in r.follower_leo:
            return
        leo = r.log.log_end_offset
        r.follower_leo[follower] = fetch_offset if fetch_offset < leo else leo
        if fetch_offset >= leo:
            r.follower_caught_up_ms[follower] = self.sched.now_ms
        state = r.state
        if state is None:
            raise IllegalStateError(f"{r.tp}: follower progress on a replica with no partition state")
        if (
            follower not in state.isr
            and fetch_offset >= max(r.high_watermark, r.leader_epoch_start_offset)
            and not r.pending_isr_change
        ):
            self.propose_isr(r, (*state.isr, follower))
        elif r.maybe_advance_hw():
            self.hw_moved(r)

    # -- ISR changes ------------------------------------------------------------------------

    def shrink_lagging(self) -> None:
        """Propose out of the ISR every follower not caught up for ``replica.lag.time.max.ms``."""
        replicas = self.manager.replicas
        me = self.manager.broker_id
        now = self.sched.now_ms
        lag_max = self.config.replica_lag_time_max_ms
        for key in sorted(replicas):
            r = replicas[key]
            if not r.is_leader or r.state is None or r.pending_isr_change:
                continue
            lagging = [b for b in r.state.isr if b != me and now - r.follower_caught_up_ms.get(b, now) > lag_max]
            if lagging:
                self.propose_isr(r, tuple(b for b in r.state.isr if b not in lagging))

    def propose_isr(self, r: Replica, new_isr: tuple[int, ...]) -> None:
        """Ask the controller for a new ISR (AlterPartition); one proposal per partition at a time."""
        state = r.state
        if state is None:
            raise IllegalStateError(f"{r.tp}: ISR proposal on a replica with no partition state")
        node = self.node
        r.pending_isr_change = True
        r.joining_isr = tuple(b for b in new_isr if b not in state.isr)
        node.world.trace.emit(node.name, "state", events.ISR_PROPOSE, ("tp", r.tp), ("isr", list(new_isr)))
        req = AlterPartitionRequest(
            self.manager.broker_id,
            r.topic,
            r.partition,
            state.leader_epoch,
            state.partition_epoch,
            tuple(sorted(new_isr)),
        )
        node.request(
            CONTROLLER,
            req,
            lambda resp, r=r: self._isr_answer(r, resp),
            timeout_ms=self.config.broker_session_timeout_ms,
        )

    def _isr_answer(self, r: Replica, resp: AlterPartitionResponse | None) -> None:
        r.pending_isr_change = False
        r.joining_isr = ()
        if resp is None or resp.error is not _NONE or resp.state is None:
            return
        self.manager.metadata[(r.topic, r.partition)] = resp.state
        if r.is_leader and r.state is not None and resp.state.leader_epoch == r.state.leader_epoch:
            r.state = resp.state
            if r.maybe_advance_hw():
                self.hw_moved(r)
