"""The white-box invariants in Spark give the Python checkers' exact records, for many runs in one pass.

Every input (clean runs with faults, mutant runs the invariants catch, hand-corrupted copies of
clean ground truths) is exported with ``engine.export.logs``, stacked into one set of DataFrames
with distinct ``run_id`` s and checked by one call; each test then compares one run's records with
``check_ground_truth`` (restricted to the kinds Spark checks) on the same ground truth.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from engine.check.ground_truth import BatchRow, GroundTruth, export_ground_truth
from engine.check.invariants import check_ground_truth
from engine.check.timeline import TimelineSample
from engine.export.common import RunId
from engine.export.logs import log_tables, partition_state_table
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.scenarios.mutants import get_mutant
from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.invariants import (
    PYTHON_ONLY,
    SPARK_KINDS,
    check_invariants_spark,
    check_invariants_spark_by_run,
)

pytestmark = pytest.mark.slow

Samples = list[TimelineSample]

#: Clean runs with faults: (run id, scenario, seed).
CLEAN = [
    ("crash-s1", "replication: leader crash with acks=all", 1),
    ("failover-s1", "coordinator: failover", 1),
    ("zombie-s3", "transactions: zombie fencing", 3),
    ("soak-s1", "swarm: soak", 1),
    ("soak-s2", "swarm: soak", 2),
]
#: Mutant runs and white-box kinds they must show: (run id, scenario, seed, mutant, kinds).
MUTANTS = [
    ("zombie-M6", "transactions: zombie fencing", 1, "M6", {"L3-epoch-regression", "L4-data-after-marker"}),
    ("lso-M10", "isolation: lso off by one", 2, "M10", {"L8-read-beyond-lso"}),
    ("late-M8", "transactions: late produce after abort", 1, "M8", {"L5-hanging-txn", "L5-lso-below-hw"}),
    ("failover-M9", "coordinator: failover", 4, "M9", {"L14-no-leader", "L5-hanging-txn"}),
]


def _kinds(anomalies: list[Any]) -> set[str]:
    return {a.kind for a in anomalies}


def _same_batch_everywhere(gt: GroundTruth, pick: BatchRow, change: Callable[[BatchRow], BatchRow]) -> GroundTruth:
    """Apply ``change`` to every replica's copy of the batch ``pick`` (same partition and offset)."""
    rows = tuple(change(b) if (b.tp, b.base_offset) == (pick.tp, pick.base_offset) else b for b in gt.batches)
    return dataclasses.replace(gt, batches=rows)


def _final(gt: GroundTruth, keep: Callable[[BatchRow], bool]) -> list[BatchRow]:
    return [b for tp in gt.partition_keys() for b in gt.final_log(tp) if keep(b)]


