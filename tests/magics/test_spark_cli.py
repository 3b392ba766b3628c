"""``eos-spark`` refuses bad arguments with one line and exit 2, before any Spark starts.

Goal: a typo must cost a second, not a JVM launch and a stack trace. Method: in this process,
``eos_magics.spark.session.start`` is replaced by a function that fails the test if called, and
every bad command line must exit 2 with one stderr line that says what to type. In a fresh
interpreter (where nothing imported pyspark before), a bad master URL and ``eos-spark status``
must leave pyspark unimported: no JVM can have started. No Spark job runs in this module.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eos_magics.spark import cli
from eos_magics.spark import session as spark_session

FAST = "idempotence: lost ack retry"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_spark(monkeypatch):
    def start_must_not_run(*args, **kwargs):
        raise AssertionError("eos-spark started Spark for a command line it should have refused")

    monkeypatch.setattr(spark_session, "start", start_must_not_run)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "eos-spark: a command is needed, e.g. eos-spark sweep"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["sweep"], "the following arguments are required: name"),
        (["sweep", "nope"], "eos-spark: no catalog scenario named 'nope'; run 'eos scenarios' to list them"),
        (["sweep", "idempotence: lost ack retri"], f"did you mean '{FAST}'?"),
        (["sweep", FAST, "--seeds", "0"], "seeds=0 runs nothing"),
        (["sweep", FAST, "--seeds", "5..1"], "seed range '5..1' is empty; write the smaller seed first"),
        (["sweep", FAST, "--seeds", "1,x"], "'x' is neither a seed nor a range; use e.g. '1..50'"),
        (["sweep", FAST, "--seeds", "1,3,1..2"], "seed 1 is given twice"),
        (["sweep", FAST, "--mutant", "M99"], "no mutant 'M99'; did you mean 'M9'?"),
        (["sweep", FAST, "--partitions", "0"], "argument --partitions: must be an int >= 1"),
        (["sweep", FAST, "--conf", "archives=env.tgz"], "expected KEY=VALUE with a spark.* key"),
        (["sweep", "all", FAST], "'all' already names every scenario; give it alone"),
        (["sweep", FAST, FAST], f"scenario '{FAST}' is named twice"),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2_without_spark(no_spark, capsys, argv, message):
    assert cli.main(argv) == cli.EXIT_USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert message in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_seed_ranges_and_lists_reach_the_sweep_as_eos_sweep_counts_them(no_spark, capsys):
    from eos_magics.spark.sweep import parse_seeds, plan

    assert parse_seeds(3) == [1, 2, 3]  # --seeds 3 is a count, as in eos sweep
    assert parse_seeds("3,17,40..42") == [3, 17, 40, 41, 42]
    assert parse_seeds(range(2)) == [0, 1]
    assert plan(FAST, "2..3", "m1", swarm=True) == [(FAST, 2, "M1", True), (FAST, 3, "M1", True)]
    everything = plan("all", 1)
    assert len(everything) > 20 and everything[0][1:] == (1, None, False)


def test_a_bad_master_and_status_start_no_jvm_in_a_fresh_process():
    script = textwrap.dedent(
        f"""
        import json, sys
        from eos_magics.spark.cli import main
        codes = [main(["sweep", {FAST!r}, "--seeds", "3", "--master", "local[0]"]), main(["status"])]
        print(json.dumps({{"codes": codes, "pyspark": any(m.startswith("pyspark") for m in sys.modules)}}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    result = json.loads(lines[-1])
    assert result == {"codes": [cli.EXIT_USAGE, 0], "pyspark": False}
    refused = (
        "eos-spark: Spark master 'local[0]' is not one Spark knows; use local[2], local[*], spark://HOST:PORT, "
        "yarn, k8s://URL or sc://HOST:PORT (Spark Connect)"
    )
    assert proc.stderr.splitlines() == [refused]
    assert lines[0].startswith("no Spark session runs in this process")
    assert lines[1].startswith("a new session would use master ")


def test_status_with_a_bad_memory_setting_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("EOS_SPARK_DRIVER_MEMORY", "lots")
    if spark_session.active() is not None:
        pytest.skip("a Spark session from another module still runs in this process")
    assert cli.main(["status"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == "eos-spark: EOS_SPARK_DRIVER_MEMORY='lots' is not a size; use a number with k, m, g or t, e.g. 512m\n"
