"""What ``list_topics()`` returns: confluent-kafka's metadata classes, built from the engine's answer.

The engine's ``list_topics`` asks a broker (a MetadataRequest over the simulated network) and
returns dataclasses with confluent-kafka's field names (:mod:`engine.client.metadata`); these
classes are confluent-kafka's own shapes (``confluent_kafka.admin.ClusterMetadata`` ...), with
errors as confluent :class:`~eos_magics.kafka.errors.KafkaError` values. Brokers have no host or
port in a simulation: ``host`` is the broker's node name and ``port`` 9092.
"""

from __future__ import annotations

from typing import Any

from eos_magics.kafka.errors import KafkaError, from_engine

__all__ = ["BrokerMetadata", "ClusterMetadata", "PartitionMetadata", "TopicMetadata", "cluster_metadata"]


class ClusterMetadata:
    """A cluster: ``cluster_id``, ``controller_id``, ``brokers`` by id, ``topics`` by name."""

    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.brokers: dict[int, BrokerMetadata] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.orig_broker_id = -1
        self.orig_broker_name: str | None = None

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id})"

    def __str__(self) -> str:
        return str(self.cluster_id)


class BrokerMetadata:
    """A broker: ``id``, ``host``, ``port``."""

    def __init__(self) -> None:
        self.id = -1
        self.host: str | None = None
        self.port = -1

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


class TopicMetadata:
    """A topic: ``topic``, ``partitions`` by id, ``error`` (a KafkaError or None)."""

    def __init__(self) -> None:
        self.topic: str | None = None
        self.partitions: dict[int, PartitionMetadata] = {}
        self.error: KafkaError | None = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions, {self.error})"
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions)"

    def __str__(self) -> str:
        return str(self.topic)


class PartitionMetadata:
    """A partition: ``id``, ``leader`` (-1: none), ``replicas``, ``isrs``, ``error``."""

    def __init__(self) -> None:
        self.id = -1
        self.leader = -1
        self.replicas: list[int] = []
        self.isrs: list[int] = []
        self.error: KafkaError | None = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"PartitionMetadata({self.id}, {self.error})"
        return f"PartitionMetadata({self.id})"

    def __str__(self) -> str:
        return str(self.id)


def _error(err: Any) -> KafkaError | None:
    return None if err is None else from_engine(err)


def cluster_metadata(md: Any) -> ClusterMetadata:
    """Return confluent-kafka's ``ClusterMetadata`` for the engine's :class:`engine.client.metadata.ClusterMetadata`."""
    out = ClusterMetadata()
    out.cluster_id = md.cluster_id
    out.controller_id = md.controller_id
    out.orig_broker_id = md.orig_broker_id
    out.orig_broker_name = md.orig_broker_name
    for bid, b in md.brokers.items():
        broker = BrokerMetadata()
        broker.id, broker.host, broker.port = b.id, b.host, b.port
        out.brokers[bid] = broker
    for name, t in md.topics.items():
        topic = TopicMetadata()
        topic.topic, topic.error = t.topic, _error(t.error)
        for pid, p in t.partitions.items():
            part = PartitionMetadata()
            part.id, part.leader, part.replicas, part.isrs = p.id, p.leader, list(p.replicas), list(p.isrs)
            part.error = _error(p.error)
            topic.partitions[pid] = part
        out.topics[name] = topic
    return out
