"""Kafka's ``ConsumerMembershipManagerTest``, where it applies: the KIP-848 member of the engine's consumer.

Goal: the engine's consumer with ``group.protocol=consumer``
(:mod:`engine.client.consumer_member`) moves through Kafka's ``MemberState`` as the Java client
does. Method: three-broker clusters on fixed seeds with the engine's own coordinator (no fake
responses), the consumer's member state, epoch and callbacks checked. Each test is named after
the Kafka test method it follows (apache/kafka ``clients/src/test/java/org/apache/kafka/clients/
consumer/internals/ConsumerMembershipManagerTest.java``); where the engine's setting differs (no
metadata wait: topics are named, not ids) the docstring says so.

Skipped: the metadata-wait tests (``...WaitingOnMetadata``, ``testDelayedMetadata...``: the engine's
heartbeats name topics, so nothing waits for topic ids), the listener/metrics tests (no epoch
listeners or rebalance metrics in the engine), the STALE-member tests (``max.poll.interval.ms``
is not enforced on the client) and the callback-failure tests (a callback that raises propagates
out of ``poll`` as in confluent-kafka; the member keeps waiting, as librdkafka's).
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.client.consumer_member import LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerMemberState
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC
from engine.errors import ErrorCode

GROUP = "g"
BROKER = {
    "min.insync.replicas": 2,
    "offsets.topic.num.partitions": 3,
    "group.consumer.session.timeout.ms": 6_000,
    "group.consumer.heartbeat.interval.ms": 1_000,
}


def _cluster(seed: int = 7) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config=BROKER)
    c.create_topic("t", partitions=4, replication_factor=3)
    return c


class _Member:
    def __init__(self, c: Cluster, name: str, topics: tuple[str, ...] = ("t",), **config: Any) -> None:
        self.events: list[tuple[str, list[int]]] = []
        self.consumer = c.consumer({"group.id": GROUP, "client.id": name, "group.protocol": "consumer", **config})
        self.consumer.subscribe(
            list(topics),
            on_assign=lambda _c, tps: self.events.append(("assign", [t.partition for t in tps])),
            on_revoke=lambda _c, tps: self.events.append(("revoke", [t.partition for t in tps])),
            on_lost=lambda _c, tps: self.events.append(("lost", [t.partition for t in tps])),
        )

    @property
    def group(self) -> Any:
        return self.consumer.group

    def owns(self) -> list[int]:
        return [p for _, p in self.consumer.assigned]


def _poll_until(members: list[_Member], done: Any, polls: int = 400) -> bool:
    for _ in range(polls):
        for m in members:
            m.consumer.poll(0.1)
        if done():
            return True
    return False


def test_membership_manager_server_assignor() -> None:
    c = _cluster()
    m = _Member(c, "a", **{"group.remote.assignor": "range"})
    assert m.group.server_assignor == "range"
    assert _poll_until([m], lambda: m.owns() == [0, 1, 2, 3])
    assert c.consumer({"group.id": "other", "group.protocol": "consumer"}).group.server_assignor is None


def test_reconcile_new_partitions_assigned_when_no_partition_owned() -> None:
    c = _cluster()
    m = _Member(c, "a")
    assert m.group.state is ConsumerMemberState.JOINING and m.group.member_epoch == 0
    assert _poll_until([m], lambda: m.group.state is ConsumerMemberState.STABLE and m.owns())
    assert m.owns() == [0, 1, 2, 3] and m.events == [("assign", [0, 1, 2, 3])]
    assert m.group.member_epoch > 0
    assert m.consumer.group_metadata().generation_id == m.group.member_epoch


def test_reconcile_new_partitions_assigned_and_revoked() -> None:
    """A second member joins: the first revokes two partitions (on_revoke, then an empty on_assign)."""
    c = _cluster()
    a = _Member(c, "a")
    assert _poll_until([a], lambda: len(a.owns()) == 4)
    b = _Member(c, "b")
    assert _poll_until([a, b], lambda: len(a.owns()) == 2 and len(b.owns()) == 2)
    revoked = [p for p in range(4) if p not in a.owns()]
    assert a.events == [("assign", [0, 1, 2, 3]), ("revoke", revoked), ("assign", [])]
    assert b.events == [("assign", sorted(b.owns()))]


def test_reconcile_partitions_revoked_with_successful_auto_commit_no_callbacks() -> None:
    c = _cluster()
    p = c.producer()
    for part in range(4):
        p.produce("t", value=b"v", partition=part)
    p.flush(10)
    a = c.consumer({"group.id": GROUP, "client.id": "a", "group.protocol": "consumer", "enable.auto.commit": True})
    a.subscribe(["t"])
    for _ in range(100):
        a.poll(0.1)
    b = c.consumer({"group.id": GROUP, "client.id": "b", "group.protocol": "consumer"})
    b.subscribe(["t"])
    for _ in range(200):
        a.poll(0.1)
        b.poll(0.1)
        if len(a.assigned) == 2 and len(b.assigned) == 2:
            break
    assert len(a.assigned) == 2 and len(b.assigned) == 2
    commits = [
        e for e in c.world.trace.select(name="request") if e.node == a.name and e.get("msg") == "OffsetCommitRequest"
    ]
    assert commits, "the revocation committed the positions first (enable.auto.commit)"


def test_reconciliation_skipped_when_same_assignment_received() -> None:
    c = _cluster()
    m = _Member(c, "a")
    assert _poll_until([m], lambda: len(m.owns()) == 4)
    epoch = m.group.member_epoch
    _poll_until([m], lambda: False, polls=100)  # ten seconds of heartbeats
    assert m.events == [("assign", [0, 1, 2, 3])] and m.group.member_epoch == epoch
    assert m.group.state is ConsumerMemberState.STABLE


def test_member_joining_transitions_to_stable_when_receiving_empty_assignment() -> None:
    c = _cluster()
    m = _Member(c, "a", topics=("nothing-here",))
    assert _poll_until([m], lambda: m.group.state is ConsumerMemberState.STABLE)
    assert m.owns() == [] and m.events == []


def test_fencing_when_state_is_stable() -> None:
    """A member paused past its session is fenced: on_lost, then it rejoins with epoch 0 and its member id."""
    c = _cluster()
    a, b = _Member(c, "a"), _Member(c, "b")
    assert _poll_until([a, b], lambda: len(a.owns()) == 2 and len(b.owns()) == 2)
    owned, member_id = a.owns(), a.group.member_id
    c.pause("a")
    assert _poll_until([b], lambda: len(b.owns()) == 4)
    c.resume("a")
    assert _poll_until([a, b], lambda: ("lost", owned) in a.events)
    assert a.group.fenced_by in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH)
    assert _poll_until([a, b], lambda: len(a.owns()) == 2 and len(b.owns()) == 2)
    assert a.group.member_id == member_id  # KIP-1082: the id is kept across fencing


def test_member_id_and_epoch_reset_on_fenced_members() -> None:
    """After fencing the epoch is 0 and the id kept; a crashed process comes back with a new id."""
    c = _cluster()
    a = _Member(c, "a")
    assert _poll_until([a], lambda: len(a.owns()) == 4)
    first = a.group.member_id
    c.crash("a")
    assert a.group.member_epoch == 0 and a.group.member_id == ""
    c.restart("a")
    assert a.group.member_id not in ("", first) and a.group.state is ConsumerMemberState.JOINING


def test_leave_group_when_state_is_stable() -> None:
    c = _cluster()
    a, b = _Member(c, "a"), _Member(c, "b")
    assert _poll_until([a, b], lambda: len(a.owns()) == 2 and len(b.owns()) == 2)
    b_owned = b.owns()
    b.consumer.close()
    assert b.events[-1] == ("revoke", b_owned)  # within close(), as librdkafka
    assert b.group.state is ConsumerMemberState.UNSUBSCRIBED
    assert _poll_until([a], lambda: len(a.owns()) == 4, polls=30)  # at once, not after a session


def test_leave_group_epoch() -> None:
    """A static member leaves with epoch -2: its partitions wait for it for the session timeout."""
    c = _cluster()
    a, b = _Member(c, "a", **{"group.instance.id": "ia"}), _Member(c, "b")
    assert _poll_until([a, b], lambda: len(a.owns()) == 2 and len(b.owns()) == 2)
    a.consumer.close()
    sent = [
        e
        for e in c.world.trace.select(name="request")
        if e.node == "a" and e.get("msg") == "ConsumerGroupHeartbeatRequest"
    ]
    assert sent and sent[-1].get("epoch") == LEAVE_GROUP_STATIC_MEMBER_EPOCH


def test_member_survives_coordinator_failover() -> None:
    """Not a Kafka test method: the member finds the next coordinator and keeps its epoch and partitions."""
    c = _cluster()
    a, b = _Member(c, "a"), _Member(c, "b")
    assert _poll_until([a, b], lambda: len(a.owns()) == 2 and len(b.owns()) == 2)
    epochs = (a.group.member_epoch, b.group.member_epoch)
    coordinator = a.group.coordinator
    assert c.leader(CONSUMER_OFFSETS_TOPIC, _partition(c)) == coordinator
    c.crash(coordinator)
    _poll_until([a, b], lambda: a.group.coordinator not in (-1, coordinator), polls=200)
    _poll_until([a, b], lambda: False, polls=100)
    assert a.group.coordinator != coordinator and b.group.coordinator == a.group.coordinator
    assert (a.group.member_epoch, b.group.member_epoch) == epochs
    assert sorted(a.owns() + b.owns()) == [0, 1, 2, 3]
    assert not any(e[0] == "lost" for e in a.events + b.events)


def _partition(c: Cluster) -> int:
    from engine.coordinator_lookup import partition_for

    return partition_for(GROUP, 3)
