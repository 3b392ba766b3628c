"""The scenarios of eos-checking.md §5.2, under hierarchical names, as :class:`Spec` data.

Each entry says what it sets up, which faults its plan holds (a function of the seed's
``faults`` stream), and which mutants it is built to catch with which check. ``eos scenarios``
lists them; ``eos run NAME --seed N [--mutant M..]`` runs one; ``eos sweep NAME --seeds N``
runs many seeds.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from engine.scenarios.harness import Spec, TopicSpec
from engine.scenarios.workloads import (
    BAD_SEND_MAX_REQUEST_SIZE,
    Aggregator,
    Copier,
    IdempotentSends,
    Transactions,
    ZombieAbortRace,
)
from engine.sim.faults import FaultEntry, FaultPlan, random_plan, swarm_kinds

if TYPE_CHECKING:
    from engine.scenarios.harness import Run

#: Faster failure detection than Kafka's defaults, so a simulated failover takes ~2 s, not ~10 s.
FAST_FAILOVER = (
    ("min.insync.replicas", 2),
    ("broker.session.timeout.ms", 2_000),
    ("broker.heartbeat.interval.ms", 500),
    ("replica.lag.time.max.ms", 1_500),
)

BROKERS = ("broker-1", "broker-2", "broker-3")


def _times(rng: random.Random, n: int, start: int, end: int) -> list[int]:
    return sorted(rng.randint(start, end) for _ in range(n))


def lost_acks(rng: random.Random, run: Run) -> FaultPlan:
    """Drop a few ProduceResponses after the leader appended (lost acks)."""
    return FaultPlan(
        tuple(
            FaultEntry.of(t, "drop", kind="response", body_type="ProduceResponse", count=rng.randint(1, 2))
            for t in _times(rng, 4, 200, 3_500)
        )
    )


def reorders(rng: random.Random, run: Run) -> FaultPlan:
    """Delay single produce requests past their successors, and lose an answer now and then."""
    entries = [
        FaultEntry.of(t, "delay", body_type="ProduceRequest", delay_ms=rng.randint(3, 30), count=1)
        for t in _times(rng, 6, 200, 3_500)
    ]
    entries += [
        FaultEntry.of(t, "drop", kind="response", body_type="ProduceResponse", count=1)
        for t in _times(rng, 2, 200, 3_500)
    ]
    return FaultPlan(tuple(entries))


def lost_ack_burst(rng: random.Random, run: Run) -> FaultPlan:
    """Lose 5–8 consecutive answers: every in-flight batch is retried, the oldest first."""
    return FaultPlan(
        tuple(
            FaultEntry.of(t, "drop", kind="response", body_type="ProduceResponse", count=rng.randint(5, 8))
            for t in _times(rng, 3, 300, 3_500)
        )
    )


def rolling_crashes(rng: random.Random, run: Run) -> FaultPlan:
    """Crash brokers one at a time (hard bounce), each back after a few seconds."""
    entries = []
    t = rng.randint(300, 800)
    for b in rng.sample(BROKERS, 2):
        entries.append(FaultEntry.of(t, "crash", node=b))
        entries.append(FaultEntry.of(t + rng.randint(2_500, 3_500), "restart", node=b))
        t += rng.randint(3_800, 4_500)
    return FaultPlan(tuple(entries))


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


SENDS = IdempotentSends()

COPIER_TOPICS = (TopicSpec("in", 2), TopicSpec("out", 3))
GROUP_TOPICS = (TopicSpec("in", 9), TopicSpec("out", 3))

SPECS: tuple[Spec, ...] = (
    Spec(
        "idempotence: lost ack retry",
        "lost acks are retried and deduplicated (S01)",
        SENDS,
        lost_acks,
        broker_config=FAST_FAILOVER,
        catches=(("M1", "duplicate"),),
    ),
    Spec(
        "idempotence: reordered in-flight batches",
        "a delayed batch is rejected out of order and resent (S02)",
        SENDS,
        reorders,
        broker_config=FAST_FAILOVER,
        catches=(("M1", "duplicate"),),
    ),
    Spec(
        "idempotence: dedup window",
        "retries of older in-flight batches hit the 5-batch cache (S03)",
        IdempotentSends(processes_per_producer=5, sends_per_process=60),
        lost_ack_burst,
        broker_config=FAST_FAILOVER,
        catches=(("M2", "G1a"),),
    ),
    Spec(
        "replication: leader crash with acks=all",
        "hard bounces of brokers under idempotent sends (S04)",
        IdempotentSends(sends_per_process=80),
        rolling_crashes,
        broker_config=FAST_FAILOVER,
        safety_ms=9_000,
        catches=(("M16", "L13-producer-state"),),
    ),
    Spec(
        "replication: unclean election",
        "the ISR shrinks to the leader, which then crashes (S05)",
        IdempotentSends(sends_per_process=80),
        unclean_setup,
        broker_config=FAST_FAILOVER,
        safety_ms=7_000,
        catches=(("M4", "inconsistent-offsets"),),
    ),
    Spec(
        "replication: isolated old leader",
        "a leader cut off from its followers and the controller (S06)",
        IdempotentSends(sends_per_process=80),
        isolated_leader,
        broker_config=FAST_FAILOVER,
        safety_ms=6_000,
        catches=(("M3", "unseen"),),
    ),
    Spec(
        "coordinator: failover",
        "coordinators fail over while transactions commit (S07)",
        Transactions(txns_per_process=30),
        coordinator_failover,
        broker_config=FAST_FAILOVER,
        safety_ms=9_000,
        catches=(("M9", "unseen"),),
    ),
    Spec(
        "transactions: producer crash mid transaction",
        "a new instance fences and aborts the open txn (S08)",
        Transactions(processes=3),
        client_crashes,
        broker_config=FAST_FAILOVER,
        catches=(("M5", "G1a"),),
    ),
    Spec(
        "transactions: zombie fencing",
        "two processes share one transactional.id and fence each other (S09)",
        Transactions(processes=2, producer_config=(("transactional.id", "shared"),)),
        None,
        broker_config=FAST_FAILOVER,
        catches=(("M6", "lost-write"),),
    ),
    Spec(
        "transactions: zombie abort race",
        "a fenced instance's abort bumps its epoch while a new instance starts (KIP-360)",
        ZombieAbortRace(
            txns_per_process=15,
            abort_p=0.1,
            producer_config=(("max.request.size", BAD_SEND_MAX_REQUEST_SIZE),),
        ),
        None,  # the workload holds the racing request itself
        broker_config=FAST_FAILOVER,
        catches=(("M18", "zombie-commit"),),
    ),
    Spec(
        "transactions: delayed EndTxn",
        "an EndTxn held past its timeout arrives during the next txn (S12)",
        Transactions(processes=2, txns_per_process=150, abort_p=0.4),
        delayed_end_txn,
        broker_config=FAST_FAILOVER,
        safety_ms=18_000,
        catches=(("M7", "lost-write"),),
    ),
    Spec(
        "transactions: late produce after abort",
        "transactional batches delayed past their txn (S13)",
        Transactions(processes=2, abort_p=0.3),
        delayed_produce,
        broker_config=FAST_FAILOVER,
        catches=(("M8", "hanging-transaction"),),
    ),
    Spec(
        "transactions: timeout",
        "a paused producer outlives transaction.timeout.ms (S14)",
        Transactions(processes=2, transaction_timeout_ms=2_000),
        pauses,
        broker_config=FAST_FAILOVER,
        catches=(("M14", "lost-write"),),
    ),
    Spec(
        "isolation: levels",
        "transactions with random aborts under light partitions (S15)",
        Transactions(processes=3, abort_p=0.2),
        light_partitions,
        broker_config=FAST_FAILOVER,
        catches=(("M5", "G1a"),),
    ),
    Spec(
        "isolation: lso off by one",
        "read_committed readers poll while transactions are open (S16)",
        Transactions(processes=2, abort_p=0.3, readers=2),
        None,
        broker_config=FAST_FAILOVER,
        catches=(("M10", "G1a"),),
    ),
    Spec(
        "isolation: aborted index across fetches",
        "aborted transactions interleaved with committed ones (S17)",
        Transactions(processes=3, abort_p=0.4, sends_per_txn=(2, 6)),
        None,
        broker_config=FAST_FAILOVER,
        catches=(("M11", "G1a"),),
    ),
    Spec(
        "transactions: failed sends",
        "transactions mix good sends with sends to a missing topic or partition or over max.request.size",
        Transactions(
            processes=2,
            txns_per_process=25,
            abort_p=0.1,
            bad_send_p=0.3,
            producer_config=(("max.block.ms", 3_000), ("max.request.size", BAD_SEND_MAX_REQUEST_SIZE)),
        ),
        lost_acks,
        broker_config=FAST_FAILOVER,
        safety_ms=8_000,
        catches=(("M17", "unseen"),),
    ),
    Spec(
        "coordinator: marker delivery retry",
        "WriteTxnMarkers lost for a while; the coordinator retries (S19)",
        Transactions(processes=2),
        marker_retry,
        broker_config=FAST_FAILOVER,
    ),
    Spec(
        "durability: correlated power loss",
        "all replicas lose their unflushed tail at once (S20, positive control)",
        IdempotentSends(sends_per_process=250),
        power_loss,
        broker_config=(*FAST_FAILOVER, ("log.flush.interval.ms", 600_000)),
        must_report=("lost-write", "unseen", "inconsistent-offsets", "nonmonotonic-send", "L12-lost-ack"),
    ),
    Spec(
        "client: indefinite errors",
        "NOT_LEADER_OR_FOLLOWER after a successful append (S22, KAFKA-13574)",
        SENDS,
        not_leader_after_append,
        broker_config=FAST_FAILOVER,
        catches=(("M1", "duplicate"),),
    ),
    Spec(
        "at-least-once: baseline",
        "no idempotence, lost acks: duplicates allowed, loss not (S23)",
        IdempotentSends(producer_config=(("enable.idempotence", False),)),
        lost_acks,
        broker_config=FAST_FAILOVER,
        allowed="at-least-once",
    ),
    Spec(
        "swarm: soak",
        "transactions and idempotent sends under a random subset of fault kinds (S24)",
        Transactions(processes=3, abort_p=0.1),
        swarm,
        broker_config=FAST_FAILOVER,
        safety_ms=8_000,
        catches=(("M5", "G1a"), ("M10", "G1a"), ("M11", "G1a")),
    ),
    Spec(
        "copier: client hard bounce",
        "TransactionsTest: 2 inputs -> 3 outputs, copiers crash and restart (S10)",
        Copier(crash_p=0.1),
        None,
        topics=COPIER_TOPICS,
        broker_config=FAST_FAILOVER,
        safety_ms=8_000,
        liveness_ms=20_000,
        catches=(("M12", "copier-duplicate"),),
    ),
    Spec(
        "copier: random aborts",
        "copiers abort 1 in 3 transactions and rewind to the committed offsets (S11)",
        Copier(abort_p=0.33, crash_p=0.0),
        None,
        topics=COPIER_TOPICS,
        broker_config=FAST_FAILOVER,
        safety_ms=8_000,
        liveness_ms=20_000,
        catches=(("M13", "copier-lost"),),
    ),
    Spec(
        "copier: group mode rebalance",
        "3 copiers in one group; one is paused mid-transaction through a rebalance (S18)",
        Copier(
            copiers=3,
            input_partitions=9,
            records_per_partition=60,
            crash_p=0.0,
            group_mode=True,
            pause_slot=0,
            pause_ms=9_000,
            txn_size=5,
        ),
        None,
        topics=GROUP_TOPICS,
        broker_config=FAST_FAILOVER,
        safety_ms=14_000,
        liveness_ms=20_000,
        allowed="subscribe",
        catches=(("M15", "copier-duplicate"),),
    ),
    Spec(
        "copier: streams-style aggregate",
        "a running sum per input partition, restored from its output after crashes (X3, EosTestDriver)",
        Aggregator(crash_p=0.1, input_partitions=2, output_partitions=2),
        None,
        topics=(TopicSpec("in", 2), TopicSpec("out", 2)),
        broker_config=FAST_FAILOVER,
        safety_ms=8_000,
        liveness_ms=20_000,
        catches=(("M12", "aggregate-mismatch"),),
    ),
)
BY_NAME: dict[str, Spec] = {s.name: s for s in SPECS}
