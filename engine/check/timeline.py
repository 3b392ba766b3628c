"""A read-only observer that records every partition leader's HW, LSO, LEO and leader epoch over time.

Role
----
Step invariant L7 (HW and LSO never decrease within a leader epoch; LSO ≤ HW ≤ LEO) needs the
offsets *as they moved*, not only their final values, and the widgets want the same series.
:class:`PartitionTimeline` samples them on every trace event emitted by a broker node and keeps
a :class:`TimelineSample` only when one of the four values changed for that (partition, broker).

>>> from engine import Cluster
>>> c = Cluster(seed=1, brokers=3)
>>> tl = PartitionTimeline.attach(c)
>>> c.create_topic("t", partitions=1, replication_factor=3)
>>> isinstance(tl.samples, list)
True

Invariants
----------
* It never changes the run (house style R16): it only reads ``broker.replicas``, each leader
  replica's ``high_watermark``, ``last_stable_offset`` (a pure computation over the producer
  table), ``log_end_offset`` and ``state.leader_epoch``; it draws no randomness and emits no
  trace event. A test checks that the fingerprint is unchanged with it attached.
* Samples are in trace order; ``index`` is the index of the trace event that triggered the
  sample (``-1`` for the sample taken when a ``run_for`` returns).

What it does not do
-------------------
A trace event is emitted *before* the message it announces is handled, so a change made by a
handler is seen at the next event of that broker (its own sends usually) or when ``run_for``
returns. Intermediate values that no event observes are not recorded. Followers are not
sampled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.cluster import Cluster
    from engine.sim.trace import TraceEvent
    from engine.sim.world import World

__all__ = ["PartitionTimeline", "TimelineSample"]


class TimelineSample(NamedTuple):
    """One change of a leader replica's offsets."""

    index: int
    time_ms: int
    topic: str
    partition: int
    broker_id: int
    leader_epoch: int
    leo: int
    hw: int
    lso: int


class PartitionTimeline:
    """Observer: keep each leader's (HW, LSO, LEO, leader epoch) whenever it changes.

    Parameters
    ----------
    cluster
        The cluster to watch. Attach with ``cluster.world.attach(timeline)`` or use
        :meth:`attach`.
    """

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self._by_name: dict[str, Broker] = {}
        self._last: dict[tuple[str, int, int], tuple[int, int, int, int]] = {}
        self.samples: list[TimelineSample] = []

    @classmethod
    def attach(cls, cluster: Cluster) -> PartitionTimeline:
        """Build a timeline, attach it to the cluster's world, take a first sample; return it."""
        tl = cls(cluster)
        cluster.world.attach(tl)
        tl.sample_all(-1)
        return tl

    # -- observer hooks ---------------------------------------------------------------------

    def on_event(self, event: TraceEvent) -> None:
        """Sample the leaders of the broker that emitted ``event`` (other nodes are ignored)."""
        broker = self._broker(event.node)
        if broker is not None:
            self._sample(broker, event.index, event.time_ms)

    def after_run_for(self, world: World) -> None:
        """Sample every broker when a ``run_for`` returns."""
        self.sample_all(-1)

    # -- sampling ---------------------------------------------------------------------------

    def sample_all(self, index: int) -> None:
        """Sample every broker now."""
        now = self._cluster.world.now_ms
        for bid in sorted(self._cluster.brokers):
            self._sample(self._cluster.brokers[bid], index, now)

    def _broker(self, node: str) -> Broker | None:
        b = self._by_name.get(node)
        if b is None and node.startswith("broker-"):
            self._by_name = {x.name: x for x in self._cluster.brokers.values()}
            b = self._by_name.get(node)
        return b

    def _sample(self, broker: Broker, index: int, time_ms: int) -> None:
        bid = broker.broker_id
        last = self._last
        # Insertion order of ``broker.replicas`` is the (deterministic) order replicas were made.
        for (topic, partition), r in broker.replicas.items():
            if not r.is_leader or r.state is None:
                continue
            values = (r.state.leader_epoch, r.log.log_end_offset, r.high_watermark, r.last_stable_offset)
            key = (topic, partition, bid)
            if last.get(key) != values:
                last[key] = values
                self.samples.append(TimelineSample(index, time_ms, topic, partition, bid, *values))

    # -- reading ----------------------------------------------------------------------------

    def of(self, topic: str, partition: int = 0) -> list[TimelineSample]:
        """Return the samples of one partition, in order."""
        return [s for s in self.samples if s.topic == topic and s.partition == partition]

    def to_table(self) -> dict[str, list[int | str]]:
        """Return the samples as ``{column: values}`` (plain lists, for pandas or Spark)."""
        return {f: [getattr(s, f) for s in self.samples] for f in TimelineSample._fields}
