"""Which Spark check is the twin of which Python checker, per anomaly kind; and why some kinds have none.

Role
----
:data:`TWINS` pairs every anomaly kind of :data:`engine.check.anomaly.KINDS` (the history
checkers and the workload oracles) and of :data:`engine.check.invariants.KINDS` (the white-box
invariants) with the Python function that reports it and the Spark functions that compute it
(:mod:`eos_magics.spark.checks`, :mod:`eos_magics.spark.invariants`); :data:`NO_TWIN` says why a
kind has none. ``tests/spark/test_spark_twins.py`` holds the table complete both ways and has
each pair word the same sentences on a run that shows the kind.

Invariants
----------
* Every kind is in exactly one of :data:`TWINS` and :data:`NO_TWIN`.
* The twins of a kind word it byte for byte alike (:mod:`engine.check.messages` holds every
  sentence once), except the kinds of :data:`WORDED_APART`.
* Every Spark check (a public function of a check module that takes the shared frames) names
  at least one kind here.

What it does not do
-------------------
It runs nothing: :func:`eos_magics.spark.history_checks.check_history_spark` and
:func:`eos_magics.spark.invariants.check_invariants_spark` are the entry points.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from engine.check import (
    check_aborted_reads,
    check_cycles,
    check_duplicates,
    check_inconsistent_offsets,
    check_lost_writes,
    check_polls,
    check_precommitted_reads,
    check_sends,
)
from engine.check import invariants as py_inv
from eos_magics.spark import invariants as spark_inv
from eos_magics.spark.checks import aborted_reads, cycles, lost_writes, offsets_dups, polls, sends
from eos_magics.spark.invariants import PYTHON_ONLY

__all__ = ["NO_TWIN", "SPARK_CHECK_MODULES", "TWINS", "WORDED_APART", "Twin"]


class Twin(NamedTuple):
    """One anomaly kind, the Python function that reports it and the Spark functions that compute it."""

    kind: str
    python: Callable[..., Any]
    spark: tuple[Callable[..., Any], ...]


def _twins(python: Callable[..., Any], spark: tuple[Callable[..., Any], ...], *kinds: str) -> list[Twin]:
    return [Twin(k, python, spark) for k in kinds]


#: The modules whose public frame functions are Spark checks (each must name a kind in :data:`TWINS`).
SPARK_CHECK_MODULES = (
    offsets_dups,
    lost_writes,
    aborted_reads,
    polls,
    sends,
    cycles,
    spark_inv.replicas,
    spark_inv.idempotence,
    spark_inv.transactions,
    spark_inv.atomicity,
    spark_inv.offsets,
    spark_inv.aborted_index,
    spark_inv.txn_state,
    spark_inv.liveness,
)

#: Every kind that both engines report, with its Python checker and its Spark twin(s).
TWINS: tuple[Twin, ...] = (
    *_twins(check_inconsistent_offsets, (offsets_dups.inconsistent_offsets,), "inconsistent-offsets"),
    *_twins(check_duplicates, (offsets_dups.duplicates,), "duplicate"),
    *_twins(check_lost_writes, (lost_writes.lost_writes,), "lost-write", "unseen"),
    *_twins(check_aborted_reads, (aborted_reads.aborted_reads,), "G1a"),
    *_twins(check_precommitted_reads, (aborted_reads.precommitted_reads,), "precommitted-read"),
    *_twins(check_polls, (polls.polls,), "poll-skip", "nonmonotonic-poll", "int-poll-skip", "int-nonmonotonic-poll"),
    *_twins(check_sends, (sends.sends,), "nonmonotonic-send", "int-nonmonotonic-send", "int-send-skip"),
    *_twins(check_cycles, (cycles.edge_rows,), "G1c-wr", "G0", "G1c-ww"),
    *_twins(py_inv.check_replica_agreement, (spark_inv.replicas.divergence,), py_inv.L1_DIVERGENCE),
    *_twins(py_inv.check_replica_agreement, (spark_inv.replicas.offset_order,), py_inv.L1_OFFSETS),
    *_twins(py_inv.check_sequences, (spark_inv.idempotence.gaps,), py_inv.L2_GAP),
    *_twins(py_inv.check_sequences, (spark_inv.idempotence.duplicates,), py_inv.L2_DUPLICATE),
    *_twins(py_inv.check_epochs, (spark_inv.idempotence.epochs,), py_inv.L3_EPOCH),
    *_twins(py_inv.check_markers, (spark_inv.transactions.marker_epoch,), py_inv.L4_MARKER_EPOCH),
    *_twins(py_inv.check_markers, (spark_inv.transactions.data_after_marker,), py_inv.L4_DATA_AFTER_MARKER),
    *_twins(py_inv.check_markers, (spark_inv.transactions.duplicate_markers,), py_inv.L4_DUPLICATE_MARKER),
    *_twins(py_inv.check_markers, (spark_inv.transactions.non_transactional,), py_inv.L4_NON_TXN_IN_TXN),
    *_twins(py_inv.check_no_hanging, (spark_inv.transactions.hanging,), py_inv.L5_HANGING, py_inv.L5_LSO),
    *_twins(
        py_inv.check_atomicity, (spark_inv.atomicity.aligned, spark_inv.atomicity.disagreeing), py_inv.L6_ATOMICITY
    ),
    *_twins(py_inv.check_atomicity, (spark_inv.atomicity.incomplete,), py_inv.L6_INCOMPLETE),
    *_twins(
        py_inv.check_offsets_monotonic, (spark_inv.offsets.monotonic,), py_inv.L7_HW, py_inv.L7_LSO, py_inv.L7_ORDER
    ),
    *_twins(py_inv.check_read_committed_fetches, (spark_inv.offsets.read_committed,), py_inv.L8_BEYOND_LSO),
    *_twins(py_inv.check_aborted_index, (spark_inv.aborted_index.check,), py_inv.L9_INDEX),
    *_twins(py_inv.check_txn_state, (spark_inv.txn_state.check,), py_inv.L10_EPOCH, py_inv.L10_TRANSITION),
    *_twins(py_inv.check_liveness, (spark_inv.liveness.check,), py_inv.L14_NO_LEADER, py_inv.L14_LSO),
)

#: Every kind only Python reports, and why.
NO_TWIN: dict[str, str] = {
    **dict.fromkeys(
        ("copier-lost", "copier-duplicate", "copier-phantom", "copier-order"),
        "the copier oracle reads each output's lineage, which only the copier workload keeps",
    ),
    "hanging-transaction": "the sentinel probe reads the probe's own records, not an exported history",
    **dict.fromkeys(
        ("effect-lost", "effect-duplicate", "effect-phantom"),
        "the effects checker reads the services' SQLite databases, not the brokers",
    ),
    "saga-incomplete": "the saga checker reads the services' SQLite databases, not the brokers",
    **dict.fromkeys(
        ("lost-input", "duplicated-output", "unexpected-output"),
        "a promise matches records by a user's Python function (or key or value) given per test, not a history kind "
        "the exported frames can judge alone",
    ),
    **dict.fromkeys(
        ("aggregate-not-a-prefix", "aggregate-order", "aggregate-missed", "aggregate-mismatch"),
        "the running-totals check judges an aggregating app's own records (Kafka Streams' input lines and output "
        "totals, engine/check/running_totals.py), not an exported history",
    ),
    py_inv.L12_LOST: PYTHON_ONLY["L12"],
    py_inv.L13_PRODUCER_STATE: PYTHON_ONLY["L13"],
}

#: Kinds whose twins share the sentence's template but render one field each their own way, and why.
WORDED_APART: dict[str, str] = {
    py_inv.L1_DIVERGENCE: (
        "the first differing records are shown as Python tuples (bytes keys as b'...') in Python and as Spark's "
        "struct text in Spark; the records themselves are compared field by field"
    ),
}
