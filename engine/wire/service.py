"""A simulated cluster served to real clients: connections, the handler table, wire faults, the journal.

:class:`WireService` is the deterministic half of ``eos serve``: it knows nothing of sockets or of
the wall clock. The transport (``engine.serve.realtime_server``) tells it when a connection opens, when a
frame arrives and when a connection closes, always after moving simulated time to the moment that
happened (:meth:`advance_to`); the service answers through two callbacks, ``write(conn_id, bytes)``
and ``hang_up(conn_id, reason)``. So a served session is a pure function of the seed, the cluster's
configuration and the timed inputs, which the :class:`~engine.wire.journal.WireJournal` records and
``eos replay-wire`` plays back to check every response byte for byte.

Wire faults
-----------
Faults counted in requests stay meaningful when timing is not (librdkafka's mock and Kafka's own
test proxy count too). :meth:`add_wire_fault` arms one: ``drop-response`` swallows the broker's
answer to the n-th request of an API (the client times out and retries), ``close-after`` lets the
broker handle it and closes the connection instead of answering (a lost ack with a reset), and
``close-before`` closes the connection before the broker sees it. The n-th counts every request of
that API on every connection from the moment the fault is armed (1 = the next one).

Faults from outside
-------------------
:meth:`control` carries out a request of the control channel (``engine.wire.control``: crash,
restart, pause, resume, isolate, heal, wire-fault, and read-only queries) and journals a fault as
an input at its simulated time, so ``eos replay-wire`` replays it. A change made to the cluster
between the service's own calls (``with server.locked() as c: c.crash(1)``) is not an input the
journal can replay: the service notices it at its next call (the trace's event count, the events
run or the time moved) and the journal notes it (``untracked``), and replay says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.sim.node import NodeStatus
from engine.wire import (
    control,
    frames,
    handlers_admin,
    handlers_consumer_group,
    handlers_data,
    handlers_group,
    handlers_session,
    handlers_txn,
)
from engine.wire.clients import OutsideClients
from engine.wire.gateway import WireConnection

if TYPE_CHECKING:
    from engine.cluster import Cluster
    from engine.wire.journal import WireJournal

Handler = Callable[[WireConnection, frames.Request, Callable[[Any], None]], None]

#: API key -> the handler that serves it.
HANDLERS: dict[int, Handler] = {
    0: handlers_data.produce,
    1: handlers_data.fetch,
    2: handlers_data.list_offsets,
    3: handlers_data.metadata,
    8: handlers_group.offset_commit,
    9: handlers_group.offset_fetch,
    10: handlers_txn.find_coordinator,
    11: handlers_group.join_group,
    12: handlers_group.heartbeat,
    13: handlers_group.leave_group,
    14: handlers_group.sync_group,
    17: handlers_session.sasl_handshake,
    18: handlers_session.api_versions,
    19: handlers_admin.create_topics,
    20: handlers_admin.delete_topics,
    22: handlers_txn.init_producer_id,
    23: handlers_data.offset_for_leader_epoch,
    24: handlers_txn.add_partitions_to_txn,
    25: handlers_txn.add_offsets_to_txn,
    26: handlers_txn.end_txn,
    28: handlers_txn.txn_offset_commit,
    32: handlers_admin.describe_configs,
    36: handlers_session.sasl_authenticate,
    44: handlers_admin.incremental_alter_configs,
    60: handlers_admin.describe_cluster,
    61: handlers_txn.describe_producers,
    65: handlers_txn.describe_transactions,
    66: handlers_txn.list_transactions,
    68: handlers_consumer_group.consumer_group_heartbeat,
    69: handlers_consumer_group.consumer_group_describe,
}

if set(HANDLERS) != set(frames.SERVED):  # the advertised table and the handlers must agree
    _missing = sorted(set(frames.SERVED) ^ set(HANDLERS))
    raise ImportError(f"engine.wire: API keys advertised but not handled, or handled but not advertised: {_missing}")

WIRE_FAULT_ACTIONS = ("drop-response", "close-after", "close-before")


@dataclasses.dataclass
class WireFault:
    """One armed wire fault: act on the ``nth`` request of ``api`` seen from now on."""

    fault_id: int
    action: str
    api: str
    nth: int
    seen: int = 0
    fired: bool = False


class Handlers:
    """The handler table as a connection sees it (one object, so tests can read what is served)."""

    def __init__(self, service: WireService) -> None:
        self.service = service

    def for_api(self, api_key: int) -> Handler:
        """Return the handler of a served API key, wrapped by the armed wire faults."""
        handler = HANDLERS[api_key]
        if not self.service.wire_faults:
            return handler
        return self.service.faulted(api_key, handler)

    @staticmethod
    def api_versions_fallback(correlation_id: int) -> bytes:
        """KIP-511's answer to an ApiVersions request newer than served."""
        return handlers_session.api_versions_fallback(correlation_id)


