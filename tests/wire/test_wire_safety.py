"""A served cluster survives what a hostile or broken client sends, and refuses who may not enter.

Goal: a wrong password is refused with Kafka's error and the connection closed before anything of
the cluster is read; malformed frames, unknown keys and versions, oversized and half-sent frames each
cost only their own connection; KIP-511's fallback answers a too-new ApiVersions; random and mutated
frames from a real client's captured traffic never raise out of the service, and nothing already
written is lost; the journal of a real session replays byte for byte, and a tampered one does not.

Method: raw sockets (frames built with kio, the codec the server uses, and read back with it) for
the transport rules; the deterministic ``WireService`` without sockets for the Hypothesis fuzz, fed
frames captured from a confluent-kafka session through the journal.
"""

from __future__ import annotations

import io
import json
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from engine.wire import journal as wire_journal
from engine.wire.journal import ServeSpec
from engine.wire.service import WireService

ROOT = Path(__file__).resolve().parents[2]


def frame(key: int, version: int, body: dict[str, Any], correlation_id: int = 7) -> bytes:
    """A size-prefixed request frame built with kio."""
    schema = load_request_schema(key, version)
    header = schema.__header_schema__
    buf = io.BytesIO()
    entity_writer(header)(
        buf, header(request_api_key=key, request_api_version=version, correlation_id=correlation_id, client_id="t")
    )
    entity_writer(schema)(buf, schema(**body))
    data = buf.getvalue()
    return struct.pack(">i", len(data)) + data


def connect(server: Any, broker: int = 1) -> socket.socket:
    host, port = server.addresses[broker]
    s = socket.create_connection((host, port), timeout=5)
    return s


def read_response(s: socket.socket) -> bytes | None:
    """One response frame without its size, or None when the server closed the connection."""
    head = _recv(s, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _recv(s, size)


def _recv(s: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = s.recv(n - len(data))
        except (ConnectionResetError, TimeoutError):
            return None
        if not chunk:
            return None
        data += chunk
    return data


def closed(s: socket.socket) -> bool:
    """True when the server closed the connection (recv sees EOF or a reset)."""
    return read_response(s) is None


def api_versions_ok(server: Any) -> bool:
    with connect(server) as s:
        s.sendall(frame(18, 3, {"client_software_name": "t", "client_software_version": "1"}))
        data = read_response(s)
    return data is not None and data[4:6] == b"\0\0"


def wire_requests_from(server: Any, node_prefix: str = "wire-") -> list[str]:
    with server.locked() as cluster:
        return [
            dict(e.detail).get("msg", "")
            for e in cluster.world.trace
            if e.node.startswith(node_prefix) and e.kind == "send"
        ]


def test_a_wrong_password_is_refused_with_kafka_s_error_and_nothing_is_read(served, ck) -> None:
    server = served()
    p = Producer({**ck(server), "sasl.password": "not-the-password"})
    with pytest.raises(KafkaException):
        p.list_topics(timeout=3)
    with connect(server) as s:
        s.sendall(frame(17, 1, {"mechanism": "PLAIN"}))
        assert read_response(s) is not None
        s.sendall(frame(36, 2, {"auth_bytes": b"\0eos\0wrong"}))
        data = read_response(s)
        assert data is not None
        response, _ = entity_reader(load_response_schema(36, 2))(memoryview(data), 5)
        assert int(response.error_code) == 58  # SASL_AUTHENTICATION_FAILED
        assert closed(s)
    assert wire_requests_from(server) == [], "a client that failed to log in reached the brokers"


def test_a_request_before_authentication_closes_the_connection(served) -> None:
    server = served()
    with connect(server) as s:
        s.sendall(frame(3, 12, {"topics": None, "include_topic_authorized_operations": False}))
        assert closed(s)
    assert wire_requests_from(server) == []


def test_no_auth_serves_without_sasl(served) -> None:
    server = served(auth=False)
    assert server.password is None
    assert "security.protocol" not in server.client_config()
    with connect(server) as s:
        s.sendall(frame(3, 12, {"topics": None, "include_topic_authorized_operations": False}))
        assert read_response(s) is not None


def test_an_api_versions_request_newer_than_served_gets_kip_511_s_v0_answer(served) -> None:
    server = served()
    with connect(server) as s:
        # ApiVersions v9: a header this server can read, a body it cannot: answered in v0's form.
        raw = struct.pack(">hhih", 18, 9, 42, 1) + b"t" + b"\0\0"
        s.sendall(struct.pack(">i", len(raw)) + raw)
        data = read_response(s)
    assert data is not None
    assert struct.unpack(">i", data[:4]) == (42,)
    response, _ = entity_reader(load_response_schema(18, 0))(memoryview(data), 4)
    assert int(response.error_code) == 35  # UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(18, 0, 3)]


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(struct.pack(">hhih", 99, 0, 1, -1), id="an unknown API key"),
        pytest.param(struct.pack(">hhih", 3, 99, 1, -1), id="an unknown Metadata version"),
        pytest.param(struct.pack(">hhih", 18, 3, 1, -1) + b"\xff\xff\xff", id="a body that does not decode"),
        pytest.param(b"\x00\x12", id="a frame shorter than its header"),
    ],
)
def test_a_malformed_frame_costs_only_its_own_connection(served, payload: bytes) -> None:
    server = served(auth=False)
    with connect(server) as bystander, connect(server) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        assert closed(s)
        bystander.sendall(frame(18, 3, {"client_software_name": "t", "client_software_version": "1"}))
        assert read_response(bystander) is not None, "another connection suffered"
    assert api_versions_ok(server)


