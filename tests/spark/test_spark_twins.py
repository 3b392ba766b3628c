"""Every checker's Spark twin: the table is complete both ways, and each pair words its anomalies alike.

Goal: :data:`eos_magics.spark.checks.twins.TWINS` pairs every anomaly kind with the Python
function that reports it and the Spark functions that compute it; a kind with no twin is in
``NO_TWIN`` with its reason; every Spark check names a kind. Each pair is then run on inputs
that show its kind (the example histories for the history checkers; the runs and corruptions of
``test_spark_invariants`` for the invariants, whose fixtures are reused) and must give the same
records, sentences included, byte for byte.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from typing import Any

import pyarrow as pa
import pytest

from engine.check.anomaly import KINDS as HISTORY_KINDS
from engine.check.examples import EXAMPLES
from engine.check.ground_truth import GroundTruth
from engine.check.invariants import KINDS as INVARIANT_KINDS
from engine.check.invariants._common import txn_spans
from engine.export.common import RunId
from engine.export.history import history_tables
from engine.export.logs import log_tables, partition_state_table
from eos_magics.spark import invariants as spark_invariants
from eos_magics.spark.checks.twins import NO_TWIN, SPARK_CHECK_MODULES, TWINS, WORDED_APART
from eos_magics.spark.history_checks import check_runs_spark
from eos_magics.spark.invariants import check_invariants_spark_by_run
from tests.spark.test_spark_invariants import (  # noqa: F401 - the fixtures are reused
    Samples,
    _final,
    _same_batch_everywhere,
    frames,
    inputs,
    spark_found,
)

pytestmark = pytest.mark.slow

_HISTORY_TWINS = [t for t in TWINS if t.kind in HISTORY_KINDS]
_INVARIANT_TWINS = [t for t in TWINS if t.kind in INVARIANT_KINDS]


def _spark_checks(module: Any) -> set[Any]:
    """The public functions of ``module`` that read the shared frames (``check`` where it is the only one)."""
    found = {
        f
        for name, f in inspect.getmembers(module, inspect.isfunction)
        if f.__module__ == module.__name__
        and not name.startswith("_")
        and list(inspect.signature(f).parameters.values())[:1]
        and str(next(iter(inspect.signature(f).parameters.values())).annotation) == "Frames"
    }
    checks = {f for f in found if f.__name__ != "check"}
    return checks or found


def test_every_kind_has_a_twin_or_a_reason_to_have_none() -> None:
    kinds = [t.kind for t in TWINS]
    assert len(kinds) == len(set(kinds))
    assert not set(kinds) & set(NO_TWIN)
    assert set(kinds) | set(NO_TWIN) == set(HISTORY_KINDS) | set(INVARIANT_KINDS)
    assert all(NO_TWIN.values())


def test_every_spark_check_is_in_the_table() -> None:
    paired = {f for t in TWINS for f in t.spark}
    checks = set().union(*(_spark_checks(m) for m in SPARK_CHECK_MODULES))
    assert checks == paired
    families = {*spark_invariants._FAMILIES, spark_invariants.idempotence}
    assert families <= set(SPARK_CHECK_MODULES)


def test_the_kinds_spark_checks_are_the_invariant_twins() -> None:
    assert {t.kind for t in _INVARIANT_TWINS} == spark_invariants.SPARK_KINDS


@pytest.fixture(scope="module")
def examples(spark: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every non-empty example history and its Spark report, from one Spark call."""
    histories = {name: ex.history for name, ex in EXAMPLES.items() if len(ex.history)}
    lines, mops = [], []
    for name, h in histories.items():
        t = history_tables(h, RunId(name, "", 0))
        lines.append(t["history"])
        mops.append(t["history_mops"])
    history_df = spark.createDataFrame(pa.concat_tables(lines))
    mops_df = spark.createDataFrame(pa.concat_tables(mops))
    return histories, check_runs_spark(spark, history_df, mops_df, allowed=())


def _worded(anomalies: Any, kind: str) -> list[tuple[Any, str]]:
    return [(a, a.message) for a in anomalies if a.kind == kind]


@pytest.mark.parametrize("twin", _HISTORY_TWINS, ids=lambda t: t.kind)
def test_history_twins_word_their_kind_alike(examples: Any, twin: Any) -> None:
    histories, reports = examples
    shown = 0
    for name, h in histories.items():
        python = _worded(twin.python(h), twin.kind)
        assert _worded(reports[name].anomalies, twin.kind) == python, name
        shown += len(python)
    assert shown, f"no example history shows {twin.kind}"


# -- corruptions for the kinds no run of test_spark_invariants shows -------------------------------


