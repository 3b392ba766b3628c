"""Unit tests of ``engine.sim.sites``: named fault sites (BUGGIFY).

Method: ask sites many times under fixed options and compare the decisions and the trace; the
independence test asks one site with and without interleaved asks of another site.
"""

from __future__ import annotations

from engine.sim import SiteOptions, World


def decisions(world: World, name: str, n: int) -> list[bool]:
    return [world.sites.fire(name, "n1") for _ in range(n)]


def test_sites_are_off_by_default_and_cost_no_randomness_nor_trace() -> None:
    world = World(1)
    assert decisions(world, "a", 100) == [False] * 100
    assert not [n for n in world.rng.names() if n.startswith("site:")]
    assert world.trace.select(kind="site") == []


def test_force_fires_the_next_asks_without_randomness_and_traces_them() -> None:
    world = World(1)
    world.sites.force("coordinator.after_prepare_commit_logged", times=2)
    assert decisions(world, "coordinator.after_prepare_commit_logged", 3) == [True, True, False]
    assert world.sites.fired == {"coordinator.after_prepare_commit_logged": 2}
    assert [e.get("why") for e in world.trace.select(name="site.fire")] == ["forced", "forced"]
    assert not [n for n in world.rng.names() if n.startswith("site:")]


def test_enable_decision_is_traced_once_then_every_ask_is_traced() -> None:
    world = World(3, sites=SiteOptions(enabled=True, p_enable=1.0, p_fire=0.5))
    got = decisions(world, "s", 40)
    assert 0 < sum(got) < 40
    assert len(world.trace.select(name="site.enable")) == 1
    assert world.trace.select(name="site.enable")[0].get("enabled") is True
    assert len(world.trace.select(name="site.fire")) == sum(got)
    assert len(world.trace.select(name="site.pass")) == 40 - sum(got)
    assert world.sites.fired["s"] == sum(got)


def test_a_site_not_enabled_in_this_run_never_fires() -> None:
    world = World(3, sites=SiteOptions(enabled=True, p_enable=0.0, p_fire=1.0))
    assert decisions(world, "s", 20) == [False] * 20
    (line,) = world.trace.select(kind="site")
    assert line.get("enabled") is False


def test_decisions_depend_on_the_seed() -> None:
    opts = SiteOptions(enabled=True, p_enable=1.0, p_fire=0.5)
    runs = {tuple(decisions(World(seed, sites=opts), "s", 30)) for seed in range(5)}
    assert len(runs) > 1


def test_each_site_draws_from_its_own_stream() -> None:
    opts = SiteOptions(enabled=True, p_enable=1.0, p_fire=0.3)
    alone = World(8, sites=opts)
    a_alone = decisions(alone, "a", 50)
    mixed = World(8, sites=opts)
    a_mixed = []
    for _ in range(50):
        mixed.sites.fire("b")
        mixed.sites.fire("b")
        a_mixed.append(mixed.sites.fire("a"))
    assert a_mixed == a_alone
    assert "site:a" in mixed.rng.names()
    assert "site:b" in mixed.rng.names()
