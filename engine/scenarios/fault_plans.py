"""Fault plans: what each catalog scenario does to the cluster, as a function of the seed.

A fault plan function takes the seed's ``faults`` stream and the :class:`~engine.scenarios.harness.Run`
and returns a :class:`~engine.sim.faults.FaultPlan` (timed fault entries). A plan may also arm
BUGGIFY sites on the run's world and return an empty plan. The catalog (``catalog.py``) pairs
each with a workload; the harness uses :func:`swarm` when a run asks for swarm mode.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for
from engine.errors import KafkaError
from engine.sim.faults import FaultEntry, FaultPlan, random_plan, swarm_kinds

if TYPE_CHECKING:
    from engine.scenarios.harness import Run

#: The broker names of a three-broker scenario cluster.
BROKERS = ("broker-1", "broker-2", "broker-3")


def _times(rng: random.Random, n: int, start: int, end: int) -> list[int]:
    return sorted(rng.randint(start, end) for _ in range(n))


def _lost_acks(times: list[int], count: Callable[[], int]) -> list[FaultEntry]:
    """At each of ``times``, drop the next ``count()`` ProduceResponses (drawn in time order)."""
    return [FaultEntry.of(t, "drop", kind="response", body_type="ProduceResponse", count=count()) for t in times]


def lost_acks(rng: random.Random, run: Run) -> FaultPlan:
    """Drop a few ProduceResponses after the leader appended (lost acks)."""
    return FaultPlan(tuple(_lost_acks(_times(rng, 4, 200, 3_500), lambda: rng.randint(1, 2))))


def reorders(rng: random.Random, run: Run) -> FaultPlan:
    """Delay single produce requests past their successors, and lose an answer now and then."""
    entries = [
        FaultEntry.of(t, "delay", body_type="ProduceRequest", delay_ms=rng.randint(3, 30), count=1)
        for t in _times(rng, 6, 200, 3_500)
    ]
    entries += _lost_acks(_times(rng, 2, 200, 3_500), lambda: 1)
    return FaultPlan(tuple(entries))


def lost_ack_burst(rng: random.Random, run: Run) -> FaultPlan:
    """Lose 5–8 consecutive answers: every in-flight batch is retried, the oldest first."""
    return FaultPlan(tuple(_lost_acks(_times(rng, 3, 300, 3_500), lambda: rng.randint(5, 8))))


def rolling_crashes(rng: random.Random, run: Run) -> FaultPlan:
    """Crash brokers one at a time (hard bounce), each back after a few seconds."""
    entries = []
    t = rng.randint(300, 800)
    for b in rng.sample(BROKERS, 2):
        entries.append(FaultEntry.of(t, "crash", node=b))
        entries.append(FaultEntry.of(t + rng.randint(2_500, 3_500), "restart", node=b))
        t += rng.randint(3_800, 4_500)
    return FaultPlan(tuple(entries))


def crashes_and_lost_acks(rng: random.Random, run: Run) -> FaultPlan:
    """Rolling broker crashes plus a few lost produce acks (retried, and deduplicated by the idempotent producer)."""
    entries = list(rolling_crashes(rng, run).entries) + list(lost_acks(rng, run).entries)
    return FaultPlan(tuple(sorted(entries, key=lambda e: e.at_ms)))


def late_crashes_and_lost_acks(rng: random.Random, run: Run) -> FaultPlan:
    """:func:`crashes_and_lost_acks` 1.5 s later: past a workload's seeding, so the faults meet its processes."""
    plan = crashes_and_lost_acks(rng, run)
    return FaultPlan(tuple(dataclasses.replace(e, at_ms=e.at_ms + 1_500) for e in plan.entries))


def unclean_setup(rng: random.Random, run: Run) -> FaultPlan:
    """Cut broker-1 (leader of t-0 and t-1's second replica) off its followers, then crash it."""
    t0 = rng.randint(300, 600)
    crash = t0 + rng.randint(2_200, 2_800)
    return FaultPlan(
        (
            FaultEntry.of(t0, "partition", a=("broker-1",), b=("broker-2", "broker-3")),
            FaultEntry.of(crash, "crash", node="broker-1"),
            FaultEntry.of(crash + 50, "heal"),
            FaultEntry.of(crash + rng.randint(3_000, 4_000), "restart", node="broker-1"),
        )
    )


def isolated_leader(rng: random.Random, run: Run) -> FaultPlan:
    """Cut the first leader off the other brokers and the controller, but not from clients."""
    t0 = rng.randint(300, 900)
    return FaultPlan(
        (
            FaultEntry.of(t0, "partition", a=("broker-1",), b=("broker-2", "broker-3", "controller")),
            FaultEntry.of(t0 + rng.randint(2_500, 3_500), "heal"),
        )
    )


def coordinator_failover(rng: random.Random, run: Run) -> FaultPlan:
    """Crash coordinators around PREPARE_COMMIT (BUGGIFY sites): before the markers, and by power loss after."""
    run.world.sites.force("coordinator.crash_after_prepare_logged", times=1)
    run.world.sites.force("coordinator.power_loss_after_prepare_answered", times=2)
    return FaultPlan()


