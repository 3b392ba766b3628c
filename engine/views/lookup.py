"""Check what a user names -- a topic, a partition, a broker, a node -- against a cluster.

Every public entry point of :class:`~engine.cluster.Cluster`, its views and its admin goes through
here, so the same mistake gets the same answer everywhere:

=====================================  ==============================================================
what was passed                         what is raised
=====================================  ==============================================================
an argument of the wrong type           ``TypeError`` naming the argument and what to pass
a topic or partition the cluster has    ``UnknownTopicOrPartitionException``, as a broker answers; the
not                                     message lists the topics, or the topic's partitions
a topic name Kafka would refuse         ``InvalidTopicException``, with Kafka's ``Topic.validate``
                                        rules (below)
a broker id or node name that does      ``ValueError`` listing the brokers or the nodes, with a "did you
not exist                               mean" suggestion
a partition without a leader, when the  ``LeaderNotAvailableException`` naming the replicas to pass as
view reads the leader's replica         ``broker=``
=====================================  ==============================================================

Topic names (Kafka's ``org.apache.kafka.common.internals.Topic``): not empty, not ``.`` or ``..``,
at most 249 characters, only ASCII letters and digits, ``.``, ``_`` and ``-``. Kafka also refuses a
new topic whose name differs from an existing one only by ``.`` versus ``_`` (the two collide in
metric names; ``kafka-topics.sh`` warns, the controller refuses), and so does :func:`check_new_topic`.
The internal topics ``__consumer_offsets`` and ``__transaction_state`` are the cluster's own: it
creates them on first use, so a user may not.

Nothing here changes the cluster: every check runs before anything is created or sent.

What the views read of the cluster that owns them is :class:`ClusterState`, a protocol defined
here: the views and the admin are handed the cluster's world, config, brokers and controller
and never import :class:`~engine.cluster.Cluster` (which imports them).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from engine.args import check_int, check_str
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from engine.errors import (
    InvalidTopicException,
    LeaderNotAvailableException,
    NotLeaderOrFollowerException,
    TopicExistsException,
    UnknownTopicOrPartitionException,
)

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.broker.controller import Controller
    from engine.client.consumer import Consumer
    from engine.client.producer import Producer
    from engine.config import BrokerConfig
    from engine.protocol import PartitionState
    from engine.sim.world import World


class ClusterState(Protocol):
    """What the views and the admin read of a cluster: its world, config, brokers and controller."""

    @property
    def world(self) -> World:
        """The simulated world."""
        ...

    @property
    def config(self) -> BrokerConfig:
        """The brokers' config."""
        ...

    @property
    def brokers(self) -> Mapping[int, Broker]:
        """The brokers, by id."""
        ...

    @property
    def controller(self) -> Controller:
        """The controller (its partition states are the cluster's)."""
        ...

    @property
    def now_ms(self) -> int:
        """The simulated time."""
        ...


class ClientsCluster(ClusterState, Protocol):
    """A cluster with its clients, as the dashboard and the recorder read them."""

    @property
    def producers(self) -> Sequence[Producer]:
        """The engine's producers, in creation order."""
        ...

    @property
    def consumers(self) -> Sequence[Consumer]:
        """The engine's consumers, in creation order."""
        ...

    @property
    def outside_clients(self) -> Any:
        """The served clients' board source (``eos serve``), or None."""
        ...


