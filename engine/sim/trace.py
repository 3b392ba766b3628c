"""The trace: every delivered message, state change and fault of a run, as small immutable events.

The trace is the shared artefact of the project (house style R15): tests snapshot its short log,
checkers read it, widgets and the scrubbable timeline replay it, and Spark loads it as a table.

Short log
---------
One line per event in fixed columns::

    <time_ms:>9> <node:<12> <sym> <event:<28> <detail>

``sym`` is one character that classes the event:

====  ==========================================================
sym   meaning
====  ==========================================================
``>``  a message was sent (request, response or one-way)
``<``  a message was delivered to its destination
``x``  a message was dropped (fault, partition, node down)
``!``  a fault was applied (crash, pause, partition, hold ...)
``*``  a state change inside a node (append, election, commit)
``?``  a fault-site decision (BUGGIFY): enabled or fired
``#``  a coverage mark was hit
``=``  the run's phase changed, or the run began or ended
====  ==========================================================

``detail`` is ``key=value`` pairs separated by single spaces, in the order the code gave them.

Fingerprint
-----------
:meth:`Trace.fingerprint` hashes every event (time, node, kind, name and every detail pair, in
trace order) with BLAKE2b and mixes in one final draw from the ``fingerprint`` random stream, so
two runs agree only if they emitted the same events *and* consumed the same randomness.

The encoding writes each repeated string once. An event's *shape* is its node, kind, name and
detail keys (``("broker-1", "state", "log.append", ("tp", "offset", ...))``); a trace numbers its
shapes 0, 1, 2 ... in the order they first occur, and hashes each shape once, where it first
occurs, then every event as the row ``(time_ms, shape number, detail values)`` (an event's index
is its position, so it is not written). The numbering depends only on the order of the events,
so the digest is the same in every process, kept or not. Rows are hashed in chunks of
:data:`HASH_CHUNK` events, each serialised with :mod:`marshal` (format 2, which depends only on
the values, never on object identity or reference counts; format 3 and later would write
repeated strings once too, but mark objects as shared by their reference count, so a kept and an
unkept trace could hash differently); a chunk holding a value marshal cannot encode falls back to
``repr``. A trace that keeps its events hashes them at fingerprint time, one that does not hashes
each chunk as it fills: both give the same digest. Detail values must therefore not be mutated
after they are emitted (they never are: emitters pass fresh values).
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.sim import events

if TYPE_CHECKING:
    from engine.sim.observer import Observer

SYMBOLS = {
    "send": ">",
    "deliver": "<",
    "drop": "x",
    "fault": "!",
    "state": "*",
    "site": "?",
    "mark": "#",
    "phase": "=",
}


#: Events per hashed chunk (see the module docstring); part of the fingerprint's definition.
HASH_CHUNK = 2048
#: marshal format 2: values only (format 3 and later mark shared objects by reference count).
_MARSHAL_VERSION = 2


def _dumps(rows: list[tuple[Any, ...]]) -> bytes:
    """Return the hashed bytes of encoded rows (shapes and events, see the module docstring)."""
    try:
        return marshal.dumps(rows, _MARSHAL_VERSION)
    except ValueError:  # a detail value marshal cannot encode (an enum, a dataclass, ...)
        return repr(rows).encode()


def _chunk_bytes(chunk: list[TraceEvent], shapes: dict[tuple[Any, ...], int]) -> bytes:
    """Return the bytes hashed for one chunk of kept events.

    ``shapes`` numbers the shapes seen in earlier chunks (see the module docstring) and gets the
    new ones. The rows are those a trace that keeps nothing encodes as the events come
    (:meth:`Trace.emit`, :meth:`Trace.emit_fields`), so both give the same digest.
    """
    rows: list[tuple[Any, ...]] = []
    add = rows.append
    number = shapes.get
    for e in chunk:
        if e[5]:
            keys, values = zip(*e[5])  # noqa: B905 - pairs: one tuple of keys, one of values
        else:
            keys = values = ()
        shape = (e[2], e[3], e[4], keys)
        sid = number(shape)
        if sid is None:
            sid = shapes[shape] = len(shapes)
            add(shape)  # the shape's strings, written once
        add((e[1], sid, values))
    return _dumps(rows)


class TraceEvent(NamedTuple):
    """One thing that happened. Immutable and cheap (a named tuple, not a dataclass)."""

    index: int
    time_ms: int
    node: str
    kind: str
    name: str
    detail: tuple[tuple[str, Any], ...]

    @property
    def symbol(self) -> str:
        """Return the short-log symbol of the event's kind."""
        return SYMBOLS[self.kind]

    def get(self, key: str, default: Any = None) -> Any:
        """Return one detail value by key."""
        for k, v in self.detail:
            if k == key:
                return v
        return default

    def short(self) -> str:
        """Return the event as one short-log line (fixed columns, see the module docstring)."""
        detail = " ".join(f"{k}={_fmt(v)}" for k, v in self.detail)
        return f"{self.time_ms:>9} {self.node:<12} {SYMBOLS[self.kind]} {self.name:<28} {detail}".rstrip()