def group_coordinator_bounce(rng: random.Random, run: Run, group_id: str = "copiers") -> FaultPlan:
    """Crash the broker that coordinates ``group_id`` once (hard bounce) mid-run; it restarts 2.5-3.5 s later.

    The coordinator is the leader of the group's ``__consumer_offsets`` partition *when the crash
    fires* (the topic is made on the first FindCoordinator, so it cannot be named in advance): the
    crash is a scheduled call on the run's world, like a BUGGIFY site, and the plan is empty. The
    next leader loads the group from the log (classic and KIP-848 groups alike).
    """
    at = rng.randint(1_500, 3_000)
    down_ms = rng.randint(2_500, 3_500)
    world = run.world

    def crash() -> None:
        p = partition_for(group_id, run.cluster.config.offsets_topic_num_partitions)
        try:
            leader = run.cluster.leader(CONSUMER_OFFSETS_TOPIC, p)
        except KafkaError:
            return  # no coordinator yet: nothing to fail over
        name = f"broker-{leader}"
        if leader < 0 or not world.nodes[name].is_up:
            return
        world.crash(name)
        world.scheduler.call_later(down_ms, lambda: None if world.nodes[name].is_up else world.restart(name))

    world.scheduler.call_later(at, crash)
    return FaultPlan()


def client_crashes(rng: random.Random, run: Run) -> FaultPlan:
    """Crash transactional producers mid-transaction (their processes start new instances)."""
    names = [f"producer-{i}" for i in range(1, 4)]
    return FaultPlan(tuple(FaultEntry.of(t, "crash", node=rng.choice(names)) for t in _times(rng, 3, 400, 3_500)))


def pauses(rng: random.Random, run: Run) -> FaultPlan:
    """Pause a transactional producer longer than transaction.timeout.ms (a zombie)."""
    t = rng.randint(300, 1_000)
    name = rng.choice(["producer-1", "producer-2"])
    return FaultPlan(
        (FaultEntry.of(t, "pause", node=name), FaultEntry.of(t + rng.randint(3_500, 4_500), "resume", node=name))
    )


def delayed_end_txn(rng: random.Random, run: Run) -> FaultPlan:
    """Hold EndTxn requests past the client's timeout; release each after the next txn began (KAFKA-17754)."""
    entries = []
    t = rng.randint(200, 600)
    for n in range(1, 9):
        entries.append(FaultEntry.of(t, "hold", body_type="EndTxnRequest", skip=rng.randint(0, 3), count=1))
        # the hold starts after 0-3 other EndTxns; released ~1.8-2.1 s after the rule, it has
        # usually outlived request.timeout.ms (1.5 s), so the client's retry ended the txn first
        entries.append(FaultEntry.of(t + rng.randint(1_800, 2_100), "release", rule=n))
        t += rng.randint(2_150, 2_400)
    return FaultPlan(tuple(entries))


def delayed_produce(rng: random.Random, run: Run) -> FaultPlan:
    """Delay transactional produce requests by more than a transaction takes."""
    return FaultPlan(
        tuple(
            FaultEntry.of(t, "delay", body_type="ProduceRequest", delay_ms=rng.randint(300, 1_200), count=1)
            for t in _times(rng, 4, 200, 3_000)
        )
    )


def light_partitions(rng: random.Random, run: Run) -> FaultPlan:
    """Short partitions between brokers."""
    return random_plan(
        rng,
        list(BROKERS),
        duration_ms=4_000,
        kinds=("partition",),
        mean_interval_ms=1_200,
        outage_ms_max=600,
        start_ms=200,
    )


def marker_retry(rng: random.Random, run: Run) -> FaultPlan:
    """Drop WriteTxnMarkers requests for a while: the coordinator must retry until written."""
    return FaultPlan(
        tuple(
            FaultEntry.of(t, "drop", body_type="WriteTxnMarkersRequest", count=rng.randint(2, 6))
            for t in _times(rng, 3, 200, 3_000)
        )
    )


def power_loss(rng: random.Random, run: Run) -> FaultPlan:
    """Crash every replica at once, losing what the OS had not flushed (a correlated power loss)."""
    t = rng.randint(1_200, 2_000)
    entries = [FaultEntry.of(t, "crash", node=b, lose_unflushed_tail=True) for b in BROKERS]
    entries += [FaultEntry.of(t + 200, "restart", node=b) for b in BROKERS]
    return FaultPlan(tuple(entries))


def not_leader_after_append(rng: random.Random, run: Run) -> FaultPlan:
    """Answer NOT_LEADER_OR_FOLLOWER after appending (BUGGIFY site), several times."""
    run.world.sites.force("broker.produce.not_leader_after_append", times=rng.randint(3, 8))
    return FaultPlan()


def swarm(rng: random.Random, run: Run) -> FaultPlan:
    """A random subset of fault kinds for this seed (swarm testing), rotating over the safety phase."""
    kinds = swarm_kinds(rng, ("crash", "pause", "partition", "partition_one_way", "clog", "drop", "delay", "duplicate"))
    return random_plan(
        rng, list(BROKERS), duration_ms=8_000, kinds=kinds, mean_interval_ms=900, outage_ms_max=2_500, start_ms=200
    )
