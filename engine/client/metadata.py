"""What ``list_topics()`` returns: confluent-kafka's ``ClusterMetadata`` and its parts.

The shapes and field names are confluent-kafka's (``confluent_kafka.admin``): a cluster has
``brokers`` and ``topics`` dicts, a topic has ``partitions``, a partition names its ``leader``,
``replicas`` and ``isrs``. A topic the cluster does not know is returned with ``error`` set to
``UnknownTopicOrPartitionException`` and no partitions, as confluent-kafka does, rather than
raised. Brokers have no host or port in a simulation; ``host`` is the node name.
"""

from __future__ import annotations

import dataclasses

from engine.errors import KafkaError


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerMetadata:
    """One live broker."""

    id: int
    host: str
    port: int = 9092

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition as the answering broker knows it (leader -1: none)."""

    id: int
    leader: int
    replicas: list[int]
    isrs: list[int]
    error: KafkaError | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic and its partitions by id."""

    topic: str
    partitions: dict[int, PartitionMetadata]
    error: KafkaError | None = None

    def __str__(self) -> str:
        return self.topic


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """The answer to a MetadataRequest: brokers and topics, keyed by id and name."""

    cluster_id: str
    controller_id: int
    brokers: dict[int, BrokerMetadata]
    topics: dict[str, TopicMetadata]
    orig_broker_id: int = -1
    orig_broker_name: str = ""
