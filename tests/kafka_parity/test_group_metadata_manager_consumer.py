"""Kafka's KIP-848 coordinator, heartbeat by heartbeat: ``GroupMetadataManagerTest`` on the engine.

Goal: the engine's ConsumerGroupHeartbeat answers as Kafka 4.4's
``GroupMetadataManager.consumerGroupHeartbeat`` does: a join is assigned at once, a stale or
future epoch is fenced (FENCED_MEMBER_EPOCH), an unknown member is refused (UNKNOWN_MEMBER_ID), a
second live holder of an instance id is refused (UNRELEASED_INSTANCE_ID), a leave or an expired
session bumps the group epoch and frees the partitions, a partition is revoked from its owner
before it is assigned elsewhere, a static member that comes back within its session gets its
assignment back, and a new coordinator loads the groups so members keep heartbeating with their
epochs, each session counted from the load. Method: a three-broker cluster on a fixed seed, and a
raw client that sends hand-made heartbeats to the group's coordinator and keeps each answer. Each
test names the Kafka test it follows (apache/kafka ``group-coordinator/src/test/java/org/apache/
kafka/coordinator/group/GroupMetadataManagerTest.java``).
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for
from engine.errors import ErrorCode
from engine.group.coordinator import GroupCoordinator
from engine.protocol import ConsumerGroupHeartbeatRequest, FindCoordinatorRequest
from engine.rpc import RpcNode

GROUP = "g"
SESSION_MS = 6_000
HEARTBEAT_MS = 1_000
RETRIABLE = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE)
ALL = (("t", 0), ("t", 1), ("t", 2), ("t", 3))


class Raw(RpcNode):
    """A client that sends heartbeats exactly as written and returns each answer."""

    def __init__(self, c: Cluster) -> None:
        super().__init__(c.world, "raw-member")
        self.c = c
        box: list[Any] = []  # FindCoordinator creates __consumer_offsets, as a client's first one does
        self.request("broker-1", FindCoordinatorRequest(GROUP, 0), box.append, timeout_ms=5_000)
        c.run_until(lambda: bool(box))
        c.run_until(lambda: all(c.leader(CONSUMER_OFFSETS_TOPIC, p) for p in range(50)), max_ms=30_000)

    def heartbeat(self, member_id: str, epoch: int, **fields: Any) -> Any:
        """Send one heartbeat; while the coordinator loads (or moves), retry after 100 ms as clients do."""
        body = ConsumerGroupHeartbeatRequest(GROUP, member_id, epoch, **fields)
        for _ in range(100):
            box: list[Any] = []
            self.request(f"broker-{coordinator(self.c)}", body, box.append, timeout_ms=5_000)
            self.c.run_until(lambda box=box: bool(box))
            if box[0] is not None and box[0].error not in RETRIABLE:
                return box[0]
            self.c.run_for(100)
        raise AssertionError(f"no answer but {box[0]}")

    def join(self, member_id: str = "", instance_id: str | None = None) -> Any:
        return self.heartbeat(
            member_id,
            0,
            instance_id=instance_id,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("t",),
            server_assignor="uniform",
            topic_partitions=(),
        )


def cluster(seed: int = 7) -> Cluster:
    c = Cluster(
        seed=seed,
        brokers=3,
        config={
            "min.insync.replicas": 2,
            "group.consumer.session.timeout.ms": SESSION_MS,
            "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS,
        },
    )
    c.create_topic("t", partitions=4, replication_factor=3)
    return c


def coordinator(c: Cluster) -> int:
    return c.leader(CONSUMER_OFFSETS_TOPIC, partition_for(GROUP, 50))


def group(c: Cluster) -> Any:
    """The group as its coordinator holds it (a :class:`ConsumerGroupView`), or None."""
    ext = next(e for e in c.brokers[coordinator(c)].extensions if isinstance(e, GroupCoordinator))
    g = ext.consumer.groups.get(GROUP)
    return None if g is None else g.view()


def owned(answer: Any) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(answer.assignment or ()))


def two_members(c: Cluster, raw: Raw) -> tuple[Any, Any]:
    """Member a owns all four, b joins; both reconcile to two each. Return their last answers."""
    a = raw.join()
    b = raw.join()
    for _ in range(4):
        a = raw.heartbeat(a.member_id, a.member_epoch, topic_partitions=owned(a) if a.assignment else None)
        b = raw.heartbeat(b.member_id, b.member_epoch, topic_partitions=owned(b) if b.assignment else None)
    view = {m.member_id: m for m in group(c).members}
    assert len(view[a.member_id].assignment) == 2 and len(view[b.member_id].assignment) == 2, view
    return a, b


def test_member_joins_empty_consumer_group() -> None:
    """``testMemberJoinsEmptyConsumerGroup``: epoch 0 creates the group and the member, epoch 1,
    with the whole topic and the broker's heartbeat interval."""
    c = cluster()
    answer = Raw(c).join()
    assert answer.error is ErrorCode.NONE
    assert answer.member_id and answer.member_epoch == 1
    assert owned(answer) == ALL
    assert answer.heartbeat_interval_ms == HEARTBEAT_MS
    view = group(c)
    assert (view.group_epoch, view.assignment_epoch, view.state) == (1, 1, "Stable")


