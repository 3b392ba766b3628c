"""The copier under the new group protocols: cooperative-sticky, KIP-848, static members.

Each catalog scenario passes on a seed; M19 (reconciliation that assigns before the owner
revoked) is caught by L15-two-owners, and M15 (no KIP-447 fencing) by copier-duplicate. L15's
observer fails on a run with two holders of one partition and passes without. The two engine
bugs the consumer-protocol sweep found are rebuilt by hand:

* seed 700008: a KIP-848 member gave a partition up, another member committed offsets for it, and
  when it came back the first member read it from ``auto.offset.reset`` (it remembered that the
  group had no offset for it): the copier copied 60 records twice;
* seed 700000: the heartbeat that acknowledged a revocation was lost (NOT_COORDINATOR after a
  coordinator failover) and the next heartbeat left the owned partitions out (unchanged since the
  last one *sent*), so the coordinator kept them unreleased and nobody copied them;
* swarm seed 740139: the coordinator kept in memory a heartbeat's changes whose records it could not
  append (too few in-sync replicas); later deltas were written on top, and the coordinator that
  loaded the group after a crash found two owners of a partition (L15).
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.check.group_owners import L15_TWO_OWNERS, GroupOwnership, two_owners
from engine.client.consumer_member import ConsumerMemberState
from engine.client.message import TopicPartition
from engine.group.coordinator import GroupCoordinator
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.scenarios.mutants import get_mutant
from engine.sim.faults import FaultEntry, FaultPlan
from engine.sim.observer import RecordingObserver
from engine.weakenings import Weakenings

COOPERATIVE = BY_NAME["copier: cooperative rebalance"]
KIP848 = BY_NAME["copier: consumer-protocol group"]
STATIC = BY_NAME["copier: static members restart"]
BROKER = {
    "min.insync.replicas": 2,
    "offsets.topic.num.partitions": 3,
    "group.consumer.session.timeout.ms": 6_000,
    "group.consumer.heartbeat.interval.ms": 1_000,
}


def _members(c: Cluster, *names: str) -> list[Any]:
    out = []
    for name in names:
        m = c.consumer(
            {"group.id": "g", "client.id": name, "group.protocol": "consumer", "isolation.level": "read_committed"}
        )
        m.subscribe(["t"])
        out.append(m)
    return out


def _poll_until(consumers: list[Any], done: Any, polls: int = 400) -> bool:
    for _ in range(polls):
        for m in consumers:
            if not m.closed:
                m.poll(0.05)
        if done():
            return True
    return False


def _cluster(**weak: bool) -> Cluster:
    c = Cluster(seed=3, brokers=3, config=BROKER, weakenings=Weakenings(**weak))
    c.create_topic("t", partitions=4, replication_factor=3)
    return c


# -- the catalog scenarios ---------------------------------------------------------------------


def test_each_group_copier_scenario_passes_on_a_seed() -> None:
    for spec in (COOPERATIVE, KIP848, STATIC):
        r = run_spec(spec, 700_001)
        assert r.ok, f"{spec.name}: {r.verdict()}"


def test_m19_is_caught_by_l15_two_owners_in_the_consumer_protocol_copier() -> None:
    r = run_spec(KIP848, 1, mutant=get_mutant("M19"))
    assert L15_TWO_OWNERS in r.kinds


def test_m15_is_caught_by_copier_duplicate_in_the_consumer_protocol_copier() -> None:
    # The paused copier's session expires; without KIP-447 fencing its TxnOffsetCommit (from a
    # member the group no longer has) is taken and its stale transaction commits.
    # Seed 4 is the first that shows it (eos mutants --measure); seeds 1-3 pause the copier between transactions.
    assert "copier-duplicate" in run_spec(KIP848, 4, mutant=get_mutant("M15")).kinds


def test_a_static_copier_restarted_within_its_session_causes_no_rebalance() -> None:
    rec = RecordingObserver()
    r = run_spec(STATIC, 700_003, observers=[rec])
    assert r.ok, r.verdict()
    replaced = [e for e in rec.events if e.name == "group.static.replaced"]
    assert len(replaced) >= 3, "copiers restarted under their instance ids fewer times than this seed does"
    heal = next(e.index for e in rec.events if e.name == "phase.heal")
    # From the first restart to the heal (5 restarts, a coordinator bounce): one generation throughout.
    moved = [
        e
        for e in rec.events
        if e.name in ("group.rebalance", "group.generation") and replaced[0].index < e.index < heal
    ]
    assert not moved, moved


# -- L15: its observer fails on two holders ------------------------------------------------------


def test_two_owners_names_each_partition_held_twice() -> None:
    a, b = frozenset({("t", 0), ("t", 1)}), frozenset({("t", 1), ("t", 2)})
    assert two_owners({"a": a, "b": b}) == {("t", 1): ("a", "b")}
    assert two_owners({"a": a, "b": frozenset({("t", 3)})}) == {}


def test_l15_fails_when_reconciliation_assigns_before_the_owner_revoked() -> None:
    for weakened, expect in ((False, True), (True, False)):
        c = _cluster(revoke_before_assign=weakened)
        watcher = GroupOwnership.attach(c)
        pair = _members(c, "a", "b")
        assert _poll_until(pair, lambda pair=pair: [len(m.assigned) for m in pair] == [2, 2])
        found = [x.kind for x in watcher.anomalies]
        assert (L15_TWO_OWNERS in found) is expect, (weakened, watcher.anomalies)


# -- the two engine bugs, rebuilt by hand ------------------------------------------------------


def test_a_partition_given_back_starts_from_the_offset_another_member_committed() -> None:
    """Seed 700008: a read the partition from 0 again after b had committed 5 for it."""
    c = _cluster(revoke_before_assign=True)
    p = c.producer()
    for part in range(4):
        for i in range(10):
            p.produce("t", value=f"v{i}", partition=part)
    p.flush(10)
    (a,) = _members(c, "a")
    assert _poll_until([a], lambda: len(a.assigned) == 4)
    assert a.position([TopicPartition("t", 0)])[0].offset >= 0  # a asked the group: no offset (none committed)
    (b,) = _members(c, "b")
    assert _poll_until([a, b], lambda: len(a.assigned) == 2 and len(b.assigned) == 2)
    moved = b.assigned
    b.commit(offsets=[TopicPartition(t, q, 5) for t, q in moved], asynchronous=False)
    b.close()
    read: dict[tuple[str, int], list[int]] = {k: [] for k in moved}
    for _ in range(400):
        for m in a.consume(100, timeout=0.05):
            if (m.topic(), m.partition()) in read:
                read[(m.topic(), m.partition())].append(m.offset())
        if all(len(v) and v[-1] == 9 for v in read.values()):
            break
    assert {k: v[0] for k, v in read.items()} == dict.fromkeys(moved, 5), read


def test_the_heartbeat_after_a_failed_one_carries_the_owned_partitions() -> None:
    """Seed 700000: the revocation's acknowledgement was lost and never sent again."""
    c = _cluster(revoke_before_assign=True)
    (a,) = _members(c, "a")
    assert _poll_until([a], lambda: len(a.assigned) == 4)
    (b,) = _members(c, "b")
    for _ in range(200):  # b joins; a hears it must revoke two partitions (a does not poll yet)
        b.poll(0.05)
        if a.group.state is ConsumerMemberState.RECONCILING:
            break
    assert a.group.state is ConsumerMemberState.RECONCILING
    # a's next heartbeat, the acknowledgement its poll sends at once, is lost.
    drop = FaultEntry.of(c.now_ms, "drop", src=a.name, body_type="ConsumerGroupHeartbeatRequest", count=1)
    c.schedule_faults(FaultPlan((drop,)))
    c.run_for(1)  # the rule is in place before a polls
    assert _poll_until([a, b], lambda: len(a.assigned) == 2 and len(b.assigned) == 2, polls=600), (
        a.assigned,
        b.assigned,
    )


