"""The replicas one broker hosts, their purgatories and the partition states it was pushed.

Role
----
Kafka's ``kafka.server.ReplicaManager`` holds the broker's ``Partition`` objects (each with its
log and ISR) and its delayed-operation purgatories; the produce path, the leader's side of
replication, the replica fetchers and the consumer fetches are each handed it at construction
(:mod:`engine.broker.produce`, :mod:`engine.broker.isr`, :mod:`engine.broker.replica_fetcher`,
:mod:`engine.broker.consumer_fetch`), as Kafka's ``ReplicaFetcherThread`` and ``DelayedFetch``
are handed the ``ReplicaManager``. It also keeps the partition states the controller pushed
(Kafka's ``MetadataCache``), which tell "not the leader" from "unknown partition".

Invariants
----------
- Every hosted replica has a purgatory: both are made together in :meth:`replica` and dropped
  together in :meth:`drop`.
- All of it is volatile: :meth:`on_crash` forgets it; the replicas come back from disk when the
  controller pushes their states again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.broker.purgatory import Purgatory
from engine.broker.replica import Replica
from engine.errors import ErrorCode
from engine.protocol import ActiveProducer

if TYPE_CHECKING:
    from engine.config import BrokerConfig, TopicConfig
    from engine.protocol import PartitionState
    from engine.sim.disk import Disk
    from engine.sim.trace import Trace
    from engine.weakenings import Weakenings


class ReplicaManager:
    """One broker's replicas, purgatories and pushed partition states."""

    __slots__ = (
        "broker_id",
        "config",
        "disk",
        "metadata",
        "node",
        "purgatory",
        "replicas",
        "topic_configs",
        "trace",
        "weak",
    )

    def __init__(
        self,
        broker_id: int,
        node: str,
        config: BrokerConfig,
        topic_configs: dict[str, TopicConfig],
        disk: Disk,
        trace: Trace,
        weak: Weakenings,
    ) -> None:
        self.broker_id = broker_id
        self.node = node
        self.config = config
        self.topic_configs = topic_configs
        self.disk = disk
        self.trace = trace
        self.weak = weak
        self.replicas: dict[tuple[str, int], Replica] = {}
        self.purgatory: dict[tuple[str, int], Purgatory] = {}
        self.metadata: dict[tuple[str, int], PartitionState] = {}

    def on_crash(self) -> None:
        """Forget every replica, purgatory and partition state (all volatile)."""
        self.replicas = {}
        self.purgatory = {}
        self.metadata = {}

    def replica(self, topic: str, partition: int) -> Replica:
        """Return the replica of a partition hosted here, creating it from disk if needed."""
        key = (topic, partition)
        r = self.replicas.get(key)
        if r is None:
            seg = self.topic_configs.get(topic)
            segment_bytes = (
                seg.segment_bytes if seg is not None and seg.segment_bytes else self.config.log_segment_bytes
            )
            r = Replica(
                topic,
                partition,
                self.broker_id,
                self.disk,
                segment_bytes=segment_bytes,
                weak=self.weak,
                offset_hooks=self.trace.offset_hooks,
                trace=self.trace,
                node=self.node,
            )
            self.replicas[key] = r
            self.purgatory[key] = Purgatory()
        return r

    def drop(self, key: tuple[str, int]) -> None:
        """Forget a hosted replica and its purgatory (its topic was deleted)."""
        del self.replicas[key]
        del self.purgatory[key]

    def leader_replica(self, topic: str, partition: int) -> tuple[Replica | None, ErrorCode]:
        """Return the replica if this broker leads the partition, else the error to answer."""
        r = self.replicas.get((topic, partition))
        if r is None:
            known = (topic, partition) in self.metadata
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not r.is_leader:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return r, ErrorCode.NONE

    def active_producers(self, topic: str, partition: int) -> tuple[ErrorCode, tuple[ActiveProducer, ...]]:
        """Return a hosted replica's producer-state table, by producer id (Kafka's ``activeProducerState``).

        Any hosted replica answers, the leader or a follower (``describe-producers --broker-id``);
        a partition not hosted here is ``NOT_LEADER_OR_FOLLOWER``, one unknown here
        ``UNKNOWN_TOPIC_OR_PARTITION`` (``ReplicaManager.getPartitionOrError``).
        """
        r = self.replicas.get((topic, partition))
        if r is None:
            known = (topic, partition) in self.metadata
            return (ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ()
        table = r.producers.producers
        return ErrorCode.NONE, tuple(
            ActiveProducer(
                pid,
                e.producer_epoch,
                e.last_seq,
                e.last_timestamp,
                e.coordinator_epoch,
                e.current_txn_first_offset,
            )
            for pid, e in sorted(table.items())
        )

    def min_insync_replicas(self, topic: str) -> int:
        """Return the topic's min.insync.replicas."""
        tc = self.topic_configs.get(topic)
        if tc is not None and tc.min_insync_replicas is not None:
            return tc.min_insync_replicas
        return self.config.min_insync_replicas

    def max_message_bytes(self, topic: str) -> int:
        """Return the largest batch the topic's leader appends (``max.message.bytes``, else ``message.max.bytes``)."""
        tc = self.topic_configs.get(topic)
        if tc is not None and tc.max_message_bytes is not None:
            return tc.max_message_bytes
        return self.config.message_max_bytes