def _fmt(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_fmt(v) for v in value) + "]"
    if value is None:
        return "-"
    return str(value)


_new_event = tuple.__new__


class Trace:
    """The ordered list of :class:`TraceEvent` of one run, and the observers that watch it.

    Parameters
    ----------
    clock
        Any object with an integer ``now_ms`` attribute (the scheduler).
    keep
        Keep events in memory (the default). With ``keep=False`` events still reach observers
        and the fingerprint, but are not stored; long benchmarks use it.
    """

    def __init__(self, clock: Any, *, keep: bool = True) -> None:
        self._clock = clock
        self.keep = keep
        self.events: list[TraceEvent] = []
        self.count = 0
        self.marks: dict[str, int] = {}
        self._observers: list[Observer] = []
        self._hooks: list[Any] = []
        #: The observers' ``on_offsets`` hooks. Replicas hold this very list (it is updated in
        #: place), so an observer attached later is seen by replicas made earlier.
        self.offset_hooks: list[Any] = []
        #: The observers' ``after_run_for`` hooks.
        self.run_for_hooks: list[Any] = []
        self._hash = hashlib.blake2b(digest_size=16) if not keep else None
        #: keep=False: the encoded rows (shapes and events) of the chunk being filled, hashed when full.
        self._chunk: list[tuple[Any, ...]] = []
        #: keep=False: the shapes encoded so far, numbered in the order they first occurred.
        self._shapes: dict[tuple[Any, ...], int] = {}

    # -- observers --------------------------------------------------------------------------

    def attach(self, observer: Observer) -> None:
        """Attach an observer; it receives every later event through its ``on_event`` hook."""
        self._observers.append(observer)
        self._rehook()

    def detach(self, observer: Observer) -> None:
        """Detach an observer attached earlier."""
        self._observers.remove(observer)
        self._rehook()

    def _rehook(self) -> None:
        self._hooks = [o.on_event for o in self._observers if getattr(o, "on_event", None)]
        self.offset_hooks[:] = [o.on_offsets for o in self._observers if getattr(o, "on_offsets", None)]
        self.run_for_hooks = [o.after_run_for for o in self._observers if getattr(o, "after_run_for", None)]

    @property
    def observers(self) -> tuple[Observer, ...]:
        """Return the attached observers."""
        return tuple(self._observers)

    # -- emitting ---------------------------------------------------------------------------

    def emit(self, node: str, kind: str, name: str, *detail: tuple[str, Any]) -> TraceEvent | None:
        """Record one event now and hand it to the observers; return it (None when nobody keeps or sees it).

        A trace that neither keeps its events nor has observers only hashes them, so it stores the
        plain tuple the fingerprint hashes and builds no :class:`TraceEvent`.
        """
        n = self.count
        self.count = n + 1
        if self.keep:
            event = _new_event(TraceEvent, (n, self._clock.now_ms, node, kind, name, detail))
            self.events.append(event)
        else:
            keys, values = zip(*detail) if detail else ((), ())  # noqa: B905 - pairs
            self._encode(n, node, kind, name, keys, values)
            if not self._hooks:
                return None
            event = _new_event(TraceEvent, (n, self._clock.now_ms, node, kind, name, detail))
        for hook in self._hooks:
            hook(event)
        return event

    def emit_fields(self, node: str, kind: str, name: str, keys: tuple[str, ...], *values: Any) -> TraceEvent | None:
        """Record the event ``emit(node, kind, name, *zip(keys, values))``, its detail pairs built only when read.

        ``keys`` is a constant tuple of detail keys (one per event shape, made once by the
        emitter), ``values`` the values in the same order. A trace that keeps its events, or has
        observers, builds the :class:`TraceEvent` now, with the same detail pairs :meth:`emit`
        would hold. A trace that only hashes never builds the pairs: the fingerprint hashes the
        keys once per shape and the values per event, the same bytes as for :meth:`emit`'s pairs
        of the same event.
        """
        if self.keep or self._hooks:
            return _emit_here(self, node, kind, name, *zip(keys, values))  # noqa: B905 - same length by construction
        n = self.count
        self.count = n + 1
        # _encode, inlined: this is the hot path of every bench and sweep
        shape = (node, kind, name, keys)
        sid = self._shapes.get(shape)
        chunk = self._chunk
        if sid is None:
            sid = self._shapes[shape] = len(self._shapes)
            chunk.append(shape)  # the shape's strings, written once
        chunk.append((self._clock.now_ms, sid, values))
        if n % HASH_CHUNK == HASH_CHUNK - 1:
            self._hash_chunk()
        return None

    def _encode(self, n: int, node: str, kind: str, name: str, keys: tuple[str, ...], values: tuple[Any, ...]) -> None:
        """Encode event ``n`` into the chunk being filled (a trace that keeps nothing); hash the chunk when full."""
        shape = (node, kind, name, keys)
        sid = self._shapes.get(shape)
        chunk = self._chunk
        if sid is None:
            sid = self._shapes[shape] = len(self._shapes)
            chunk.append(shape)  # the shape's strings, written once
        chunk.append((self._clock.now_ms, sid, values))
        if n % HASH_CHUNK == HASH_CHUNK - 1:
            self._hash_chunk()

    def _hash_chunk(self) -> None:
        """Hash the chunk being filled (its :data:`HASH_CHUNK` events, encoded) and start the next one."""
        self._hash.update(_dumps(self._chunk))  # type: ignore[union-attr]
        self._chunk = []

    def mark(self, node: str, label: str) -> None:
        """Hit a coverage mark: count it and trace it, so a test can assert the branch ran."""
        self.marks[label] = self.marks.get(label, 0) + 1
        self.emit(node, "mark", events.MARK, ("label", label))

    # -- reading ----------------------------------------------------------------------------

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return self.count

    def short_log(self, events: Iterable[TraceEvent] | None = None) -> str:
        """Return the short log of ``events`` (all kept events by default), one line each."""
        return "\n".join(e.short() for e in (self.events if events is None else events))

    def select(self, *, node: str | None = None, kind: str | None = None, name: str | None = None) -> list[TraceEvent]:
        """Return the kept events that match every given field."""
        return [
            e
            for e in self.events
            if (node is None or e.node == node)
            and (kind is None or e.kind == kind)
            and (name is None or e.name == name)
        ]

    def fingerprint(self, final_draw: int) -> str:
        """Return a hex digest of the whole trace plus ``final_draw`` (see the module docstring)."""
        if self._hash is not None:
            h = self._hash.copy()
            if self._chunk:
                h.update(_dumps(self._chunk))
        else:
            h = hashlib.blake2b(digest_size=16)
            events = self.events
            shapes: dict[tuple[Any, ...], int] = {}
            for i in range(0, len(events), HASH_CHUNK):
                h.update(_chunk_bytes(events[i : i + HASH_CHUNK], shapes))
        h.update(str(final_draw).encode())
        return h.hexdigest()


