"""The admin API's request and result classes, with confluent-kafka's names and fields.

``NewTopic`` and ``NewPartitions`` are what ``create_topics``/``create_partitions`` take; the others
are what the futures of ``describe_consumer_groups``, ``list_consumer_groups`` and
``describe_cluster`` resolve to. Plain value holders: nothing here talks to the cluster.
"""

from __future__ import annotations

from typing import Any

from eos_magics.kafka.model import ConsumerGroupState, ConsumerGroupType, Node

__all__ = [
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "DescribeClusterResult",
    "ListConsumerGroupsResult",
    "MemberAssignment",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
]


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    return value


class NewTopic:
    """A topic to create: name, partitions (-1: the broker's default), replication factor (-1: default)."""

    def __init__(
        self,
        topic: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        replica_assignment: list[list[int]] | None = None,
        config: dict[str, str] | None = None,
    ) -> None:
        if not isinstance(topic, str):
            raise TypeError(f"argument 1 must be str, not {type(topic).__name__}")
        self.topic = topic
        self.num_partitions = _int(num_partitions, "num_partitions")
        self.replication_factor = _int(replication_factor, "replication_factor")
        if config is not None and not isinstance(config, dict):
            raise TypeError("config must be a dict of topic configuration")
        self.replica_assignment = replica_assignment
        self.config = config if config is not None else {}

    def __repr__(self) -> str:
        return (
            f"NewTopic(topic={self.topic},num_partitions={self.num_partitions},"
            f"replication_factor={self.replication_factor},replica_assignment={self.replica_assignment},"
            f"config={self.config})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NewTopic) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash(self.topic)


class NewPartitions:
    """Partitions to add to a topic (``create_partitions`` is not simulated; the class exists for imports)."""

    def __init__(self, topic: str, new_total_count: int, replica_assignment: list[list[int]] | None = None) -> None:
        if not isinstance(topic, str):
            raise TypeError(f"argument 1 must be str, not {type(topic).__name__}")
        self.topic = topic
        self.new_total_count = _int(new_total_count, "new_total_count")
        self.replica_assignment = replica_assignment


class MemberAssignment:
    """The partitions assigned to a group member."""

    def __init__(self, topic_partitions: list[Any] | None) -> None:
        self.topic_partitions = topic_partitions or []


class MemberDescription:
    """A member of a consumer group."""

    def __init__(
        self,
        member_id: str,
        client_id: str,
        host: str,
        assignment: MemberAssignment,
        group_instance_id: str | None = None,
        target_assignment: MemberAssignment | None = None,
    ) -> None:
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.assignment = assignment
        self.target_assignment = target_assignment
        self.group_instance_id = group_instance_id


class ConsumerGroupDescription:
    """A consumer group as ``describe_consumer_groups`` reports it."""

    def __init__(
        self,
        group_id: str,
        is_simple_consumer_group: bool,
        members: list[MemberDescription],
        partition_assignor: str,
        state: ConsumerGroupState,
        coordinator: Node,
        authorized_operations: list[Any] | None = None,
        type: ConsumerGroupType = ConsumerGroupType.UNKNOWN,
    ) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = state
        self.type = type
        self.coordinator = coordinator
        self.authorized_operations = authorized_operations


class ConsumerGroupListing:
    """One group of ``list_consumer_groups``."""

    def __init__(
        self,
        group_id: str,
        is_simple_consumer_group: bool,
        state: ConsumerGroupState | None = None,
        type: ConsumerGroupType | None = None,
    ) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        if state is not None:
            self.state = state
        if type is not None:
            self.type = type


class ListConsumerGroupsResult:
    """What ``list_consumer_groups``'s future resolves to."""

    def __init__(self, valid: list[ConsumerGroupListing] | None = None, errors: list[Exception] | None = None) -> None:
        self.valid = valid
        self.errors = errors


class DescribeClusterResult:
    """What ``describe_cluster``'s future resolves to."""

    def __init__(
        self,
        controller: Node,
        nodes: list[Node],
        cluster_id: str | None = None,
        authorized_operations: list[Any] | None = None,
    ) -> None:
        self.cluster_id = cluster_id
        self.controller = controller
        self.nodes = nodes
        self.authorized_operations = authorized_operations
