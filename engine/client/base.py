"""What every simulated client shares: a node, bootstrap brokers, and a metadata cache.

Clients learn partition leaders with MetadataRequest to any broker, as real clients do, and
refresh when a broker answers NOT_LEADER_OR_FOLLOWER or a request times out. Refreshes are
coalesced: callers waiting on one refresh are all called back when it lands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.protocol import MetadataRequest, MetadataResponse, PartitionState
from engine.rpc import RpcNode

if TYPE_CHECKING:
    from engine.sim.world import World

#: How long a client waits for a metadata answer before trying the next broker.
METADATA_TIMEOUT_MS = 1_000


class ClientNode(RpcNode):
    """A client node with a metadata cache."""

    def __init__(self, world: World, name: str, bootstrap: list[str], retry_backoff_ms: int) -> None:
        super().__init__(world, name)
        self.bootstrap = sorted(bootstrap)
        self.retry_backoff_ms = retry_backoff_ms
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.partition_counts: dict[str, int] = {}
        self.live_brokers: tuple[int, ...] = ()
        self._metadata_waiters: list[Callable[[], None]] = []
        self._metadata_in_flight = False
        self._bootstrap_index = 0
        self.metadata_refreshes = 0

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
        """Ask a broker for metadata; ``then()`` runs when an answer arrives."""
        if then is not None:
            self._metadata_waiters.append(then)
        if self._metadata_in_flight:
            return
        self._metadata_in_flight = True
        self.metadata_refreshes += 1
        target = self._pick_broker()
        self.request(target, MetadataRequest(), self._on_metadata, timeout_ms=METADATA_TIMEOUT_MS)

    def _pick_broker(self) -> str:
        if self.live_brokers:
            candidates = [f"broker-{b}" for b in self.live_brokers]
        else:
            candidates = self.bootstrap
        target = candidates[self._bootstrap_index % len(candidates)]
        self._bootstrap_index += 1
        return target

    def _on_metadata(self, resp: MetadataResponse | None) -> None:
        self._metadata_in_flight = False
        if resp is None or not resp.partitions:
            # No answer or an empty cache: try another broker after the backoff.
            self.live_brokers = ()
            self.set_timer(self.retry_backoff_ms, self.refresh_metadata)
            return
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