def test_a_reconciliation_queued_before_the_member_was_fenced_assigns_nothing() -> None:
    """Swarm seeds 710047, 710060, 710100, 710134: a paused copier kept its stale assignment after the fence."""
    c = _cluster(revoke_before_assign=True)
    (a,) = _members(c, "a")
    assert _poll_until([a], lambda: len(a.assigned) == 4)
    (b,) = _members(c, "b")
    for _ in range(200):  # b hears its assignment; its poll would take it, but b is paused first
        a.poll(0.05)
        if b.group.state is ConsumerMemberState.RECONCILING:
            break
    assert b.group.state is ConsumerMemberState.RECONCILING and not b.assigned
    c.world.pause(b.name)
    assert _poll_until([a], lambda: len(a.assigned) == 4 and c.now_ms > 8_000, polls=600)  # b's session expired
    c.world.resume(b.name)
    assert _poll_until(
        [a, b], lambda: b.group.fenced_by is not None and b.group.state is not ConsumerMemberState.FENCED
    )
    assert not set(b.assigned) & set(a.assigned), (a.assigned, b.assigned)


def test_a_member_whose_assignment_answer_was_lost_gets_it_with_its_next_full_heartbeat() -> None:
    """Swarm seed 710165: the answer giving a copier its partitions was lost; the next heartbeats
    left out the (empty) owned set, so none was a full one, the coordinator never sent the
    assignment again, and the partitions it thought the copier owned were never read."""
    c = _cluster(revoke_before_assign=True)
    (a,) = _members(c, "a")
    assert _poll_until([a], lambda: len(a.assigned) == 4)
    (b,) = _members(c, "b")
    assert _poll_until([a, b], lambda: b.group.member_epoch > 0)  # b joined; its partitions are a's until a revokes
    lose = FaultEntry.of(c.now_ms, "drop", dst=b.name, body_type="ConsumerGroupHeartbeatResponse", count=4)
    c.schedule_faults(FaultPlan((lose,)))
    assert _poll_until([a, b], lambda: len(a.assigned) == 2 and len(b.assigned) == 2, polls=800), (
        a.assigned,
        b.assigned,
    )


