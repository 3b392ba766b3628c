"""confluent-kafka's ``AdminClient`` on the simulated cluster: futures that are already resolved.

Each call does its work at once (the simulation runs inside the call) and returns
``concurrent.futures.Future`` objects as confluent-kafka does; ``future.result()`` returns the
result or raises ``KafkaException``. Where the work happens:

* ``list_topics``/``cluster_id``/``describe_cluster``: a MetadataRequest from the admin client's
  own node (``adminclient-1`` ...: a producer node that never produces, as librdkafka's admin
  client is a producer handle), so network faults apply;
* ``create_topics``: :meth:`engine.Cluster.create_topic` (the controller's checks; errors carry
  Kafka's codes, an unknown or unmodelled topic setting is ``INVALID_CONFIG``);
* ``delete_topics``: :meth:`engine.Cluster.delete_topic`, then 10 ms of simulated time for the
  brokers to drop the partitions (as ``eos serve`` answers DeleteTopics); a missing topic is
  ``UNKNOWN_TOPIC_OR_PART``;
* ``describe_configs``/``incremental_alter_configs``: :mod:`engine.views.configs`, the table
  ``eos serve`` answers DescribeConfigs and IncrementalAlterConfigs from (same values, sources,
  read-only flags and errors); a broker resource is described by that broker;
* ``list_offsets``: ListOffsets to each partition's leader from the admin client's node
  (:func:`engine.client.list_offsets.list_offsets`, as ``Consumer.offsets_for_times`` asks);
* ``list_consumer_group_offsets``, ``describe_consumer_groups``, ``list_consumer_groups``: the
  group coordinators' state as a broker would answer it (:mod:`engine.views.consumer_groups`);
  a group whose coordinator is down reads as unknown;
* extensions with no confluent-kafka counterpart, from Java's ``Admin`` and
  ``kafka-transactions.sh``: ``list_transactions``, ``describe_transactions``,
  ``describe_producers``, ``find_hanging_transactions``, ``abort_transaction``
  (:mod:`engine.admin`); their futures resolve to the engine's rows.

Calls with no meaning here raise :class:`~eos_magics.kafka.unsupported.NotSimulatedError`.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

from engine.client.list_offsets import list_offsets
from engine.config import IsolationLevel as EngineIsolation
from engine.errors import ConfigError
from engine.views import configs as config_table
from eos_magics.kafka.admin.configs import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType
from eos_magics.kafka.admin.offsets import ListOffsetsResultInfo, OffsetSpec
from eos_magics.kafka.admin.results import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    DescribeClusterResult,
    ListConsumerGroupsResult,
    MemberAssignment,
    MemberDescription,
    NewTopic,
)
from eos_magics.kafka.binding import resolve
from eos_magics.kafka.calls import ENGINE_ERRORS, add_stubs, config_arg, unique_client_id
from eos_magics.kafka.config import settings
from eos_magics.kafka.errors import KafkaError, KafkaException, from_engine
from eos_magics.kafka.messages import TopicPartition
from eos_magics.kafka.metadata import ClusterMetadata, cluster_metadata
from eos_magics.kafka.model import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    IsolationLevel,
    Node,
)
from eos_magics.kafka.unsupported import not_simulated

__all__ = ["AdminClient"]

Future = concurrent.futures.Future


def _done(work: Callable[[], Any]) -> Future:
    """Run ``work`` now; return a future holding its result or its error as ``KafkaException``."""
    f: Future = Future()
    try:
        f.set_result(work())
    except ConfigError as exc:
        f.set_exception(KafkaException(KafkaError(KafkaError.INVALID_CONFIG, str(exc))))  # type: ignore[attr-defined]
    except ENGINE_ERRORS as exc:
        f.set_exception(KafkaException(from_engine(exc)))
    return f


def _failed(error: KafkaError) -> Future:
    f: Future = Future()
    f.set_exception(KafkaException(error))
    return f


def _entry(e: dict[str, Any], synonym: bool = False) -> ConfigEntry:
    """Return confluent-kafka's ConfigEntry for an entry of :mod:`engine.views.configs` (synonyms by name)."""
    synonyms = {
        s["name"]: ConfigEntry(s["name"], s["value"], ConfigSource(s["source"]), is_synonym=True)
        for s in e.get("synonyms", [])
    }
    return ConfigEntry(
        e["name"],
        e["value"],
        ConfigSource(e["config_source"]),
        e["read_only"],
        e["is_default"],
        e["is_sensitive"],
        synonym,
        synonyms,
    )


