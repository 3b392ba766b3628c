"""A message sequence chart of one transaction, read from the trace.

Role
----
The transaction protocol is a conversation between a producer, its transaction coordinator, the
group coordinator (when consumer offsets join the transaction) and the leaders of the partitions it
writes. :func:`transaction_chart` picks one transaction of a transactional id out of a run's trace
and returns it as frozen values: the lanes (one per node), the arrows (one per message, in trace
order) and the state notes on the lanes. ``widgets.sequence_svg`` draws it as a space-time
(Lamport) diagram; tests and notebooks can read it as text with :meth:`SequenceChart.text`.

Which transaction
-----------------
The transactions of an id are its ``txn.begin`` events, on whichever producer node emitted them
(two producers may share an id: the newer fences the older). ``occurrence`` indexes them in trace
order, negative from the end. A transaction's span on its producer node starts just after that
node's previous ``txn.commit``/``txn.abort``, or at the node's first event for its first
transaction (so the FindCoordinator and InitProducerId of ``init_transactions`` belong to it), and
ends at its own ``txn.commit``/``txn.abort``; one that never ended (``outcome`` None) lasts until
the id's next ``txn.begin`` on any node, or the end of the trace.

Which messages belong
---------------------
- requests the producer sends in that span: FindCoordinator, InitProducerId, AddPartitionsToTxn
  (transaction version 1), Produce, AddOffsetsToTxn, TxnOffsetCommit, EndTxn;
- AddPartitionsToTxn a partition leader sends to verify a produce (KIP-890) for this transactional
  id and producer id, in that span;
- WriteTxnMarkers for this producer id that the coordinator sends between the PrepareCommit or
  PrepareAbort write that follows the transaction's begin (the producer's EndTxn, or the
  coordinator's own abort of a fenced or timed-out transaction, which may come before it) and
  the ``txn.complete`` that ends it (or the id's next ``txn.begin``, or the end of the trace);
- the responses to all of those, whenever they come.

Fetches, heartbeats, metadata and replication are left out. Notes: the producer's ``txn.*``,
``producer.epoch_bump`` and ``produce.failed`` events; the coordinator's ``txn_state.write`` of
this id (a CompleteCommit/CompleteAbort only after this transaction's prepare, so the previous
transaction's late completion is not shown) and its ``txn.complete``; ``marker.append`` and
``marker.rejected`` on the leaders after that prepare; on the group coordinator
``txn_offset_commit.pending`` in the span and ``txn_offset_commit.completed`` after the prepare.

Invariants
----------
- Pure: reads trace events only, never an engine object; equal events give an equal chart.
- Arrows are in the order of their send events, notes in trace order; every arrow's ends and
  every note's node are lanes.
- Lanes are in a fixed order: the producer, then transaction coordinators, then group
  coordinators (each in order of first appearance), then every other node in natural name order
  (``broker-2`` before ``broker-10``).

Limits
------
The trace does not record which request a response answers (a response gets a new message id).
A response is paired with the oldest request of the same API on the reverse connection that
reached the responder, is not answered yet and was not lost to a crash of the responder (Produce
also by partition). A response event that carries ``re=<request id>`` is paired exactly instead.
The order rule is exact when a broker answers each connection in order; the one exception met
(checked against the network's own correlation ids over seeded runs with drops and crashes) is a
leader verifying two partitions of one transaction at once: the coordinator answers the second
at once (CONCURRENT_TRANSACTIONS) before the first, and the two AddPartitionsToTxn replies get
each other's ``reply_to`` (both belong to the chart either way).

Messages are matched to a transaction by producer id: under KIP-890 a fenced producer keeps its
id, so a request of that zombie that reaches a broker during its successor's transaction is drawn
in the successor's chart.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from engine import trace_events as ev
from engine.args import check_int, check_str
from engine.sim.trace import TraceEvent

__all__ = ["APIS", "PRODUCER_APIS", "Arrow", "Lane", "Note", "SequenceChart", "transaction_chart"]


#: Every API a chart may hold, in the order a legend lists them.
APIS = (
    "FindCoordinator",
    "InitProducerId",
    "AddPartitionsToTxn",
    "Produce",
    "AddOffsetsToTxn",
    "TxnOffsetCommit",
    "EndTxn",
    "WriteTxnMarkers",
)
#: The requests a transactional producer sends for its transaction (all but the coordinator's markers).
PRODUCER_APIS = frozenset(APIS) - {"WriteTxnMarkers"}
_PRODUCER_NOTES = frozenset(
    (ev.TXN_INIT, ev.TXN_BEGIN, ev.TXN_COMMIT, ev.TXN_ABORT, ev.PRODUCER_EPOCH_BUMP, ev.PRODUCE_FAILED)
)
_ENDS = (ev.TXN_COMMIT, ev.TXN_ABORT)
_PREPARES = ("PREPARE_COMMIT", "PREPARE_ABORT")


@dataclasses.dataclass(frozen=True, slots=True)
class Lane:
    """One node of the chart: a vertical line in the diagram."""

    node: str
    """The trace's node name (``producer-1``, ``broker-3``)."""
    roles: tuple[str, ...]
    """What the node does in this transaction (``producer``, ``transaction coordinator``, ...)."""
    partitions: tuple[str, ...]
    """The partitions it received Produce or WriteTxnMarkers for, as their leader (``out-0``)."""

    def describe(self) -> tuple[str, ...]:
        """Return its roles, then ``leader <partitions>`` when it leads any (``("broker",)`` when neither)."""
        leads = ("leader " + ", ".join(self.partitions),) if self.partitions else ()
        return (*self.roles, *leads) or ("broker",)