def test_unknown_member_id_join_consumer_group() -> None:
    """``testUnknownMemberIdJoinConsumerGroup``: a non-zero epoch from a member the group does not
    have is UNKNOWN_MEMBER_ID."""
    c = cluster()
    raw = Raw(c)
    raw.join()
    answer = raw.heartbeat("nobody", 1)
    assert answer.error is ErrorCode.UNKNOWN_MEMBER_ID


def test_consumer_group_member_epoch_validation() -> None:
    """``testConsumerGroupMemberEpochValidation``: an epoch ahead of the coordinator's is
    FENCED_MEMBER_EPOCH; the member's own epoch is answered."""
    c = cluster()
    raw = Raw(c)
    a = raw.join()
    ahead = raw.heartbeat(a.member_id, a.member_epoch + 1)
    assert ahead.error is ErrorCode.FENCED_MEMBER_EPOCH
    ok = raw.heartbeat(a.member_id, a.member_epoch)
    assert ok.error is ErrorCode.NONE and ok.member_epoch == a.member_epoch


def test_fence_member_epoch_behind() -> None:
    """``testConsumerGroupMemberEpochValidation`` (the epoch behind): the previous epoch is taken
    while the member owns a subset of its assignment (its last answer was lost), and fenced with
    FENCED_MEMBER_EPOCH when it claims partitions it was not given."""
    c = cluster()
    raw = Raw(c)
    a, _b = two_members(c, raw)
    mine = tuple(sorted({m.member_id: m for m in group(c).members}[a.member_id].assignment))
    assert a.member_epoch == 2
    lost = raw.heartbeat(a.member_id, 1, topic_partitions=mine)
    assert lost.error is ErrorCode.NONE and lost.member_epoch == 2
    claims = raw.heartbeat(a.member_id, 1, topic_partitions=ALL)
    assert claims.error is ErrorCode.FENCED_MEMBER_EPOCH


def test_reconciliation_process() -> None:
    """``testReconciliationProcess``: a partition is revoked from its owner before anyone else is
    given it: the new member gets only what is free until the owner reports the revocation."""
    c = cluster()
    raw = Raw(c)
    a = raw.join()
    b = raw.join()
    assert b.error is ErrorCode.NONE
    assert owned(b) == (), "b was given partitions a still owns"
    a = raw.heartbeat(a.member_id, a.member_epoch, topic_partitions=ALL)
    kept = owned(a)
    assert len(kept) == 2, "a is asked to revoke two"
    b = raw.heartbeat(b.member_id, b.member_epoch, topic_partitions=())
    assert owned(b) == (), "b got partitions before a revoked them"
    a = raw.heartbeat(a.member_id, a.member_epoch, topic_partitions=kept)
    b = raw.heartbeat(b.member_id, b.member_epoch, topic_partitions=())
    assert set(owned(b)) == set(ALL) - set(kept)


def test_leaving_member_bumps_group_epoch() -> None:
    """``testLeavingMemberBumpsGroupEpoch``: epoch -1 removes the member and bumps the group epoch;
    the survivor is assigned its partitions."""
    c = cluster()
    raw = Raw(c)
    a, b = two_members(c, raw)
    before = group(c).group_epoch
    left = raw.heartbeat(b.member_id, -1)
    assert left.error is ErrorCode.NONE and left.member_epoch == -1
    view = group(c)
    assert view.group_epoch == before + 1
    assert [m.member_id for m in view.members] == [a.member_id]
    a = raw.heartbeat(a.member_id, a.member_epoch, topic_partitions=owned(a))
    assert owned(a) == ALL


