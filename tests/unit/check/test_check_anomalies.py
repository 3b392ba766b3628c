"""Self-tests of the history checkers: one minimal hand-built history per anomaly kind.

Goal (``eos-checking.md`` §5.6): before trusting any verdict, prove that each checker fires on
the smallest history showing its anomaly, and stays silent on a clean one. Method: a tiny DSL
builds serial histories (each op invoked and completed before the next); each test asserts the
*exact* set of kinds reported, so a checker that fires too widely fails as surely as one that
misses. The histories follow the spirit of Jepsen's ``kafka_test.clj`` but are our own.
"""

from __future__ import annotations

from engine.check import (
    HistoryRecorder,
    Poll,
    Send,
    analyse,
    check_aborted_reads,
    check_cycles,
    check_duplicates,
    check_history,
    check_inconsistent_offsets,
    check_lost_writes,
    check_polls,
    check_precommitted_reads,
    check_sends,
)

# -- DSL --------------------------------------------------------------------------------------


def send(value, offset=None, partition=0, topic="t"):
    return Send(topic, partition, value, offset)


def poll(offset, value, partition=0, topic="t"):
    return Poll(topic, partition, offset, value)


def op(process, f, type_, *mops, keys=(), rebalance=(), error=None):
    return (process, f, type_, mops, keys, rebalance, error)


def history(*ops):
    rec = HistoryRecorder()
    t = 0
    for process, f, type_, mops, keys, rebalance, error in ops:
        invoked = [m for m in mops if type(m) is Send]
        inv = rec.invoke(process, f, [m._replace(offset=None) for m in invoked], t, keys=keys)
        rec.complete(inv, type_, mops, t + 1, error=error, rebalance_keys=rebalance)
        t += 2
    return rec.history()


def forbidden(h, mode="eos"):
    return {a.kind for a in check_history(h, allowed=mode).forbidden}


def allowed(h, mode="eos"):
    return {a.kind for a in check_history(h, allowed=mode).allowed}


def kinds(anomalies):
    return sorted({a.kind for a in anomalies})


# -- clean histories --------------------------------------------------------------------------


def test_empty_history_reports_nothing():
    report = check_history(history())
    assert report.ok
    assert report.anomalies == ()


def test_clean_history_with_sends_polls_and_a_committed_txn_reports_nothing():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(1, "txn", "ok", send("c", 2), send("d", 3)),  # marker at 4
        op(2, "poll", "ok", poll(0, "a"), poll(1, "b")),
        op(2, "poll", "ok", poll(2, "c"), poll(3, "d")),
        op(1, "txn", "fail", send("x", 5)),  # aborted: marker at 6, never read
        op(0, "send", "ok", send("e", 7)),
        op(2, "poll", "ok", poll(7, "e")),
    )
    report = check_history(h)
    assert report.ok
    assert report.anomalies == ()


def test_reads_across_control_record_offsets_are_not_skips():
    h = history(
        op(0, "txn", "ok", send("a", 0)),  # marker at 1
        op(0, "txn", "ok", send("b", 2)),  # marker at 3
        op(1, "poll", "ok", poll(0, "a"), poll(2, "b")),
    )
    assert check_history(h).anomalies == ()


# -- C1 inconsistent-offsets ------------------------------------------------------------------


def test_inconsistent_offsets_when_one_offset_holds_two_values():
    h = history(
        op(0, "send", "ok", send("a", 0)),
        op(1, "send", "ok", send("b", 0)),
        op(2, "poll", "ok", poll(0, "a")),
        op(3, "poll", "ok", poll(0, "b")),
    )
    assert forbidden(h) == {"inconsistent-offsets"}
    (a,) = check_inconsistent_offsets(h)
    assert a.key == ("t", 0)
    assert a.offsets == (0,)
    assert a.values == ("a", "b")


# -- C2 duplicate -----------------------------------------------------------------------------


def test_duplicate_when_one_value_appears_at_two_offsets():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(1, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "a")),
    )
    assert forbidden(h) == {"duplicate"}
    (a,) = check_duplicates(h)
    assert a.offsets == (0, 2)
    assert a.values == ("a",)


def test_duplicate_is_allowed_in_at_least_once_mode():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(1, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "a")),
    )
    assert forbidden(h, "at-least-once") == set()
    assert allowed(h, "at-least-once") == {"duplicate"}


