"""A recorded confluent-kafka session carries record keys, and ``eos check --promise`` matches by them.

Goal: ``engine.record``'s wrappers write each send's and each read's key into the history file
(the optional sixth element of a micro-op), so that ``eos check FILE --promise "IN -> OUT"``
(by key, the default) judges a real application's run: exit 1 with ``lost-input`` naming the
lost input's offset and key when the copier dropped one record, exit 0 when it dropped none.

Method: a served simulated cluster in this process (``eos serve``'s ``ServedCluster``); the
"application" produces keyed inputs, copies them with their keys to an output topic in a
transaction (all of them, or all but one), then a read_committed consumer reads both topics to
the end. Each session is recorded by its own ``Recorder`` and judged by ``eos check`` in a
subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from engine.record import Recorder, RecordingConsumer, RecordingProducer

ROOT = Path(__file__).resolve().parents[2]
N = 4


def eos_check(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "check", str(path), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def session(config: dict[str, Any], src: str, dst: str, path: Path, *, lose: int | None) -> None:
    """Keyed inputs to ``src``, copied with their keys to ``dst`` in one transaction (all but ``lose``), then read."""
    rec = Recorder(path)
    p = RecordingProducer({**config, "enable.idempotence": True}, rec)
    for i in range(N):
        p.produce(src, f"order-{i}".encode(), key=f"k{i}".encode(), partition=0)
    assert p.flush(30) == 0
    t = RecordingProducer({**config, "transactional.id": f"copier-{dst}"}, rec)
    t.init_transactions(30)
    t.begin_transaction()
    for i in range(N):
        if i != lose:
            t.produce(dst, f"booked-{i}".encode(), key=f"k{i}".encode(), partition=0)
    t.commit_transaction(30)
    c = RecordingConsumer(
        {**config, "group.id": f"judge-{dst}", "isolation.level": "read_committed", "enable.auto.commit": False},
        rec,
    )
    c.assign([TopicPartition(src, 0, 0), TopicPartition(dst, 0, 0)])
    want = {src: N, dst: N - (lose is not None)}
    got = {src: 0, dst: 0}
    for _ in range(60):
        for m in c.consume(100, timeout=0.5):
            if m.error() is None:
                got[m.topic()] += 1
        if got == want:
            break
    c.close()
    assert got == want
    rec.write()


def test_a_recorded_session_carries_keys_and_a_promise_by_key_judges_it(served, ck, tmp_path) -> None:
    server = served([("in-a", 1, 3), ("out-a", 1, 3), ("in-b", 1, 3), ("out-b", 1, 3)])
    lossy, kept = tmp_path / "lossy.jsonl", tmp_path / "kept.jsonl"
    session(ck(server), "in-a", "out-a", lossy, lose=2)
    session(ck(server), "in-b", "out-b", kept, lose=None)

    mops = [m for line in lossy.read_text(encoding="utf-8").splitlines() for m in json.loads(line).get("value") or []]
    assert ["send", "in-a", 0, "order-2", 2, "k2"] in mops
    assert ["poll", "out-a", 0, 2, "booked-3", "k3"] in mops  # offset 2: k2 was never copied
    assert all(len(m) == 6 for m in mops), [m for m in mops if len(m) != 6]

    broken = eos_check(lossy, "--promise", "in-a -> out-a")
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "lost-input" in broken.stdout
    assert "1 input record(s) of in-a/0 have no committed record in out-a (by key): offset 2 (key 'k2')" in (
        broken.stdout
    )

    fine = eos_check(kept, "--promise", "in-b -> out-b and nothing else")
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert fine.stdout.startswith("OK"), fine.stdout
