"""``eos serve``: a simulated cluster on 127.0.0.1, one port per broker, for real Kafka clients.

:class:`ServedCluster` listens on one TCP port per simulated broker (so Metadata hands out real
addresses, and leadership, coordinators and failover work as on Kafka), cuts each stream into
frames and feeds them to :class:`~engine.wire.service.WireService` at the simulated time that
corresponds to their arrival (:class:`~engine.serve.realtime_clock.RealTimeClock`). One asyncio loop does
all of it, in the caller's thread (:meth:`ServedCluster.run`, the command line) or in a thread of
its own (:meth:`ServedCluster.start`, tests and notebooks). Every touch of the cluster happens
under :attr:`ServedCluster.guard`, a lock the notebook layer shares with its own cells and pacer,
so a cell that crashes a broker and the loop that serves it never drive the engine at once.

Faults from outside come through :meth:`ServedCluster.control` (or :meth:`ServedCluster.fault`):
the control channel (``engine.serve.realtime_control``, one more port, ``"control"`` in the ready
file) and in-process callers alike; they are journaled, so ``eos replay-wire`` replays them. A
change made directly under :meth:`ServedCluster.locked` is not, and the journal notes it.

Safety
------
* Binds 127.0.0.1 unless another host is named; asks for SASL/PLAIN (user ``eos``, a random
  password per server, in :meth:`ServedCluster.client_config`) unless ``auth=False``.
* A frame larger than ``socket.request.max.bytes`` (Kafka's default, 100 MiB), a negative size, or
  a frame that stalls half-sent for ``frame_timeout_s`` closes that connection; nothing else is
  touched. Malformed frames are the service's to judge (``engine.wire.gateway``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import struct
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.serve import realtime_control
from engine.serve.realtime_clock import RealTimeClock
from engine.wire.client_config import confluent_config, kafka_python_config
from engine.wire.control import ControlError, check
from engine.wire.journal import ServeSpec, WireJournal
from engine.wire.service import WireService

#: Kafka's default ``socket.request.max.bytes``.
SOCKET_REQUEST_MAX_BYTES = 104_857_600
#: How long a half-sent frame may stall before its connection is closed.
FRAME_TIMEOUT_S = 30.0
#: The longest the loop sleeps without looking at the cluster (faults from other threads, outputs).
IDLE_TICK_S = 0.02

_SIZE = struct.Struct(">i")


class ServedCluster:
    """Serve ``cluster`` to real clients; see the module docstring.

    Parameters
    ----------
    cluster
        The simulated cluster.
    host
        The address to bind (``127.0.0.1`` unless asked by name).
    port
        The first broker's port; broker ``i`` listens on ``port + i - 1``. 0: any free ports.
    auth
        Require SASL/PLAIN with a random password (default), or nothing.
    rate
        Simulated seconds per real second.
    spec, journal_path
        With both, every input and output is journaled for ``eos replay-wire``.
    guard
        The lock every touch of the cluster holds (default: a new one).
    """

    def __init__(
        self,
        cluster: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        auth: bool = True,
        rate: float = 1.0,
        spec: ServeSpec | None = None,
        journal_path: str | Path | None = None,
        guard: Any = None,
        max_request_bytes: int = SOCKET_REQUEST_MAX_BYTES,
        frame_timeout_s: float = FRAME_TIMEOUT_S,
    ) -> None:
        self.cluster = cluster
        self.host = host
        self.port = port
        self.password = secrets.token_urlsafe(18) if auth else None
        self.rate = rate
        self.spec = spec
        self.journal_path = journal_path
        self.guard = guard if guard is not None else threading.RLock()
        self.max_request_bytes = max_request_bytes
        self.frame_timeout_s = frame_timeout_s
        self.clock = RealTimeClock(cluster.world.now_ms, rate)
        self.service: WireService | None = None
        self.journal: WireJournal | None = None
        self.addresses: dict[int, tuple[str, int]] = {}
        #: (host, port) of the control channel, once listening.
        self.control_address: tuple[str, int] | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._writers: dict[int, asyncio.StreamWriter] = {}
        self._outbox: deque[tuple[int, bytes | None]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> ServedCluster:
        """Serve from a thread of its own; return once the ports accept connections."""
        self._thread = threading.Thread(target=self._thread_main, name="eos-serve", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error
        return self

    def _thread_main(self) -> None:
        try:
            asyncio.run(self.run())
        except BaseException as exc:  # reported to start(); the thread must not die silently
            self._error = exc
            self._ready.set()

    async def run(self, ready_file: str | Path | None = None) -> None:
        """Listen, then serve until :meth:`stop`; write ``ready_file`` once connections are accepted.

        The ready file is removed when serving ends (a stale one would point ``eos fault`` at a
        port nobody listens on).
        """
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        await self._listen()
        if ready_file is not None:
            _write_ready_file(ready_file, self.ready_info())
        self._ready.set()
        try:
            await self._drive()
        finally:
            for server in self._servers:
                server.close()
            for writer in list(self._writers.values()):
                writer.close()
            if self.journal is not None:
                self.journal.close()
            if ready_file is not None:
                _remove_ready_file(ready_file)

    def serve_forever(
        self, *, ready_file: str | Path | None = None, duration_s: float | None = None, on_ready: Any = None
    ) -> None:
        """Serve in this thread until interrupted (Ctrl-C), stopped or ``duration_s`` passed.

        ``on_ready()`` is called once listening; ``ready_file`` (see :meth:`run`) is gone when this returns.
        """

        async def main() -> None:
            task = asyncio.create_task(self.run(ready_file))
            while not self._ready.is_set() and not task.done():
                await asyncio.sleep(0.01)
            if task.done():
                await task  # it failed to listen: raise its error
            if on_ready is not None:
                on_ready()
            if duration_s is not None:
                await asyncio.sleep(duration_s)
                self.stop()
            await task

        try:
            with contextlib.suppress(KeyboardInterrupt):
                asyncio.run(main())
        finally:
            if ready_file is not None:
                _remove_ready_file(ready_file)  # also when Ctrl-C came before run() could

    def stop(self) -> None:
        """Stop serving (from any thread); connections close."""
        self._stopping = True
        self.wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(10)

    def wake(self) -> None:
        """Let the loop look at the cluster now (after a fault from another thread)."""
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(wake.set)

    @contextlib.contextmanager
    def locked(self) -> Iterator[Any]:
        """Hold the guard to act on the cluster from another thread; the loop sees the change at once.

        A change made here is not a journaled input: the journal notes it and stops being
        replayable from there. Make faults with :meth:`fault` to keep a session replayable.
        """
        with self.guard:
            yield self.cluster
        self.wake()

    def fault(self, op: str, **args: Any) -> dict[str, Any]:
        """Make a fault (``crash``, ``restart``, ... ``wire-fault``) or ask a query, as the control channel does.

        ``server.fault("crash", broker=1)``; see :mod:`engine.wire.control` for the ops. Returns
        the answer; raises :class:`~engine.wire.control.ControlError` when refused.
        """
        return self.control({"op": op, **args})

    def control(self, request: dict[str, Any]) -> dict[str, Any]:
        """Carry out one control request now (any thread): under the guard, journaled, the loop woken."""
        request = check(request)
        with self.guard:
            service = self.service
            if service is None:
                raise ControlError("the server is not serving yet")
            service.advance_to(self.clock.target_ms(self.cluster.world.now_ms))
            answer = service.control(request)
        self.wake()
        return answer

    async def _listen(self) -> None:
        ids = sorted(self.cluster.brokers)
        for i, broker_id in enumerate(ids):
            port = self.port + i if self.port else 0
            server = await asyncio.start_server(
                lambda r, w, b=broker_id: self._connection(b, r, w), self.host, port, limit=1 << 20
            )
            self._servers.append(server)
            sock_port = server.sockets[0].getsockname()[1]
            self.addresses[broker_id] = (self.host, sock_port)
        control = await realtime_control.listen(self, self.host, self.port + len(ids) if self.port else 0)
        self._servers.append(control)
        self.control_address = (self.host, control.sockets[0].getsockname()[1])
        if self.spec is not None and self.journal_path is not None:
            self.journal = WireJournal(self.spec, self.addresses, self.password, self.journal_path)
        with self.guard:
            self.service = WireService(self.cluster, self.addresses, self.password, self.journal)
            self.service.on_write = lambda conn, data: self._outbox.append((conn, data))
            self.service.on_hang_up = lambda conn, _reason: self._outbox.append((conn, None))

    # -- what a client needs ----------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """Return ``host:port,...`` of every broker."""
        return ",".join(f"{h}:{p}" for _b, (h, p) in sorted(self.addresses.items()))

    def client_config(self) -> dict[str, str]:
        """Return the confluent-kafka config to paste (security settings included)."""
        return confluent_config(self.bootstrap, self.password)

    def ready_info(self) -> dict[str, Any]:
        """Return what ``--ready-file`` holds: the addresses and the client configs."""
        return {
            "bootstrap.servers": self.bootstrap,
            "client_config": self.client_config(),
            "kafka_python": kafka_python_config(self.bootstrap, self.password),
            "brokers": {str(b): p for b, (_h, p) in sorted(self.addresses.items())},
            "seed": self.cluster.seed,
            "pid": os.getpid(),
            "journal": str(self.journal_path) if self.journal is not None else None,
            "control": "{}:{}".format(*self.control_address) if self.control_address else None,
        }

    # -- the loop ---------------------------------------------------------------------------------

    def _step(self) -> float:
        """Advance the simulation to the wall clock's time; return how long the loop may sleep."""
        with self.guard:
            service = self.service
            assert service is not None  # set by _listen before the loop runs
            world = self.cluster.world
            service.advance_to(self.clock.target_ms(world.now_ms))
            nxt = world.scheduler.next_due_ms()
            sleep = IDLE_TICK_S if nxt is None else min(IDLE_TICK_S, self.clock.seconds_until(nxt, world.now_ms))
        self._flush()
        return sleep

    async def _drive(self) -> None:
        wake = self._wake
        assert wake is not None
        while not self._stopping:
            sleep = self._step()
            if sleep > 0:
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), sleep)
        if self.journal is not None:
            self.journal.flush()

    def _flush(self) -> None:
        """Write queued responses and close connections the service hung up (loop thread only)."""
        while self._outbox:
            conn, data = self._outbox.popleft()
            writer = self._writers.get(conn)
            if writer is None:
                continue
            if data is None:
                self._writers.pop(conn, None)
                writer.close()
            else:
                writer.write(data)

    async def _connection(self, broker_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self.guard:
            service = self.service
            assert service is not None
            service.advance_to(self.clock.target_ms(self.cluster.world.now_ms))
            conn = service.connect(broker_id)
        if conn is None:
            writer.close()
            return
        self._writers[conn] = writer
        try:
            await self._read_frames(conn, reader)
        except asyncio.CancelledError:
            pass  # the server is stopping: the connection closes below
        finally:
            with self.guard:
                service.disconnect(conn)
            if self._writers.pop(conn, None) is not None:
                writer.close()

    async def _read_frames(self, conn: int, reader: asyncio.StreamReader) -> None:
        service = self.service
        assert service is not None
        while not self._stopping and conn in self._writers:
            try:
                head = await reader.readexactly(4)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            (size,) = _SIZE.unpack(head)
            if size < 0 or size > self.max_request_bytes:
                return  # Kafka's InvalidReceiveException: the connection is closed
            try:
                frame = await asyncio.wait_for(reader.readexactly(size), self.frame_timeout_s)
            except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
                return
            with self.guard:
                service.advance_to(self.clock.target_ms(self.cluster.world.now_ms))
                service.receive(conn, frame)
            self._flush()
            if self._wake is not None:
                self._wake.set()


def _write_ready_file(path: str | Path, info: dict[str, Any]) -> None:
    """Write the ready file atomically, readable by its owner only (it holds the password)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
    tmp.replace(path)


def _remove_ready_file(path: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        Path(path).unlink()


def serve(spec: ServeSpec, **options: Any) -> ServedCluster:
    """Build the cluster of ``spec`` and serve it from a thread; return the running server."""
    cluster = spec.build()
    return ServedCluster(cluster, spec=spec, **options).start()
