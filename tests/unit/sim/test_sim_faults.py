"""Unit tests of ``engine.sim.faults``: plans as printable data, the injector, random plans, swarm.

Method: each fault kind is applied through the injector to a small world and its effect is
checked on the world itself (node status, blocked and clogged links, installed rules). Random
plans are checked for determinism per seed and for being self-healing by construction.
"""

from __future__ import annotations

import random

import pytest

from engine.sim import FaultEntry, FaultPlan, IllegalNodeTransitionError, NodeStatus, World, random_plan, swarm_kinds
from engine.sim.faults import DEFAULT_RANDOM_KINDS, RANDOM_KINDS

NODES = ["n1", "n2", "n3", "n4"]


def world_of(sim, names=NODES) -> World:
    world = World(1)
    for name in names:
        sim.Recorder(world, name)
    return world


# -- data -------------------------------------------------------------------------------------


def test_entries_normalise_params_and_print_one_line_each() -> None:
    e = FaultEntry.of(120, "partition", b=["n3"], a=["n1", "n2"])
    assert e.params == (("a", ("n1", "n2")), ("b", ("n3",)))
    assert e.param("a") == ("n1", "n2")
    assert e.param("missing", 0) == 0
    assert str(e) == "     120 partition          a=n1,n2 b=n3"
    plan = FaultPlan((FaultEntry.of(500, "heal"), e))
    assert str(plan) == "     120 partition          a=n1,n2 b=n3\n     500 heal"
    assert str(FaultPlan()) == "(no faults)"
    assert len(plan) == 2
    assert plan.kinds() == ["heal", "partition"]
    assert plan.without(0).entries == (FaultEntry.of(500, "heal"),)
    assert hash(plan) == hash(FaultPlan((e, FaultEntry.of(500, "heal"))))


def test_started_kinds_names_each_fault_with_its_flags_and_leaves_out_the_ends() -> None:
    plan = FaultPlan(
        (
            FaultEntry.of(1, "crash", node="n1", lose_unflushed_tail=True),
            FaultEntry.of(2, "crash", node="n2", lose_unflushed_tail=False),
            FaultEntry.of(3, "restart", node="n1"),
            FaultEntry.of(4, "drop", src="n1", count=2),
            FaultEntry.of(5, "heal"),
        )
    )
    assert plan.started_kinds() == {"crash+lose_unflushed_tail", "crash", "drop"}
    assert FaultPlan().started_kinds() == frozenset()


def test_unknown_fault_kind_is_rejected_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown fault kind 'meteor'; use one of crash"):
        FaultEntry.of(0, "meteor")


# -- the injector -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "check"),
    [
        ([("crash", {"node": "n1"})], lambda w: w.node("n1").status is NodeStatus.DOWN),
        ([("crash", {"node": "n1"}), ("restart", {"node": "n1"})], lambda w: w.node("n1").incarnation == 1),
        ([("pause", {"node": "n2"})], lambda w: w.node("n2").status is NodeStatus.PAUSED),
        ([("pause", {"node": "n2"}), ("resume", {"node": "n2"})], lambda w: w.node("n2").is_up),
        ([("isolate", {"node": "n1"})], lambda w: w.network.isolated == {"n1"} and w.network._cut("n4", "n1")),
        (
            [("partition", {"a": ["n1"], "b": ["n2"]})],
            lambda w: w.network.blocked == {("n1", "n2"), ("n2", "n1")},
        ),
        ([("partition_one_way", {"a": ["n1"], "b": ["n2"]})], lambda w: w.network.blocked == {("n1", "n2")}),
        ([("partition", {"a": ["n1"], "b": ["n2"]}), ("heal", {})], lambda w: w.network.blocked == set()),
        ([("clog", {"a": ["n1"], "b": ["n2"]})], lambda w: ("n2", "n1") in w.network.clogged),
        (
            [("clog", {"a": ["n1"], "b": ["n2"]}), ("unclog", {"a": ["n1"], "b": ["n2"]})],
            lambda w: not w.network.clogged,
        ),
        ([("drop", {"src": "n1", "count": 2})], lambda w: w.network._rules[0].rule.action == "drop"),
        ([("delay", {"dst": "n2", "delay_ms": 30})], lambda w: w.network._rules[0].rule.delay_ms == 30),
        ([("duplicate", {"kind": "request"})], lambda w: w.network._rules[0].rule.kind == "request"),
        ([("hold", {"dst": "n2"})], lambda w: w.network._rules[0].rule.action == "hold"),
        ([("hold", {"dst": "n2", "count": None}), ("release", {"rule": 1})], lambda w: not w.network._rules),
    ],
)
def test_the_injector_applies_each_kind(sim, entries, check) -> None:
    world = world_of(sim)
    plan = FaultPlan(tuple(FaultEntry.of(10 * (i + 1), kind, **p) for i, (kind, p) in enumerate(entries)))
    world.schedule_faults(plan)
    world.run_for(100)
    assert check(world)
    assert world.faults.applied == list(plan.entries)
    assert world.trace.select(kind="fault")


def test_a_planned_hold_keeps_messages_until_the_planned_release(sim) -> None:
    world = world_of(sim)
    plan = FaultPlan((FaultEntry.of(0, "hold", dst="n2", count=None), FaultEntry.of(50, "release", rule=1)))
    world.schedule_faults(plan)
    world.run_for(1)
    world.network.send("n1", "n2", "a")
    world.run_for(20)
    assert world.node("n2").got == []
    world.run_for(40)
    assert world.node("n2").bodies() == ["a"]
    world.network.send("n1", "n2", "b")
    world.run_for(10)
    assert world.node("n2").bodies() == ["a", "b"]