def test_duplicate_when_ack_offset_and_read_offset_differ():
    h = history(
        op(0, "send", "ok", send("a", 0)),
        op(1, "poll", "ok", poll(1, "a")),
    )
    assert forbidden(h) == {"duplicate"}


# -- C3 lost-write / C4 unseen ----------------------------------------------------------------


def test_lost_write_when_reads_went_past_an_acknowledged_value():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(1, "poll", "ok", poll(1, "b")),
    )
    assert forbidden(h) == {"lost-write"}
    (a,) = check_lost_writes(h)
    assert a.values == ("a",)
    assert a.offsets == (0, 1)
    assert a.ops == (1,)


def test_unseen_when_an_acknowledged_value_lies_beyond_every_read():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(1, "poll", "ok", poll(0, "a")),
    )
    assert forbidden(h) == {"unseen"}
    (a,) = check_lost_writes(h)
    assert a.kind == "unseen"
    assert a.values == ("b",)


def test_unseen_when_an_acknowledged_value_never_got_an_offset_and_was_never_read():
    h = history(op(0, "send", "ok", send("a")))
    assert forbidden(h) == {"unseen"}


def test_info_send_never_read_is_neither_lost_nor_unseen():
    h = history(
        op(0, "send", "info", send("a"), error="timeout"),
        op(0, "send", "ok", send("b", 1)),
        op(1, "poll", "ok", poll(1, "b")),
    )
    assert check_history(h).anomalies == ()


def test_info_txn_with_one_send_read_must_show_all_its_sends():
    h = history(
        op(0, "txn", "info", send("a", topic="x"), send("b", topic="y"), error="timeout"),
        op(1, "poll", "ok", poll(0, "a", topic="x")),
    )
    a = analyse(h)
    assert a.proven == {1}
    assert forbidden(h) == {"unseen"}
    (u,) = check_lost_writes(h)
    assert u.key == ("y", 0)
    assert u.values == ("b",)


def test_info_txn_proven_committed_is_clean_when_all_its_sends_are_read():
    h = history(
        op(0, "txn", "info", send("a"), send("b"), error="timeout"),
        op(1, "send", "ok", send("c", 5)),
        op(2, "poll", "ok", poll(3, "b"), poll(5, "c")),
        op(3, "poll", "ok", poll(2, "a")),
    )
    assert check_history(h).anomalies == ()


def test_lost_write_when_a_proven_info_op_has_an_unread_send_below_the_read_bound():
    h = history(
        op(0, "send", "info", send("a", 0), send("b", 1), error="timeout"),
        op(1, "poll", "ok", poll(1, "b")),
    )
    assert forbidden(h) == {"lost-write"}


# -- C5 G1a -----------------------------------------------------------------------------------


def test_g1a_when_an_ok_poll_reads_a_value_of_an_aborted_txn():
    h = history(
        op(0, "txn", "fail", send("a", 0), error="aborted"),
        op(1, "poll", "ok", poll(0, "a")),
    )
    assert forbidden(h) == {"G1a"}
    (a,) = check_aborted_reads(h)
    assert a.values == ("a",)
    assert a.ops == (1, 3)


def test_g1a_is_not_reported_when_only_a_failed_op_read_the_aborted_value():
    h = history(
        op(0, "txn", "fail", send("a", 0), error="aborted"),
        op(1, "poll", "fail", poll(0, "a"), error="rebalance"),
    )
    assert "G1a" not in forbidden(h)


# -- C6 precommitted-read ---------------------------------------------------------------------


def test_precommitted_read_when_a_txn_polls_its_own_send():
    h = history(op(0, "txn", "ok", send("a", 0), poll(0, "a")))
    assert forbidden(h) == {"precommitted-read"}
    (a,) = check_precommitted_reads(h)
    assert a.ops == (1,)
    assert a.values == ("a",)


# -- C7 poll-skip / C8 nonmonotonic-poll ------------------------------------------------------


def test_poll_skip_when_a_process_next_poll_jumps_over_a_known_value():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
        op(1, "poll", "ok", poll(0, "a")),
        op(1, "poll", "ok", poll(2, "c")),
        op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
    )
    assert forbidden(h) == {"poll-skip"}
    (a,) = check_polls(h)
    assert a.offsets == (0, 2)
    assert a.values == ("b",)
    assert a.ops == (3, 5)


def test_poll_skip_is_allowed_in_subscribe_mode():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
        op(1, "poll", "ok", poll(0, "a")),
        op(1, "poll", "ok", poll(2, "c")),
        op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
    )
    assert forbidden(h, "subscribe") == set()
    assert allowed(h, "subscribe") == {"poll-skip"}


