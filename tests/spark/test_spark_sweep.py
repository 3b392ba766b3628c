"""A seed sweep on Spark executors judges every seed exactly as the serial ``eos sweep`` does.

Goal: moving the runs onto Spark must change where they happen, never what they find. Method:
the same tasks run serially in this process with the engine's own ``run_one`` and on ``local[2]``
through :func:`eos_magics.spark.sweep.sweep`; status, kinds, verdict and the full fingerprint
must match seed by seed: 50 seeds of a correct configuration, then a mutant (M1, which drops
idempotent dedup) over two scenarios where some seeds must FAIL with ``duplicate``. A task that
names no scenario (built with ``run_tasks``, which skips the argument checks, as a worker would
see a bad task) raises inside ``run_one``: its row is a FAIL with the error, the others still run.
Bad arguments raise ``SparkBridgeError`` before any Spark job, and ``eos-spark sweep`` prints
byte for byte what ``eos sweep --quiet`` prints.
"""

from __future__ import annotations

import pytest

from engine.cli import main as eos_main
from engine.commands.sweep import run_one
from eos_magics.spark import cli
from eos_magics.spark import session as spark_session
from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.sweep import print_report, run_tasks, sweep, to_rows

pytestmark = pytest.mark.slow

FAST = "idempotence: lost ack retry"
DEDUP = "idempotence: dedup window"


def serial(names, seeds, mutant=None):
    return {(n, s): run_one((n, s, mutant, False)) for n in names for s in seeds}


def judged(row):
    """What both sweeps must agree on, from a serial Row."""
    return row.status, [] if row.kinds == "-" else row.kinds.split(","), row.verdict, row.full_fingerprint


def test_fifty_seeds_on_spark_match_the_serial_sweep_seed_by_seed(spark):
    seeds = range(1, 51)
    df = sweep(spark, FAST, "1..50")
    got = df.collect()
    want = serial([FAST], seeds)
    assert [(r.scenario, r.seed) for r in got] == [(FAST, s) for s in seeds]
    assert {(r.scenario, r.seed): (r.status, r.kinds, r.verdict, r.fingerprint) for r in got} == {
        k: judged(v) for k, v in want.items()
    }
    assert all(len(r.fingerprint) == 32 and r.error is None and r.mutant is None for r in got)
    assert [r.replay for r in got] == [f"eos run '{FAST}' --seed {s}" for s in seeds]
    assert [(r.ops, r.sim_ms) for r in got] == [(want[FAST, s].ops, want[FAST, s].sim_ms) for s in seeds]


def test_a_mutant_sweep_fails_the_same_seeds_with_the_same_kinds_sorted_by_scenario_then_seed(spark):
    seeds = [14, 3, 9, 1, 12, 6, 2, 7, 11, 5]
    df = sweep(spark, [FAST, DEDUP], seeds, "m1")  # case does not matter; rows carry the canonical id
    got = df.collect()
    want = serial([FAST, DEDUP], seeds, "M1")
    assert [(r.scenario, r.seed) for r in got] == [(n, s) for n in sorted([FAST, DEDUP]) for s in sorted(seeds)]
    assert {(r.scenario, r.seed): (r.status, r.kinds, r.verdict, r.fingerprint) for r in got} == {
        k: judged(v) for k, v in want.items()
    }
    failed = [r for r in got if r.scenario == FAST and r.status == "FAIL"]
    assert 0 < len(failed) < len(seeds)  # M1 loses dedup: some seeds duplicate, some never retry
    assert all(r.kinds == ["duplicate"] and r.replay.endswith("--mutant M1") for r in failed)
    assert {r.mutant for r in got} == {"M1"}
    assert to_rows(df) == sorted(want.values(), key=lambda r: (r.name, r.seed))


def test_a_run_that_raises_is_a_fail_row_and_the_job_still_completes(spark):
    tasks = [(FAST, 2, None, False), ("no such scenario", 1, None, False), (FAST, 1, None, False)]
    rows = run_tasks(spark, tasks, 2).to_pylist()
    assert [(r["scenario"], r["seed"], r["status"]) for r in rows] == [
        (FAST, 1, "PASS"),
        (FAST, 2, "PASS"),
        ("no such scenario", 1, "FAIL"),
    ]
    bad = rows[2]
    assert bad["kinds"] == ["error:KeyError"]
    assert bad["error"] == "KeyError: 'no such scenario'"
    assert bad["fingerprint"] is None and bad["ops"] is None
    assert "Traceback (most recent call last)" in bad["traceback"]
    assert bad["origin"].startswith("KeyError at ")
    assert bad["replay"] == "eos run 'no such scenario' --seed 1"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scenario": "idempotence: lost ack retri", "seeds": 3}, "did you mean 'idempotence: lost ack retry'"),
        ({"scenario": FAST, "seeds": 3, "mutant": "M99"}, "no mutant 'M99'; did you mean"),
        ({"scenario": FAST, "seeds": "9..2"}, "seed range '9..2' is empty"),
        ({"scenario": FAST, "seeds": [1, -4]}, "seed -4 is negative"),
        ({"scenario": FAST, "seeds": 3, "partitions": 0}, "partitions=0 must be an int >= 1"),
    ],
)
def test_bad_arguments_raise_one_line_before_any_spark_job(spark, kwargs, message):
    tracker = spark.sparkContext.statusTracker()
    jobs_before = set(tracker.getJobIdsForGroup())
    with pytest.raises(SparkBridgeError, match=message.replace("(", r"\(")) as info:
        sweep(spark, **kwargs)
    assert "\n" not in str(info.value)
    assert set(tracker.getJobIdsForGroup()) == jobs_before


def test_eos_spark_sweep_prints_what_eos_sweep_prints(spark, capsys):
    args = [FAST, "--seeds", "8", "--mutant", "M1"]
    assert cli.main(["sweep", *args, "--quiet"]) == 1
    spark_out = capsys.readouterr()
    assert eos_main(["sweep", *args, "--quiet"]) == 1
    assert spark_out.out == capsys.readouterr().out
    assert spark_out.err == ""
    assert "8 runs with M1: " in spark_out.out
    assert spark_session.active() is spark  # the CLI leaves a session it did not start running


def test_print_report_reads_the_mutant_from_the_dataframe(spark, capsys):
    failures = print_report(sweep(spark, FAST, [1, 2], "M1"))
    out = capsys.readouterr().out
    assert "2 runs with M1: 1 passed, 1 failed" in out
    assert [r.seed for r in failures] == [1]
