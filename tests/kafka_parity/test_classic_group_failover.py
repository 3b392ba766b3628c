"""Kafka's classic group coordinator across a failover: what is written on a leave, what is loaded.

Goal: a group whose members all left is loaded by the next coordinator as Kafka 4.4 loads it
(Empty, the generation bumped, no members), so a new member is assigned right after the election
and its join; a member that did not leave is loaded with its session timeout counted from the
load. Method: three-broker clusters on fixed seeds, the engine's own consumers, the coordinator
crashed at a chosen moment; the group's view, the ``__consumer_offsets`` log and the trace are
checked. Each test names the Kafka test it follows (``GroupMetadataManagerTest``, apache/kafka
``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/``).
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for
from engine.group.records import GroupMetadataKey

GROUP = "g"
SESSION_MS = 10_000
SESSION = {"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 1_000}


def _cluster(seed: int = 5, **config: Any) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2, **config})
    c.create_topic("t", partitions=4, replication_factor=3)
    return c


def _member(c: Cluster, name: str) -> Any:
    consumer = c.consumer({"group.id": GROUP, "client.id": name, **SESSION})
    consumer.subscribe(["t"])
    return consumer


def _stable(c: Cluster, *consumers: Any, ms: int = 30_000) -> None:
    end = c.now_ms + ms

    def done() -> bool:
        v = c.group_view(GROUP)
        return (
            v is not None
            and v.state == "Stable"
            and len(v.members) == len(consumers)
            and all(x.group.generation_id == v.generation and x.assignment() for x in consumers)
        )

    c.run_until(lambda: done() or c.now_ms >= end)
    assert done(), f"group not stable: {c.group_view(GROUP)}"


def _coordinator(c: Cluster) -> int:
    return c.leader(CONSUMER_OFFSETS_TOPIC, partition_for(GROUP, 50))


def _group_records(c: Cluster, broker: int) -> list[Any]:
    """The group's metadata values in ``broker``'s copy of its ``__consumer_offsets`` partition."""
    log = c.brokers[broker].replicas[(CONSUMER_OFFSETS_TOPIC, partition_for(GROUP, 50))].log
    key = GroupMetadataKey(GROUP)
    return [b.values[i] for b in log.batches if not b.is_control for i, k in enumerate(b.keys) if k == key]


def _leave_answered(c: Cluster, member: str) -> None:
    """Run until ``member`` has received its LeaveGroupResponse."""
    c.run_until(
        lambda: any(
            e.node == member and e.kind == "deliver" and e.get("msg") == "LeaveGroupResponse"
            for e in c.world.trace.select(name="response")
        )
    )


def test_valid_leave_group_writes_the_empty_group_before_it_is_answered() -> None:
    """``testValidLeaveGroup``: the last member's leave makes the group Empty, generation + 1, and the
    leave's result carries that group record; Kafka answers the leave once the record is committed."""
    c = _cluster()
    a = _member(c, "a")
    _stable(c, a)
    gen = c.group_view(GROUP).generation
    coordinator = _coordinator(c)
    a.close()
    _leave_answered(c, "a")
    v = c.group_view(GROUP)
    assert (v.state, v.generation, v.members) == ("Empty", gen + 1, ())
    last = _group_records(c, coordinator)[-1]
    assert (last.generation, last.members, last.protocol) == (gen + 1, (), None)
    # Answered only once replicated: every in-sync follower holds the Empty record already.
    followers = [b for b in sorted(c.brokers) if b != coordinator]
    assert all(_group_records(c, b)[-1] == last for b in followers)


def test_new_member_after_failover_of_a_group_whose_member_left_is_assigned_at_once() -> None:
    """``testReplayGroupMetadataRecords`` / ``testOnLoaded``: the new coordinator replays the Empty
    record, so it loads no member; the new member's join completes after the initial rebalance
    delay, not after the departed member's session timeout."""
    c = _cluster(**{"group.initial.rebalance.delay.ms": 3_000})
    a = _member(c, "a")
    _stable(c, a)
    old_id = a.group.member_id
    a.close()
    _leave_answered(c, "a")
    old = _coordinator(c)
    c.crash(old)
    c.run_until(lambda: _coordinator(c) not in (old, -1))
    elected = c.now_ms
    z = _member(c, "z")
    _stable(c, z, ms=60_000)
    assert c.now_ms - elected < 3_000 + 1_500, "waited for the departed member's session"
    new = _coordinator(c)
    [load] = [e for e in c.world.trace.select(name="group.load.done") if e.node == f"broker-{new}"]
    assert load.get("groups") == [GROUP]
    assert not [e for e in c.world.trace.select(name="group.member.expired") if e.get("member") == old_id]
    assert [m.member_id for m in c.group_view(GROUP).members] == [z.group.member_id]


