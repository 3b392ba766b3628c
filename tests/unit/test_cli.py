"""Tests of the ``eos`` entry point itself: exit statuses that scripts can trust, and pipes.

Goal: whatever a subcommand does, ``engine.cli.main`` exits with a status that says what
happened: 0 clean, 1 anomaly or failed run, 2 usage or format error, 70 an internal error (a
bug in eos: one summary line saying so, then the traceback, never status 1), and 141 quietly
when the reader of stdout went away (``eos scenarios | head -1``). Method: an internal error is
provoked by replacing one subcommand's ``run`` with a function that raises; the broken pipe is
real: the subprocess's stdout is a pipe whose read end was closed before it started.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import engine.commands.scenarios
from engine.cli import EXIT_BROKEN_PIPE, EXIT_INTERNAL_ERROR, main

ROOT = Path(__file__).resolve().parents[2]


def _boom(args: object) -> int:
    msg = "the checker tripped over its own feet"
    raise RuntimeError(msg)


def test_an_internal_error_exits_70_with_one_summary_line_then_the_traceback(monkeypatch, capsys):
    monkeypatch.setattr(engine.commands.scenarios, "run", _boom)
    assert main(["scenarios"]) == EXIT_INTERNAL_ERROR == 70
    err = capsys.readouterr().err.splitlines()
    assert "internal error" in err[0]
    assert "RuntimeError: the checker tripped over its own feet" in err[0]
    assert "please report" in err[0]
    assert err[1].startswith("Traceback (most recent call last)")
    assert err[-1] == "RuntimeError: the checker tripped over its own feet"


def test_an_internal_error_is_never_status_1(monkeypatch):
    monkeypatch.setattr(engine.commands.scenarios, "run", _boom)
    assert main(["scenarios"]) not in (0, 1, 2)


def _run_with_stdout_closed(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m engine.cli ARGV`` with a stdout nobody reads: every write is EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "engine.cli", *argv],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "argv",
    [
        ("scenarios",),
        ("mutants",),
        ("run", "demo", "--seed", "7"),
        ("run", "demo", "--seed", "7", "--log"),
        ("sweep", "idempotence: lost ack retry", "--seeds", "1"),
    ],
    ids=["scenarios", "mutants", "run", "run-log", "sweep"],
)
def test_a_closed_stdout_exits_141_quietly(argv):
    _assert_quiet_broken_pipe(_run_with_stdout_closed(*argv))


def test_check_into_a_closed_stdout_exits_141_quietly(tmp_path):
    from engine.check import HistoryRecorder, Poll, Send, save_jsonl

    rec = HistoryRecorder()
    inv = rec.invoke(0, "txn", [Send("t", 0, "a", None)])
    rec.complete(inv, "fail", [Send("t", 0, "a", 0)])
    inv = rec.invoke(1, "poll", [])
    rec.complete(inv, "ok", [Poll("t", 0, 0, "a")])  # an aborted read: a FAIL report to print
    path = tmp_path / "h.jsonl"
    save_jsonl(rec.history(), path)
    _assert_quiet_broken_pipe(_run_with_stdout_closed("check", str(path)))


def _assert_quiet_broken_pipe(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == EXIT_BROKEN_PIPE == 141, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "BrokenPipeError" not in proc.stderr
    assert "Exception ignored" not in proc.stderr
