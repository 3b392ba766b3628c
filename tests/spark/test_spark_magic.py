"""``%eos_spark`` through a real IPython shell: start, status, views, check, stream, sweep, stop, and bad input.

Goal: the magic is the notebook's door to Spark. It binds the session as ``spark``, registers the
current cluster (or a catalog run) as temp views, judges them in Spark with the verdict the Python
checker gives, hands out a streaming DataFrame of a topic through the cluster's feed (stopped with
the cluster), runs sweeps, and answers every bad line with one ``UsageError`` line while the session
goes on. Method: a fresh ``TestingShell`` per test with ``eos_magics`` loaded, over the module's one
Spark session (fixture ``spark``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.error import UsageError

from eos_magics._testing import dispose, run, txn_setup
from eos_magics._testing import testing_shell as new_shell
from eos_magics.spark import session as spark_session

pytestmark = pytest.mark.slow


@pytest.fixture
def ip(spark) -> Iterator:
    shell = new_shell()
    yield shell
    dispose(shell)


def test_start_binds_the_session_and_status_describes_it(ip, spark) -> None:
    status = run(ip, "%eos_spark start")
    assert ip.user_ns["spark"] is spark
    assert status.master == "local[2]" and "local[2] (classic)" in repr(status)
    assert "JVM output:" in str(run(ip, "%eos_spark status"))


def test_views_and_check_judge_the_session_as_the_python_checker_does(ip, spark) -> None:
    txn_setup(ip)
    run(ip, "%%eos_txn t1\n%eos_produce t1 out a b --partition 0")
    run(ip, "%%eos_txn t1 --abort\n%eos_produce t1 out x --partition 0")
    run(ip, "%eos_time run 200")  # the coordinator writes the markers after answering EndTxn
    run(ip, "%eos_consume rc")
    views = run(ip, "%eos_spark views --prefix mg_")
    assert set(views.tables) >= {"records", "history", "history_mops", "txn_state", "trace"}
    markers = spark.sql("SELECT control_type FROM mg_records WHERE is_control AND topic = 'out' AND final_leader")
    assert sorted(r.control_type for r in markers.collect()) == ["ABORT", "COMMIT"]
    verdicts = run(ip, "%eos_spark check --prefix mg_")
    (verdict,) = list(verdicts)
    assert verdict.ok and verdict.mode == "eos"
    history = ip.user_ns["cluster"]
    from engine.check import check_history
    from engine.check.client_history import ClientHistory

    assert verdict.report == check_history(ClientHistory.attach(history).history())
    assert repr(verdicts).startswith("PASS ")


def test_check_fails_a_mutant_run_with_both_kinds_of_anomaly(ip) -> None:
    run(ip, '%eos_spark views --scenario "transactions: zombie fencing" --seed 3 --mutant M6 --prefix m6_')
    (verdict,) = list(run(ip, "%eos_spark check --prefix m6_"))
    assert not verdict.ok
    assert {"G1a", "L3-epoch-regression"} <= set(verdict.kinds)
    assert repr(run(ip, "%eos_spark check --prefix m6_")).startswith("FAIL transactions-zombie-fencing-s3-M6")


def test_stream_reads_the_current_cluster_through_its_feed_which_stops_with_it(ip) -> None:
    txn_setup(ip)
    df = run(ip, "%eos_spark stream out --isolation read_uncommitted")
    assert df.isStreaming and "value" in df.columns
    shell_session = ip.magics_manager.registry["SparkMagics"].session
    feed = shell_session.entry().feed
    assert feed is not None and feed.running
    run(ip, "%eos_cluster delete")
    assert not feed.running


def test_a_fork_stops_the_old_clusters_feed_and_the_next_stream_serves_the_fork(ip) -> None:
    txn_setup(ip)
    run(ip, "%eos_spark stream out --isolation read_uncommitted")
    shell_session = ip.magics_manager.registry["SparkMagics"].session
    entry = shell_session.entry()
    old = entry.feed
    shell_session.fork(len(entry.cluster.world.trace) - 1, entry.name)  # after the topic exists
    assert not old.running and entry.feed is None
    run(ip, "%eos_spark stream out --isolation read_uncommitted")
    assert entry.feed is not None and entry.feed.running and entry.feed is not old


def test_sweep_gives_a_dataframe_of_verdicts(ip) -> None:
    rows = run(ip, "%eos_spark sweep idempotence: lost ack retry --seeds 1..3").collect()
    assert [r.seed for r in rows] == [1, 2, 3] and {r.status for r in rows} == {"PASS"}
    counted = run(ip, "%eos_spark sweep idempotence: lost ack retry --seeds 2").collect()  # a count: seeds 1..2
    assert [r.seed for r in counted] == [1, 2]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%eos_spark strat", "unknown action 'strat'; did you mean 'start'"),
        ("%eos_spark stream", "name the topic"),
        ("%eos_spark stream nope", "no topic 'nope'"),
        ("%eos_spark views --dir /nonexistent/eos-runs", "/nonexistent/eos-runs"),
        ("%eos_spark views --dir /tmp --scenario x", "--dir or --scenario, not both"),
        ("%eos_spark views --scenario nope", "no catalog scenario 'nope'"),
        ("%eos_spark views --scenario 'transactions: zombie fencing' --mutant M99", "no mutant 'M99'"),
        ("%eos_spark check --prefix none_", "no temp view 'none_history'"),
        ("%eos_spark check --mode exactly", "mode must be one of"),
        ("%eos_spark sweep", "name the scenario"),
        ("%eos_spark sweep nope --seeds 1..3", "nope"),
        ("%eos_spark sweep idempotence: lost ack retry --seeds 3..1", "seed range .3..1. is empty"),
        ("%eos_spark start --master mars://x", "not one Spark knows"),
    ],
)
def test_bad_input_is_one_line_and_the_session_goes_on(ip, line: str, message: str) -> None:
    txn_setup(ip)
    with pytest.raises(UsageError, match=message) as info:
        run(ip, line)
    assert "\n" not in str(info.value)
    assert spark_session.active() is not None
    assert run(ip, "%eos_consumer c --assign orders:0") is not None


def test_stop_ends_the_jvm_and_without_spark_a_data_action_says_to_start_it(ip) -> None:
    from pyspark import SparkContext

    jvm = SparkContext._gateway.proc
    assert run(ip, "%eos_spark stop") == "Spark stopped"
    assert jvm.poll() is not None, "the JVM (about 1 GB) must end with %eos_spark stop, not with the kernel"
    try:
        with pytest.raises(UsageError, match="Spark is not running; start it first"):
            run(ip, "%eos_spark views")
        assert "not running" in str(run(ip, "%eos_spark status"))
        assert run(ip, "%eos_spark stop") == "Spark was not running"
    finally:
        run(ip, "%eos_spark start")
    assert spark_session.active() is not None