@dataclasses.dataclass(frozen=True, slots=True)
class Arrow:
    """One message between two lanes."""

    send_index: int
    """Trace index of the ``send`` event."""
    end_index: int | None
    """Trace index of its ``deliver`` or ``drop`` event; None while it is in flight at the trace's end."""
    msg_id: int
    """The network's message id (``id=`` in the short log)."""
    src: str
    """Sending node."""
    dst: str
    """Receiving node."""
    kind: str
    """``request`` or ``response``."""
    msg: str
    """The body's class name (``ProduceRequest``)."""
    api: str
    """The API, the class name without Request/Response (``Produce``)."""
    label: str
    """A short label (``Produce out-0 seq 0..0``)."""
    send_ms: int
    """Simulated time of the send."""
    end_ms: int | None
    """Simulated time of its deliver or drop event; None while in flight."""
    deliver_ms: int | None
    """Simulated time of the delivery; None when dropped or in flight."""
    drop_reason: str | None
    """Why it was dropped (``rule 1``, ``partitioned``, ``node down`` ...); None otherwise."""
    reply_to: int | None
    """For a response: the ``send_index`` of the request it answers."""
    detail: tuple[tuple[str, Any], ...]
    """The send event's detail pairs (``to``, ``id``, ``msg``, then the body's own)."""

    @property
    def dropped(self) -> bool:
        """Return True when the network dropped the message."""
        return self.drop_reason is not None

    def short(self) -> str:
        """Return one line: send index and time, ends, label and fate."""
        if self.drop_reason is not None:
            fate = f"dropped at {self.end_ms} ms ({self.drop_reason})"
        elif self.deliver_ms is None:
            fate = "in flight"
        else:
            fate = f"delivered at {self.deliver_ms} ms"
        return f"#{self.send_index:<5} {self.send_ms:>7} ms  {self.src} -> {self.dst}  {self.label}  [{fate}]"


@dataclasses.dataclass(frozen=True, slots=True)
class Note:
    """A state event drawn as a small box on a lane."""

    index: int
    """Trace index."""
    time_ms: int
    """Simulated time."""
    node: str
    """The lane it sits on."""
    name: str
    """The trace event's name (``txn_state.write``)."""
    text: str
    """What the box says (``PrepareCommit``, ``COMMIT out-0@1``)."""
    detail: tuple[tuple[str, Any], ...]
    """The event's detail pairs."""