def test_a_stale_reconciliation_takes_no_partition_the_coordinator_gave_away_meanwhile() -> None:
    """Swarm seed 710015: a member still reconciling its first assignment sent a full heartbeat
    (after a failed one) saying it owned nothing; the coordinator gave half of it to a new member,
    and the old reconciliation, run at the next poll, took all of it: two owners of in-8."""
    c = _cluster(revoke_before_assign=True)
    (a,) = _members(c, "a")
    for _ in range(100):  # a hears its four partitions but does not poll: its reconciliation waits
        c.run_for(50)
        if a.group.state is ConsumerMemberState.RECONCILING:
            break
    assert a.group.state is ConsumerMemberState.RECONCILING and not a.assigned
    (b,) = _members(c, "b")
    for _ in range(100):  # b joins; the coordinator asks a to give two partitions up
        b.poll(0.05)
        if b.group.member_epoch > 0:
            break
    # The coordinator's broker crashes: a's heartbeat fails, and its next one, to the new
    # coordinator, is a full one saying a owns nothing (its reconciliation has not run).
    c.world.crash(f"broker-{a.group.coordinator}")
    for _ in range(800):
        b.poll(0.05)
        if len(b.assigned) == 2:
            break
    assert len(b.assigned) == 2
    for _ in range(200):
        a.poll(0.05)
        b.poll(0.05)
        assert not set(a.assigned) & set(b.assigned), (a.assigned, b.assigned)
    assert len(a.assigned) == 2


def test_an_acknowledgement_carries_the_owned_partitions_even_when_unchanged() -> None:
    """Swarm seed 710008 (kept as a seed, not rebuilt by hand): a copier's stale reconciliation
    took nothing (its newest target had taken the partition back), so its owned set equalled the
    one it last sent and the acknowledgement left it out; the coordinator, revoking that partition,
    read the absent set as "still owning" it, and in-8 was never copied."""
    r = run_spec(KIP848, 710_008, swarm=True)
    assert r.ok, r.verdict()


def test_a_heartbeat_whose_records_were_not_written_leaves_the_coordinator_as_it_was() -> None:
    """Swarm seed 740139: the coordinator, alone in the ISR of its ``__consumer_offsets`` partition
    (too few in-sync replicas), could not append a heartbeat's records but kept its changes in
    memory (a new member, a new target, a revocation); once the ISR grew back, later heartbeats wrote
    only their own deltas on top, and the coordinator that loaded the group after a crash found the
    first member still holding the partitions the second one held: two owners (L15)."""
    c = Cluster(seed=3, brokers=3, config={**BROKER, "replica.lag.time.max.ms": 1_000}, weakenings=Weakenings())
    c.create_topic("t", partitions=4, replication_factor=3)
    watcher = GroupOwnership.attach(c)
    (a,) = _members(c, "a")
    assert _poll_until([a], lambda: len(a.assigned) == 4)
    home = f"broker-{a.group.coordinator}"
    (coordinator,) = (x.consumer for x in c.world.nodes[home].extensions if isinstance(x, GroupCoordinator))
    written = coordinator.groups["g"].view()
    others = [f"broker-{i}" for i in (1, 2, 3) if f"broker-{i}" != home]
    c.world.network.partition([home], others)  # the clients still reach it; its followers do not
    c.run_for(3_000)  # the ISR shrinks to the coordinator alone: its appends now fail
    (b,) = _members(c, "b")
    for _ in range(40):  # b joins and a heartbeats; nothing they change can be written
        a.poll(0.05)
        b.poll(0.05)
    # Nothing was written, so nothing changed: a keeps its four partitions, b has none.
    unwritten = (len(a.assigned), len(b.assigned), coordinator.groups["g"].view() == written)
    c.world.network.heal_partitions()
    assert _poll_until([a, b], lambda: len(a.assigned) == 2 and len(b.assigned) == 2, polls=800)
    c.world.crash(home)  # the next coordinator loads what was written
    for _ in range(200):
        a.poll(0.05)
        b.poll(0.05)
    assert L15_TWO_OWNERS not in [x.kind for x in watcher.anomalies], watcher.anomalies
    assert len(a.assigned) == 2 and len(b.assigned) == 2
    assert unwritten == (4, 0, True)
