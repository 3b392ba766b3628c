"""The brokers' state of a run as Arrow tables, and back: every replica's log, offsets, indexes, fetches.

Role
----
The white-box invariants (:mod:`engine.check.invariants`) read a frozen
:class:`~engine.check.ground_truth.GroundTruth` and, for L7, the
:class:`~engine.check.timeline.TimelineSample` series. :func:`log_tables` writes the first as
the tables of ``eos-checking.md`` §5.5 and :func:`partition_state_table` the second, so pandas,
Parquet and Spark read what the Python checkers read. :func:`ground_truth_from_tables` and
:func:`samples_from_table` rebuild both from the tables of one run, so the Python checkers can
run on an export, and Spark's results can be compared with theirs on the same data.

=================  ==========================================================================
table              one row per
=================  ==========================================================================
``records``        record of every replica's log (one row per replica copy)
``batches``        batch of every replica's log (keys and values are in ``records``)
``replicas``       replica: status, role, leader epoch, LEO, HW, LSO
``partitions``     partition: the controller's final leader, ISR and replicas
``txn_state``      ``__transaction_state`` transition (``source`` coordinator or log)
``aborted_index``  entry of a replica's aborted-transaction index
``producers``      producer of a leader replica's in-memory producer table
``fetches``        consumer fetch answered without error
``partition_state`` timeline sample: a leader's epoch, LEO, HW and LSO when one changed
=================  ==========================================================================

Invariants
----------
* The schema of each table is exactly ``RUN_FIELDS + LOG_FIELDS[name]``, with zero rows too.
* Rows keep the ground truth's order (already deterministic: topic, partition, broker, offset).
* Keys and values are text (:func:`~engine.export.common.as_text`): internal topics hold
  objects, so a rebuilt ground truth holds their ``str``. Runs whose values are text round-trip
  exactly, and the invariants give the same anomalies on the rebuilt ground truth.
* ``partitions`` carries two run-wide values the checks need and no other table has:
  ``transaction_version`` (L6 reads it) and ``snapshot_ms`` (the clock when the state was
  read). A run with no partition rebuilds with version 2 and time 0.

What it does not do
-------------------
It does not export the trace, faults, group offsets or the client history (see the other
modules of :mod:`engine.export`); :func:`ground_truth_from_tables` reads a ``faults`` table when
one is given and leaves ``faults`` empty otherwise. It does not check anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from engine.check.ground_truth import (
    AbortedRow,
    BatchRow,
    FaultRow,
    FetchRow,
    GroundTruth,
    LeaderAndIsrRow,
    ProducerEntryRow,
    ReplicaRow,
    TxnTransitionRow,
)
from engine.check.timeline import TimelineSample
from engine.export.common import KEY_LIST, RunId, as_text, table
from engine.log.flatten import records_of

__all__ = [
    "LOG_FIELDS",
    "LOG_TABLES",
    "ground_truth_from_tables",
    "log_tables",
    "partition_state_table",
    "samples_from_table",
]

_I32, _I64, _STR, _BOOL = pa.int32(), pa.int64(), pa.string(), pa.bool_()
_DEFAULT_TRANSACTION_VERSION = 2


def _f(name: str, typ: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, typ, nullable=nullable)


_TP = (_f("topic", _STR), _f("partition", _I32))
_REPLICA = (*_TP, _f("broker_id", _I32))
_PRODUCER = (_f("producer_id", _I64), _f("producer_epoch", _I32))
_FLAGS = (
    _f("is_transactional", _BOOL),
    _f("is_control", _BOOL),
    _f("control_type", _STR, True),
    _f("coordinator_epoch", _I32),
)

#: Every table of this module: name -> its fields after the run columns.
LOG_FIELDS: dict[str, tuple[pa.Field, ...]] = {
    "records": (
        *_REPLICA,
        _f("offset", _I64),
        _f("leader_epoch", _I32),
        *_PRODUCER,
        _f("base_sequence", _I32),
        _f("sequence", _I32),
        *_FLAGS,
        _f("key", _STR, True),
        _f("value", _STR, True),
        _f("batch_base_offset", _I64),
        _f("batch_last_offset", _I64),
        _f("create_time_ms", _I64),
        _f("final_leader", _BOOL),
    ),
    "batches": (
        *_REPLICA,
        _f("base_offset", _I64),
        _f("last_offset", _I64),
        _f("leader_epoch", _I32),
        *_PRODUCER,
        _f("base_sequence", _I32),
        _f("last_sequence", _I32),
        *_FLAGS,
        _f("create_time_ms", _I64),
        _f("record_count", _I32),
        _f("final_leader", _BOOL),
    ),
    "replicas": (
        *_REPLICA,
        _f("status", _STR),
        _f("is_leader", _BOOL),
        _f("leader_epoch", _I32, True),
        _f("leo", _I64),
        _f("hw", _I64),
        _f("lso", _I64, True),
    ),
    "partitions": (
        *_TP,
        _f("leader", _I32),
        _f("leader_epoch", _I32),
        _f("isr", pa.list_(_I32)),
        _f("replicas", pa.list_(_I32)),
        _f("transaction_version", _I32),
        _f("snapshot_ms", _I64),
    ),
    "txn_state": (
        _f("source", _STR),
        _f("broker_id", _I32),
        _f("transactional_id", _STR),
        _f("index", _I32),
        _f("offset", _I64),
        *_PRODUCER,
        _f("state", _STR),
        _f("partitions", KEY_LIST),
        _f("txn_start_ms", _I64),
        _f("update_ms", _I64),
    ),
    "aborted_index": (
        *_REPLICA,
        _f("producer_id", _I64),
        _f("first_offset", _I64),
        _f("last_offset", _I64),
        _f("last_stable_offset", _I64),
    ),
    "producers": (
        *_REPLICA,
        *_PRODUCER,
        _f("last_sequence", _I32),
        _f("current_txn_first_offset", _I64, True),
    ),
    "fetches": (
        _f("time_ms", _I64),
        _f("consumer", _STR),
        _f("isolation", _STR),
        *_TP,
        _f("fetch_offset", _I64),
        _f("next_offset", _I64, True),
        _f("records", _I32, True),
        _f("hw", _I64),
        _f("lso", _I64),
    ),
    "partition_state": (
        _f("index", _I64),
        _f("time_ms", _I64),
        *_REPLICA,
        _f("leader_epoch", _I32),
        _f("leo", _I64),
        _f("hw", _I64),
        _f("lso", _I64),
    ),
}

#: The tables :func:`log_tables` returns (every table of :data:`LOG_FIELDS` but ``partition_state``).
LOG_TABLES: tuple[str, ...] = tuple(n for n in LOG_FIELDS if n != "partition_state")

#: Row type and the names of its fields, in table-column order, for the tables that map one to one.
_ROWS: dict[str, tuple[type, tuple[str, ...]]] = {
    "replicas": (ReplicaRow, ReplicaRow._fields),
    "aborted_index": (AbortedRow, AbortedRow._fields),
    "producers": (ProducerEntryRow, ProducerEntryRow._fields),
    "fetches": (FetchRow, FetchRow._fields),
}


# -- ground truth -> tables -----------------------------------------------------------------------------


def _columns(rows: Sequence[tuple[Any, ...]], names: Sequence[str]) -> dict[str, list[Any]]:
    """Return ``{name: column}`` from rows whose fields are ``names`` in order."""
    cols = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    return {n: list(c) for n, c in zip(names, cols, strict=True)}


def _record_columns(batches: Sequence[BatchRow], final: Sequence[bool]) -> dict[str, list[Any]]:
    """Return the ``records`` columns: batch-wide values repeated, per-record values computed."""
    names = [f.name for f in LOG_FIELDS["records"]]
    cols: dict[str, list[Any]] = {n: [] for n in names}
    per_batch = (
        ("topic", "topic"),
        ("partition", "partition"),
        ("broker_id", "broker_id"),
        ("leader_epoch", "leader_epoch"),
        ("producer_id", "producer_id"),
        ("producer_epoch", "producer_epoch"),
        ("base_sequence", "base_sequence"),
        ("is_transactional", "is_transactional"),
        ("is_control", "is_control"),
        ("control_type", "control_type"),
        ("coordinator_epoch", "coordinator_epoch"),
        ("batch_base_offset", "base_offset"),
        ("batch_last_offset", "last_offset"),
        ("create_time_ms", "create_time"),
    )
    targets = [(cols[col], attr) for col, attr in per_batch]
    offsets, sequences, keys, values, finals = (
        cols["offset"],
        cols["sequence"],
        cols["key"],
        cols["value"],
        cols["final_leader"],
    )
    for b, is_final in zip(batches, final, strict=True):
        r = records_of(b)
        n = len(r.values)
        for col, attr in targets:
            col.extend([getattr(b, attr)] * n)
        offsets.extend(r.offsets)
        sequences.extend(r.sequences)
        keys.extend(as_text(k) for k in r.keys)
        values.extend(as_text(v) for v in r.values)
        finals.extend([is_final] * n)
    return cols


def log_tables(gt: GroundTruth, run: RunId) -> dict[str, pa.Table]:
    """Return the ground truth of one run as Arrow tables (every table of :data:`LOG_TABLES`).

    Parameters
    ----------
    gt : GroundTruth
        What :func:`~engine.check.ground_truth.export_ground_truth` read from a cluster (or a
        corrupted copy of it).
    run : RunId
        The run columns every row gets.

    Returns
    -------
    dict of str to pyarrow.Table
        ``{name: table}`` in the order of :data:`LOG_TABLES`, each with the schema
        ``RUN_FIELDS + LOG_FIELDS[name]``, empty tables included.

    Raises
    ------
    ValueError
        If ``gt`` is not a GroundTruth or ``run`` not a RunId.
    """
    if not isinstance(gt, GroundTruth):
        raise ValueError(f"log_tables needs a GroundTruth (engine.check.ground_truth.export_ground_truth), not {gt!r}")
    if not isinstance(run, RunId):
        raise ValueError(f"log_tables needs a RunId(run_id, scenario, seed), not {run!r}")
    leaders = {tp: gt.authoritative(tp) for tp in gt.partition_keys()}
    final = [leaders.get(b.tp) == b.broker_id for b in gt.batches]
    out: dict[str, pa.Table] = {}
    out["records"] = table(run, LOG_FIELDS["records"], _record_columns(gt.batches, final))
    batch_names = [f.name for f in LOG_FIELDS["batches"]][:-2]
    batch_attrs = [n if n != "create_time_ms" else "create_time" for n in batch_names]
    batch_cols = {n: [getattr(b, a) for b in gt.batches] for n, a in zip(batch_names, batch_attrs, strict=True)}
    batch_cols["record_count"] = [len(b.values) for b in gt.batches]
    batch_cols["final_leader"] = final
    out["batches"] = table(run, LOG_FIELDS["batches"], batch_cols)
    out["replicas"] = table(run, LOG_FIELDS["replicas"], _columns(gt.replicas, ReplicaRow._fields))
    part_cols = _columns(gt.partitions, LeaderAndIsrRow._fields)
    part_cols["isr"] = [list(x) for x in part_cols["isr"]]
    part_cols["replicas"] = [list(x) for x in part_cols["replicas"]]
    part_cols["transaction_version"] = [gt.transaction_version] * len(gt.partitions)
    part_cols["snapshot_ms"] = [gt.time_ms] * len(gt.partitions)
    out["partitions"] = table(run, LOG_FIELDS["partitions"], part_cols)
    txn_cols = _columns(gt.txn_history, TxnTransitionRow._fields)
    txn_cols["partitions"] = [[{"topic": t, "partition": p} for t, p in x] for x in txn_cols["partitions"]]
    out["txn_state"] = table(run, LOG_FIELDS["txn_state"], txn_cols)
    for name in ("aborted_index", "producers", "fetches"):
        rows = getattr(gt, name)
        out[name] = table(run, LOG_FIELDS[name], _columns(rows, _ROWS[name][1]))
    return {name: out[name] for name in LOG_TABLES}


def partition_state_table(samples: Iterable[TimelineSample], run: RunId) -> pa.Table:
    """Return timeline samples (:attr:`PartitionTimeline.samples`) as the ``partition_state`` table.

    Rows keep the samples' order (the order the changes happened).

    Raises
    ------
    ValueError
        If a sample is not a TimelineSample or ``run`` not a RunId.
    """
    if not isinstance(run, RunId):
        raise ValueError(f"partition_state_table needs a RunId(run_id, scenario, seed), not {run!r}")
    rows = list(samples)
    bad = next((s for s in rows if not isinstance(s, TimelineSample)), None)
    if bad is not None:
        raise ValueError(f"partition_state_table needs TimelineSample rows (PartitionTimeline.samples), not {bad!r}")
    return table(run, LOG_FIELDS["partition_state"], _columns(rows, TimelineSample._fields))


# -- tables -> ground truth -----------------------------------------------------------------------------


def _one_run(name: str, t: Any, run_id: str | None) -> tuple[pa.Table, str | None]:
    """Return the rows of one run of a table (checked), and the run id they belong to."""
    if not isinstance(t, pa.Table):
        raise ValueError(f"table {name!r} must be a pyarrow.Table, not {type(t).__name__}")
    want = ["run_id", *(f.name for f in LOG_FIELDS[name])] if name in LOG_FIELDS else ["run_id", *_FAULT_COLUMNS]
    missing = [c for c in want if c not in t.column_names]
    if missing:
        raise ValueError(
            f"table {name!r} has no column {missing[0]!r}; export it again with engine.export.logs.log_tables"
        )
    runs = pc.unique(t["run_id"]).to_pylist()
    if run_id is None:
        if len(runs) > 1:
            shown = ", ".join(sorted(map(str, runs))[:5])
            raise ValueError(f"table {name!r} holds {len(runs)} runs ({shown}, ...); pass run_id= to pick one")
        return t, (runs[0] if runs else None)
    return t.filter(pc.equal(t["run_id"], run_id)), run_id


def _rows(t: pa.Table, names: Sequence[str]) -> list[tuple[Any, ...]]:
    cols = [t[n].to_pylist() for n in names]
    return list(zip(*cols, strict=True)) if cols else []


def _batches(batches: pa.Table, records: pa.Table) -> list[BatchRow]:
    """Rebuild batch rows, taking each batch's keys and values from its records (in offset order)."""
    by_batch: dict[tuple[str, int, int, int], list[tuple[int, Any, Any]]] = {}
    for t, p, b, base, off, k, v in _rows(
        records, ("topic", "partition", "broker_id", "batch_base_offset", "offset", "key", "value")
    ):
        by_batch.setdefault((t, p, b, base), []).append((off, k, v))
    for rows in by_batch.values():
        rows.sort(key=lambda r: r[0])
    taken: dict[tuple[str, int, int, int], int] = {}
    names = [f.name for f in LOG_FIELDS["batches"]]
    out: list[BatchRow] = []
    for row in _rows(batches, names):
        d = dict(zip(names, row, strict=True))
        key = (d["topic"], d["partition"], d["broker_id"], d["base_offset"])
        start = taken.get(key, 0)
        mine = by_batch.get(key, [])[start : start + d["record_count"]]
        taken[key] = start + d["record_count"]
        out.append(
            BatchRow(
                *(d[n] for n in names[:14]),
                d["create_time_ms"],
                tuple(r[1] for r in mine),
                tuple(r[2] for r in mine),
            )
        )
    return out