def test_on_loaded_schedules_the_heartbeat_expiry_of_a_member_that_did_not_leave() -> None:
    """``testOnLoadedSchedulesClassicGroupMemberHeartbeats``: a loaded member's session runs from
    the load; one that never heartbeats the new coordinator expires ``session.timeout.ms`` later,
    and the expiry that empties the group writes the Empty record at once."""
    c = _cluster()
    a = _member(c, "a")
    _stable(c, a)
    gen = c.group_view(GROUP).generation
    c.pause("a")  # a zombie: it never leaves and never heartbeats again
    old = _coordinator(c)
    c.crash(old)
    c.run_until(lambda: any(e.get("groups") == [GROUP] for e in c.world.trace.select(name="group.load.done")))
    loaded = c.now_ms
    v = c.group_view(GROUP)
    assert (v.state, v.generation, [m.member_id for m in v.members]) == ("Stable", gen, [a.group.member_id])
    c.run_until(lambda: bool(c.world.trace.select(name="group.member.expired")))
    [expired] = c.world.trace.select(name="group.member.expired")
    assert expired.time_ms == loaded + SESSION_MS
    new = _coordinator(c)
    assert expired.node == f"broker-{new}"
    v = c.group_view(GROUP)
    assert (v.state, v.generation) == ("Empty", gen + 1)
    assert _group_records(c, new)[-1].generation == gen + 1  # written in the expiry's step


# -- static membership (KIP-345) ------------------------------------------------------------------


def _static(c: Cluster, name: str, instance: str) -> Any:
    consumer = c.consumer({"group.id": GROUP, "client.id": name, "group.instance.id": instance, **SESSION})
    consumer.subscribe(["t"])
    return consumer


def test_static_member_rejoin_with_unknown_member_id_gets_back_its_assignment_without_a_rebalance() -> None:
    """``testStaticMemberGetsBackAssignmentUponRejoin`` / ``testReplaceStaticMemberInStableStateNoError``:
    a restarted static member (no LeaveGroup on close, a JoinGroup with its instance id and no member
    id) gets a new member id, the same partitions and the same generation."""
    c = _cluster()
    a, b = _static(c, "a", "ia"), _static(c, "b", "ib")
    _stable(c, a, b)
    gen = c.group_view(GROUP).generation
    old_id, old_parts = b.group.member_id, [tp.key() for tp in b.assignment()]
    rebalances = len(c.world.trace.select(name="group.rebalance"))
    c.crash("b")
    c.run_for(2_000)  # well within session.timeout.ms
    c.restart("b")
    c.run_until(lambda: b.group.generation_id == gen and bool(b.assignment()))
    _stable(c, a, b)
    v = c.group_view(GROUP)
    assert v.generation == gen, "the static member's return rebalanced the group"
    assert b.group.member_id != old_id
    assert [tp.key() for tp in b.assignment()] == old_parts
    assert len(c.world.trace.select(name="group.rebalance")) == rebalances
    [replaced] = c.world.trace.select(name="group.static.replaced")
    assert (replaced.get("instance"), replaced.get("old")) == ("ib", old_id)


def test_static_member_close_sends_no_leave_group_and_does_not_rebalance() -> None:
    """KIP-345: a static member's close leaves no LeaveGroup (Java's ``maybeLeaveGroup`` skips static
    members, librdkafka too), so the group stays Stable in its generation until the session expires."""
    c = _cluster()
    a, b = _static(c, "a", "ia"), _static(c, "b", "ib")
    _stable(c, a, b)
    gen = c.group_view(GROUP).generation
    b.close()
    c.run_for(SESSION_MS // 2)
    v = c.group_view(GROUP)
    assert (v.state, v.generation, len(v.members)) == ("Stable", gen, 2)
    assert not c.world.trace.select(name="group.member.left")


def test_static_member_fence_duplicate_rejoined_follower() -> None:
    """``testStaticMemberFenceDuplicateRejoinedFollower``: a second live instance with the same
    ``group.instance.id`` replaces the first, whose next heartbeat gets FENCED_INSTANCE_ID (fatal)."""
    c = _cluster()
    a, b = _static(c, "a", "ia"), _static(c, "b", "ib")
    _stable(c, a, b)
    twin = _static(c, "b2", "ib")
    c.run_until(lambda: b.group.fatal is not None or c.now_ms > 60_000)
    assert b.group.fatal is not None and b.group.fatal.name == "FENCED_INSTANCE_ID"
    _stable(c, a, twin)
    assert twin.group.member_id in [m.member_id for m in c.group_view(GROUP).members]