@dataclasses.dataclass(frozen=True, slots=True)
class SequenceChart:
    """One transaction as lanes, arrows and notes (see the module docstring)."""

    transactional_id: str
    """The transactional id asked for."""
    occurrence: int
    """Which of its transactions this is, counted from 0."""
    count: int
    """How many transactions of that id the trace holds."""
    producer: str
    """The producer node that ran it."""
    producer_id: int | None
    """The producer id from its ``txn.init``; None when the trace does not hold it."""
    outcome: str | None
    """``COMMIT``, ``ABORT``, or None when it had not ended when the trace ends."""
    first_index: int
    """Trace index where its span on the producer starts."""
    last_index: int
    """Trace index of its end event (or of the last event of its span)."""
    lanes: tuple[Lane, ...]
    """The lanes in drawing order."""
    arrows: tuple[Arrow, ...]
    """The messages in the order they were sent."""
    notes: tuple[Note, ...]
    """State notes in trace order."""

    def lane_index(self, node: str) -> int:
        """Return the position of ``node``'s lane."""
        for i, lane in enumerate(self.lanes):
            if lane.node == node:
                return i
        msg = f"no lane for {node!r}; the lanes are {', '.join(lane.node for lane in self.lanes)}"
        raise ValueError(msg)

    def text(self) -> str:
        """Return the chart as text: a heading, the lanes, then one line per arrow and note, in trace order."""
        outcome = self.outcome or "not ended"
        heading = f"transaction {self.occurrence + 1} of {self.count} of {self.transactional_id!r}"
        lines = [
            f"{heading} on {self.producer} (pid {self.producer_id}): {outcome}",
            "lanes: " + " | ".join(f"{lane.node} ({'; '.join(lane.describe())})" for lane in self.lanes),
        ]
        rows = [(a.send_index, a.short()) for a in self.arrows]
        rows += [(n.index, f"#{n.index:<5} {n.time_ms:>7} ms  [{n.node}] {n.text}") for n in self.notes]
        lines += [line for _, line in sorted(rows)]
        return "\n".join(lines)


# -- picking the transaction --------------------------------------------------------------------


def transaction_chart(trace_events: Iterable[TraceEvent], transactional_id: str, occurrence: int = -1) -> SequenceChart:
    """Return the sequence chart of one transaction of ``transactional_id`` (the last by default).

    ``trace_events`` is ``cluster.world.trace`` or any iterable of its events, in trace order.
    Raises ValueError naming the transactional ids present when ``transactional_id`` began no
    transaction, and saying how many there are when ``occurrence`` is out of range.
    """
    check_str(transactional_id, "transactional_id")
    check_int(occurrence, "occurrence")
    events = list(trace_events)
    begins = [e for e in events if e.name == ev.TXN_BEGIN and e.kind == "state" and e.get("txn_id") == transactional_id]
    count = len(begins)
    if not count:
        raise ValueError(_unknown_id_message(events, transactional_id))
    if not -count <= occurrence < count:
        msg = (
            f"transactional id {transactional_id!r} has {count} transaction(s) in the trace; occurrence must be "
            f"in {-count}..{count - 1} (negative counts from the end), got {occurrence}"
        )
        raise ValueError(msg)
    position = occurrence % count
    span = _Span.find(events, begins[position], transactional_id)
    return _Builder(events, span).chart(position, count)


def _unknown_id_message(events: list[TraceEvent], transactional_id: str) -> str:
    ids = sorted({str(e.get("txn_id")) for e in events if e.kind == "state" and e.name in (ev.TXN_INIT, ev.TXN_BEGIN)})
    initialised = any(e.name == ev.TXN_INIT and e.get("txn_id") == transactional_id for e in events)
    if initialised:
        return f"transactional id {transactional_id!r} ran init_transactions() but began no transaction in the trace"
    present = ", ".join(repr(i) for i in ids) if ids else "none"
    return f"no transaction of transactional id {transactional_id!r} in the trace; transactional ids present: {present}"


@dataclasses.dataclass(frozen=True, slots=True)
class _Span:
    """Where one transaction lies in the trace (indexes are trace indexes)."""

    transactional_id: str
    producer: str
    begin: int
    first: int
    last: int
    outcome: str | None
    next_begin: int
    producer_id: int | None

    @classmethod
    def find(cls, events: list[TraceEvent], begin: TraceEvent, tid: str) -> _Span:
        node = begin.node
        first = next(e.index for e in events if e.node == node)
        end: TraceEvent | None = None
        next_begin: int | None = None
        pid = None
        for e in events:
            if e.kind != "state" or e.get("txn_id") != tid or e.index == begin.index:
                continue
            mine = e.node == node
            if e.index < begin.index and mine and e.name in _ENDS:
                first = e.index + 1
            elif e.index < begin.index and mine and e.name == ev.TXN_INIT:
                pid = e.get("pid")
            elif e.index > begin.index and e.name == ev.TXN_BEGIN and next_begin is None:
                next_begin = e.index
            elif e.index > begin.index and mine and e.name in _ENDS and end is None and next_begin is None:
                end = e
        limit = next_begin if next_begin is not None else events[-1].index + 1
        if end is None:  # not ended: it lasts until the id's next transaction begins, or the trace ends
            return cls(tid, node, begin.index, first, limit - 1, None, limit, pid)
        outcome = "COMMIT" if end.name == ev.TXN_COMMIT else "ABORT"
        return cls(tid, node, begin.index, first, end.index, outcome, limit, pid)


