"""The replica fetcher: a follower copies its leaders' logs (Kafka's ``ReplicaFetcherThread``).

A broker keeps one :class:`ReplicaFetcher` per leader it follows partitions on. The fetcher
has at most one :class:`~engine.protocol.ReplicaFetchRequest` in flight, and that request
carries every partition the broker follows on that leader, as Kafka's fetcher threads do (fetch
sessions, KIP-227, keep that request small on the wire; here it simply is one message). The
leader parks it up to ``replica.fetch.wait.max.ms`` while no partition has new data, so an idle
pair of brokers costs one long poll per wait period whatever the number of partitions.

Per partition the fetcher remembers the leader epoch it follows. On an answer it appends the
batches (the follower's producer-state bookkeeping happens in
:meth:`~engine.broker.replica.Replica.append_as_follower`), takes the leader's HW, or truncates
to the end of the diverging epoch the leader names (KIP-101/279). A partition answered with an
error waits ``replica.fetch.backoff.ms`` before it is fetched again (Kafka's delayed
partitions); a request with no answer within its timeout backs off the whole fetcher.

State is volatile: a crash forgets every fetcher, and the controller's push after the restart
builds them again. Partitions join a fetcher with :meth:`ReplicaFetchers.follow`; the fetch in
flight, if any, is abandoned and a fresh one carries the new set (the leader drops the parked
copy of the old one: one fetch per follower and leader at a time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import trace_events as events
from engine.broker.names import broker_name
from engine.errors import ErrorCode
from engine.protocol import ReplicaFetchPartition, ReplicaFetchRequest

if TYPE_CHECKING:
    from engine.broker.replica_manager import ReplicaManager
    from engine.config import BrokerConfig
    from engine.protocol import ReplicaFetchResponse
    from engine.rpc import RpcNode
    from engine.sim.scheduler import Scheduler

_NONE = ErrorCode.NONE


class ReplicaFetcher:
    """The fetch loop of one broker from one leader.

    Handed, as Kafka's ``ReplicaFetcherThread`` is handed its ``BlockingSend`` and the
    ``ReplicaManager``: the broker's network ``node`` (requests, timers, the trace), the
    scheduler's clock, the :class:`~engine.broker.replica_manager.ReplicaManager` whose logs it
    appends to, and the broker's config.
    """

    __slots__ = (
        "_kick_pending",
        "_order",
        "_wake_at",
        "config",
        "delayed",
        "in_flight",
        "leader_id",
        "leader_node",
        "manager",
        "node",
        "partitions",
        "sched",
    )

    def __init__(
        self, node: RpcNode, sched: Scheduler, manager: ReplicaManager, config: BrokerConfig, leader_id: int
    ) -> None:
        self.node = node
        self.sched = sched
        self.manager = manager
        self.config = config
        self.leader_id = leader_id
        self.leader_node = broker_name(leader_id)
        #: (topic, partition) → the leader epoch followed, in the order partitions joined.
        self.partitions: dict[tuple[str, int], int] = {}
        #: Partitions answered with an error: fetched again from this simulated time on.
        self.delayed: dict[tuple[str, int], int] = {}
        #: The message id of the fetch in flight, or None.
        self.in_flight: int | None = None
        self._order: list[tuple[str, int]] = []
        self._wake_at: int | None = None
        self._kick_pending = False

    # -- membership ------------------------------------------------------------------------

    def add(self, key: tuple[str, int], leader_epoch: int) -> None:
        """Follow a partition on this leader in ``leader_epoch``; a fresh fetch will carry it."""
        self.partitions[key] = leader_epoch
        self.delayed.pop(key, None)
        self._order = sorted(self.partitions)
        self._kick()

    def remove(self, key: tuple[str, int]) -> None:
        """Stop fetching a partition (an answer still on its way is ignored for it)."""
        if self.partitions.pop(key, None) is not None:
            self.delayed.pop(key, None)
            self._order = sorted(self.partitions)

    def _kick(self) -> None:
        """Restart the fetch once the current handler returns (many partitions join at once)."""
        if not self._kick_pending:
            self._kick_pending = True
            self.node.call_after(0, self._restart)

    def _restart(self) -> None:
        self._kick_pending = False
        if self.in_flight is not None:
            self.node.cancel_request(self.in_flight)
            self.in_flight = None
        self.fetch()

    # -- the loop --------------------------------------------------------------------------

    def fetch(self) -> None:
        """Send one fetch for every partition not backing off, unless one is in flight."""
        if self.in_flight is not None or not self.partitions:
            return
        replicas = self.manager.replicas
        now = self.sched.now_ms
        delayed = self.delayed
        entries = []
        next_wake = None
        partitions = self.partitions
        for key in self._order:
            if delayed:
                until = delayed.get(key)
                if until is not None:
                    if until > now:
                        next_wake = until if next_wake is None or until < next_wake else next_wake
                        continue
                    del delayed[key]
            log = replicas[key].log
            entries.append(
                ReplicaFetchPartition(key[0], key[1], log.log_end_offset, log.latest_epoch(), partitions[key])
            )
        if not entries:
            if next_wake is not None:
                self._wake(next_wake)
            return
        config = self.config
        wait = config.replica_fetch_wait_max_ms
        req = ReplicaFetchRequest(self.manager.broker_id, tuple(entries), wait, config.replica_fetch_max_bytes)
        self.in_flight = self.node.request(
            self.leader_node, req, self._on_response, wait + config.broker_session_timeout_ms
        )

    def _wake(self, at_ms: int) -> None:
        if self._wake_at is not None and self._wake_at <= at_ms:
            return
        self._wake_at = at_ms
        self.node.call_after(at_ms - self.sched.now_ms, self._woken, at_ms)

    def _woken(self, at_ms: int) -> None:
        if self._wake_at != at_ms:
            return
        self._wake_at = None
        self.fetch()

    def _on_response(self, resp: ReplicaFetchResponse | None) -> None:
        self.in_flight = None
        if resp is None:
            # Lost, or the leader is gone: back off, as Kafka's fetcher does after a failed request.
            self._wake(self.sched.now_ms + self.config.replica_fetch_backoff_ms)
            return
        partitions = self.partitions
        replicas = self.manager.replicas
        for d in resp.partitions:
            key = (d.topic, d.partition)
            epoch = partitions.get(key)
            r = replicas.get(key)
            if epoch is None or r is None or r.is_leader or r.state is None or r.state.leader_epoch != epoch:
                continue  # no longer followed here in that epoch: the answer is stale for it
            if d.error is not _NONE:
                self.delayed[key] = self.sched.now_ms + self.config.replica_fetch_backoff_ms
                continue
            if d.diverging_epoch is not None:
                self._truncate(key, d.diverging_epoch)
                continue
            if d.batches:
                r.append_as_follower(d.batches)
            hw = d.high_watermark
            if hw != r.high_watermark:
                r.set_high_watermark(hw)
        self.fetch()

    def _truncate(self, key: tuple[str, int], diverging: tuple[int, int]) -> None:
        """Cut the log back to where it agrees with the leader's epoch history (KIP-101/279)."""
        r = self.manager.replicas[key]
        epoch, end = diverging
        # The leader knows no epoch at or below the follower's last one (-1): nothing is shared.
        cut = end if epoch >= 0 else 0
        removed = r.truncate_to(min(cut, r.log_end_offset))
        self.node.world.trace.emit(
            self.node.name,
            "state",
            events.REPLICA_TRUNCATE,
            ("tp", r.tp),
            ("to", r.log_end_offset),
            ("removed", removed),
        )


