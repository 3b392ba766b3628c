"""What every simulated client shares: a node, bootstrap brokers, and a metadata cache.

Clients learn partition leaders with MetadataRequest to any broker, as real clients do, and
refresh when a broker answers NOT_LEADER_OR_FOLLOWER or a request times out. Refreshes are
coalesced: callers waiting on one refresh are all called back when it lands.

Refreshes are rate limited as Kafka's ``Metadata`` does (KIP-580): after a request is sent, the
next may go only ``retry.backoff.ms`` later, and each answer that brings nothing new (or no answer)
doubles that wait, up to ``retry.backoff.max.ms``; an answer that changes anything starts again
from ``retry.backoff.ms``. So a client waiting for a topic that does not exist, or a partition
without a leader, asks about once a second, not once per round trip. Kafka adds 20 % random
jitter to the wait; the engine does not (the wait is already deterministic and jitter would only
spread refreshes that the simulation never needs spread).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from engine.args import call_wait_ms
from engine.client.metadata import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata
from engine.errors import TimeoutException, UnknownTopicOrPartitionException
from engine.protocol import MetadataRequest, MetadataResponse, PartitionState
from engine.rpc import RpcNode

if TYPE_CHECKING:
    from engine.sim.world import World

#: How long a client waits for a metadata answer before trying the next broker.
METADATA_TIMEOUT_MS = 1_000


class ClientBackoffs(Protocol):
    """The backoff settings every client's config has (``ProducerConfig``, ``ConsumerConfig``)."""

    retry_backoff_ms: int
    retry_backoff_max_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int


class ClientNode(RpcNode):
    """A client node with a metadata cache."""

    def __init__(self, world: World, name: str, bootstrap: list[str], config: ClientBackoffs) -> None:
        super().__init__(world, name, config.reconnect_backoff_ms, config.reconnect_backoff_max_ms)
        self.bootstrap = sorted(bootstrap)
        self.retry_backoff_ms = config.retry_backoff_ms
        self.retry_backoff_max_ms = max(config.retry_backoff_ms, config.retry_backoff_max_ms)
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.partition_counts: dict[str, int] = {}
        self.live_brokers: tuple[int, ...] = ()
        self._metadata_waiters: list[Callable[[], None]] = []
        self._metadata_in_flight = False
        self._metadata_timer_set = False
        #: the earliest time the next MetadataRequest may be sent, and how many answers in a row were stale
        self._metadata_next_ms = 0
        self._metadata_stale = 0
        self._metadata_last: tuple[tuple[int, ...], tuple[PartitionState, ...]] | None = None
        self._bootstrap_index = 0
        self.metadata_refreshes = 0

    def list_topics(self, topic: str | None = None, timeout: float | None = -1) -> ClusterMetadata:
        """Ask a broker for the cluster's metadata now (confluent-kafka's ``list_topics``).

        ``topic`` limits the answer to one topic (an unknown one comes back with ``error`` set);
        ``timeout`` is in simulated seconds (None or -1: ``request.timeout.ms``). Raises
        ``TimeoutException`` when no broker answers in time.
        """
        if topic is not None and (not isinstance(topic, str) or not topic):
            raise TypeError(f"list_topics: topic must be a topic name or None, not {topic!r}")
        wait_ms = call_wait_ms(timeout, "list_topics", self.request_timeout_ms())
        if not self.is_up:
            msg = f"{self.name} is not running ({self.status.value}); create a new client"
            raise TimeoutException(msg)
        target = self.pick_broker()
        resp: MetadataResponse | None = wait_for(
            self,
            lambda done: self.request(target, MetadataRequest(), lambda r: done(r) if r else None, timeout_ms=wait_ms),
            self.world.now_ms + wait_ms,
        )
        if resp is None:
            raise TimeoutException(f"list_topics: no broker answered within {wait_ms} ms of simulated time")
        return _cluster_metadata(resp, topic, target)

    def request_timeout_ms(self) -> int:
        """Return how long a request may take (the client's ``request.timeout.ms``)."""
        return METADATA_TIMEOUT_MS

    def leader_of(self, topic: str, partition: int) -> int:
        """Return the leader broker id as last known, or -1."""
        s = self.partitions.get((topic, partition))
        return s.leader if s is not None else -1

    def forget_leader(self, topic: str, partition: int) -> None:
        """Treat a partition's leader as unknown until the next metadata answer."""
        s = self.partitions.get((topic, partition))
        if s is not None and s.leader >= 0:
            self.partitions[(topic, partition)] = dataclasses.replace(s, leader=-1)

    def refresh_metadata(self, then: Callable[[], None] | None = None) -> None:
        """Ask a broker for metadata (at once, or when the backoff allows); ``then()`` runs on the answer."""
        if then is not None:
            self._metadata_waiters.append(then)
        if self._metadata_in_flight or self._metadata_timer_set:
            return
        wait = self._metadata_next_ms - self.world.now_ms
        if wait > 0:
            self._metadata_timer_set = True
            self.set_timer(wait, self._send_metadata_request)
            return
        self._send_metadata_request()

    def metadata_backoff_ms(self) -> int:
        """Return the wait before the next refresh: doubled per stale answer, capped (KIP-580)."""
        return min(self.retry_backoff_ms << min(self._metadata_stale, 20), self.retry_backoff_max_ms)

    def _send_metadata_request(self) -> None:
        self._metadata_timer_set = False
        if self._metadata_in_flight:
            return
        self._metadata_in_flight = True
        self.metadata_refreshes += 1
        self._metadata_next_ms = self.world.now_ms + self.metadata_backoff_ms()
        target = self.pick_broker()
        self.request(target, MetadataRequest(), self._on_metadata, timeout_ms=METADATA_TIMEOUT_MS)

    def pick_broker(self) -> str:
        """Return a broker to ask for metadata, a coordinator or a producer id (Kafka's ``leastLoadedNode``).

        Round robin over the live brokers of the last metadata answer (the bootstrap list before
        one), skipping brokers in reconnect backoff while another will do.
        """
        if self.live_brokers:
            candidates = [f"broker-{b}" for b in self.live_brokers]
        else:
            candidates = self.bootstrap
        if self._reconnect_at:
            # Kafka's leastLoadedNode skips nodes in reconnect backoff while another will do.
            now = self._sched.now_ms
            ready = [b for b in candidates if self._reconnect_at.get(b, 0) <= now]
            candidates = ready or candidates
        target = candidates[self._bootstrap_index % len(candidates)]
        self._bootstrap_index += 1
        return target

    def _on_metadata(self, resp: MetadataResponse | None) -> None:
        self._metadata_in_flight = False
        if resp is None or not resp.partitions:
            # No answer or an empty cache: try another broker after the backoff.
            self._metadata_stale += 1
            self._metadata_next_ms = max(self._metadata_next_ms, self.world.now_ms + self.metadata_backoff_ms())
            self.live_brokers = ()
            self.refresh_metadata()
            return
        answer = (resp.brokers, resp.partitions)
        self._metadata_stale = 0 if answer != self._metadata_last else self._metadata_stale + 1
        self._metadata_last = answer
        self.live_brokers = resp.brokers
        for s in resp.partitions:
            self.partitions[(s.topic, s.partition)] = s
            self.partition_counts[s.topic] = max(self.partition_counts.get(s.topic, 0), s.partition + 1)
        waiters, self._metadata_waiters = self._metadata_waiters, []
        for w in waiters:
            w()

    def on_crash(self) -> None:
        """Forget metadata with the other volatile state."""
        super().on_crash()
        self._metadata_waiters = []
        self._metadata_in_flight = False
        self._metadata_timer_set = False


