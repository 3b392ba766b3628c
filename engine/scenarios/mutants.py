"""The weakened configurations (M1–M19) of eos-checking.md §5.1, each an explicit option.

A mutant combines engine :class:`~engine.weakenings.Weakenings`, Kafka-named broker, producer or
consumer config, and workload flags. ``eos run NAME --mutant M10`` runs a scenario with one; the
quality suite (``tests/quality``) requires each to be caught by its named check.
"""

from __future__ import annotations

from engine.scenarios.harness import Mutant
from engine.weakenings import Weakenings

MUTANTS: dict[str, Mutant] = {
    m.id: m
    for m in (
        Mutant(
            "M1",
            "idempotence off",
            "retries cannot duplicate records",
            producer_config=(("enable.idempotence", False),),
        ),
        Mutant(
            "M2",
            "dedup window of 1 batch",
            "any of the 5 in-flight batches can be retried safely",
            weakenings=Weakenings(dedup_window=1),
        ),
        Mutant(
            "M3",
            "acks=1",
            "an acknowledged record is on every ISR replica",
            producer_config=(("acks", 1), ("enable.idempotence", False)),
        ),
        Mutant(
            "M4",
            "unclean leader election, min.insync.replicas=1",
            "an acknowledged record survives elections",
            broker_config=(("unclean.leader.election.enable", True), ("min.insync.replicas", 1)),
        ),
        Mutant(
            "M5",
            "read_uncommitted consumers",
            "aborted and open transactions are invisible",
            consumer_config=(("isolation.level", "read_uncommitted"),),
        ),
        Mutant(
            "M6",
            "no epoch fencing",
            "a fenced (zombie) producer cannot write or commit",
            weakenings=Weakenings(fence_epochs=False),
        ),
        Mutant(
            "M7",
            "transaction version 1 (no epoch bump per transaction)",
            "a delayed EndTxn cannot end the next transaction (KAFKA-17754)",
            broker_config=(("transaction.version", 1),),
        ),
        Mutant(
            "M8",
            "no partition verification of transactional produce",
            "a late batch cannot open a transaction the coordinator does not know (hanging LSO)",
            weakenings=Weakenings(verify_transactional_produce=False),
        ),
        Mutant(
            "M9",
            "coordinator state not replicated",
            "a coordinator decision survives coordinator failover",
            weakenings=Weakenings(replicate_transaction_state=False),
            broker_config=(("transaction.state.log.replication.factor", 1),),
        ),
        Mutant(
            "M10",
            "LSO read as inclusive",
            "read_committed never returns the first record of an open transaction",
            weakenings=Weakenings(lso_inclusive=True),
        ),
        Mutant(
            "M11",
            "fetch omits the aborted transactions",
            "read_committed never returns aborted records",
            weakenings=Weakenings(send_aborted_transactions=False),
        ),
        Mutant(
            "M12",
            "consumer offsets committed outside the transaction",
            "input offsets and outputs commit atomically",
            workload_flags=("offsets-outside-txn",),
        ),
        Mutant(
            "M13",
            "no rewind after abort (KAFKA-17582)",
            "an aborted transaction's input is processed again",
            workload_flags=("no-rewind",),
        ),
        Mutant(
            "M14",
            "timeout abort without epoch bump",
            "a timed-out producer is fenced",
            weakenings=Weakenings(bump_epoch_on_timeout=False),
        ),
        Mutant(
            "M15",
            "stale group generation accepted (no KIP-447 fencing)",
            "a zombie consumer's offsets cannot be committed",
            weakenings=Weakenings(fence_stale_generation=False),
        ),
        Mutant(
            "M16",
            "producer state not rebuilt on leader change",
            "a new leader deduplicates retries of batches the old leader took",
            weakenings=Weakenings(followers_track_producer_state=False),
        ),
        Mutant(
            "M17",
            "a failed send does not make the transaction abortable",
            "a transaction commits only if every one of its sends was written",
            weakenings=Weakenings(abort_on_failed_send=False),
        ),
        Mutant(
            "M18",
            "InitProducerId ignores the producer id and epoch it names (pre-KIP-360)",
            "a fenced instance cannot win its epoch back through the abort path's epoch bump",
            weakenings=Weakenings(check_init_producer_epoch=False),
        ),
        Mutant(
            "M19",
            "KIP-848 reconciliation assigns a partition before its owner revoked it",
            "a partition has one owner in a consumer group at a time (revoke before assign)",
            weakenings=Weakenings(revoke_before_assign=False),
        ),
    )
}


def get_mutant(name: str) -> Mutant:
    """Return a mutant by id (``M1`` … ``M19``), or raise KeyError naming the valid ids."""
    m = MUTANTS.get(name.upper())
    if m is None:
        msg = f"no mutant {name!r}; use one of {', '.join(MUTANTS)}"
        raise KeyError(msg)
    return m
