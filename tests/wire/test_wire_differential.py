"""The differential test: one confluent-kafka scenario against librdkafka's mock and against ``eos serve``.

Goal: the same unchanged client code (idempotent sends, a committed transaction, an aborted one,
then a read_committed consumer reading to the end), recorded by ``engine.record`` and judged by
``eos check``, shows the mock's EOS bug as G1a (aborted records read by read_committed, measured in
``reach.md`` §1) and nothing on the served simulated cluster. This proves, every CI run, that the
recorder and the checker catch a real broker's EOS bug, and that ours does not have it.

Method: both targets in one test; the histories are written as JSON Lines and judged by ``eos check``
in a subprocess (exit 1 with G1a for the mock, exit 0 for ours).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.record import Recorder
from engine.record.workloads import MockCluster, run_commit_abort_read

ROOT = Path(__file__).resolve().parents[2]


def eos_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "check", str(path)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_the_checker_finds_g1a_on_librdkafka_s_mock_and_nothing_on_eos_serve(served, ck, tmp_path) -> None:
    with MockCluster() as mock:
        mock_history = tmp_path / "mock.jsonl"
        recorder = Recorder(mock_history)
        run_commit_abort_read(mock.config(), "orders", recorder)
        recorder.write()
    server = served([("orders", 1, 3)])
    ours_history = tmp_path / "eos-serve.jsonl"
    recorder = Recorder(ours_history)
    run_commit_abort_read(ck(server), "orders", recorder)
    recorder.write()

    on_mock = eos_check(mock_history)
    assert on_mock.returncode == 1, on_mock.stdout + on_mock.stderr
    assert "G1a" in on_mock.stdout
    assert all(f"'a-{i}'" in on_mock.stdout for i in range(5)), on_mock.stdout

    on_ours = eos_check(ours_history)
    assert on_ours.returncode == 0, on_ours.stdout + on_ours.stderr
    assert on_ours.stdout.startswith("OK"), on_ours.stdout
