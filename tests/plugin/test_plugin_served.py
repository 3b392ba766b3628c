"""The plugin's served mode, ``eos_server``, seen from outside: inner pytest sessions with real clients.

Goal: a failed test that used ``eos_server`` carries the seed (by the same rules as ``eos_cluster``),
the fingerprint, the journal's path and ``replay: eos replay-wire JOURNAL``, and that command
replays the session, with the crash and the wire fault made from the test, byte for byte; the
three client configs reach the cluster (confluent-kafka, kafka-python, aiokafka); the server is
gone after its test (its ports refuse connections, no thread left); ``--eos-journal-dir`` keeps
the journal of a failed test only; the marker passes ``--strict-markers``, and what is not served
(a topic config, ``eos_check`` without a promise) fails with one line.

Method: ``pytester`` writes an inner test file that drives real confluent-kafka, kafka-python and
aiokafka clients against the fixture's served cluster on 127.0.0.1, and runs pytest on it in this
process; the replay is the ``eos`` command line in a subprocess.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: One test that fails after a crash and a wire fault, one that passes: its journal is not kept.
FAILING = """
import pytest
from confluent_kafka import Producer

FAST = {"broker.session.timeout.ms": 2000}

def send(eos, values):
    p = Producer(eos.config(**{"enable.idempotence": True, "socket.timeout.ms": 5000}))
    for v in values:
        p.produce("t", value=v)
    assert p.flush(30) == 0

@pytest.mark.eos_seed(5)
@pytest.mark.eos_server(topics={"t": 1}, config=FAST)
def test_fails(eos_server):
    send(eos_server, [b"a"])
    eos_server.crash(eos_server.leader("t", 0))
    eos_server.close_after("Produce")  # the write happens, its connection closes before the ack
    send(eos_server, [b"b"])
    assert eos_server.brokers()["down"] != []
    assert False, "the application's own failure"

@pytest.mark.eos_server(topics={"t": 1})
def test_passes(eos_server):
    send(eos_server, [b"a"])
"""

SECTION = re.compile(
    r"seed: (?P<seed>\d+) \((?P<source>[^)]*)\)\n"
    r"fingerprint: (?P<fingerprint>[0-9a-f]+) \(at \d+ simulated ms\)\n"
    r"journal: (?P<journal>.*)\n"
    r"replay: eos replay-wire (?P<replay>.*)\n"
    r"rerun: pytest (?P<rerun>\S+) --eos-seed (?P<rerun_seed>\d+)"
)

#: The kafka-python and aiokafka configs reach the cluster; the next test finds the server gone.
CLIENTS = """
import asyncio
import socket
import threading

import pytest

ADDRESSES = []

@pytest.mark.eos_server(brokers=1, topics={"t": {"partitions": 1, "replication_factor": 1}})
def test_kafka_python_writes_and_aiokafka_reads(eos_server):
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition
    from kafka import KafkaProducer

    ADDRESSES.extend([*eos_server.server.addresses.values(), eos_server.server.control_address])
    p = KafkaProducer(**eos_server.kafka_python_config(acks="all"))
    p.send("t", b"from kafka-python").get(timeout=30)
    p.close()

    async def read():
        c = AIOKafkaConsumer(**eos_server.aiokafka_config(auto_offset_reset="earliest"))
        await c.start()
        try:
            c.assign([TopicPartition("t", 0)])
            batch = await c.getmany(timeout_ms=10_000)
            return [m.value for ms in batch.values() for m in ms]
        finally:
            await c.stop()

    # In a thread of its own: the suite's browser tests leave a running loop marked in the main thread.
    got = []
    reader = threading.Thread(target=lambda: got.append(asyncio.run(read())))
    reader.start()
    reader.join(60)
    assert got == [[b"from kafka-python"]]
    assert eos_server.bootstrap == eos_server.config()["bootstrap.servers"]
    assert eos_server.confluent_config() == eos_server.config()

def test_the_server_is_gone():
    assert ADDRESSES
    for host, port in ADDRESSES:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, port), timeout=2).close()
    assert [t.name for t in threading.enumerate() if t.name == "eos-serve"] == []
"""

REFUSED = """
import pytest

@pytest.mark.eos_server(topics={"t": {"partitions": 1, "config": {"cleanup.policy": "compact"}}})
def test_topic_config(eos_server):
    pass

@pytest.mark.eos_server(brokers="three")
def test_brokers(eos_server):
    pass

@pytest.mark.eos_check(mode="eos")
def test_check(eos_server):
    pass

def test_unknown_api(eos_server):
    eos_server.drop_response("Nope")
"""


def eos(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run the ``eos`` command line of this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *argv], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.slow
def test_a_failure_carries_the_journal_and_the_replay_line_and_it_replays_byte_for_byte(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_served=FAILING)
    journals = tmp_path / "journals"
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider", "--eos-journal-dir", str(journals))
    result.assert_outcomes(passed=1, failed=1)
    found = [m.groupdict() for m in SECTION.finditer(result.stdout.str())]
    assert len(found) == 1, result.stdout.str()
    (section,) = found
    assert section["seed"] == section["rerun_seed"] == "5" and section["source"] == "from @pytest.mark.eos_seed"
    assert section["rerun"] == "test_served.py::test_fails"
    journal = Path(section["journal"])
    assert section["replay"] == str(journal) and journal.parent == journals
    assert sorted(p.name for p in journals.iterdir()) == [journal.name], "a passed test's journal is not kept"
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert lines[0]["spec"]["seed"] == 5 and lines[0]["replayable"] is True
    faults = [json.loads(base64.b64decode(e["d"]))["op"] for e in lines[1:] if e["e"] == "fault"]
    assert faults == ["crash"], "the crash went through the control path, journaled"
    assert [e for e in lines[1:] if e["e"] == "wire-fault"], "the wire fault is journaled"
    done = eos("replay-wire", section["replay"])
    assert done.returncode == 0 and done.stdout.startswith("identical:"), done.stdout + done.stderr


@pytest.mark.slow
def test_the_client_configs_reach_the_cluster_and_the_server_is_gone_after_its_test(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_clients=CLIENTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_what_is_not_served_fails_with_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_refused=REFUSED)
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*@pytest.mark.eos_server: topic 't': eos_server topics take partitions and replication_factor, not*",
            "*@pytest.mark.eos_server: brokers must be an int, got 'three'",
            "*@pytest.mark.eos_check on eos_server judges end-to-end promises only*(got mode='eos', promise=[])",
            "*ControlError: unknown API 'Nope'; use one of*",
        ],
        consecutive=False,
    )


def test_the_marker_and_the_option_are_registered(pytester: pytest.Pytester) -> None:
    assert "eos_server(brokers=3, config=None, topics=None)" in pytester.runpytest("--markers").stdout.str()
    assert "--eos-journal-dir=DIR" in pytester.runpytest("--help").stdout.str()
