"""Tests of end-to-end promises (``engine.check.promises``) and of the topic scope of the history checks.

Goal: each promise anomaly (``lost-input``, ``duplicated-output``, ``unexpected-output``) is
reported on committed records that have it, naming the input offsets, keys and output offsets,
and not on records that do not; matching by key, by value and by function (one, or a pair);
inputs with the same match count once (a deduplicator's promise); the one string syntax reads
what it should and refuses the rest in one line; ``check_history(topics=...)`` leaves a topic
with deliberate duplicates out of the history checks, and a report with a ``duplicate`` says how
to scope. Method: committed records and histories written by hand.
"""

from __future__ import annotations

import pytest

from engine.check import HistoryRecorder, Poll, Send
from engine.check.anomaly import DUPLICATE_NOTE, KINDS
from engine.check.checker import check_history
from engine.check.promises import (
    CommittedRecord as R,
)
from engine.check.promises import (
    Promise,
    check_promises,
    committed_reads,
    parse_promise,
    promises_of,
    scope_history,
)

P = "payments"
L = "ledger"


def inputs(*keys: bytes) -> list[R]:
    return [R(P, 0, i, k, b"v-" + k) for i, k in enumerate(keys)]


def outputs(*keys: bytes, partition: int = 0) -> list[R]:
    return [R(L, partition, i, k, b"booked v-" + k) for i, k in enumerate(keys)]


def kinds(anomalies) -> list[str]:
    return [a.kind for a in anomalies]


def test_every_input_with_one_output_keeps_the_promise() -> None:
    assert (
        check_promises(inputs(b"a", b"b", b"c") + outputs(b"c", b"a", b"b"), [parse_promise("payments -> ledger")])
        == []
    )


def test_an_input_without_output_is_a_lost_input_naming_its_offset_and_key() -> None:
    [a] = check_promises(inputs(b"a", b"b", b"c") + outputs(b"a"), [parse_promise("payments -> ledger")])
    assert a.kind == "lost-input"
    assert a.key == (P, 0) and a.offsets == (1, 2)
    assert "offset 1 (key 'b'), offset 2 (key 'c')" in a.message
    assert "2 input record(s) of payments/0 have no committed record in ledger (by key)" in a.message


def test_an_input_with_two_outputs_is_a_duplicated_output_naming_every_output() -> None:
    records = inputs(b"a", b"b") + outputs(b"a", b"b") + [R(L, 1, 7, b"b", b"again")]
    [a] = check_promises(records, [parse_promise("payments -> ledger")])
    assert a.kind == "duplicated-output" and a.key == (P, 0) and a.offsets == (1,)
    assert a.message == "input payments/0@1 (key 'b') has 2 committed records in ledger: ledger/0@1, ledger/1@7"


def test_an_unmatched_output_is_unexpected_only_when_the_promise_says_and_nothing_else() -> None:
    records = inputs(b"a") + outputs(b"a", b"z")
    assert check_promises(records, [parse_promise("payments -> ledger")]) == []
    [a] = check_promises(records, [parse_promise("payments -> ledger and nothing else")])
    assert a.kind == "unexpected-output" and a.key == (L, 0) and a.offsets == (1,)
    assert "key 'z'" in a.message


def test_inputs_with_the_same_match_count_once_a_deduplicators_promise() -> None:
    records = inputs(b"a", b"a", b"b") + outputs(b"a", b"b")
    assert check_promises(records, [parse_promise("payments -> ledger")]) == []
    [lost] = check_promises(inputs(b"a", b"a") + outputs(b"b"), [parse_promise("payments -> ledger")])
    assert lost.offsets == (0, 1)  # both records of the lost payment named


def test_match_by_value_and_by_functions() -> None:
    by_value = [R(P, 0, 0, None, b"x"), R(P, 0, 1, None, b"y"), R(L, 0, 0, b"k", b"x")]
    [a] = check_promises(by_value, [parse_promise("payments -> ledger by value")])
    assert a.kind == "lost-input" and a.offsets == (1,) and "value 'y'" in a.message
    # one function for both sides: the payment id before the colon
    ids = [R(P, 0, 0, None, b"p1:10"), R(L, 0, 0, None, b"p1:booked")]
    assert check_promises(ids, [Promise(P, L, match=lambda k, v: v.split(b":")[0])]) == []
    # a pair: the input's key, the output's value
    pair = [R(P, 0, 0, b"p1", b"10"), R(L, 0, 0, None, b"p1")]
    assert check_promises(pair, [Promise(P, L, match=(lambda k, v: k, lambda k, v: v))]) == []
    assert kinds(check_promises(pair, [Promise(P, L, match=lambda k, v: k)])) == ["lost-input"]


def test_a_record_read_twice_counts_once_and_records_of_other_topics_are_ignored() -> None:
    records = inputs(b"a") + outputs(b"a") + outputs(b"a") + [R("other", 0, 0, b"a", b"x")]
    assert check_promises(records, [parse_promise("payments -> ledger")]) == []


