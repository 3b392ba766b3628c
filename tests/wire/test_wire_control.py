"""Faults from outside: the control channel of a served cluster, ``eos fault``, journaled faults.

A conformance suite runs one fault script against real Kafka (process kills) and ``eos serve``
(the engine's process crash) through the control channel (``engine.serve.realtime_control``,
``engine.wire.control``). Real confluent-kafka clients and real sockets; no mocks.

Invariants checked: a crash of a partition's leader through the channel is a process crash the
producer rides out once a new leader is elected; ``eos fault`` drives a running ``eos serve``
subprocess and exits 0/1/2, and the session with its faults replays byte for byte through ``eos
replay-wire``; ``eos serve`` prints its config at once into a pipe and leaves no ready file and no
``.hypothesis/`` behind (Ctrl-C, SIGTERM, ``--duration``); a wrong password closes the channel; a
malformed line is answered with an error and the server goes on; a session with a channel crash
replays byte for byte; a crash made directly under ``server.locked()`` is noted in the journal and
``eos replay-wire`` exits 1.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from engine.serve.realtime_control import ControlClient
from engine.wire import control
from engine.wire import journal as wire_journal
from engine.wire.control import ControlError
from engine.wire.journal import ServeSpec
from engine.wire.service import WireService

ROOT = Path(__file__).resolve().parents[2]
#: Leadership moves after broker.session.timeout.ms: short, so a test does not wait 9 s.
FAST_FAILOVER = {"broker.session.timeout.ms": 2000}


def eos(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the ``eos`` command line of this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *argv], capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout
    )


def channel(server: Any) -> ControlClient:
    host, port = server.control_address
    return ControlClient(f"{host}:{port}", server.password)


def producer(config: dict[str, Any]) -> Producer:
    """An idempotent confluent-kafka producer (acks=all)."""
    return Producer({**config, "enable.idempotence": True, "acks": "all", "retry.backoff.ms": 100})


def produce(p: Producer | dict[str, Any], values: list[str], topic: str = "t") -> list[str]:
    """Produce ``values`` (with ``p``, or a new producer of config ``p``) and wait; return the delivery errors."""
    errors: list[str] = []
    p = producer(p) if isinstance(p, dict) else p
    for v in values:
        p.produce(topic, value=v.encode(), partition=0, on_delivery=lambda err, _m: err and errors.append(str(err)))
    assert p.flush(40) == 0, "messages still in flight"
    return errors


def raw_lines(server: Any, *lines: bytes) -> list[dict[str, Any]]:
    """Send raw lines on a fresh control connection; return every answer line until it closes or goes quiet."""
    with socket.create_connection(server.control_address, timeout=5) as s:
        s.sendall(b"".join(lines))
        f = s.makefile("rb")
        answers = []
        try:
            while line := f.readline():
                answers.append(json.loads(line))
                if len(answers) == len(lines):
                    break
        except TimeoutError:
            pass
        return answers


# -- the pure half: requests checked and mapped onto the engine's calls -----------------------------


def test_requests_are_checked_before_anything_changes() -> None:
    for line, error in [
        (b"not json", "not a JSON line"),
        (b"[1]", 'a request is a JSON object with "op"'),
        (b'{"op": "explode"}', "unknown op 'explode'"),
        (b'{"op": "crash"}', "crash takes broker: broker must be an int"),
        (b'{"op": "crash", "broker": true}', "broker must be an int"),
        (b'{"op": "heal", "broker": 1}', "heal takes no arguments, not 'broker'"),
    ]:
        with pytest.raises(ControlError, match=error):
            control.parse(line)
    spec = ServeSpec(1, 3, {}, (("t", 1, 3),))
    service = WireService(spec.build(), {1: ("h", 1), 2: ("h", 2), 3: ("h", 3)}, None)
    with pytest.raises(ControlError, match="no broker 9; brokers: 1, 2, 3"):
        service.control(control.check({"op": "crash", "broker": 9}))
    assert service.control(control.check({"op": "crash", "broker": 2})) == {"op": "crash", "broker": 2}
    with pytest.raises(ControlError, match="cannot crash broker-2: it is down"):
        service.control(control.check({"op": "crash", "broker": 2}))
    assert service.control(control.check({"op": "brokers"}))["down"] == [2]
    with pytest.raises(ControlError, match="coordinator kind must be one of group, transaction"):
        service.control(control.check({"op": "coordinator", "kind": "txn", "key": "x"}))


# -- the channel, with real clients ---------------------------------------------------------------


@pytest.mark.slow
def test_crashing_the_leader_through_the_channel_and_the_producer_carries_on(served, ck) -> None:
    server = served([("t", 1, 3)], config=FAST_FAILOVER)
    p = producer(ck(server))
    assert produce(p, [f"a{i}" for i in range(5)]) == []
    with channel(server) as c:
        leader = c.call("leader", topic="t", partition=0)["broker"]
        assert c.call("crash", broker=leader) == {"op": "crash", "broker": leader}
        assert c.call("brokers")["down"] == [leader]
        assert produce(p, [f"b{i}" for i in range(5)]) == [], "the producer did not carry on"
        new_leader = c.call("leader", topic="t", partition=0)["broker"]
    assert new_leader not in (leader, -1), "no new leader was elected"
    with server.locked() as cluster:
        log = cluster.brokers[new_leader].replicas[("t", 0)].log
        values = [v.decode() for b in log.batches if not b.is_control for v in b.values]
    assert values == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]


def test_a_wrong_password_is_refused_and_the_channel_closed(served) -> None:
    server = served([("t", 1, 3)])
    assert raw_lines(server, b'{"auth": "wrong"}\n', b'{"op": "crash", "broker": 1}\n') == [
        {"ok": False, "error": "wrong password; closing"}
    ]
    assert raw_lines(server, b'{"op": "crash", "broker": 1}\n', b'{"op": "brokers"}\n') == [
        {"ok": False, "error": 'authenticate first: {"auth": "<password>"}; closing'}
    ]
    host, port = server.control_address
    with pytest.raises(ControlError, match="wrong password"):
        ControlClient(f"{host}:{port}", "wrong").call("crash", broker=1)
    with server.locked() as cluster:
        assert all(b.is_up for b in cluster.brokers.values()), "a refused client changed the cluster"


def test_a_malformed_line_is_answered_with_an_error_and_the_server_still_serves(served, ck) -> None:
    server = served([("t", 1, 3)])
    login = json.dumps({"auth": server.password}).encode() + b"\n"
    answers = raw_lines(
        server,
        login,
        b"{not json\n",
        b'{"op": "crash", "broker": "one"}\n',
        b'{"op": "crash", "broker": 42}\n',
        b'{"op": "brokers"}\n',
    )
    assert answers[0] == {"ok": True}
    assert [a["ok"] for a in answers[1:]] == [False, False, False, True]
    assert answers[1]["error"].startswith("not a JSON line")
    assert answers[3]["error"] == "no broker 42; brokers: 1, 2, 3"
    assert answers[4]["up"] == [1, 2, 3]
    assert produce(ck(server), ["still"]) == []


# -- eos fault against eos serve --------------------------------------------------------------------


@pytest.mark.slow
def test_eos_fault_drives_a_running_eos_serve(tmp_path) -> None:
    ready, journal = tmp_path / "ready.json", tmp_path / "wire.jsonl"
    argv = ["serve", "--port", "0", "--ready-file", str(ready), "--topic", "t:1:3", "--journal", str(journal)]
    serve = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", *argv],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline and serve.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), serve.stderr.read() if serve.poll() is not None else "no ready file"
        assert json.loads(ready.read_text())["control"].startswith("127.0.0.1:")
        done = eos("fault", "--server", str(ready), "leader", "t", "0")
        assert done.returncode == 0, done.stderr
        leader = json.loads(done.stdout)["broker"]
        done = eos("fault", "--server", str(ready), "crash", str(leader))
        assert done.returncode == 0 and json.loads(done.stdout) == {"op": "crash", "broker": leader}, done.stderr
        done = eos("fault", "--server", str(ready), "crash", str(leader))
        assert done.returncode == 1 and f"cannot crash broker-{leader}: it is down" in done.stderr
        done = eos("fault", "--server", str(ready), "brokers")
        assert done.returncode == 0 and json.loads(done.stdout)["down"] == [leader]
        done = eos("fault", "--server", str(ready), "restart", str(leader))
        assert done.returncode == 0, done.stderr
        done = eos("fault", "--server", str(ready), "coordinator", "group", "g")
        assert done.returncode == 0 and "broker" in json.loads(done.stdout)
        done = eos("fault", "--server", str(ready), "leader")
        assert done.returncode == 2 and "use 'eos fault --server READY.json leader TOPIC [PARTITION]'" in done.stderr
        done = eos("fault", "--server", str(ready), "wire-fault", "close-after", "Produce", "2")
        assert done.returncode == 0 and json.loads(done.stdout)["op"] == "wire-fault", done.stderr
    finally:
        serve.send_signal(signal.SIGINT)
        serve.wait(30)
    assert serve.returncode == 0 and not ready.exists(), "Ctrl-C stops serving and removes the ready file"
    ready.write_text(json.dumps({"control": "127.0.0.1:1"}))  # a stale ready file of a server long gone
    done = eos("fault", "--server", str(ready), "brokers")
    assert done.returncode == 1 and "cannot reach the control channel" in done.stderr
    done = eos("fault", "--server", str(tmp_path / "missing.json"), "brokers")
    assert done.returncode == 2 and "no such ready file" in done.stderr
    done = eos("replay-wire", str(journal))
    assert done.returncode == 0 and done.stdout.startswith("identical:"), done.stdout + done.stderr
    kinds = [json.loads(line).get("e") for line in journal.read_text().splitlines()[1:]]
    assert kinds.count("fault") == 2, "the crash and the restart are journaled inputs"
    assert kinds.count("wire-fault") == 1, "the wire fault is a journaled input"


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["duration", "SIGTERM"])
def test_eos_serve_prints_at_once_and_leaves_nothing_behind(tmp_path, stop) -> None:
    """Its config line reaches a pipe while it serves; once stopped, no ready file and no ``.hypothesis/``."""
    ready = tmp_path / "ready.json"
    argv = ["serve", "--ready-file", str(ready), *(["--duration", "3"] if stop == "duration" else [])]
    serve = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", *argv],
        cwd=tmp_path,  # where a stray .hypothesis/ folder would appear
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = serve.stdout.readline()  # block-buffered output would arrive only at exit
        assert first.startswith("eos serve: 3 brokers on 127.0.0.1:"), first + serve.stderr.read()
        assert serve.poll() is None and ready.exists(), "the line came while it serves"
        if stop == "SIGTERM":
            serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 0, serve.stderr.read()
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait(10)
    assert not ready.exists(), "the ready file outlived the server"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "eos serve left files in its working directory"


# -- journaled faults -------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_session_with_a_channel_crash_replays_byte_for_byte(served, ck, tmp_path) -> None:
    path = tmp_path / "wire.jsonl"
    server = served([("t", 1, 3)], config=FAST_FAILOVER, journal_path=path)
    p = producer(ck(server))
    assert produce(p, ["a"]) == []
    with channel(server) as c:
        c.call("crash", broker=c.call("leader", topic="t", partition=0)["broker"])
    assert produce(p, ["b"]) == []
    server.fault("heal")  # the in-process door, journaled the same way
    server.stop()
    entries = wire_journal.read(path)[1]
    assert [json.loads(e.data)["op"] for e in entries if e.kind == "fault"] == ["crash", "heal"]
    assert any(e.kind == "hang-up" and b"crashed" in e.data for e in entries), "the crash closed no connection"
    done = eos("replay-wire", str(path))
    assert done.returncode == 0 and done.stdout.startswith("identical:"), done.stdout + done.stderr
    # A journal the replay cannot follow (a connection that opens with another id) is a difference, exit 1.
    lines = path.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if json.loads(line).get("e") == "open")
    lines[i] = json.dumps({**json.loads(lines[i]), "c": 99})
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    done = eos("replay-wire", str(tampered))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "replay opened connection 1 where the journal has 99" in done.stdout


@pytest.mark.slow
def test_a_crash_made_directly_under_locked_is_noted_and_replay_exits_1(served, ck, tmp_path) -> None:
    path = tmp_path / "wire.jsonl"
    server = served([("t", 1, 3)], config=FAST_FAILOVER, journal_path=path)
    p = producer(ck(server))
    assert produce(p, ["a"]) == []
    with server.locked() as cluster:
        cluster.crash(cluster.leader("t", 0))  # a call the journal does not record
    assert produce(p, ["b"]) == []
    server.stop()
    assert server.journal is not None and server.journal.header()["replayable"] is False
    done = eos("replay-wire", str(path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("NOT REPLAYABLE: between t=")
    assert "changed by a call the journal did not record" in done.stdout
    # Without the note (an older journal), replay still reports the divergence as a difference, exit 1.
    lines = [line for line in path.read_text().splitlines() if json.loads(line).get("e") != "untracked"]
    stripped = tmp_path / "stripped.jsonl"
    stripped.write_text("\n".join(lines) + "\n")
    done = eos("replay-wire", str(stripped))
    assert done.returncode == 1 and done.stdout.startswith("DIFFERENT: "), done.stdout + done.stderr
