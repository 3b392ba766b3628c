"""Unit tests of ``engine.sim.world``, ``engine.sim.trace`` and ``engine.sim.observer``.

Method: small worlds with recorder nodes; the tests check the heal phase ends every kind of fault,
that observers see everything and change nothing (same fingerprint), and the short-log format.
"""

from __future__ import annotations

from engine.sim import MessageRule, Observer, RecordingObserver, Trace, World
from engine.sim.trace import SYMBOLS


def busy_world(sim, seed: int, observer: Observer | None = None) -> World:
    world = World(seed)
    if observer is not None:
        world.attach(observer)
    return drive(sim, world)


def busy_world_from_start(sim, seed: int, observer: Observer) -> World:
    return drive(sim, World(seed, observers=[observer]))


def drive(sim, world: World) -> World:
    for name in ("a", "b", "c"):
        sim.Recorder(world, name)
    for i in range(20):
        world.network.send("a", "b", i)
        world.network.send("c", "a", i)
        world.run_for(world.rng.stream("workload").randint(1, 5))
    world.crash("b")
    world.run_for(10)
    world.heal()
    world.run_for(10)
    return world


# -- heal and phases --------------------------------------------------------------------------


def test_heal_ends_every_fault_and_enters_the_heal_phase(sim) -> None:
    world = World(1)
    for name in ("a", "b", "c", "d"):
        sim.Recorder(world, name)
    rec = RecordingObserver()
    world.attach(rec)
    world.network.add_rule(MessageRule("hold", dst="d", count=None))
    world.network.add_rule(MessageRule("drop", src="d", count=None))
    world.network.send("c", "d", "held")
    world.network.partition(["a"], ["b"])
    world.network.clog(["b"], ["c"])
    world.network.send("b", "c", "clogged")
    world.crash("a")
    world.pause("b")
    world.run_for(10)
    world.heal()
    assert world.phase == "heal"
    assert rec.phases == ["heal"]
    assert all(n.is_up for n in world.nodes.values())
    assert world.network.blocked == set()
    assert world.network.clogged == set()
    assert world.network.held == {}
    world.set_phase("liveness")
    world.network.send("a", "c", "after")
    world.run_for(10)
    assert world.node("c").bodies() == ["clogged", "after"]
    assert world.node("d").bodies() == ["held"]
    assert [e.name for e in world.trace.select(kind="phase")] == ["run.start", "phase.heal", "phase.liveness"]


# -- observers and the fingerprint ------------------------------------------------------------


class Meddler(Observer):
    """Watches everything and draws from its own stream, as a dashboard would."""

    def __init__(self, world_ref: list[World]) -> None:
        self.seen = 0
        self.snapshots = 0
        self.world_ref = world_ref

    def on_event(self, event) -> None:
        self.seen += 1

    def after_run_for(self, world: World) -> None:
        self.snapshots += 1
        world.rng.observer_stream("dash").random()


def test_an_attached_observer_sees_every_event_and_changes_nothing(sim) -> None:
    plain = busy_world(sim, 5)
    rec = RecordingObserver()
    watched = busy_world(sim, 5, rec)
    meddler = Meddler([])
    meddled = busy_world(sim, 5, meddler)
    assert watched.fingerprint() == plain.fingerprint() == meddled.fingerprint()
    assert watched.trace.short_log() == plain.trace.short_log()
    # It was attached after the world traced ``run.start``; it saw every later event.
    assert rec.events == watched.trace.events[1:]
    assert meddler.seen == len(meddled.trace) - 1
    early = RecordingObserver()
    from_start = busy_world_from_start(sim, 5, early)
    assert early.events == from_start.trace.events
    assert from_start.fingerprint() == plain.fingerprint()
    assert meddler.snapshots == 22


def test_fingerprint_is_stable_when_asked_twice_and_differs_across_seeds(sim) -> None:
    a = busy_world(sim, 5)
    first = a.fingerprint()
    assert a.fingerprint() == first
    assert busy_world(sim, 6).fingerprint() != first


def test_fingerprint_includes_unread_randomness(sim) -> None:
    a, b = World(1), World(1)
    a.rng.stream("workload").random()
    assert a.trace.short_log() == b.trace.short_log()
    assert a.fingerprint() != b.fingerprint()


def test_detached_observer_sees_nothing_more() -> None:
    world = World(1)
    rec = RecordingObserver()
    world.attach(rec)
    world.trace.emit("n", "state", "x")
    world.trace.attach(Observer())
    world.trace.detach(rec)
    world.trace.emit("n", "state", "y")
    assert [e.name for e in rec.events] == ["x"]
    assert len(world.trace.observers) == 1


# -- the trace and its short log --------------------------------------------------------------


class Clock:
    now_ms = 1234


def test_short_log_has_fixed_columns_and_formats_values() -> None:
    trace = Trace(Clock())
    e = trace.emit("broker-1", "state", "append", ("offsets", [3, 4]), ("epoch", None), ("ok", True))
    assert e.short() == "     1234 broker-1     * append                       offsets=[3,4] epoch=- ok=True"
    assert e.symbol == "*"
    assert e.get("epoch", "absent") is None
    assert e.get("missing", "absent") == "absent"
    bare = trace.emit("n", "phase", "run.end")
    assert bare.short() == "     1234 n            = run.end"
    assert trace.short_log() == e.short() + "\n" + bare.short()
    assert trace.short_log([bare]) == bare.short()
    assert [x.index for x in trace] == [0, 1]


def test_every_kind_has_a_one_character_symbol() -> None:
    assert len(set(SYMBOLS.values())) == len(SYMBOLS)
    assert all(len(s) == 1 for s in SYMBOLS.values())


def test_marks_count_and_trace_each_hit() -> None:
    trace = Trace(Clock())
    trace.mark("b1", "dedup: duplicate batch answered from cache")
    trace.mark("b1", "dedup: duplicate batch answered from cache")
    assert trace.marks == {"dedup: duplicate batch answered from cache": 2}
    assert [e.symbol for e in trace] == ["#", "#"]


def test_select_filters_on_every_given_field() -> None:
    trace = Trace(Clock())
    trace.emit("a", "state", "x")
    trace.emit("b", "state", "x")
    trace.emit("a", "fault", "x")
    assert len(trace.select(node="a")) == 2
    assert len(trace.select(node="a", kind="state")) == 1
    assert len(trace.select(name="x")) == 3


def test_a_trace_that_keeps_nothing_gives_the_same_fingerprint(sim) -> None:
    kept, streamed = Trace(Clock()), Trace(Clock(), keep=False)
    for t in (kept, streamed):
        t.emit("a", "state", "x", ("k", 1))
        t.emit("b", "send", "request", ("to", "a"))
    assert streamed.events == []
    assert len(streamed) == 2
    assert kept.fingerprint(7) == streamed.fingerprint(7)
    assert kept.fingerprint(7) != kept.fingerprint(8)
