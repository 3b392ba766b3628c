"""Kafka's classic group coordinator hands the members' protocol metadata and assignments on unread.

Goal: the broker treats a JoinGroup protocol's metadata and a SyncGroup assignment as opaque
bytes: the leader gets every member's metadata for the selected protocol exactly as sent, each
member gets exactly the bytes the leader wrote for it, a member whose metadata changed (a
cooperative member's owned partitions) triggers a rebalance, and the stored group record keeps
both, so the coordinator that loads the group after a failover hands back the same bytes.
Method: a three-broker cluster on a fixed seed; two engine client nodes send the coordinator raw
JoinGroup/SyncGroup requests carrying :class:`~engine.protocol.Subscription` and
:class:`~engine.protocol.Assignment` with ``raw`` bytes (what the wire gateway reads from a real
client). Each test names the Kafka test it follows (``GroupMetadataManagerTest``, apache/kafka
``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/``).
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, KEY_TYPE_GROUP, partition_for
from engine.errors import ErrorCode
from engine.group.coordinator import GroupCoordinator
from engine.protocol import Assignment, FindCoordinatorRequest, JoinGroupRequest, Subscription, SyncGroupRequest

GROUP = "g"
SESSION_MS = 30_000


def _cluster() -> tuple[Cluster, Any, Any]:
    c = Cluster(seed=5, brokers=3, config={"min.insync.replicas": 2, "group.initial.rebalance.delay.ms": 0})
    c.create_topic("t", partitions=4, replication_factor=3)
    a, b = c.consumer({"client.id": "a"}), c.consumer({"client.id": "b"})
    # FindCoordinator creates __consumer_offsets; ask until the group's coordinator is loaded
    found: list[Any] = []
    while not found or found[-1].error is not ErrorCode.NONE:
        asked = len(found)
        a.request("broker-1", FindCoordinatorRequest(GROUP, KEY_TYPE_GROUP), found.append, 10_000)
        c.run_until(lambda asked=asked: len(found) > asked)
        c.run_for(100)
    return c, a, b


def _sub(owned: tuple[tuple[str, int], ...] = (), generation: int = -1) -> Subscription:
    """A cooperative member's subscription with the bytes a client would have sent (any opaque bytes do)."""
    raw = b"\x00\x03sub-" + repr((owned, generation)).encode()
    return Subscription(("t",), owned=owned, generation=generation, raw=raw)


def _ask(c: Cluster, asks: list[tuple[Any, Any]]) -> list[Any]:
    """Send each ``(node, request)`` to the group's coordinator at once; run until all are answered."""
    coordinator = c.brokers[c.leader(CONSUMER_OFFSETS_TOPIC, partition_for(GROUP, 50))].name
    answers: dict[int, Any] = {}
    for i, (node, body) in enumerate(asks):
        node.request(coordinator, body, lambda r, i=i: answers.__setitem__(i, r), 60_000)
    c.run_until(lambda: len(answers) == len(asks))
    return [answers[i] for i in range(len(asks))]


def _join(node: Any, member_id: str, sub: Subscription) -> JoinGroupRequest:
    return JoinGroupRequest(
        GROUP, SESSION_MS, SESSION_MS, member_id, None, "consumer", (("cooperative-sticky", sub),), client_id=node.name
    )


def _two_members(c: Cluster, a: Any, b: Any) -> tuple[Any, Any]:
    """Join ``a`` and ``b`` (the MEMBER_ID_REQUIRED round trip, then together); return their JoinGroup answers."""
    first = _ask(c, [(a, _join(a, "", _sub())), (b, _join(b, "", _sub()))])
    assert [r.error for r in first] == [ErrorCode.MEMBER_ID_REQUIRED] * 2
    joined = _ask(c, [(a, _join(a, first[0].member_id, _sub())), (b, _join(b, first[1].member_id, _sub()))])
    assert [r.error for r in joined] == [ErrorCode.NONE] * 2
    return joined[0], joined[1]


def _sync_both(c: Cluster, a: Any, b: Any, ja: Any, jb: Any, shares: dict[str, Assignment]) -> list[Any]:
    """SyncGroup of both members; the leader's carries ``shares``."""
    leader, follower = (a, ja), (b, jb)
    if ja.member_id != ja.leader:
        leader, follower = (b, jb), (a, ja)
    req = [
        (
            node,
            SyncGroupRequest(
                GROUP, j.generation_id, j.member_id, None, tuple(shares.items()) if j is leader[1] else ()
            ),
        )
        for node, j in (leader, follower)
    ]
    answers = _ask(c, req)
    return answers if leader[1] is ja else answers[::-1]


