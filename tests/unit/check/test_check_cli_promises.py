"""Tests of ``eos check --topics`` and ``--promise``: the scope and the promises from the command line.

Goal: ``--topics`` leaves a topic with deliberate duplicates out (exit 0 where the whole history
exits 1); ``--promise`` (repeatable) exits 1 naming the lost input offsets, 0 when kept; the
syntax is the plugin's, a bad promise or a promise ``by key`` on reads without keys is one line on
stderr with status 2; ``--json`` carries the promise anomalies. Method: histories written by hand
to a temporary directory, ``engine.cli.main`` called in-process.
"""

from __future__ import annotations

import json

from engine.check import HistoryRecorder, Poll, Send, save_jsonl
from engine.cli import main

P, L = "payments", "ledger"

#: Upstream sent "p1" twice on purpose; the processor booked p1 and lost p3.
ROWS = [
    (0, "send", "ok", [Send(P, 0, "p1", 0), Send(P, 0, "p1", 1), Send(P, 0, "p2", 2), Send(P, 0, "p3", 3)]),
    (
        1,
        "txn",
        "ok",
        [Poll(P, 0, 0, "p1"), Poll(P, 0, 1, "p1"), Poll(P, 0, 2, "p2"), Send(L, 0, "p1", 0), Send(L, 0, "p2", 1)],
    ),
    (2, "poll", "ok", [Poll(P, 0, 3, "p3"), Poll(L, 0, 0, "p1"), Poll(L, 0, 1, "p2")]),
]


def write(tmp_path, rows=ROWS):
    rec = HistoryRecorder()
    for process, f, typ, mops in rows:
        inv = rec.invoke(process, f, [m._replace(offset=None) for m in mops if type(m) is Send])
        rec.complete(inv, typ, mops)
    path = tmp_path / "h.jsonl"
    save_jsonl(rec.history(), path)
    return str(path)


def test_topics_scopes_out_the_deliberate_duplicates(tmp_path, capsys) -> None:
    path = write(tmp_path)
    assert main(["check", path]) == 1
    out = capsys.readouterr().out
    assert "duplicate" in out and "payments/0" in out and "--topics" in out.splitlines()[-1]
    assert main(["check", path, "--topics", "ledger"]) == 0
    assert capsys.readouterr().out.startswith("OK: 0 forbidden")


def test_a_broken_promise_exits_1_naming_the_lost_input_offset(tmp_path, capsys) -> None:
    path = write(tmp_path)
    assert main(["check", path, "--topics", "ledger", "--promise", "payments -> ledger by value"]) == 1
    out = capsys.readouterr().out
    assert "lost-input x1" in out
    assert "1 input record(s) of payments/0 have no committed record in ledger (by value): offset 3 (value 'p3')" in out


def test_a_kept_promise_exits_0_and_every_repeated_promise_is_judged(tmp_path, capsys) -> None:
    kept = [*ROWS[:2], (2, "poll", "ok", [Poll(L, 0, 0, "p1"), Poll(L, 0, 1, "p2"), Poll(P, 0, 2, "p2")])]
    path = write(tmp_path, kept)
    args = ["check", path, "--topics", "ledger", "--promise", "payments -> ledger by value"]
    assert main(args) == 0
    assert main([*args, "--promise", "ledger -> payments by value"]) == 1  # p1 is twice in payments
    assert "input ledger/0@0 (value 'p1') has 2 committed records in payments" in capsys.readouterr().out
    assert (
        main(["check", write(tmp_path), "--topics", "ledger", "--promise", "payments -> ledger by value", "--json"])
        == 1
    )
    report = json.loads(capsys.readouterr().out)
    assert [(a["kind"], a["key"], a["offsets"]) for a in report["forbidden"]] == [("lost-input", [P, 0], [3])]


def test_a_promise_by_key_or_unreadable_is_one_line_with_status_2(tmp_path, capsys) -> None:
    path = write(tmp_path)
    assert main(["check", path, "--promise", "payments -> ledger"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the reads of 'payments' carry no record key" in err
    assert "'payments -> ledger by value'" in err and "engine.record" in err
    assert main(["check", path, "--promise", "payments => ledger"]) == 2
    assert "cannot read the promise 'payments => ledger'" in capsys.readouterr().err
    assert main(["check", path, "--topics", ","]) == 2
    assert "--topics" in capsys.readouterr().err
