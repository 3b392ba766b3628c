"""KIP-429 incremental rebalancing of the engine's consumers, across faults.

Goal: with ``cooperative-sticky`` a partition never has two owners at once: a member gives a
partition up (revokes it) before another is given it, through members joining, a member crash and
a coordinator failover; every partition ends with exactly one owner, and members that keep a
partition keep it through the rebalance. Method: three-broker clusters on fixed seeds and the
engine's own consumers without rebalance callbacks (so each change is made as the group answers,
as librdkafka does without a rebalance callback); after every simulated event the check
collects each live member's assignment and fails on a partition held by two.
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for

GROUP = "g"
PARTITIONS = 6
CONFIG = {
    "group.id": GROUP,
    "partition.assignment.strategy": "cooperative-sticky",
    "session.timeout.ms": 6_000,
    "heartbeat.interval.ms": 500,
}


class Owners:
    """Members and the one-owner invariant, checked after every event."""

    def __init__(self, seed: int) -> None:
        self.c = Cluster(seed=seed, brokers=3, config={"offsets.topic.num.partitions": 3})
        self.c.create_topic("t", partitions=PARTITIONS, replication_factor=3)
        self.members: dict[str, Any] = {}
        #: member -> the partitions it gave up, in order, and the last assignment seen.
        self.revoked: dict[str, list[tuple[str, int]]] = {}
        self.last: dict[str, set[tuple[str, int]]] = {}
        self.violations: list[str] = []
        #: (generation, member) -> what it held when it joined that generation / was given in it.
        self.held: dict[tuple[int, str], set[tuple[str, int]]] = {}
        self.given: dict[tuple[int, str], set[tuple[str, int]]] = {}

    def add(self, name: str) -> Any:
        consumer = self.c.consumer({**CONFIG, "client.id": name})
        consumer.subscribe(["t"])
        self.revoked[name] = []
        self.last[name] = set()
        self.members[name] = consumer
        return consumer

    def check(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        for name, m in sorted(self.members.items()):
            if not m.is_up or m.closed:
                continue
            now = set(m.assigned)
            self.revoked[name].extend(sorted(self.last[name] - now))
            self.last[name] = now
            for tp in m.assigned:
                if tp in seen:
                    self.violations.append(f"{self.c.now_ms} ms: {tp} owned by {seen[tp]} and {name}")
                seen[tp] = name
            g = m.group
            if g.state.name == "SYNCING":
                self.held.setdefault((g.generation_id, name), set(m.assigned))
            elif g.state.name == "STABLE":
                given = self.given.setdefault((g.generation_id, name), set())
                given |= set(m.assigned)
                for (gen, other), held in self.held.items():
                    both = given & held
                    if gen == g.generation_id and other != name and both:
                        self.violations.append(f"generation {gen}: {name} given {sorted(both)} {other} still held")

    def live(self) -> list[str]:
        return [n for n, m in sorted(self.members.items()) if m.is_up and not m.closed]

    def settled(self) -> bool:
        owned = sorted(tp for n in self.live() for tp in self.members[n].assigned)
        sizes = [len(self.members[n].assigned) for n in self.live()]
        return owned == [("t", p) for p in range(PARTITIONS)] and max(sizes) - min(sizes) <= 1

    def run_until_settled(self, ms: int = 60_000) -> None:
        end = self.c.now_ms + ms

        def done() -> bool:
            self.check()
            return (self.settled() and self.c.now_ms >= end - ms + 2_000) or self.c.now_ms >= end

        self.c.run_until(done)
        assert not self.violations, self.violations[:3]
        assert self.settled(), {n: self.members[n].assigned for n in self.live()}


def test_members_joining_one_by_one_move_only_what_they_take() -> None:
    o = Owners(seed=1)
    o.add("a")
    o.run_until_settled()
    o.add("b")
    o.run_until_settled()
    o.add("c")
    o.run_until_settled()
    a, b, c = (o.members[n] for n in "abc")
    assert sorted(len(m.assigned) for m in (a, b, c)) == [2, 2, 2]
    assert a.rebalance_protocol() == "COOPERATIVE"
    # a gave up exactly what b and then c took, b what c took; nothing was revoked and given back.
    assert len(o.revoked["a"]) == PARTITIONS - len(a.assigned)
    assert len(set(o.revoked["a"]) | set(a.assigned)) == PARTITIONS
    assert not o.revoked["c"]


def test_a_member_crash_hands_its_partitions_to_the_others_without_two_owners() -> None:
    o = Owners(seed=2)
    for n in "abc":
        o.add(n)
        o.run_until_settled()
    kept = {n: list(o.members[n].assigned) for n in "ab"}
    o.c.crash("c")
    o.run_until_settled(90_000)
    for n in "ab":  # the survivors kept what they had and only gained
        assert set(kept[n]) <= set(o.members[n].assigned)


def test_coordinator_failover_during_a_cooperative_rebalance() -> None:
    o = Owners(seed=3)
    o.add("a")
    o.add("b")
    o.run_until_settled()
    coordinator = o.c.leader(CONSUMER_OFFSETS_TOPIC, partition_for(GROUP, 3))
    o.add("c")
    o.c.run_for(300)  # c's JoinGroup is under way
    o.c.crash(coordinator)
    o.run_until_settled(120_000)
    o.c.restart(coordinator)
    o.run_until_settled(60_000)


def test_a_paused_cooperative_member_loses_its_partitions_and_on_lost_gets_them() -> None:
    o = Owners(seed=4)
    events: list[tuple[str, list[int]]] = []
    a = o.c.consumer({**CONFIG, "client.id": "a"})
    a.subscribe(
        ["t"],
        on_assign=lambda _c, tps: events.append(("assign", [t.partition for t in tps])),
        on_revoke=lambda _c, tps: events.append(("revoke", [t.partition for t in tps])),
        on_lost=lambda _c, tps: events.append(("lost", [t.partition for t in tps])),
    )
    o.members["a"] = a
    o.revoked["a"], o.last["a"] = [], set()
    o.add("b")
    for _ in range(100):
        a.poll(0.1)
    o.run_until_settled()
    held = sorted(p for _t, p in a.assigned)
    o.c.pause("a")
    o.c.run_for(10_000)  # past session.timeout.ms: b owns all six
    assert len(o.members["b"].assigned) == PARTITIONS
    o.c.resume("a")
    for _ in range(50):
        a.poll(0.1)
    assert ("lost", held) in events, events
    assert not [e for e in events[events.index(("lost", held)) :] if e[0] == "revoke"]
