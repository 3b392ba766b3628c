"""Tests of ``eos check FILE`` on a generated history: the exact anomalies, whatever the read path.

Goal: reading a history from a file (the path ``eos check`` takes) must give exactly the report
the in-memory checker gives, and both must find exactly the anomalies injected, no more and no
fewer. A faster file reader or checker pass that changes a single anomaly, offset, value, op
index, message or statistic fails here.

Method: a seeded generator builds, with :class:`HistoryRecorder`, a few hundred operations of
overlapping transactional producers (committed, aborted, timed out and proven, timed out and
never written), consumers polling several keys per poll, a crash, re-assignments, a rebalance,
``fail`` and ``info`` polls, a completion that repeats its invocation's micro-ops, and an
invocation that never completed. Into that traffic it injects an aborted read, a lost write, a
duplicate, an offset holding two values and unread tail writes; a hand-written block on other
keys adds a precommitted read, send-order anomalies and the three kinds of cycle. The file is
written with ``save_jsonl``, plus a few hand-written lines using the format's optional forms
(blank lines, missing ``time_ms``, ``"value": null``, a non-string ``error``). The expected
anomaly list below was recorded from the checker and reviewed against the injections.
"""

from __future__ import annotations

import json
import random

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
from engine.check.jsonl import analyse_jsonl
from engine.cli import main

KEYS = [("t", 0), ("t", 1), ("t", 2), ("u", 0)]
CONSUMERS = {10: [("t", 0), ("t", 1)], 11: [("t", 2), ("u", 0)]}


