"""Two Kafka clusters in one simulated world: regions share the clock, not the node names or the faults.

Method: build a source cluster and a target ``Cluster.beside`` it, produce on each and read each
back; run time from either side and compare the clocks; crash a target broker and check the
source; run a small two-cluster workload twice on one seed and compare the fingerprints; look for
the target's events in the source's trace under ``target/``. The world-level parts (random streams
under the region's prefix, heal and phases reaching regions, the scheduler's watch staying the
root's, refused names) are checked on bare worlds.
"""

from __future__ import annotations

import pytest

from engine.cluster import Cluster
from engine.errors import ConfigError
from engine.sim import World
from engine.sim.node import Node, NodeStatus

CONFIG = {"transaction.state.log.num.partitions": 5, "offsets.topic.num.partitions": 5}


def _pair(seed: int = 3) -> tuple[Cluster, Cluster]:
    source = Cluster(seed=seed, brokers=3, config=CONFIG)
    target = Cluster.beside(source, "target", brokers=3, config=CONFIG)
    for c in (source, target):
        c.create_topic("t", partitions=1, replication_factor=3)
    return source, target


def _read(cluster: Cluster, topic: str = "t") -> list[str]:
    reader = cluster.consumer({"isolation.level": "read_committed"})
    reader.assign([(topic, 0)])
    values: list[str] = []
    while True:
        msgs = reader.consume(100, timeout=0.2)
        if not msgs:
            return values
        values.extend(m.value() for m in msgs)


def _workload(seed: int) -> str:
    source, target = _pair(seed)
    for c, tag in ((source, "s"), (target, "d")):
        p = c.producer({"transactional.id": f"{tag}-txn", "linger.ms": 0})
        p.init_transactions()
        p.begin_transaction()
        for i in range(3):
            p.produce("t", value=f"{tag}-{i}")
        p.commit_transaction()
    target.crash(2)
    source.run_for(300)
    target.restart(2)
    target.run_for(300)
    return source.fingerprint()


def test_records_stay_in_their_own_cluster() -> None:
    source, target = _pair()
    ps, pt = source.producer({"linger.ms": 0}), target.producer({"linger.ms": 0})
    ps.produce("t", value="from-source")
    pt.produce("t", value="from-target-1")
    pt.produce("t", value="from-target-2")
    ps.flush()
    pt.flush()
    assert _read(source) == ["from-source"]
    assert _read(target) == ["from-target-1", "from-target-2"]
    assert ps.name == pt.name == "producer-1"  # one name in each namespace
    assert (source.name, target.name) == ("cluster", "target")


def test_one_clock_whichever_side_runs_it() -> None:
    source, target = _pair()
    assert source.now_ms == target.now_ms
    target.run_for(250)
    assert source.now_ms == target.now_ms
    before = source.now_ms
    source.run_for(40)
    assert target.now_ms == source.now_ms == before + 40


def test_a_crash_in_the_target_does_not_touch_the_source() -> None:
    source, target = _pair()
    target.crash(1)
    target.run_for(500)
    assert target.brokers[1].status is NodeStatus.DOWN
    assert all(b.status is NodeStatus.UP for b in source.brokers.values())
    assert all(n.is_up for n in source.world.nodes.values())
    p = source.producer({"linger.ms": 0})
    p.produce("t", value="still-fine")
    assert p.flush(timeout=5) == 0
    crashes = [e.node for e in source.world.trace.events if e.name == "crash"]
    assert crashes == ["target/broker-1"]


def test_same_seed_same_fingerprint_and_the_target_counts() -> None:
    assert _workload(5) == _workload(5)
    assert _workload(5) != _workload(6)


def test_region_events_appear_in_the_parent_trace_with_the_prefix() -> None:
    source, target = _pair()
    own = [e for e in target.world.trace.events if e.node == "broker-1"]
    relayed = [e for e in source.world.trace.events if e.node == "target/broker-1"]
    assert own and [(e.time_ms, e.kind, e.name, e.detail) for e in own] == [
        (e.time_ms, e.kind, e.name, e.detail) for e in relayed
    ]
    assert not any(e.node.startswith("target/") for e in target.world.trace.events)
    assert target.fingerprint() == source.fingerprint()


def test_beside_checks_its_arguments() -> None:
    source = Cluster(seed=1, brokers=1)
    with pytest.raises(TypeError, match="source Cluster first"):
        Cluster.beside("source")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cluster name"):
        Cluster.beside(source, "a/b")
    with pytest.raises(ConfigError):
        Cluster.beside(source, "target", brokers=0)
    with pytest.raises(TypeError, match="config must be a dict"):
        Cluster.beside(source, "target", config=[1])  # type: ignore[arg-type]
    assert not source.world.regions  # nothing was built by a refused call
    Cluster.beside(source, "target", brokers=1)
    with pytest.raises(ValueError, match="already runs beside 'cluster'"):
        Cluster.beside(source, "target", brokers=1)


# -- bare worlds ---------------------------------------------------------------------------------


def test_a_region_draws_from_the_parent_streams_under_its_prefix() -> None:
    root = World(7)
    region = root.region("east")
    assert region.rng.stream("network") is root.rng.stream("east/network")
    assert "network" in region.rng.names()
    assert region.seed == root.seed and region.scheduler is root.scheduler and region.root is root
    inner = region.region("rack")
    Node(inner, "n1")
    inner.crash("n1")
    assert root.trace.select(name="crash")[0].node == "east/rack/n1"


def test_parent_heal_and_phases_reach_the_regions() -> None:
    root = World(1)
    region = root.region("target")
    node = Node(region, "n1")
    region.crash("n1")
    root.heal()
    assert node.status is NodeStatus.UP
    assert region.phase == "heal" and region.faults.active is False
    root.set_phase("liveness")
    assert region.phase == "liveness"


def test_a_region_keeps_the_root_watch_and_refuses_bad_names() -> None:
    class Ticker:
        def on_advance(self, world: World, from_ms: int, to_ms: int) -> None:
            pass

    root = World(1, observers=[Ticker()])
    watch = root.scheduler.watch
    region = root.region("target")
    assert root.scheduler.watch is watch
    with pytest.raises(ValueError, match="attach it to the root world"):
        region.attach(Ticker())
    with pytest.raises(ValueError, match="already exists"):
        root.region("target")
    with pytest.raises(ValueError, match="without '/'"):
        root.region("a/b")
    with pytest.raises(TypeError, match="must be a str"):
        root.region(3)  # type: ignore[arg-type]
