"""``engine.views.ownership``: who owned each partition of a group when, read from the trace.

Goal: the ownership intervals and gaps are what the consumers did, under each rebalance protocol:
after a member crash an eager group leaves *every* partition without an owner for the rebalance
(the survivors revoke all they own), a cooperative (KIP-429) and a KIP-848 group only the crashed
member's partitions, and a static member (KIP-345) restarted within its session gets its own
partitions back with no rebalance. The cooperative case is the one a naive measure gets wrong: the
group rebalances (``group.rebalance`` to ``group.stable``), yet the survivors own their partitions
all through it. Method: real three-broker clusters on fixed seeds and the engine's own consumers,
polled every 100 ms as an application does; the view reads ``cluster.world.trace``. The window
rules (clipping, pause, crash, overlap) are checked on a few trace events built by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster
from engine import trace_events as events
from engine.sim.trace import TraceEvent
from engine.views.ownership import Interval, ownership

PROTOCOLS = {
    "eager": {"partition.assignment.strategy": "range"},
    "cooperative": {"partition.assignment.strategy": "cooperative-sticky"},
    "kip848": {"group.protocol": "consumer"},
}


def _run(c: Cluster, consumers: dict[str, Any], ms: int) -> None:
    for _ in range(ms // 100):
        for name in sorted(consumers):
            if consumers[name].is_up and not consumers[name].closed:
                consumers[name].poll(0)
        c.run_for(100)


def _crash_one_of_three(protocol: str, seed: int = 42) -> tuple[Cluster, int, dict[str, Any]]:
    """Three members on six partitions settle, then ``protocol-3`` crashes; run past its session."""
    c = Cluster(seed=seed, brokers=3)
    c.create_topic("t", partitions=6, replication_factor=3)
    consumers = {}
    for i in (1, 2, 3):
        name = f"{protocol}-{i}"
        consumers[name] = c.consumer({"group.id": protocol, "client.id": name, **PROTOCOLS[protocol]})
        consumers[name].subscribe(["t"])
    _run(c, consumers, 15_000)
    crashed_at = c.now_ms
    c.crash(f"{protocol}-3")
    _run(c, consumers, 60_000)
    return c, crashed_at, consumers


def _before(c: Cluster, t: int) -> dict[str, list[tuple[str, int]]]:
    """Each member's assignment as its last ``consumer.assignment`` before ``t`` said."""
    out: dict[str, list[tuple[str, int]]] = {}
    for e in c.world.trace:
        if e.name == events.CONSUMER_ASSIGNMENT and e.time_ms < t:
            out[e.node] = [(n.rpartition("-")[0], int(n.rpartition("-")[2])) for n in e.get("assignment")]
    return out


def test_cooperative_survivors_own_their_partitions_through_the_rebalance() -> None:
    c, crashed_at, consumers = _crash_one_of_three("cooperative")
    own = ownership(c.world.trace, start_ms=crashed_at, end_ms=c.now_ms)
    held = _before(c, crashed_at)
    crashed = set(held["cooperative-3"])
    rebalances = [e for e in c.world.trace if e.name == events.GROUP_REBALANCE and e.time_ms > crashed_at]
    assert rebalances, "the group rebalanced after the crash"
    gaps = own.gap_ms("cooperative")
    assert {tp for tp, ms in gaps.items() if ms} == crashed  # only the crashed member's partitions
    for tp in crashed:  # without an owner from the crash until the session expired and they moved
        assert 40_000 < gaps[tp] < 46_000, gaps
        assert own.group("cooperative")[tp[1]].owners in (("cooperative-1",), ("cooperative-2",))
    assert own.revoked("cooperative") == {}  # nothing was taken from the survivors
    assert sorted(tp for n in ("cooperative-1", "cooperative-2") for tp in consumers[n].assigned) == [
        ("t", p) for p in range(6)
    ]


def test_eager_survivors_revoke_everything_so_every_partition_has_a_gap() -> None:
    c, crashed_at, _ = _crash_one_of_three("eager")
    own = ownership(c.world.trace, start_ms=crashed_at, end_ms=c.now_ms)
    held = _before(c, crashed_at)
    gaps = own.gap_ms("eager")
    assert sorted(gaps) == [("t", p) for p in range(6)] and all(gaps.values()), gaps
    survivors = {n: tuple(sorted(held[n])) for n in ("eager-1", "eager-2")}
    assert own.revoked("eager") == survivors  # everything they owned, whether it moves or not
    assert all(own.revoked_from("eager", *tp) == (n,) for n, tps in survivors.items() for tp in tps)
    assert not any(own.revoked_from("eager", *tp) for tp in held["eager-3"])  # crashed, not revoked
    for tp in held["eager-3"]:  # the crashed member's partitions wait out its session
        assert gaps[tp] > 40_000
    for tps in survivors.values():  # the survivors' own partitions only wait for the rebalance
        assert all(0 < gaps[tp] < 1_000 for tp in tps), gaps