def generated_history() -> History:
    """Return the seeded history described in the module docstring (same result every call)."""
    rng = random.Random(20240612)
    rec = HistoryRecorder()
    now = 0
    nxt = dict.fromkeys(KEYS, 0)
    log: dict[tuple[str, int], list[tuple[int, str]]] = {k: [] for k in KEYS}  # what consumers will read
    read_upto = dict.fromkeys(KEYS, 0)  # per key: how much of the log its consumer has polled

    for process, keys in CONSUMERS.items():
        inv = rec.invoke(process, "assign", time_ms=now, keys=keys)
        rec.complete(inv, "ok", time_ms=now)

    for r in range(40):
        now += 10
        invocations = []
        for producer in range(3):
            keys = rng.sample(KEYS, rng.choice((1, 1, 2)))
            sends = [
                Send(k[0], k[1], f"p{producer}-r{r}-{k[0]}{k[1]}-{i}") for k in keys for i in range(rng.randint(1, 3))
            ]
            invocations.append((rec.invoke(producer, "txn", sends, time_ms=now), sends))
        now += 3
        for inv, sends in invocations:
            outcome = rng.choices(("ok", "fail", "info-written", "info-lost"), (8, 1, 1, 1))[0]
            if r == 5 and inv.process == 0:
                outcome = "fail-but-visible"  # G1a: an aborted transaction's records are read
            acked = []
            for key in dict.fromkeys((m.topic, m.partition) for m in sends):
                for m in sends:
                    if (m.topic, m.partition) == key:
                        acked.append(m._replace(offset=nxt[key]))
                        nxt[key] += 1
                nxt[key] += 1  # the commit or abort marker
            if outcome in ("ok", "info-written", "fail-but-visible"):
                for m in acked:
                    log[(m.topic, m.partition)].append((m.offset, m.value))
            if outcome == "ok":
                rec.complete(inv, "ok", acked, time_ms=now)
            elif outcome in ("fail", "fail-but-visible"):
                rec.complete(inv, "fail", acked, time_ms=now, error="aborted")
            elif rng.random() < 0.5:
                rec.complete(inv, "info", None, time_ms=now, error="timed out")  # repeats the invocation
            else:
                rec.complete(inv, "info", [], time_ms=now, error="timed out")
        if r == 8:
            # A lost write: the broker dropped the first record of the latest batch on t/0.
            del log[("t", 0)][-2]
        if r == 12:
            # A duplicate: the first value on t/1 written again at a new offset.
            log[("t", 1)].append((nxt[("t", 1)], log[("t", 1)][0][1]))
            nxt[("t", 1)] += 2
        if r == 15:
            # An offset that holds two values: a second record claims the latest offset of t/2.
            o, _v = log[("t", 2)][-1]
            log[("t", 2)].append((o, "ghost"))
        if r == 20:
            crash = rec.invoke(2, "crash", time_ms=now)
            rec.complete(crash, "info", time_ms=now, error="crashed")
        if r == 25:
            inv = rec.invoke(11, "subscribe", time_ms=now, keys=CONSUMERS[11])
            rec.complete(inv, "ok", time_ms=now)
        if r % 3 != 2 or r > 36:
            continue  # the last rounds are never polled: their writes stay unseen
        now += 2
        for process, keys in CONSUMERS.items():
            polls = []
            for i in range(16):
                key = keys[i % len(keys)]
                if read_upto[key] < len(log[key]):
                    o, v = log[key][read_upto[key]]
                    read_upto[key] += 1
                    polls.append(Poll(key[0], key[1], o, v))
            inv = rec.invoke(process, "poll", time_ms=now)
            roll = rng.random()
            if roll < 0.1:
                rec.complete(inv, "info", [], time_ms=now, error="timed out")
                for m in polls:  # nothing was consumed
                    read_upto[(m.topic, m.partition)] -= 1
            elif roll < 0.15:
                rec.complete(inv, "fail", polls, time_ms=now, error="fenced")  # seen, not consumed
                for m in polls:
                    read_upto[(m.topic, m.partition)] -= 1
            else:
                rebalance = [keys[0]] if r == 26 else []
                rec.complete(inv, "ok", polls, time_ms=now, rebalance_keys=rebalance)

    # Hand-written anomalies on keys of their own.
    def serial(process, f, typ, mops, **kw):
        nonlocal now
        now += 1
        inv = rec.invoke(process, f, [m._replace(offset=None) for m in mops if type(m) is Send], time_ms=now)
        rec.complete(inv, typ, mops, time_ms=now, **kw)

    serial(20, "txn", "ok", [Send("own", 0, "self", 0), Poll("own", 0, 0, "self")])  # precommitted-read
    serial(21, "send", "ok", [Send("s", 0, "later", 1)])
    serial(21, "send", "ok", [Send("s", 0, "earlier", 0)])  # nonmonotonic-send
    serial(22, "send", "ok", [Send("s", 1, "second", 1), Send("s", 1, "first", 0)])  # int-nonmonotonic-send
    serial(23, "txn", "ok", [Send("s", 2, "x0", 0), Send("s", 2, "x2", 2)])  # int-send-skip
    serial(24, "txn", "ok", [Send("s", 2, "x1", 1)])
    serial(25, "poll", "ok", [Poll("s", k, o, v) for k, o, v in _SEND_READS])
    serial(30, "txn", "ok", [Send("x", 0, "a", 0), Send("y", 0, "d", 1)])  # G0 with the next
    serial(31, "txn", "ok", [Send("x", 0, "b", 1), Send("y", 0, "c", 0)])
    serial(32, "poll", "ok", [Poll("x", 0, 0, "a"), Poll("x", 0, 1, "b"), Poll("y", 0, 0, "c"), Poll("y", 0, 1, "d")])
    serial(33, "txn", "ok", [Send("x", 1, "e", 0), Poll("y", 1, 0, "f")])  # G1c-wr with the next
    serial(34, "txn", "ok", [Send("y", 1, "f", 0), Poll("x", 1, 0, "e")])
    serial(35, "txn", "ok", [Send("x", 2, "g", 0), Poll("y", 2, 0, "i")])  # G1c-ww with the next
    serial(36, "txn", "ok", [Send("x", 2, "h", 1), Send("y", 2, "i", 0)])
    serial(37, "poll", "ok", [Poll("x", 2, 0, "g"), Poll("x", 2, 1, "h")])
    serial(38, "poll", "ok", [Poll("own", 0, 0, "self")])
    serial(25, "poll", "ok", [Poll("s", 0, 0, "earlier")])  # nonmonotonic-poll: back to offset 0
    serial(26, "poll", "ok", [Poll("s", 2, 0, "x0")])
    serial(26, "poll", "ok", [Poll("s", 2, 2, "x2")])  # poll-skip over x1
    aborted = Poll("u", 0, 16, "p0-r5-u0-0")  # a value of the aborted transaction of round 5
    serial(27, "poll", "fail", [aborted], error="fenced")  # not a reader: the op failed
    serial(28, "poll", "ok", [aborted])  # a second reader of it
    rec.invoke(1, "txn", [Send("t", 0, "never-completed")], time_ms=now + 1)
    return rec.history()


