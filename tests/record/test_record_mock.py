"""Real confluent-kafka clients against librdkafka's mock cluster, recorded and judged.

Goal: the recorder turns what a real client saw into a history the checker judges correctly,
in both directions: the mock cluster is not EOS-correct (it hands aborted records to
read_committed consumers, see ``reach.md`` §1), so the commit/abort/read scenario must come out
as ``G1a`` naming exactly the aborted values, in :meth:`Recorder.check` and in ``eos check`` on
the written file alike; a scenario with nothing aborted must pass. This is the mock half of the
differential test; the other half runs :func:`engine.record.workloads.run_commit_abort_read`
against the served cluster, where it must pass.

Method: one mock cluster per module (``mock_cluster``), a topic per test, real clients with
short timeouts; ``eos check`` runs as ``python -m engine.cli`` in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from engine.check import load_jsonl
from engine.check.history import Send
from engine.record import Recorder, RecordingConsumer, RecordingProducer
from engine.record.workloads import read_to_end, run_commit_abort_read, run_committed_read

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ABORTED = [f"a-{i}" for i in range(5)]


def test_the_mock_hands_aborted_records_to_read_committed_and_the_checker_reports_g1a(mock_config, topic, tmp_path):
    rec = Recorder()
    run_commit_abort_read(mock_config, topic, rec)

    assert rec.faults == ()
    txns = [op for op in rec.history() if op.f == "txn" and op.type != "invoke"]
    assert [(op.type, [m.value for m in op.mops]) for op in txns] == [
        ("ok", [f"c-{i}" for i in range(5)]),
        ("fail", ABORTED),
    ]
    assert all(type(m) is Send and m.offset is not None for op in txns for m in op.mops)
    report = rec.check()
    assert report.kinds() == {"G1a": 5}
    assert sorted(a.values[0] for a in report.forbidden) == ABORTED
    assert all(a.key == (topic, 0) for a in report.forbidden)

    path = tmp_path / "mock.jsonl"
    rec.write(path)
    assert list(load_jsonl(path)) == list(rec.history())
    proc = subprocess.run(
        [sys.executable, "-m", "engine.cli", "check", str(path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.startswith("FAIL: 5 forbidden, 0 allowed anomalies")
    assert "G1a x5" in proc.stdout
    for value in ABORTED:
        assert f"read {value!r} at offset" in proc.stdout


def test_committed_transactions_and_idempotent_sends_pass_against_the_mock(mock_config, topic):
    rec = Recorder()
    run_committed_read(mock_config, topic, rec)

    report = rec.check()
    assert report.ok, str(report)
    assert report.anomalies == ()
    assert report.stats["reads"] == 11
    assert rec.faults == ()
    history = list(rec.history())
    # the group's assignment came through the rebalance callbacks
    assert any(op.f == "subscribe" and op.type == "ok" and (topic, 0) in op.keys for op in history)
    # the close revoked it
    assert history[-1].f == "subscribe" and history[-1].keys == ()


def test_application_callbacks_are_called_as_without_the_recorder(mock_config, topic):
    rec = Recorder()
    global_reports: list[tuple[object, bytes]] = []
    own_reports: list[tuple[object, bytes]] = []
    producer = RecordingProducer(
        {**mock_config, "on_delivery": lambda err, msg: global_reports.append((err, msg.value()))}, rec
    )
    producer.produce(topic, b"g-0", partition=0)
    producer.produce(topic, b"o-0", partition=0, on_delivery=lambda err, msg: own_reports.append((err, msg.value())))
    producer.produce(topic, b"o-1", partition=0, callback=lambda err, msg: own_reports.append((err, msg.value())))
    assert producer.flush(10) == 0
    assert global_reports == [(None, b"g-0")]
    assert own_reports == [(None, b"o-0"), (None, b"o-1")]

    seen: list[object] = []

    def on_assign(consumer, partitions):
        seen.append(consumer)
        consumer.assign([TopicPartition(tp.topic, tp.partition, OFFSET_BEGINNING) for tp in partitions])

    consumer = RecordingConsumer({**mock_config, "group.id": f"{topic}-g", "enable.auto.commit": False}, rec)
    consumer.subscribe([topic], on_assign=on_assign)
    read_to_end(consumer, topic, ["g-0", "o-0", "o-1"], rec)
    consumer.close()

    assert seen == [consumer]  # the application's callback got the wrapper, so its assign() was recorded
    assert rec.check().ok
    assert rec.faults == ()


def test_a_seek_back_is_not_a_nonmonotonic_poll(mock_config, topic):
    rec = Recorder()
    producer = RecordingProducer(mock_config, rec)
    for i in range(3):
        producer.produce(topic, f"s-{i}", partition=0)
    producer.flush(10)
    consumer = RecordingConsumer({**mock_config, "group.id": f"{topic}-g", "enable.auto.commit": False}, rec)
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    read_to_end(consumer, topic, ["s-0", "s-1", "s-2"], rec)
    consumer.seek(TopicPartition(topic, 0, 1))
    read_to_end(consumer, topic, ["s-1", "s-2"], rec)
    consumer.close()

    reads = [(m.offset, m.value) for op in rec.history() if op.f == "poll" for m in op.mops]
    assert reads == [(0, "s-0"), (1, "s-1"), (2, "s-2"), (1, "s-1"), (2, "s-2")]
    report = rec.check()
    assert report.ok and report.anomalies == (), str(report)
    assert [op.keys for op in rec.history() if op.f == "assign" and op.type == "ok"] == [
        ((topic, 0),),
        (),
        ((topic, 0),),
    ]
