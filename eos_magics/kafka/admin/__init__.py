"""``confluent_kafka.admin`` on the simulated cluster: ``AdminClient``, ``NewTopic``, configs, offsets, results.

Inside :func:`eos_magics.kafka.patch`, ``import confluent_kafka.admin`` gives this module.
"""

from __future__ import annotations

from typing import Any

from engine.client.message import OFFSET_INVALID
from eos_magics.kafka.admin.client import AdminClient
from eos_magics.kafka.admin.configs import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType
from eos_magics.kafka.admin.offsets import ListOffsetsResultInfo, OffsetSpec
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
from eos_magics.kafka.model import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    IsolationLevel,
    Node,
)

__all__ = [
    "OFFSET_INVALID",
    "AdminClient",
    "AlterConfigOpType",
    "BrokerMetadata",
    "ClusterMetadata",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "ConsumerGroupType",
    "DescribeClusterResult",
    "IsolationLevel",
    "KafkaError",
    "KafkaException",
    "ListConsumerGroupsResult",
    "ListOffsetsResultInfo",
    "MemberAssignment",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "Node",
    "OffsetSpec",
    "PartitionMetadata",
    "ResourceType",
    "TopicMetadata",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    msg = (
        f"confluent_kafka.admin.{name} is not simulated by eos_magics.kafka (ACLs, SCRAM and "
        "the other admin calls listed in docs/testing.md are not)"
    )
    raise AttributeError(msg)
