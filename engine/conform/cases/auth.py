"""Authentication cases: SASL/PLAIN right and wrong, an unknown mechanism, SaslHandshake v0 and v1.

The handshake cases speak the protocol by hand over a socket, as an old client (librdkafka 2.0,
Debian's kcat) does, so that what the server answers byte by byte is observed.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from engine.conform.case import Ctx, case
from engine.conform.cases.common import CALL_S
from engine.record.confluent import error_name


def _errors(ctx: Ctx, **config: Any) -> list[str]:
    """Connect with ``config`` and return the error names the client reported (first 4 s)."""
    seen: list[str] = []
    admin = ctx.admin(**config, error_cb=lambda err: seen.append(str(err.name())))
    try:
        admin.list_topics(timeout=4)
        seen.append("listed")
    except Exception as exc:
        seen.append(error_name(exc))
    return sorted(set(seen))


@case(
    "auth.plain-right",
    "auth",
    "SASL/PLAIN with the right password: Metadata lists the brokers",
    needs=("sasl",),
)
def plain_right(ctx: Ctx) -> None:
    ctx.observe("brokers", len(ctx.admin().list_topics(timeout=CALL_S).brokers))


@case(
    "auth.plain-wrong",
    "auth",
    "SASL/PLAIN with a wrong password: the client reports an authentication error",
    needs=("sasl",),
)
def plain_wrong(ctx: Ctx) -> None:
    ctx.observe("errors", _errors(ctx, **{"sasl.password": "wrong"}))


@case(
    "auth.mechanism-unknown",
    "auth",
    "SCRAM-SHA-256 where only PLAIN is enabled: refused",
    needs=("sasl",),
)
def mechanism_unknown(ctx: Ctx) -> None:
    ctx.observe("errors", _errors(ctx, **{"sasl.mechanism": "SCRAM-SHA-256"}))


# -- the protocol by hand ---------------------------------------------------------------------------


def _address(ctx: Ctx) -> tuple[str, int]:
    host, port = str(ctx.config()["bootstrap.servers"]).split(",")[0].rsplit(":", 1)
    return host, int(port)


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _request(api_key: int, version: int, correlation: int, body: bytes) -> bytes:
    payload = struct.pack(">hhi", api_key, version, correlation) + _string("conform") + body
    return struct.pack(">i", len(payload)) + payload


def _read_frame(sock: socket.socket) -> bytes | None:
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    return _read_exactly(sock, struct.unpack(">i", head)[0])


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def _handshake(sock: socket.socket, version: int, mechanism: str = "PLAIN") -> list[Any]:
    """Send SaslHandshake ``version``; return [error code, mechanisms] or ["closed"]."""
    sock.sendall(_request(17, version, 1, _string(mechanism)))
    frame = _read_frame(sock)
    if frame is None:
        return ["closed"]
    error, count = struct.unpack(">hi", frame[4:10])
    mechanisms, at = [], 10
    for _ in range(count):
        (size,) = struct.unpack(">h", frame[at : at + 2])
        mechanisms.append(frame[at + 2 : at + 2 + size].decode())
        at += 2 + size
    return [error, mechanisms]


def _metadata_brokers(sock: socket.socket) -> Any:
    """Send Metadata v1 for every topic; return how many brokers it lists, or "closed"."""
    sock.sendall(_request(3, 1, 3, struct.pack(">i", -1)))
    frame = _read_frame(sock)
    return "closed" if frame is None else struct.unpack(">i", frame[4:8])[0]


def _token(ctx: Ctx, password: str | None = None) -> bytes:
    config = ctx.config()
    return b"\0" + str(config["sasl.username"]).encode() + b"\0" + (password or str(config["sasl.password"])).encode()


@case(
    "auth.handshake-v0",
    "auth",
    "SaslHandshake v0 then the raw PLAIN token (no Kafka header), then Metadata",
    needs=("sasl",),
)
def handshake_v0(ctx: Ctx) -> None:
    with socket.create_connection(_address(ctx), timeout=CALL_S) as sock:
        ctx.observe("handshake", _handshake(sock, 0))
        token = _token(ctx)
        sock.sendall(struct.pack(">i", len(token)) + token)
        answer = _read_frame(sock)
        ctx.observe("token-answer", "closed" if answer is None else len(answer))
        ctx.observe("metadata-brokers", _metadata_brokers(sock))


@case(
    "auth.handshake-v0-wrong", "auth", "SaslHandshake v0 with a wrong raw token: the connection closes", needs=("sasl",)
)
def handshake_v0_wrong(ctx: Ctx) -> None:
    with socket.create_connection(_address(ctx), timeout=CALL_S) as sock:
        ctx.observe("handshake", _handshake(sock, 0))
        token = _token(ctx, "wrong")
        sock.sendall(struct.pack(">i", len(token)) + token)
        answer = _read_frame(sock)
        ctx.observe("token-answer", "closed" if answer is None else len(answer))


@case(
    "auth.handshake-v1", "auth", "SaslHandshake v1 then SaslAuthenticate v0, right then wrong password", needs=("sasl",)
)
def handshake_v1(ctx: Ctx) -> None:
    for label, password in (("right", None), ("wrong", "wrong")):
        with socket.create_connection(_address(ctx), timeout=CALL_S) as sock:
            ctx.observe(f"{label}-handshake", _handshake(sock, 1))
            token = _token(ctx, password)
            sock.sendall(_request(36, 0, 2, struct.pack(">i", len(token)) + token))
            frame = _read_frame(sock)
            ctx.observe(f"{label}-authenticate", "closed" if frame is None else struct.unpack(">h", frame[4:6])[0])
            if password is None:
                ctx.observe("metadata-brokers", _metadata_brokers(sock))


@case(
    "auth.unknown-mechanism-handshake",
    "auth",
    "SaslHandshake for SCRAM-SHA-512: UNSUPPORTED_SASL_MECHANISM (33)",
    needs=("sasl",),
)
def unknown_mechanism_handshake(ctx: Ctx) -> None:
    with socket.create_connection(_address(ctx), timeout=CALL_S) as sock:
        ctx.observe("handshake", _handshake(sock, 1, "SCRAM-SHA-512"))


@case(
    "auth.request-before-login",
    "auth",
    "a Metadata request before SASL: the connection closes",
    needs=("sasl",),
)
def request_before_login(ctx: Ctx) -> None:
    with socket.create_connection(_address(ctx), timeout=CALL_S) as sock:
        ctx.observe("metadata", _metadata_brokers(sock))