def test_a_failing_match_function_is_one_line_naming_the_record() -> None:
    with pytest.raises(ValueError, match=r"the input match function failed on payments/0@0"):
        check_promises(inputs(b"a"), [Promise(P, L, match=lambda k, v: 1 / 0)])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("payments -> ledger", ("payments", "ledger", "key", False)),
        ("  payments->ledger  by key ", ("payments", "ledger", "key", False)),
        ("in.v1 -> out_2 by value and nothing else", ("in.v1", "out_2", "value", True)),
    ],
)
def test_the_syntax_reads(text: str, expected: tuple) -> None:
    p = parse_promise(text)
    assert (p.source, p.target, p.match, p.unexpected) == expected
    assert parse_promise(str(p)) == p


@pytest.mark.parametrize("text", ["payments => ledger", "payments -> ledger by name", "payments ->", "a -> b c", ""])
def test_the_syntax_refuses_anything_else_in_one_line(text: str) -> None:
    with pytest.raises(ValueError, match=r"cannot read the promise .*expected 'IN -> OUT'"):
        parse_promise(text)


def test_promises_of_takes_one_or_a_list_and_refuses_other_types() -> None:
    assert promises_of(None) == ()
    assert promises_of("a -> b") == (Promise("a", "b"),)
    assert promises_of(["a -> b", Promise("c", "d", "value")]) == (Promise("a", "b"), Promise("c", "d", "value"))
    with pytest.raises(ValueError, match="match is 'key', 'value', a function"):
        Promise("a", "b", match="offset")
    with pytest.raises(ValueError, match="a promise is a string"):
        promises_of([42])


def test_the_kinds_are_in_the_catalogue_and_forbidden_in_every_mode() -> None:
    for kind in ("lost-input", "duplicated-output", "unexpected-output"):
        assert kind in KINDS
    h = history([(0, "send", "ok", [Send(P, 0, "a", 0)]), (1, "poll", "ok", [Poll(P, 0, 0, "a")])])
    for mode in ("eos", "subscribe", "at-least-once"):
        report = check_history(h, allowed=mode, promise="payments -> ledger by value")
        assert [a.kind for a in report.forbidden] == ["lost-input"]


def history(rows):
    rec = HistoryRecorder()
    for process, f, typ, mops in rows:
        inv = rec.invoke(process, f, [m._replace(offset=None) for m in mops if type(m) is Send])
        rec.complete(inv, typ, mops)
    return rec.history()


#: Upstream sent "p1" twice to payments on purpose; ledger holds each once.
UPSTREAM_DUPLICATES = [
    (0, "send", "ok", [Send(P, 0, "p1", 0), Send(P, 0, "p1", 1), Send(P, 0, "p2", 2)]),
    (
        1,
        "txn",
        "ok",
        [Poll(P, 0, 0, "p1"), Poll(P, 0, 1, "p1"), Poll(P, 0, 2, "p2"), Send(L, 0, "p1", 0), Send(L, 0, "p2", 1)],
    ),
    (2, "poll", "ok", [Poll(L, 0, 0, "p1"), Poll(L, 0, 1, "p2")]),
]


def test_topic_scope_leaves_deliberate_duplicates_out_and_the_report_says_how() -> None:
    h = history(UPSTREAM_DUPLICATES)
    unscoped = check_history(h)
    assert unscoped.kinds() == {"duplicate": 1} and unscoped.forbidden[0].key == (P, 0)
    assert str(unscoped).endswith(DUPLICATE_NOTE)
    assert "topics=[...]" in DUPLICATE_NOTE and "--topics" in DUPLICATE_NOTE
    scoped = check_history(h, topics=["ledger"])
    assert scoped.ok and scoped.stats["keys"] == 1
    assert DUPLICATE_NOTE not in str(scoped)
    # the promise still reads the topics left out of the history checks
    assert check_history(h, topics=["ledger"], promise="payments -> ledger by value").ok


def test_scope_history_keeps_every_op_and_only_the_named_topics_micro_ops() -> None:
    h = history(UPSTREAM_DUPLICATES)
    scoped = scope_history(h, ["ledger"])
    assert [op.index for op in scoped] == [op.index for op in h]
    assert {m.topic for op in scoped for m in op.mops} == {"ledger"}
    assert scope_history(h, None) is h


def test_committed_reads_are_the_ok_polls_once_each_without_keys() -> None:
    reads = committed_reads(history(UPSTREAM_DUPLICATES))
    assert [(r.topic, r.offset, r.key, r.value) for r in reads] == [
        (L, 0, None, "p1"),
        (L, 1, None, "p2"),
        (P, 0, None, "p1"),
        (P, 1, None, "p1"),
        (P, 2, None, "p2"),
    ]
