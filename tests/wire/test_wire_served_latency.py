"""A served cluster's hops take 0 simulated ms: a commit is complete when EndTxn is answered.

A served cluster's simulated time follows the wall clock, so the engine's 1 ms hop between two
brokers cost a real millisecond on every replication round trip, coordinator write and marker, and a
client that began its next transaction at once met CONCURRENT_TRANSACTIONS and its own back-off
(docs/wire.md, "Where a transaction's time goes"). ``ServeSpec`` now builds served clusters with
0 ms hops (``SERVED_LATENCY_MS``; ``eos serve --latency-ms`` sets another), while a journal written
before the spec named its hop still replays with the 1 ms it ran with.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer

from engine.views.transactions import describe_transaction_row
from engine.wire.journal import SERVED_LATENCY_MS, ServeSpec

ROOT = Path(__file__).resolve().parents[2]


def states_after_each_commit(server, config, tid: str, commits: int) -> list[str]:
    p = Producer({**config, "transactional.id": tid, "linger.ms": 0})
    p.init_transactions(15)
    states = []
    for i in range(commits):
        p.begin_transaction()
        p.produce("t", value=f"v{i}".encode(), partition=i % 2)
        p.commit_transaction(15)
        with server.locked() as cluster:  # at once: nothing has had time to finish after the answer
            states.append(describe_transaction_row(cluster, tid).state)
    return states


def test_the_markers_and_complete_commit_are_written_before_end_txn_is_answered(served, ck) -> None:
    server = served((("t", 2, 3),))
    states = states_after_each_commit(server, ck(server), "hop-0", 5)
    assert states == ["CompleteCommit"] * 5


def test_with_1_ms_hops_end_txn_is_answered_while_the_markers_are_in_flight(served, ck) -> None:
    """The engine's simulations' hop, asked for by name: the commit's answer comes at PrepareCommit."""
    server = served((("t", 2, 3),), latency_ms=1)
    states = states_after_each_commit(server, ck(server), "hop-1", 5)
    assert "PrepareCommit" in states


def test_the_spec_names_its_hop_and_an_older_journal_replays_with_1_ms() -> None:
    assert SERVED_LATENCY_MS == 0
    assert ServeSpec(1, 3).latency_ms == 0
    spec = ServeSpec(1, 3, {}, (("t", 2, 3),), latency_ms=2)
    assert spec.to_json()["latency_ms"] == 2
    assert ServeSpec.from_json(spec.to_json()) == spec
    older = {"seed": 1, "brokers": 3, "config": {}, "topics": [["t", 2, 3]]}
    assert ServeSpec.from_json(older).latency_ms == 1


def test_eos_serve_refuses_a_negative_hop() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "engine.cli", "serve", "--latency-ms", "-1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert out.returncode == 2
    assert "--latency-ms must be >= 0" in out.stderr