def test_a_frame_over_socket_request_max_bytes_closes_the_connection(served) -> None:
    server = served(auth=False, max_request_bytes=1024)
    with connect(server) as s:
        s.sendall(struct.pack(">i", 4096) + b"\0" * 64)
        assert closed(s)
    with connect(server) as s:
        s.sendall(struct.pack(">i", -5))
        assert closed(s)
    assert api_versions_ok(server)


def test_a_half_sent_frame_that_stalls_is_closed_and_the_cluster_runs_on(served) -> None:
    server = served(auth=False, frame_timeout_s=0.5)
    with server.locked() as cluster:
        before = cluster.now_ms
    with connect(server) as s:
        s.sendall(struct.pack(">i", 100) + b"\0" * 10)
        start = time.monotonic()
        assert closed(s)
        assert time.monotonic() - start < 4
    with server.locked() as cluster:
        assert cluster.now_ms > before, "simulated time stood still while a client stalled"
    assert api_versions_ok(server)


# -- fuzz: captured frames, mutated, fed to the deterministic service ------------------------------


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory, read_committed: Any, txn_producer: Any) -> list[bytes]:
    """Request frames of a real confluent-kafka session (transactions and a consumer), from its journal."""
    from engine.serve.realtime_server import ServedCluster

    path = tmp_path_factory.mktemp("journal") / "session.jsonl"
    spec = ServeSpec(3, 3, {}, (("t", 2, 3),))
    server = ServedCluster(spec.build(), spec=spec, journal_path=path).start()
    try:
        config = {**server.client_config(), "socket.timeout.ms": 10_000}
        p = txn_producer(config, "fuzz-tx")
        p.begin_transaction()
        p.produce("t", value=b"kept", partition=0)
        p.commit_transaction(15)
        read_committed(config, "t", expect=1)
    finally:
        server.stop()
    _header, entries = wire_journal.read(path)
    frames = [bytes(e.data) for e in entries if e.kind == "frame"]  # type: ignore[arg-type]
    assert len(frames) > 10
    return frames


def fresh_service() -> WireService:
    spec = ServeSpec(3, 3, {}, (("t", 2, 3),))
    service = WireService(spec.build(), {1: ("127.0.0.1", 1), 2: ("127.0.0.1", 2), 3: ("127.0.0.1", 3)}, None)
    return service


def mutate(data: bytes, how: str, position: int, value: int) -> bytes:
    if not data:
        return bytes([value])
    i = position % len(data)
    if how == "flip":
        return data[:i] + bytes([data[i] ^ (1 << (value % 8))]) + data[i + 1 :]
    if how == "truncate":
        return data[:i]
    if how == "set":
        return data[:i] + bytes([value]) + data[i + 1 :]
    return data[:i] + bytes([value]) * 8 + data[i:]


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    choice=st.integers(min_value=0, max_value=10_000),
    how=st.sampled_from(["flip", "truncate", "set", "insert"]),
    position=st.integers(min_value=0, max_value=1 << 16),
    value=st.integers(min_value=0, max_value=255),
    junk=st.binary(max_size=64),
)
def test_mutated_and_random_frames_never_break_the_cluster(captured, choice, how, position, value, junk) -> None:
    service = fresh_service()
    written = []
    service.on_write = lambda conn, data: written.append(conn)
    cluster = service.cluster
    cluster.producer({"enable.idempotence": True}).produce("t", value="before", partition=0)
    cluster.run_for(200)
    hw_before = cluster.describe_partition("t", 0).high_watermark
    conn = service.connect(1)
    assert conn is not None
    for data in (mutate(captured[choice % len(captured)], how, position, value), junk):
        service.receive(conn, data)
        service.advance_to(cluster.now_ms + 50)
    service.advance_to(cluster.now_ms + 1_000)
    assert cluster.describe_partition("t", 0).high_watermark >= hw_before, "data already written was lost"
    other = service.connect(2)
    assert other is not None
    n = len(written)
    service.receive(other, frame(18, 3, {"client_software_name": "t", "client_software_version": "1"})[4:])
    service.advance_to(cluster.now_ms + 10)
    assert len(written) == n + 1, "a new connection is not served after the fuzzed one"


# -- the journal ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_served_session_s_journal_replays_byte_for_byte_and_a_tampered_one_does_not(
    served, tmp_path, read_committed, txn_producer
) -> None:
    path = tmp_path / "journal.jsonl"
    server = served([("t", 1, 3)], journal_path=path)
    config = {**server.client_config(), "socket.timeout.ms": 10_000}
    p = txn_producer(config, "replay-tx")
    p.begin_transaction()
    p.produce("t", value=b"x")
    p.commit_transaction(15)
    assert read_committed(config, "t", expect=1) == ["x"]
    server.stop()
    assert path.stat().st_mode & 0o077 == 0, "the journal holds the password: owner only"
    report = wire_journal.replay(path)
    assert report.identical, report.difference
    assert report.outputs > 10
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "replay-wire", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("identical:")
    lines = path.read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if json.loads(line).get("e") == "response")
    entry = json.loads(lines[i])
    entry["d"] = entry["d"][:-4] + ("AAAA" if entry["d"][-4:] != "AAAA" else "BBBB")
    lines[i] = json.dumps(entry)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    report = wire_journal.replay(tampered)
    assert not report.identical
    assert "output 1" in (report.difference or "")
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "replay-wire", str(tampered)], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 1 and done.stdout.startswith("DIFFERENT:")