def test_poll_skip_is_not_reported_across_an_assign():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
        op(1, "poll", "ok", poll(0, "a")),
        op(1, "assign", "ok", keys=[("u", 0)]),
        op(1, "assign", "ok", keys=[("t", 0)]),
        op(1, "poll", "ok", poll(2, "c")),
        op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
    )
    assert check_history(h).anomalies == ()


def test_poll_skip_is_not_reported_across_a_crash():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
        op(1, "poll", "ok", poll(0, "a")),
        op(1, "crash", "info"),
        op(1, "poll", "ok", poll(2, "c")),
        op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
    )
    assert check_history(h).anomalies == ()


def test_nonmonotonic_poll_when_a_process_next_poll_rereads():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(1, "poll", "ok", poll(0, "a"), poll(1, "b")),
        op(1, "poll", "ok", poll(1, "b")),
    )
    assert forbidden(h) == {"nonmonotonic-poll"}
    (a,) = check_polls(h)
    assert a.offsets == (1, 1)


def test_failed_poll_between_two_ok_polls_does_not_move_the_position():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(1, "poll", "ok", poll(0, "a")),
        op(1, "txn", "fail", poll(1, "b"), error="aborted"),  # client rewinds to offset 1
        op(1, "poll", "ok", poll(1, "b")),
    )
    assert check_history(h).anomalies == ()


# -- C9 int-poll-skip / C10 int-nonmonotonic-poll ---------------------------------------------


def test_int_poll_skip_when_one_poll_jumps_over_a_known_value():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
        op(1, "poll", "ok", poll(0, "a"), poll(2, "c")),
        op(2, "poll", "ok", poll(1, "b")),
    )
    assert forbidden(h) == {"int-poll-skip"}
    (a,) = check_polls(h)
    assert a.ops == (3,)
    assert a.values == ("b",)


def test_int_nonmonotonic_poll_when_one_poll_goes_backwards():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1)),
        op(1, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(0, "a")),
    )
    assert forbidden(h) == {"int-nonmonotonic-poll"}


def test_int_poll_checks_skip_keys_in_the_op_rebalance_log():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
        op(1, "poll", "ok", poll(0, "a"), poll(2, "c"), poll(0, "a"), rebalance=[("t", 0)]),
        op(2, "poll", "ok", poll(1, "b")),
    )
    assert check_history(h).anomalies == ()


def test_int_poll_checks_follow_each_key_separately_when_keys_interleave():
    h = history(
        op(0, "send", "ok", send("a", 0), send("b", 1), send("x", 0, topic="u"), send("y", 1, topic="u")),
        op(1, "poll", "ok", poll(0, "a"), poll(0, "x", topic="u"), poll(1, "b"), poll(1, "y", topic="u")),
    )
    assert check_history(h).anomalies == ()


# -- C11 nonmonotonic-send / C12 int-nonmonotonic-send / int-send-skip ------------------------


def test_nonmonotonic_send_when_a_process_next_send_lands_earlier():
    h = history(
        op(0, "send", "ok", send("b", 1)),
        op(0, "send", "ok", send("a", 0)),
        op(1, "poll", "ok", poll(0, "a"), poll(1, "b")),
    )
    assert forbidden(h) == {"nonmonotonic-send"}
    (a,) = check_sends(h)
    assert a.offsets == (1, 0)
    assert a.ops == (1, 3)


def test_int_nonmonotonic_send_when_a_later_send_in_one_op_lands_earlier():
    h = history(
        op(0, "send", "ok", send("a", 1), send("b", 0)),
        op(1, "poll", "ok", poll(0, "b"), poll(1, "a")),
    )
    assert forbidden(h) == {"int-nonmonotonic-send"}


def test_int_send_skip_is_allowed_when_another_producer_lands_between_two_sends():
    h = history(
        op(0, "txn", "ok", send("a", 0), send("c", 2)),
        op(1, "txn", "ok", send("b", 1)),
        op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
    )
    report = check_history(h)
    assert report.ok
    assert "int-send-skip" in allowed(h)
    assert kinds(check_sends(h)) == ["int-send-skip"]


