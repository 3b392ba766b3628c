"""The control channel of a served cluster: faults from outside, as JSON Lines on one more port.

A conformance suite runs the same fault script against real Kafka (it kills broker processes) and
against ``eos serve``; a user does it with ``eos fault``. :func:`listen` opens the channel next to
the brokers' ports (same host; ``port + brokers`` when ports are asked by number, else a free
one; the ready file says which, ``"control"``). :class:`ControlClient` is the other end.

The protocol, one JSON object per line each way:

* with authentication on, the first line is ``{"auth": "<the server's password>"}``, answered
  ``{"ok": true}``; a wrong password (or anything else first) is answered with an error line and
  the connection closed;
* then requests ``{"op": "crash", "broker": 1}`` (``engine.wire.control`` lists the ops), each
  answered by one line: ``{"ok": true, ...}`` or ``{"ok": false, "error": "<one line>"}``.

Invariants
----------
* Every request goes through :meth:`ServedCluster.control
  <engine.serve.realtime_server.ServedCluster.control>`: under the server's guard, at the
  simulated time of its arrival, journaled when it is a fault, and the loop woken.
* A malformed line is answered with an error, never more: the server and this connection go on.
  A line longer than :data:`MAX_LINE` is answered with an error and the connection closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.wire.control import ControlError, parse

if TYPE_CHECKING:
    from engine.serve.realtime_server import ServedCluster

#: The longest request line.
MAX_LINE = 1 << 16
#: How long the first (authentication) line may take.
LOGIN_TIMEOUT_S = 30.0


async def listen(server: ServedCluster, host: str, port: int) -> asyncio.Server:
    """Open the control channel of ``server`` on ``host:port`` (0: a free port)."""
    return await asyncio.start_server(lambda r, w: _session(server, r, w), host, port, limit=MAX_LINE)


async def _session(server: ServedCluster, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        if server.password is not None and not await _login(server, reader, writer):
            return
        while True:
            line = await _line(reader, writer, None)
            if line is None:
                return
            if line.strip():
                await _send(writer, answer(server, line))
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _line(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float | None) -> bytes | None:
    """Return the next line, or None when the client went away (or sent a line too long: told, closed)."""
    try:
        line = await asyncio.wait_for(reader.readuntil(b"\n"), timeout)
    except asyncio.LimitOverrunError:
        await _send(writer, {"ok": False, "error": f"line longer than {MAX_LINE} bytes; closing"})
        return None
    except asyncio.IncompleteReadError as exc:
        line = exc.partial  # the last line without its newline
        if not line.strip():
            return None
    except (TimeoutError, ConnectionError):
        return None
    return line


async def _login(server: ServedCluster, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    line = await _line(reader, writer, LOGIN_TIMEOUT_S)
    if line is None:
        return False
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        request = None
    given = request.get("auth") if isinstance(request, dict) else None
    if not isinstance(given, str):
        await _send(writer, {"ok": False, "error": 'authenticate first: {"auth": "<password>"}; closing'})
        return False
    if not hmac.compare_digest(given.encode(), (server.password or "").encode()):
        await _send(writer, {"ok": False, "error": "wrong password; closing"})
        return False
    await _send(writer, {"ok": True})
    return True


def answer(server: ServedCluster, line: bytes | str) -> dict[str, Any]:
    """Return the answer to one request line (never raises)."""
    try:
        if _is_login(line):
            return {"ok": True}  # already logged in, or a server without authentication
        return {"ok": True, **server.control(parse(line))}
    except ControlError as exc:
        return {"ok": False, "error": str(exc)}
    except Exception as exc:  # a bug of ours costs this answer, never the server
        return {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"}


def _is_login(line: bytes | str) -> bool:
    try:
        request = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(request, dict) and set(request) == {"auth"}


async def _send(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    writer.write(json.dumps(message).encode() + b"\n")
    with contextlib.suppress(ConnectionError):
        await writer.drain()


class ControlClient:
    """The client end: ``ControlClient("ready.json").call("crash", broker=1)``.

    Parameters
    ----------
    where
        A ready file written by ``eos serve --ready-file`` (its ``control`` address and password
        are used), or ``host:port``.
    password
        The server's password (default: the ready file's; None for a server run with ``--no-auth``).
    timeout_s
        How long to wait to connect and for each answer.
    """

    def __init__(self, where: str | Path, password: str | None = None, *, timeout_s: float = 10.0) -> None:
        self.password = password
        text = str(where)
        if Path(text).suffix == ".json" or Path(text).exists():
            info = read_ready_file(text)
            text = info["control"]
            if password is None:
                self.password = info.get("client_config", {}).get("sasl.password")
        host, sep, port = text.rpartition(":")
        if not sep or not port.isdigit():
            raise ControlError(f"{where}: give a ready file (eos serve --ready-file) or host:port")
        self.address = (host, int(port))
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._file: Any = None

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Send one request; return the answer (without ``ok``); ControlError with the server's error."""
        reply = self.send({"op": op, **args})
        if not reply.get("ok"):
            raise ControlError(str(reply.get("error", "refused")))
        return {k: v for k, v in reply.items() if k != "ok"}

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one JSON object, return the answer line as it came (``ok`` included)."""
        if self._file is None:
            self._connect()
        return self._exchange(message)

    def _connect(self) -> None:
        host, port = self.address
        try:
            self._sock = socket.create_connection((host, port), timeout=self.timeout_s)
        except OSError as exc:
            msg = f"cannot reach the control channel at {host}:{port} ({exc.strerror or exc}); is the server running?"
            raise ControlError(msg) from None
        self._file = self._sock.makefile("rwb")
        if self.password is not None:
            reply = self._exchange({"auth": self.password})
            if not reply.get("ok"):
                self.close()
                raise ControlError(str(reply.get("error", "login refused")))

    def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            self._file.write(json.dumps(message).encode() + b"\n")
            self._file.flush()
            line = self._file.readline()
        except OSError as exc:
            self.close()
            raise ControlError(f"the control channel failed: {exc}") from None
        if not line:
            self.close()
            raise ControlError("the server closed the control channel")
        return json.loads(line)

    def close(self) -> None:
        """Close the connection (the next call opens a new one)."""
        for closable in (self._file, self._sock):
            if closable is not None:
                with contextlib.suppress(OSError):
                    closable.close()
        self._file = self._sock = None

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_ready_file(path: str | Path) -> dict[str, Any]:
    """Read a ready file; ControlError with one line when it is missing or not one."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ControlError(f"{path}: no such ready file (eos serve --ready-file {path} writes it)") from None
    except (OSError, ValueError) as exc:
        raise ControlError(f"{path}: not a ready file ({exc})") from None
    if not isinstance(info, dict) or not isinstance(info.get("control"), str):
        raise ControlError(f"{path}: not a ready file of an eos serve with a control channel")
    return info
