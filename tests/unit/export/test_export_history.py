"""The client history as Arrow tables (:mod:`engine.export.history`), and back.

Goal: ``history_tables`` writes every line and micro-op with the exact schema, and
``history_from_tables`` rebuilds the very same :class:`History`, so the Python checker gives the
same report on the tables as on the run. Method: round trips of the example catalogue, of
catalog runs, of an empty history and of two runs stacked in one table; then tables damaged
one way at a time, each refused with a clear ``ValueError``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine.check import History, Op, Poll, Send, check_history
from engine.check.examples import EXAMPLES
from engine.export.common import KEY_LIST, RUN_FIELDS, RunId
from engine.export.history import HISTORY_FIELDS, HISTORY_MOPS_FIELDS, history_from_tables, history_tables
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.scenarios.mutants import get_mutant

RUN = RunId("r-1", "hand", 1)


def _hand_history():
    return History(
        [
            Op(0, 0, "invoke", "assign", 0, (), (("t", 0), ("u", 1))),
            Op(1, 0, "ok", "assign", 1, (), (("t", 0), ("u", 1))),
            Op(2, 1, "invoke", "txn", 2, (Send("t", 0, "a"), Send("u", 1, "b"))),
            Op(3, 0, "invoke", "poll", 3),
            Op(4, 1, "info", "txn", 4, (), (), (), "timeout"),
            Op(5, 0, "ok", "poll", 5, (Poll("t", 0, 0, "a"), Poll("u", 1, 3, "b")), (), (("u", 1),)),
            Op(6, 2, "invoke", "send", 6, (Send("t", 0, "c"),)),
        ]
    )


def _round_trip(h, run=RUN):
    tables = history_tables(h, run)
    return history_from_tables(tables["history"], tables["history_mops"])


def test_schemas_are_exactly_the_run_columns_then_the_history_fields():
    tables = history_tables(_hand_history(), RUN)
    assert sorted(tables) == ["history", "history_mops"]
    assert tables["history"].schema == pa.schema([*RUN_FIELDS, *HISTORY_FIELDS])
    assert tables["history_mops"].schema == pa.schema([*RUN_FIELDS, *HISTORY_MOPS_FIELDS])
    assert [f.name for f in HISTORY_FIELDS] == [
        "index", "time_ms", "process", "type", "f", "error", "keys", "rebalance_keys"
    ]  # fmt: skip
    assert [f.name for f in HISTORY_MOPS_FIELDS] == [
        "index", "mop_index", "mop_f", "topic", "partition", "offset", "value"
    ]  # fmt: skip
    assert tables["history"].schema.field("keys").type == KEY_LIST
    assert tables["history_mops"].schema.field("mop_index").type == pa.int32()


def test_rows_hold_each_line_and_each_micro_op_as_the_line_holds_it():
    tables = history_tables(_hand_history(), RUN)
    lines = tables["history"].to_pylist()
    assert [r["index"] for r in lines] == list(range(7))
    assert lines[1]["keys"] == [{"topic": "t", "partition": 0}, {"topic": "u", "partition": 1}]
    assert lines[4]["error"] == "timeout"
    assert lines[5]["rebalance_keys"] == [{"topic": "u", "partition": 1}]
    assert {(r["run_id"], r["scenario"], r["seed"]) for r in lines} == {("r-1", "hand", 1)}
    mops = tables["history_mops"].to_pylist()
    # The empty info completion (index 4) has no rows: it takes its invocation's when read.
    assert [(r["index"], r["mop_index"], r["mop_f"], r["offset"], r["value"]) for r in mops] == [
        (2, 0, "send", None, "a"),
        (2, 1, "send", None, "b"),
        (5, 0, "poll", 0, "a"),
        (5, 1, "poll", 3, "b"),
        (6, 0, "send", None, "c"),
    ]


def test_hand_history_round_trips_exactly():
    h = _hand_history()
    assert _round_trip(h) == h


def test_every_example_round_trips_with_the_same_report():
    for ex in EXAMPLES.values():
        back = _round_trip(ex.history)
        assert back == ex.history, ex.name
        assert check_history(back, allowed=()) == check_history(ex.history, allowed=()), ex.name


@pytest.mark.parametrize(
    ("scenario", "seed", "mutant"),
    [("copier: random aborts", 1, None), ("swarm: soak", 2, None), ("transactions: zombie fencing", 1, "M6")],
)
def test_scenario_history_round_trips_with_the_same_report(scenario, seed, mutant):
    h = run_spec(BY_NAME[scenario], seed, mutant=get_mutant(mutant) if mutant else None).history
    back = _round_trip(h, RunId(f"{scenario}-{seed}", scenario, seed))
    assert back == h
    assert check_history(back) == check_history(h)


def test_empty_history_gives_empty_tables_with_the_schema_and_round_trips():
    tables = history_tables(History(), RUN)
    assert tables["history"].num_rows == 0
    assert tables["history_mops"].num_rows == 0
    assert tables["history"].schema == pa.schema([*RUN_FIELDS, *HISTORY_FIELDS])
    assert history_from_tables(tables["history"], tables["history_mops"]) == History()


def test_bytes_values_are_written_as_text():
    h = History([Op(0, 0, "invoke", "send", 0, (Send("t", 0, b"\xffk"),))])
    (row,) = history_tables(h, RUN)["history_mops"].to_pylist()
    assert row["value"] == "\\xffk"


def _stacked():
    a = history_tables(EXAMPLES["duplicate: one value at two offsets"].history, RunId("a", "", 0))
    b = history_tables(_hand_history(), RunId("b", "", 0))
    return (
        pa.concat_tables([a["history"], b["history"]]),
        pa.concat_tables([a["history_mops"], b["history_mops"]]),
    )


def test_stacked_runs_are_picked_by_run_id():
    lines, mops = _stacked()
    assert history_from_tables(lines, mops, run_id="b") == _hand_history()
    assert history_from_tables(lines, mops, "a") == EXAMPLES["duplicate: one value at two offsets"].history


def test_rows_in_another_order_rebuild_the_same_history():
    tables = history_tables(_hand_history(), RUN)
    lines = tables["history"].take(pa.array([6, 5, 4, 3, 2, 1, 0]))
    mops = tables["history_mops"].take(pa.array([4, 3, 2, 1, 0]))
    assert history_from_tables(lines, mops) == _hand_history()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda lines, mops: (lines, mops, None), "holds 2 runs"),
        (lambda lines, mops: (lines, mops, "zzz"), "no rows of run_id='zzz'"),
        (lambda lines, mops: (lines.drop_columns(["process"]), mops, "b"), "no column"),
        (lambda lines, mops: (lines.to_pandas(), mops, "b"), "pyarrow Table"),
        (lambda lines, mops: (lines, _set(mops, "mop_f", "peek"), "b"), "neither send nor poll"),
        (lambda lines, mops: (lines, _set(mops, "mop_index", 7), "b"), "not 0, 1, 2"),
        (lambda lines, mops: (lines, _set(mops, "offset", None, pa.int64()), "b"), "no offset"),
        (lambda lines, mops: (_set(lines, "type", "maybe"), mops, "b"), "type 'maybe'"),
        (lambda lines, mops: (lines.filter(pc.not_equal(lines["index"], 5)), mops, "b"), "does not hold"),
        (lambda lines, mops: (lines.filter(pc.not_equal(lines["index"], 3)), mops, "b"), "without an invocation"),
    ],
)
def test_bad_tables_are_refused_with_a_clear_message(damage, message):
    lines, mops, run_id = damage(*_stacked())
    with pytest.raises(ValueError, match=message):
        history_from_tables(lines, mops, run_id=run_id)


def _set(t, name, value, type_=None):
    col = t.column(name)
    i = t.schema.get_field_index(name)
    return t.set_column(i, t.schema.field(name), pa.array([value] * len(col), type_ or col.type))


def test_history_tables_refuses_what_is_not_a_history():
    with pytest.raises(ValueError, match="History"):
        history_tables([Op(0, 0, "invoke", "poll", 0)], RUN)
    with pytest.raises(ValueError, match="RunId"):
        history_tables(History(), "r-1")
