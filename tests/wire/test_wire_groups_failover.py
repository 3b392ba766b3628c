"""Real confluent-kafka consumers in a group across a coordinator crash, and static membership (KIP-345).

Goal: what librdkafka sees of the classic group coordinator when it matters -- a new member of a
group whose only member closed is assigned within seconds of the coordinator's failover (not after
the departed member's 45 s session), and a static member (``group.instance.id``) restarted within
its session gets its partitions back in the same generation. Method: a served three-broker
cluster; the coordinator is crashed under ``server.locked()`` right after ``close()`` returned
(librdkafka waits for the LeaveGroup answer); the group's view is read under the lock.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer

from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for


def _wait_assigned(consumer: Any, got: list[int], seconds: float) -> float:
    start = time.monotonic()
    while not got and time.monotonic() < start + seconds:
        consumer.poll(0.1)
    return time.monotonic() - start


def test_a_new_member_is_assigned_within_seconds_after_the_coordinator_of_an_emptied_group_crashed(served, ck) -> None:
    server = served([("t", 4, 3)])
    conf = {**ck(server), "group.id": "g", "auto.offset.reset": "earliest"}  # session.timeout.ms 45 s
    first: list[int] = []
    a = Consumer(conf)
    a.subscribe(["t"], on_assign=lambda _c, ps: first.extend(p.partition for p in ps))
    _wait_assigned(a, first, 30)
    assert sorted(first) == [0, 1, 2, 3]
    a.close()  # LeaveGroup, answered once the Empty group record is replicated
    with server.locked() as cluster:
        v = cluster.group_view("g")
        assert (v.state, v.members) == ("Empty", ())
        cluster.crash(cluster.leader(CONSUMER_OFFSETS_TOPIC, partition_for("g", 50)))
    second: list[int] = []
    b = Consumer(conf)
    b.subscribe(["t"], on_assign=lambda _c, ps: second.extend(p.partition for p in ps))
    waited = _wait_assigned(b, second, 40)
    b.close()
    assert sorted(second) == [0, 1, 2, 3]
    # broker.session.timeout.ms (9 s) elects the new coordinator; then the join completes at once.
    assert waited < 20, f"assigned after {waited:.1f} s: the departed member was waited for"


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(served, ck) -> None:
    server = served([("t", 4, 3)])
    base = {**ck(server), "group.id": "s", "auto.offset.reset": "earliest", "session.timeout.ms": 30_000}
    parts: dict[str, list[int]] = {"a": [], "b": []}

    def member(name: str) -> Any:
        c = Consumer({**base, "group.instance.id": f"inst-{name}", "client.id": name})
        parts[name] = []
        # eager assignment: each on_assign carries the member's whole new assignment (when "a" joins
        # first it owns all four until "b" joins), so it replaces what the member had
        owned = parts[name]
        c.subscribe(["t"], on_assign=lambda _c, ps: owned.__setitem__(slice(None), [p.partition for p in ps]))
        return c

    a, b = member("a"), member("b")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (parts["a"] and parts["b"] and len(parts["a"] + parts["b"]) == 4):
        a.poll(0.1)
        b.poll(0.1)
    assert sorted(parts["a"] + parts["b"]) == [0, 1, 2, 3]
    before = sorted(parts["b"])
    with server.locked() as cluster:
        gen = cluster.group_view("s").generation
    b.close()  # a static member sends no LeaveGroup
    with server.locked() as cluster:
        assert cluster.group_view("s").generation == gen
    b = member("b")
    _wait_assigned(b, parts["b"], 20)
    for _ in range(10):
        a.poll(0.1)
    with server.locked() as cluster:
        v = cluster.group_view("s")
        assert (v.state, v.generation) == ("Stable", gen), "the static member's restart rebalanced the group"
    assert sorted(parts["b"]) == before
    a.close()
    b.close()