#: Kafka's ``Topic.MAX_NAME_LENGTH``: 255 minus room for a partition suffix in directory names.
MAX_TOPIC_NAME_LENGTH = 249
#: Topics the cluster creates itself on first use (``Topic.isInternal``).
INTERNAL_TOPICS = (CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


# -- argument types -----------------------------------------------------------------------------


def check_partition(partition: Any) -> int:
    """Return a partition number (an int >= 0)."""
    return check_int(partition, "partition", minimum=0)


# -- topic names --------------------------------------------------------------------------------


def topic_name_problem(name: str) -> str | None:
    """Return why Kafka's ``Topic.validate`` refuses ``name``, or None if it is legal."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters ({len(name)} given)"
    if not _LEGAL_TOPIC.fullmatch(name):
        return (
            f"Topic name {name!r} is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def check_new_topic(name: Any, existing: dict[str, Any]) -> str:
    """Check the name of a topic to create against Kafka's rules and the topics in ``existing``.

    Raises ``TypeError`` (not a str), ``InvalidTopicException`` (an illegal or internal name, or a
    '.'/'_' collision) or ``TopicExistsException``.
    """
    if not isinstance(name, str):
        msg = f"topic name must be a str, got {name!r} ({type(name).__name__})"
        raise TypeError(msg)
    problem = topic_name_problem(name)
    if problem is not None:
        raise InvalidTopicException(problem, topic=name)
    if name in INTERNAL_TOPICS:
        msg = f"{name!r} is an internal topic: the cluster creates it on first use; pick another name"
        raise InvalidTopicException(msg, topic=name)
    if name in existing:
        raise TopicExistsException(f"Topic {name!r} already exists.", topic=name)
    folded = name.replace(".", "_")
    for other in sorted({*existing, *INTERNAL_TOPICS}):
        if other.replace(".", "_") == folded:
            msg = (
                f"Topic {name!r} collides with existing topic {other!r}: names that differ only by '.' and '_' "
                "share metric names in Kafka"
            )
            raise InvalidTopicException(msg, topic=name)
    return name


# -- topics and partitions of a cluster ---------------------------------------------------------


def partition_counts(cluster: ClusterState) -> dict[str, int]:
    """Return every topic the controller knows (internal ones once created) and its partition count."""
    counts: dict[str, int] = {}
    for t, p in cluster.controller.partitions:
        counts[t] = max(counts.get(t, 0), p + 1)
    return counts


def _topic_list(counts: dict[str, int]) -> str:
    user = [t for t in sorted(counts) if t not in INTERNAL_TOPICS]
    internal = [t for t in sorted(counts) if t in INTERNAL_TOPICS]
    text = ", ".join(user) if user else "none"
    return f"{text} (internal: {', '.join(internal)})" if internal else text


def _partition_range(n: int) -> str:
    return "only partition 0" if n == 1 else f"partitions 0-{n - 1}"


def require_partition(cluster: ClusterState, topic: Any, partition: Any) -> PartitionState:
    """Return the controller's state of ``topic``-``partition``; raise if the cluster has no such partition."""
    check_str(topic, "topic")
    check_partition(partition)
    state = cluster.controller.partitions.get((topic, partition))
    if state is not None:
        return state
    counts = partition_counts(cluster)
    if topic not in counts:
        msg = f"no topic {topic!r} in the cluster; topics: {_topic_list(counts)}"
    else:
        msg = f"no partition {topic}-{partition}: topic {topic!r} has {_partition_range(counts[topic])}"
    raise UnknownTopicOrPartitionException(msg, topic=topic, partition=partition)


def require_topic(cluster: ClusterState, topic: Any) -> int:
    """Return the partition count of ``topic``; raise UnknownTopicOrPartitionException if it does not exist."""
    check_str(topic, "topic")
    counts = partition_counts(cluster)
    if topic not in counts:
        msg = f"no topic {topic!r} in the cluster; topics: {_topic_list(counts)}"
        raise UnknownTopicOrPartitionException(msg, topic=topic)
    return counts[topic]


# -- brokers and nodes --------------------------------------------------------------------------


def _broker_list(cluster: ClusterState) -> str:
    return ", ".join(str(b) for b in sorted(cluster.brokers))


def require_broker(cluster: ClusterState, broker_id: Any) -> Broker:
    """Return the broker with this id; ValueError listing the brokers if there is none."""
    check_int(broker_id, "broker id")
    broker = cluster.brokers.get(broker_id)
    if broker is None:
        msg = f"no broker {broker_id}; brokers: {_broker_list(cluster)}"
        raise ValueError(msg)
    return broker


def replica_broker(cluster: ClusterState, topic: Any, partition: Any, broker_id: Any) -> tuple[PartitionState, int]:
    """Return the partition's state and the broker whose replica a view reads: ``broker_id``, else the leader.

    Raises ``LeaderNotAvailableException`` naming the replicas when no broker is given and the
    partition has no leader now.
    """
    state = require_partition(cluster, topic, partition)
    if broker_id is not None:
        require_broker(cluster, broker_id)
        return state, broker_id
    if state.leader not in cluster.brokers:
        choices = ", ".join(f"broker={b}" for b in state.replicas)
        msg = f"{topic}-{partition} has no leader now; read one replica with {choices}"
        raise LeaderNotAvailableException(msg, topic=topic, partition=partition)
    return state, state.leader


def hosting_broker(cluster: ClusterState, topic: Any, partition: Any, broker_id: Any) -> int:
    """Like :func:`replica_broker`, and a given broker must be one of the partition's replicas.

    Raises ``NotLeaderOrFollowerException`` naming the replicas otherwise (what a broker answers
    a request for a partition it does not host).
    """
    state, b = replica_broker(cluster, topic, partition, broker_id)
    if b not in state.replicas:
        replicas = ", ".join(str(r) for r in state.replicas)
        msg = f"broker {b} hosts no replica of {topic}-{partition}; its replicas are on brokers {replicas}"
        raise NotLeaderOrFollowerException(msg, topic=topic, partition=partition)
    return b


def node_name(cluster: ClusterState, node: Any) -> str:
    """Return the world's name of a node given as a broker id or a node name; ValueError if none exists."""
    if isinstance(node, bool) or not isinstance(node, (int, str)):
        msg = f"a node is a broker id (int) or a node name (str) such as 'broker-1' or 'producer-1', got {node!r}"
        raise TypeError(msg)
    if isinstance(node, int):
        if node not in cluster.brokers:
            msg = f"no broker {node}; brokers: {_broker_list(cluster)} (or pass a node name: {_node_list(cluster)})"
            raise ValueError(msg)
        return f"broker-{node}"
    if node not in cluster.world.nodes:
        close = difflib.get_close_matches(node, list(cluster.world.nodes), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        msg = f"no node {node!r}; {hint}known nodes: {_node_list(cluster)}"
        raise ValueError(msg)
    return node


def _node_list(cluster: ClusterState) -> str:
    return ", ".join(cluster.world.nodes)
