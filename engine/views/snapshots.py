"""Frozen snapshots of cluster state for widgets, magics, notebooks and tests.

Each view is a frozen dataclass taken at one simulated instant; holding one never keeps the
engine from moving on, and a widget can render it on another thread. Views read engine state and
never change it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, NamedTuple

from engine.log.producer_state import NUM_BATCHES_TO_RETAIN
from engine.views import lookup

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.broker.replica import Replica
    from engine.views.lookup import ClusterState


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica of a partition as its broker sees it."""

    broker_id: int
    status: str
    is_leader: bool
    log_end_offset: int
    high_watermark: int
    last_stable_offset: int
    leader_epoch: int
    batches: int


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionView:
    """A partition at one instant, as the controller and the leader see it."""

    topic: str
    partition: int
    time_ms: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    log_end_offset: int
    high_watermark: int
    last_stable_offset: int
    replica_views: tuple[ReplicaView, ...]

    def __str__(self) -> str:
        return (
            f"{self.topic}-{self.partition} leader={self.leader} epoch={self.leader_epoch} isr={list(self.isr)} "
            f"LEO={self.log_end_offset} HW={self.high_watermark} LSO={self.last_stable_offset}"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerView:
    """A broker at one instant."""

    broker_id: int
    status: str
    fenced: bool
    leader_of: tuple[str, ...]
    follower_of: tuple[str, ...]
    error_counts: tuple[tuple[str, int], ...]


class BatchWindowEntry(NamedTuple):
    """One batch of a producer's dedup window.

    This and :class:`ProducerEntryView` are named tuples, not frozen dataclasses: the dashboard's
    board (:mod:`engine.views.board`) builds them for every leader on each recorded step, and a
    named tuple costs a third of a frozen dataclass to build.
    """

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    timestamp: int


class ProducerEntryView(NamedTuple):
    """One producer in a partition replica's producer-state table (the board's and ``producer_state``'s)."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    current_txn_first_offset: int | None
    last_timestamp: int
    window: tuple[BatchWindowEntry, ...]

    @property
    def last_sequence(self) -> int:
        """Return the last sequence accepted."""
        return self.window[-1].last_sequence if self.window else -1


@dataclasses.dataclass(frozen=True, slots=True)
class ProducerStateView:
    """The producer-state table of one partition replica."""

    topic: str
    partition: int
    broker_id: int
    time_ms: int
    window_size: int
    producers: tuple[ProducerEntryView, ...]

    def __str__(self) -> str:
        lines = [f"{self.topic}-{self.partition} on broker {self.broker_id} (window {self.window_size} batches)"]
        for p in self.producers:
            seqs = " ".join(f"[{w.first_sequence}..{w.last_sequence}]@{w.first_offset}" for w in p.window)
            lines.append(f"  producerId={p.producer_id} epoch={p.producer_epoch} window: {seqs}")
        return "\n".join(lines)


def _replica_view(broker: Broker, r: Replica) -> ReplicaView:
    return ReplicaView(
        broker.broker_id,
        broker.status.value,
        r.is_leader,
        r.log_end_offset,
        r.high_watermark,
        r.last_stable_offset,
        r.state.leader_epoch if r.state else -1,
        len(r.log),
    )


def partition_view(cluster: ClusterState, topic: str, partition: int) -> PartitionView:
    """Return the view of one partition (``UnknownTopicOrPartitionException`` if the cluster has none)."""
    key = (topic, partition)
    s = lookup.require_partition(cluster, topic, partition)
    replicas = []
    for b in s.replicas:
        broker = cluster.brokers[b]
        r = broker.replicas.get(key)
        if r is None:
            replicas.append(ReplicaView(b, broker.status.value, False, -1, -1, -1, -1, 0))
        else:
            replicas.append(_replica_view(broker, r))
    leader = next((rv for rv in replicas if rv.broker_id == s.leader and rv.is_leader), None)
    return PartitionView(
        topic,
        partition,
        cluster.now_ms,
        s.leader,
        s.leader_epoch,
        s.isr,
        s.replicas,
        leader.log_end_offset if leader else -1,
        leader.high_watermark if leader else -1,
        leader.last_stable_offset if leader else -1,
        tuple(replicas),
    )


def broker_views(cluster: ClusterState) -> list[BrokerView]:
    """Return the view of every broker."""
    out = []
    for b in sorted(cluster.brokers):
        broker = cluster.brokers[b]
        leads = tuple(sorted(r.tp for r in broker.replicas.values() if r.is_leader))
        follows = tuple(sorted(r.tp for r in broker.replicas.values() if not r.is_leader))
        out.append(
            BrokerView(
                b,
                broker.status.value,
                b in cluster.controller.fenced,
                leads,
                follows,
                tuple(sorted(broker.error_counts.items())),
            )
        )
    return out


def producer_state_view(cluster: ClusterState, topic: str, partition: int, broker: int | None) -> ProducerStateView:
    """Return the producer-state table of a replica (the leader's by default).

    Empty when the broker hosts the partition but has not loaded it (it is down, or just
    restarted). Raises as :func:`~engine.views.lookup.hosting_broker` does: an unknown partition
    or broker, no leader, or a broker that is not a replica.
    """
    b = lookup.hosting_broker(cluster, topic, partition, broker)
    r = cluster.brokers[b].replicas.get((topic, partition))
    entries = producer_entries(r) if r is not None else ()
    return ProducerStateView(topic, partition, b, cluster.now_ms, NUM_BATCHES_TO_RETAIN, entries)


def producer_entries(replica: Replica) -> tuple[ProducerEntryView, ...]:
    """Return a replica's producer-state table, by producer id, each entry with its dedup window."""
    table = replica.producers.producers
    return tuple(
        ProducerEntryView(
            pid,
            e.producer_epoch,
            e.coordinator_epoch,
            e.current_txn_first_offset,
            e.last_timestamp,
            tuple(
                BatchWindowEntry(m.first_seq, m.last_seq, m.first_offset, m.last_offset, m.timestamp) for m in e.batches
            ),
        )
        for pid in sorted(table)
        for e in (table[pid],)
    )
