"""The scheduler's watch: ``on_advance`` and ``after_step`` observers see every move and change nothing.

Goal: an observer that defines ``on_advance(world, from_ms, to_ms)`` or ``after_step(world,
callback)`` switches the scheduler to its watched loops (``Scheduler.watch``,
``_run_for_watched``); the run must stay the same event for event, every move of the clock must
be told exactly once and in order, every scheduled event must be told once, and detaching the
last such observer must give the fast loop back. ``Cluster(observers=[...])`` binds observers
before the startup, and ``Cluster.step`` runs single events.

Method: the same seeds run twice through real clusters (a transactional produce/consume workload,
and a workload with a fault plan of broker crashes, a power loss and a paused client), once with
a :class:`Watcher` attached and once without; the traces and fingerprints must be equal. The
watcher keeps every ``(from_ms, to_ms)`` pair and every callback, and checks inside each hook that
the world is still as ``from_ms`` left it. The budget test runs a world of small real nodes (the
``sim`` fixture) through both ``run_for`` loops.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from engine import Cluster
from engine.sim import NetworkOptions, Observer, RecordingObserver, SimulationStalled, World
from engine.sim.faults import FaultEntry, FaultPlan
from engine.sim.node import Node


class Watcher:
    """Keep every clock move and every event the scheduler reports; check each as it comes."""

    def __init__(self) -> None:
        self.advances: list[tuple[int, int]] = []
        self.steps: list[Callable[..., Any]] = []
        self.count_at_step: list[int] = []
        self.problems: list[str] = []

    def on_advance(self, world: World, from_ms: int, to_ms: int) -> None:
        if world.now_ms != from_ms:
            self.problems.append(f"advance({from_ms}, {to_ms}) told at t={world.now_ms}")
        events = world.trace.events
        if events and events[-1].time_ms > from_ms:
            self.problems.append(f"advance({from_ms}, {to_ms}) told after an event at {events[-1].time_ms}")
        self.advances.append((from_ms, to_ms))

    def after_step(self, world: World, callback: Callable[..., Any]) -> None:
        self.steps.append(callback)
        self.count_at_step.append(world.scheduler.events_run)


def assert_chain(advances: list[tuple[int, int]], start_ms: int, end_ms: int) -> None:
    """The moves go from ``start_ms`` to ``end_ms`` without a gap, an overlap or a standstill."""
    assert advances, "the clock moved but nothing was told"
    assert advances[0][0] == start_ms
    assert advances[-1][1] == end_ms
    for (_, prev_to), (from_ms, _) in itertools.pairwise(advances):
        assert from_ms == prev_to
    assert all(from_ms < to_ms for from_ms, to_ms in advances)


# -- workloads ---------------------------------------------------------------------------------

TXN_CONFIG = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}


def txn_workload(
    seed: int, observers: tuple[Any, ...] = (), *, midway: Callable[[Cluster], Any] | None = None
) -> tuple[Cluster, dict[str, tuple[int, int]]]:
    """Transactions (two commits, an abort) read by a read_committed consumer; returns the waits' times.

    ``midway(cluster)`` runs after ``init_transactions`` (the detach test detaches there).
    """
    cluster = Cluster(seed=seed, brokers=3, config=TXN_CONFIG, observers=observers)
    waits: dict[str, tuple[int, int]] = {}

    def timed(label: str, call: Callable[[], Any]) -> Any:
        before = cluster.now_ms
        out = call()
        waits[label] = (before, cluster.now_ms)
        return out

    cluster.create_topic("orders", partitions=2, replication_factor=3)
    producer = cluster.producer({"transactional.id": "app", "linger.ms": 5})
    timed("init_transactions", producer.init_transactions)
    if midway is not None:
        midway(cluster)
    for txn in range(3):
        producer.begin_transaction()
        for k in range(4):
            producer.produce("orders", value=f"{txn}-{k}".encode(), partition=k % 2)
        if txn == 1:
            timed("flush", producer.flush)
            timed("abort_transaction", producer.abort_transaction)
        else:
            timed(f"commit_transaction-{txn}", producer.commit_transaction)
    consumer = cluster.consumer({"isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.assign([("orders", 0), ("orders", 1)])
    got = timed("consume", lambda: consumer.consume(20, timeout=2.0))
    while len(got) < 8 and cluster.now_ms < 60_000:
        got += consumer.consume(20, timeout=0.5)
    assert sorted(m.value() for m in got) == sorted(f"{t}-{k}".encode() for t in (0, 2) for k in range(4))
    timed("poll-empty", lambda: consumer.poll(0.5))
    cluster.run_for(777)
    return cluster, waits


CRASH_PLAN = FaultPlan(
    (
        FaultEntry.of(400, "crash", node="broker-1"),
        FaultEntry.of(1_600, "restart", node="broker-1"),
        FaultEntry.of(2_000, "crash", node="broker-2", lose_unflushed_tail=True),
        FaultEntry.of(2_900, "restart", node="broker-2"),
        FaultEntry.of(3_100, "pause", node="producer-1"),
        FaultEntry.of(3_400, "resume", node="producer-1"),
        FaultEntry.of(3_500, "drop", dst="producer-1", body_type="ProduceResponse", count=2),
    )
)


def crash_workload(seed: int, observers: tuple[Any, ...] = ()) -> Cluster:
    """An idempotent producer writing through broker crashes, a power loss and a pause."""
    cluster = Cluster(
        seed=seed,
        brokers=3,
        config={"broker.session.timeout.ms": 2_000, "broker.heartbeat.interval.ms": 500},
        observers=observers,
    )
    cluster.create_topic("t", partitions=2, replication_factor=3, config={"min.insync.replicas": 2})
    producer = cluster.producer({"linger.ms": 2, "acks": "all", "request.timeout.ms": 1_000})
    cluster.schedule_faults(CRASH_PLAN)
    for i in range(40):
        if producer.is_up:  # a paused producer refuses new records
            producer.produce("t", value=f"v{i}".encode())
        cluster.run_for(100)
    cluster.heal()
    producer.flush()
    cluster.run_for(1_000)
    return cluster


# -- the run is the same, watched or not ---------------------------------------------------------


@pytest.mark.parametrize("seed", [3, 4])
def test_a_watched_transactional_run_has_the_same_trace_and_fingerprint(seed: int) -> None:
    plain, _ = txn_workload(seed)
    watcher = Watcher()
    watched, _ = txn_workload(seed, (watcher,))
    assert watched.world.trace.short_log() == plain.world.trace.short_log()
    assert watched.fingerprint() == plain.fingerprint()
    assert watched.world.scheduler.events_run == plain.world.scheduler.events_run
    assert watcher.problems == []


def test_a_watched_run_with_crashes_has_the_same_trace_and_fingerprint() -> None:
    plain = crash_workload(5)
    watcher = Watcher()
    watched = crash_workload(5, (watcher,))
    assert watched.world.trace.select(name="crash")  # the plan did crash brokers
    assert watched.world.trace.select(name="pause")
    assert watched.world.trace.short_log() == plain.world.trace.short_log()
    assert watched.fingerprint() == plain.fingerprint()
    assert watcher.problems == []


# -- on_advance: a continuous chain over every move of the clock ------------------------------------


def test_on_advance_chains_every_clock_move_from_zero_to_the_end() -> None:
    watcher = Watcher()
    cluster, _ = txn_workload(3, (watcher,))
    assert_chain(watcher.advances, 0, cluster.now_ms)
    # Every event happened at a time the chain reached, so no move was left out.
    reached = {0} | {to_ms for _, to_ms in watcher.advances}
    assert {e.time_ms for e in cluster.world.trace.events} <= reached


def test_on_advance_covers_the_client_calls_that_wait() -> None:
    watcher = Watcher()
    _, waits = txn_workload(3, (watcher,))
    for label in ("init_transactions", "flush", "abort_transaction", "commit_transaction-0", "consume", "poll-empty"):
        before, after = waits[label]
        assert after > before, f"{label} did not wait"
        during = [(f, t) for f, t in watcher.advances if before <= f and t <= after]
        assert_chain(during, before, after)
    before, after = waits["poll-empty"]
    assert after - before >= 500  # nothing to read: the poll waited out its timeout


def test_on_advance_covers_a_crash_run_and_the_final_jump_of_run_for() -> None:
    watcher = Watcher()
    cluster = crash_workload(5, (watcher,))
    assert_chain(watcher.advances, 0, cluster.now_ms)
    cluster.run_for(250)
    assert_chain(watcher.advances, 0, cluster.now_ms)


def test_run_for_on_an_idle_world_is_one_advance_and_run_for_0_is_none() -> None:
    watcher = Watcher()
    world = World(1, observers=[watcher])
    assert world.scheduler.watch is not None
    assert world.run_for(0) == 0
    assert watcher.advances == []  # nothing moved the clock
    assert world.run_for(40) == 0
    assert watcher.advances == [(0, 40)]
    assert watcher.steps == []


def test_step_and_run_until_tell_the_watch_too(sim) -> None:
    watcher = Watcher()
    world = World(1, network=NetworkOptions(2, 2), observers=[watcher])
    node = sim.Recorder(world, "r")
    for t in (5, 5, 9):
        node.set_timer(t, node.tick, t)
    assert world.step()
    assert watcher.advances == [(0, 5)]
    assert world.step()  # the second timer at 5: no move
    assert watcher.advances == [(0, 5)]
    world.run_until(lambda: len(node.fired) == 3)
    assert watcher.advances == [(0, 5), (5, 9)]
    assert len(watcher.steps) == world.scheduler.events_run == 3


# -- after_step: once per event, with what ran ------------------------------------------------------


def test_after_step_is_called_once_per_scheduler_event() -> None:
    watcher = Watcher()
    cluster = crash_workload(5, (watcher,))
    sched = cluster.world.scheduler
    assert len(watcher.steps) == sched.events_run > 300
    assert watcher.count_at_step == list(range(1, sched.events_run + 1))


def test_after_step_names_the_node_whose_timer_ran() -> None:
    watcher = Watcher()
    cluster, _ = txn_workload(3, (watcher,))
    nodes = cluster.world.nodes
    owners = [getattr(cb, "__self__", None) for cb in watcher.steps]
    timers = [o for o, cb in zip(owners, watcher.steps, strict=True) if isinstance(o, Node)]
    assert timers, "no node handler ran"
    for owner in timers:
        assert nodes[owner.name] is owner  # the bound method of a node of this world
    names = {o.name for o in timers}
    assert {"broker-1", "broker-2", "broker-3", "producer-1"} <= names
    # Deliveries are the network's bound method; the trace's deliver event names the receiver.
    assert any(o is cluster.world.network for o in owners)


# -- attach and detach ---------------------------------------------------------------------------


def test_the_watch_exists_only_while_an_observer_defines_a_hook() -> None:
    world = World(1)
    assert world.scheduler.watch is None
    plain = RecordingObserver()
    world.attach(plain)
    assert world.scheduler.watch is None  # on_event alone keeps the fast loop
    only_steps = type("OnlySteps", (), {"after_step": lambda self, world, cb: None})()
    world.attach(only_steps)
    assert world.scheduler.watch is not None
    watcher = Watcher()
    world.attach(watcher)
    world.detach(only_steps)
    assert world.scheduler.watch is not None  # the watcher still needs it
    world.detach(watcher)
    assert world.scheduler.watch is None


def test_detaching_mid_run_restores_the_fast_loop_and_the_run_stays_the_same() -> None:
    plain, _ = txn_workload(4)
    watcher = Watcher()
    told: list[int] = []

    def detach(cluster: Cluster) -> None:
        cluster.world.detach(watcher)
        assert cluster.world.scheduler.watch is None
        told.extend((len(watcher.advances), len(watcher.steps)))

    cluster, _ = txn_workload(4, (watcher,), midway=detach)
    assert told[1] > 0
    assert [len(watcher.advances), len(watcher.steps)] == told  # nothing told after the detach
    assert cluster.world.trace.short_log() == plain.world.trace.short_log()
    assert cluster.fingerprint() == plain.fingerprint()


# -- the budget -----------------------------------------------------------------------------------


def busy_world(sim, watched: bool) -> World:
    world = World(2, network=NetworkOptions(1, 3), observers=[Watcher()] if watched else [])
    client = sim.KvClient(world, "c")
    sim.KvServer(world, "s")
    for i in range(30):
        client.set_timer(i % 7, client.put, "s", f"k{i}", i)
    cancelled = client.set_timer(3, client.put, "s", "never", -1)
    cancelled.cancel()
    return world


@pytest.mark.parametrize("budget", [0, 1, 17, 60])
def test_the_watched_run_for_stalls_at_max_events_like_the_fast_loop(sim, budget: int) -> None:
    outcomes = []
    for watched in (False, True):
        world = busy_world(sim, watched)
        assert (world.scheduler.watch is not None) is watched
        with pytest.raises(SimulationStalled) as stalled:
            world.run_for(1_000, max_events=budget)
        outcomes.append((stalled.value.events, stalled.value.now_ms, world.scheduler.events_run, world.now_ms))
        world.run_for(1_000)  # what was left runs after the stall, in the same order
        outcomes.append((world.scheduler.events_run, world.now_ms, world.fingerprint()))
    assert outcomes[0] == outcomes[2]
    assert outcomes[1] == outcomes[3]
    assert outcomes[0][0] == budget


def test_the_watched_run_for_within_budget_returns_the_count_like_the_fast_loop(sim) -> None:
    fast, watched = busy_world(sim, False), busy_world(sim, True)
    assert fast.run_for(1_000, max_events=200) == watched.run_for(1_000, max_events=200) > 30
    assert fast.fingerprint() == watched.fingerprint()


# -- Cluster(observers=...) and Cluster.step ---------------------------------------------------------


@pytest.mark.parametrize("bad", [[object()], ["not an observer"], "abc", 5, [RecordingObserver(), 3]])
def test_cluster_refuses_what_is_not_a_list_of_observers(bad: Any) -> None:
    with pytest.raises(TypeError, match="observer"):
        Cluster(seed=1, brokers=1, observers=bad)


class Binder(Observer):
    """Note what the cluster looked like when ``on_cluster`` came, and every event after."""

    def __init__(self) -> None:
        self.bound_at: tuple[int, int, int, int] | None = None
        self.names: list[str] = []
        self.cluster: Cluster | None = None

    def on_cluster(self, cluster: Cluster) -> None:
        self.cluster = cluster
        trace = cluster.world.trace
        registered = len(trace.select(name="broker.register"))
        self.bound_at = (trace.count, cluster.now_ms, len(cluster.brokers), registered)

    def on_event(self, event: Any) -> None:
        self.names.append(event.name)


def test_on_cluster_comes_before_the_first_broker_registers() -> None:
    binder = Binder()
    cluster = Cluster(seed=1, brokers=3, observers=[binder])
    assert binder.cluster is cluster
    assert binder.bound_at is not None
    count, now_ms, brokers, registered = binder.bound_at
    assert (now_ms, brokers, registered) == (0, 3, 0)
    assert cluster.producers == [] and cluster.consumers == []
    # The observer saw the whole startup: the registrations and the leaders of the internal topics.
    assert binder.names.count("broker.register") == 3
    assert binder.names == [e.name for e in cluster.world.trace.events]
    assert count < binder.names.index("broker.register")


def test_an_observer_with_only_a_hook_of_the_list_is_accepted() -> None:
    binder = type("OnlyCluster", (), {"on_cluster": lambda self, cluster: setattr(self, "seen", cluster)})()
    cluster = Cluster(seed=1, brokers=1, observers=(binder,))
    assert binder.seen is cluster


@pytest.mark.parametrize(("events", "error"), [(0, ValueError), (-1, ValueError), (True, TypeError), ("1", TypeError)])
def test_cluster_step_refuses_a_bad_count(events: Any, error: type[Exception]) -> None:
    cluster = Cluster(seed=1, brokers=1)
    before = (cluster.world.scheduler.events_run, cluster.world.trace.count)
    with pytest.raises(error, match=r"step\(events\)"):
        cluster.step(events)
    assert (cluster.world.scheduler.events_run, cluster.world.trace.count) == before


def test_cluster_step_runs_that_many_events_and_tells_the_watch() -> None:
    watcher = Watcher()
    cluster = Cluster(seed=1, brokers=3, observers=[watcher])
    sched = cluster.world.scheduler
    ran = sched.events_run
    assert cluster.step() == 1
    assert cluster.step(25) == 25
    assert sched.events_run == ran + 26
    assert len(watcher.steps) == sched.events_run
    assert_chain(watcher.advances, 0, cluster.now_ms)


def test_cluster_step_returns_fewer_when_nothing_is_due() -> None:
    cluster = Cluster(seed=1, brokers=1)
    # Crash every node: their timers die with their incarnation and run as no-ops, then nothing is left.
    for name in list(cluster.world.nodes):
        cluster.crash(name)
    cluster.run_for(700_000)  # past the last timer a crashed node left (a 600 s one)
    assert cluster.world.scheduler.next_due_ms() is None
    assert cluster.step(5) == 0