def test_session_timeout_expiration() -> None:
    """``testSessionTimeoutExpiration``: a member not heard from in the session timeout is removed,
    the group epoch bumped, and not a moment before."""
    c = cluster()
    raw = Raw(c)
    a, b = two_members(c, raw)
    before = group(c).group_epoch
    start = c.now_ms
    # a keeps heartbeating; b is silent
    while c.now_ms - start < SESSION_MS - HEARTBEAT_MS:
        a = raw.heartbeat(a.member_id, a.member_epoch, topic_partitions=None)
        c.run_for(HEARTBEAT_MS)
    assert b.member_id in [m.member_id for m in group(c).members], "expired before the session timeout"
    c.run_for(2 * HEARTBEAT_MS)
    a = raw.heartbeat(a.member_id, a.member_epoch)
    view = group(c)
    assert [m.member_id for m in view.members] == [a.member_id]
    assert view.group_epoch == before + 1


def test_static_member_gets_back_assignment_upon_rejoin() -> None:
    """``testStaticMemberGetsBackAssignmentUponRejoin``: a static member leaves with -2 and a new
    member id with the same instance id joins within the session: same partitions, same epoch, no
    group epoch bump (the other member is undisturbed)."""
    c = cluster()
    raw = Raw(c)
    a = raw.join(instance_id="a")
    b = raw.join(instance_id="b")
    for _ in range(4):
        a = raw.heartbeat(a.member_id, a.member_epoch, topic_partitions=owned(a) if a.assignment else None)
        b = raw.heartbeat(b.member_id, b.member_epoch, topic_partitions=owned(b) if b.assignment else None)
    view = {m.instance_id: m for m in group(c).members}
    kept, epoch, group_epoch = view["a"].assignment, view["a"].member_epoch, group(c).group_epoch
    left = raw.heartbeat(a.member_id, -2, instance_id="a")
    assert left.error is ErrorCode.NONE and left.member_epoch == -2
    again = raw.join(instance_id="a")
    assert again.error is ErrorCode.NONE
    assert again.member_id != a.member_id
    assert again.member_epoch == epoch
    assert tuple(sorted(again.assignment or ())) == tuple(sorted(kept))
    assert group(c).group_epoch == group_epoch


def test_should_throw_unreleased_instance_id_exception_when_new_member_joins_with_in_use_instance_id() -> None:
    """``testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId``: a
    second member joining with the instance id of a live member is UNRELEASED_INSTANCE_ID."""
    c = cluster()
    raw = Raw(c)
    raw.join(instance_id="a")
    answer = raw.join(instance_id="a")
    assert answer.error is ErrorCode.UNRELEASED_INSTANCE_ID


def test_consumer_group_heartbeat_full_response() -> None:
    """``testConsumerGroupHeartbeatFullResponse``: a heartbeat with nothing changed carries no
    assignment; a full one (the fields a member resends after an error) carries it again."""
    c = cluster()
    raw = Raw(c)
    a = raw.join()
    quiet = raw.heartbeat(a.member_id, a.member_epoch)
    assert quiet.error is ErrorCode.NONE and quiet.assignment is None
    full = raw.heartbeat(
        a.member_id,
        a.member_epoch,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=("t",),
        server_assignor="uniform",
        topic_partitions=ALL,
    )
    assert owned(full) == ALL


def test_on_loaded() -> None:
    """``testOnLoaded`` (and ``testConsumerGroupOnLoaded...`` in ``GroupCoordinatorShardTest``): the
    new coordinator loads the group from ``__consumer_offsets``: a member heartbeats it with its
    epoch and keeps its partitions; a member that does not is fenced a session after the load."""
    c = cluster()
    raw = Raw(c)
    a, b = two_members(c, raw)
    a_owned = {m.member_id: m.assignment for m in group(c).members}[a.member_id]
    old = coordinator(c)
    c.crash(old)
    c.run_until(lambda: coordinator(c) != old and group(c) is not None, max_ms=30_000)
    assert coordinator(c) != old
    loaded_at = c.now_ms
    loaded = {m.member_id: m for m in group(c).members}
    assert set(loaded) == {a.member_id, b.member_id}
    assert loaded[a.member_id].member_epoch == a.member_epoch
    answer = raw.heartbeat(a.member_id, a.member_epoch, topic_partitions=tuple(sorted(a_owned)))
    assert answer.error is ErrorCode.NONE and answer.member_epoch == a.member_epoch
    assert b.member_id in [m.member_id for m in group(c).members]
    while c.now_ms - loaded_at < SESSION_MS + 2 * HEARTBEAT_MS:
        answer = raw.heartbeat(a.member_id, answer.member_epoch, topic_partitions=None)
        c.run_for(HEARTBEAT_MS)
    assert [m.member_id for m in group(c).members] == [a.member_id]