_FAULT_COLUMNS = ("time_ms", "source", "kind", "node", "params")


def _faults(t: pa.Table) -> list[FaultRow]:
    out = []
    for time_ms, source, kind, node, params in _rows(t, _FAULT_COLUMNS):
        raw = json.loads(params) if isinstance(params, str) and params else []
        pairs = raw.items() if isinstance(raw, dict) else (tuple(x) for x in raw)
        out.append(FaultRow(time_ms, source, kind, node, tuple((k, v) for k, v in pairs)))
    return out


def ground_truth_from_tables(tables: Mapping[str, pa.Table], run_id: str | None = None) -> GroundTruth:
    """Rebuild the :class:`GroundTruth` of one run from its tables (the inverse of :func:`log_tables`).

    Parameters
    ----------
    tables : mapping of str to pyarrow.Table
        At least every table of :data:`LOG_TABLES`; a ``faults`` table (``params`` as JSON) is
        read when present. Tables may hold several runs.
    run_id : str, optional
        The run to rebuild; needed when the tables hold more than one.

    Returns
    -------
    GroundTruth
        Keys and values as text (see the module docstring); everything else as exported.

    Raises
    ------
    ValueError
        If a table is missing or lacks a column, or several runs are there and none was named.
    """
    if not isinstance(tables, Mapping):
        raise ValueError(f"ground_truth_from_tables needs a mapping of table name to pyarrow.Table, not {tables!r}")
    missing = [n for n in LOG_TABLES if n not in tables]
    if missing:
        raise ValueError(
            f"no {missing[0]!r} table given; pass every table log_tables returns ({', '.join(LOG_TABLES)})"
        )
    picked: dict[str, pa.Table] = {}
    found: set[str] = set()
    for name in (*LOG_TABLES, *(("faults",) if "faults" in tables else ())):
        picked[name], rid = _one_run(name, tables[name], run_id)
        if rid is not None and picked[name].num_rows:
            found.add(rid)
    if run_id is None and len(found) > 1:
        shown = ", ".join(sorted(found)[:5])
        raise ValueError(f"the tables hold {len(found)} runs ({shown}); pass run_id= to pick one")
    with_rows = [t for t in picked.values() if t.num_rows and "seed" in t.column_names]
    seed = with_rows[0]["seed"][0].as_py() if with_rows else 0
    parts = picked["partitions"]
    version = parts["transaction_version"][0].as_py() if parts.num_rows else _DEFAULT_TRANSACTION_VERSION
    snapshot = parts["snapshot_ms"][0].as_py() if parts.num_rows else 0
    partitions = [
        LeaderAndIsrRow(t, p, leader, epoch, tuple(isr), tuple(reps))
        for t, p, leader, epoch, isr, reps, *_ in _rows(parts, [f.name for f in LOG_FIELDS["partitions"]])
    ]
    txn_names = [f.name for f in LOG_FIELDS["txn_state"]]
    txn = [
        TxnTransitionRow(*row[:8], tuple((k["topic"], k["partition"]) for k in row[8]), *row[9:])
        for row in _rows(picked["txn_state"], txn_names)
    ]
    simple = {name: [cls(*row) for row in _rows(picked[name], names)] for name, (cls, names) in _ROWS.items()}
    return GroundTruth(
        seed=seed,
        time_ms=snapshot,
        transaction_version=version,
        batches=tuple(_batches(picked["batches"], picked["records"])),
        replicas=tuple(simple["replicas"]),
        partitions=tuple(partitions),
        txn_history=tuple(txn),
        aborted_index=tuple(simple["aborted_index"]),
        producers=tuple(simple["producers"]),
        fetches=tuple(simple["fetches"]),
        faults=tuple(_faults(picked["faults"])) if "faults" in picked else (),
    )


def samples_from_table(t: pa.Table, run_id: str | None = None) -> list[TimelineSample]:
    """Return the timeline samples of one run from a ``partition_state`` table, in row order.

    Raises
    ------
    ValueError
        If the table lacks a column, or holds several runs and ``run_id`` is None.
    """
    picked, _ = _one_run("partition_state", t, run_id)
    return [TimelineSample(*row) for row in _rows(picked, TimelineSample._fields)]
