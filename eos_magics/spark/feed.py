"""The kernel side of the ``eos`` Spark source: a token-guarded loopback server over one live cluster.

Role
----
Spark's Python data sources never run in the kernel (``design/jupyter-spark.md`` §2.3): their
planner and readers live in worker processes that cannot see the simulated cluster. A
:class:`Feed` lets them ask for it. It serves one cluster's topics on ``127.0.0.1``, an ephemeral
port, from daemon threads, and answers only requests that carry its random token.

Protocol
--------
One connection carries one request: a JSON line of at most :data:`MAX_REQUEST_BYTES` bytes,
``{"token": ..., "op": ..., ...}``. The answer is one JSON line, and for ``read`` an Arrow IPC
stream after it; then the server closes the connection.

* ``{"op": "schema"}`` -> ``{"schema": DDL, "columns": [[name, arrow type], ...]}``.
* ``{"op": "latest", "topic": T, "isolation": I}`` -> ``{"offsets": {"0": end, ...},
  "unavailable": [p, ...]}``: for each partition the offset a Kafka consumer at isolation ``I``
  may read up to now (the leader's high watermark, or its last stable offset for
  ``read_committed``); partitions whose leader is down or unknown are listed as unavailable.
* ``{"op": "read", "topic": T, "partition": P, "start": S, "end": E, "isolation": I}`` ->
  ``{"rows": n}``, then the records of ``[S, E)`` as Arrow (:data:`ARROW_SCHEMA`).
* Anything wrong -> ``{"error": "..."}``, one line saying what to change. A wrong or missing token
  gets ``{"error": "refused: bad token"}`` and nothing else; the cluster is not touched.

What a read returns
-------------------
Exactly what the partition's leader would give a consumer fetch at that isolation level, through
the broker's own pieces: the fetch upper bound (:meth:`Broker.fetch_upper_bound`), the
leader's aborted-transaction index, and the consumer's filter
(:func:`engine.client.read_committed.visible_batches`). So markers are never returned, and under
``read_committed`` the records of aborted transactions are dropped. A mutant that weakens the
broker (M10, M11) weakens the feed the same way.

Invariants
----------
* Reading never changes the simulation: no client, no request, no trace event, no random draw,
  so the run's fingerprint is the same with or without a feed being read.
* Every read of engine state holds the cluster's lock (a :class:`~widgets.live.LiveRun`'s lock,
  the one passed, or the feed's own). Record batches are immutable once appended, so the Arrow
  table is built from them after the lock is released.
* The server never answers with a traceback; it keeps serving after a bad request.

What it does not do
-------------------
It does not write into the cluster, keep consumer positions or groups, or listen on anything but
loopback. It is not a Kafka wire protocol server.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import secrets
import socket
import socketserver
import threading
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.ipc as ipc

from engine.client.read_committed import visible_batches
from engine.cluster import Cluster
from engine.config import IsolationLevel
from engine.errors import KafkaError
from engine.export.common import as_text
from engine.log.flatten import records_of
from engine.protocol import FetchRequest
from engine.sim.node import NodeStatus
from engine.views import lookup
from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from engine.log.records import RecordBatch

__all__ = [
    "ARROW_SCHEMA",
    "ISOLATION_LEVELS",
    "MAX_REQUEST_BYTES",
    "SPARK_SCHEMA",
    "Feed",
    "request",
]

#: The isolation levels a request may name (equal to Kafka's spelling).
ISOLATION_LEVELS = tuple(IsolationLevel)
#: The end of the message that refuses any other.
_ISOLATION_MUST_BE = f"isolation must be {' or '.join(ISOLATION_LEVELS)}"
#: A request is a few short fields; a longer line is refused unread, so no client can fill memory.
MAX_REQUEST_BYTES = 4096
#: How long a connection may take to send its request line before the server drops it.
REQUEST_TIMEOUT_S = 10.0
#: The columns of a read (like Spark's Kafka source, with text keys and values); all nullable, as Spark reads them.
ARROW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("key", pa.string()),
        pa.field("value", pa.string()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("producer_id", pa.int64()),
        pa.field("producer_epoch", pa.int32()),
        pa.field("is_transactional", pa.bool_()),
    ]
)
#: The same columns as a Spark DDL string.
SPARK_SCHEMA = (
    "topic string, partition int, offset long, key string, value string, timestamp timestamp, "
    "producer_id long, producer_epoch int, is_transactional boolean"
)
_REFUSED = "refused: bad token"
_OPS = ("latest", "read", "schema")


class _BadRequestError(Exception):
    """A request the feed answers with one error line (the message is that line)."""


def _check_isolation(value: Any) -> IsolationLevel:
    if value not in ISOLATION_LEVELS:
        raise _BadRequestError(f"{_ISOLATION_MUST_BE}, not {value!r}")
    return IsolationLevel(value)


def _check_offset(req: dict[str, Any], name: str) -> int:
    value = req.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadRequestError(f"{name} must be an integer, not {value!r}")
    return value


def _partition_count(cluster: Cluster, topic: Any) -> int:
    if not isinstance(topic, str) or not topic:
        raise _BadRequestError(f"topic must be a topic name, not {topic!r}")
    try:
        return lookup.require_topic(cluster, topic)
    except KafkaError as exc:
        raise _BadRequestError(str(exc)) from None


def _leader_view(cluster: Cluster, topic: str, partition: int, isolation: IsolationLevel) -> tuple[Any, int] | None:
    """Return ``(replica, readable end)`` from the partition's leader, or None when no leader serves now."""
    state = cluster.controller.partitions.get((topic, partition))
    broker = cluster.brokers.get(state.leader) if state is not None else None
    if broker is None or broker.status is not NodeStatus.UP:
        return None
    replica, _code = broker.leader_replica(topic, partition)
    if replica is None:
        return None
    # A request object only, never sent: the broker's own rule gives the bound (and honours mutants).
    probe = FetchRequest(topic, partition, 0, isolation_level=isolation)
    return replica, broker.fetch_upper_bound(probe, replica)


