"""A client history as two Arrow tables, ``history`` and ``history_mops``, and back.

Role
----
The black-box checkers (:mod:`engine.check`) read a :class:`~engine.check.history.History`.
:func:`history_tables` writes one as the two tables of ``eos-checking.md`` §5.5, so pandas,
Parquet and Spark read what the Python checkers read; :func:`history_from_tables` rebuilds the
very same :class:`History` from them, so the Python checker can judge an export and its verdict
can be set beside Spark's on the same data.

=================  ==========================================================================
table              one row per
=================  ==========================================================================
``history``        history line: every invocation and every completion, in index order
``history_mops``   micro-op of a line, as that line holds it (``mop_index`` = its position)
=================  ==========================================================================

A completion whose ``mops`` are empty has no ``history_mops`` rows: it takes its invocation's
rows when the history is read, exactly as :meth:`History.completions` does.

Invariants
----------
* The schemas are exactly ``RUN_FIELDS + HISTORY_FIELDS`` and ``RUN_FIELDS + HISTORY_MOPS_FIELDS``,
  with zero rows too.
* Rows are in history order (``index``, then ``mop_index``).
* Values are text (:func:`~engine.export.common.as_text`); a history whose values are text
  round-trips exactly, so :func:`~engine.check.checker.check_history` gives the same report on
  the rebuilt history.
* The tables are built from plain column lists, a few Python steps per micro-op and no Arrow
  call per row: a history of a million micro-ops converts in a few seconds.

What it does not do
-------------------
It does not check anything and does not read the cluster (the brokers' side is
:mod:`engine.export.logs`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from engine.check.history import FUNCTIONS, TYPES, History, Op, Poll, Send
from engine.check.jsonl import gc_paused
from engine.export.common import KEY_LIST, RunId, as_text, table

__all__ = [
    "HISTORY_FIELDS",
    "HISTORY_MOPS_FIELDS",
    "history_from_tables",
    "history_tables",
]

#: Columns of ``history`` after the run columns: one row per invocation or completion.
HISTORY_FIELDS: tuple[pa.Field, ...] = (
    pa.field("index", pa.int64(), nullable=False),
    pa.field("time_ms", pa.int64(), nullable=False),
    pa.field("process", pa.int64(), nullable=False),
    pa.field("type", pa.string(), nullable=False),
    pa.field("f", pa.string(), nullable=False),
    pa.field("error", pa.string()),
    pa.field("keys", KEY_LIST, nullable=False),
    pa.field("rebalance_keys", KEY_LIST, nullable=False),
)

#: Columns of ``history_mops`` after the run columns: one row per micro-op of a line.
HISTORY_MOPS_FIELDS: tuple[pa.Field, ...] = (
    pa.field("index", pa.int64(), nullable=False),
    pa.field("mop_index", pa.int32(), nullable=False),
    pa.field("mop_f", pa.string(), nullable=False),
    pa.field("topic", pa.string(), nullable=False),
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64()),
    pa.field("value", pa.string()),
)

_MOP_FS = ("send", "poll")


def _key_list(keys: Any) -> list[dict[str, Any]]:
    return [{"topic": t, "partition": p} for t, p in keys]


def history_tables(history: History, run: RunId) -> dict[str, pa.Table]:
    """Return ``{"history": ..., "history_mops": ...}``: the lines of ``history`` and their micro-ops.

    Parameters
    ----------
    history : History
        The client history (``ScenarioResult.history``, ``ClientHistory.history()``, a loaded file).
    run : RunId
        The run columns written on every row.

    Raises
    ------
    ValueError
        If ``history`` is not a :class:`History` or ``run`` not a :class:`RunId`.
    """
    if not isinstance(history, History):
        raise ValueError(
            f"history must be an engine.check.History, not {type(history).__name__}; "
            "wrap a list of Op records with History(ops)"
        )
    if not isinstance(run, RunId):
        raise ValueError(f"run must be an engine.export.common.RunId, not {type(run).__name__}")
    ops = history.ops
    no_keys: list[dict[str, Any]] = []
    lines = {
        "index": [op.index for op in ops],
        "time_ms": [op.time_ms for op in ops],
        "process": [op.process for op in ops],
        "type": [op.type for op in ops],
        "f": [op.f for op in ops],
        "error": [op.error for op in ops],
        "keys": [_key_list(op.keys) if op.keys else no_keys for op in ops],
        "rebalance_keys": [_key_list(op.rebalance_keys) if op.rebalance_keys else no_keys for op in ops],
    }
    index: list[int] = []
    mop_index: list[int] = []
    mop_f: list[str] = []
    topic: list[str] = []
    partition: list[int] = []
    offset: list[int | None] = []
    value: list[str | None] = []
    for op in ops:
        n = len(op.mops)
        if not n:
            continue
        index += [op.index] * n
        mop_index += range(n)
        for m in op.mops:
            mop_f.append("send" if type(m) is Send else "poll")
            offset.append(m.offset)
            topic.append(m.topic)
            partition.append(m.partition)
            v = m.value
            value.append(v if type(v) is str else as_text(v))
    mops = {
        "index": index,
        "mop_index": mop_index,
        "mop_f": mop_f,
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "value": value,
    }
    return {"history": table(run, HISTORY_FIELDS, lines), "history_mops": table(run, HISTORY_MOPS_FIELDS, mops)}


def _columns(t: Any, fields: tuple[pa.Field, ...], what: str) -> None:
    """Raise ValueError unless ``t`` is an Arrow table holding ``fields`` (types castable)."""
    if not isinstance(t, pa.Table):
        raise ValueError(f"{what} must be a pyarrow Table, not {type(t).__name__}; pass what history_tables returned")
    names = set(t.column_names)
    missing = [f.name for f in fields if f.name not in names]
    if missing:
        raise ValueError(
            f"the {what} table has no column(s) {', '.join(missing)}; pass the '{what}' table history_tables returned"
        )


def _one_run(t: pa.Table, run_id: str | None, what: str) -> pa.Table:
    """Keep the rows of ``run_id``; without one, the table must hold a single run."""
    if "run_id" not in t.column_names:
        if run_id is not None:
            raise ValueError(f"the {what} table has no run_id column, so it cannot be filtered by run_id={run_id!r}")
        return t
    ids = t.column("run_id").unique().to_pylist()
    if run_id is None:
        if len(ids) > 1:
            shown = ", ".join(repr(i) for i in sorted(ids)[:5])
            raise ValueError(f"the {what} table holds {len(ids)} runs ({shown}, ...); pass run_id= to pick one")
        return t
    if run_id not in ids:
        raise ValueError(f"the {what} table has no rows of run_id={run_id!r}; it holds {sorted(ids)[:5]}")
    return t.filter(pc.equal(t.column("run_id"), run_id))


def _keys(rows: list[Any] | None) -> tuple[tuple[str, int], ...]:
    if not rows:
        return ()
    return tuple((r["topic"], r["partition"]) for r in rows)


def _check_mops(mops: pa.Table) -> None:
    """Raise ValueError for micro-op rows no history can hold (checked column-wise, in Arrow)."""
    for name in ("index", "mop_index", "mop_f", "topic", "partition"):
        if mops.column(name).null_count:
            raise ValueError(f"history_mops: {mops.column(name).null_count} row(s) have a null {name}")
    fs = sorted(mops.column("mop_f").unique().to_pylist())
    bad = [f for f in fs if f not in _MOP_FS]
    if bad:
        raise ValueError(f"history_mops: mop_f {bad[0]!r} is neither {' nor '.join(_MOP_FS)}")
    polls = pc.equal(mops.column("mop_f"), "poll")
    unplaced = pc.sum(pc.and_(polls, pc.is_null(mops.column("offset")))).as_py()
    if unplaced:
        raise ValueError(f"history_mops: {unplaced} poll row(s) have no offset; a poll always has one")


def _mops_by_index(mops: pa.Table) -> dict[int, list[Any]]:
    """Group the micro-op rows by line index, in ``mop_index`` order, as Send and Poll records."""
    _check_mops(mops)
    mops = mops.sort_by([("index", "ascending"), ("mop_index", "ascending")])
    idx, pos, fs, t, p, o, v = (mops.column(f.name).to_pylist() for f in HISTORY_MOPS_FIELDS)
    # tuple.__new__ builds each record in C (a NamedTuple's own __new__ is a Python function).
    new = tuple.__new__
    recs = [
        new(Send, (tt, pp, vv, oo)) if ff == "send" else new(Poll, (tt, pp, oo, vv))
        for ff, tt, pp, oo, vv in zip(fs, t, p, o, v, strict=True)
    ]
    out: dict[int, list[Any]] = {}
    start = 0
    n = len(idx)
    while start < n:
        line = idx[start]
        end = start + 1
        while end < n and idx[end] == line:
            end += 1
        if pos[start] != 0 or pos[end - 1] != end - start - 1 or len(set(pos[start:end])) != end - start:
            raise ValueError(
                f"history_mops: the mop_index values of line {line} are {pos[start : min(end, start + 8)]}, "
                "not 0, 1, 2, ..."
            )
        out[line] = recs[start:end]
        start = end
    return out


def history_from_tables(history: pa.Table, mops: pa.Table, run_id: str | None = None) -> History:
    """Rebuild the :class:`History` that :func:`history_tables` wrote.

    Parameters
    ----------
    history, mops : pyarrow.Table
        The ``history`` and ``history_mops`` tables (extra columns are ignored).
    run_id : str, optional
        The run to rebuild when the tables hold several runs (then it is required).

    Raises
    ------
    ValueError
        If a table misses a column, holds several runs and no ``run_id`` was given, has micro-ops
        of a line that does not exist, or the lines do not pair up as a history must
        (:class:`~engine.check.history.HistoryFormatError`, a ``ValueError``).
    """
    _columns(history, HISTORY_FIELDS, "history")
    _columns(mops, HISTORY_MOPS_FIELDS, "history_mops")
    history = _one_run(history, run_id, "history")
    mops = _one_run(mops, run_id, "history_mops")
    with gc_paused():  # millions of records, no reference cycle
        return _rebuild(history, _mops_by_index(mops))


def _rebuild(history: pa.Table, by_index: dict[int, list[Any]]) -> History:
    """Make the :class:`History` of the lines in ``history``, each with its micro-ops from ``by_index``."""
    for name, known in (("type", TYPES), ("f", FUNCTIONS)):
        bad = sorted(set(history.column(name).unique().to_pylist()) - set(known), key=str)
        if bad:
            raise ValueError(f"history: {name} {bad[0]!r} is not one of {', '.join(known)}")
    # Rows may come back in any order (from Parquet or Spark); a history is in index order.
    history = history.sort_by("index")
    cols = [history.column(f.name).to_pylist() for f in HISTORY_FIELDS]
    ops: list[Op] = []
    for index, time_ms, process, typ, f, error, keys, rebalance in zip(*cols, strict=True):
        if index is None or process is None or typ is None or f is None:
            raise ValueError(f"history: the line at index {index} has a null index, process, type or f")
        ops.append(
            Op(
                index,
                process,
                typ,
                f,
                0 if time_ms is None else time_ms,
                tuple(by_index.pop(index, ())),
                _keys(keys),
                _keys(rebalance),
                error,
            )
        )
    if by_index:
        orphans = sorted(by_index)[:5]
        raise ValueError(f"history_mops has micro-ops of line(s) {orphans} that the history table does not hold")
    return History(ops)
