"""SaslHandshake v0 and v1, as Kafka 4.4 serves both: kcat (librdkafka 2.0) and a hand-built v0 login.

Goal: ApiVersions advertises SaslHandshake 0-1 (librdkafka 2.0 refuses to log in to a broker whose
range lacks v0: "SASL Handshake not supported by broker"); after a v0 handshake the bare PLAIN token
follows without a request header and a good one is answered with an empty size-prefixed frame, a bad
one closes the connection unanswered (Kafka's ``SaslServerAuthenticator.handleSaslToken``). The wire
journal of a v0 login replays byte for byte. kcat also reads metadata, produces, consumes and looks
offsets up by timestamp (``-Q``).

Method: a served cluster per test; Debian's kcat 1.7.1 as a subprocess (skipped when absent, except
with CI=true, where .ci/run installs it); raw sockets for the v0 exchange.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import struct
import subprocess

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from engine.errors import ErrorCode
from engine.wire import journal

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
needs_kcat = pytest.mark.skipif(
    KCAT is None and os.environ.get("CI") != "true", reason="kcat is not installed (apt-get install kcat)"
)


def _kcat(server, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert KCAT is not None, "kcat is missing: .ci/run installs it"
    login = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=eos"]
    login += ["-X", f"sasl.password={server.password}"]
    cmd = [KCAT, "-b", server.bootstrap, *login, *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=30, check=False)


def _frame(key: int, version: int, body, corr: int) -> bytes:
    header = load_request_schema(key, version).__header_schema__
    buf = io.BytesIO()
    head = header(request_api_key=key, request_api_version=version, correlation_id=corr, client_id="v0")
    entity_writer(header)(buf, head)
    entity_writer(type(body))(buf, body)
    return struct.pack(">i", len(buf.getvalue())) + buf.getvalue()


def _receive(s: socket.socket) -> bytes | None:
    """Return one frame's payload, or None when the server closed the connection."""
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = s.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data[4:]


def _v0_login(server, password: str) -> tuple[socket.socket, bytes | None]:
    """Handshake v0 (PLAIN), then the bare token; return the socket and the token's answer (None: closed)."""
    s = socket.create_connection(server.addresses[1], timeout=10)
    s.sendall(_frame(17, 0, load_request_schema(17, 0)(mechanism="PLAIN"), 1))
    answer = _receive(s)
    assert answer is not None
    handshake, _ = entity_reader(load_response_schema(17, 0))(memoryview(answer), 4)
    assert (handshake.error_code, tuple(handshake.mechanisms)) == (ErrorCode.NONE, ("PLAIN",))
    token = b"\0eos\0" + password.encode()
    s.sendall(struct.pack(">i", len(token)) + token)  # no request header: the token alone
    return s, _receive(s)


def test_a_v0_handshake_then_a_bare_token_logs_in_and_the_journal_replays(served, tmp_path) -> None:
    path = tmp_path / "wire.jsonl"
    server = served([("t", 1, 3)], journal_path=path)
    s, answer = _v0_login(server, server.password)
    with s:
        assert answer == b""  # an empty size-prefixed frame: PLAIN's (empty) final challenge
        s.sendall(_frame(3, 1, load_request_schema(3, 1)(topics=None), 2))
        md = _receive(s)
        assert md is not None
        metadata, _ = entity_reader(load_response_schema(3, 1))(memoryview(md), 4)
        assert [t.name for t in metadata.topics] == ["t"]
    server.stop()
    report = journal.replay(path)
    assert report.identical, report.difference
    assert report.outputs >= 3


def test_a_wrong_bare_token_closes_the_connection_unanswered(served) -> None:
    server = served([("t", 1, 3)])
    s, answer = _v0_login(server, "wrong")
    s.close()
    assert answer is None
    with server.locked() as cluster:
        reasons = [dict(e.detail)["reason"] for e in cluster.world.trace if e.name == "wire.close"]
    assert reasons == ["SASL authentication failed (the token after SaslHandshake v0)"]


def test_api_versions_advertises_sasl_handshake_0_to_1(served, raw_call) -> None:
    server = served([("t", 1, 3)])
    request = load_request_schema(18, 3)(client_software_name="t", client_software_version="1")
    versions = raw_call(server, 18, 3, request)
    [handshake] = [k for k in versions.api_keys if k.api_key == 17]
    assert (handshake.min_version, handshake.max_version) == (0, 1)


@needs_kcat
def test_kcat_lists_produces_consumes_and_looks_up_offsets_by_time(served) -> None:
    server = served([("t", 1, 3)])
    listed = _kcat(server, "-L", "-m", "10")
    assert listed.returncode == 0, listed.stderr
    assert "3 brokers" in listed.stdout and 'topic "t" with 1 partitions' in listed.stdout
    produced = _kcat(server, "-P", "-t", "t", "-p", "0", stdin="a\nb\nc\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _kcat(server, "-C", "-t", "t", "-p", "0", "-o", "beginning", "-e", "-f", "%o:%s\n")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == ["0:a", "1:b", "2:c"]
    queried = _kcat(server, "-Q", "-t", "t:0:0")  # timestamp 0: the first record
    assert queried.returncode == 0, queried.stderr
    assert "offset 0" in queried.stdout, queried.stdout