def _records_table(topic: str, partition: int, batches: tuple[RecordBatch, ...], start: int, end: int) -> pa.Table:
    cols: dict[str, list[Any]] = {f.name: [] for f in ARROW_SCHEMA}
    for b in batches:
        r = records_of(b)
        for i, (offset, key, value) in enumerate(zip(r.offsets, r.keys, r.values, strict=True)):
            if offset < start or offset >= end:
                continue
            cols["offset"].append(offset)
            cols["key"].append(as_text(key))
            cols["value"].append(as_text(value))
            cols["timestamp"].append(b.record_timestamp(i) * 1000)
            cols["producer_id"].append(b.producer_id)
            cols["producer_epoch"].append(b.producer_epoch)
            cols["is_transactional"].append(b.is_transactional)
    n = len(cols["offset"])
    cols["topic"] = [topic] * n
    cols["partition"] = [partition] * n
    return pa.Table.from_pydict(cols, schema=ARROW_SCHEMA)


class Feed:
    """A loopback server of one cluster's topics for the ``eos`` Spark source (see the module docstring).

    Build it with :meth:`start`; use it as a context manager or call :meth:`stop`.
    """

    def __init__(self, cluster: Cluster, lock: Any, token: str) -> None:
        self._cluster = cluster
        self._lock = lock
        self._token = token
        self._server = _Server(self)
        self._port = self._server.server_address[1]
        self._stopped = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name=f"eos-feed-{self._port}", daemon=True
        )
        self._thread.start()

    @classmethod
    def start(cls, cluster: Any, *, lock: Any = None) -> Feed:
        """Serve ``cluster``'s topics on ``127.0.0.1`` (an ephemeral port) until :meth:`stop`.

        Parameters
        ----------
        cluster : Cluster or LiveRun
            The cluster to serve. A :class:`~widgets.live.LiveRun` brings its cluster and its lock.
        lock : context manager, optional
            The lock every engine call on ``cluster`` holds (``threading.RLock``). Without one the
            feed makes its own (:attr:`lock`): hold it while you drive the cluster from another
            thread than the kernel's.

        Returns
        -------
        Feed
            The running feed, with its :attr:`port` and :attr:`token`.

        Raises
        ------
        SparkBridgeError
            For something other than a Cluster or LiveRun, a lock that is not a context manager,
            or a lock other than the LiveRun's own.
        """
        from widgets.live import LiveRun

        if isinstance(cluster, LiveRun):
            if lock is not None and lock is not cluster.lock:
                raise SparkBridgeError("a LiveRun brings its own lock: call Feed.start(run) without lock=")
            cluster, lock = cluster.cluster, cluster.lock
        if not isinstance(cluster, Cluster):
            raise SparkBridgeError(
                f"Feed.start() serves an engine Cluster or a widgets.live.LiveRun, not {type(cluster).__name__}"
            )
        if lock is None:
            lock = threading.RLock()
        elif not (hasattr(lock, "__enter__") and hasattr(lock, "__exit__")):
            raise SparkBridgeError(f"lock must be a lock such as threading.RLock(), not {type(lock).__name__}")
        return cls(cluster, lock, secrets.token_urlsafe(24))

    # -- what a client needs ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """Return the loopback port the feed listens on."""
        return self._port

    @property
    def token(self) -> str:
        """Return the token every request must carry."""
        return self._token

    @property
    def lock(self) -> Any:
        """Return the lock the feed holds while it reads the cluster."""
        return self._lock

    @property
    def running(self) -> bool:
        """Return True until :meth:`stop` is called."""
        return not self._stopped

    def options(self, topic: str, isolation: str = "read_committed") -> dict[str, str]:
        """Return the ``eos`` data source's options for one topic, e.g. ``spark.readStream.options(**o)``.

        Raises
        ------
        SparkBridgeError
            When the feed is stopped, the cluster has no such topic, or the isolation level is unknown.
        """
        self._require_running()
        self.partitions(topic)
        if isolation not in ISOLATION_LEVELS:
            raise SparkBridgeError(f"{_ISOLATION_MUST_BE}, not {isolation!r}")
        level = IsolationLevel(isolation).value
        return {"port": str(self._port), "token": self._token, "topic": topic, "isolation.level": level}

    # -- reads (also what the server answers) ---------------------------------------------------

    def partitions(self, topic: str) -> int:
        """Return the partition count of ``topic``; SparkBridgeError naming the topics if there is none."""
        with self._lock:
            try:
                return _partition_count(self._cluster, topic)
            except _BadRequestError as exc:
                raise SparkBridgeError(str(exc)) from None

    def latest(self, topic: str, isolation: str) -> tuple[dict[int, int], list[int]]:
        """Return ``({partition: readable end}, unavailable partitions)`` for ``topic`` at ``isolation``.

        The end is the leader's high watermark (``read_uncommitted``) or last stable offset
        (``read_committed``). Raises SparkBridgeError for an unknown topic or isolation level.
        """
        try:
            return self._latest(topic, isolation)
        except _BadRequestError as exc:
            raise SparkBridgeError(str(exc)) from None

    def read(self, topic: str, partition: int, start: int, end: int, isolation: str) -> pa.Table:
        """Return the records of ``[start, end)`` of one partition as a consumer at ``isolation`` sees them.

        Raises SparkBridgeError for an unknown topic, partition or isolation level, a range outside
        ``[0, readable end]``, or a partition without a leader now.
        """
        try:
            return self._read({"topic": topic, "partition": partition, "start": start, "end": end}, isolation)
        except _BadRequestError as exc:
            raise SparkBridgeError(str(exc)) from None

    def _latest(self, topic: Any, isolation: Any) -> tuple[dict[int, int], list[int]]:
        isolation = _check_isolation(isolation)
        offsets: dict[int, int] = {}
        unavailable: list[int] = []
        with self._lock:
            for p in range(_partition_count(self._cluster, topic)):
                view = _leader_view(self._cluster, topic, p, isolation)
                if view is None:
                    unavailable.append(p)
                else:
                    offsets[p] = view[1]
        return offsets, unavailable

    def _read(self, req: dict[str, Any], isolation: Any) -> pa.Table:
        isolation = _check_isolation(isolation)
        topic = req.get("topic")
        with self._lock:
            count = _partition_count(self._cluster, topic)
            partition, start, end = (_check_offset(req, k) for k in ("partition", "start", "end"))
            if not 0 <= partition < count:
                raise _BadRequestError(f"topic {topic!r} has partitions 0-{count - 1}, not {partition}")
            view = _leader_view(self._cluster, topic, partition, isolation)
            if view is None:
                raise _BadRequestError(f"{topic}-{partition} has no leader serving now; ask again once one is elected")
            replica, upper = view
            first = replica.log.log_start_offset
            if not first <= start <= end <= upper:
                raise _BadRequestError(
                    f"offsets out of range: [{start}, {end}) of {topic}-{partition}; "
                    f"{isolation} may read [{first}, {upper}) now"
                )
            batches = tuple(replica.log.read(start, 1 << 62, end)) if end > start else ()
            aborted = None
            if isolation is IsolationLevel.READ_COMMITTED and replica.weak.send_aborted_transactions:
                aborted = tuple(replica.txn_index.collect(start, end))
        visible = visible_batches(batches, start, aborted, isolation).batches
        return _records_table(topic, partition, visible, start, end)

    # -- lifecycle --------------------------------------------------------------------------------

    def _require_running(self) -> None:
        if self._stopped:
            raise SparkBridgeError("this feed is stopped; start a new one with Feed.start(cluster)")

    def stop(self) -> None:
        """Stop serving and close the socket; later connections are refused. Calling it again does nothing."""
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Feed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<Feed 127.0.0.1:{self._port} {state}>"  # never the token: reprs end up in notebooks


