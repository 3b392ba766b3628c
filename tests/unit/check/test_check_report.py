"""Tests of the verdict: modes and allowed sets, the report table, determinism.

Goal: the same anomalies are forbidden or allowed exactly as ``eos-checking.md`` §1.2/§5.4
say for each mode, an unknown mode is an error rather than a silent pass, the printed table is
readable and stable, and a report does not depend on ``PYTHONHASHSEED``. Method: small
histories with known anomalies, checked under each mode; the determinism test runs the CLI in
two subprocesses with different hash seeds and compares their output byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.check import (
    ALLOWED_BY_MODE,
    KINDS,
    Anomaly,
    HistoryRecorder,
    Poll,
    Report,
    Send,
    check_history,
    save_jsonl,
)
from engine.check.anomaly import resolve_allowed

ROOT = Path(__file__).resolve().parents[3]


def messy_history():
    rec = HistoryRecorder()
    for process, f, typ, mops in [
        (0, "send", "ok", [Send("t", 0, "a", 0), Send("t", 0, "b", 1), Send("t", 0, "c", 2)]),
        (1, "poll", "ok", [Poll("t", 0, 0, "a")]),
        (1, "poll", "ok", [Poll("t", 0, 2, "c"), Poll("t", 0, 3, "a")]),
        (2, "poll", "ok", [Poll("t", 0, 1, "b")]),
        (0, "txn", "fail", [Send("u", 0, "z", 0)]),
        (3, "poll", "ok", [Poll("u", 0, 0, "z")]),
    ]:
        inv = rec.invoke(process, f, [m._replace(offset=None) for m in mops if type(m) is Send])
        rec.complete(inv, typ, mops)
    return rec.history()


def test_eos_mode_forbids_poll_skip_duplicate_and_g1a():
    report = check_history(messy_history())
    assert not report.ok
    assert {a.kind for a in report.forbidden} == {"poll-skip", "duplicate", "G1a"}


def test_subscribe_mode_allows_poll_skip_only():
    report = check_history(messy_history(), allowed="subscribe")
    assert {a.kind for a in report.forbidden} == {"duplicate", "G1a"}
    assert {a.kind for a in report.allowed} == {"poll-skip"}


def test_at_least_once_mode_allows_duplicate_only():
    report = check_history(messy_history(), allowed="at-least-once")
    assert {a.kind for a in report.forbidden} == {"poll-skip", "G1a"}


def test_explicit_allowed_set_is_honoured():
    report = check_history(messy_history(), allowed={"poll-skip", "duplicate", "G1a"})
    assert report.ok
    assert len(report.allowed) == 3


def test_unknown_mode_or_kind_raises_value_error():
    with pytest.raises(ValueError, match="unknown mode"):
        check_history(messy_history(), allowed="exactly-twice")
    with pytest.raises(ValueError, match="unknown anomaly kinds"):
        resolve_allowed({"G2"})


def test_every_mode_allows_only_known_kinds_and_eos_allows_exactly_the_documented_set():
    assert ALLOWED_BY_MODE["eos"] == {"int-send-skip", "G0", "G1c-ww"}
    for kinds in ALLOWED_BY_MODE.values():
        assert kinds <= KINDS.keys()


def test_report_table_lists_counts_then_one_row_per_anomaly():
    text = str(check_history(messy_history()))
    lines = text.splitlines()
    assert lines[0].startswith("FAIL: 3 forbidden, 0 allowed anomalies")
    assert "forbidden: G1a x1, duplicate x1, poll-skip x1" in lines
    assert any(line.strip().startswith("poll-skip") and "t/0" in line for line in lines)


def test_report_table_truncates_long_groups_but_keeps_exact_counts():
    anomalies = [Anomaly("duplicate", ("t", 0), (i, i + 1), (f"v{i}",), (), "dup") for i in range(60)]
    text = str(Report.classify(anomalies, ALLOWED_BY_MODE["eos"]))
    assert "duplicate x60" in text
    assert "... 10 more forbidden anomalies" in text


def test_report_json_is_plain_data():
    data = check_history(messy_history()).to_json()
    assert data["ok"] is False
    assert {a["kind"] for a in data["forbidden"]} == {"poll-skip", "duplicate", "G1a"}


def test_report_does_not_depend_on_python_hash_seed(tmp_path):
    path = tmp_path / "h.jsonl"
    save_jsonl(messy_history(), path)
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, "-m", "engine.cli", "check", str(path), "--json"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 1, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