class WireService:
    """Serve ``cluster`` to wire connections; see the module docstring.

    Parameters
    ----------
    cluster
        The simulated cluster (its brokers answer every request).
    addresses
        Broker id -> (host, port) that Metadata and FindCoordinator hand out.
    password
        The SASL/PLAIN password of user ``eos``, or None for a server without authentication.
    journal
        Records every input and output with its simulated time (None: no journal).
    """

    def __init__(
        self,
        cluster: Cluster,
        addresses: dict[int, tuple[str, int]],
        password: str | None,
        journal: WireJournal | None = None,
    ) -> None:
        self.cluster = cluster
        self.addresses = dict(addresses)
        self.password = password
        self.journal = journal
        self.handlers = Handlers(self)
        #: Every outside client as its connections show it; the cluster's views list them too.
        self.clients = OutsideClients()
        cluster.outside_clients = self.clients
        self.connections: dict[int, WireConnection] = {}
        self.wire_faults: list[WireFault] = []
        self._next_conn = 0
        self._next_fault = 0
        self.on_write: Callable[[int, bytes], None] = lambda conn_id, data: None
        self.on_hang_up: Callable[[int, str], None] = lambda conn_id, reason: None
        self.frames_in = 0
        self.bytes_out = 0
        #: What the cluster looked like when the service last returned, and the journal's length then.
        self._seen = self._mark()
        self._seen_entries = 0

    # -- changes the journal does not record ------------------------------------------------------

    def _mark(self) -> tuple[int, int, int]:
        world = self.cluster.world
        return (world.trace.count, world.scheduler.events_run, world.now_ms)

    def _begin(self) -> None:
        """Before an input: note in the journal when the cluster changed since the service last ran it."""
        journal = self.journal
        if journal is not None and journal.untracked is None and self._mark() != self._seen:
            journal.note_untracked(self.cluster.world.now_ms, self._seen_entries)

    def _begin_input(self) -> None:
        """Before an input: run the events due now (:meth:`advance_to`), then :meth:`_begin`."""
        self.advance_to(self.cluster.world.now_ms)
        self._begin()

    def _end(self) -> None:
        """After an input: what the cluster looks like now is the service's doing."""
        if self.journal is not None:
            self._seen = self._mark()
            self._seen_entries = len(self.journal.entries)

    # -- inputs (the transport calls these, at the simulated time they happen) ---------------------

    def advance_to(self, sim_ms: int) -> None:
        """Run the simulation up to ``sim_ms``, every event due by then included (no-op when nothing is).

        Events due at the current millisecond run too: with a served cluster's 0 ms hops
        (``ServeSpec.latency_ms``) what a request sets off is due at the millisecond it arrived,
        and it runs before the next input, not when the wall clock next ticks. Every input runs
        them first (``advance_to(now)``), so a live session and its replay order them alike
        whichever of them called ``advance_to`` before the input.
        """
        world = self.cluster.world
        now = world.now_ms
        if sim_ms < now:
            return
        if sim_ms == now:
            due = world.scheduler.next_due_ms()
            if due is None or due > now:
                return
        self._begin()
        world.run_for(sim_ms - now)
        self._end()

    def connect(self, broker_id: int) -> int | None:
        """A client connected to broker ``broker_id``'s port: return the connection id, None if refused."""
        self._begin_input()
        broker = self.cluster.brokers.get(broker_id)
        if broker is None or broker.status is NodeStatus.DOWN:
            if self.journal is not None:
                self.journal.record(self.cluster.world.now_ms, "refused", -1, broker_id)
            self._end()
            return None
        self._next_conn += 1
        conn_id = self._next_conn
        self.connections[conn_id] = WireConnection(self, conn_id, broker_id)
        if self.journal is not None:
            self.journal.record(self.cluster.world.now_ms, "open", conn_id, broker_id)
        self._end()
        return conn_id

    def receive(self, conn_id: int, frame: bytes) -> None:
        """A whole request frame (no size prefix) arrived on a connection."""
        conn = self.connections.get(conn_id)
        if conn is None:
            return
        self._begin_input()
        self.frames_in += 1
        if self.journal is not None:
            self.journal.record(self.cluster.world.now_ms, "frame", conn_id, frame)
        conn.receive(frame)
        self._end()

    def disconnect(self, conn_id: int) -> None:
        """The client closed its connection (or the transport dropped it)."""
        conn = self.connections.pop(conn_id, None)
        if conn is None:
            return
        self._begin_input()
        if self.journal is not None:
            self.journal.record(self.cluster.world.now_ms, "close", conn_id, b"")
        conn.closed = True
        self._end()

    def control(self, request: dict[str, Any]) -> dict[str, Any]:
        """Carry out a checked control request (:func:`engine.wire.control.check`) now; return its answer.

        A fault that took place is journaled as an input (``fault``; a wire fault as ``wire-fault``).
        A query changes nothing. Raises :class:`~engine.wire.control.ControlError` when refused.
        """
        self._begin_input()
        answer = control.apply(self, request)
        op = request["op"]
        if op in control.FAULTS and op != "wire-fault":
            if self.journal is not None:
                self.journal.record(self.cluster.world.now_ms, "fault", -1, control.encode(request))
            self._end()
        return answer

    # -- outputs (connections call these) ---------------------------------------------------------

    def write(self, conn: WireConnection, data: bytes) -> None:
        """Queue response bytes for the client."""
        self.bytes_out += len(data)
        if self.journal is not None:
            self.journal.record(self.cluster.world.now_ms, "response", conn.conn_id, data)
        self.on_write(conn.conn_id, data)

    def hang_up(self, conn: WireConnection, reason: str) -> None:
        """Close a connection from the server's side."""
        self.connections.pop(conn.conn_id, None)
        if self.journal is not None:
            self.journal.record(self.cluster.world.now_ms, "hang-up", conn.conn_id, reason.encode())
        self.cluster.world.trace.emit(conn.name, "drop", events.WIRE_CLOSE, ("reason", reason))
        self.on_hang_up(conn.conn_id, reason)

    # -- wire faults ------------------------------------------------------------------------------

    def add_wire_fault(self, action: str, api: str, nth: int = 1) -> int:
        """Arm a fault on the ``nth`` request of ``api`` (a name such as ``EndTxn``) from now on."""
        if action not in WIRE_FAULT_ACTIONS:
            msg = f"unknown wire fault {action!r}; use one of {', '.join(WIRE_FAULT_ACTIONS)}"
            raise ValueError(msg)
        names = {name for name, _lo, _hi in frames.SERVED.values()}
        if api not in names:
            msg = f"unknown API {api!r}; use one of {', '.join(sorted(names))}"
            raise ValueError(msg)
        if not isinstance(nth, int) or isinstance(nth, bool) or nth < 1:
            msg = f"nth must be an int >= 1 (1 = the next {api}), got {nth!r}"
            raise ValueError(msg)
        self._begin_input()
        self._next_fault += 1
        self.wire_faults.append(WireFault(self._next_fault, action, api, nth))
        if self.journal is not None:
            self.journal.record(
                self.cluster.world.now_ms, "wire-fault", self._next_fault, f"{action} {api} {nth}".encode()
            )
        self._end()
        return self._next_fault

    def faulted(self, api_key: int, handler: Handler) -> Handler:
        """Return ``handler`` with the armed fault of this API applied to its next request, if due."""
        name = frames.api_name(api_key)
        due: WireFault | None = None
        for f in self.wire_faults:
            if f.api == name and not f.fired:
                f.seen += 1
                if f.seen == f.nth and due is None:
                    f.fired = True
                    due = f
        if due is None:
            return handler
        fault = due
        trace = self.cluster.world.trace

        def run(conn: WireConnection, request: frames.Request, reply: Callable[[Any], None]) -> None:
            trace.emit(
                conn.name, "fault", events.WIRE_FAULT, ("action", fault.action), ("api", name), ("nth", fault.nth)
            )
            if fault.action == "close-before":
                conn.hang_up(f"wire fault: close before {name}")
                return
            if fault.action == "drop-response":
                handler(conn, request, lambda _answer: None)
                return
            handler(conn, request, lambda _answer: conn.hang_up(f"wire fault: close after {name}"))

        return run