def _check_list_offsets(asked: Any, kwargs: dict[str, Any]) -> None:
    """Refuse bad arguments with confluent-kafka's exceptions (``AdminClient._check_list_offsets_request``)."""
    if not isinstance(asked, dict):
        raise TypeError(
            "Expected topic_partition_offsets to be dict of [TopicPartitions,OffsetSpec] for list offsets request"
        )
    for tp, spec in asked.items():
        if tp is None:
            raise TypeError("partition cannot be None")
        if not isinstance(tp, TopicPartition):
            raise TypeError("partition must be a TopicPartition")
        if not isinstance(tp.topic, str):
            raise TypeError("partition topic name must be string")
        if not tp.topic:
            raise ValueError("partition topic name cannot be empty")
        if tp.partition < 0:
            raise ValueError("partition index must be non-negative")
        if spec is None:
            raise TypeError("OffsetSpec cannot be None")
        if not isinstance(spec, OffsetSpec):
            raise TypeError("Value must be a OffsetSpec")
    if "isolation_level" in kwargs and not isinstance(kwargs["isolation_level"], IsolationLevel):
        raise TypeError("isolation_level argument should be an IsolationLevel")


def _list_of(items: Any, cls: type, what: str) -> list[Any]:
    if not isinstance(items, list) or not all(isinstance(x, cls) for x in items):
        raise TypeError(f"Expected list of {what}")
    return items