def sequence_reused(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """The last batch of a producer epoch starts one sequence early: its first sequence is written twice."""
    last = _final(gt, lambda b: b.producer_id >= 0 and not b.is_control and b.base_sequence > 0)[-1]
    return _same_batch_everywhere(
        gt, last, lambda b: b._replace(base_sequence=b.base_sequence - 1, last_sequence=b.last_sequence - 1)
    ), samples


def marker_below_data(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """The marker of a non-empty transaction carries an epoch below its data's."""
    tp, span = next(
        (tp, s)
        for tp in gt.partition_keys()
        if not tp[0].startswith("__")
        for s in txn_spans(gt.final_log(tp))[0]
        if s.data_offsets and s.marker_offset is not None
    )
    pick = next(b for b in gt.final_log(tp) if b.base_offset == span.marker_offset)
    return _same_batch_everywhere(gt, pick, lambda b: b._replace(producer_epoch=max(span.data_epochs) - 1)), samples


def plain_batch_in_txn(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """The second batch of a transaction is written without the transactional flag."""
    tp, offset = next(
        (tp, s.data_offsets[1])
        for tp in gt.partition_keys()
        if not tp[0].startswith("__")
        for s in txn_spans(gt.final_log(tp))[0]
        if len(s.data_offsets) > 1
    )
    pick = next(b for b in gt.final_log(tp) if b.base_offset == offset)
    return _same_batch_everywhere(gt, pick, lambda b: b._replace(is_transactional=False)), samples


def lso_above_hw(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """A leader's last sample has its LSO one above its HW."""
    last = next(s for s in reversed(samples) if s.hw > 0)
    return gt, [*samples, last._replace(index=samples[-1].index + 1, lso=last.hw + 1)]


def txn_epoch_back(gt: GroundTruth, samples: Samples) -> tuple[GroundTruth, Samples]:
    """In every history of one transactional id, the last transition keeps its producer id but lowers its epoch."""
    rows = list(gt.txn_history)
    txn_id = rows[0].transactional_id
    groups: dict[tuple[str, int], list[int]] = {}
    for i, r in enumerate(rows):
        if r.transactional_id == txn_id:
            groups.setdefault((r.source, r.broker_id), []).append(i)
    for idx in groups.values():
        idx.sort(key=lambda i: rows[i].index)
        pairs = [(a, b) for a, b in itertools.pairwise(idx) if rows[a].producer_id == rows[b].producer_id]
        if pairs:
            a, b = pairs[-1]
            rows[b] = rows[b]._replace(producer_epoch=rows[a].producer_epoch - 1)
    return dataclasses.replace(gt, txn_history=tuple(rows)), samples


#: (run id, base run of test_spark_invariants, corruption, a kind it must give).
MORE = [
    ("t-seq-reused", "crash-s1", sequence_reused, "L2-sequence-duplicate"),
    ("t-marker-epoch", "zombie-s3", marker_below_data, "L4-marker-epoch"),
    ("t-plain-in-txn", "zombie-s3", plain_batch_in_txn, "L4-non-transactional-in-txn"),
    ("t-lso-above-hw", "zombie-s3", lso_above_hw, "L7-offset-order"),
    ("t-txn-epoch", "zombie-s3", txn_epoch_back, "L10-epoch-regression"),
]


@pytest.fixture(scope="module")
def more(spark: Any, inputs: Any) -> tuple[dict[str, Any], dict[str, Any]]:  # noqa: F811
    """The runs of :data:`MORE`, their inputs and their Spark anomalies, from one Spark call."""
    runs = {rid: corrupt(*inputs[base]) for rid, base, corrupt, _kind in MORE}
    parts: dict[str, list[pa.Table]] = {}
    for rid, (gt, samples) in runs.items():
        run = RunId(rid, "", 0)
        for name, t in {**log_tables(gt, run), "partition_state": partition_state_table(samples, run)}.items():
            parts.setdefault(name, []).append(t)
    tables = {name: spark.createDataFrame(pa.concat_tables(ts).combine_chunks()) for name, ts in parts.items()}
    return runs, check_invariants_spark_by_run(spark, tables)


@pytest.mark.parametrize(("rid", "kind"), [(m[0], m[3]) for m in MORE])
def test_each_added_corruption_shows_its_kind(more: Any, rid: str, kind: str) -> None:
    _runs, found = more
    assert kind in {a.kind for a in found[rid]}


def _python_of(twin: Any, gt: GroundTruth, samples: Samples) -> list[Any]:
    return twin.python(samples) if twin.python.__name__ == "check_offsets_monotonic" else twin.python(gt)


def _sorted_worded(anomalies: Any, kind: str) -> list[tuple[Any, str]]:
    worded = _worded(anomalies, kind)
    if kind in WORDED_APART:
        worded = [(a, "") for a, _message in worded]
    return sorted(worded, key=lambda p: (p[0].key or ("", -1), p[0].offsets, p[1]))


@pytest.mark.parametrize("twin", _INVARIANT_TWINS, ids=lambda t: t.kind)
def test_invariant_twins_word_their_kind_alike(spark_found: Any, inputs: Any, more: Any, twin: Any) -> None:  # noqa: F811
    runs, found = more
    shown = 0
    for rid, (gt, samples) in [*inputs.items(), *runs.items()]:
        python = _sorted_worded(_python_of(twin, gt, samples), twin.kind)
        spark = _sorted_worded((found if rid in runs else spark_found)[rid], twin.kind)
        assert spark == python, rid
        shown += len(python)
    assert shown, f"no run shows {twin.kind}"
