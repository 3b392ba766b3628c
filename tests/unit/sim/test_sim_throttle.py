"""``Throttled``: an observer told the run in ticks of simulated time, the same ticks in every run.

Goal: the ticks are a function of the run alone. They sit on the grid ``0, every_ms, 2*every_ms``,
come at most once per grid span, fire before anything due at the new time runs, and hand over the
events since the previous tick whose names were asked for; ``flush`` delivers what is left; the
wrapper changes nothing in the run; bad arguments are refused before anything is attached.

Method: a world whose only activity is marks emitted at chosen times (so every tick can be
written down by hand), then a real cluster with a fault plan, watched by a :class:`Ticks`
collector through ``Throttled``: the ticks are checked against the trace (the events of each
tick are exactly the filtered trace between two ticks), compared across two runs of one seed,
and the fingerprint compared with an unwatched run.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster
from engine.sim import World
from engine.sim.faults import FaultEntry, FaultPlan
from engine.sim.throttle import Throttled
from engine.sim.trace import TraceEvent


class Ticks:
    """Keep every tick: the grid point, the clock and trace length when it came, the events."""

    def __init__(self) -> None:
        self.ticks: list[tuple[int, int, int, list[TraceEvent]]] = []

    def on_tick(self, world: World, tick_ms: int, events: list[TraceEvent]) -> None:
        self.ticks.append((tick_ms, world.now_ms, world.trace.count, list(events)))

    def summary(self) -> list[tuple[int, list[int]]]:
        return [(tick_ms, [e.index for e in events]) for tick_ms, _, _, events in self.ticks]


def marked_world(every_ms: int, names: Any = None) -> tuple[World, Ticks, Throttled]:
    """A world that emits a mark at 3, 25, 27 and 61 ms (and ``run.start`` at 0)."""
    ticks = Ticks()
    throttled = Throttled(ticks, every_ms, names=names)
    world = World(1, observers=[throttled])
    for t, label in ((3, "a"), (25, "b"), (27, "c"), (61, "d")):
        world.scheduler.call_at(t, world.trace.mark, "n", label)
    return world, ticks, throttled


def labels(events: list[TraceEvent]) -> list[str]:
    return [e.get("label", e.name) for e in events]


# -- the grid, by hand ----------------------------------------------------------------------------


def test_ticks_fire_when_time_passes_a_grid_point_with_the_events_before_it() -> None:
    world, ticks, throttled = marked_world(10)
    world.run_for(65)
    # 0->3: no grid point; 3->25 passes 10 and 20 (one tick, at 20); 25->27: none; 27->61 passes
    # 30..60 (one tick, at 60); 61->65: none, so the mark at 61 waits for the next tick.
    got = [(t, now, labels(ev)) for t, now, _, ev in ticks.ticks]
    assert got == [(20, 3, ["run.start", "a"]), (60, 27, ["b", "c"])]
    assert throttled.ticks == 2
    throttled.flush(world)
    assert [(t, labels(ev)) for t, _, _, ev in ticks.ticks[2:]] == [(65, ["d"])]


def test_a_move_onto_a_grid_point_fires_before_what_is_due_there_runs() -> None:
    ticks = Ticks()
    world = World(1, observers=[Throttled(ticks, 10)])
    world.scheduler.call_at(10, world.trace.mark, "n", "at-ten")
    world.run_for(10)
    ((tick_ms, now, count, events),) = ticks.ticks
    assert (tick_ms, now, labels(events)) == (10, 0, ["run.start"])
    assert count == 1  # the mark at 10 had not run yet
    assert world.trace.count == 2


def test_the_names_filter_picks_the_events_a_tick_hands_over() -> None:
    world, ticks, _ = marked_world(10, names=["mark"])
    world.run_for(65)
    assert [(t, labels(ev)) for t, _, _, ev in ticks.ticks] == [(20, ["a"]), (60, ["b", "c"])]
    world, ticks, _ = marked_world(10, names=[])
    world.run_for(65)
    assert [(t, ev) for t, _, _, ev in ticks.ticks] == [(20, []), (60, [])]  # ticks only


def test_time_inside_one_span_gives_no_tick() -> None:
    world, ticks, _ = marked_world(100)
    world.run_for(99)
    assert ticks.ticks == []
    world.run_for(1)
    assert [(t, labels(ev)) for t, _, _, ev in ticks.ticks] == [(100, ["run.start", "a", "b", "c", "d"])]


def test_an_idle_jump_past_a_grid_point_gives_an_empty_tick() -> None:
    # The code fires on every grid crossing (as "When a tick fires" says), even when nothing
    # happened since the last tick; only flush() checks for news first.
    world, ticks, throttled = marked_world(10)
    world.run_for(100)
    before = len(ticks.ticks)
    world.run_for(50)
    assert [(t, ev) for t, _, _, ev in ticks.ticks[before:]] == [(150, [])]
    throttled.flush(world)
    assert len(ticks.ticks) == before + 1


def test_flush_delivers_only_when_something_happened() -> None:
    world, ticks, throttled = marked_world(1_000)
    throttled.flush(world)  # run.start is news
    assert [(t, labels(ev)) for t, _, _, ev in ticks.ticks] == [(0, ["run.start"])]
    throttled.flush(world)
    assert len(ticks.ticks) == 1
    world.run_for(30)
    throttled.flush(world)
    assert [(t, labels(ev)) for t, _, _, ev in ticks.ticks[1:]] == [(30, ["a", "b", "c"])]
    assert throttled.ticks == 2


# -- a real run -----------------------------------------------------------------------------------

PLAN = FaultPlan(
    (
        FaultEntry.of(300, "crash", node="broker-2"),
        FaultEntry.of(900, "restart", node="broker-2"),
        FaultEntry.of(1_200, "drop", dst="producer-1", body_type="ProduceResponse", count=1),
    )
)
NAMES = ("log.append", "log.hw", "crash", "restart", "produce.done")


def throttled_run(seed: int, every_ms: int | None = 50, names: Any = NAMES) -> tuple[Cluster, Ticks | None]:
    ticks = Ticks() if every_ms is not None else None
    observers = [Throttled(ticks, every_ms, names=names)] if ticks is not None else []
    cluster = Cluster(seed=seed, brokers=3, observers=observers)
    cluster.create_topic("t", partitions=2, replication_factor=3)
    producer = cluster.producer({"linger.ms": 3, "request.timeout.ms": 500})
    cluster.schedule_faults(PLAN)
    for i in range(30):
        producer.produce("t", value=f"v{i}".encode())
        cluster.run_for(47)
    producer.flush()
    cluster.run_for(200)
    return cluster, ticks


def test_ticks_of_a_cluster_run_are_on_the_grid_and_carry_the_filtered_trace() -> None:
    cluster, ticks = throttled_run(7)
    assert ticks is not None and len(ticks.ticks) > 10
    every = 50
    tick_times = [t for t, _, _, _ in ticks.ticks]
    assert all(t % every == 0 for t in tick_times)
    assert tick_times == sorted(set(tick_times))  # at most one tick per grid point
    previous = 0
    for tick_ms, now, count, events in ticks.ticks:
        assert now < tick_ms  # the world is as the last instant before the grid point left it
        assert count == 0 or cluster.world.trace.events[count - 1].time_ms <= now
        assert all(previous <= e.time_ms < tick_ms for e in events)
        # At most one tick per span: every event of a tick lies in the one span the clock left.
        assert all(e.time_ms // every == now // every for e in events)
        previous = tick_ms
    handed = [e for _, _, _, events in ticks.ticks for e in events]
    last_count = ticks.ticks[-1][2]
    wanted = [e for e in cluster.world.trace.events[:last_count] if e.name in NAMES]
    assert handed == wanted
    assert {e.name for e in handed} == set(NAMES)


def test_the_same_seed_gives_the_same_ticks() -> None:
    _, first = throttled_run(7)
    _, second = throttled_run(7)
    assert first is not None and second is not None
    assert first.summary() == second.summary()
    _, other = throttled_run(8)
    assert other is not None and other.summary() != first.summary()


def test_throttled_changes_nothing_in_the_run() -> None:
    plain, _ = throttled_run(7, every_ms=None)
    watched, _ = throttled_run(7, every_ms=13, names=None)
    assert watched.world.trace.short_log() == plain.world.trace.short_log()
    assert watched.fingerprint() == plain.fingerprint()


# -- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("every_ms", [0, -5, True, False, 2.5, "10", None])
def test_a_bad_period_is_refused(every_ms: Any) -> None:
    with pytest.raises(ValueError, match="every_ms"):
        Throttled(Ticks(), every_ms)


@pytest.mark.parametrize("observer", [object(), type("NotCallable", (), {"on_tick": 3})()])
def test_an_observer_without_on_tick_is_refused(observer: Any) -> None:
    with pytest.raises(TypeError, match="on_tick"):
        Throttled(observer, 10)
