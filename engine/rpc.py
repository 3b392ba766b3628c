"""Request/response over the simulated network, for brokers, the controller and clients.

A node sends a request with :meth:`RpcNode.request` and a callback; the callback receives the
response body, or ``None`` when no response will come. :attr:`RpcNode.no_answer` then says why,
as Kafka's ``NetworkClient`` does: ``REQUEST_TIMED_OUT`` when nothing came within
``timeout_ms`` (a lost request or ack, a partitioned or paused peer, a lost machine: the caller
cannot tell which), ``NETWORK_EXCEPTION`` when the connection closed under it (the peer's
process died, or refused the connection). Both are retriable. Incoming requests are dispatched
by body type to ``self.handlers``. Pending requests are volatile: a crash forgets them, and
their deadline check belongs to the old incarnation.

Deadlines
---------
A request's ``timeout_ms`` is not a timer of its own. Each connection keeps its requests'
deadlines in send order, and the node keeps one check armed at the earliest deadline; an answer
only forgets its entry (answers come in order on a connection, so that is the head). The check
times out, in (deadline, message id) order, every request still pending whose deadline has come,
and arms itself again at the next one. A request therefore fails at exactly its deadline, as with
a timer, for one dictionary entry and one list append instead of a timer set and cancelled.

Connections and reconnect backoff
---------------------------------
A node has a connection to every peer it has sent a request to since either end last crashed.
When the peer's process dies, the network tells the node (:meth:`on_peer_disconnect`): every
request in flight to that peer fails with ``NETWORK_EXCEPTION``, and the peer enters reconnect
backoff, as Kafka's ``ClusterConnectionStates`` does: ``reconnect.backoff.ms`` after the first
failure, doubled per failure in a row up to ``reconnect.backoff.max.ms`` (Kafka adds 20 %
jitter; the engine does not). A refused connection counts as a failure too. While a peer is in
backoff, a new request to it waits in the node until the backoff ends (its timeout runs
meanwhile), as Kafka's clients do not send to a node that is not ``ready``. The first answer
from the peer ends the backoff.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.errors import ErrorCode
from engine.sim.node import Node

if TYPE_CHECKING:
    from engine.sim.network import Message
    from engine.sim.world import World

ResponseCallback = Callable[[Any], None]

#: Kafka's defaults for ``reconnect.backoff.ms`` and ``reconnect.backoff.max.ms`` (clients and brokers).
RECONNECT_BACKOFF_MS = 50
RECONNECT_BACKOFF_MAX_MS = 1_000


class RpcNode(Node):
    """A node that sends requests and answers them."""

    def __init__(
        self,
        world: World,
        name: str,
        reconnect_backoff_ms: int = RECONNECT_BACKOFF_MS,
        reconnect_backoff_max_ms: int = RECONNECT_BACKOFF_MAX_MS,
    ) -> None:
        super().__init__(world, name)
        #: msg id -> (callback, destination): the requests sent and not yet answered
        self._pending: dict[int, tuple[ResponseCallback, str]] = {}
        #: destination -> [(deadline, msg id)] in send order; answered entries are dropped lazily
        self._deadlines: dict[str, list[tuple[int, int]]] = {}
        #: when the armed deadline check runs (None: none armed)
        self._check_at: int | None = None
        self.handlers: dict[type, Callable[[Message], None]] = {}
        self._net = world.network
        #: why the last callback got ``None``: REQUEST_TIMED_OUT or NETWORK_EXCEPTION
        self.no_answer = ErrorCode.REQUEST_TIMED_OUT
        self.reconnect_backoff_ms = reconnect_backoff_ms
        self.reconnect_backoff_max_ms = max(reconnect_backoff_ms, reconnect_backoff_max_ms)
        #: peers this node has a connection to (it sent them a request since either end crashed)
        self._connections: set[str] = set()
        #: peer -> failed connection attempts in a row, and when the next attempt may be made
        self._reconnect_failures: dict[str, int] = {}
        self._reconnect_at: dict[str, int] = {}

    def request(self, dst: str, body: Any, callback: ResponseCallback, timeout_ms: int | None = None) -> int:
        """Send ``body`` to ``dst``; ``callback(response_or_None)`` runs once. Return the message id."""
        if self._reconnect_at:
            wait = self._reconnect_at.get(dst, 0) - self._sched.now_ms
            if wait > 0:
                return self._request_after_backoff(wait, dst, body, callback, timeout_ms)
        m = self._net.send(self.name, dst, body, "request")
        self._pending[m.msg_id] = (callback, dst)
        if timeout_ms is not None:
            self._add_deadline(dst, m.msg_id, timeout_ms)
        self._connections.add(dst)
        return m.msg_id

    def _add_deadline(self, dst: str, msg_id: int, timeout_ms: int) -> None:
        due = self._sched.now_ms + max(timeout_ms, 0)
        entries = self._deadlines.get(dst)
        if entries is None:
            self._deadlines[dst] = [(due, msg_id)]
        else:
            entries.append((due, msg_id))
        if self._check_at is None or due < self._check_at:
            self._check_at = due
            self.call_after(due - self._sched.now_ms, self._check_deadlines, due)

    def _check_deadlines(self, at_ms: int) -> None:
        """Time out the pending requests whose deadline has come; arm the check for the next one."""
        if self._check_at != at_ms:
            return  # an earlier check re-armed it since
        self._check_at = None
        now = self._sched.now_ms
        pending = self._pending
        due: list[tuple[int, int]] = []
        for dst in list(self._deadlines):
            live = [e for e in self._deadlines[dst] if e[1] in pending]
            due.extend(e for e in live if e[0] <= now)
            live = [e for e in live if e[0] > now]
            if live:
                self._deadlines[dst] = live
            else:
                del self._deadlines[dst]
        for _due, msg_id in sorted(due):
            self._timed_out(msg_id)  # its callback may send again: a later check may be armed now
        if self._deadlines:
            nxt = min(e[0] for entries in self._deadlines.values() for e in entries)
            if self._check_at is None or nxt < self._check_at:
                self._check_at = nxt
                self.call_after(nxt - now, self._check_deadlines, nxt)

    def _request_after_backoff(
        self, wait_ms: int, dst: str, body: Any, callback: ResponseCallback, timeout_ms: int | None
    ) -> int:
        """Hold a request until ``dst``'s reconnect backoff ends; its id and timeout start now."""
        msg_id = self._net.reserve_id()
        self._pending[msg_id] = (callback, dst)
        if timeout_ms is not None:
            self._add_deadline(dst, msg_id, timeout_ms)
        self.call_after(wait_ms, self._send_held, msg_id, dst, body)
        return msg_id

    def _send_held(self, msg_id: int, dst: str, body: Any) -> None:
        if msg_id not in self._pending:
            return  # timed out or cancelled while it waited
        wait = self._reconnect_at.get(dst, 0) - self._sched.now_ms
        if wait > 0:  # failed again meanwhile: the backoff grew
            self.call_after(wait, self._send_held, msg_id, dst, body)
            return
        self._net.send(self.name, dst, body, "request", msg_id=msg_id)
        self._connections.add(dst)

    def respond(self, request: Message, body: Any) -> None:
        """Answer a request."""
        self._net.send(self.name, request.src, body, "response", request.msg_id)

    def send_oneway(self, dst: str, body: Any) -> None:
        """Send a message that expects no answer."""
        self._net.send(self.name, dst, body, "oneway")

    def cancel_request(self, msg_id: int) -> None:
        """Forget a pending request: a late response to it will be ignored."""
        self._pending.pop(msg_id, None)

    def handle(self, message: Message) -> None:
        """Dispatch a response to its callback or a request to its handler."""
        if message.kind == "response":
            if self._reconnect_failures:
                self._reconnect_failures.pop(message.src, None)
                self._reconnect_at.pop(message.src, None)
            entry = self._pending.pop(message.correlation_id, None)
            if entry is None:
                return  # a late answer to a request we gave up on
            entries = self._deadlines.get(message.src)
            if entries and entries[0][1] == message.correlation_id:
                del entries[0]  # the usual case: answers come in send order (else the check drops it)
            entry[0](message.body)
            return
        handler = self.handlers.get(type(message.body))
        if handler is not None:
            handler(message)

    def _timed_out(self, msg_id: int) -> None:
        entry = self._pending.pop(msg_id, None)
        if entry is not None:
            self.no_answer = ErrorCode.REQUEST_TIMED_OUT
            entry[0](None)

    def _fail_request(self, msg_id: int) -> None:
        """Fail one pending request with NETWORK_EXCEPTION (its connection closed)."""
        entry = self._pending.pop(msg_id, None)
        if entry is None:
            return
        self.no_answer = ErrorCode.NETWORK_EXCEPTION
        entry[0](None)

    def _connection_failed(self, peer: str) -> None:
        """Count a failed or closed connection to ``peer`` and start its reconnect backoff."""
        self._connections.discard(peer)
        failures = self._reconnect_failures.get(peer, 0) + 1
        self._reconnect_failures[peer] = failures
        backoff = min(self.reconnect_backoff_ms << min(failures - 1, 20), self.reconnect_backoff_max_ms)
        self._reconnect_at[peer] = self._sched.now_ms + backoff

    def connected_to(self, peer: str) -> bool:
        """Return True when this node has a connection open to ``peer``."""
        return peer in self._connections

    def on_peer_disconnect(self, peer: str) -> None:
        """The peer's process died and closed the connection: fail what is in flight to it, back off."""
        self._connection_failed(peer)
        for msg_id in [i for i, entry in self._pending.items() if entry[1] == peer]:
            self._fail_request(msg_id)

    def on_connection_refused(self, message: Message) -> None:
        """The peer's process is dead: fail the request now instead of waiting for its timeout."""
        if message.msg_id in self._pending:
            self._connection_failed(message.dst)
            self._fail_request(message.msg_id)

    def on_crash(self) -> None:
        """Forget every pending request and connection."""
        self._pending.clear()
        self._deadlines.clear()
        self._check_at = None
        self._connections.clear()
        self._reconnect_failures.clear()
        self._reconnect_at.clear()