class RegionTrace(Trace):
    """A region's trace (:meth:`engine.sim.world.World.region`): its own events, each also in the parent's.

    The region's observers and offset hooks see its events under the region's own node names
    (``broker-1``); the parent's trace gets every event again, emitted at the same moment with the
    node name prefixed (``target/broker-1``), so the parent's fingerprint and short log cover both.
    """

    def __init__(self, parent: Trace, region: str, clock: Any, *, keep: bool = True) -> None:
        super().__init__(clock, keep=keep)
        self._parent_emit = parent.emit
        self._prefix = f"{region}/"

    def emit(self, node: str, kind: str, name: str, *detail: tuple[str, Any]) -> TraceEvent | None:
        """Record one event here, then emit it into the parent's trace as ``<region>/<node>``."""
        event = _emit_here(self, node, kind, name, *detail)
        self._parent_emit(self._prefix + node, kind, name, *detail)
        return event

    def emit_fields(self, node: str, kind: str, name: str, keys: tuple[str, ...], *values: Any) -> TraceEvent | None:
        """Record one event here and in the parent (:meth:`emit`), its pairs built now."""
        return _emit_in_region(self, node, kind, name, *zip(keys, values))  # noqa: B905 - same length by construction


#: :meth:`Trace.emit`, called through a name by :class:`RegionTrace`: a relay passes on the event
#: names its callers took from :mod:`engine.trace_events` (the emit scan of the tests checks those).
_emit_here = Trace.emit
_emit_in_region = RegionTrace.emit