class AdminClient:
    """An admin client with confluent-kafka's API on the simulated cluster (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        conf = config_arg(args, kwargs)
        s = settings(conf, kwargs, "admin")
        self._cluster = resolve(s.bootstrap)
        self._client_id = conf.get("client.id") or "adminclient"
        self._node: Any = None

    @property
    def cluster(self) -> Any:
        """The engine cluster this client administers."""
        return self._cluster

    def _metadata_node(self) -> Any:
        if self._node is None:
            config: dict[str, Any] = {"enable.idempotence": False, "client.id": self._client_id}
            unique_client_id(self._cluster, config)
            self._node = self._cluster.producer(config)
        return self._node

    # -- metadata -------------------------------------------------------------------------------

    def list_topics(self, topic: str | None = None, timeout: float | None = -1, **kwargs: Any) -> ClusterMetadata:
        """Ask a broker for the cluster's metadata (``timeout`` in simulated seconds)."""
        try:
            return cluster_metadata(self._metadata_node().list_topics(topic, timeout))
        except ENGINE_ERRORS as exc:
            raise KafkaException(from_engine(exc)) from None

    def cluster_id(self, timeout: float | None = -1, **kwargs: Any) -> str | None:
        """Return the cluster id."""
        return self.list_topics(None, timeout).cluster_id

    def describe_cluster(self, **kwargs: Any) -> Future:
        """Return a future of :class:`DescribeClusterResult` (controller and brokers)."""

        def work() -> DescribeClusterResult:
            md = self._metadata_node().list_topics(None, kwargs.get("request_timeout", -1))
            nodes = [Node(b.id, b.host, b.port) for b in md.brokers.values()]
            # KRaft: the controller is no broker; Kafka then names a live broker, as here the one that answered.
            cid = md.controller_id if md.controller_id >= 0 else md.orig_broker_id
            controller = next((n for n in nodes if n.id == cid), Node(cid, "", -1))
            return DescribeClusterResult(controller, nodes, md.cluster_id)

        return _done(work)

    # -- topics ---------------------------------------------------------------------------------

    def create_topics(self, new_topics: list[NewTopic], **kwargs: Any) -> dict[str, Future]:
        """Create topics; return ``{topic: future}`` (``result()`` is None, or raises ``KafkaException``)."""
        _list_of(new_topics, NewTopic, "NewTopic")
        if kwargs.get("validate_only"):
            not_simulated("AdminClient.create_topics(validate_only=True)", "the controller has no validate-only mode")
        return {t.topic: _done(lambda t=t: self._create(t)) for t in new_topics}

    def _create(self, t: NewTopic) -> None:
        assignments = None
        if t.replica_assignment is not None:
            assignments = [tuple(r) for r in t.replica_assignment]
        partitions = 1 if t.num_partitions == -1 else t.num_partitions
        rf = None if t.replication_factor == -1 else t.replication_factor
        self._cluster.create_topic(t.topic, partitions, rf, dict(t.config) or None, assignments=assignments)

    def delete_topics(self, topics: list[str], **kwargs: Any) -> dict[str, Future]:
        """Delete topics; return ``{topic: future}`` (``result()`` is None, or raises ``KafkaException``).

        A deleted topic is gone from Metadata, its clients get ``UNKNOWN_TOPIC_OR_PART``, and its
        name can be created again (empty).
        """
        if not isinstance(topics, list):
            raise TypeError(f"argument 1 must be list, not {type(topics).__name__}")
        if not topics:
            raise ValueError("Expected non-empty list of topic strings")
        return {t: self._delete(t) for t in topics}

    def _delete(self, topic: str) -> Future:
        if not isinstance(topic, str) or topic not in self._cluster.topics:
            # librdkafka reports the code alone ("Broker: Unknown topic or partition"), not the broker's text.
            return _failed(KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))  # type: ignore[attr-defined]
        future = _done(lambda: self._cluster.delete_topic(topic))
        self._cluster.run_for(10)
        return future

    # -- configs --------------------------------------------------------------------------------

    def describe_configs(self, resources: list[ConfigResource], **kwargs: Any) -> dict[ConfigResource, Future]:
        """Return ``{resource: future}`` of ``{name: ConfigEntry}`` for topics and brokers (name: the broker id)."""
        self._check_resources(resources, ValueError)
        refused = self._broker_resource_error(resources)
        return {r: refused or _done(lambda r=r: self._describe_configs(r)) for r in resources}

    def _check_resources(self, resources: Any, list_error: type[Exception]) -> None:
        if not isinstance(resources, list) or not all(isinstance(r, ConfigResource) for r in resources):
            raise list_error(f"Expected list of {ConfigResource!r}")
        if not resources:
            raise ValueError("Expected non-empty list of ConfigResource objects")

    def _broker_resource_error(self, resources: list[ConfigResource]) -> Future | None:
        """Return a failed future when librdkafka refuses the call (two brokers, a non-numeric or unknown id)."""
        brokers = [r for r in resources if r.restype is ResourceType.BROKER]
        error = None
        if len(brokers) > 1:
            error = KafkaError(KafkaError._CONFLICT, "Only one ConfigResource of type BROKER is allowed per call")  # type: ignore[attr-defined]
        elif brokers and not brokers[0].name.isdigit():
            text = f"Expected an int32 broker_id for ConfigResource(type=BROKER, name={brokers[0].name})"
            error = KafkaError(KafkaError._INVALID_ARG, text)  # type: ignore[attr-defined]
        elif brokers and not self._broker_up(int(brokers[0].name)):
            error = KafkaError(KafkaError._TIMED_OUT, "Failed while waiting for broker: Local: Timed out")  # type: ignore[attr-defined]
        if error is None:
            return None
        failed: Future = Future()
        failed.set_exception(KafkaException(error))
        return failed

    def _broker_up(self, broker_id: int) -> bool:
        broker = self._cluster.brokers.get(broker_id)
        return broker is not None and broker.is_up

    def _asked_of(self, r: ConfigResource) -> int:
        """The broker a resource's request goes to: the broker named, else any live one (librdkafka's choice)."""
        if r.restype is ResourceType.BROKER:
            return int(r.name)
        live = [b for b in sorted(self._cluster.brokers) if self._cluster.brokers[b].is_up]
        return live[0] if live else -1

    def _describe_configs(self, r: ConfigResource) -> dict[str, ConfigEntry]:
        found = config_table.describe(self._cluster, r.restype_int, r.name, self._asked_of(r))
        return {e["name"]: _entry(e) for e in found}

    def incremental_alter_configs(self, resources: list[ConfigResource], **kwargs: Any) -> dict[ConfigResource, Future]:
        """Alter topic configs (SET, DELETE); return ``{resource: future}`` of None (``validate_only=`` checks only)."""
        self._check_resources(resources, TypeError)
        for r in resources:
            if not r.incremental_configs:
                raise ValueError(
                    "expected non-empty list of ConfigEntry to alter incrementally in incremental_configs field"
                )
            for e in r.incremental_configs:
                if not isinstance(e.incremental_operation, AlterConfigOpType):
                    raise TypeError("Required attribute .value missing")
        refused = self._broker_resource_error(resources)
        validate = bool(kwargs.get("validate_only", False))
        return {r: refused or _done(lambda r=r: self._alter(r, validate)) for r in resources}

    def _alter(self, r: ConfigResource, validate_only: bool) -> None:
        changes = [(e.name, e.incremental_operation.value, e.value) for e in r.incremental_configs]  # type: ignore[union-attr]
        config_table.alter(self._cluster, r.restype_int, r.name, changes, validate_only)

    # -- offsets --------------------------------------------------------------------------------

    def list_offsets(
        self, topic_partition_offsets: dict[TopicPartition, OffsetSpec], **kwargs: Any
    ) -> dict[TopicPartition, Future]:
        """Return ``{TopicPartition: future}`` of :class:`ListOffsetsResultInfo` (``isolation_level=`` as there).

        When no partition asked for exists, every future fails with ``_NOENT`` as librdkafka's
        leader lookup does; otherwise a missing one fails with ``UNKNOWN_TOPIC_OR_PART``.
        """
        _check_list_offsets(topic_partition_offsets, kwargs)
        level = kwargs.get("isolation_level", IsolationLevel.READ_UNCOMMITTED)
        committed = level is IsolationLevel.READ_COMMITTED
        isolation = EngineIsolation.READ_COMMITTED if committed else EngineIsolation.READ_UNCOMMITTED
        asked = [
            (TopicPartition(tp.topic, tp.partition, int(spec)), spec) for tp, spec in topic_partition_offsets.items()
        ]
        counts = self._cluster.topics
        if asked and all(tp.partition >= counts.get(tp.topic, 0) for tp, _ in asked):
            noent = KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found")  # type: ignore[attr-defined]
            return {tp: _failed(noent) for tp, _ in asked}
        return {tp: _done(lambda tp=tp: self._list_offset(tp, isolation)) for tp, _ in asked}

    def _list_offset(self, tp: TopicPartition, isolation: EngineIsolation) -> ListOffsetsResultInfo:
        node = self._metadata_node()
        end = node.world.now_ms + node.request_timeout_ms()
        [answer] = list_offsets(node, (tp.topic, tp.partition), (tp.offset,), isolation, end, "list_offsets")
        return ListOffsetsResultInfo(answer.offset, answer.timestamp, answer.leader_epoch)

    # -- consumer groups ------------------------------------------------------------------------

    def list_consumer_group_offsets(
        self, list_consumer_group_offsets_request: list[ConsumerGroupTopicPartitions], **kwargs: Any
    ) -> dict[str, Future]:
        """Return ``{group: future}`` of :class:`ConsumerGroupTopicPartitions` with the committed offsets.

        Without partitions, every partition the group has an offset for; a partition without one
        gets offset -1001 (``OFFSET_INVALID``).
        """
        requests = _list_of(
            list_consumer_group_offsets_request, ConsumerGroupTopicPartitions, "ConsumerGroupTopicPartitions"
        )
        if len(requests) != 1:
            raise ValueError("Currently we support listing offsets for a single consumer group only")
        return {r.group_id: _done(lambda r=r: self._offsets(r)) for r in requests}

    def _offsets(self, request: ConsumerGroupTopicPartitions) -> ConsumerGroupTopicPartitions:
        view = self._cluster.group_view(request.group_id)
        committed = {} if view is None else {(t, p): o for t, p, o in view.committed}
        if request.topic_partitions is None:
            tps = [TopicPartition(t, p, o) for (t, p), o in sorted(committed.items())]
        else:
            tps = [
                TopicPartition(x.topic, x.partition, committed.get((x.topic, x.partition), -1001))
                for x in request.topic_partitions
            ]
        return ConsumerGroupTopicPartitions(request.group_id, tps)

    def describe_consumer_groups(self, group_ids: list[str], **kwargs: Any) -> dict[str, Future]:
        """Return ``{group: future}`` of :class:`ConsumerGroupDescription` (an unknown group is DEAD, no members)."""
        _list_of(group_ids, str, "group ids (str)")
        return {g: _done(lambda g=g: self._describe_group(g)) for g in group_ids}

    def _describe_group(self, group_id: str) -> ConsumerGroupDescription:
        view = self._cluster.group_view(group_id)
        if view is None:
            dead = ConsumerGroupState.DEAD
            return ConsumerGroupDescription(
                group_id, False, [], "", dead, Node(-1, "", -1), None, ConsumerGroupType.CLASSIC
            )
        members = [
            MemberDescription(
                m.member_id, m.client_id, m.host, MemberAssignment([TopicPartition(t, p) for t, p in m.assignment])
            )
            for m in view.members
        ]
        coordinator = Node(view.coordinator, f"broker-{view.coordinator}", 9092)
        state = ConsumerGroupState.from_kafka(view.state)
        return ConsumerGroupDescription(
            group_id, False, members, view.protocol or "", state, coordinator, None, ConsumerGroupType.CLASSIC
        )

    def list_consumer_groups(self, **kwargs: Any) -> Future:
        """Return a future of :class:`ListConsumerGroupsResult`; ``states`` filters by ConsumerGroupState."""
        states = kwargs.get("states")

        def work() -> ListConsumerGroupsResult:
            from engine.group import GroupCoordinator

            listings = []
            for broker in self._cluster.brokers.values():
                if not broker.is_up:
                    continue
                for ext in broker.extensions:
                    if isinstance(ext, GroupCoordinator):
                        for gid, state, _gen in ext.describe():
                            s = ConsumerGroupState.from_kafka(state)
                            if not states or s in states:
                                listings.append(ConsumerGroupListing(gid, False, s, ConsumerGroupType.CLASSIC))
            return ListConsumerGroupsResult(sorted(listings, key=lambda x: x.group_id), [])

        return _done(work)

    # -- transactions (extensions: Java's Admin and kafka-transactions.sh) ------------------------

    def list_transactions(self, **kwargs: Any) -> Future:
        """Extension: a future of the engine's ``list`` rows (``duration_filter_ms=`` as the tool's option)."""
        return _done(lambda: self._cluster.admin().list_transactions(kwargs.get("duration_filter_ms")))

    def describe_transactions(self, transactional_ids: list[str], **kwargs: Any) -> dict[str, Future]:
        """Extension: ``{transactional_id: future}`` of the engine's ``describe`` rows."""
        _list_of(transactional_ids, str, "transactional ids (str)")
        admin = self._cluster.admin()
        return {t: _done(lambda t=t: admin.describe_transaction(t)) for t in transactional_ids}

    def describe_producers(self, partitions: list[TopicPartition], **kwargs: Any) -> dict[TopicPartition, Future]:
        """Extension: ``{partition: future}`` of the engine's ``describe-producers`` rows."""
        admin = self._cluster.admin()
        return {p: _done(lambda p=p: admin.describe_producers(p.topic, p.partition)) for p in partitions}

    def find_hanging_transactions(self, **kwargs: Any) -> Future:
        """Extension: a future of the engine's ``find-hanging`` rows (``broker_id``/``topic``/``partition``)."""
        return _done(lambda: self._cluster.admin().find_hanging(**kwargs))

    def abort_transaction(self, partition: TopicPartition, **kwargs: Any) -> Future:
        """Extension: abort the open transaction starting at ``partition.offset`` (KIP-664); a future of None."""
        admin = self._cluster.admin()
        return _done(lambda: admin.abort_transaction(partition.topic, partition.partition, partition.offset) and None)

    # -- lifecycle ------------------------------------------------------------------------------

    def poll(self, timeout: float | None = -1) -> int:
        """Serve callbacks: there are none to serve (every future is resolved by its call); return 0."""
        return 0

    def __len__(self) -> int:
        return 0

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


add_stubs(AdminClient, "AdminClient")
