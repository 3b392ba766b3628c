"""One real client's connection to one simulated broker: a node of the simulated world.

A real client opens a TCP connection to a broker's port; the server (``engine.serve``) hands each
connection's frames to a :class:`WireConnection`, a node named ``wire-N`` in the world. It decodes
the frame (``frames``), and the handler of its API (``handlers_*``) turns the wire request into the
engine's own requests (``engine.protocol``), sent over the simulated network to the broker the
client connected to, and the engine's answers back into one wire response. So the brokers, the
coordinators and the logs that answer a real client are the same code the notebooks run, and the
simulated network's faults (partitions, lost acks, held messages) apply to real clients too.

Rules of a connection, as Kafka's ``SocketServer`` and ``KafkaApis`` keep them:

* Responses leave in the order the requests came, whatever order the engine answers in. Requests
  are handled as they arrive (a client may have several in flight: librdkafka sends up to five
  produce requests per connection), and the simulated network keeps one connection's messages in
  order, as TCP does.
* A request outside the served versions, or bytes that do not decode, closes the connection
  (``InvalidRequestException``). An ApiVersions request newer than served gets KIP-511's answer.
* With SASL on, only ApiVersions, SaslHandshake and SaslAuthenticate are answered until the client
  has authenticated; anything else closes the connection, and a wrong password is answered with
  ``SASL_AUTHENTICATION_FAILED`` and the connection closed. Nothing of the cluster is read before.
  After SaslHandshake v0 the next frame is the bare token, no request header
  (``handlers_session.raw_token``): an empty frame answers a good one, a bad one closes.
* An ``acks=0`` produce gets no response.
* When the broker's process dies, the network tells this node (``on_peer_disconnect``) and the
  connection closes, as a real client sees its socket reset; a connection to a broker that is down
  is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from engine.rpc import RpcNode
from engine.wire import frames, handlers_session
from engine.wire.frames import ProtocolError, Request
from engine.wire.shape import make

if TYPE_CHECKING:
    from engine.wire.service import WireService

#: Requests a client may send before it has authenticated.
_BEFORE_AUTH = frozenset({frames.API_VERSIONS, frames.SASL_HANDSHAKE, frames.SASL_AUTHENTICATE})
_T = TypeVar("_T")


class WireConnection(RpcNode):
    """The simulated end of one real client's connection to broker ``broker_id``."""

    def __init__(self, service: WireService, conn_id: int, broker_id: int) -> None:
        super().__init__(service.cluster.world, f"wire-{conn_id}")
        self.service = service
        self.conn_id = conn_id
        self.broker_id = broker_id
        self.broker = f"broker-{broker_id}"
        self.client_id: str | None = None
        #: False until SASL/PLAIN succeeded (True from the start when the server needs no auth).
        self.authenticated = service.password is None
        self.mechanism: str | None = None
        #: True after SaslHandshake v0: the next frame is the bare SASL token, not a request.
        self.raw_sasl_token = False
        self.closed = False
        self._closing: str | None = None
        #: responses not yet written, by arrival number; None: still being worked on
        self._slots: dict[int, bytes | None] = {}
        self._next_in = 0
        self._next_out = 0
        # The TCP connection to the broker exists from the start: a crash of its process closes it.
        self._connections.add(self.broker)

    # -- frames in, frames out -----------------------------------------------------------------

    def receive(self, frame: bytes) -> None:
        """Handle one request frame (without its size prefix) that arrived now."""
        if self.closed:
            return
        if self.raw_sasl_token:
            answer = handlers_session.raw_token(self, frame)
            if answer is None:
                self.hang_up("SASL authentication failed (the token after SaslHandshake v0)")
                return
            self._fill(self._take_slot(), answer)
            return
        head = self._parse(frames.peek, frame)
        if head is None:
            return
        if not self.authenticated and head.api_key not in _BEFORE_AUTH:
            self.hang_up(f"{frames.api_name(head.api_key)} before SASL authentication")
            return
        if head.api_key == frames.API_VERSIONS and not frames.is_served(head.api_key, head.api_version):
            slot = self._take_slot()
            self._fill(slot, self.service.handlers.api_versions_fallback(head.correlation_id))
            return
        request = self._parse(frames.decode_request, frame)
        if request is None:
            return
        if self.client_id is None:
            self.client_id = request.client_id
        handler = self.service.handlers.for_api(request.api_key)
        slot = self._take_slot()
        try:
            handler(self, request, lambda description, slot=slot, req=request: self._answer(slot, req, description))
        except Exception as exc:  # a bug of ours must cost this connection, never the cluster
            self.hang_up(f"internal error handling {frames.api_name(request.api_key)}: {type(exc).__name__}: {exc}")

    def _parse(self, parse: Callable[[bytes], _T], frame: bytes) -> _T | None:
        """Return ``parse(frame)``, or hang up and return None when the frame breaks the protocol."""
        try:
            return parse(frame)
        except ProtocolError as exc:
            self.hang_up(str(exc))
            return None

    def _take_slot(self) -> int:
        slot = self._next_in
        self._next_in += 1
        self._slots[slot] = None
        return slot

    def _answer(self, slot: int, request: Request, description: dict[str, Any] | None) -> None:
        """Shape a handler's answer into the request's response version and queue it in order.

        ``None`` means no response at all (an ``acks=0`` produce).
        """
        if self.closed:
            return
        self.service.clients.observe(self, request.api_key, request.body, description)
        if description is None:
            self._fill(slot, b"")
            return
        try:
            cls = frames.response_class(request.api_key, request.api_version)
            frame = frames.encode_response(request.correlation_id, make(cls, description))
        except Exception as exc:  # a bug of ours must cost this connection, never the cluster
            self.hang_up(f"internal error answering {frames.api_name(request.api_key)}: {type(exc).__name__}: {exc}")
            return
        self._fill(slot, frame)

    def _fill(self, slot: int, frame: bytes) -> None:
        self._slots[slot] = frame
        while self._slots.get(self._next_out) is not None:
            out = self._slots.pop(self._next_out)
            self._next_out += 1
            if out and not self.closed:
                self.service.write(self, out)
        if self._closing is not None and not self._slots:
            self.hang_up(self._closing)

    def hang_up(self, reason: str) -> None:
        """Close the connection (the transport closes the socket); later answers are dropped."""
        if self.closed:
            return
        self.closed = True
        self._slots.clear()
        self.service.hang_up(self, reason)

    def close_when_answered(self, reason: str) -> None:
        """Close the connection once every queued response is written (a refused SASL login)."""
        self._closing = reason
        if not self._slots:
            self.hang_up(reason)

    # -- the broker's side of the connection ---------------------------------------------------

    def on_peer_disconnect(self, peer: str) -> None:
        """The broker's process died: its socket is reset under the client.

        The connection closes before the requests in flight fail, so none of them is answered (a
        dead process writes nothing): the client sees the reset, never an error code made up for it.
        """
        if peer == self.broker:
            self.hang_up(f"{peer} crashed")
        super().on_peer_disconnect(peer)

    def on_connection_refused(self, message: Any) -> None:
        """The broker is down: the connection is refused (closed first, as above: nothing is answered)."""
        self.hang_up(f"{self.broker} refused the connection (down)")
        super().on_connection_refused(message)

    def ask(self, body: Any, callback: Callable[[Any], None]) -> None:
        """Send an engine request to this connection's broker; ``callback(answer_or_None)``.

        No timeout of its own: a real client times out by itself and closes the connection.
        """
        self.request(self.broker, body, self.guarded(callback))

    def guarded(self, callback: Callable[[Any], None]) -> Callable[[Any], None]:
        """Wrap an answer's callback: a bug of ours costs this connection, never the simulation's event."""

        def run(answer: Any) -> None:
            try:
                callback(answer)
            except Exception as exc:  # the edge between the engine and a real client
                self.hang_up(f"internal error: {type(exc).__name__}: {exc}")

        return run

    def gather(self, bodies: list[Any], callback: Callable[[list[Any]], None]) -> None:
        """Send several engine requests to the broker; ``callback(answers)`` once all are in, in order."""
        if not bodies:
            callback([])
            return
        answers: list[Any] = [None] * len(bodies)
        left = [len(bodies)]

        def one(i: int, answer: Any) -> None:
            answers[i] = answer
            left[0] -= 1
            if left[0] == 0:
                callback(answers)

        for i, body in enumerate(bodies):
            self.ask(body, lambda answer, i=i: one(i, answer))
