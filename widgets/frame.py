"""The dashboard's frame: what its panels show, as flat values, and the diff a tick sends.

Role
----
The live dashboard's kernel side sends numbers and short strings, not HTML: :func:`frame` turns a
frozen board (:mod:`engine.views.board`) and the recent trace into one flat ``dict`` of keys to
JSON values (numbers, short strings, short lists of them), and :func:`diff` says which keys
changed since the frame last sent. The browser (``dashboard.js``) keeps the frame and draws every
panel from it; the static picture (:mod:`widgets.picture`) is still drawn in Python, from the
board, by :mod:`widgets.panels`.

Keys
----
==================  ============================================================================
key                 value
==================  ============================================================================
``o:b`` ``o:p``     the order of brokers (ids), partitions (``topic-p``), producers, consumers,
``o:pr`` ``o:c``    transactional ids, groups and log tails (``topic-p``)
``o:t`` ``o:g``
``o:l``
``ctl``             the controller's status
``b:ID``            ``[status, fenced, txn partitions, group partitions]``
``p:TP``            ``[topic, partition, leader, epoch, isr, replicas, leo, hw, lso, windows]``;
                    windows ``[[producer id, [[first seq, last seq, first offset]...]]...]``
``pr:NAME``         ``[status, tx id, producer id, epoch, state, error, partitions]``; a partition
                    ``[topic, p, next seq, last acked, [[first, last, attempts]...], queued]``
``c:NAME``          ``[isolation, [[topic, p, position]...]]``
``t:ID``            ``[coordinator, txn partition, producer id, epoch, state, pending, [[topic, p]...],
                    timeout, last update]``
``g:ID``            ``[coordinator, protocol, state, generation, target epoch, members, lag]``;
                    a member ``[name, epoch or None, assignment text]``
``lt:TP``           the log tail, packed: :data:`BATCH_FIELDS` per batch, oldest first, as little-endian
                    float64 (:func:`pack`); sent as a binary buffer of the message (:func:`message`),
                    so the many numbers of a busy log cost no JSON
``fr``              the keys of the rows changed lately (``broker:1``, ``partition:t-0`` ...)
``tl``              ``[first index, index, t0, t1]`` of the recent-events panel
``e:INDEX``         ``[kind, name, text]`` of one recent event
``fw``              the fault windows ``[[node, fault, start ms, end ms or None]...]``
``msc``             the sequence chart (see :class:`widgets.dashboard.Dashboard`)
``rtp``             the chosen partition of the reads panel (``""``: the first with records)
``st``              the status bar (:attr:`widgets.dashboard.Dashboard.status`)
==================  ============================================================================

Invariants
----------
* A row's values are computed once per row object: the recorder hands out the same row objects
  until a row changes, so a tick encodes only the rows that moved (:class:`Encoder`).
* Deterministic: the same board and events give the same frame.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from typing import Any

from engine import trace_events as ev
from engine.views.board import LOG_TAIL, BoardState
from engine.views.log_batches import KINDS as BATCH_KINDS
from engine.views.log_batches import batch_kinds
from widgets import panels

__all__ = ["BATCH_FIELDS", "KINDS", "Encoder", "diff", "message", "pack", "unpack"]

#: A batch's kind (:func:`engine.views.log_batches.summarize`) as a number in a packed tail.
KINDS = {kind: number for number, kind in enumerate(BATCH_KINDS)}
#: The numbers of one batch in a packed tail.
BATCH_FIELDS = ("base offset", "count", "kind", "producer id", "epoch", "base sequence or coordinator epoch")

_TXN_EVENTS = frozenset({ev.TXN_STATE_WRITE, ev.MARKER_APPEND, ev.LOG_LSO})


def _tp(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


class Encoder:
    """Encode boards into frames, each row once per row object (see the module docstring)."""

    def __init__(self) -> None:
        #: id(row) -> (row, its entries): the row is held so that its id is not reused
        self._rows: dict[int, tuple[Any, list[tuple[str, Any]]]] = {}
        #: trace index -> the event's entry in the recent-events panel
        self._events: dict[int, list[Any]] = {}
        #: topic-partition -> (the tail's batches, its entry)
        self._tails: dict[str, tuple[Any, tuple[str, bytes]]] = {}
        #: topic-partition -> the frame count when its tail was last packed; frames built so far
        self._packed_at: dict[str, int] = {}
        self._packs = 0
        #: How many changed tails the last frame left as they were (its ``tail_budget``).
        self.tails_behind = 0
        #: id(batch) -> (batch, kind, its numbers)
        self._batches: dict[int, tuple[Any, str, tuple[int, ...]]] = {}

    def _entries(self, row: Any, encode: Any) -> list[tuple[str, Any]]:
        have = self._rows.get(id(row))
        if have is not None and have[0] is row:
            return have[1]
        out = encode(row)
        self._rows[id(row)] = (row, out)
        return out

    def _tail(self, tail: Any) -> tuple[str, bytes]:
        """A tail's entry: its batches as :data:`BATCH_FIELDS` numbers each, packed (see the module docstring).

        A batch's numbers are worked out once per batch and kind (engine batches never change;
        a transaction's outcome does, when its marker comes).
        """
        batches = tail.batches
        tp = _tp(tail.topic, tail.partition)
        have = self._tails.get(tp)
        if have is not None and have[0] is batches:
            return have[1]
        rows = self._batches
        flat: list[int] = []
        for b, kind in zip(batches, batch_kinds(batches), strict=True):
            got = rows.get(id(b))
            if got is None or got[0] is not b or got[1] != kind:
                got = rows[id(b)] = (b, kind, _batch(b, kind))
            flat += got[2]
        entry = (f"lt:{tp}", pack(flat))
        self._tails[tp] = (batches, entry)
        self._packed_at[tp] = self._packs
        if len(rows) > 4 * LOG_TAIL * (len(self._tails) + 1):  # batches that left every tail: let them go
            held = {id(b) for t, _ in self._tails.values() for b in t}
            self._batches = {k: v for k, v in rows.items() if k in held}
        return entry

    def forget(self) -> None:
        """Drop the cache (another run is shown)."""
        self._rows.clear()
        self._events.clear()
        self._tails.clear()
        self._batches.clear()
        self._packed_at.clear()

    def frame(
        self,
        board: BoardState,
        events: Sequence[Any],
        faults: Sequence[Any],
        *,
        lines: int = panels.TIMELINE_LINES,
        tail_budget: int | None = None,
    ) -> dict[str, Any]:
        """Return the frame of ``board`` (the recent events read from ``events`` up to its index).

        ``tail_budget``: pack at most this many changed log tails (those packed longest ago
        first); the others keep the value last packed, and :attr:`tails_behind` says how many
        wait. None packs every changed tail.
        """
        out: dict[str, Any] = {}
        put = out.update
        for rows, encode in (
            (board.brokers, _broker),
            (board.partitions, _partition),
            (board.producers, _producer),
            (board.consumers, _consumer),
            (board.txns, _txn),
            (board.groups, _group),
        ):
            for row in rows:
                put(self._entries(row, encode))
        self._packs += 1
        changed = []
        for tail in board.logs:
            tp = _tp(tail.topic, tail.partition)
            have = self._tails.get(tp)
            if have is not None and have[0] is tail.batches:
                out[have[1][0]] = have[1][1]
            elif have is None or tail_budget is None:
                key, packed = self._tail(tail)
                out[key] = packed
            else:
                changed.append((self._packed_at.get(tp, 0), tp, tail))
                out[have[1][0]] = have[1][1]  # as last packed, until its turn
        changed.sort(key=lambda c: c[:2])
        budget = len(changed) if tail_budget is None else tail_budget
        for _, _, tail in changed[:budget]:
            key, packed = self._tail(tail)
            out[key] = packed
        self.tails_behind = max(0, len(changed) - budget)
        if len(self._rows) > 4 * (len(out) + 64):  # rows replaced long ago: let them go
            self._rows = {k: v for k, v in self._rows.items() if _alive(v[0], board)}
        out["o:b"] = [b.broker_id for b in board.brokers]
        out["o:p"] = [_tp(p.topic, p.partition) for p in board.partitions]
        out["o:pr"] = [p.name for p in board.producers]
        out["o:c"] = [c.name for c in board.consumers]
        out["o:t"] = [t.transactional_id for t in board.txns]
        out["o:g"] = [g.group_id for g in board.groups]
        out["o:l"] = [_tp(t.topic, t.partition) for t in board.logs]
        out["ctl"] = board.controller
        index = board.event_index
        out["fr"] = sorted(
            f"{k[0]}:{_tp(*k[1]) if isinstance(k[1], tuple) else k[1]}"
            for k, when in board.changed.items()
            if when > 0 and index - when <= panels.FRESH_EVENTS
        )
        self._timeline(out, events, faults, index, board.time_ms, lines)
        return out

    def _timeline(
        self, out: dict[str, Any], events: Sequence[Any], faults: Sequence[Any], index: int, now_ms: int, lines: int
    ) -> None:
        if index < 0 or not events:
            out["tl"] = None
            return
        index = min(index, len(events) - 1)
        first = max(0, index - lines + 1)
        cache = self._events
        for i in range(first, index + 1):
            entry = cache.get(i)
            if entry is None:
                e = events[i]
                entry = cache[i] = [e.kind, "txn" if e.name in _TXN_EVENTS else "", e.short()]
            out[f"e:{i}"] = entry
        if len(cache) > 8 * lines:
            for i in [i for i in cache if i < first or i > index]:
                del cache[i]
        t0 = events[first].time_ms
        t1 = max(now_ms, t0 + 1)
        out["tl"] = [first, index, t0, t1]
        out["fw"] = [list(w) for w in panels.fault_windows(faults, index) if w[3] is None or w[3] >= t0]


def _alive(row: Any, board: BoardState) -> bool:
    groups = (board.brokers, board.partitions, board.producers, board.consumers, board.txns, board.groups)
    return any(row is r for rows in groups for r in rows)


def _broker(b: Any) -> list[tuple[str, Any]]:
    return [(f"b:{b.broker_id}", [b.status, b.fenced, list(b.txn_partitions), list(b.group_partitions)])]


def _partition(p: Any) -> list[tuple[str, Any]]:
    windows = [
        [e.producer_id, [[w.first_sequence, w.last_sequence, w.first_offset] for w in e.window]] for e in p.producers
    ]
    row = [p.topic, p.partition, p.leader, p.leader_epoch, list(p.isr), list(p.replicas), p.leo, p.hw, p.lso, windows]
    return [(f"p:{_tp(p.topic, p.partition)}", row)]


def _producer(pr: Any) -> list[tuple[str, Any]]:
    parts = [
        [pp.topic, pp.partition, pp.next_seq, pp.last_acked_seq, [list(f) for f in pp.in_flight], pp.queued]
        for pp in pr.partitions
    ]
    row = [pr.status, pr.transactional_id, pr.producer_id, pr.epoch, pr.state, pr.error, parts]
    return [(f"pr:{pr.name}", row)]


def _consumer(c: Any) -> list[tuple[str, Any]]:
    return [(f"c:{c.name}", [str(c.isolation), [list(x) for x in c.positions]])]


def _txn(t: Any) -> list[tuple[str, Any]]:
    row = [
        t.coordinator,
        t.txn_partition,
        t.producer_id,
        t.epoch,
        t.state,
        t.pending,
        [list(x) for x in t.partitions],
        t.timeout_ms,
        t.last_update_ms,
    ]
    return [(f"t:{t.transactional_id}", row)]


def _group(g: Any) -> list[tuple[str, Any]]:
    members = [[m.client_id or m.member_id, m.epoch, panels.assignment_text(m.assignment)] for m in g.members]
    row = [g.coordinator, g.protocol, g.state, g.generation, g.assignment_epoch, members, g.lag]
    return [(f"g:{g.group_id}", row)]


def _batch(b: Any, kind: str) -> tuple[int, ...]:
    """A batch's :data:`BATCH_FIELDS`.

    The rest follows (engine batches have no offset or sequence gaps): the last offset is
    ``base + count - 1``, the last sequence ``base sequence + count - 1`` (-1 without one), a
    marker's kind names its control type.
    """
    last = b.coordinator_epoch if b.is_control else b.base_sequence
    return (b.base_offset, len(b.values), KINDS[kind], b.producer_id, b.producer_epoch, last)


def pack(numbers: list[int]) -> bytes:
    """Integers as little-endian float64 (exact below 2**53), what a page reads with a ``DataView``."""
    out = array("d", numbers)
    if sys.byteorder == "big":  # pragma: no cover - every platform we run on is little-endian
        out.byteswap()
    return out.tobytes()


def unpack(data: bytes) -> list[int]:
    """The integers :func:`pack` packed."""
    out = array("d")
    out.frombytes(data)
    if sys.byteorder == "big":  # pragma: no cover
        out.byteswap()
    return [int(v) for v in out]


def message(changed: dict[str, Any], gone: list[str], *, full: bool = False) -> tuple[dict[str, Any], list[bytes]]:
    """The custom message of a diff, and its binary buffers: a packed value is sent as ``{"buffer": i}``."""
    values: dict[str, Any] = {}
    buffers: list[bytes] = []
    for k, v in changed.items():
        if type(v) is bytes:
            values[k] = {"buffer": len(buffers)}
            buffers.append(v)
        else:
            values[k] = v
    content: dict[str, Any] = {"op": "frame", "set": values, "del": gone}
    if full:
        content["full"] = True
    return content, buffers


def diff(last: dict[str, Any], now: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Return ``(set, deleted)``: the keys of ``now`` whose values differ from ``last``'s, and the keys gone."""
    changed = {}
    get = last.get
    for k, v in now.items():
        old = get(k, diff)
        if old is not v and old != v:
            changed[k] = v
    gone = [k for k in last if k not in now]
    return changed, gone
