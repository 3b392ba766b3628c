"""``eos conform`` without Java: a cluster under test against the Kafka 4.4 run shipped with the package.

Goal: the command a user runs against their own cluster says "same" where the cluster behaves as
Kafka 4.4 did, and names the difference, with ``eos check``'s verdict, where it does not. Shown on
``eos serve`` (the same) and on librdkafka's mock cluster (its aborted records handed to
read_committed readers: a divergence, and G1a from the checker).

Method: ``eos conform`` as a subprocess, a few cases by name, against ``engine/conform/kafka-4.4.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ROOT / "engine" / "conform" / "kafka-4.4.json"


def conform(*args: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    saved = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "conform", *args, "--save", str(saved)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    results = json.loads(saved.read_text()) if saved.exists() else {}
    return done, {r["case"]: r for r in results.get("results", [])}


def test_the_packaged_reference_is_a_kafka_4_4_run_of_every_case() -> None:
    from engine.conform.runner import load_results, select_cases

    saved = load_results(PACKAGED)
    assert {c.name for c in select_cases()} <= set(saved)
    assert all("raised" not in o.values for o in saved.values())


@pytest.mark.slow
def test_eos_conform_reads_same_on_eos_serve(tmp_path: Path) -> None:
    done, results = conform("--cases", "txn.abort", "--cases", "fetch.aborted-ranges", tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {name: r["outcome"] for name, r in results.items()} == {
        "txn.abort": "same",
        "fetch.aborted-ranges": "same",
    }


@pytest.mark.slow
def test_eos_conform_shows_the_aborted_reads_of_librdkafkas_mock(tmp_path: Path) -> None:
    done, results = conform("--mock", "--cases", "txn.abort", "--cases", "fetch.aborted-ranges", tmp_path=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    for name in ("txn.abort", "fetch.aborted-ranges"):
        assert results[name]["outcome"] == "diverges"
        assert results[name]["reference"]["verdict"] == "OK"
        assert results[name]["other"]["verdict"].startswith("FAIL G1a")
    aborted = results["txn.abort"]["other"]["values"]["read_committed-0"]
    assert [v for _o, v in aborted][:5] == [f"a-{i}" for i in range(5)]
    assert "diverges" in done.stdout and "G1a" in done.stdout
