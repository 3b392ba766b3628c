"""Tests of ``eos check``: exit status 0 (clean), 1 (forbidden anomaly), 2 (bad file).

Goal: the command is safe to use in scripts: its status says the verdict, a bad file gives one
short line on stderr and never a traceback, and ``--mode`` / ``--json`` work. Method: write
histories to a temporary directory and call ``engine.cli.main`` in-process (capturing output);
one test runs the real ``python -m engine.cli`` in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.check import HistoryRecorder, Poll, Send, save_jsonl
from engine.cli import main

ROOT = Path(__file__).resolve().parents[3]


def write(tmp_path, rows, name="h.jsonl"):
    rec = HistoryRecorder()
    for process, f, typ, mops in rows:
        inv = rec.invoke(process, f, [m._replace(offset=None) for m in mops if type(m) is Send])
        rec.complete(inv, typ, mops)
    path = tmp_path / name
    save_jsonl(rec.history(), path)
    return path


CLEAN = [(0, "send", "ok", [Send("t", 0, "a", 0)]), (1, "poll", "ok", [Poll("t", 0, 0, "a")])]
ABORTED_READ = [(0, "txn", "fail", [Send("t", 0, "a", 0)]), (1, "poll", "ok", [Poll("t", 0, 0, "a")])]
DUPLICATE = [
    (0, "send", "ok", [Send("t", 0, "a", 0)]),
    (1, "poll", "ok", [Poll("t", 0, 0, "a"), Poll("t", 0, 1, "a")]),
]


def test_check_exits_0_on_a_clean_history(tmp_path, capsys):
    assert main(["check", str(write(tmp_path, CLEAN))]) == 0
    assert capsys.readouterr().out.startswith("OK: 0 forbidden")


def test_check_exits_1_on_a_forbidden_anomaly_and_prints_the_table(tmp_path, capsys):
    assert main(["check", str(write(tmp_path, ABORTED_READ))]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL: 1 forbidden")
    assert "G1a" in out


def test_check_mode_at_least_once_turns_a_duplicate_into_exit_0(tmp_path):
    path = str(write(tmp_path, DUPLICATE))
    assert main(["check", path]) == 1
    assert main(["check", path, "--mode", "at-least-once"]) == 0


def test_check_json_prints_a_parseable_report(tmp_path, capsys):
    assert main(["check", str(write(tmp_path, ABORTED_READ)), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert data["forbidden"][0]["kind"] == "G1a"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "no such file"),
        ("{not json\n", "line 1: not valid JSON"),
        ('{"index":0,"process":0,"type":"ok","f":"poll"}\n', "completion without an invocation"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        ("", "no operations"),
        (
            (
                '{"index":0,"process":0,"type":"invoke","f":"poll"}\n'
                '{"index":1,"process":0,"type":"ok","f":"send","value":[["send","t",0,"a",0]]}\n'
            ),
            "line 2: ",
        ),
        (
            (
                '{"index":0,"process":0,"type":"invoke","f":"poll","value":[["poll","t",0,0,"a"]]}\n'
                '{"index":1,"process":0,"type":"ok","f":"poll"}\n'
            ),
            "line 1: ",
        ),
        ('{"index":0,"process":0,"type":"ok","f":"send","value":[["send","t",0,"a",-1]]}\n', "line 1: "),
        ('{"index":0,"process":0,"type":"invoke","f":"poll","time_ms":' + "1" * 5_000 + "}\n", "line 1: "),
        ('{"index":0,"process":0,"type":"invoke","f":"poll","value":' + "[" * 100_000 + "\n", "line 1: "),
    ],
    ids=[
        "missing",
        "malformed-json",
        "unpaired-completion",
        "binary",
        "empty",
        "f-mismatch",
        "poll-in-invocation",
        "negative-offset",
        "5000-digit-int",
        "deep-nesting",
    ],
)
def test_check_exits_2_with_one_line_on_stderr_for_a_bad_file(tmp_path, capsys, content, fragment):
    path = tmp_path / "h.jsonl"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_check_exits_2_for_a_directory(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_check_runs_as_a_module_in_a_subprocess(tmp_path):
    path = write(tmp_path, ABORTED_READ)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "engine.cli", "check", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "G1a" in proc.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "engine.cli", "check", str(tmp_path / "nope.jsonl")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr
