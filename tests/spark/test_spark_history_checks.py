"""Parity of the Spark history checks with the Python checker: the same Report, record for record.

Goal: ``check_history_spark`` / ``check_runs_spark`` (``eos_magics/spark/history_checks.py``)
give exactly the report of :func:`engine.check.check_history` on the same history: the same
forbidden and allowed anomalies (kind, key, offsets, values, ops; messages too), the same stats.
Method: every input is exported with :func:`engine.export.history.history_tables` under its
own ``run_id``; all of them are stacked into one pair of DataFrames and checked in a single
``check_runs_spark`` call (a check grouped by run is what a sweep's export needs, and one call
keeps this module fast). The inputs: (a) every example of :mod:`engine.check.examples`, (b)
clean catalog runs, (c) mutant runs whose histories show anomalies (each asserted to show the
kind it was picked for, so the comparison is not vacuous), and (d) one hand-made history per
mode, checked in its own mode (``allowed`` maps run ids to modes). Last, the entry points refuse
bad input with one clear line.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from engine.check import ALLOWED_BY_MODE, check_history
from engine.check.examples import EXAMPLES, op, poll, send, serial_history
from engine.export.common import RunId
from engine.export.history import history_tables
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.scenarios.mutants import get_mutant
from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.history_checks import check_history_spark, check_runs_spark

pytestmark = pytest.mark.slow

CLEAN = [
    ("transactions: zombie fencing", 1),
    ("transactions: zombie fencing", 2),
    ("copier: random aborts", 1),
    ("copier: random aborts", 2),
    ("isolation: levels", 1),
    ("isolation: levels", 2),
    ("swarm: soak", 1),
    ("swarm: soak", 2),
]

#: (scenario, seed, mutant, a kind its history must show), after docs/mutants.md.
MUTANTS = [
    ("idempotence: lost ack retry", 1, "M1", "duplicate"),
    ("idempotence: dedup window", 1, "M2", "G1a"),
    ("replication: isolated old leader", 1, "M3", "unseen"),
    ("replication: unclean election", 1, "M4", "inconsistent-offsets"),
    ("isolation: levels", 1, "M5", "precommitted-read"),
    ("transactions: zombie fencing", 1, "M6", "lost-write"),
    ("isolation: lso off by one", 2, "M10", "int-poll-skip"),
    ("copier: random aborts", 1, "M13", "poll-skip"),
    ("transactions: timeout", 1, "M14", "lost-write"),
]


#: One hand-made history per mode, each with kinds that mode allows and kinds it forbids.
MODES = {
    "eos": serial_history(
        op(0, "txn", "ok", send("a", 0), send("c", 2)),
        op(1, "txn", "ok", send("b", 1), poll(1, "b")),  # int-send-skip, G0, precommitted-read
        op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
    ),
    "subscribe": serial_history(
        op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
        op(1, "subscribe", "ok", keys=[("t", 0)]),
        op(1, "poll", "ok", poll(0, "a")),
        op(1, "poll", "ok", poll(2, "c")),  # poll-skip: allowed when subscribed
        op(1, "poll", "ok", poll(2, "c")),  # nonmonotonic-poll: allowed too
        op(2, "txn", "fail", send("x", 3), error="aborted"),
        op(3, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c"), poll(3, "x")),  # G1a
    ),
    "at-least-once": serial_history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(0, "send", "info", send("c"), error="timeout"),
        op(1, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "a"), poll(3, "c")),  # duplicate
        op(0, "send", "ok", send("d", 4)),  # unseen
    ),
}


def _tables(histories):
    """Stack the export tables of ``{run_id: history}`` into one Arrow pair."""
    lines, mops = [], []
    for run_id, h in histories.items():
        t = history_tables(h, RunId(run_id, "", 0))
        lines.append(t["history"])
        mops.append(t["history_mops"])
    return pa.concat_tables(lines), pa.concat_tables(mops)


def _frames(spark, histories):
    lines, mops = _tables(histories)
    return spark.createDataFrame(lines), spark.createDataFrame(mops)


def _example_id(name):
    return f"example: {name}"


@pytest.fixture(scope="module")
def batch(spark):
    """Every input of (a)-(d), its Python report and its Spark report, from one Spark call.

    The mode histories are checked in their own mode, the others in ``eos``.
    """
    histories = {_example_id(name): ex.history for name, ex in EXAMPLES.items() if len(ex.history)}
    for scenario, seed in CLEAN:
        histories[f"clean: {scenario}/{seed}"] = run_spec(BY_NAME[scenario], seed).history
    for scenario, seed, mutant, _kind in MUTANTS:
        histories[f"{mutant}: {scenario}/{seed}"] = run_spec(BY_NAME[scenario], seed, mutant=get_mutant(mutant)).history
    modes = {f"mode: {mode}": mode for mode in MODES}
    histories.update({run_id: MODES[mode] for run_id, mode in modes.items()})
    lines, mops = _frames(spark, histories)
    t0 = time.perf_counter()
    reports = check_runs_spark(spark, lines, mops, allowed=modes)
    seconds = time.perf_counter() - t0
    python = {run_id: check_history(h, allowed=modes.get(run_id, "eos")) for run_id, h in histories.items()}
    return python, reports, seconds


def _same(python, spark_report):
    assert spark_report.forbidden == python.forbidden
    assert spark_report.allowed == python.allowed
    assert spark_report.allowed_kinds == python.allowed_kinds
    assert spark_report.stats == python.stats
    assert [a.message for a in spark_report.anomalies] == [a.message for a in python.anomalies]
    assert spark_report == python


def test_one_call_checks_every_run_of_the_batch(batch):
    python, reports, seconds = batch
    assert sorted(reports) == sorted(python)
    print(f"\ncheck_runs_spark: {len(reports)} runs in {seconds:.1f} s")


@pytest.mark.parametrize("name", [n for n, ex in EXAMPLES.items() if len(ex.history)])
def test_spark_equals_python_on_example(batch, name):
    python, reports, _ = batch
    run_id = _example_id(name)
    _same(python[run_id], reports[run_id])
    assert tuple(sorted(reports[run_id].kinds())) == EXAMPLES[name].expected_kinds


@pytest.mark.parametrize(("scenario", "seed"), CLEAN)
def test_spark_equals_python_on_clean_run(batch, scenario, seed):
    python, reports, _ = batch
    run_id = f"clean: {scenario}/{seed}"
    assert python[run_id].ok
    assert python[run_id].stats["reads"] > 0
    _same(python[run_id], reports[run_id])


@pytest.mark.parametrize(("scenario", "seed", "mutant", "kind"), MUTANTS)
def test_spark_equals_python_on_mutant_run(batch, scenario, seed, mutant, kind):
    python, reports, _ = batch
    run_id = f"{mutant}: {scenario}/{seed}"
    assert kind in {a.kind for a in python[run_id].forbidden}
    _same(python[run_id], reports[run_id])


@pytest.mark.parametrize("mode", list(MODES))
def test_spark_equals_python_in_each_mode(batch, mode):
    python, reports, _ = batch
    run_id = f"mode: {mode}"
    assert python[run_id].allowed_kinds == ALLOWED_BY_MODE[mode]
    assert python[run_id].allowed
    assert python[run_id].forbidden
    _same(python[run_id], reports[run_id])


def test_empty_tables_give_an_empty_report(spark):
    empty = EXAMPLES["clean: empty history"].history
    t = history_tables(empty, RunId("empty", "", 0))
    report = check_history_spark(spark, spark.createDataFrame(t["history"]), spark.createDataFrame(t["history_mops"]))
    assert report == check_history(empty)


def test_several_runs_need_a_run_id(spark):
    lines, mops = _frames(spark, {"a": MODES["eos"], "b": MODES["subscribe"]})
    with pytest.raises(SparkBridgeError, match="several runs"):
        check_history_spark(spark, lines, mops)


def test_tables_that_are_no_history_are_refused_naming_the_line(spark):
    lines, mops = _tables({"r": MODES["eos"]})
    lines = lines.filter(pa.compute.not_equal(lines["index"], 2))  # the invocation of op 3
    with pytest.raises(SparkBridgeError, match="line 3: a completion without an invocation"):
        check_runs_spark(spark, spark.createDataFrame(lines), spark.createDataFrame(mops))


def test_bad_arguments_are_refused_before_any_spark_work(spark):
    lines, mops = _tables({"r": MODES["eos"]})
    df_lines, df_mops = spark.createDataFrame(lines), spark.createDataFrame(mops)
    with pytest.raises(SparkBridgeError, match="unknown mode"):
        check_history_spark(spark, df_lines, df_mops, allowed="exactly-once")
    with pytest.raises(SparkBridgeError, match="Spark DataFrame"):
        check_history_spark(spark, lines, df_mops)
    with pytest.raises(SparkBridgeError, match="no column"):
        check_history_spark(spark, df_lines.drop("process"), df_mops)
