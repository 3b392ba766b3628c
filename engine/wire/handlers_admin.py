"""The admin APIs over the wire: CreateTopics, DeleteTopics, DescribeConfigs, IncrementalAlterConfigs, DescribeCluster.

Role
----
A topic is created at the controller, to which the connected broker forwards the request over the
simulated network (Kafka's ``KafkaApis`` forwards CreateTopics to the KRaft controller, KIP-590),
with the checks of ``Cluster.add_topic`` (Kafka's ``ReplicationControlManager.createTopic``); the
answer goes out 10 ms of simulated time later, when the controller has elected the leaders (Kafka
answers once the topic is in the metadata). A broker or controller down or cut off shows: the
topic is answered ``REQUEST_TIMED_OUT`` after the request's ``timeout_ms``. ``validate_only`` runs
the same checks and creates nothing.
-1 partitions or replication factor mean the broker's default (``num.partitions`` is 1 here); 0 and
other negatives are refused as Kafka refuses them (INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR).
DeleteTopics deletes through ``Cluster.delete_topic`` and answers 10 ms later, once the brokers
have dropped the partitions. Configs are described and altered by :mod:`engine.views.configs`, as the drop-in's
AdminClient does.

Invariants
----------
CreateTopics crosses the simulated network (broker, then controller). DeleteTopics and the
configs act on the cluster directly, as the engine's admin client does; each of their answers is a
pure function of the cluster's state and the request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.errors import ErrorCode, KafkaError
from engine.protocol import CreateTopicRequest, CreateTopicResponse
from engine.views import configs
from engine.wire.shape import millis

if TYPE_CHECKING:
    from engine.wire.frames import Request
    from engine.wire.gateway import WireConnection

Reply = Any

#: Simulated ms between creating a topic and answering (``Cluster.create_topic`` runs as long).
ELECTION_MS = 10


#: Kafka's default ``num.partitions`` (the engine has no such setting: a topic created without one gets 1).
DEFAULT_PARTITIONS = 1
#: Kafka's error codes the engine's catalogue does not name.
UNKNOWN_TOPIC_ID = 100
MISMATCHED_ENDPOINT_TYPE = 114


def create_topics(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Create each topic at the controller, through the connected broker, or answer why not.

    Each topic goes as a :class:`~engine.protocol.CreateTopicRequest` to the connected broker,
    which forwards it to the controller (KIP-590); the reply goes out once every topic is
    answered, 10 ms of simulated time later (the leaders' election). A controller that does not
    answer in the request's ``timeout_ms`` gives the topic ``REQUEST_TIMED_OUT``.
    """
    b = request.body
    results: list[dict[str, Any] | None] = [None] * len(b.topics)
    left = [len(b.topics)]

    def settle(i: int, entry: dict[str, Any]) -> None:
        results[i] = entry
        left[0] -= 1
        if not left[0]:
            conn.call_after(ELECTION_MS, reply, {"throttle_time": 0, "topics": results})

    if not b.topics:
        conn.call_after(ELECTION_MS, reply, {"throttle_time": 0, "topics": []})
    for i, t in enumerate(b.topics):
        entry: dict[str, Any] = {
            "name": t.name,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
        }
        assignments = [tuple(a.broker_ids) for a in sorted(t.assignments, key=lambda a: a.partition_index)] or None
        config = {c.name: c.value for c in t.configs} or None
        try:
            partitions, rf = _counts(t.num_partitions, t.replication_factor, assignments)
            config = _modelled(config)
        except KafkaError as exc:
            settle(i, {**entry, "error_code": exc.code, "error_message": str(exc)})
            continue
        except (TypeError, ValueError) as exc:
            settle(i, {**entry, "error_code": ErrorCode.INVALID_CONFIG, "error_message": str(exc)})
            continue
        ask = CreateTopicRequest(
            t.name,
            partitions,
            rf,
            tuple(sorted(config.items())) if config else None,
            tuple(assignments) if assignments else None,
            bool(b.validate_only),
            max(millis(b.timeout), 1),
        )
        conn.ask(ask, lambda a, i=i, entry=entry, ask=ask: settle(i, _created(entry, ask, a)))


def _created(entry: dict[str, Any], ask: CreateTopicRequest, a: CreateTopicResponse | None) -> dict[str, Any]:
    """Return a topic's CreateTopics result from the controller's answer (None: the broker is gone)."""
    if a is None:
        return {**entry, "error_code": ErrorCode.REQUEST_TIMED_OUT, "error_message": "no answer from the broker"}
    if a.error is not ErrorCode.NONE:
        return {**entry, "error_code": a.error, "error_message": a.error_message}
    out = {**entry, "num_partitions": a.num_partitions, "replication_factor": a.replication_factor}
    if not ask.validate_only:
        out["configs"] = [{**c, "is_sensitive": False} for c in configs.select(list(a.configs), None, False)]
    return out


#: Topic configs Kafka clients set at creation that the engine does not model, with the values whose
#: meaning the engine's log already has (Kafka Streams creates its changelog and repartition topics
#: with them: ``InternalTopicManager``, ``UnwindowedUnversionedChangelogTopicConfig``,
#: ``RepartitionTopicConfig``). ``cleanup.policy``: the engine never compacts nor deletes, and a
#: log not yet compacted or cleaned is one Kafka may serve too (the active segment is never
#: cleaned); ``retention.ms``/``retention.bytes``: likewise, nothing is deleted yet;
#: ``message.timestamp.type=CreateTime``: the producer's timestamps are kept, as the engine does.
#: Another value (``LogAppendTime``, an unknown policy) is INVALID_CONFIG, as is any other key.
INERT_TOPIC_CONFIGS: dict[str, Any] = {
    "cleanup.policy": lambda v: set(v.replace(" ", "").split(",")) <= {"compact", "delete"},
    "message.timestamp.type": lambda v: v == "CreateTime",
    "retention.ms": lambda v: v.lstrip("-").isdigit() and int(v) >= -1,
    "retention.bytes": lambda v: v.lstrip("-").isdigit() and int(v) >= -1,
}


