"""What a newcomer hit in JupyterLab (issue 28): re-running cells, silent magics, small dead ends.

Goal: every state change a magic makes is told in one line (what, at which simulated time, what
comes next); a cell re-run replaces what it made, saying so; the small dead ends a first user
walked into are open. Method: a real IPython shell (``TestingShell``) per test, the printed lines
read from ``capsys``; the command line through ``engine.cli.main``. Each test failed on the main
branch before these fixes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest

from eos_magics._testing import basic, dispose, run, txn_setup
from eos_magics._testing import testing_shell as new_shell


@pytest.fixture
def ip() -> Iterator:
    shell = new_shell()
    yield shell
    dispose(shell)


def printed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if line and not line.startswith("Out[")]


# -- item 2: Run All twice -------------------------------------------------------------------------------------


def test_creating_an_existing_cluster_replaces_it_in_one_line(ip, capsys) -> None:
    first = basic(ip)
    run(ip, "%eos_producer p1 -t app")
    capsys.readouterr()
    run(ip, "%eos_cluster create --seed 42")
    (line,) = [ln for ln in printed(capsys) if "replaced" in ln]
    assert line.startswith("cluster 'cluster' replaced by a fresh run from seed 42")
    assert "(p1)" in line
    assert ip.user_ns["cluster"] is not first and ip.user_ns["cluster"].now_ms < first.now_ms
    assert "p1" not in ip.user_ns


def test_creating_an_existing_client_replaces_it_and_the_new_instance_fences_the_old(ip, capsys) -> None:
    txn_setup(ip)
    old = ip.user_ns["t1"]
    capsys.readouterr()
    run(ip, "%eos_producer t1 -t app")
    (line,) = [ln for ln in printed(capsys) if "now names" in ln]
    assert (
        line == "'t1' now names a new producer (node t1-2); the old producer (node t1) is left as it is: "
        "it gets no more calls"
    )
    new = ip.user_ns["t1"]
    assert new is not old and new.producer_epoch > old.producer_epoch  # init_transactions fenced the old one
    run(ip, "%eos_consumer rc --assign out:0")
    assert next(ln for ln in printed(capsys) if "now names" in ln).endswith("the old consumer (node rc) is closed")


# -- item 4: state changes print one short line ----------------------------------------------------------------


def test_a_committed_transaction_cell_says_when_where_and_that_markers_follow(ip, capsys) -> None:
    txn_setup(ip)
    capsys.readouterr()
    run(ip, "%%eos_txn t1\n%eos_produce t1 out a b --partition 0")
    lines = printed(capsys)
    assert re.match(r"t=[\d,]+ ms: t1 \(app\) committed its transaction on out-0; ", lines[-1]), lines
    assert "still writing the commit markers (PrepareCommit)" in lines[-1] and "%eos_time run" in lines[-1]


def test_txn_line_magics_and_faults_each_print_one_line(ip, capsys) -> None:
    txn_setup(ip)
    capsys.readouterr()
    run(ip, "%eos_txn begin t1")
    run(ip, "%eos_produce t1 out a --partition 0")
    run(ip, "%eos_txn abort t1")
    run(ip, "%eos_fault crash 1")
    run(ip, "%eos_fault drop --type ProduceResponse")
    lines = [ln for ln in printed(capsys) if ln.startswith("t=")]
    assert "t1 (app) began a transaction" in lines[0]
    assert "t1 (app) aborted its transaction on out-0" in lines[1]
    assert "broker 1 crashed: its connections close" in lines[2] and "it led " in lines[2]
    assert re.search(r"rule \d+: drop the next ProduceResponse", lines[3])


def test_a_group_consumer_crash_and_restart_say_what_its_group_sees(ip, capsys) -> None:
    run(ip, "%eos_cluster create --brokers 1 --seed 1")
    run(ip, "%eos_topic create t --partitions 2")
    run(ip, "%eos_consumer c --group g --subscribe t")
    capsys.readouterr()
    run(ip, "%eos_fault crash c")
    run(ip, "%eos_fault restart c")
    lines = [ln for ln in printed(capsys) if ln.startswith("t=")]
    assert "c crashed: its connections close; a group member sends no LeaveGroup" in lines[0], lines
    assert "c restarted: a new process (a subscribed consumer joins its group again)" in lines[1], lines


def test_after_a_commit_the_views_say_the_markers_are_still_being_written(ip) -> None:
    txn_setup(ip)
    run(ip, "%eos_producer p0")
    run(ip, "%eos_produce p0 orders x y --partition 0")
    run(ip, "%eos_consumer src --group g --assign orders:0")
    run(ip, "%eos_consume src")
    run(ip, "%%eos_txn t1 --offsets-from src\n%eos_produce t1 out a --partition 0")
    listed = run(ip, "%eos_transactions list")
    assert listed.column("TransactionState") == ["PrepareCommit"]
    assert "markers still being written" in listed._repr_html_()
    run(ip, "%eos_time run 200")
    listed = run(ip, "%eos_transactions list")
    assert listed.column("TransactionState") == ["CompleteCommit"]
    assert "markers still being written" not in listed._repr_html_()


def test_offsets_from_a_consumer_that_read_nothing_is_said_not_a_traceback(ip, capsys) -> None:
    txn_setup(ip)
    run(ip, "%eos_consumer src --group g --assign orders:0")
    capsys.readouterr()
    run(ip, "%%eos_txn t1 --offsets-from src\n%eos_produce t1 out a --partition 0")
    assert "--offsets-from src: it has read nothing yet, so no offsets were sent" in printed(capsys)


def test_a_cell_that_raises_says_its_transaction_was_aborted_and_why(ip, capsys) -> None:
    txn_setup(ip)
    capsys.readouterr()
    with pytest.raises(RuntimeError, match="boom"):
        run(ip, "%%eos_txn t1\n%eos_produce t1 out a --partition 0\nraise RuntimeError('boom')")
    assert "t1 (app) aborted its transaction on out-0 because the cell raised RuntimeError; " in capsys.readouterr().out


# -- item 6: small dead ends -----------------------------------------------------------------------------------


def test_a_quoted_scenario_name_is_taken_as_the_readme_writes_it(ip) -> None:
    result = run(ip, '%eos_scenario run "idempotence: lost ack retry" --seed 3')
    assert "idempotence: lost ack retry" in result.text


def test_time_run_takes_units_and_its_error_names_the_unit(ip) -> None:
    c = basic(ip)
    start = c.now_ms
    assert run(ip, "%eos_time run 1s") == start + 1000
    assert run(ip, "%eos_time run 250ms") == start + 1250
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="simulated milliseconds"):
        run(ip, "%eos_time run soon")


def test_the_fenced_producer_message_names_the_producer_once(ip) -> None:
    from engine.errors import ProducerFencedException

    txn_setup(ip)
    zombie = ip.user_ns["t1"]
    zombie.begin_transaction()
    zombie.produce("out", value="z", partition=0)
    zombie.flush()
    run(ip, "%eos_producer t2 -t app")  # same transactional.id: the zombie is fenced
    with pytest.raises(ProducerFencedException) as info:
        zombie.commit_transaction()
    text = str(info.value)
    assert text.count("producerId=") == 1 and "producer_id=" not in text, text


def test_one_delivered_record_is_one_record(ip) -> None:
    basic(ip)
    run(ip, "%eos_producer p1")
    assert run(ip, "%eos_produce p1 out a").title == "1 record delivered"
    assert run(ip, "%eos_produce p1 out b c").title == "2 records delivered"


def test_eos_suggests_the_command_meant(capsys) -> None:
    from engine.cli import EXIT_USAGE, main

    assert main(["scenario"]) == EXIT_USAGE
    assert "did you mean 'eos scenarios'?" in capsys.readouterr().err


def test_eos_sweep_writes_no_carriage_returns_when_stderr_is_not_a_terminal(monkeypatch) -> None:
    from engine.commands import sweep

    err = io.StringIO()
    monkeypatch.setattr(sweep.sys, "stderr", err)
    for done in range(1, 21):
        sweep._bar(done, 20, 0, "demo")
    assert "\r" not in err.getvalue()
    assert err.getvalue().splitlines()[-1] == "20/20 runs, 0 failed"


# -- issue 29: a kernel without pandas, pyspark or kio (JupyterLite's Pyodide) -------------------------------


@pytest.mark.parametrize(
    ("cell", "needs"),
    [
        ("%eos_spark status", "%eos_spark needs pyspark"),
        ("%eos_serve", "%eos_serve (the Kafka wire protocol's codec) needs kio"),
        ("%eos_topic describe out\n_.to_pandas()", "to_pandas() needs pandas"),
    ],
)
def test_a_magic_needing_a_missing_package_says_so_in_one_line(ip, monkeypatch, cell: str, needs: str) -> None:
    import sys

    from IPython.core.error import UsageError

    basic(ip)
    for name in ("pyspark", "kio", "pandas"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError, as where it is absent
    monkeypatch.setattr(sys, "platform", "emscripten")
    with pytest.raises(UsageError) as info:
        for line in cell.split("\n"):
            run(ip, line)
    assert str(info.value).startswith(needs) and "JupyterLite" in str(info.value) and "\n" not in str(info.value)
