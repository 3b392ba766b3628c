"""Unit tests of ``engine.sim.node`` and ``engine.sim.disk``: the node life cycle.

Method: a key-value server keeps volatile state in attributes and a durable log on its disk; the
tests crash, restart, pause and resume it through the world and check exactly what survives,
what runs, and when.
"""

from __future__ import annotations

import pytest

from engine.sim import Disk, DurableList, IllegalNodeTransitionError, NodeStatus, World


def test_crash_loses_exactly_the_volatile_state_and_keeps_the_durable(kv) -> None:
    kv.c1.put("s1", "a", 1)
    kv.world.run_for(10)
    kv.s1.log.flush()
    kv.c1.put("s1", "b", 2)
    kv.world.run_for(10)
    assert kv.s1.state == {"a": 1, "b": 2}
    kv.world.crash("s1")
    assert kv.s1.status is NodeStatus.DOWN
    assert kv.s1.state == {}
    assert kv.s1.handled == []
    # A process crash keeps the page cache: the unflushed ("b", 2) survives.
    assert kv.s1.log.items == [("a", 1), ("b", 2)]
    kv.world.restart("s1")
    assert kv.s1.state == {"a": 1, "b": 2}
    assert kv.s1.disk.get("log") is kv.s1.log


def test_crash_with_lose_unflushed_tail_cuts_the_log_back_to_the_last_flush(kv) -> None:
    kv.c1.put("s1", "a", 1)
    kv.world.run_for(10)
    kv.s1.disk.flush()
    kv.c1.put("s1", "b", 2)
    kv.c1.put("s1", "c", 3)
    kv.world.run_for(10)
    kv.world.crash("s1", lose_unflushed_tail=True)
    assert kv.s1.log.items == [("a", 1)]
    (line,) = kv.world.trace.select(name="crash")
    assert line.get("lost") == [("log", 2)]
    kv.world.restart("s1")
    assert kv.s1.state == {"a": 1}


def test_a_restarted_node_handles_new_messages_in_a_new_incarnation(kv) -> None:
    kv.world.crash("s1")
    kv.world.restart("s1")
    assert kv.s1.incarnation == 1
    assert kv.s1.is_up
    kv.c1.put("s1", "k", 1)
    kv.world.run_for(10)
    assert kv.s1.state == {"k": 1}


def test_timers_from_an_earlier_incarnation_never_fire(sim) -> None:
    world = World(1)
    r = sim.Recorder(world, "r")
    r.set_timer(10, r.tick, "old")
    world.run_for(5)
    world.crash("r")
    world.restart("r")
    r.set_timer(10, r.tick, "new")
    world.run_for(100)
    assert r.fired == [(15, "new")]


def test_a_paused_node_runs_nothing_until_resumed_then_runs_what_queued_in_order(sim) -> None:
    world = World(1)
    r = sim.Recorder(world, "r")
    r.set_timer(5, r.tick, "timer")
    world.pause("r")
    world.network.send("x", "r", "m1")
    world.network.send("x", "r", "m2")
    world.run_for(100)
    assert r.got == []
    assert r.fired == []
    assert r.status is NodeStatus.PAUSED
    world.resume("r")
    world.run_for(1)
    assert r.bodies() == ["m1", "m2"]
    assert r.fired == [(100, "timer")]
    # Everything ran at the resume time, not when it was due: the node was a zombie.
    assert {t for t, _s, _b in r.got} == {100}
    # The order is the order in which things came due: the 1 ms messages before the 5 ms timer.
    assert [e.name for e in world.trace.select(node="r", kind="deliver")] == ["oneway", "oneway"]


def test_a_timer_cancelled_during_a_pause_does_not_fire_on_resume(sim) -> None:
    world = World(1)
    r = sim.Recorder(world, "r")
    keep = r.set_timer(5, r.tick, "keep")
    cancel = r.set_timer(5, r.tick, "cancel")
    world.pause("r")
    world.run_for(10)
    cancel.cancel()
    world.resume("r")
    world.run_for(1)
    assert r.fired == [(10, "keep")]
    assert not keep.cancelled


def test_crash_while_paused_discards_what_queued(sim) -> None:
    world = World(1)
    r = sim.Recorder(world, "r")
    r.set_timer(5, r.tick, "timer")
    world.pause("r")
    world.network.send("x", "r", "m")
    world.run_for(10)
    world.crash("r")
    world.restart("r")
    world.run_for(10)
    assert r.got == []
    assert r.fired == []


@pytest.mark.parametrize(
    ("setup", "operation"),
    [
        ([], "restart"),
        ([], "resume"),
        (["pause"], "pause"),
        (["pause"], "restart"),
        (["crash"], "crash"),
        (["crash"], "pause"),
        (["crash"], "resume"),
    ],
)
def test_illegal_life_cycle_transitions_raise(sim, setup: list[str], operation: str) -> None:
    world = World(1)
    sim.Recorder(world, "r")
    for step in setup:
        getattr(world, step)("r")
    with pytest.raises(IllegalNodeTransitionError, match=f"cannot {operation} r"):
        getattr(world, operation)("r")


def test_world_rejects_duplicate_and_unknown_node_names(sim) -> None:
    world = World(1)
    sim.Recorder(world, "r")
    with pytest.raises(ValueError, match="already exists"):
        sim.Recorder(world, "r")
    with pytest.raises(KeyError, match="known nodes: r"):
        world.node("s")
    assert repr(world.node("r")) == "<Recorder r up>"


def test_disk_hands_back_the_same_file_and_flushes_every_file() -> None:
    disk = Disk("n")
    log = disk.open("log", DurableList)
    assert disk.open("log", DurableList) is log
    assert disk.get("missing") is None
    disk.open("meta", dict)
    assert disk.names() == ["log", "meta"]
    log.append(1)
    disk.flush()
    log.append(2)
    assert disk.flushes == 1
    assert disk.lose_unflushed() == {"log": 1}
    assert log.items == [1]
    assert disk.lose_unflushed() == {}