class _Handler(socketserver.StreamRequestHandler):
    """Answer one request line (see the module docstring)."""

    server: _Server

    def handle(self) -> None:
        self.request.settimeout(REQUEST_TIMEOUT_S)
        try:
            line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
        except OSError:
            return
        try:
            for chunk in self._answer(line):
                self.wfile.write(chunk)
            self.wfile.flush()
        except OSError:
            return  # the client went away; nothing to tell it

    def _answer(self, line: bytes) -> Iterator[bytes]:
        feed = self.server.feed
        try:
            req = _parse(line)
            if not _token_ok(req.get("token"), feed.token):
                yield _line({"error": _REFUSED})
                return
            op = req.get("op")
            if op == "schema":
                columns = [[f.name, str(f.type)] for f in ARROW_SCHEMA]
                yield _line({"schema": SPARK_SCHEMA, "columns": columns})
            elif op == "latest":
                offsets, unavailable = feed.latest(req.get("topic"), req.get("isolation", "read_uncommitted"))
                yield _line({"offsets": {str(p): e for p, e in sorted(offsets.items())}, "unavailable": unavailable})
            elif op == "read":
                where = [req.get(k) for k in ("topic", "partition", "start", "end")]
                table = feed.read(*where, req.get("isolation", "read_uncommitted"))
                yield _line({"rows": table.num_rows})
                yield _arrow_stream(table)
            else:
                raise _BadRequestError(f"unknown op {op!r}; use one of {', '.join(_OPS)}")
        except (_BadRequestError, SparkBridgeError) as exc:
            yield _line({"error": str(exc)})
        except Exception as exc:
            # A bug here must still cost the client one line, never a traceback, and the server keeps serving.
            yield _line({"error": f"internal error: {type(exc).__name__}: {exc}"})


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, feed: Feed) -> None:
        self.feed = feed
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet: a client that vanished mid-answer is not the notebook's business."""