def test_a_planned_release_without_a_rule_releases_everything(sim) -> None:
    world = world_of(sim)
    world.schedule_faults(FaultPlan((FaultEntry.of(0, "hold", count=None), FaultEntry.of(50, "release"))))
    world.run_for(1)
    world.network.send("n1", "n2", "a")
    world.run_for(100)
    assert world.node("n2").bodies() == ["a"]


IMPOSSIBLE_STEPS = [
    ("resume", {"node": "n1"}, "n1", "it is up, resume needs paused"),
    ("restart", {"node": "n2"}, "n2", "it is up, restart needs down"),
    ("pause", {"node": "n3"}, "n3", "it is down, pause needs up"),
    ("crash", {"node": "n3"}, "n3", "it is down, crash needs up or paused"),
]


def test_a_planned_step_the_node_state_forbids_is_skipped_and_traced_as_skipped(sim) -> None:
    # A plan is drawn before the run and cannot know that a node already is where the step
    # would take it (it crashed on its own, the world healed it, a workload paused it).
    world = world_of(sim)
    world.crash("n3")
    plan = FaultPlan(
        tuple(FaultEntry.of(10 * (i + 1), kind, **p) for i, (kind, p, _, _) in enumerate(IMPOSSIBLE_STEPS))
    )
    world.schedule_faults(plan)
    world.run_for(100)
    assert [world.node(n).status for n in NODES] == [NodeStatus.UP, NodeStatus.UP, NodeStatus.DOWN, NodeStatus.UP]
    skipped = world.trace.select(name="fault.skipped")
    assert [(e.node, dict(e.detail)["kind"]) for e in skipped] == [(n, k) for k, _, n, _ in IMPOSSIBLE_STEPS]
    for event, (_, _, _, why) in zip(skipped, IMPOSSIBLE_STEPS, strict=True):
        assert why in dict(event.detail)["why"]
    # Only the skip is traced: no "resume" / "restart" / "pause" event for a step that did not happen.
    assert [e.name for e in world.trace.select(kind="fault")] == ["crash"] + ["fault.skipped"] * 4


def test_a_step_the_node_state_forbids_still_raises_when_asked_directly_and_traces_nothing(sim) -> None:
    world = world_of(sim)
    before = len(world.trace)
    for operation in ("resume", "restart"):
        with pytest.raises(IllegalNodeTransitionError, match=f"cannot {operation} n1"):
            getattr(world, operation)("n1")
    assert len(world.trace) == before


# -- random plans -----------------------------------------------------------------------------


def test_random_plan_is_a_function_of_the_seed() -> None:
    plan = random_plan(random.Random(42), NODES, duration_ms=10_000)
    assert plan == random_plan(random.Random(42), list(reversed(NODES)), duration_ms=10_000)
    assert plan != random_plan(random.Random(43), NODES, duration_ms=10_000)
    assert len(plan) > 10


@pytest.mark.parametrize("seed", range(20))
def test_random_plan_is_self_healing_within_its_window(sim, seed: int) -> None:
    plan = random_plan(random.Random(seed), NODES, duration_ms=5_000, kinds=RANDOM_KINDS, start_ms=100)
    assert all(100 <= e.at_ms < 5_100 for e in plan.entries)
    world = world_of(sim)
    world.schedule_faults(plan)
    world.run_for(5_200)
    assert all(n.is_up for n in world.nodes.values())
    assert not world.trace.select(name="fault.skipped")  # on its own, a random plan never asks the impossible
    assert world.network.blocked == set()
    assert world.network.clogged == set()
    assert world.network.held == {}
    # Only message rules whose count was not used up may remain; World.heal removes those.
    world.heal()
    assert world.network._rules == []


def test_random_plan_pairs_each_start_with_its_end() -> None:
    plan = random_plan(random.Random(9), NODES, duration_ms=20_000, kinds=RANDOM_KINDS)
    ends = {"crash": "restart", "pause": "resume", "clog": "unclog", "hold": "release"}
    counts = {k: sum(1 for e in plan.entries if e.kind == k) for k in [*ends, *ends.values()]}
    for start, end in ends.items():
        assert counts[start] == counts[end] > 0, (start, counts)


def test_random_plan_never_overlaps_crash_and_pause_on_one_node() -> None:
    plan = random_plan(random.Random(5), ["n1", "n2"], duration_ms=20_000, mean_interval_ms=50)
    down: dict[str, str] = {}
    for e in plan.entries:
        node = e.param("node")
        if e.kind in ("crash", "pause"):
            assert node not in down, str(plan)
            down[node] = e.kind
        elif e.kind in ("restart", "resume"):
            assert down.pop(node) == ("crash" if e.kind == "restart" else "pause")


def test_random_plan_rejects_kinds_it_cannot_start_and_handles_empty_input() -> None:
    with pytest.raises(ValueError, match="cannot start restart"):
        random_plan(random.Random(1), NODES, duration_ms=100, kinds=["restart"])
    assert random_plan(random.Random(1), [], duration_ms=100) == FaultPlan()
    assert random_plan(random.Random(1), NODES, duration_ms=100, kinds=[]) == FaultPlan()
    assert set(DEFAULT_RANDOM_KINDS) <= set(RANDOM_KINDS)


def test_swarm_kinds_picks_a_non_empty_subset_that_depends_on_the_seed() -> None:
    subsets = {tuple(swarm_kinds(random.Random(s), RANDOM_KINDS)) for s in range(50)}
    assert all(sub and set(sub) <= set(RANDOM_KINDS) for sub in subsets)
    assert len(subsets) > 10
    assert swarm_kinds(random.Random(3), RANDOM_KINDS) == swarm_kinds(random.Random(3), list(reversed(RANDOM_KINDS)))
    assert swarm_kinds(random.Random(0), ["crash"]) == ["crash"]