# -- building the chart ---------------------------------------------------------------------------


def _api(msg: str) -> str:
    for suffix in ("Request", "Response"):
        if msg.endswith(suffix):
            return msg[: -len(suffix)]
    return msg


class _Builder:
    """One pass over the trace that pairs messages, then the selection rules of the module docstring."""

    def __init__(self, events: list[TraceEvent], span: _Span) -> None:
        self.events = events
        self.span = span
        self.sends: dict[int, TraceEvent] = {}
        self.ends: dict[int, TraceEvent] = {}
        self.reply_to: dict[int, int] = {}
        self._pair_messages()

    def _pair_messages(self) -> None:
        pending: dict[tuple[str, str, str], list[TraceEvent]] = {}
        for e in self.events:
            kind = e.kind
            if kind == "send":
                api = _api(str(e.get("msg")))
                if api not in APIS:
                    continue
                self.sends[e.get("id")] = e
                if e.name == "response":
                    self._pair_response(pending.get((e.node, str(e.get("to")), api)), e)
            elif kind in ("deliver", "drop"):
                msg_id = e.get("id")
                if msg_id in self.sends and msg_id not in self.ends:
                    self.ends[msg_id] = e
                if kind == "deliver" and e.name == "request" and msg_id in self.sends:
                    key = (e.node, str(e.get("from")), _api(str(e.get("msg"))))
                    pending.setdefault(key, []).append(self.sends[msg_id])
            elif kind == "fault" and e.name == ev.CRASH:  # a crashed responder never answers what it had
                for key in [k for k in pending if k[0] == e.node]:
                    del pending[key]

    def _pair_response(self, waiting: list[TraceEvent] | None, response: TraceEvent) -> None:
        if not waiting:
            return
        exact, tp = response.get("re"), response.get("tp")
        for i, request in enumerate(waiting):
            if exact is not None:
                match = request.get("id") == exact
            else:
                match = tp is None or request.get("tp") == tp
            if match:
                self.reply_to[response.get("id")] = request.get("id")
                del waiting[i]
                return

    # -- selection --------------------------------------------------------------------------

    def chart(self, position: int, count: int) -> SequenceChart:
        span = self.span
        own = self._producer_requests()
        pids = {span.producer_id} | {e.get("pid") for e in own if isinstance(e.get("pid"), int) and e.get("pid") >= 0}
        pids.discard(None)
        # The prepare is looked for from the begin, not from the producer's EndTxn: a coordinator
        # that aborts on its own (a newer instance fenced this one, or the timeout) writes
        # PrepareAbort before the zombie's late EndTxn, and its markers belong to this chart.
        prepare, complete = self._prepare_and_complete(span.begin)
        marker_end = complete if complete is not None else span.next_begin - 1
        chosen = own + self._broker_requests(pids, prepare, marker_end)
        chosen_ids = {e.get("id") for e in chosen}
        chosen += [self.sends[r] for r, q in self.reply_to.items() if q in chosen_ids]
        chosen.sort(key=lambda e: e.index)
        arrows = tuple(self._arrow(e) for e in chosen)
        note_end = marker_end if prepare is not None else span.last
        notes = tuple(self._notes(pids, prepare, complete, note_end, arrows))
        return SequenceChart(
            span.transactional_id,
            position,
            count,
            span.producer,
            span.producer_id,
            span.outcome,
            span.first,
            span.last,
            _lanes(span.producer, arrows, notes),
            arrows,
            notes,
        )

    def _producer_requests(self) -> list[TraceEvent]:
        span = self.span
        return [
            e
            for e in self.sends.values()
            if e.node == span.producer
            and e.name == "request"
            and span.first <= e.index <= span.last
            and _api(str(e.get("msg"))) in PRODUCER_APIS
        ]

    def _broker_requests(self, pids: set[Any], prepare: int | None, marker_end: int) -> list[TraceEvent]:
        span = self.span
        out = []
        for e in self.sends.values():
            if e.name != "request" or e.node == span.producer or e.get("pid") not in pids:
                continue
            msg = e.get("msg")
            verify = msg == "AddPartitionsToTxnRequest" and e.get("txn_id") == span.transactional_id
            in_span = span.first <= e.index <= span.last
            marker = msg == "WriteTxnMarkersRequest" and prepare is not None and prepare < e.index <= marker_end
            if (verify and in_span) or marker:
                out.append(e)
        return out

    def _prepare_and_complete(self, after: int) -> tuple[int | None, int | None]:
        """Return the trace indexes of the prepare write after ``after`` and of the ``txn.complete`` that follows it."""
        tid, limit = self.span.transactional_id, self.span.next_begin
        prepare = complete = None
        for e in self.events:
            if e.index <= after or e.index >= limit or e.kind != "state" or e.get("txn_id") != tid:
                continue
            if prepare is None and e.name == ev.TXN_STATE_WRITE and e.get("state") in _PREPARES:
                prepare = e.index
            elif prepare is not None and e.name == ev.TXN_COMPLETE:
                complete = e.index
                break
        return prepare, complete

    def _arrow(self, e: TraceEvent) -> Arrow:
        msg_id = e.get("id")
        end = self.ends.get(msg_id)
        delivered = end is not None and end.kind == "deliver"
        request = self.reply_to.get(msg_id) if e.name == "response" else None
        return Arrow(
            e.index,
            end.index if end is not None else None,
            msg_id,
            e.node,
            str(e.get("to")),
            e.name,
            str(e.get("msg")),
            _api(str(e.get("msg"))),
            _label(e, self.span.producer),
            e.time_ms,
            end.time_ms if end is not None else None,
            end.time_ms if delivered else None,
            str(end.get("reason")) if end is not None and not delivered else None,
            self.sends[request].index if request is not None else None,
            e.detail,
        )

    def _notes(
        self, pids: set[Any], prepare: int | None, complete: int | None, note_end: int, arrows: tuple[Arrow, ...]
    ) -> list[Note]:
        span, tid = self.span, self.span.transactional_id
        marker_tps = {(a.dst, _detail(a.detail, "tp")) for a in arrows if a.msg == "WriteTxnMarkersRequest"}
        out = []
        for e in self.events:
            if e.kind != "state" or e.index < span.first or e.index > note_end:
                continue
            name = e.name
            if e.node == span.producer and name in _PRODUCER_NOTES and e.index <= span.last:
                keep = e.get("txn_id") in (None, tid)
            elif name == ev.TXN_STATE_WRITE:
                after_prepare = prepare is not None and e.index >= prepare
                keep = e.get("txn_id") == tid and (after_prepare or not str(e.get("state")).startswith("COMPLETE"))
            elif name == ev.TXN_COMPLETE:
                keep = e.index == complete
            elif name in (ev.MARKER_APPEND, ev.TXN_OFFSET_COMMIT_COMPLETED):  # written by this prepare's markers
                keep = e.get("pid") in pids and prepare is not None and e.index > prepare
            elif name == ev.TXN_OFFSET_COMMIT_PENDING:
                keep = e.get("pid") in pids and e.index <= span.last
            else:
                keep = name == ev.MARKER_REJECTED and (e.node, str(e.get("tp"))) in marker_tps
            if keep:
                out.append(Note(e.index, e.time_ms, e.node, name, _note_text(e), e.detail))
        return out


