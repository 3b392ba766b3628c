"""The rows the Spark checks collect, turned into :class:`~engine.check.anomaly.Anomaly` records.

Role
----
Every checker of :mod:`eos_magics.spark.checks` returns rows of
:data:`~eos_magics.spark.checks.frames.ANOMALY_COLUMNS`; :func:`to_anomaly` makes the record
the Python checker makes for the same anomaly, its sentence included, so a report reads the
same whichever engine produced it.

Invariants
----------
Kind, key, offsets, values and ops are taken from the row as they are; only the message is
composed here, word for word as the Python checker modules compose it.

What it does not do
-------------------
No cycles: those come whole from :func:`engine.check.cycles` on the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.check.anomaly import Anomaly

__all__ = ["to_anomaly"]


def _where(row: Mapping[str, Any]) -> str:
    return f"{row['topic']}/{row['partition']}"


def _inconsistent(r: Mapping[str, Any]) -> str:
    values = r["values"]
    return f"offset {r['offsets'][0]} of {_where(r)} holds {len(values)} values: {', '.join(values)}"


def _duplicate(r: Mapping[str, Any]) -> str:
    offsets = r["offsets"]
    return f"value {r['values'][0]!r} of {_where(r)} appears at {len(offsets)} offsets: " + ", ".join(map(str, offsets))


def _lost(r: Mapping[str, Any]) -> str:
    offset, bound = r["offsets"]
    return (
        f"value {r['values'][0]!r} written by op {r['ops'][0]} at offset {offset} of {_where(r)} was never read, "
        f"although ok reads reached offset {bound}"
    )


def _unseen(r: Mapping[str, Any]) -> str:
    values = r["values"]
    shown = ", ".join(repr(v) for v in values[:5]) + (", ..." if len(values) > 5 else "")
    return f"{len(values)} committed value(s) of {_where(r)} never read by an ok poll: {shown}"


def _g1a(r: Mapping[str, Any]) -> str:
    writer, *readers = r["ops"]
    return (
        f"ok op(s) {', '.join(map(str, readers))} read {r['values'][0]!r} at offset "
        f"{', '.join(map(str, r['offsets']))} of {_where(r)}, written by op {writer} which failed"
    )


def _precommitted(r: Mapping[str, Any]) -> str:
    return (
        f"op {r['ops'][0]} polled {', '.join(repr(v) for v in r['values'])} from {_where(r)}, "
        "which it had sent itself before committing"
    )


def _poll(r: Mapping[str, Any]) -> str:
    before, after = r["offsets"]
    delta = r["n"]
    ops = r["ops"]
    if delta > 1:
        msg = f"read offset {after} right after offset {before} of {_where(r)}, skipping {delta - 1} value(s)"
    else:
        msg = f"read offset {after} after offset {before} of {_where(r)}: went back {1 - delta} position(s)"
    if len(ops) == 2:
        return f"op {ops[1]} " + msg + f" (previous poll: op {ops[0]})"
    return f"op {ops[0]} " + msg


def _int_send(r: Mapping[str, Any]) -> str:
    before, after = r["offsets"]
    bv, v = r["values"]
    d = r["n"]
    how = f"{d - 1} other value(s) landed between" if d > 1 else "the later send landed first"
    return f"op {r['ops'][0]} sent {bv!r} then {v!r} to {_where(r)}; they landed at offsets {before} and {after}: {how}"


def _nonmonotonic_send(r: Mapping[str, Any]) -> str:
    before, after = r["offsets"]
    earlier_op, idx = r["ops"]
    return (
        f"op {idx} of process {r['process']} sent {r['values'][1]!r} to {_where(r)} at offset {after}, "
        f"at or below offset {before} of its previous send op {earlier_op}"
    )


_MESSAGES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "inconsistent-offsets": _inconsistent,
    "duplicate": _duplicate,
    "lost-write": _lost,
    "unseen": _unseen,
    "G1a": _g1a,
    "precommitted-read": _precommitted,
    "poll-skip": _poll,
    "nonmonotonic-poll": _poll,
    "int-poll-skip": _poll,
    "int-nonmonotonic-poll": _poll,
    "int-send-skip": _int_send,
    "int-nonmonotonic-send": _int_send,
    "nonmonotonic-send": _nonmonotonic_send,
}


def to_anomaly(row: Mapping[str, Any]) -> Anomaly:
    """Return the :class:`Anomaly` of one collected checker row (a ``Row`` or a dict)."""
    return Anomaly(
        row["kind"],
        (row["topic"], row["partition"]),
        tuple(row["offsets"]),
        tuple(row["values"]),
        tuple(row["ops"]),
        _MESSAGES[row["kind"]](row),
    )