_SEND_READS = [
    (0, 0, "earlier"),
    (0, 1, "later"),
    (1, 0, "first"),
    (1, 1, "second"),
    (2, 0, "x0"),
    (2, 1, "x1"),
    (2, 2, "x2"),
]

#: Lines appended by hand after the recorder's, in the format's optional forms.
EXTRA_LINES = [
    "",
    '{"index":9000,"process":40,"type":"invoke","f":"send","value":[["send","z",0,"z0",null]]}',
    "   ",
    '{"index":9001,"process":40,"type":"info","f":"send","value":null,"error":{"code":7,"why":"timeout"}}',
    '{"index":9002,"process":41,"type":"invoke","f":"poll","value":null}',
    '{"index":9003,"process":41,"type":"ok","f":"poll","time_ms":12,"value":[["poll","z",0,3,"z0"]]}',
]


def write_history(tmp_path) -> tuple[str, History]:
    """Write the generated history and the extra lines; return the path and the history it holds."""
    path = tmp_path / "generated.jsonl"
    save_jsonl(generated_history(), path)
    with open(path, "a", encoding="utf-8") as out:
        out.write("\n".join(EXTRA_LINES) + "\n")
    return str(path), load_jsonl(path)


#: Counts of what was checked (the report's stats line).
EXPECTED_STATS: dict[str, int] = {"ops": 172, "reads": 258, "sends": 344, "keys": 15}

