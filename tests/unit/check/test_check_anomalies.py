"""Self-tests of the history checkers: what each one names on its minimal hand-built history.

Goal (``eos-checking.md`` §5.6): before trusting any verdict, prove that each checker fires on
the smallest history showing its anomaly, and stays silent on a clean one. The histories live
in :mod:`engine.check.examples`; ``test_check_examples.py`` asserts the exact set of kinds each
one gives. Here, each test takes one of them (or a variant the catalogue does not need) and
asserts what the checker names: the key, the offsets, the values, the ops, and how the modes
classify it.
"""

from __future__ import annotations

from engine.check import (
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
from engine.check.examples import EXAMPLES


def ex(name):
    return EXAMPLES[name].history


def forbidden(h, mode="eos"):
    return {a.kind for a in check_history(h, allowed=mode).forbidden}


def allowed(h, mode="eos"):
    return {a.kind for a in check_history(h, allowed=mode).allowed}


def kinds(anomalies):
    return sorted({a.kind for a in anomalies})


# -- clean histories --------------------------------------------------------------------------


def test_empty_history_reports_nothing():
    report = check_history(ex("clean: empty history"))
    assert report.ok
    assert report.anomalies == ()


def test_clean_history_reports_nothing_in_every_mode():
    h = ex("clean: sends, polls, a committed and an aborted transaction")
    for mode in ("eos", "subscribe", "at-least-once"):
        report = check_history(h, allowed=mode)
        assert report.ok
        assert report.anomalies == ()


# -- C1 inconsistent-offsets ------------------------------------------------------------------


def test_inconsistent_offsets_names_the_offset_and_both_values():
    (a,) = check_inconsistent_offsets(ex("inconsistent-offsets: one offset holds two values"))
    assert a.key == ("t", 0)
    assert a.offsets == (0,)
    assert a.values == ("a", "b")
    assert a.ops == (1, 3)


# -- C2 duplicate -----------------------------------------------------------------------------


def test_duplicate_names_both_offsets_of_the_value():
    (a,) = check_duplicates(ex("duplicate: one value at two offsets"))
    assert a.offsets == (0, 2)
    assert a.values == ("a",)


def test_duplicate_is_allowed_in_at_least_once_mode():
    h = ex("duplicate: one value at two offsets")
    assert forbidden(h, "at-least-once") == set()
    assert allowed(h, "at-least-once") == {"duplicate"}


# -- C3 lost-write / C4 unseen ----------------------------------------------------------------


def test_lost_write_names_the_value_its_offset_the_bound_and_its_writer():
    (a,) = check_lost_writes(ex("lost-write: reads went past an acknowledged value"))
    assert a.values == ("a",)
    assert a.offsets == (0, 1)
    assert a.ops == (1,)


def test_unseen_names_the_value_beyond_every_read():
    (a,) = check_lost_writes(ex("unseen: an acknowledged value beyond every read"))
    assert a.kind == "unseen"
    assert a.values == ("b",)


def test_info_txn_with_one_send_read_must_show_all_its_sends():
    h = ex("unseen: a proven info transaction misses a send")
    assert analyse(h).proven == {1}
    (u,) = check_lost_writes(h)
    assert u.key == ("y", 0)
    assert u.values == ("b",)


# -- C5 G1a / C6 precommitted-read ------------------------------------------------------------


def test_g1a_names_the_failed_writer_then_the_ok_reader():
    (a,) = check_aborted_reads(ex("G1a: an ok poll reads an aborted transaction's value"))
    assert a.values == ("a",)
    assert a.ops == (1, 3)


def test_precommitted_read_names_the_op_and_its_own_value():
    (a,) = check_precommitted_reads(ex("precommitted-read: a transaction polls its own send"))
    assert a.ops == (1,)
    assert a.values == ("a",)


# -- C7 poll-skip / C8 nonmonotonic-poll ------------------------------------------------------


def test_poll_skip_names_both_offsets_the_skipped_value_and_both_polls():
    (a,) = check_polls(ex("poll-skip: the next poll jumps over a known value"))
    assert a.offsets == (0, 2)
    assert a.values == ("b",)
    assert a.ops == (3, 5)


def test_poll_skip_is_allowed_in_subscribe_mode():
    h = ex("poll-skip: the next poll jumps over a known value")
    assert forbidden(h, "subscribe") == set()
    assert allowed(h, "subscribe") == {"poll-skip"}


def test_nonmonotonic_poll_names_the_offset_read_again():
    (a,) = check_polls(ex("nonmonotonic-poll: the next poll re-reads"))
    assert a.offsets == (1, 1)


# -- C9 int-poll-skip / C10 int-nonmonotonic-poll ---------------------------------------------


def test_int_poll_skip_names_the_op_and_the_skipped_value():
    (a,) = check_polls(ex("int-poll-skip: one poll jumps over a known value"))
    assert a.ops == (3,)
    assert a.values == ("b",)


def test_int_poll_skip_across_a_long_gap_names_the_hidden_value():
    (a,) = check_polls(ex("int-poll-skip: a long gap hides a known value"))
    assert a.values == ("m",)


# -- C11 nonmonotonic-send / C12 int-nonmonotonic-send / int-send-skip ------------------------


def test_nonmonotonic_send_names_both_offsets_and_both_ops():
    (a,) = check_sends(ex("nonmonotonic-send: the next send lands earlier"))
    assert a.offsets == (1, 0)
    assert a.ops == (1, 3)


def test_int_send_skip_is_allowed_under_eos():
    h = ex("int-send-skip: another producer lands between two sends")
    assert check_history(h).ok
    assert "int-send-skip" in allowed(h)
    assert kinds(check_sends(h)) == ["int-send-skip"]


# -- C13/C14 cycles ---------------------------------------------------------------------------


def test_g0_is_allowed_and_names_the_ww_edge_key():
    h = ex("G0: two transactions interleave writes on two keys")
    assert check_history(h).ok
    assert allowed(h) == {"G0"}
    (a,) = check_cycles(h)
    assert a.ops == (1, 3)
    assert "-ww(x/0)->" in a.message


def test_g1c_wr_names_both_ops_and_no_single_key():
    (a,) = check_cycles(ex("G1c-wr: two transactions read each other's writes"))
    assert a.ops == (1, 3)
    assert a.key is None


def test_g1c_ww_is_allowed_under_eos():
    h = ex("G1c-ww: a cycle needs a write-write edge")
    assert check_history(h).ok
    assert allowed(h) == {"G1c-ww"}


def test_no_cycle_when_dependencies_flow_one_way():
    assert check_cycles(ex("clean: dependencies flow one way")) == []


def test_a_duplicate_copy_does_not_add_a_spurious_ww_cycle():
    assert check_cycles(ex("duplicate: a copy adds no ww cycle")) == []
