"""The KIP-848 consumer group protocol over the wire: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Role
----
Reshapes the wire requests into the engine's :class:`~engine.protocol.ConsumerGroupHeartbeatRequest`
and :class:`~engine.protocol.ConsumerGroupDescribeRequest` (the coordinator is
:mod:`engine.group.consumer_heartbeat`) and back. The wire names topics by id in assignments and
owned partitions; the engine by name. :func:`topic_id` gives every topic name a fixed id (a UUID
derived from the name), and Metadata v10+ answers it (:mod:`engine.wire.handlers_data`), so a
client maps the ids of its assignment to the names it knows. An owned partition of an id no
topic has is dropped, as Kafka's coordinator ignores unknown topic ids.

Served versions: ConsumerGroupHeartbeat v0-v1 (v1 adds ``SubscribedTopicRegex``) and
ConsumerGroupDescribe v0-v1, what librdkafka 2.16 and the Java client 4.4 ask for.

Invariants
----------
* A topic's id depends only on its name: the same on every broker, every run (a topic deleted and
  re-created keeps its id, where Kafka would give it a new one).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from engine.errors import ErrorCode
from engine.protocol import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from engine.wire.shape import answer_error, millis

if TYPE_CHECKING:
    from engine.wire.frames import Request
    from engine.wire.gateway import WireConnection

Reply = Any

_NAMESPACE = uuid.UUID("6f2d0a2e-8c1b-4e8e-9b7a-3c5d1e0f4a21")


def topic_id(name: str) -> uuid.UUID:
    """Return the fixed topic id of a topic name (never the zero UUID)."""
    return uuid.uuid5(_NAMESPACE, name)


def topic_names_by_id(conn: WireConnection) -> dict[uuid.UUID, str]:
    """Map the ids of the topics the connection's broker knows to their names."""
    broker = conn.service.cluster.brokers.get(conn.broker_id)
    topics = {t for t, _ in broker.metadata} if broker is not None else set()
    return {topic_id(t): t for t in sorted(topics)}


def _by_id(tps: tuple[tuple[str, int], ...]) -> list[dict[str, Any]]:
    topics: dict[str, list[int]] = {}
    for t, p in sorted(tps):
        topics.setdefault(t, []).append(p)
    return [{"topic_id": topic_id(t), "partitions": ps} for t, ps in topics.items()]


def consumer_group_heartbeat(conn: WireConnection, request: Request, reply: Reply) -> None:
    """A KIP-848 member's heartbeat: join, reconcile, leave."""
    b = request.body
    owned = None
    if b.topic_partitions is not None:
        names = topic_names_by_id(conn)
        owned = tuple(
            (names[tp.topic_id], int(p)) for tp in b.topic_partitions if tp.topic_id in names for p in tp.partitions
        )
    body = ConsumerGroupHeartbeatRequest(
        b.group_id,
        b.member_id,
        b.member_epoch,
        instance_id=b.instance_id,
        rack_id=b.rack_id,
        rebalance_timeout_ms=millis(b.rebalance_timeout),
        subscribed_topic_names=None if b.subscribed_topic_names is None else tuple(b.subscribed_topic_names),
        server_assignor=b.server_assignor,
        topic_partitions=owned,
        subscribed_topic_regex=getattr(b, "subscribed_topic_regex", None),
        client_id=request.client_id or "",
        client_host="/127.0.0.1",
    )

    def answered(a: Any) -> None:
        if a is None or a.error is not ErrorCode.NONE:
            reply(
                {
                    "throttle_time": 0,
                    "error_code": answer_error(a),
                    "error_message": None if a is None else a.error_message,
                    "member_id": None,
                    "member_epoch": -1 if a is None else a.member_epoch,
                    "heartbeat_interval": 0,
                }
            )
            return
        reply(
            {
                "throttle_time": 0,
                "error_code": ErrorCode.NONE,
                "member_id": a.member_id,
                "member_epoch": a.member_epoch,
                "heartbeat_interval": a.heartbeat_interval_ms,
                "assignment": None if a.assignment is None else {"topic_partitions": _by_id(a.assignment)},
            }
        )

    conn.ask(body, answered)


def consumer_group_describe(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Describe KIP-848 groups (``kafka-consumer-groups.sh --describe``, ``AdminClient.describeConsumerGroups``)."""
    b = request.body
    ids = tuple(b.group_ids)

    def assignment(tps: tuple[tuple[str, int], ...]) -> dict[str, Any]:
        parts = _by_id(tps)
        names = {topic_id(t): t for t, _ in tps}
        return {"topic_partitions": [{**p, "topic_name": names[p["topic_id"]]} for p in parts]}

    def answered(a: Any) -> None:
        if a is None:
            reply(
                {
                    "throttle_time": 0,
                    "groups": [
                        {"error_code": ErrorCode.REQUEST_TIMED_OUT, "group_id": g, "authorized_operations": -2147483648}
                        for g in ids
                    ],
                }
            )
            return
        reply(
            {
                "throttle_time": 0,
                "groups": [
                    {
                        "error_code": g.error,
                        "error_message": g.error_message,
                        "group_id": g.group_id,
                        "group_state": g.group_state,
                        "group_epoch": g.group_epoch,
                        "assignment_epoch": g.assignment_epoch,
                        "assignor_name": g.assignor_name,
                        "authorized_operations": -2147483648,
                        "members": [
                            {
                                "member_id": m.member_id,
                                "instance_id": m.instance_id,
                                "rack_id": m.rack_id,
                                "member_epoch": m.member_epoch,
                                "client_id": m.client_id,
                                "client_host": m.client_host,
                                "subscribed_topic_names": m.subscribed_topic_names,
                                "subscribed_topic_regex": m.subscribed_topic_regex,
                                "assignment": assignment(m.assignment),
                                "target_assignment": assignment(m.target_assignment),
                                "member_type": 1,
                            }
                            for m in g.members
                        ],
                    }
                    for g in a.groups
                ],
            }
        )

    conn.ask(ConsumerGroupDescribeRequest(ids, bool(b.include_authorized_operations)), answered)
