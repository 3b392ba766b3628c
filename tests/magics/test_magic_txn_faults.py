"""``%%eos_txn``/``%eos_txn``, ``%eos_fault`` and ``%eos_time`` through a real IPython shell.

Goal: a cell transaction commits (read_committed readers see it), an error in its body aborts it
(read_uncommitted readers see the records, the log an ABORT marker) and propagates, ``--abort``
aborts, ``--offsets-from`` commits a consumer's position inside the transaction, the line form
drives one call, and a second producer with the same transactional id fences the first (the
engine's ``ProducerFencedException``, one line). Faults break brokers (crash, restart, pause,
resume), links (isolate, cut, heal) and single messages: a lost ProduceResponse is retried and
written once at its original offset, a duplicated request is deduplicated, a held one waits
for ``release``, a delayed one arrives later. Simulated time moves only with ``%eos_time``.

Method: one fresh ``testing_shell()`` per test, cells run as typed; outcomes read from the
engine objects the magics bound (``cluster.dump_log``, ``describe_brokers``, the network's cut
links) and from consumers polled to the end. No mocks.
"""

from __future__ import annotations

import pytest

from engine import Cluster
from engine.errors import ProducerFencedException
from eos_magics._testing import TestingShell as Shell
from eos_magics._testing import basic, drain, run, txn_setup
from eos_magics.errors import EosUsageError

# -- %%eos_txn and %eos_txn --------------------------------------------------------------------------------


def test_cell_transaction_commits(ip: Shell) -> None:
    c = txn_setup(ip)
    assert run(ip, "%%eos_txn t1\n%eos_produce t1 out A B\nt1.produce('out', value='C')\n") is None
    run(ip, "%eos_time run 100")
    assert drain(ip, "rc") == ["A", "B", "C"]
    assert c.dump_log("out", 0).count("endTxnMarker: COMMIT") == 1
    assert run(ip, "%eos_transactions describe app").column("TransactionState") == ["CompleteCommit"]


def test_an_error_in_the_body_aborts_and_propagates(ip: Shell) -> None:
    c = txn_setup(ip)
    with pytest.raises(RuntimeError, match="boom"):
        run(ip, "%%eos_txn t1\n%eos_produce t1 out X Y\nraise RuntimeError('boom')\n")
    run(ip, "%eos_time run 1000")
    assert drain(ip, "rc") == []
    assert drain(ip, "ru") == ["X", "Y"]  # read_uncommitted reads aborted records
    dump = run(ip, "%eos_dump_log out")
    assert repr(dump) == c.dump_log("out", 0)
    assert dump.column("kind") == ["aborted", "abort-marker"]
    assert dump.column("endTxnMarker") == [None, "ABORT"]
    index = run(ip, "%eos_dump_log out --txn-index")
    assert index.column("firstOffset") == [0]
    assert index.column("lastOffset") == [2]
    # the producer is usable again: the next transaction commits
    run(ip, "%%eos_txn t1\n%eos_produce t1 out Z\n")
    run(ip, "%eos_time run 100")
    assert drain(ip, "rc") == ["Z"]


def test_cell_abort_flag(ip: Shell) -> None:
    c = txn_setup(ip)
    run(ip, "%%eos_txn t1 --abort\n%eos_produce t1 out X\n")
    run(ip, "%eos_time run 1000")
    assert drain(ip, "rc") == []
    assert "endTxnMarker: ABORT" in c.dump_log("out", 0)
    assert run(ip, "%eos_transactions describe app").column("TransactionState") == ["CompleteAbort"]