def _modelled(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return ``config`` without the accepted inert keys; raise ValueError for a value the engine cannot honour."""
    if not config:
        return config
    for key, ok in INERT_TOPIC_CONFIGS.items():
        if key in config and not (isinstance(config[key], str) and ok(config[key])):
            raise ValueError(
                f"Invalid value {config[key]!r} for configuration {key!r}: the engine serves only the values "
                "its log already honours (cleanup.policy compact/delete, message.timestamp.type CreateTime, "
                "retention.ms/retention.bytes -1 or more)"
            )
    return {k: v for k, v in config.items() if k not in INERT_TOPIC_CONFIGS} or None


def _counts(partitions: int, rf: int, assignments: Any) -> tuple[int, int | None]:
    """Return the partition count and replication factor asked for, or raise as Kafka's controller does."""
    if assignments:
        return 1, None
    from engine.errors import InvalidPartitionsException, InvalidReplicationFactorException

    if partitions == 0 or partitions < -1:
        raise InvalidPartitionsException("Number of partitions was set to an invalid non-positive value.")
    if rf == 0 or rf < -1:
        raise InvalidReplicationFactorException(
            "Replication factor must be larger than 0, or -1 to use the default value."
        )
    return (DEFAULT_PARTITIONS if partitions == -1 else partitions), (None if rf == -1 else rf)


def delete_topics(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Delete each topic named (v6 may name them by id: the engine has no topic ids, UNKNOWN_TOPIC_ID)."""
    b = request.body
    cluster = conn.service.cluster
    if request.api_version >= 6:
        asked = [(t.name, t.topic_id) for t in b.topics]
    else:
        asked = [(name, None) for name in b.topic_names]
    results = []
    for name, topic_id in asked:
        entry: dict[str, Any] = {
            "name": name,
            "topic_id": topic_id,
            "error_code": ErrorCode.NONE,
            "error_message": None,
        }
        if name is None:
            entry.update(error_code=UNKNOWN_TOPIC_ID, error_message="This server does not host this topic ID.")
        else:
            try:
                cluster.delete_topic(name)
            except KafkaError as exc:
                entry["error_code"] = exc.code
                entry["error_message"] = (
                    "This server does not host this topic-partition."
                    if exc.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    else str(exc)
                )
        results.append(entry)
    conn.call_after(ELECTION_MS, reply, {"throttle_time": 0, "responses": results})


def describe_configs(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Describe topic and broker configs (``ConfigHelper.describeConfigs``'s errors)."""
    b = request.body
    cluster = conn.service.cluster
    synonyms = bool(getattr(b, "include_synonyms", False))
    results = []
    for r in b.resources:
        entry: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
            "configs": [],
        }
        keys = None if r.configuration_keys is None else set(r.configuration_keys)
        try:
            found = configs.describe(cluster, r.resource_type, r.resource_name, conn.broker_id)
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        else:
            entry["configs"] = configs.select(found, keys, synonyms)
        results.append(entry)
    reply({"throttle_time": 0, "results": results})


def incremental_alter_configs(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Alter the topic configs the engine models (SET, DELETE); broker configs are not served."""
    b = request.body
    cluster = conn.service.cluster
    results = []
    for r in b.resources:
        entry: dict[str, Any] = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
        }
        changes = [(c.name, c.config_operation, c.value) for c in r.configs]
        try:
            configs.alter(cluster, r.resource_type, r.resource_name, changes, bool(b.validate_only))
        except KafkaError as exc:
            entry.update(error_code=exc.code, error_message=exc.message)
        results.append(entry)
    reply({"throttle_time": 0, "responses": results})


def describe_cluster(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Answer DescribeCluster from the broker's metadata cache: its live brokers (and, v2, the fenced)."""
    from engine.protocol import MetadataRequest
    from engine.wire.handlers_data import CLUSTER_ID

    b = request.body
    service = conn.service
    if getattr(b, "endpoint_type", 1) != 1:
        reply(
            {
                "throttle_time": 0,
                "error_code": MISMATCHED_ENDPOINT_TYPE,
                "error_message": "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
                "type CONTROLLER",
                "cluster_id": CLUSTER_ID,
                "brokers": [],
            }
        )
        return

    def answered(resp: Any) -> None:
        if resp is None:
            conn.hang_up(f"{conn.broker} did not answer DescribeCluster")
            return
        live = set(resp.brokers)
        shown = sorted(service.addresses) if getattr(b, "include_fenced_brokers", False) else sorted(live)
        brokers = [
            {
                "broker_id": i,
                "host": service.addresses[i][0],
                "port": service.addresses[i][1],
                "is_fenced": i not in live,
            }
            for i in shown
            if i in service.addresses
        ]
        reply(
            {
                "throttle_time": 0,
                "error_code": ErrorCode.NONE,
                "cluster_id": CLUSTER_ID,
                "controller_id": min(live) if live else -1,
                "brokers": brokers,
            }
        )

    conn.ask(MetadataRequest(()), answered)
