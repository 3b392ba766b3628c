"""A read-only observer that records every partition leader's HW, LSO, LEO and leader epoch over time.

Role
----
Step invariant L7 (HW and LSO never decrease within a leader epoch; LSO ≤ HW ≤ LEO) needs the
offsets *as they moved*, not only their final values, and the widgets want the same series.
:class:`PartitionTimeline` is told by each replica at the moment one of these values may have
moved (the ``on_offsets`` observer hook: an append, an HW move, a transaction beginning or
ending, a truncation, a new leader epoch) and keeps a :class:`TimelineSample` only when one of
the four values changed for that (partition, broker). Nothing is polled: a quiet partition
costs nothing, and no intermediate value is missed.

>>> from engine import Cluster
>>> c = Cluster(seed=1, brokers=3)
>>> tl = PartitionTimeline.attach(c)
>>> c.create_topic("t", partitions=1, replication_factor=3)
>>> isinstance(tl.samples, list)
True

Invariants
----------
* It never changes the run (house style R16): it only reads the replica it is handed (its
  ``high_watermark``, ``last_stable_offset``, a pure computation over the producer table,
  ``log_end_offset`` and ``state.leader_epoch``); it draws no randomness and emits no trace
  event. A test checks that the fingerprint is unchanged with it attached.
* Samples are in the order the changes happened; ``index`` is the index of the last trace event
  emitted before the change (the event whose handling made it: a delivery, a timer's state
  event), or ``-1`` for the samples taken when the timeline is attached.
* Followers are not sampled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from engine.broker.replica import Replica
    from engine.cluster import Cluster

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
        self._world = cluster.world
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

    def on_offsets(self, r: Replica) -> None:
        """A replica's offsets may have moved: keep a sample if it leads and a value changed."""
        if r.is_leader:  # a follower is never sampled: skip the look-ups (this runs per append and HW move)
            world = self._world
            self._record(r, world.trace.count - 1, world.now_ms)

    # -- sampling ---------------------------------------------------------------------------

    def sample_all(self, index: int) -> None:
        """Sample every leader replica of every broker now."""
        now = self._cluster.world.now_ms
        for bid in sorted(self._cluster.brokers):
            # Insertion order of ``replicas`` is the (deterministic) order replicas were made.
            for r in self._cluster.brokers[bid].replicas.values():
                self._record(r, index, now)

    def _record(self, r: Replica, index: int, time_ms: int) -> None:
        """Keep a sample of a leader replica whose (epoch, LEO, HW, LSO) changed since its last one."""
        if not r.is_leader or r.state is None:
            return
        values = (r.state.leader_epoch, r.log.log_end_offset, r.high_watermark, r.last_stable_offset)
        key = (r.topic, r.partition, r.broker_id)
        if self._last.get(key) != values:
            self._last[key] = values
            self.samples.append(TimelineSample(index, time_ms, r.topic, r.partition, r.broker_id, *values))

    # -- reading ----------------------------------------------------------------------------

    def of(self, topic: str, partition: int = 0) -> list[TimelineSample]:
        """Return the samples of one partition, in order."""
        return [s for s in self.samples if s.topic == topic and s.partition == partition]

    def to_table(self) -> dict[str, list[int | str]]:
        """Return the samples as ``{column: values}`` (plain lists, for pandas or Spark)."""
        return {f: [getattr(s, f) for s in self.samples] for f in TimelineSample._fields}
