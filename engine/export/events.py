"""The tables read from a run's trace and its offsets topic: ``trace``, ``faults``, ``group_offsets``.

Role
----
Three tables of an export (``docs/export-schema.md``) that neither the client history nor the
replica logs hold as rows of their own:

* ``trace``: every event of the run's trace (:mod:`engine.sim.trace`), its detail as one JSON
  object with sorted keys, so Spark or SQL can pick a key out with ``get_json_object``.
* ``faults``: every fault applied, from the fault plan (``source = "plan"``) and from the trace
  events of kind ``fault`` (``source = "trace"``), exactly the rows of
  :attr:`engine.check.ground_truth.GroundTruth.faults`.
* ``group_offsets``: every offset commit stored in ``__consumer_offsets``, read from the
  authoritative replica of each of its partitions, with the outcome of the commit: a plain
  commit counts at once; a transactional commit (``send_offsets_to_transaction``) counts when a
  COMMIT marker of its producer follows it in the same partition, is dropped by an ABORT marker,
  and is ``open`` when no marker follows (the rule of :func:`engine.group.records.replay`).

It also rebuilds leader offset samples from the trace (:func:`trace_samples`) for a run that had
no :class:`~engine.check.timeline.PartitionTimeline` attached.

Invariants
----------
* Reading only: no engine object is changed, no random stream is drawn.
* Rows come out in a fixed order (trace index; fault time then source; offsets partition then
  log offset), never in hash order.
* Every detail value becomes JSON: strings, integers, booleans and null as they are, tuples and
  lists as arrays, bytes decoded as text, enums by name, anything else as ``str(value)``.

What it does not do
-------------------
No pyarrow schema checks of other tables (that is :mod:`engine.export.schema`), no Parquet.
A trace kept with ``keep=False`` has no events to export: ``trace`` is then empty.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from engine import trace_events as events
from engine.check.timeline import TimelineSample
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC
from engine.export.common import RunId, as_text, table
from engine.group.records import OffsetCommitKey

if TYPE_CHECKING:
    from engine.check.ground_truth import FaultRow, GroundTruth
    from engine.sim.trace import TraceEvent

__all__ = [
    "EVENT_FIELDS",
    "FAULT_FIELDS",
    "GROUP_OFFSET_FIELDS",
    "OFFSETS_TOPIC",
    "TRACE_FIELDS",
    "detail_json",
    "faults_table",
    "group_offsets_table",
    "trace_samples",
    "trace_table",
]

#: The topic the group coordinator writes committed offsets to.
OFFSETS_TOPIC = CONSUMER_OFFSETS_TOPIC

TRACE_FIELDS: tuple[pa.Field, ...] = (
    pa.field("index", pa.int64(), nullable=False),
    pa.field("time_ms", pa.int64(), nullable=False),
    pa.field("node", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("name", pa.string(), nullable=False),
    pa.field("detail", pa.string(), nullable=False),
)

FAULT_FIELDS: tuple[pa.Field, ...] = (
    pa.field("time_ms", pa.int64(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("node", pa.string(), nullable=False),
    pa.field("params", pa.string(), nullable=False),
)

GROUP_OFFSET_FIELDS: tuple[pa.Field, ...] = (
    pa.field("group", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("log_offset", pa.int64(), nullable=False),
    pa.field("producer_id", pa.int64(), nullable=False),
    pa.field("producer_epoch", pa.int32(), nullable=False),
    pa.field("outcome", pa.string(), nullable=False),
    pa.field("time_ms", pa.int64(), nullable=False),
)

#: The tables this module builds, by name (``partition_state`` has the schema of ``logs.py``).
EVENT_FIELDS: dict[str, tuple[pa.Field, ...]] = {
    "trace": TRACE_FIELDS,
    "faults": FAULT_FIELDS,
    "group_offsets": GROUP_OFFSET_FIELDS,
}

_PLAIN = frozenset({str, int, bool, type(None)})


# -- JSON ------------------------------------------------------------------------------------


def _safe(v: Any) -> Any:
    """Return ``v`` as a value :func:`json.dumps` writes faithfully (see the module docstring)."""
    t = type(v)
    if t in _PLAIN:
        return v
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, list | tuple):
        return [_safe(x) for x in v]
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, bytes | bytearray):
        return as_text(v)
    if isinstance(v, dict):
        return {str(k): _safe(x) for k, x in v.items()}
    if isinstance(v, int):  # an int subclass that is no enum
        return int(v)
    return str(v)


def detail_json(pairs: Iterable[tuple[str, Any]]) -> str:
    """Return ``(key, value)`` pairs as one JSON object with sorted keys and JSON-safe values.

    Parameters
    ----------
    pairs
        An event's ``detail`` or a fault's ``params``. A key given twice keeps its last value.

    Returns
    -------
    str
        Compact JSON, e.g. ``'{"hw":3,"tp":"t-0"}'``; ``"{}"`` for no pairs.
    """
    obj = {str(k): _safe(v) for k, v in pairs}
    return _ENCODE(obj)


#: One encoder for every event (``json.dumps`` with options builds a new one per call).
_ENCODE = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


# -- tables ----------------------------------------------------------------------------------


def trace_table(trace_events: Sequence[TraceEvent], run: RunId) -> pa.Table:
    """Return the ``trace`` table: one row per event, in trace order.

    Parameters
    ----------
    trace_events
        The kept events, ``cluster.world.trace.events``.
    run
        The run columns.
    """
    return table(
        run,
        TRACE_FIELDS,
        {
            "index": [e.index for e in trace_events],
            "time_ms": [e.time_ms for e in trace_events],
            "node": [e.node for e in trace_events],
            "kind": [e.kind for e in trace_events],
            "name": [e.name for e in trace_events],
            "detail": [detail_json(e.detail) for e in trace_events],
        },
    )


def faults_table(faults: Sequence[FaultRow], run: RunId) -> pa.Table:
    """Return the ``faults`` table from :attr:`GroundTruth.faults`, sorted by time, then plan before trace.

    The sort is stable, so faults of one time and source keep the order they were applied in.
    """
    rows = sorted(faults, key=lambda f: (f.time_ms, f.source != "plan"))
    return table(
        run,
        FAULT_FIELDS,
        {
            "time_ms": [f.time_ms for f in rows],
            "source": [f.source for f in rows],
            "kind": [f.kind for f in rows],
            "node": [f.node for f in rows],
            "params": [detail_json(f.params) for f in rows],
        },
    )


def group_offsets_table(gt: GroundTruth, run: RunId) -> pa.Table:
    """Return the ``group_offsets`` table: every offset commit in ``__consumer_offsets``, with its outcome.

    Each ``__consumer_offsets`` partition is read from its authoritative replica
    (:meth:`GroundTruth.final_log`). Group membership records and tombstones are left out.

    Parameters
    ----------
    gt
        The run's ground truth (:func:`engine.check.ground_truth.export_ground_truth`).
    run
        The run columns.
    """
    rows: list[list[Any]] = []
    for tp in gt.partition_keys():
        if tp[0] == OFFSETS_TOPIC:
            rows.extend(_offset_rows(gt.final_log(tp)))
    names = [f.name for f in GROUP_OFFSET_FIELDS]
    return table(run, GROUP_OFFSET_FIELDS, {n: [r[i] for r in rows] for i, n in enumerate(names)})


def _offset_rows(batches: Sequence[Any]) -> list[list[Any]]:
    """Return the commit rows of one offsets partition; transactional ones get their marker's outcome."""
    rows: list[list[Any]] = []
    pending: dict[int, list[list[Any]]] = {}  # producer id -> rows waiting for a marker
    for b in batches:
        if b.is_control:
            outcome = "committed" if b.control_type == "COMMIT" else "aborted"
            for row in pending.pop(b.producer_id, []):
                row[7] = outcome
            continue
        for i, key in enumerate(b.keys):
            value = b.values[i] if i < len(b.values) else None
            if not isinstance(key, OffsetCommitKey) or value is None:
                continue
            row = [
                key.group,
                key.topic,
                key.partition,
                value.offset,
                b.base_offset + i,
                b.producer_id if b.is_transactional else -1,
                b.producer_epoch if b.is_transactional else -1,
                "open" if b.is_transactional else "committed",
                value.commit_timestamp if value.commit_timestamp >= 0 else b.create_time,
            ]
            rows.append(row)
            if b.is_transactional:
                pending.setdefault(b.producer_id, []).append(row)
    return rows


