"""Tests of the optional record key of the history format, and of ``eos check --promise`` by key.

Goal: a micro-op's record key (a sixth element, ``["send", t, p, value, offset, key]`` and
``["poll", t, p, offset, value, key]``) survives ``save_jsonl`` / ``load_jsonl``; a history
without keys is written byte for byte as before; a malformed key is one format error naming the
line; keys change no verdict of the history checkers (the streaming reader of ``eos check`` and
the in-memory one agree with and without them); ``committed_reads`` returns them, so ``eos
check FILE --promise "in -> out"`` (by key, the default) exits 1 naming the lost input's offset
and key, 0 when nothing is lost, and 2 in one line when a topic's reads carry no key. Method:
histories built with :class:`HistoryRecorder`, written to a temporary directory, and
``engine.cli.main`` called in-process.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.check import (
    HistoryFormatError,
    HistoryRecorder,
    Poll,
    Send,
    check_history,
    load_jsonl,
    save_jsonl,
)
from engine.check.jsonl import analyse_jsonl
from engine.check.promises import committed_reads
from engine.cli import main

IN, OUT = "in", "out"


def session(*, keys: bool = True, lose: int | None = None):
    """Four keyed inputs, copied to ``out`` (all but input ``lose``), then a final read of both topics."""

    def k(i: int) -> str | None:
        return f"k{i}" if keys else None

    rec = HistoryRecorder()
    sent = [Send(IN, 0, f"in-{i}", None, k(i)) for i in range(4)]
    op = rec.invoke(0, "send", sent)
    rec.complete(op, "ok", [m._replace(offset=i) for i, m in enumerate(sent)])
    copied = [i for i in range(4) if i != lose]
    out = [Send(OUT, 0, f"out-{i}", None, k(i)) for i in copied]
    op = rec.invoke(1, "txn", out)
    rec.complete(op, "ok", [m._replace(offset=n) for n, m in enumerate(out)])
    op = rec.invoke(2, "assign", keys=[(IN, 0), (OUT, 0)])
    rec.complete(op, "ok")
    op = rec.invoke(2, "poll")
    reads = [Poll(IN, 0, i, f"in-{i}", k(i)) for i in range(4)]
    reads += [Poll(OUT, 0, n, f"out-{i}", k(i)) for n, i in enumerate(copied)]
    rec.complete(op, "ok", reads)
    return rec.history()


def read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def write(tmp_path, history, name: str = "h.jsonl") -> str:
    path = tmp_path / name
    save_jsonl(history, path)
    return str(path)


def test_keys_are_a_sixth_element_and_survive_the_round_trip(tmp_path) -> None:
    path = write(tmp_path, session())
    lines = [json.loads(line) for line in read(path).splitlines()]
    assert lines[0]["value"][1] == ["send", IN, 0, "in-1", None, "k1"]
    assert lines[-1]["value"][5] == ["poll", OUT, 0, 1, "out-1", "k1"]
    loaded = load_jsonl(path)
    assert [[m.key for m in op.mops] for op in loaded] == [[m.key for m in op.mops] for op in session()]
    again = write(tmp_path, loaded, "again.jsonl")
    assert read(again) == read(path)


def test_a_history_without_keys_is_written_as_before(tmp_path) -> None:
    text = read(write(tmp_path, session(keys=False)))
    first = text.splitlines()[0]
    assert first == (
        '{"index":0,"time_ms":0,"process":0,"type":"invoke","f":"send","value":[["send","in",0,"in-0",null],'
        '["send","in",0,"in-1",null],["send","in",0,"in-2",null],["send","in",0,"in-3",null]]}'
    )
    assert all(len(m) == 5 for line in text.splitlines() for m in json.loads(line)["value"])


def test_a_null_key_reads_as_no_key_and_is_written_without_it(tmp_path) -> None:
    path = tmp_path / "null.jsonl"
    path.write_text(
        '{"index":0,"process":0,"type":"invoke","f":"send","value":[["send","t",0,"a",null,null]]}\n'
        '{"index":1,"process":0,"type":"ok","f":"send","value":[["send","t",0,"a",0,null]]}\n',
        encoding="utf-8",
    )
    history = load_jsonl(path)
    assert history[1].mops[0].key is None
    assert '"a",0]]' in read(write(tmp_path, history, "out.jsonl"))


@pytest.mark.parametrize(
    ("mop", "message"),
    [
        ('["poll","t",0,0,"a",7]', "a record key is a string or null"),
        ('["poll","t",0,0,"a",{"b64":"AA=="}]', "a record key is a string or null"),
        ('["poll","t",0,0,"a","k","extra"]', "then optionally a key"),
    ],
)
def test_a_malformed_key_is_one_format_error_naming_the_line(tmp_path, mop, message) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"index":0,"process":0,"type":"invoke","f":"poll"}\n'
        f'{{"index":1,"process":0,"type":"ok","f":"poll","value":[{mop}]}}\n',
        encoding="utf-8",
    )
    for read in (load_jsonl, analyse_jsonl):
        with pytest.raises(HistoryFormatError, match=f"^line 2: .*{re.escape(message)}"):
            read(path)
    assert main(["check", str(path)]) == 2


def test_keys_change_no_verdict_of_the_history_checkers(tmp_path) -> None:
    keyed, bare = session(lose=2), session(keys=False, lose=2)
    assert keyed == bare  # a key rides beside the micro-op's tuple
    assert check_history(keyed) == check_history(bare)
    a, b = write(tmp_path, keyed, "a.jsonl"), write(tmp_path, bare, "b.jsonl")
    assert analyse_jsonl(a).stats == analyse_jsonl(b).stats
    assert check_history(analyse_jsonl(a)) == check_history(load_jsonl(b))


def test_committed_reads_return_the_recorded_keys(tmp_path) -> None:
    reads = committed_reads(load_jsonl(write(tmp_path, session(lose=2))))
    assert [(r.topic, r.offset, r.key, r.value) for r in reads][:2] == [(IN, 0, "k0", "in-0"), (IN, 1, "k1", "in-1")]
    assert [r.key for r in reads if r.topic == OUT] == ["k0", "k1", "k3"]


def test_a_promise_by_key_fails_naming_the_lost_offset_and_key(tmp_path, capsys) -> None:
    path = write(tmp_path, session(lose=2))
    assert main(["check", path, "--promise", "in -> out"]) == 1
    out = capsys.readouterr().out
    assert "lost-input x1" in out
    assert "1 input record(s) of in/0 have no committed record in out (by key): offset 2 (key 'k2')" in out


def test_a_promise_by_key_passes_when_nothing_was_lost(tmp_path, capsys) -> None:
    path = write(tmp_path, session())
    assert main(["check", path, "--promise", "in -> out and nothing else"]) == 0
    assert capsys.readouterr().out.startswith("OK: 0 forbidden")


def test_a_promise_by_key_on_reads_without_keys_is_refused_in_one_line(tmp_path, capsys) -> None:
    path = write(tmp_path, session(keys=False, lose=2))
    assert main(["check", path, "--promise", "in -> out"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the reads of 'in' carry no record key" in err and "'in -> out by value'" in err
    assert main(["check", path, "--promise", "in -> out by value"]) == 1  # judged: no value of in is in out
    capsys.readouterr()


def test_a_promise_by_key_with_some_reads_keyless_names_how_many(tmp_path, capsys) -> None:
    history = list(session())
    last = history[-1]
    history[-1] = last._replace(
        mops=tuple(m._replace(key=None) if m.topic == OUT and m.offset == 1 else m for m in last.mops)
    )
    path = write(tmp_path, history)
    assert main(["check", path, "--promise", "in -> out"]) == 2
    assert "1 of the 4 reads of 'out' carry no record key" in capsys.readouterr().err
