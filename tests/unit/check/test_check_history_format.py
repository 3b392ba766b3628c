"""Tests of the history model: the recorder API, invocation pairing and the JSON Lines form.

Goal: a history survives ``save_jsonl`` / ``load_jsonl`` unchanged, the example in
``docs/history-format.md`` loads and checks clean, and every malformed line is rejected with a
:class:`HistoryFormatError` that names the line (never a bare ``KeyError``). Method: round-trip
recorder-built histories through a temporary file, and feed one broken line per case.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.check import (
    History,
    HistoryFormatError,
    HistoryRecorder,
    Op,
    Poll,
    Send,
    check_history,
    load_jsonl,
    save_jsonl,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "history-format.md"


def sample_history() -> History:
    rec = HistoryRecorder()
    a = rec.invoke(0, "send", [Send("t", 0, "a"), Send("t", 1, "b")], time_ms=0)
    c = rec.invoke(1, "assign", time_ms=1, keys=[("t", 0), ("t", 1)])
    rec.complete(c, "ok", time_ms=1)
    rec.complete(a, "ok", [Send("t", 0, "a", 0), Send("t", 1, "b", 0)], time_ms=2)
    p = rec.invoke(1, "poll", time_ms=3)
    rec.complete(p, "ok", [Poll("t", 0, 0, "a"), Poll("t", 1, 0, "b")], time_ms=4, rebalance_keys=[("t", 1)])
    x = rec.invoke(0, "txn", [Send("t", 0, "c")], time_ms=5)
    rec.complete(x, "info", None, time_ms=9, error="request timed out")
    return rec.history()


def test_recorder_gives_increasing_indexes_and_pairs_completions():
    h = sample_history()
    assert [op.index for op in h] == list(range(len(h)))
    completions = list(h.completions())
    assert [op.type for op in completions] == ["ok", "ok", "ok", "info"]
    assert completions[-1].mops == (Send("t", 0, "c"),)  # taken from the invocation
    assert completions[-1].txn_outcome == "unknown"


def test_recorder_rejects_a_second_invoke_of_a_busy_process():
    rec = HistoryRecorder()
    rec.invoke(0, "poll")
    with pytest.raises(ValueError, match="in flight"):
        rec.invoke(0, "poll")


def test_recorder_rejects_an_unknown_function_or_completion_type():
    rec = HistoryRecorder()
    with pytest.raises(ValueError, match="unknown op function"):
        rec.invoke(0, "produce")
    inv = rec.invoke(0, "poll")
    with pytest.raises(ValueError, match="completion type"):
        rec.complete(inv, "done")


def test_recorder_rejects_completing_an_op_twice():
    rec = HistoryRecorder()
    inv = rec.invoke(0, "poll")
    rec.complete(inv, "ok")
    with pytest.raises(ValueError, match="not in flight"):
        rec.complete(inv, "ok")


def test_txn_outcome_follows_the_completion_type():
    base = Op(1, 0, "ok", "txn", 0)
    assert base.txn_outcome == "committed"
    assert base._replace(type="fail").txn_outcome == "aborted"
    assert base._replace(type="invoke").txn_outcome is None
    assert base._replace(f="send").txn_outcome is None


def test_an_invocation_that_never_completed_reads_as_info():
    rec = HistoryRecorder()
    rec.invoke(3, "send", [Send("t", 0, "a")])
    (op,) = rec.history().completions()
    assert op.type == "info"
    assert op.error == "never completed"


def test_jsonl_round_trip_keeps_every_field(tmp_path):
    h = sample_history()
    path = tmp_path / "h.jsonl"
    save_jsonl(h, path)
    assert load_jsonl(path) == h
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(h)
    assert json.loads(lines[0])["value"] == [["send", "t", 0, "a", None], ["send", "t", 1, "b", None]]


def test_jsonl_round_trip_keeps_non_ascii_values(tmp_path):
    rec = HistoryRecorder()
    inv = rec.invoke(0, "send", [Send("tópico", 0, "valeur-é")])
    rec.complete(inv, "ok", [Send("tópico", 0, "valeur-é", 0)])
    path = tmp_path / "h.jsonl"
    save_jsonl(rec.history(), path)
    assert load_jsonl(path) == rec.history()


def test_docs_example_loads_and_checks_clean(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"```jsonl\n(.*?)```", text, re.S)
    assert block is not None
    path = tmp_path / "example.jsonl"
    path.write_text(block.group(1), encoding="utf-8")
    report = check_history(load_jsonl(path))
    assert report.ok
    assert report.anomalies == ()
    assert "OK: 0 forbidden, 0 allowed anomalies (ops=6 reads=3 sends=4 keys=1)" in text
    assert str(report).splitlines()[0] == "OK: 0 forbidden, 0 allowed anomalies (ops=6 reads=3 sends=4 keys=1)"


def test_blank_lines_are_ignored(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text(
        '\n{"index":0,"process":0,"type":"invoke","f":"poll"}\n\n{"index":1,"process":0,"type":"ok","f":"poll"}\n'
    )
    assert len(load_jsonl(path)) == 2


BAD_LINES = {
    "not json": ("{index: 0}", "not valid JSON"),
    "not an object": ("[1, 2]", "expected a JSON object"),
    "missing field": ('{"index":0,"process":0,"type":"invoke"}', "missing field 'f'"),
    "bad type": ('{"index":0,"process":0,"type":"done","f":"poll"}', "type must be one of"),
    "bad f": ('{"index":0,"process":0,"type":"invoke","f":"produce"}', "f must be one of"),
    "string index": ('{"index":"0","process":0,"type":"invoke","f":"poll"}', "must be integers"),
    "short mop": ('{"index":0,"process":0,"type":"invoke","f":"send","value":[["send","t",0]]}', "micro-op"),
    "poll offset": (
        '{"index":0,"process":0,"type":"invoke","f":"txn","value":[["poll","t",0,"x","v"]]}',
        "integer offset",
    ),
    "send value": (
        '{"index":0,"process":0,"type":"invoke","f":"send","value":[["send","t",0,7,null]]}',
        "string value",
    ),
    "bad key": ('{"index":0,"process":0,"type":"invoke","f":"assign","keys":[["t"]]}', "a key must be"),
    "negative send offset": (
        '{"index":0,"process":0,"type":"ok","f":"send","value":[["send","t",0,"v",-1]]}',
        "offsets are never negative",
    ),
    "negative poll offset": (
        '{"index":0,"process":0,"type":"ok","f":"poll","value":[["poll","t",0,-3,"v"]]}',
        "offsets are never negative",
    ),
    "negative partition": (
        '{"index":0,"process":0,"type":"ok","f":"poll","value":[["poll","t",-1,0,"v"]]}',
        "partitions are never negative",
    ),
    "5000-digit integer": (
        '{"index":0,"process":0,"type":"invoke","f":"poll","time_ms":' + "9" * 5_000 + "}",
        "digits",
    ),
    "deep nesting": ('{"index":0,"process":0,"type":"invoke","f":"poll","value":' + "[" * 100_000, "nested"),
    "poll in an invocation": (
        '{"index":0,"process":0,"type":"invoke","f":"poll","value":[["poll","t",0,0,"v"]]}',
        "an invocation carries no polls",
    ),
    "send offset in an invocation": (
        '{"index":0,"process":0,"type":"invoke","f":"send","value":[["send","t",0,"v",4]]}',
        "offsets are null in an invocation",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_malformed_line_raises_history_format_error_naming_the_line(tmp_path, case):
    line, fragment = BAD_LINES[case]
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"index":0,"process":9,"type":"invoke","f":"poll"}\n' + line.replace('"index":0', '"index":1') + "\n"
    )
    with pytest.raises(HistoryFormatError, match="line 2") as info:
        load_jsonl(path)
    assert fragment in str(info.value)


def test_a_malformed_line_message_stays_short(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"index":0,"process":0,"type":"invoke","f":"send","value":[["send","t",0,"' + "x" * 100_000 + '"]]}\n'
    )
    with pytest.raises(HistoryFormatError, match="line 1") as info:
        load_jsonl(path)
    assert len(str(info.value)) < 400


@pytest.mark.parametrize("content", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
def test_a_history_without_operations_is_a_format_error(tmp_path, content):
    path = tmp_path / "h.jsonl"
    path.write_text(content)
    with pytest.raises(HistoryFormatError, match="no operations"):
        load_jsonl(path)


def test_a_completion_whose_f_differs_from_its_invocation_is_a_format_error_naming_the_line(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"index":0,"process":0,"type":"invoke","f":"poll"}\n'
        '{"index":1,"process":0,"type":"ok","f":"send","value":[["send","t",0,"phantom",0]]}\n'
    )
    with pytest.raises(HistoryFormatError, match=r"line 2: .*'send'.*'poll'"):
        load_jsonl(path)


def test_a_completion_whose_f_differs_from_its_invocation_is_rejected_in_memory():
    with pytest.raises(HistoryFormatError, match="op 1: an ok completion with f='send' cannot complete op 0, a 'poll'"):
        History([Op(0, 0, "invoke", "poll", 0), Op(1, 0, "ok", "send", 0, (Send("t", 0, "a", 0),))])


def test_an_empty_completion_never_inherits_polls_from_its_invocation():
    with pytest.raises(HistoryFormatError, match="op 0: an invocation carries no polls"):
        History([Op(0, 0, "invoke", "poll", 0, (Poll("t", 0, 0, "a"),)), Op(1, 0, "ok", "poll", 0)])


def test_the_recorder_rejects_an_invocation_with_polls():
    with pytest.raises(ValueError, match="an invocation carries no polls"):
        HistoryRecorder().invoke(0, "txn", [Send("t", 0, "a"), Poll("t", 0, 0, "b")])


def test_completion_without_invocation_is_a_format_error():
    with pytest.raises(HistoryFormatError, match="without an invocation"):
        History([Op(0, 0, "ok", "poll", 0)])


def test_decreasing_indexes_are_a_format_error():
    with pytest.raises(HistoryFormatError, match="does not increase"):
        History([Op(1, 0, "invoke", "poll", 0), Op(1, 0, "ok", "poll", 0)])