def test_sync_group_follower_after_leader() -> None:
    """``testSyncGroupFollowerAfterLeader``: each member gets exactly the assignment bytes the leader wrote
    for it (the leader's JoinGroup, likewise, carries every member's metadata as that member sent it)."""
    c, a, b = _cluster()
    ja, jb = _two_members(c, a, b)
    leader = ja if ja.member_id == ja.leader else jb
    assert sorted(m.subscription.raw for m in leader.members) == [_sub().raw] * 2
    shares = {
        ja.member_id: Assignment((("t", 0), ("t", 1)), raw=b"\x00\x03leader-wrote-for-a"),
        jb.member_id: Assignment((("t", 2), ("t", 3)), user_data=b"u", raw=b"\x00\x03leader-wrote-for-b"),
    }
    sa, sb = _sync_both(c, a, b, ja, jb, shares)
    assert (sa.error, sb.error) == (ErrorCode.NONE, ErrorCode.NONE)
    assert (sa.assignment, sb.assignment) == (shares[ja.member_id], shares[jb.member_id])
    assert c.group_view(GROUP).assignment == {ja.member_id: ((("t", 0), ("t", 1))), jb.member_id: (("t", 2), ("t", 3))}


def test_join_group_as_existing_member_with_updated_metadata_triggers_rebalance_in_stable_state() -> None:
    """``testJoinGroupAsExistingMemberWithUpdatedMetadataTriggersRebalanceInStableState``: a follower that
    rejoins a Stable group with other metadata (a cooperative member now reporting what it owns)
    starts a rebalance, and the leader gets the new metadata unchanged."""
    c, a, b = _cluster()
    ja, jb = _two_members(c, a, b)
    follower_node, follower = (b, jb) if ja.member_id == ja.leader else (a, ja)
    leader_node, leader = (a, ja) if follower is jb else (b, jb)
    shares = {leader.member_id: Assignment((("t", 0), ("t", 1))), follower.member_id: Assignment((("t", 2), ("t", 3)))}
    _sync_both(c, a, b, ja, jb, shares)
    gen = c.group_view(GROUP).generation
    owned = _sub(owned=(("t", 2), ("t", 3)), generation=gen)
    rejoined = _ask(
        c,
        [
            (follower_node, _join(follower_node, follower.member_id, owned)),
            (leader_node, _join(leader_node, leader.member_id, _sub())),
        ],
    )
    assert [r.error for r in rejoined] == [ErrorCode.NONE] * 2
    assert rejoined[0].generation_id == gen + 1
    metadata = {m.member_id: m.subscription for m in rejoined[1].members}
    assert metadata[follower.member_id] == owned
    assert metadata[follower.member_id].raw == owned.raw


def test_replay_group_metadata_records() -> None:
    """``testReplayGroupMetadataRecords``: the group record keeps each member's metadata and assignment
    bytes; the coordinator that loads it after a failover has the same members with the same bytes,
    and a Stable member's SyncGroup there gets its assignment bytes back."""
    c, a, b = _cluster()
    ja, jb = _two_members(c, a, b)
    shares = {
        ja.member_id: Assignment((("t", 0), ("t", 1)), raw=b"\x00\x03for-a"),
        jb.member_id: Assignment((("t", 2), ("t", 3)), raw=b"\x00\x03for-b"),
    }
    _sync_both(c, a, b, ja, jb, shares)
    gen = c.group_view(GROUP).generation
    old = c.leader(CONSUMER_OFFSETS_TOPIC, partition_for(GROUP, 50))
    c.crash(old)
    c.run_until(lambda: c.leader(CONSUMER_OFFSETS_TOPIC, partition_for(GROUP, 50)) not in (old, -1))
    c.run_until(lambda: c.group_view(GROUP) is not None)
    new = c.leader(CONSUMER_OFFSETS_TOPIC, partition_for(GROUP, 50))
    coordinator = next(x for x in c.brokers[new].extensions if isinstance(x, GroupCoordinator))
    loaded = coordinator.groups[GROUP]  # the loaded group, as Kafka's test reads it
    assert loaded.generation == gen
    for mid in (ja.member_id, jb.member_id):
        assert loaded.members[mid].protocols == (("cooperative-sticky", _sub()),)
        assert loaded.members[mid].assignment == shares[mid]
    (again,) = _ask(c, [(a, SyncGroupRequest(GROUP, gen, ja.member_id, None, ()))])
    assert (again.error, again.assignment.raw) == (ErrorCode.NONE, b"\x00\x03for-a")