def wait_for(node: RpcNode, start: Callable[[Callable[[Any], None]], object], deadline_ms: int) -> Any:
    """Request and wait: start an asynchronous call, run the simulation until it answers; return the answer.

    ``start(done)`` sends the request (or a chain of them) and calls ``done(answer)`` once with the
    final answer. The simulation runs until that answer, until ``node`` goes down, or until
    ``deadline_ms``; the result is None when no answer came (callers raise their own timeout).
    Every caller that blocks an application call on the network goes through here.
    """
    box: list[Any] = []
    start(box.append)
    node.world.run_until(lambda: bool(box) or not node.is_up, deadline_ms=deadline_ms)
    return box[0] if box else None


def _cluster_metadata(resp: MetadataResponse, only: str | None, answered_by: str) -> ClusterMetadata:
    topics: dict[str, dict[int, PartitionMetadata]] = {}
    for s in resp.partitions:
        if only is not None and s.topic != only:
            continue
        topics.setdefault(s.topic, {})[s.partition] = PartitionMetadata(
            s.partition, s.leader, list(s.replicas), list(s.isr)
        )
    out = {name: TopicMetadata(name, dict(sorted(parts.items()))) for name, parts in sorted(topics.items())}
    if only is not None and only not in out:
        out[only] = TopicMetadata(only, {}, UnknownTopicOrPartitionException(f"topic {only!r} does not exist"))
    return ClusterMetadata(
        cluster_id="eos-magics-sim",
        controller_id=resp.controller_id,
        brokers={b: BrokerMetadata(b, f"broker-{b}") for b in resp.brokers},
        topics=out,
        orig_broker_id=int(answered_by.rsplit("-", 1)[1]) if answered_by.startswith("broker-") else -1,
        orig_broker_name=answered_by,
    )