# -- labels, notes and lanes ----------------------------------------------------------------------


def _detail(detail: tuple[tuple[str, Any], ...], key: str) -> Any:
    for k, v in detail:
        if k == key:
            return v
    return None


def _label(e: TraceEvent, producer: str) -> str:
    """Return an arrow's short label, from its send event's detail."""
    api = _api(str(e.get("msg")))
    if e.name == "response":
        return _response_label(e, api)
    if api == "Produce":
        seq, n = e.get("seq"), e.get("n")
        seqs = f" seq {seq}..{seq + n - 1}" if isinstance(seq, int) and isinstance(n, int) else ""
        return f"Produce {e.get('tp')}{seqs}"
    if api == "FindCoordinator":
        return f"FindCoordinator {'txn' if e.get('type') == 1 else 'group'} {e.get('key')}"
    if api == "AddPartitionsToTxn":
        verify = " verify" if e.node != producer else ""
        return f"AddPartitionsToTxn{verify} {','.join(map(str, e.get('tps') or ()))}"
    if api == "TxnOffsetCommit":
        return f"TxnOffsetCommit group {e.get('group')}"
    if api == "EndTxn":
        return f"EndTxn {e.get('result')}"
    if api == "WriteTxnMarkers":
        return f"WriteTxnMarkers {e.get('marker')} {e.get('tp')}"
    if api == "InitProducerId" and isinstance(e.get("pid"), int) and e.get("pid") >= 0:
        return f"InitProducerId pid {e.get('pid')} epoch {e.get('epoch')}"
    return api


