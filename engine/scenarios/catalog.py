"""The scenarios of eos-checking.md §5.2, under hierarchical names, as :class:`Spec` data.

Each entry says what it sets up, which faults its plan holds (a function of the seed's
``faults`` stream, from ``fault_plans.py``), and which mutants it is built to catch with which
check. ``eos scenarios`` lists them; ``eos run NAME --seed N [--mutant M..]`` runs one;
``eos sweep NAME --seeds N`` runs many seeds.
"""

from __future__ import annotations

import dataclasses
import difflib

from engine.scenarios.copier import Aggregator, Copier
from engine.scenarios.deadlock import DEADLOCK_SPECS
from engine.scenarios.fault_plans import (
    client_crashes,
    coordinator_failover,
    delayed_end_txn,
    delayed_produce,
    group_coordinator_bounce,
    isolated_leader,
    light_partitions,
    lost_ack_burst,
    lost_acks,
    marker_retry,
    not_leader_after_append,
    pauses,
    power_loss,
    reorders,
    rolling_crashes,
    swarm,
    unclean_setup,
)
from engine.scenarios.harness import FAST_FAILOVER, Spec, TopicSpec
from engine.scenarios.mirror import MIRROR_SPECS
from engine.scenarios.outbox import OUTBOX_SPECS
from engine.scenarios.saga import SAGA_SPECS
from engine.scenarios.side_effects import SIDE_EFFECT_SPECS
from engine.scenarios.workloads import BAD_SEND_MAX_REQUEST_SIZE, IdempotentSends, Transactions
from engine.scenarios.zombie_race import ZombieAbortRace

SENDS = IdempotentSends()

COPIER_TOPICS = (TopicSpec("in", 2), TopicSpec("out", 3))
GROUP_TOPICS = (TopicSpec("in", 9), TopicSpec("out", 3))
#: KIP-848 groups: the coordinator's session and heartbeat interval, as short as the classic copiers' own
#: (Kafka would also need ``group.consumer.min.session.timeout.ms`` lowered; the engine has no minimum).
CONSUMER_GROUP_TIMING = (("group.consumer.session.timeout.ms", 6_000), ("group.consumer.heartbeat.interval.ms", 1_000))
#: The group copiers of the group-protocol scenarios: 3 copiers share 9 input partitions.
GROUP_COPIER = Copier(copiers=3, input_partitions=9, records_per_partition=60, group_mode=True, txn_size=5)

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
        # 6-12 sends keep each transaction open long enough that a released EndTxn often lands
        # inside the next one (with 1-4 sends the replication of short transactions outran it).
        Transactions(processes=2, txns_per_process=150, abort_p=0.4, sends_per_txn=(6, 12)),
        delayed_end_txn,
        broker_config=FAST_FAILOVER,
        safety_ms=18_000,
        # KAFKA-17754 shows as a lost write (a late ABORT ends the next, committed transaction) or
        # an aborted read (a late COMMIT commits part of the next one, which the client aborts).
        catches=(("M7", "lost-write|G1a"),),
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
        must_report=(
            "lost-write",
            "unseen",
            "inconsistent-offsets",
            "nonmonotonic-send",
            "L12-lost-ack",
            "L7-hw-regression",
            "L7-lso-regression",
        ),
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
        "copier: cooperative rebalance",
        "cooperative-sticky copiers (KIP-429): one crashes now and then, one is paused through a rebalance "
        "that revokes only what moves, while brokers (and the coordinators on them) bounce (X6)",
        dataclasses.replace(
            GROUP_COPIER,
            crash_p=0.02,
            pause_slot=0,
            pause_ms=9_000,
            group_config=(("partition.assignment.strategy", "cooperative-sticky"),),
        ),
        rolling_crashes,
        topics=GROUP_TOPICS,
        broker_config=FAST_FAILOVER,
        safety_ms=14_000,
        liveness_ms=20_000,
        allowed="subscribe",
        catches=(("M15", "copier-duplicate"),),
    ),
    Spec(
        "copier: consumer-protocol group",
        "KIP-848 copiers (group.protocol=consumer, uniform assignor): crashed and paused members are fenced "
        "by the session timeout, the group coordinator fails over (X7)",
        dataclasses.replace(
            GROUP_COPIER,
            crash_p=0.02,
            pause_slot=0,
            pause_ms=9_000,
            group_config=(("group.protocol", "consumer"), ("group.remote.assignor", "uniform")),
        ),
        group_coordinator_bounce,
        topics=GROUP_TOPICS,
        broker_config=(*FAST_FAILOVER, *CONSUMER_GROUP_TIMING),
        safety_ms=14_000,
        liveness_ms=20_000,
        allowed="subscribe",
        catches=(("M15", "copier-duplicate"), ("M19", "L15-two-owners")),
    ),
    Spec(
        "copier: static members restart",
        "static copiers (KIP-345, group.instance.id copier-<i>): a crashed copier's successor rejoins under "
        "its instance id within the session and takes its partitions back, no rebalance for the others (X8)",
        dataclasses.replace(GROUP_COPIER, crash_p=0.03, static_members=True),
        group_coordinator_bounce,
        topics=GROUP_TOPICS,
        broker_config=FAST_FAILOVER,
        safety_ms=14_000,
        liveness_ms=20_000,
        allowed="subscribe",
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
    *OUTBOX_SPECS,
    *SIDE_EFFECT_SPECS,
    *SAGA_SPECS,
    *MIRROR_SPECS,
    *DEADLOCK_SPECS,
)
BY_NAME: dict[str, Spec] = {s.name: s for s in SPECS}


def get_spec(name: str, *, cutoff: float = 0.6) -> Spec:
    """Return the catalog scenario ``name``, or raise KeyError with a one-line suggestion.

    The message reads ``no catalog scenario named 'X'; did you mean 'Y'?`` (or names
    ``eos scenarios`` when nothing is close); callers put their command's name before it.
    ``cutoff`` is :func:`difflib.get_close_matches`'s: how close a name must be to be suggested.
    """
    spec = BY_NAME.get(name)
    if spec is None:
        close = difflib.get_close_matches(name, list(BY_NAME), n=1, cutoff=cutoff)
        hint = f"did you mean '{close[0]}'?" if close else "run 'eos scenarios' to list them"
        raise KeyError(f"no catalog scenario named '{name}'; {hint}")
    return spec
