"""Request/response over the simulated network, for brokers, the controller and clients.

A node sends a request with :meth:`RpcNode.request` and a callback; the callback receives the
response body, or ``None`` when no response came within ``timeout_ms`` (a lost request, a lost
ack, a crashed or partitioned peer: the caller cannot tell which, exactly as in Kafka).
Incoming requests are dispatched by body type to ``self.handlers``. Pending requests are
volatile: a crash forgets them, and their timers belong to the old incarnation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.sim.node import Node

if TYPE_CHECKING:
    from engine.sim.network import Message
    from engine.sim.scheduler import Timer
    from engine.sim.world import World

ResponseCallback = Callable[[Any], None]


class RpcNode(Node):
    """A node that sends requests and answers them."""

    def __init__(self, world: World, name: str) -> None:
        super().__init__(world, name)
        self._pending: dict[int, tuple[ResponseCallback, Timer | None]] = {}
        self.handlers: dict[type, Callable[[Message], None]] = {}
        self._net = world.network

    def request(self, dst: str, body: Any, callback: ResponseCallback, timeout_ms: int | None = None) -> int:
        """Send ``body`` to ``dst``; ``callback(response_or_None)`` runs once. Return the message id."""
        m = self._net.send(self.name, dst, body, "request")
        timer = self.set_timer(timeout_ms, self._timed_out, m.msg_id) if timeout_ms is not None else None
        self._pending[m.msg_id] = (callback, timer)
        return m.msg_id

    def respond(self, request: Message, body: Any) -> None:
        """Answer a request."""
        self._net.send(self.name, request.src, body, "response", request.msg_id)

    def send_oneway(self, dst: str, body: Any) -> None:
        """Send a message that expects no answer."""
        self._net.send(self.name, dst, body, "oneway")

    def cancel_request(self, msg_id: int) -> None:
        """Forget a pending request: a late response to it will be ignored."""
        entry = self._pending.pop(msg_id, None)
        if entry is not None and entry[1] is not None:
            entry[1].cancel()

    def handle(self, message: Message) -> None:
        """Dispatch a response to its callback or a request to its handler."""
        if message.kind == "response":
            entry = self._pending.pop(message.correlation_id, None)
            if entry is None:
                return  # a late answer to a request we gave up on
            callback, timer = entry
            if timer is not None:
                timer.cancel()
            callback(message.body)
            return
        handler = self.handlers.get(type(message.body))
        if handler is not None:
            handler(message)

    def _timed_out(self, msg_id: int) -> None:
        entry = self._pending.pop(msg_id, None)
        if entry is not None:
            entry[0](None)

    def on_connection_refused(self, message: Message) -> None:
        """The peer's process is dead: fail the request now instead of waiting for its timeout."""
        entry = self._pending.pop(message.msg_id, None)
        if entry is not None:
            callback, timer = entry
            if timer is not None:
                timer.cancel()
            callback(None)

    def on_crash(self) -> None:
        """Forget every pending request."""
        self._pending.clear()