def diverging_replica(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """A follower holds another value below the HW."""
    tp = next(tp for tp in gt.partition_keys() if gt.final_hw(tp) > 0 and len(gt.replicas_of(tp)) > 1)
    leader = gt.authoritative(tp)
    follower = next(r.broker_id for r in gt.replicas_of(tp) if r.broker_id != leader)
    rows = list(gt.batches)
    i = next(i for i, b in enumerate(rows) if b.tp == tp and b.broker_id == follower)
    rows[i] = rows[i]._replace(values=("tampered", *rows[i].values[1:]))
    return dataclasses.replace(gt, batches=tuple(rows)), samples


def overlapping_batch(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """A follower's log holds its last offset twice: a copy of its last one-record batch follows it."""
    tp = next(tp for tp in gt.partition_keys() if len(gt.replicas_of(tp)) > 1)
    follower = next(r.broker_id for r in gt.replicas_of(tp) if r.broker_id != gt.authoritative(tp))
    last = gt.logs()[(*tp, follower)][-1]
    assert last.count == 1
    return dataclasses.replace(gt, batches=(*gt.batches, last)), samples


def sequence_gap(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """The last batch of a producer epoch starts 5 sequences too far (on every replica)."""
    last = _final(gt, lambda b: b.producer_id >= 0 and not b.is_control and b.base_sequence > 0)[-1]
    return _same_batch_everywhere(
        gt, last, lambda b: b._replace(base_sequence=b.base_sequence + 5, last_sequence=b.last_sequence + 5)
    ), samples


def lower_epoch(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """The last batch of the busiest idempotent producer carries an epoch below its earlier batches'."""
    batches = _final(gt, lambda b: b.producer_id >= 0 and not b.is_control and not b.is_transactional)
    busiest = max(sorted({b.producer_id for b in batches}), key=lambda p: sum(b.producer_id == p for b in batches))
    last = [b for b in batches if b.producer_id == busiest][-1]
    return _same_batch_everywhere(gt, last, lambda b: b._replace(producer_epoch=b.producer_epoch - 1)), samples


def data_after_marker(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """Transactional data written after a marker with an epoch below it (a zombie's)."""
    markers = _final(gt, lambda b: b.is_control)
    after = next(
        d
        for m in markers
        for d in gt.final_log(m.tp)
        if d.base_offset > m.base_offset and d.producer_id == m.producer_id and d.is_transactional and not d.is_control
    )
    return _same_batch_everywhere(gt, after, lambda b: b._replace(producer_epoch=0)), samples


def missing_marker(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """A producer's last COMMIT marker in a partition became a plain record on every replica."""
    markers = _final(gt, lambda b: b.is_control and b.control_type == "COMMIT" and not b.topic.startswith("__"))
    last = next(
        m for m in reversed(markers) if m == [x for x in markers if (x.tp, x.producer_id) == (m.tp, m.producer_id)][-1]
    )
    plain = {
        "producer_id": -1,
        "producer_epoch": -1,
        "is_transactional": False,
        "is_control": False,
        "control_type": None,
    }
    return _same_batch_everywhere(gt, last, lambda b: b._replace(**plain)), samples


def retyped_marker(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """One partition aborts what the coordinator committed (and its aborted index does not know)."""
    last = _final(gt, lambda b: b.is_control and b.control_type == "COMMIT" and not b.topic.startswith("__"))[-1]
    return _same_batch_everywhere(gt, last, lambda b: b._replace(control_type="ABORT")), samples


def duplicate_marker(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """The last marker of a partition is written once more at the end of every replica's log."""
    m = _final(gt, lambda b: b.is_control and not b.topic.startswith("__"))[-1]
    extra = []
    for r in gt.replicas_of(m.tp):
        log = gt.logs().get((*m.tp, r.broker_id), [])
        if m in [b._replace(broker_id=m.broker_id) for b in log]:
            end = log[-1].next_offset
            extra.append(m._replace(broker_id=r.broker_id, base_offset=end, last_offset=end))
    return dataclasses.replace(gt, batches=(*gt.batches, *extra)), samples


def dropped_index_entry(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """A replica's aborted index lost an entry."""
    return dataclasses.replace(gt, aborted_index=gt.aborted_index[1:]), samples


def illegal_transition(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """The state before a PREPARE_COMMIT reads EMPTY (EMPTY -> PREPARE_COMMIT is illegal)."""
    rows = list(gt.txn_history)
    i = next(i for i, r in enumerate(rows) if r.state == "PREPARE_COMMIT" and i > 0 and rows[i - 1].state == "ONGOING")
    rows[i - 1] = rows[i - 1]._replace(state="EMPTY")
    return dataclasses.replace(gt, txn_history=tuple(rows)), samples


def incomplete_decision(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """The last COMPLETE_COMMIT of every history names another producer id: its decision never completes."""
    last: dict[tuple[str, str, int], int] = {}
    for i, r in enumerate(gt.txn_history):
        if r.state == "COMPLETE_COMMIT":
            last[(r.transactional_id, r.source, r.broker_id)] = i
    rows = list(gt.txn_history)
    for i in last.values():
        rows[i] = rows[i]._replace(producer_id=rows[i].producer_id + 1000)
    return dataclasses.replace(gt, txn_history=tuple(rows)), samples


def late_fetch(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """A read_committed fetch answered with the LSO at its fetch offset returned batches past it."""
    rows = list(gt.fetches)
    i = next(
        i
        for i, f in enumerate(rows)
        if f.isolation == "read_committed" and f.next_offset is not None and f.next_offset > f.fetch_offset
    )
    rows[i] = rows[i]._replace(lso=rows[i].fetch_offset)
    return dataclasses.replace(gt, fetches=tuple(rows)), samples


def hw_down(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """A leader's HW and LSO go back within its epoch (one more sample)."""
    last = next(s for s in reversed(samples) if s.hw > 0 and s.lso > 0)
    back = last._replace(index=samples[-1].index + 1, hw=last.hw - 1, lso=last.lso - 1)
    return gt, [*samples, back]


#: Hand corruptions: (run id, base run, corruption, exactly the kinds it must give).
CORRUPTIONS = [
    ("c-diverge", "crash-s1", diverging_replica, {"L1-replica-divergence"}),
    ("c-overlap", "crash-s1", overlapping_batch, {"L1-offset-order"}),
    ("c-seq-gap", "crash-s1", sequence_gap, {"L2-sequence-gap"}),
    ("c-epoch", "crash-s1", lower_epoch, {"L3-epoch-regression"}),
    ("c-after-marker", "zombie-s3", data_after_marker, {"L3-epoch-regression", "L4-data-after-marker"}),
    ("c-no-marker", "zombie-s3", missing_marker, {"L5-hanging-txn", "L6-atomicity"}),
    ("c-retyped", "zombie-s3", retyped_marker, {"L6-atomicity", "L9-aborted-index"}),
    ("c-dup-marker", "zombie-s3", duplicate_marker, {"L4-duplicate-marker"}),
    ("c-index", "zombie-s3", dropped_index_entry, {"L9-aborted-index"}),
    ("c-transition", "zombie-s3", illegal_transition, {"L10-illegal-transition"}),
    ("c-incomplete", "zombie-s3", incomplete_decision, {"L6-incomplete"}),
    ("c-fetch", "zombie-s3", late_fetch, {"L8-read-beyond-lso"}),
    ("c-hw-down", "zombie-s3", hw_down, {"L7-hw-regression", "L7-lso-regression"}),
]


@pytest.fixture(scope="module")
def inputs() -> dict[str, tuple[GroundTruth, Samples]]:
    """Every run's ground truth and timeline samples, by run id."""
    out: dict[str, tuple[GroundTruth, Samples]] = {}
    for rid, name, seed in CLEAN:
        r = run_spec(BY_NAME[name], seed)
        out[rid] = (export_ground_truth(r.cluster), list(r.timeline.samples))
    for rid, name, seed, mutant, _ in MUTANTS:
        r = run_spec(BY_NAME[name], seed, mutant=get_mutant(mutant))
        out[rid] = (export_ground_truth(r.cluster), list(r.timeline.samples))
    for rid, base, corrupt, _ in CORRUPTIONS:
        out[rid] = corrupt(*out[base])
    return out


@pytest.fixture(scope="module")
def frames(spark: Any, inputs: dict[str, tuple[GroundTruth, Samples]]) -> dict[str, Any]:
    """All runs stacked in one DataFrame per table."""
    parts: dict[str, list[pa.Table]] = {}
    for rid, (gt, samples) in inputs.items():
        run = RunId(rid, "", 0)
        tables = {**log_tables(gt, run), "partition_state": partition_state_table(samples, run)}
        for name, t in tables.items():
            parts.setdefault(name, []).append(t)
    # combine_chunks: PySpark 4.3 drops rows of a chunked Arrow table that has an empty chunk inside.
    return {name: spark.createDataFrame(pa.concat_tables(ts).combine_chunks()) for name, ts in parts.items()}


@pytest.fixture(scope="module")
def spark_found(spark: Any, frames: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    found = check_invariants_spark_by_run(spark, frames)
    print(f"\nSpark invariants over {len(found)} runs: {time.perf_counter() - t0:.1f} s")
    return found


def _python(inputs: dict[str, tuple[GroundTruth, Samples]], rid: str, **kw: Any) -> list[Any]:
    gt, samples = inputs[rid]
    return [a for a in check_ground_truth(gt, samples, **kw) if a.kind in SPARK_KINDS]


def test_every_run_is_reported_once(spark_found: dict[str, Any], inputs: dict[str, Any]) -> None:
    assert list(spark_found) == sorted(inputs)


@pytest.mark.parametrize("rid", [c[0] for c in CLEAN])
def test_clean_runs_with_faults_agree(spark_found: dict[str, Any], inputs: dict[str, Any], rid: str) -> None:
    assert spark_found[rid] == _python(inputs, rid)
    assert _kinds(spark_found[rid]) <= {"L4-duplicate-marker"}  # a retried marker, allowed by the harness


@pytest.mark.parametrize(("rid", "kinds"), [(m[0], m[4]) for m in MUTANTS])
def test_mutant_runs_agree_and_are_caught(
    spark_found: dict[str, Any], inputs: dict[str, Any], rid: str, kinds: set[str]
) -> None:
    assert spark_found[rid] == _python(inputs, rid)
    assert kinds <= _kinds(spark_found[rid])


@pytest.mark.parametrize(("rid", "kinds"), [(c[0], c[3]) for c in CORRUPTIONS])
def test_each_corruption_gives_exactly_its_kinds_in_both(
    spark_found: dict[str, Any], inputs: dict[str, Any], rid: str, kinds: set[str]
) -> None:
    python = _python(inputs, rid)
    assert _kinds(python) == kinds
    assert spark_found[rid] == python
    # the messages are not compared, but they are there and read alike
    assert all(a.message for a in spark_found[rid])


def test_one_run_at_least_once_leaves_out_idempotence_and_fencing(spark: Any, frames: Any, inputs: Any) -> None:
    found = check_invariants_spark(spark, frames, run_id="zombie-M6", at_least_once=True)
    assert found == _python(inputs, "zombie-M6", at_least_once=True)
    assert _kinds(found) == {"L4-data-after-marker"}


def test_bad_input_gives_one_clear_error(spark: Any, frames: dict[str, Any]) -> None:
    with pytest.raises(SparkBridgeError, match="pass run_id="):
        check_invariants_spark(spark, frames)
    with pytest.raises(SparkBridgeError, match="no rows of run 'nope'"):
        check_invariants_spark(spark, frames, run_id="nope")
    with pytest.raises(SparkBridgeError, match="Spark session first"):
        check_invariants_spark(None, frames)  # type: ignore[arg-type]
    with pytest.raises(SparkBridgeError, match="no 'fetches' table"):
        check_invariants_spark_by_run(spark, {k: v for k, v in frames.items() if k != "fetches"})
    with pytest.raises(SparkBridgeError, match="has no column 'hw'"):
        check_invariants_spark_by_run(spark, {**frames, "replicas": frames["replicas"].drop("hw")})
    with pytest.raises(SparkBridgeError, match="must be a Spark DataFrame"):
        check_invariants_spark_by_run(spark, {**frames, "batches": []})
    assert set(PYTHON_ONLY) == {"L11", "L12", "L13"}