# -- leader offsets from the trace ----------------------------------------------------------

_OFFSET_EVENTS = frozenset(
    {events.REPLICA_LEADER, events.LOG_APPEND, events.MARKER_APPEND, events.LOG_HW, events.LOG_LSO}
)


def trace_samples(trace_events: Iterable[TraceEvent]) -> list[TimelineSample]:
    """Rebuild leader offset samples from the trace, for a run without a ``PartitionTimeline``.

    A simplification of what the timeline observes: a leader's epoch, LEO and HW start from its
    ``replica.leader`` event (its LSO starts equal to its HW); LEO then moves with ``log.append``
    (``last + 1``) and ``marker.append`` (``offset + 1``), HW with ``log.hw``, LSO with ``log.hw``
    and ``log.lso``, and LEO is raised to the HW when the HW passes an append the trace does not
    name (offset commits are appended without a ``log.append``). A sample is kept when one of
    the four values changed for that (partition, broker). Two differences from the timeline:
    ``index`` is the event that names the change (the timeline keeps the event before it), and
    the timeline's first samples (index -1, taken when it is attached) are here the
    ``replica.leader`` events themselves. On the catalog runs measured the values and times
    otherwise agree sample for sample.

    Returns
    -------
    list of TimelineSample
        In trace order; feed them to ``logs.partition_state_table``.
    """
    state: dict[tuple[str, int, int], list[int]] = {}  # (topic, partition, broker) -> epoch, leo, hw, lso
    last: dict[tuple[str, int, int], tuple[int, ...]] = {}
    out: list[TimelineSample] = []
    for e in trace_events:
        if e.kind != "state" or e.name not in _OFFSET_EVENTS or not e.node.startswith("broker-"):
            continue
        topic, _, part = str(e.get("tp", "")).rpartition("-")
        broker = e.node[len("broker-") :]
        if not topic or not part.isdigit() or not broker.isdigit():
            continue
        key = (topic, int(part), int(broker))
        if e.name == events.REPLICA_LEADER:
            hw = int(e.get("hw", 0))
            state[key] = [int(e.get("epoch", 0)), int(e.get("leo", 0)), hw, hw]
        s = state.get(key)
        if s is None:  # not known to lead yet
            continue
        _apply(e, s)
        values = tuple(s)
        if last.get(key) != values:
            last[key] = values
            out.append(TimelineSample(e.index, e.time_ms, key[0], key[1], key[2], *values))
    return out


def _apply(e: TraceEvent, s: list[int]) -> None:
    """Move one leader's ``[epoch, leo, hw, lso]`` by one trace event."""
    if e.name == events.LOG_APPEND:
        s[1] = max(s[1], int(e.get("last", -1)) + 1)
    elif e.name == events.MARKER_APPEND:
        s[1] = max(s[1], int(e.get("offset", -1)) + 1)
    elif e.name == events.LOG_HW:
        s[2] = int(e.get("hw", s[2]))
        s[3] = int(e.get("lso", s[3]))
    elif e.name == events.LOG_LSO:
        s[3] = int(e.get("lso", s[3]))
    s[1] = max(s[1], s[2])  # HW <= LEO: an append the trace did not name shows up as the HW passes it