def _parse(line: bytes) -> dict[str, Any]:
    if len(line) > MAX_REQUEST_BYTES:
        raise _BadRequestError(f"request too long: one JSON line of at most {MAX_REQUEST_BYTES} bytes")
    if not line.endswith(b"\n"):
        raise _BadRequestError("incomplete request: send one JSON object ending with a newline")
    try:
        req = json.loads(line)
    except ValueError:
        raise _BadRequestError("bad request: not a JSON object on one line") from None
    if not isinstance(req, dict):
        raise _BadRequestError("bad request: not a JSON object on one line")
    return req


def _token_ok(given: Any, token: str) -> bool:
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode())


def _line(obj: dict[str, Any]) -> bytes:
    return (json.dumps(obj, sort_keys=True) + "\n").encode()


def _arrow_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, ARROW_SCHEMA) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


# -- the client side (runs in Spark's worker processes, and in tests) -------------------------------


def request(port: int, token: str, op: str, *, timeout_s: float = 30.0, **fields: Any) -> Any:
    """Send one request to a feed on ``127.0.0.1:port``; return its answer.

    Returns the JSON answer (a dict) for ``schema`` and ``latest``, and a ``pyarrow.Table`` for
    ``read``.

    Raises
    ------
    SparkBridgeError
        When nothing listens on the port, the token is refused, or the feed answers an error;
        the message says which and what to do.
    """
    where = f"eos feed on 127.0.0.1:{port}"
    try:
        conn = socket.create_connection(("127.0.0.1", int(port)), timeout=timeout_s)
    except OSError:
        raise SparkBridgeError(
            f"no {where}: it was stopped or its kernel restarted; start one with Feed.start(cluster) "
            "and pass its port and token"
        ) from None
    with contextlib.closing(conn), conn.makefile("rwb") as f:
        f.write(_line({**fields, "token": token, "op": op}))
        f.flush()
        head = f.readline(1 << 20)
        try:
            answer = json.loads(head)
        except ValueError:
            raise SparkBridgeError(f"the {where} closed the connection without an answer") from None
        error = answer.get("error") if isinstance(answer, dict) else "not an answer"
        if error == _REFUSED:
            raise SparkBridgeError(
                f"the {where} refused the token: pass the running feed's token (feed.token or feed.options(topic))"
            )
        if error is not None:
            raise SparkBridgeError(f"the {where} answered: {error}")
        if op == "read":
            return ipc.open_stream(f).read_all()
        return answer