def test_kip848_survivors_keep_their_partitions_and_gain_the_crashed_members() -> None:
    c, crashed_at, consumers = _crash_one_of_three("kip848")
    own = ownership(c.world.trace, start_ms=crashed_at, end_ms=c.now_ms)
    held = _before(c, crashed_at)
    gaps = own.gap_ms("kip848")
    assert {tp for tp, ms in gaps.items() if ms} == set(held["kip848-3"])
    assert own.revoked("kip848") == {}
    for n in ("kip848-1", "kip848-2"):
        assert set(held[n]) < set(consumers[n].assigned)


def test_a_static_member_restarted_within_its_session_rebalances_nothing() -> None:
    c = Cluster(seed=7, brokers=3)
    c.create_topic("t", partitions=6, replication_factor=3)
    consumers = {}
    for i in (1, 2, 3):
        name = f"static-{i}"
        config = {"group.id": "static", "client.id": name, "group.instance.id": f"instance-{i}"}
        consumers[name] = c.consumer({**config, "session.timeout.ms": 30_000})
        consumers[name].subscribe(["t"])
    _run(c, consumers, 15_000)
    held = _before(c, c.now_ms + 1)
    crashed_at = c.now_ms
    c.crash("static-3")
    _run(c, consumers, 5_000)
    c.restart("static-3")
    _run(c, consumers, 10_000)
    own = ownership(c.world.trace, start_ms=crashed_at, end_ms=c.now_ms)
    gaps = own.gap_ms("static")
    assert {tp for tp, ms in gaps.items() if ms} == set(held["static-3"])
    assert all(5_000 <= gaps[tp] < 6_000 for tp in held["static-3"]), gaps
    assert consumers["static-3"].assigned == held["static-3"]
    assert not [e for e in c.world.trace if e.name == events.GROUP_REBALANCE and e.time_ms > crashed_at]
    assert [e.name for e in c.world.trace if e.name == events.GROUP_STATIC_REPLACED and e.time_ms > crashed_at]


def test_a_consumer_assigned_by_hand_traces_no_assignment() -> None:
    c = Cluster(seed=1, brokers=1)
    c.create_topic("t", partitions=2, replication_factor=1)
    manual = c.consumer({"group.id": "g", "client.id": "manual"})
    manual.assign([("t", 0)])
    c.run_for(1_000)
    assert not [e for e in c.world.trace if e.name == events.CONSUMER_ASSIGNMENT]
    assert ownership(c.world.trace, end_ms=c.now_ms).partitions == ()


def _ev(i: int, t: int, node: str, name: str, *detail: tuple[str, Any]) -> TraceEvent:
    kind = "state" if name == events.CONSUMER_ASSIGNMENT else "fault"
    return TraceEvent(i, t, node, kind, name, detail)


def _assigned(i: int, t: int, node: str, *tps: str) -> TraceEvent:
    return _ev(i, t, node, events.CONSUMER_ASSIGNMENT, ("group", "g"), ("assignment", list(tps)))


def test_pause_stops_serving_and_resume_serves_the_old_assignment_again() -> None:
    trace = [
        _assigned(0, 100, "a", "t-0", "t-1"),
        _ev(1, 1_000, "a", events.PAUSE),
        _assigned(2, 3_000, "b", "t-0"),
        _ev(3, 4_000, "a", events.RESUME),  # a zombie: it still believes it owns t-0 and t-1
        _assigned(4, 4_500, "a"),  # fenced: gives them up
    ]
    own = ownership(trace, end_ms=5_000)
    t0, t1 = own.partitions
    assert t0.owned == (Interval("a", 100, 1_000), Interval("b", 3_000, 5_000), Interval("a", 4_000, 4_500))
    assert t0.gaps == (Interval(None, 1_000, 3_000),) and t0.gap_ms == 2_000
    assert t1.gaps == (Interval(None, 1_000, 4_000), Interval(None, 4_500, 5_000))
    assert own.revoked("g") == {"a": (("t", 0), ("t", 1))}


def test_the_window_clips_intervals_and_a_crash_ends_ownership() -> None:
    trace = [
        _assigned(0, 0, "a", "orders-0", "my-topic-1"),
        _ev(1, 2_000, "a", events.CRASH),
        _ev(2, 2_500, "a", events.RESTART),
        _assigned(3, 3_000, "a", "orders-0"),
    ]
    own = ownership(trace, start_ms=1_000, end_ms=4_000, groups=["g"])
    by_tp = {(p.topic, p.partition): p for p in own.partitions}
    assert sorted(by_tp) == [("my-topic", 1), ("orders", 0)]
    assert by_tp[("orders", 0)].owned == (Interval("a", 1_000, 2_000), Interval("a", 3_000, 4_000))
    assert by_tp[("orders", 0)].gaps == (Interval(None, 2_000, 3_000),)
    assert by_tp[("my-topic", 1)].gap_ms == 2_000
    assert own.revocations == ()  # a crash is not a revocation
    assert ownership(trace, end_ms=4_000, groups=["other"]).partitions == ()


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_the_same_seed_gives_the_same_ownership(protocol: str) -> None:
    a, at_a, _ = _crash_one_of_three(protocol, seed=5)
    b, at_b, _ = _crash_one_of_three(protocol, seed=5)
    assert ownership(a.world.trace, start_ms=at_a, end_ms=a.now_ms) == ownership(
        b.world.trace, start_ms=at_b, end_ms=b.now_ms
    )