def test_offsets_from_commits_the_consumers_position_in_the_transaction(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_producer src")
    run(ip, "%eos_produce src orders a b c -p 0")
    run(ip, "%eos_producer t1 -t copier")
    run(ip, "%eos_consumer c1 --assign orders:0 --group G")
    assert drain(ip, "c1") == ["a", "b", "c"]
    before = run(ip, "%eos_consumer_groups describe --group G")
    assert before.rows == ()
    run(ip, "%%eos_txn t1 --offsets-from c1\npass\n")
    run(ip, "%eos_time run 1000")
    described = run(ip, "%eos_consumer_groups describe --group G")
    assert repr(described) == ip.user_ns["cluster"].describe_group("G")
    assert described.column("TOPIC") == ["orders"]
    assert described.column("CURRENT-OFFSET") == [3]
    assert described.column("LAG") == [0]
    assert run(ip, "%eos_consumer_groups list").column("group") == ["G"]


def test_offsets_from_with_abort_discards_the_offsets(ip: Shell) -> None:
    basic(ip)
    run(ip, "%eos_producer src")
    run(ip, "%eos_produce src orders a b -p 0")
    run(ip, "%eos_producer t1 -t copier")
    run(ip, "%eos_consumer c1 --assign orders:0 --group G")
    drain(ip, "c1")
    run(ip, "%%eos_txn t1 --offsets-from c1 --abort\n%eos_produce t1 out A\n")
    run(ip, "%eos_time run 1000")
    assert run(ip, "%eos_consumer_groups describe --group G").rows == ()  # no committed offset


def test_line_form_begin_commit_abort(ip: Shell) -> None:
    txn_setup(ip)
    assert run(ip, "%eos_txn begin t1") is None
    run(ip, "%eos_produce t1 out A")
    run(ip, "%eos_txn commit t1")
    run(ip, "%eos_txn begin t1")
    run(ip, "%eos_produce t1 out X")
    run(ip, "%eos_txn abort t1")
    run(ip, "%eos_time run 1000")
    assert drain(ip, "rc") == ["A"]
    assert drain(ip, "ru") == ["A", "X"]


def test_fencing_a_zombie(ip: Shell) -> None:
    c = txn_setup(ip)
    run(ip, "%eos_txn begin t1")
    run(ip, "%eos_produce t1 out zombie")
    run(ip, "%eos_producer t2 -t app")  # init_transactions() fences t1 and aborts its transaction
    with pytest.raises(ProducerFencedException) as caught:
        run(ip, "%eos_txn commit t1")
    lines = caught.value._render_traceback_()
    assert len(lines) == 1
    assert lines[0].startswith("ProducerFencedException")
    assert "\n" not in lines[0]
    run(ip, "%%eos_txn t2\n%eos_produce t2 out fresh\n")
    run(ip, "%eos_time run 1000")
    assert drain(ip, "rc") == ["fresh"]
    assert "endTxnMarker: ABORT" in c.dump_log("out", 0)


# -- %eos_fault -----------------------------------------------------------------------------------------------


def statuses(c: Cluster) -> dict[int, str]:
    return {b.broker_id: b.status for b in c.describe_brokers()}


def test_crash_restart_pause_resume(ip: Shell) -> None:
    c = basic(ip)
    assert run(ip, "%eos_fault crash 1") is None
    assert statuses(c)[1] == "down"
    assert "1 down" in repr(run(ip, "%eos_cluster describe"))
    run(ip, "%eos_fault restart 1")
    assert statuses(c)[1] == "up"
    run(ip, "%eos_fault pause broker-2")
    assert statuses(c)[2] == "paused"
    run(ip, "%eos_fault resume 2")
    assert statuses(c) == {1: "up", 2: "up", 3: "up"}


def test_crashing_the_leader_moves_leadership_and_produce_still_works(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 orders before -p 0")
    leader = c.leader("orders", 0)
    run(ip, f"%eos_fault crash {leader}")
    run(ip, "%eos_time run 15000")
    assert c.leader("orders", 0) != leader
    assert run(ip, "%eos_produce p1 orders after -p 0").rows == (("orders", 0, 1, None, "after", None),)
    run(ip, "%eos_consumer c1 --assign orders:0")
    assert drain(ip, "c1") == ["before", "after"]


def test_isolate_cut_and_heal(ip: Shell) -> None:
    c = basic(ip)
    net = c.world.network
    run(ip, "%eos_fault isolate 3")
    assert net.isolated == {"broker-3"}
    assert net._cut("broker-3", "broker-1") and net._cut("broker-1", "broker-3")
    run(ip, "%eos_fault heal")
    assert net.blocked == set() and net.isolated == set()
    run(ip, "%eos_fault cut 1 --from 2 3 --one-way")
    assert net.blocked == {("broker-1", "broker-2"), ("broker-1", "broker-3")}
    run(ip, "%eos_fault heal")
    run(ip, "%eos_producer p1")
    run(ip, "%eos_fault cut p1 --from broker-1")
    assert net.blocked == {("p1", "broker-1"), ("broker-1", "p1")}
    run(ip, "%eos_fault heal")
    assert net.blocked == set()


def test_lost_ack_the_retry_is_deduplicated(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 orders first -p 0")
    rule = run(ip, "%eos_fault drop --type ProduceResponse")
    assert isinstance(rule, int)
    assert run(ip, "%eos_fault rules") == [rule]
    sent = run(ip, "%eos_produce p1 orders lost-ack -p 0")
    assert sent.rows == (("orders", 0, 1, None, "lost-ack", None),)  # its original offset
    assert run(ip, "%eos_fault rules") == []  # the rule dropped its one message
    dump = run(ip, "%eos_dump_log orders -p 0")
    assert dump.text.count("payload: lost-ack") == 1  # written once
    assert "offset: 1 " in dump.text
    assert len(dump.rows) == 2
    run(ip, "%eos_consumer c1 --assign orders:0")
    assert drain(ip, "c1") == ["first", "lost-ack"]
    assert run(ip, "%eos_check").ok
    assert c.dump_log("orders", 0) == dump.text


def test_duplicate_request_is_deduplicated(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_fault duplicate --type ProduceRequest")
    assert run(ip, "%eos_produce p1 orders once -p 0").column("offset") == [0]
    run(ip, "%eos_time run 500")
    assert c.dump_log("orders", 0).count("payload: once") == 1


def test_hold_then_release(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_producer p1")
    rule = run(ip, "%eos_fault hold --type ProduceRequest")
    run(ip, "%eos_produce p1 orders held -p 0 --no-wait")
    run(ip, "%eos_time run 200")
    assert "payload: held" not in c.dump_log("orders", 0)
    released = run(ip, f"%eos_fault release --rule {rule}")
    assert len(released) == 1
    run(ip, "p1.flush()")
    assert c.dump_log("orders", 0).count("payload: held") == 1
    assert run(ip, "%eos_fault release") == []  # nothing held any more


def test_delay_needs_ms_and_delays(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_producer p1")
    run(ip, "%eos_produce p1 orders warm -p 0")
    start = c.now_ms
    run(ip, "%eos_produce p1 orders quick -p 0")
    quick = c.now_ms - start
    run(ip, "%eos_fault delay --type ProduceRequest --ms 700")
    start = c.now_ms
    assert run(ip, "%eos_produce p1 orders slow -p 0").column("offset") == [2]
    assert c.now_ms - start >= quick + 700


def test_drop_by_src_dst_kind_and_count_zero_means_every_message(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_producer p1")
    leader = c.leader("orders", 0)
    rule = run(ip, f"%eos_fault drop --kind request --src p1 --dst {leader} --count 0")
    run(ip, "%eos_produce p1 orders lost -p 0 --no-wait")
    run(ip, "%eos_time run 3000")  # every request of p1 to the leader is lost, retries included
    assert "payload: lost" not in c.dump_log("orders", 0)
    assert run(ip, "%eos_fault rules") == [rule]  # --count 0: the rule stays
    run(ip, "%eos_fault heal")
    assert run(ip, "%eos_fault rules") == []
    run(ip, "p1.flush()")
    assert c.dump_log("orders", 0).count("payload: lost") == 1


# -- %eos_time ---------------------------------------------------------------------------------------------------


def test_time_run_step_until_now(ip: Shell) -> None:
    c = basic(ip)
    start = run(ip, "%eos_time now")
    assert start == c.now_ms
    assert run(ip, "%eos_time run 500") == start + 500 == c.now_ms
    assert run(ip, "%eos_time step 5") == 5
    assert run(ip, "%eos_time step") == 1
    target = c.now_ms + 1234
    ip.user_ns["target"] = target
    assert run(ip, "%eos_time until cluster.now_ms >= target") == c.now_ms
    assert c.now_ms >= target


def test_time_until_sees_local_variables_of_a_function(ip: Shell) -> None:
    c = basic(ip)
    start = c.now_ms
    # ``ms`` exists only as the function's local: a NameError if the magic did not see it
    run(ip, "def wait_for(ms):\n    return get_ipython().run_line_magic('eos_time', 'until cluster.now_ms >= ms')\n")
    assert run(ip, "wait_for(cluster.now_ms + 300)") == c.now_ms >= start + 300


def test_time_until_that_never_holds_names_max_ms(ip: Shell) -> None:
    c = basic(ip)
    start = c.now_ms
    with pytest.raises(EosUsageError, match="--max-ms") as caught:
        run(ip, "%eos_time until False --max-ms 250")
    assert "\n" not in str(caught.value)
    assert c.now_ms - start >= 250
    assert run(ip, "%eos_time run 10") == c.now_ms  # still running


def test_crash_power_loses_the_machine_silently_and_goes_with_crash_only(ip: Shell) -> None:
    c = basic(ip)
    run(ip, "%eos_fault crash 2 --power")
    broker = c.world.node("broker-2")
    assert broker.status.value == "down" and broker.machine_lost
    crash = [e for e in c.world.trace.events if e.name == "crash" and e.node == "broker-2"][-1]
    assert crash.get("lose_unflushed_tail") is True
    with pytest.raises(EosUsageError, match="--power goes with crash"):
        run(ip, "%eos_fault pause 1 --power")
    run(ip, "%eos_fault restart 2")
    assert broker.is_up and not broker.machine_lost
