"""Delayed operations: produce requests waiting for replication, fetches waiting for data.

Kafka parks an ``acks=all`` produce until the high watermark passes its last offset, and a
consumer's fetch with ``max_wait_ms`` until enough data is readable. Both live here, per
partition, in arrival order; the broker completes them when the HW moves, and answers them with
an error when leadership moves away or their deadline passes. (Followers' fetches span many
partitions and are parked per follower instead: :mod:`engine.broker.isr`.)
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from engine.sim.network import Message
    from engine.sim.scheduler import Timer


class DelayedProduce(NamedTuple):
    """One partition of a produce waiting until the HW reaches ``required_offset``.

    ``call`` is the request being answered (:class:`~engine.broker.produce.ProduceCall`), and
    ``index`` this partition's slot in it; the request's one timeout timer is on the call.
    """

    required_offset: int
    call: Any
    index: int
    base_offset: int
    duplicate: bool


class DelayedFetch(NamedTuple):
    """A fetch waiting for data past ``request.fetch_offset``."""

    request: Message
    timer: Timer


class Purgatory:
    """Parked produces and fetches of one partition."""

    __slots__ = ("consumer_fetches", "produces")

    def __init__(self) -> None:
        self.produces: deque[DelayedProduce] = deque()
        self.consumer_fetches: list[DelayedFetch] = []

    def ready_produces(self, high_watermark: int) -> list[DelayedProduce]:
        """Pop the produces whose records are now below the HW (they are in offset order)."""
        out = []
        q = self.produces
        while q and q[0].required_offset <= high_watermark:
            out.append(q.popleft())
        return out

    def drain(self) -> tuple[list[DelayedProduce], list[DelayedFetch]]:
        """Remove and return everything parked (leadership moved away, or a crash)."""
        produces = list(self.produces)
        fetches = self.consumer_fetches
        self.produces.clear()
        self.consumer_fetches = []
        return produces, fetches

    def remove_fetch(self, fetch: Any) -> bool:
        """Forget a parked fetch (its deadline passed); return True if it was still parked."""
        if fetch in self.consumer_fetches:
            self.consumer_fetches.remove(fetch)
            return True
        return False
