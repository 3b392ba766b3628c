"""``confluent_kafka.admin`` on the simulated cluster: ``AdminClient``, ``NewTopic`` and their results.

Inside :func:`eos_magics.kafka.patch`, ``import confluent_kafka.admin`` gives this module.
"""

from __future__ import annotations

from typing import Any

from engine.client.message import OFFSET_INVALID
from eos_magics.kafka.admin.client import AdminClient
from eos_magics.kafka.admin.results import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    DescribeClusterResult,
    ListConsumerGroupsResult,
    MemberAssignment,
    MemberDescription,
    NewPartitions,
    NewTopic,
)
from eos_magics.kafka.errors import KafkaError, KafkaException
from eos_magics.kafka.metadata import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata
from eos_magics.kafka.model import ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType, Node

__all__ = [
    "OFFSET_INVALID",
    "AdminClient",
    "BrokerMetadata",
    "ClusterMetadata",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "ConsumerGroupType",
    "DescribeClusterResult",
    "KafkaError",
    "KafkaException",
    "ListConsumerGroupsResult",
    "MemberAssignment",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "Node",
    "PartitionMetadata",
    "TopicMetadata",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    msg = (
        f"confluent_kafka.admin.{name} is not simulated by eos_magics.kafka (ACLs, configs, SCRAM and "
        "the other admin calls listed in docs/testing.md are not)"
    )
    raise AttributeError(msg)