def _response_label(e: TraceEvent, api: str) -> str:
    """``<api> ok ...`` or ``<api> <ERROR> ...``; ``<api> reply`` when the trace does not carry the error."""
    error = e.get("error")
    head = f"{api} reply" if error is None else f"{api} ok" if error == "NONE" else f"{api} {error}"
    extra = []
    if api == "Produce":
        extra.append(str(e.get("tp")))
        if error == "NONE":
            extra.append(f"offset {e.get('offset')}")
    elif api == "InitProducerId" and error == "NONE":
        extra.append(f"pid {e.get('pid')} epoch {e.get('epoch')}")
    elif api == "EndTxn" and error == "NONE" and isinstance(e.get("epoch"), int) and e.get("epoch") >= 0:
        extra.append(f"epoch {e.get('epoch')}")
    return " ".join([head, *extra])


def _camel(state: str) -> str:
    """``PREPARE_COMMIT`` -> ``PrepareCommit`` (Kafka's names for the coordinator states)."""
    return "".join(part.capitalize() for part in state.split("_"))


def _note_text(e: TraceEvent) -> str:
    name = e.name
    if name == ev.TXN_STATE_WRITE:
        return _camel(str(e.get("state")))
    if name == ev.MARKER_APPEND:
        return f"{e.get('marker')} {e.get('tp')}@{e.get('offset')}"
    if name == ev.MARKER_REJECTED:
        return f"marker rejected {e.get('tp')} {e.get('error')}"
    if name == ev.TXN_COMPLETE:
        return f"complete: {e.get('result')}"
    if name == ev.TXN_INIT:
        return f"init pid {e.get('pid')} epoch {e.get('epoch')}"
    if name == ev.TXN_BEGIN:
        return f"begin (epoch {e.get('epoch')})"
    if name in _ENDS:
        return f"{name.removeprefix('txn.')} (epoch {e.get('epoch')})"
    if name == ev.PRODUCER_EPOCH_BUMP:
        return f"epoch bump to {e.get('epoch')}"
    if name == ev.PRODUCE_FAILED:
        return f"failed {e.get('tp')} {e.get('error')}"
    if name == ev.TXN_OFFSET_COMMIT_PENDING:
        return "offsets pending " + ",".join(map(str, e.get("offsets") or ()))
    if name == ev.TXN_OFFSET_COMMIT_COMPLETED:
        return f"offsets {e.get('result')}"
    return name


_COORDINATOR_APIS = frozenset({"InitProducerId", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn"})


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _lanes(producer: str, arrows: tuple[Arrow, ...], notes: tuple[Note, ...]) -> tuple[Lane, ...]:
    """Return the lanes in the fixed order of the module docstring."""
    roles: dict[str, list[str]] = {producer: ["producer"]}
    partitions: dict[str, list[str]] = {}
    order: list[str] = [producer]

    def add(node: str, role: str | None = None, partition: str | None = None) -> None:
        if node not in roles:
            roles[node] = []
            order.append(node)
        if role is not None and role not in roles[node]:
            roles[node].append(role)
        if partition is not None and partition not in partitions.setdefault(node, []):
            partitions[node].append(partition)

    for a in arrows:
        add(a.src)
        add(a.dst)
        if a.kind != "request":
            continue
        if a.api in _COORDINATOR_APIS:
            add(a.dst, "transaction coordinator")
        elif a.api == "TxnOffsetCommit":
            add(a.dst, f"group coordinator {_detail(a.detail, 'group')}")
        elif a.api in ("Produce", "WriteTxnMarkers"):
            add(a.dst, partition=str(_detail(a.detail, "tp")))
            if a.api == "WriteTxnMarkers":
                add(a.src, "transaction coordinator")
    for n in notes:
        add(n.node, "transaction coordinator" if n.name in (ev.TXN_STATE_WRITE, ev.TXN_COMPLETE) else None)

    def rank(node: str) -> tuple[Any, ...]:
        if node == producer:
            return (0,)
        for level, prefix in ((1, "transaction coordinator"), (2, "group coordinator")):
            if any(r.startswith(prefix) for r in roles[node]):
                return (level, order.index(node))
        return (3, _natural(node))

    return tuple(Lane(node, tuple(roles[node]), tuple(partitions.get(node, ()))) for node in sorted(order, key=rank))
