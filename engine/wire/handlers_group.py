"""The classic consumer-group protocol over the wire: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch.

The group coordinator is the engine's (``engine.group``); this module only reshapes. Real clients
carry their subscription and assignment as opaque bytes (``ConsumerProtocolSubscription`` and
``ConsumerProtocolAssignment``); JoinGroup reads each protocol's bytes into a
:class:`~engine.protocol.Subscription` (topics, owned partitions, generation, user data, rack) that
keeps the bytes, and the leader gets every member's metadata for the selected protocol exactly as
that member sent it; SyncGroup reads the leader's assignment bytes the same way and each member
gets its share exactly as the leader wrote it (Kafka's ``GroupMetadataManager`` hands both on
unread). So cooperative-sticky (KIP-429) sees the partitions each member owns, as on Kafka. Only a
member that is an engine client has its metadata written here (:mod:`engine.wire.consumer_protocol`).
JoinGroup is served from v4, the first version with KIP-394's MEMBER_ID_REQUIRED round trip, which
the engine's coordinator always makes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.errors import ErrorCode
from engine.protocol import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from engine.wire import consumer_protocol
from engine.wire.shape import answer_error, every_partition, millis

if TYPE_CHECKING:
    from engine.wire.frames import Request
    from engine.wire.gateway import WireConnection

Reply = Any


def join_group(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Join (or rejoin) a group; the leader gets every member's subscription."""
    b = request.body
    try:
        protocols = tuple((p.name, consumer_protocol.decode_subscription(p.metadata)) for p in b.protocols)
    except consumer_protocol.ConsumerProtocolError:
        reply({"throttle_time": 0, "error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "member_id": b.member_id})
        return
    session_ms = millis(b.session_timeout)
    rebalance_ms = millis(getattr(b, "rebalance_timeout", b.session_timeout))
    engine_request = JoinGroupRequest(
        b.group_id,
        session_ms,
        rebalance_ms if rebalance_ms > 0 else session_ms,
        b.member_id,
        getattr(b, "group_instance_id", None),
        b.protocol_type,
        protocols,
        client_id=request.client_id or "",
    )

    def answered(a: Any) -> None:
        if a is None:
            reply({"throttle_time": 0, "error_code": ErrorCode.REQUEST_TIMED_OUT, "member_id": b.member_id})
            return
        reply(
            {
                "throttle_time": 0,
                "error_code": a.error,
                "generation_id": a.generation_id,
                "protocol_name": a.protocol_name,
                "leader": a.leader,
                "member_id": a.member_id,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "metadata": consumer_protocol.encode_subscription(m.subscription),
                    }
                    for m in a.members
                ],
            }
        )

    conn.ask(engine_request, answered)


def sync_group(conn: WireConnection, request: Request, reply: Reply) -> None:
    """The leader hands out the assignment; every member gets its share."""
    b = request.body
    try:
        assignments = tuple((a.member_id, consumer_protocol.decode_assignment(a.assignment)) for a in b.assignments)
    except consumer_protocol.ConsumerProtocolError:
        reply({"throttle_time": 0, "error_code": ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "assignment": b""})
        return
    engine_request = SyncGroupRequest(
        b.group_id, b.generation_id, b.member_id, getattr(b, "group_instance_id", None), assignments
    )

    def answered(a: Any) -> None:
        code = answer_error(a)
        share = consumer_protocol.encode_assignment(a.assignment) if a is not None and code == ErrorCode.NONE else b""
        reply({"throttle_time": 0, "error_code": code, "assignment": share})

    conn.ask(engine_request, answered)


def heartbeat(conn: WireConnection, request: Request, reply: Reply) -> None:
    """A member's heartbeat: REBALANCE_IN_PROGRESS tells it to rejoin."""
    b = request.body
    body = HeartbeatRequest(b.group_id, b.generation_id, b.member_id, getattr(b, "group_instance_id", None))
    conn.ask(body, lambda a: reply({"throttle_time": 0, "error_code": answer_error(a)}))


def leave_group(conn: WireConnection, request: Request, reply: Reply) -> None:
    """One member leaves (v3 batches members, each with its ``group_instance_id``; each is its own engine request).

    JoinGroup v5, SyncGroup v3, Heartbeat v3 and LeaveGroup v3 carry ``group_instance_id``
    (KIP-345); the engine's coordinator fences a stale static member with FENCED_INSTANCE_ID.
    """
    b = request.body
    members = (
        [(m.member_id, m.group_instance_id) for m in b.members] if hasattr(b, "members") else [(b.member_id, None)]
    )

    def answered(answers: list[Any]) -> None:
        codes = [answer_error(a) for a in answers]
        top = (
            next((c for c in codes if c != ErrorCode.NONE), ErrorCode.NONE)
            if request.api_version < 3
            else ErrorCode.NONE
        )
        reply(
            {
                "throttle_time": 0,
                "error_code": top,
                "members": [
                    {"member_id": m, "group_instance_id": g, "error_code": c}
                    for (m, g), c in zip(members, codes, strict=True)
                ],
            }
        )

    conn.gather([LeaveGroupRequest(b.group_id, m, group_instance_id=g) for m, g in members], answered)


def offset_commit(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Commit a member's offsets (a generation of -1: a simple consumer outside the group protocol)."""
    b = request.body
    generation = getattr(b, "generation_id_or_member_epoch", getattr(b, "generation_id", -1))
    offsets = tuple((t.name, p.partition_index, p.committed_offset) for t in b.topics for p in t.partitions)
    body = OffsetCommitRequest(
        b.group_id, generation, b.member_id, getattr(b, "group_instance_id", None), offsets, request.api_version
    )

    def answered(a: Any) -> None:
        reply({"throttle_time": 0, "topics": every_partition(b.topics, answer_error(a))})

    conn.ask(body, answered)


def offset_fetch(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Read a group's committed offsets; with ``require_stable`` a pending transactional commit is UNSTABLE."""
    b = request.body
    partitions = None if b.topics is None else tuple((t.name, p) for t in b.topics for p in t.partition_indexes)
    body = OffsetFetchRequest(b.group_id, partitions, bool(getattr(b, "require_stable", False)))

    def answered(a: Any) -> None:
        if a is None:
            reply({"throttle_time": 0, "error_code": ErrorCode.REQUEST_TIMED_OUT, "topics": []})
            return
        topics: dict[str, list[dict[str, Any]]] = {}
        for p in a.partitions:
            topics.setdefault(p.topic, []).append(
                {
                    "partition_index": p.partition,
                    "committed_offset": p.offset,
                    "committed_leader_epoch": -1,
                    "metadata": "",
                    "error_code": p.error,
                }
            )
        reply(
            {
                "throttle_time": 0,
                "error_code": a.error,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }
        )

    conn.ask(body, answered)
