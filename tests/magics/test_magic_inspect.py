"""The inspect magics, ``%eos_check`` and ``%eos_scenario`` through a real IPython shell.

Goal: ``%eos_dump_log``, ``%eos_producer_state``, ``%eos_transactions`` and
``%eos_consumer_groups`` return views whose text is exactly what the engine's tools print and
which render as HTML; ``%eos_check`` is OK on a clean session, reports G1a after a
read_uncommitted consumer reads an aborted transaction, and ``--save`` writes a history that
``engine.check.load_jsonl`` reads back to the same verdict; ``%eos_scenario`` lists, runs (same
seed, same fingerprint), fails a catalog scenario under its mutant, and sweeps seeds.

Method: one fresh ``testing_shell()`` per test; each view is compared with the engine call on
the cluster the magics bound (``cluster.dump_log``, ``cluster.transactions().list()`` ...), each
scenario with the registry's own run. No mocks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine import Cluster
from engine.check import check_history, load_jsonl
from eos_magics._testing import TestingShell as Shell
from eos_magics._testing import basic, drain, run, txn_setup
from eos_magics.errors import EosUsageError
from eos_magics.views import View

# -- the inspect magics: the engine's own text -----------------------------------------------------------------


def inspect_setup(ip: Shell) -> Cluster:
    c = basic(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 orders i1 i2 -p 0")
    run(ip, "%eos_producer t1 -t app")
    run(ip, "%%eos_txn t1\n%eos_produce t1 orders c1 -p 0\n")
    run(ip, "%%eos_txn t1 --abort\n%eos_produce t1 orders a1 -p 0\n")
    run(ip, "%eos_consumer c1 --assign orders:0 --group G")
    drain(ip, "c1")
    run(ip, "c1.commit(asynchronous=False)")
    run(ip, "%eos_time run 1000")
    return c


def check_view(view: Any, text: str) -> None:
    assert isinstance(view, View)
    assert repr(view) == str(view) == view.text == text
    html = view._repr_html_()
    assert isinstance(html, str)
    assert 'class="eos-view"' in html


def test_dump_log_views_are_the_engines_text(ip: Shell) -> None:
    c = inspect_setup(ip)
    check_view(run(ip, "%eos_dump_log orders"), c.dump_log("orders", 0))
    check_view(run(ip, "%eos_dump_log orders -p 1"), c.dump_log("orders", 1))
    check_view(run(ip, "%eos_dump_log orders -p 0 -b 2"), c.dump_log("orders", 0, 2))
    check_view(run(ip, "%eos_dump_log orders --txn-index"), c.dump_txn_index("orders", 0))
    check_view(run(ip, "%eos_dump_log orders --txn-index -b 3"), c.dump_txn_index("orders", 0, 3))
    check_view(run(ip, "%eos_dump_log __transaction_state"), c.dump_transaction_state())
    check_view(run(ip, "%eos_dump_log __transaction_state --transactional-id app"), c.dump_transaction_state("app"))
    dump = run(ip, "%eos_dump_log orders")
    assert dump.column("kind") == ["plain", "committed", "commit-marker", "aborted", "abort-marker"]
    assert "<svg" in dump._repr_html_()


def test_producer_state_view(ip: Shell) -> None:
    c = inspect_setup(ip)
    view = run(ip, "%eos_producer_state orders")
    check_view(view, str(c.producer_state("orders", 0)))
    assert len(view.rows) == 2  # p1 and t1
    check_view(run(ip, "%eos_producer_state orders -p 0 -b 2"), str(c.producer_state("orders", 0, 2)))
    assert run(ip, "%eos_producer_state orders -p 1").rows == ()


def test_transactions_views(ip: Shell) -> None:
    c = inspect_setup(ip)
    listed = run(ip, "%eos_transactions list")
    described = run(ip, "%eos_transactions describe app")
    producers = run(ip, "%eos_transactions describe-producers orders -p 0")
    producers_b2 = run(ip, "%eos_transactions describe-producers orders -b 2")
    hanging_b = run(ip, "%eos_transactions find-hanging -b 1")
    hanging_t = run(ip, "%eos_transactions find-hanging orders -p 0 --max-transaction-timeout 1")
    part = run(ip, "%eos_transactions partition orders -p 1")
    admin = c.transactions()
    check_view(listed, admin.list())
    assert listed.column("TransactionalId") == ["app"]
    # A second DescribeTransactions crosses the network again: only the duration (column 7) has moved on.
    check_view(described, described.text)
    again = [line.split("\t") for line in admin.describe("app").split("\n")]
    shown = [line.split("\t") for line in described.text.split("\n")]
    assert [c[:7] + c[8:] for c in shown] == [c[:7] + c[8:] for c in again]
    assert described.column("TransactionState") == ["CompleteAbort"]
    check_view(producers, admin.describe_producers("orders", 0, None))
    assert len(producers.rows) == 2
    check_view(producers_b2, admin.describe_producers("orders", 0, 2))
    check_view(hanging_b, admin.find_hanging(1, None, None, 15))
    assert hanging_b.rows == ()
    check_view(hanging_t, admin.find_hanging(None, "orders", 0, 1))
    assert repr(part).startswith(str(c.describe_partition("orders", 1)))
    assert sorted(part.column("broker")) == sorted(c.brokers)
    assert part.column("isLeader").count(True) == 1


def test_transactions_abort_closes_an_open_transaction(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_producer t1 -t app")
    run(ip, "%eos_txn begin t1")
    assert run(ip, "%eos_produce t1 orders open -p 0").column("offset") == [0]
    assert c.describe_partition("orders", 0).last_stable_offset == 0  # the open transaction holds the LSO
    aborted = run(ip, "%eos_transactions abort orders -p 0 --start-offset 0")
    assert aborted.text == ""  # the tool prints nothing
    assert aborted.column("StartOffset") == [0]
    assert "endTxnMarker: ABORT" in c.dump_log("orders", 0)
    assert c.describe_partition("orders", 0).last_stable_offset == 2


def test_consumer_groups_views(ip: Shell) -> None:
    c = inspect_setup(ip)
    described = run(ip, "%eos_consumer_groups describe --group G")
    check_view(described, c.describe_group("G"))
    assert described.column("CURRENT-OFFSET") == [6]
    state = run(ip, "%eos_consumer_groups describe --group G --state")
    check_view(state, c.describe_group("G", state=True))
    members = run(ip, "%eos_consumer_groups describe --group G --members --verbose")
    check_view(members, c.describe_group("G", members=True, verbose=True))
    listed = run(ip, "%eos_consumer_groups list")
    check_view(listed, "G")
    assert listed.column("group") == ["G"]
    missing = run(ip, "%eos_consumer_groups describe --group nobody")
    assert "GroupIdNotFoundException: Group nobody not found." in missing.text


def test_cluster_and_topic_views_have_html(ip: Shell) -> None:
    basic(ip)
    for cell in ("%eos_cluster describe", "%eos_cluster list", "%eos_topic list", "%eos_topic describe orders"):
        view = run(ip, cell)
        assert 'class="eos-view"' in view._repr_html_()


# -- %eos_check -----------------------------------------------------------------------------------------------------


def test_check_is_ok_on_a_clean_session(ip: Shell) -> None:
    txn_setup(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 orders a b -p 0")
    run(ip, "%%eos_txn t1\n%eos_produce t1 out A\n")
    run(ip, "%%eos_txn t1 --abort\n%eos_produce t1 out X\n")
    drain(ip, "rc")
    report = run(ip, "%eos_check")
    assert report.ok
    assert report.text.startswith("OK: 0 forbidden")
    assert report.rows == ()
    assert 'class="eos-view"' in report._repr_html_()
    assert run(ip, "%eos_check --mode at-least-once").ok
    assert run(ip, "%eos_check --mode subscribe").ok


def test_check_reports_g1a_when_read_uncommitted_reads_an_abort(ip: Shell) -> None:
    txn_setup(ip)
    with pytest.raises(ZeroDivisionError):
        run(ip, "%%eos_txn t1\n%eos_produce t1 out X\n1 / 0\n")
    run(ip, "%eos_time run 1000")
    assert drain(ip, "ru") == ["X"]
    report = run(ip, "%eos_check")
    assert not report.ok
    assert report.text.startswith("FAIL: 1 forbidden")
    assert report.column("kind") == ["G1a"]
    assert report.column("forbidden") == [True]
    assert report.column("values") == [("X",)]


def test_check_save_writes_jsonl_that_load_jsonl_reads(ip: Shell, tmp_path: Path) -> None:
    txn_setup(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 out a b")
    path = tmp_path / "h.jsonl"
    report = run(ip, f"%eos_check --save {path}")
    history = load_jsonl(path)
    assert len(history) > 0
    assert str(check_history(history)) == report.text
    # the final read is recorded: eos-check-reader-1 read what p1 wrote
    assert "eos-check-reader-1" in ip.user_ns["cluster"].world.nodes


def test_check_one_cluster_of_two(ip: Shell) -> None:
    txn_setup(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 out a")
    run(ip, "%eos_cluster create --name c2 --seed 9")
    assert run(ip, "%eos_check --cluster cluster").ok
    with pytest.raises(EosUsageError, match="nothing to judge yet"):
        run(ip, "%eos_check")  # c2, the current one, has no history


# -- %eos_scenario --------------------------------------------------------------------------------------------------


def test_scenario_list_and_mutants(ip: Shell) -> None:
    from engine.scenarios.catalog import SPECS
    from engine.scenarios.mutants import MUTANTS

    listed = run(ip, "%eos_scenario list")
    names = listed.column("scenario")
    assert "demo" in names
    assert {s.name for s in SPECS} <= set(names)
    assert "idempotence: lost ack retry" in listed.text
    mutants = run(ip, "%eos_scenario mutants")
    assert mutants.column("mutant") == list(MUTANTS)
    assert "M10" in mutants.text
    assert run(ip, "%eos_cluster list").rows == ()  # the catalog does not touch the session


def test_scenario_run_demo(ip: Shell) -> None:
    from engine.scenarios.registry import get_scenario

    result = run(ip, "%eos_scenario run demo --seed 7")
    assert result.status == "PASS"
    assert result.ok
    assert result.fingerprint == get_scenario("demo")(7).fingerprint
    assert f"fingerprint: {result.fingerprint}" in result.text
    assert result.replay == "eos run demo --seed 7"
    assert "PASS" in result._repr_html_()
    assert run(ip, "%eos_scenario run demo --seed 7").fingerprint == result.fingerprint
    assert run(ip, "%eos_scenario run demo --seed 8").fingerprint != result.fingerprint


def test_scenario_run_with_a_mutant_fails(ip: Shell) -> None:
    result = run(ip, "%eos_scenario run isolation: lso off by one --seed 2 --mutant M10")
    assert result.status == "FAIL"
    assert not result.ok
    assert "G1a" in result.text
    assert "--mutant M10" in result.replay
    clean = run(ip, "%eos_scenario run isolation: lso off by one --seed 2")
    assert clean.status == "PASS"


def test_scenario_sweep(ip: Shell) -> None:
    table = run(ip, "%eos_scenario sweep idempotence: lost ack retry --seeds 2 --quiet")
    assert table.column("scenario") == ["idempotence: lost ack retry"] * 2
    assert table.column("seed") == [1, 2]
    assert table.column("verdict") == ["PASS", "PASS"]
    assert "2 runs: 2 passed, 0 failed" in table.text
    again = run(ip, "%eos_scenario sweep idempotence: lost ack retry --seeds 1 --first-seed 2")  # progress bar
    assert again.column("fingerprint") == table.column("fingerprint")[1:]


def test_scenario_sweep_with_a_mutant_fails(ip: Shell) -> None:
    table = run(ip, "%eos_scenario sweep idempotence: lost ack retry --seeds 1 --mutant M1 --quiet")
    assert table.column("verdict") == ["FAIL"]
    assert "duplicate" in table.text
