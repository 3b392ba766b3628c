"""ListOffsets as a blocking call of the application: ask a partition's leader and wait for the answer.

Role
----
``get_watermark_offsets`` (earliest and latest), ``offsets_for_times`` (by timestamp) and the
drop-in ``AdminClient.list_offsets`` (earliest, latest, max timestamp, by timestamp) all ask the
same way: find the partition's leader (the node's metadata cache, else a Metadata request), send
one :class:`~engine.protocol.ListOffsetsRequest` per timestamp, run the simulation until the
answers come, and look the leader up again after a stale-leader answer, as Kafka's
``OffsetFetcher`` (Java) and librdkafka's ``rd_kafka_offsets_for_times`` retry. The broker answers
from the log (:meth:`engine.broker.broker.Broker._on_list_offsets`, Kafka's
``ReplicaManager.fetchOffset``): a timestamp lookup gives the first record at or after the target
below the HW (the LSO for read_committed), or -1/-1.

Invariants
----------
Works for any :class:`~engine.client.base.ClientNode` (a consumer, or a producer node acting as an
admin client); nothing is sent once the deadline has passed.
"""

from __future__ import annotations

from typing import Any

from engine.client.base import ClientNode
from engine.config import IsolationLevel
from engine.errors import ErrorCode, TimeoutException, UnknownTopicOrPartitionException, exception_for
from engine.protocol import ListOffsetsRequest, ListOffsetsResponse

Key = tuple[str, int]

#: ListOffsets timestamps: the log start, the end (the LSO for read_committed), the largest timestamp (KIP-734).
EARLIEST = -2
LATEST = -1
MAX_TIMESTAMP = -3

#: ListOffsets errors after which the leader is looked up again.
STALE_LEADER = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)


def list_offsets(
    node: ClientNode,
    key: Key,
    timestamps: tuple[int, ...],
    isolation: IsolationLevel,
    end: int,
    action: str,
) -> list[ListOffsetsResponse]:
    """Ask ``key``'s leader for the offset of each of ``timestamps``; return the answers in order.

    Runs the simulation until every answer came or ``end`` (simulated ms). Raises
    ``UnknownTopicOrPartitionException`` for a partition that does not exist, the answer's error
    when it is not about a stale leader, and ``TimeoutException`` when no answer comes by ``end``.
    """
    while node.world.now_ms < end and node.is_up:
        leader = leader_for_call(node, key, end, action)
        if leader >= 0:
            answers = _ask(node, leader, key, timestamps, isolation, end)
            if len(answers) == len(timestamps) and all(a.error is ErrorCode.NONE for a in answers):
                return answers
            bad = [a.error for a in answers if a.error is not ErrorCode.NONE and a.error not in STALE_LEADER]
            if bad:
                raise exception_for(bad[0], topic=key[0], partition=key[1])
            node.forget_leader(*key)
        node.world.run_for(min(node.retry_backoff_ms, max(0, end - node.world.now_ms)))
    msg = f"{action}: no answer for {key[0]}-{key[1]} in time"
    raise TimeoutException(msg, topic=key[0], partition=key[1])


def _ask(
    node: ClientNode, leader: int, key: Key, timestamps: tuple[int, ...], isolation: IsolationLevel, end: int
) -> list[ListOffsetsResponse]:
    """Send one ListOffsets per timestamp to the leader; return the answers that came by ``end``."""
    boxes: list[list[Any]] = [[] for _ in timestamps]
    for ts, box in zip(timestamps, boxes, strict=True):
        req = ListOffsetsRequest(key[0], key[1], ts, isolation)
        node.request(f"broker-{leader}", req, box.append, timeout_ms=max(1, end - node.world.now_ms))
    node.world.run_until(lambda: all(boxes) or not node.is_up, deadline_ms=end)
    return [b[0] for b in boxes if b and b[0] is not None]


def leader_for_call(node: ClientNode, key: Key, end: int, action: str) -> int:
    """Return the partition's leader (-1: none now), asking a broker when the cache has none.

    Raises ``UnknownTopicOrPartitionException`` when the answer shows no such partition.
    """
    leader = node.leader_of(*key)
    if leader >= 0:
        return leader
    md = node.list_topics(key[0], timeout=max(0, end - node.world.now_ms) / 1000)
    topic = md.topics[key[0]]
    if topic.error is not None or key[1] not in topic.partitions:
        count = len(topic.partitions) if topic.error is None else None
        raise UnknownTopicOrPartitionException(f"{action}: {missing_text(key, count)}", topic=key[0], partition=key[1])
    return topic.partitions[key[1]].leader


def missing_text(key: Key, count: int | None) -> str:
    """Say that ``key`` does not exist, and what does (``count``: the topic's partitions, None: no topic)."""
    topic, partition = key
    if count is None:
        return f"topic {topic!r} does not exist (partition {topic}-{partition})"
    tp = f"{topic}-{partition}"
    return f"partition {partition} of topic {topic!r} ({tp}) does not exist: the topic has {count} partitions"