class ReplicaFetchers:
    """All fetchers of one broker, by leader; a partition is in at most one of them (``ReplicaFetcherManager``).

    Handed what each of its fetchers is handed (see :class:`ReplicaFetcher`).
    """

    __slots__ = ("by_leader", "config", "leader_of", "manager", "node", "sched")

    def __init__(self, node: RpcNode, sched: Scheduler, manager: ReplicaManager, config: BrokerConfig) -> None:
        self.node = node
        self.sched = sched
        self.manager = manager
        self.config = config
        self.by_leader: dict[int, ReplicaFetcher] = {}
        #: (topic, partition) → the leader it is fetched from.
        self.leader_of: dict[tuple[str, int], int] = {}

    def follow(self, key: tuple[str, int], leader: int, leader_epoch: int) -> None:
        """Fetch a partition from ``leader`` in ``leader_epoch`` (a leaderless partition is not fetched)."""
        self.unfollow(key)
        if leader < 0:
            return
        f = self.by_leader.get(leader)
        if f is None:
            f = self.by_leader[leader] = ReplicaFetcher(self.node, self.sched, self.manager, self.config, leader)
        self.leader_of[key] = leader
        f.add(key, leader_epoch)

    def unfollow(self, key: tuple[str, int]) -> None:
        """Stop fetching a partition (this broker leads it now, or no longer hosts it)."""
        leader = self.leader_of.pop(key, None)
        if leader is not None:
            self.by_leader[leader].remove(key)