#: (kind, key, offsets, values, ops) of every anomaly, in report order (forbidden, then allowed).
EXPECTED: list[tuple] = [
    ("G1a", ("u", 0), (16,), ("p0-r5-u0-0",), (41, 47, 337)),
    ("G1a", ("u", 0), (17,), ("p0-r5-u0-1",), (41, 47)),
    ("G1a", ("u", 0), (18,), ("p0-r5-u0-2",), (41, 47)),
    ("G1c-wr", None, (), (), (317, 319)),
    ("duplicate", ("t", 1), (0, 22), ("p0-r0-t1-0",), (7,)),
    ("inconsistent-offsets", ("t", 2), (57,), ("ghost", "p2-r15-t2-0"), (119,)),
    ("int-nonmonotonic-poll", ("t", 2), (57, 57), ("p2-r15-t2-0", "p2-r15-t2-0"), (181,)),
    ("int-nonmonotonic-send", ("s", 1), (1, 0), ("second", "first"), (303,)),
    ("int-poll-skip", ("t", 0), (23, 27), ("p1-r7-t0-0",), (67,)),
    ("lost-write", ("t", 0), (25, 112), ("p1-r7-t0-0",), (58,)),
    ("nonmonotonic-poll", ("s", 0), (1, 0), ("later", "earlier"), (309, 329)),
    ("nonmonotonic-send", ("s", 0), (1, 0), ("later", "earlier"), (299, 301)),
    ("poll-skip", ("s", 2), (0, 2), ("x1",), (331, 333)),
    ("precommitted-read", ("own", 0), (0,), ("self",), (297,)),
    (
        "unseen",
        ("t", 0),
        (116, 121, 123, 125, 126),
        ("p1-r36-t0-0", "p1-r37-t0-0", "p1-r38-t0-0", "p0-r39-t0-0", "p0-r39-t0-1"),
        (276, 282, 288, 293),
    ),
    (
        "unseen",
        ("t", 1),
        (97, 99, 100, 101, 103, 104, 106, 107, 109, 110, 111),
        (
            "p2-r35-t1-1",
            "p2-r36-t1-0",
            "p2-r36-t1-1",
            "p2-r36-t1-2",
            "p2-r38-t1-0",
            "p2-r38-t1-1",
            "p0-r39-t1-0",
            "p0-r39-t1-1",
            "p2-r39-t1-0",
            "p2-r39-t1-1",
            "p2-r39-t1-2",
        ),
        (267, 277, 289, 293, 295),
    ),
    (
        "unseen",
        ("t", 2),
        (95, 101, 103, 104, 105, 110, 112, 113, 114, 116, 120, 121, 122),
        (
            "p2-r28-t2-0",
            "p1-r30-t2-0",
            "p1-r31-t2-0",
            "p1-r31-t2-1",
            "p1-r31-t2-2",
            "p0-r32-t2-0",
            "p1-r33-t2-0",
            "p1-r33-t2-1",
            "p1-r33-t2-2",
            "p2-r37-t2-0",
            "p2-r38-t2-0",
            "p2-r38-t2-1",
            "p2-r38-t2-2",
        ),
        (217, 232, 238, 243, 254, 283, 289),
    ),
    (
        "unseen",
        ("u", 0),
        (103, 105, 107, 108, 109, 111, 112, 113, 115),
        (
            "p1-r32-u0-2",
            "p0-r33-u0-0",
            "p2-r33-u0-0",
            "p2-r33-u0-1",
            "p2-r33-u0-2",
            "p2-r36-u0-0",
            "p2-r36-u0-1",
            "p2-r36-u0-2",
            "p1-r39-u0-0",
        ),
        (244, 253, 255, 277, 294),
    ),
    ("G0", None, (), (), (311, 313)),
    ("G0", ("s", 2), (), (), (305, 307)),
    ("G1c-ww", None, (), (), (321, 323)),
    ("int-send-skip", ("s", 2), (0, 2), ("x0", "x2"), (305,)),
]


def rows(report_json: dict) -> list[tuple]:
    return [
        (a["kind"], a["key"] and tuple(a["key"]), tuple(a["offsets"]), tuple(a["values"]), tuple(a["ops"]))
        for a in report_json["forbidden"] + report_json["allowed"]
    ]