def test_send_position_comes_from_a_read_when_the_ack_had_no_offset():
    h = history(
        op(0, "send", "ok", send("b")),
        op(0, "send", "ok", send("a")),
        op(1, "poll", "ok", poll(0, "a"), poll(1, "b")),
    )
    assert forbidden(h) == {"nonmonotonic-send"}


# -- C13/C14 cycles ---------------------------------------------------------------------------


def test_g0_is_allowed_when_two_txns_interleave_writes_on_two_keys():
    h = history(
        op(0, "txn", "ok", send("a", 0, topic="x"), send("d", 1, topic="y")),
        op(1, "txn", "ok", send("b", 1, topic="x"), send("c", 0, topic="y")),
        op(2, "poll", "ok", poll(0, "a", topic="x"), poll(1, "b", topic="x")),
        op(3, "poll", "ok", poll(0, "c", topic="y"), poll(1, "d", topic="y")),
    )
    report = check_history(h)
    assert report.ok
    assert allowed(h) == {"G0"}
    (a,) = check_cycles(h)
    assert a.ops == (1, 3)
    assert "-ww(x/0)->" in a.message


def test_g1c_wr_when_two_txns_each_read_the_other_one_write():
    h = history(
        op(0, "txn", "ok", send("a", 0, topic="x"), poll(0, "b", topic="y")),
        op(1, "txn", "ok", send("b", 0, topic="y"), poll(0, "a", topic="x")),
    )
    assert forbidden(h) == {"G1c-wr"}
    (a,) = check_cycles(h)
    assert a.ops == (1, 3)
    assert a.key is None


def test_g1c_ww_is_allowed_when_a_cycle_needs_a_write_write_edge():
    h = history(
        op(0, "txn", "ok", send("a", 0, topic="x"), poll(0, "c", topic="y")),
        op(1, "txn", "ok", send("b", 1, topic="x"), send("c", 0, topic="y")),
        op(2, "poll", "ok", poll(0, "a", topic="x"), poll(1, "b", topic="x")),
    )
    report = check_history(h)
    assert report.ok
    assert allowed(h) == {"G1c-ww"}


def test_no_cycle_when_dependencies_flow_one_way():
    h = history(
        op(0, "txn", "ok", send("a", 0, topic="x")),
        op(1, "txn", "ok", poll(0, "a", topic="x"), send("b", 0, topic="y")),
        op(2, "txn", "ok", poll(0, "b", topic="y"), send("c", 1, topic="x")),
        op(3, "poll", "ok", poll(0, "a", topic="x"), poll(1, "c", topic="x")),
    )
    assert check_cycles(h) == []
    assert check_history(h).ok


def test_a_duplicate_copy_does_not_add_a_spurious_ww_cycle():
    h = history(
        op(0, "send", "ok", send("a", 0)),
        op(1, "send", "ok", send("b", 1)),
        op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "a")),
    )
    assert check_cycles(h) == []
    assert forbidden(h) == {"duplicate"}


# -- dense index across sparse offsets --------------------------------------------------------


def test_reads_across_a_long_run_of_aborted_offsets_are_not_skips():
    h = history(
        op(0, "send", "ok", send("a", 0)),
        op(1, "txn", "fail", *[send(f"x{i}", 1 + i) for i in range(20)], error="aborted"),
        op(0, "send", "ok", send("b", 22)),
        op(2, "poll", "ok", poll(0, "a"), poll(22, "b")),
    )
    assert check_history(h).anomalies == ()


def test_int_poll_skip_across_a_long_gap_that_hides_a_known_value():
    h = history(
        op(0, "send", "ok", send("a", 0), send("m", 15), send("b", 30)),
        op(1, "poll", "ok", poll(0, "a"), poll(30, "b")),
        op(2, "poll", "ok", poll(15, "m")),
    )
    assert forbidden(h) == {"int-poll-skip"}
    (a,) = check_polls(h)
    assert a.values == ("m",)


def test_g1c_wr_is_found_among_many_forward_edges():
    # A long acyclic chain of txns plus one pair that reads each other's writes.
    ops = [op(0, "txn", "ok", send(f"c{i}", i, topic="chain")) for i in range(30)]
    ops += [
        op(1, "txn", "ok", send("a", 0, topic="x"), poll(0, "b", topic="y")),
        op(2, "txn", "ok", send("b", 0, topic="y"), poll(0, "a", topic="x")),
        op(3, "poll", "ok", *[poll(i, f"c{i}", topic="chain") for i in range(30)]),
    ]
    assert forbidden(history(*ops)) == {"G1c-wr"}
