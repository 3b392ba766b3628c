"""The simulated network: named nodes, per-connection FIFO, a latency model, and message faults.

Invariants
----------
- Messages on one connection ``(src, dst)`` are delivered in the order sent (TCP-like), unless
  a fault rule explicitly delays or holds one message, which is how a test reorders them.
- There is no order across connections: a retry on another connection may overtake an old
  request (what makes KAFKA-17754 possible).
- A partition is checked at send *and* at delivery: a message in flight when a partition starts
  is lost, as on a broken connection.
- A message belongs to the connection between the *incarnations* of its two ends at send time.
  If either end crashed since (even if it restarted), the message is dropped with reason
  ``connection reset``: a restarted broker never handles a request sent to its previous life,
  and a restarted client never sees a response meant for its previous life. A *paused* node
  keeps its incarnation, so messages to a zombie are delivered when it resumes.
- A *process* crash closes the dead process's connections, as the operating system does with
  its sockets: every node with a connection open to it learns one hop later (a ``disconnect``
  event at that node, whose in-flight requests then fail), and a request that reaches a dead
  process is refused one hop later (``refused``, a TCP RST). A lost *machine*
  (``Node.machine_lost``, the power-loss crash), a partition and a paused peer are silent: the
  sender learns nothing and its request times out.
- Every send, delivery and drop is a trace event.

Faults as data
--------------
A :class:`MessageRule` matches messages by source, destination, kind (``request``,
``response``, ``oneway``) and body type, optionally skipping the first ``skip`` matches and
acting on the next ``count`` (``None``: all). Actions:

``drop``       the message is lost. A rule on ``kind="response"`` is a *lost ack*: the handler
               already ran on the destination, only the answer is lost.
``delay``      the message is delivered ``delay_ms`` late, out of FIFO order.
``hold``       the message is kept until :meth:`Network.release` (then delivered).
``duplicate``  the message is delivered twice.

Partitions and clogs work on sets of node names: :meth:`Network.partition` blocks both
directions, ``one_way=True`` only ``a → b``; a clog queues messages instead of dropping them and
:meth:`Network.unclog` releases them in order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.sim import events
from engine.sim.node import NodeStatus
from engine.sim.rng import randbelow

if TYPE_CHECKING:
    from engine.sim.world import World


class Message(NamedTuple):
    """One message on the simulated network: the envelope of a send (``correlation_id`` pairs a reply).

    Not the record a consumer reads (:class:`engine.client.message.Message`, confluent-kafka's);
    the two only share a name. ``body`` is what is carried (a request or response of
    :mod:`engine.protocol`, or anything else: the world knows nothing about Kafka).
    """

    msg_id: int
    src: str
    dst: str
    kind: str
    body: Any
    correlation_id: int
    src_incarnation: int = 0
    dst_incarnation: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class NetworkOptions:
    """The latency model: a uniform integer delay in ``[latency_ms_min, latency_ms_max]``."""

    latency_ms_min: int = 1
    latency_ms_max: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.latency_ms_min <= self.latency_ms_max:
            lo, hi = self.latency_ms_min, self.latency_ms_max
            msg = f"need 0 <= latency_ms_min <= latency_ms_max, got {lo}, {hi}"
            raise ValueError(msg)


@dataclasses.dataclass(frozen=True)
class MessageRule:
    """A message fault: which messages it matches and what happens to them (see module doc)."""

    action: str
    src: str | None = None
    dst: str | None = None
    kind: str | None = None
    body_type: str | None = None
    skip: int = 0
    count: int | None = 1
    delay_ms: int = 0
    where: Callable[[Message], bool] | None = dataclasses.field(default=None, compare=False, repr=False)

    ACTIONS = ("drop", "delay", "hold", "duplicate")
    KINDS = ("request", "response", "oneway")
    #: The fields a rule is built from, besides ``action``.
    FIELDS = ("src", "dst", "kind", "body_type", "skip", "count", "delay_ms", "where")

    def __post_init__(self) -> None:
        if self.action not in self.ACTIONS:
            msg = f"unknown message fault action {self.action!r}; use one of {', '.join(self.ACTIONS)}"
            raise ValueError(msg)
        if self.kind is not None and self.kind not in self.KINDS:
            msg = f"unknown message kind {self.kind!r}; use one of {', '.join(self.KINDS)}, or None for any"
            raise ValueError(msg)
        for name in ("src", "dst", "body_type"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                msg = f"{name} must be a node name or type name (str) or None, got {value!r}"
                raise TypeError(msg)
        if not _is_int(self.skip) or self.skip < 0:
            msg = f"skip must be an int >= 0 (matches to let through first), got {self.skip!r}"
            raise ValueError(msg)
        if self.count is not None and (not _is_int(self.count) or self.count < 1):
            msg = f"count must be an int >= 1 (matches to act on), or None for every match; got {self.count!r}"
            raise ValueError(msg)
        if not _is_int(self.delay_ms) or self.delay_ms < 0:
            msg = f"delay_ms must be an int >= 0, got {self.delay_ms!r}"
            raise ValueError(msg)
        if self.where is not None and not callable(self.where):
            msg = f"where must be a function of the message, or None; got {self.where!r}"
            raise TypeError(msg)

    def matches(self, m: Message) -> bool:
        """Return True when the message fits every given field."""
        return (
            (self.src is None or self.src == m.src)
            and (self.dst is None or self.dst == m.dst)
            and (self.kind is None or self.kind == m.kind)
            and (self.body_type is None or self.body_type == type(m.body).__name__)
            and (self.where is None or self.where(m))
        )


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


_new_message = tuple.__new__

#: The detail keys of a delivery (:meth:`Network._deliver`), given once per event shape.
_DELIVER_KEYS = ("from", "id", "msg")
#: A send's detail keys: ``("to", "id", "msg")``, then the body's own (``trace_fields``); made once per body shape.
_send_keys: dict[tuple[str, ...], tuple[str, ...]] = {}


_DOWN = NodeStatus.DOWN
_UP = NodeStatus.UP


class _ActiveRule:
    __slots__ = ("remaining", "rule", "rule_id", "skip_left")

    def __init__(self, rule_id: int, rule: MessageRule) -> None:
        self.rule_id = rule_id
        self.rule = rule
        self.skip_left = rule.skip
        self.remaining = rule.count


def _body_detail(body: Any) -> tuple[tuple[str, Any], ...]:
    detail = getattr(body, "trace_detail", None)
    return detail() if detail is not None else ()


class Network:
    """Connections between the world's nodes; see the module docstring."""

    def __init__(self, world: World, options: NetworkOptions) -> None:
        self.world = world
        self.options = options
        self._rng = world.rng.stream("network")
        self._sched = world.scheduler
        self._trace = world.trace
        self._last_due: dict[tuple[str, str], int] = {}
        self._next_msg_id = 0
        self._rules: list[_ActiveRule] = []
        self._next_rule_id = 0
        self.held: dict[int, Message] = {}
        self._held_by_rule: dict[int, list[int]] = {}
        self.blocked: set[tuple[str, str]] = set()
        #: nodes cut off from every other node, present or created later (``isolate``)
        self.isolated: set[str] = set()
        self.clogged: set[tuple[str, str]] = set()
        self._clog_queue: dict[tuple[str, str], list[Message]] = {}
        self._fixed = options.latency_ms_min == options.latency_ms_max
        self._fixed_ms = options.latency_ms_min
        #: the latency draw (:meth:`_latency`): ``min`` + a value below ``span``
        self._latency_min = options.latency_ms_min
        self._latency_span = options.latency_ms_max - options.latency_ms_min + 1
        self._nodes = world.nodes
        self._emit = world.trace.emit
        self._emit_fields = world.trace.emit_fields
        self.sent = 0
        self.delivered = 0
        self.dropped = 0

    # -- sending ----------------------------------------------------------------------------

    def send(
        self, src: str, dst: str, body: Any, kind: str = "oneway", correlation_id: int = 0, msg_id: int = 0
    ) -> Message:
        """Send ``body`` from ``src`` to ``dst``; return the message (its id names it in faults).

        ``msg_id``: an id taken earlier with :meth:`reserve_id` (a request that waited for its
        connection's reconnect backoff keeps the id its sender already knows it by).
        """
        if not msg_id:
            msg_id = self._next_msg_id = self._next_msg_id + 1
        nodes = self._nodes
        s, d = nodes.get(src), nodes.get(dst)
        m = _new_message(
            Message,
            (
                msg_id,
                src,
                dst,
                kind,
                body,
                correlation_id,
                s.incarnation if s is not None else 0,
                d.incarnation if d is not None else 0,
            ),
        )
        self.sent += 1
        fields = getattr(body, "trace_fields", None)
        if fields is not None:  # the hot messages: keys and values apart (Trace.emit_fields)
            keys, values = fields()
            full = _send_keys.get(keys) or _send_keys.setdefault(keys, ("to", "id", "msg", *keys))
            self._emit_fields(src, "send", kind, full, dst, msg_id, type(body).__name__, *values)
        else:
            name = type(body).__name__
            self._emit(src, "send", kind, ("to", dst), ("id", msg_id), ("msg", name), *_body_detail(body))
        if (self.blocked or self.isolated) and self._cut(src, dst):
            self._drop(m, "partitioned")
            return m
        if self._rules:
            rule = self._match(m)
            if rule is not None:
                self._apply_rule(rule, m)
                return m
        if self._fixed:
            # Fixed latency: every message of a connection is due ``latency`` after its send, so
            # sends in order are due in order and the FIFO bookkeeping has nothing to enforce.
            sched = self._sched
            sched.call_at_fast(sched.now_ms + self._fixed_ms, self._deliver, m)
            return m
        self._schedule(m)
        return m

    def reserve_id(self) -> int:
        """Return a new message id for a message that will be sent later (see :meth:`send`)."""
        self._next_msg_id += 1
        return self._next_msg_id

    def _latency(self) -> int:
        """Return one message's latency: uniform over ``[latency_ms_min, latency_ms_max]``.

        The values are ``randint(min, max)``'s from the ``network`` stream, drawn by
        :func:`~engine.sim.rng.randbelow` (it runs for every message, at a third of the cost).
        """
        if self._fixed:
            return self._fixed_ms
        return self._latency_min + randbelow(self._rng, self._latency_span)

    def _schedule(self, m: Message, extra_ms: int = 0, fifo: bool = True) -> None:
        due = self._sched.now_ms + self._latency() + extra_ms
        if fifo and not self._fixed:
            # With a fixed latency a FIFO message is never due before an earlier one of its
            # connection (only delayed messages, which skip FIFO, are due later than that).
            key = (m.src, m.dst)
            last = self._last_due.get(key, 0)
            if due < last:
                due = last
            self._last_due[key] = due
        self._sched.call_at_fast(due, self._deliver, m)

    def _deliver(self, m: Message) -> None:
        if self.blocked or self.isolated or self.clogged:
            key = (m.src, m.dst)
            if self._cut(m.src, m.dst):
                self._drop(m, "partitioned")
                return
            if key in self.clogged:
                self._clog_queue.setdefault(key, []).append(m)
                return
        nodes = self._nodes
        node = nodes.get(m.dst)
        if node is None:
            self._drop(m, "no such node")
            return
        if node.status is _DOWN:
            self._drop(m, "node down")
            if not node.machine_lost:
                self._refuse(m)
            return
        if node.incarnation != m.dst_incarnation:
            self._drop(m, "connection reset")
            self._refuse(m)
            return
        src = nodes.get(m.src)
        if src is not None and src.incarnation != m.src_incarnation:
            self._drop(m, "connection reset")
            return
        self.delivered += 1
        self._emit_fields(m.dst, "deliver", m.kind, _DELIVER_KEYS, m.src, m.msg_id, type(m.body).__name__)
        if node.status is _UP:
            node.handle(m)  # what Node.deliver does for a node that is up, one call shorter
        else:
            node.deliver(m)

    def _refuse(self, m: Message) -> None:
        """A request to a dead process is refused: its sender learns it one hop later (TCP RST).

        A partitioned or paused peer, or a lost machine, gives no such signal; the sender can
        only time out.
        """
        if m.kind == "request":
            self._sched.call_at_fast(self._sched.now_ms + self._latency(), self._refused, m)

    def _refused(self, m: Message) -> None:
        src = self._nodes.get(m.src)
        if src is None or src.status is not _UP or src.incarnation != m.src_incarnation:
            return
        hook = getattr(src, "on_connection_refused", None)
        if hook is not None:
            self._trace.emit(m.src, "drop", events.REFUSED, ("to", m.dst), ("id", m.msg_id))
            hook(m)

    def close_connections(self, name: str) -> None:
        """The process of node ``name`` died: every node with a connection to it learns one hop later.

        Each peer whose ``connected_to(name)`` is true gets ``on_peer_disconnect(name)`` after one
        latency draw (the FIN or RST travelling back), traced as ``disconnect`` at the peer; a
        paused peer learns when it resumes, a peer that crashed meanwhile never does.
        """
        for peer in list(self._nodes.values()):
            if peer.name == name or peer.status is _DOWN:
                continue
            connected = getattr(peer, "connected_to", None)
            if connected is None or not connected(name):
                continue
            peer.call_after(self._latency(), self._disconnected, peer, name)

    def _disconnected(self, peer: Any, name: str) -> None:
        self._trace.emit(peer.name, "drop", events.DISCONNECT, ("from", name))
        peer.on_peer_disconnect(name)

    def _drop(self, m: Message, reason: str) -> None:
        self.dropped += 1
        self._trace.emit(m.dst, "drop", m.kind, ("from", m.src), ("id", m.msg_id), ("reason", reason))

    # -- rules ------------------------------------------------------------------------------

    def add_rule(self, rule: MessageRule) -> int:
        """Install a message fault; return its rule id."""
        self._next_rule_id += 1
        self._rules.append(_ActiveRule(self._next_rule_id, rule))
        self._trace.emit(
            "network",
            "fault",
            events.RULE_ADD,
            ("rule", self._next_rule_id),
            ("action", rule.action),
            ("src", rule.src),
            ("dst", rule.dst),
            ("kind", rule.kind),
            ("body", rule.body_type),
        )
        return self._next_rule_id

    def remove_rule(self, rule_id: int) -> bool:
        """Remove a message fault (its held messages stay held until released); return whether it was active."""
        before = len(self._rules)
        self._rules = [r for r in self._rules if r.rule_id != rule_id]
        return len(self._rules) != before

    def rule_was_added(self, rule_id: int) -> bool:
        """Return True if :meth:`add_rule` ever returned ``rule_id`` (the rule may have ended since)."""
        return 1 <= rule_id <= self._next_rule_id

    def active_rule_ids(self) -> list[int]:
        """Return the ids of the rules still matching messages, oldest first."""
        return [r.rule_id for r in self._rules]

    def _match(self, m: Message) -> _ActiveRule | None:
        for active in self._rules:
            if active.rule.matches(m):
                if active.skip_left > 0:
                    active.skip_left -= 1
                    continue
                if active.remaining is not None:
                    active.remaining -= 1
                    if active.remaining <= 0:
                        self._rules.remove(active)
                return active
        return None

    def _apply_rule(self, active: _ActiveRule, m: Message) -> None:
        rule = active.rule
        if rule.action == "drop":
            self._drop(m, f"rule {active.rule_id}")
        elif rule.action == "delay":
            self._trace.emit(m.dst, "fault", events.DELAY, ("id", m.msg_id), ("delay_ms", rule.delay_ms))
            self._schedule(m, extra_ms=rule.delay_ms, fifo=False)
        elif rule.action == "hold":
            self.held[m.msg_id] = m
            self._held_by_rule.setdefault(active.rule_id, []).append(m.msg_id)
            self._trace.emit(m.dst, "fault", events.HOLD, ("id", m.msg_id), ("rule", active.rule_id))
        else:  # duplicate
            self._trace.emit(m.dst, "fault", events.DUPLICATE, ("id", m.msg_id))
            self._schedule(m)
            self._schedule(m)

    def release(self, msg_id: int | None = None, *, rule_id: int | None = None) -> list[int]:
        """Deliver held messages: one by id, all of one rule, or (no argument) all; return their ids."""
        if msg_id is not None:
            ids = [msg_id] if msg_id in self.held else []
        elif rule_id is not None:
            ids = [i for i in self._held_by_rule.pop(rule_id, []) if i in self.held]
        else:
            ids = sorted(self.held)
            self._held_by_rule.clear()
        for i in ids:
            m = self.held.pop(i)
            self._trace.emit(m.dst, "fault", events.RELEASE, ("id", i))
            self._schedule(m, fifo=False)
        return ids

    # -- partitions and clogs ---------------------------------------------------------------

    def partition(self, a: Iterable[str], b: Iterable[str], *, one_way: bool = False) -> None:
        """Cut the links from every node of ``a`` to every node of ``b`` (and back unless one-way)."""
        a, b = sorted(a), sorted(b)
        for x in a:
            for y in b:
                self.blocked.add((x, y))
                if not one_way:
                    self.blocked.add((y, x))
        self._trace.emit("network", "fault", events.PARTITION, ("a", a), ("b", b), ("one_way", one_way))

    def isolate(self, name: str) -> None:
        """Cut a node off from every other node, both ways, nodes created later included."""
        self.isolated.add(name)
        others = [n for n in self.world.nodes if n != name]
        self._trace.emit("network", "fault", events.PARTITION, ("a", [name]), ("b", others), ("one_way", False))

    def _cut(self, src: str, dst: str) -> bool:
        """Return True when a partition or an isolation blocks messages from ``src`` to ``dst``."""
        return (src, dst) in self.blocked or src in self.isolated or dst in self.isolated

    def heal_partitions(self) -> None:
        """Remove every partition and isolation."""
        self.blocked.clear()
        self.isolated.clear()
        self._trace.emit("network", "fault", events.HEAL)

    def clog(self, a: Iterable[str], b: Iterable[str]) -> None:
        """Queue every message from ``a`` to ``b`` (and back) until :meth:`unclog`."""
        a, b = sorted(a), sorted(b)
        for x in a:
            for y in b:
                self.clogged.add((x, y))
                self.clogged.add((y, x))
        self._trace.emit("network", "fault", events.CLOG, ("a", a), ("b", b))

    def unclog(self, a: Iterable[str] | None = None, b: Iterable[str] | None = None) -> None:
        """Release clogged links (all of them when no sets are given), delivering queued messages."""
        if a is None or b is None:
            pairs = sorted(self.clogged)
        else:
            pairs = [(x, y) for x in sorted(a) for y in sorted(b)] + [(y, x) for x in sorted(a) for y in sorted(b)]
        self._trace.emit("network", "fault", events.UNCLOG, ("links", len(pairs)))
        for pair in pairs:
            self.clogged.discard(pair)
            for m in self._clog_queue.pop(pair, []):
                self._schedule(m)

    def heal(self) -> None:
        """Remove every network fault: partitions, clogs, rules; release held messages."""
        self._rules.clear()
        self.heal_partitions()
        self.unclog()
        self.release()