def test_the_file_check_finds_exactly_the_injected_anomalies(tmp_path, capsys):
    path, _history = write_history(tmp_path)
    assert main(["check", path, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["stats"] == EXPECTED_STATS
    assert rows(report) == EXPECTED


@pytest.mark.parametrize("mode", ["eos", "subscribe", "at-least-once"])
def test_the_file_check_prints_the_in_memory_report_byte_for_byte(tmp_path, capsys, mode):
    path, history = write_history(tmp_path)
    expected = check_history(history, allowed=mode)
    status = main(["check", path, "--mode", mode])
    assert capsys.readouterr().out == str(expected) + "\n"
    assert status == (0 if expected.ok else 1)
    assert main(["check", path, "--mode", mode, "--json"]) == status
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(expected.to_json()))


def test_the_first_malformed_line_is_named_before_a_pairing_error_further_up(tmp_path, capsys):
    # Every line is read before the pairing is judged: a JSON error on line 3 is the one named,
    # although line 2 already completes an op that was never invoked.
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"index":0,"process":0,"type":"invoke","f":"poll"}\n{"index":1,"process":1,"type":"ok","f":"poll"}\n{oops\n'
    )
    assert main(["check", str(path)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"eos check: {path}: line 3: not valid JSON (Expecting property name enclosed in double quotes)"
    )


# -- the file path against the in-memory one, on many small random histories -------------------


def random_history(rng: random.Random) -> list[Op]:
    """Return a small history of any shape the format allows, pairing rules kept.

    Few values and offsets, so that values land at several offsets and offsets hold several
    values; ops send to several keys, with or without offsets, in or out of order; polls of
    every outcome, re-reads, mixed transactions, crashes, (re)assignments, rebalance logs,
    completions that repeat their invocation, and invocations that never complete.
    """
    keys = [(rng.choice("tu"), rng.randint(0, 2)) for _ in range(rng.randint(1, 4))]
    values = [f"v{i}" for i in range(rng.randint(1, 12))]
    top = rng.randint(1, 20)
    ops: list[Op] = []
    pending: dict[int, Op] = {}
    index = 0
    for _ in range(rng.randint(1, 60)):
        process = rng.randrange(5)
        inv = pending.pop(process, None)
        if inv is not None:
            typ = rng.choice(("ok", "ok", "ok", "fail", "info"))
            mops: list[Send | Poll] = []
            if rng.random() > 0.15:
                for m in inv.mops:
                    offset = None if rng.random() < 0.15 else rng.randint(0, top)
                    mops.append(m._replace(offset=offset))
                if inv.f in ("poll", "txn"):
                    for _ in range(rng.randint(0, 6)):
                        t, p = rng.choice(keys)
                        mops.append(Poll(t, p, rng.randint(0, top), rng.choice(values)))
                if rng.random() < 0.2:
                    rng.shuffle(mops)
            assigned = tuple(rng.sample(keys, rng.randint(0, len(keys)))) if inv.f in ("assign", "subscribe") else ()
            rebalance = tuple(rng.sample(keys, 1)) if rng.random() < 0.1 else ()
            error = None if typ == "ok" else "timed out"
            ops.append(Op(index, process, typ, inv.f, index, tuple(mops), assigned, rebalance, error))
        else:
            f = rng.choice(("send", "txn", "txn", "poll", "poll", "poll", "assign", "subscribe", "crash"))
            sends = ()
            if f in ("send", "txn"):
                sends = tuple(Send(*rng.choice(keys), rng.choice(values)) for _ in range(rng.randint(1, 5)))
            assigned = tuple(rng.sample(keys, rng.randint(0, len(keys)))) if f in ("assign", "subscribe") else ()
            pending[process] = Op(index, process, "invoke", f, index, sends, assigned)
            ops.append(pending[process])
        index += rng.randint(1, 2)
    return ops


@pytest.mark.parametrize("seed", range(0, 400, 8))
def test_random_histories_check_the_same_from_a_file_and_from_memory(tmp_path, seed):
    path = tmp_path / "h.jsonl"
    for s in range(seed, seed + 8):
        history = History(random_history(random.Random(s)))
        save_jsonl(history, path)
        analysis = analyse_jsonl(path)
        for mode in ("eos", "at-least-once"):
            expected = check_history(history, allowed=mode)
            report = check_history(analysis, allowed=mode)
            assert (str(report), report.to_json()) == (str(expected), expected.to_json()), f"seed {s}, {mode}"


def test_a_value_read_where_it_was_sent_then_seen_at_two_more_offsets_lists_all_three():
    # The read confirms the send, and each later sighting is a duplicate of that first offset.
    rec = HistoryRecorder()
    for process, f, typ, mops in [
        (0, "send", "ok", [Send("t", 0, "a", 1)]),
        (1, "poll", "ok", [Poll("t", 0, 1, "a")]),
        (2, "poll", "info", [Poll("t", 0, 4, "a"), Poll("t", 0, 14, "a")]),
    ]:
        inv = rec.invoke(process, f, [m._replace(offset=None) for m in mops if type(m) is Send])
        rec.complete(inv, typ, mops, error=None if typ == "ok" else "timed out")
    (dup,) = check_history(rec.history()).anomalies
    assert (dup.kind, dup.offsets, dup.ops) == ("duplicate", (1, 4, 14), (1,))


# -- the same refusals, with the same messages ----------------------------------------------------

GOOD = (
    '{"index":0,"process":0,"type":"invoke","f":"send","value":[["send","t",0,"a",null]]}',
    '{"index":1,"process":0,"type":"ok","f":"send","value":[["send","t",0,"a",0]]}',
)

BROKEN = {
    "boolean partition": '{"index":2,"process":1,"type":"ok","f":"poll","value":[["poll","t",true,0,"a"]]}',
    "boolean offset": '{"index":2,"process":1,"type":"ok","f":"poll","value":[["poll","t",0,false,"a"]]}',
    "float offset": '{"index":2,"process":1,"type":"ok","f":"poll","value":[["poll","t",0,1.0,"a"]]}',
    "null poll value": '{"index":2,"process":1,"type":"ok","f":"poll","value":[["poll","t",0,0,null]]}',
    "unknown tag": '{"index":2,"process":1,"type":"ok","f":"poll","value":[["peek","t",0,0,"a"]]}',
    "dict micro-op": '{"index":2,"process":1,"type":"ok","f":"poll","value":[{"a":1,"b":2,"c":3,"d":4,"e":5}]}',
    "string micro-op": '{"index":2,"process":1,"type":"ok","f":"poll","value":["polls"]}',
    "six items": '{"index":2,"process":1,"type":"ok","f":"poll","value":[["poll","t",0,0,"a",1]]}',
    "mixed, bad second": (
        '{"index":2,"process":1,"type":"ok","f":"txn","value":[["send","t",0,"b",1],["poll","t",0,-1,"a"]]}'
    ),
    "huge offset": '{"index":2,"process":1,"type":"ok","f":"poll","value":[["poll","t",0,' + "9" * 30 + ',"a"]]}',
    "leading space": ' {"index":2,"process":1,"type":"invoke","f":"poll"}',
    "trailing junk": '{"index":2,"process":1,"type":"invoke","f":"poll"} x',
    "byte order mark": '\ufeff{"index":2,"process":1,"type":"invoke","f":"poll"}',
    "form feed only": "\x0c",
    "object error": '{"index":2,"process":1,"type":"invoke","f":"poll","error":{"code":[1,2]}}',
    "keys not a list": '{"index":2,"process":1,"type":"invoke","f":"assign","keys":{"t":0}}',
    "offset in invocation": (
        '{"index":2,"process":1,"type":"invoke","f":"txn","value":[["send","t",0,"b",null],["send","t",0,"c",3]]}'
    ),
    "poll in invocation": (
        '{"index":2,"process":1,"type":"invoke","f":"txn","value":[["send","t",0,"b",null],["poll","t",0,0,"a"]]}'
    ),
    "completion of another f": (
        '{"index":2,"process":0,"type":"invoke","f":"poll"}\n{"index":3,"process":0,"type":"ok","f":"txn"}'
    ),
    "index going back": '{"index":1,"process":1,"type":"invoke","f":"poll"}',
}


def outcome(read, path) -> str:
    try:
        return str(check_history(read(path)))
    except HistoryFormatError as exc:
        return f"refused: {exc}"


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("where", ["last", "before-a-pairing-error"])
def test_the_file_path_refuses_what_load_jsonl_refuses_with_the_same_message(tmp_path, case, where):
    lines = [*GOOD, BROKEN[case]]
    if where == "before-a-pairing-error":
        # A completion nobody invoked, above: every line must be checked before the pairing.
        lines.insert(1, '{"index":1,"process":7,"type":"ok","f":"poll"}')
        lines[2] = lines[2].replace('"index":1,', '"index":2,', 1)
        lines[3] = lines[3].replace('"index":2,', '"index":5,', 1).replace('"index":3,', '"index":6,', 1)
    path = tmp_path / "h.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert outcome(analyse_jsonl, path) == outcome(load_jsonl, path)
