"""The white-box invariants in Spark, with the Python checkers' exact records, for many runs in one pass.

Role
----
:mod:`engine.check.invariants` checks one run's :class:`~engine.check.ground_truth.GroundTruth`
in Python. Here the same checks read the tables of :mod:`engine.export.logs` as Spark
DataFrames (windows, group-bys, anti-joins, and SQL ``aggregate`` folds where the reference
walks a list in order), partitioned by ``run_id``, so a sweep of many runs is checked in one
Spark job. The result is the reference's: the same sorted :class:`~engine.check.anomaly.Anomaly`
records (kind, key, offsets, values, ops), their sentences rendered by Spark from the same
:class:`~engine.check.messages.Sentence` templates the Python checkers fill (byte for byte alike,
but for the records L1-replica-divergence quotes: ``eos_magics.spark.checks.twins.WORDED_APART``).

>>> from eos_magics.spark import session  # doctest: +SKIP
>>> from engine.export.logs import log_tables  # doctest: +SKIP
>>> spark = session.start()  # doctest: +SKIP
>>> frames = {n: spark.createDataFrame(t) for n, t in log_tables(gt, run).items()}  # doctest: +SKIP
>>> check_invariants_spark(spark, frames)  # doctest: +SKIP
[]

Ported and not ported
---------------------
=====  =================================  =======================================================
id     module                             Spark
=====  =================================  =======================================================
L1     :mod:`.replicas`                   ported
L2     :mod:`.idempotence`                ported (skipped with ``at_least_once``)
L3     :mod:`.idempotence`                ported (skipped with ``at_least_once``)
L4     :mod:`.transactions`               ported
L5     :mod:`.transactions`               ported
L6     :mod:`.atomicity`                  ported (decisions and alignment are SQL folds)
L7     :mod:`.offsets`                    ported; runs when a ``partition_state`` table is given
L8     :mod:`.offsets`                    ported
L9     :mod:`.aborted_index`              ported
L10    :mod:`.txn_state`                  ported
L11    (copier workload)                  not here: it needs each output's lineage, which only the
                                          copier keeps (as in the Python checkers)
L12    (Python only)                      not ported: it needs the values acknowledged to clients,
                                          which are in the client history, not the brokers' tables
L13    (Python only)                      not ported: it replays each leader's whole log through the
                                          engine's ``ProducerStateManager``; re-implementing that
                                          state machine in SQL would be a second, drifting copy
L14    :mod:`.liveness`                   ported
=====  =================================  =======================================================

Invariants
----------
* For every run, ``check_invariants_spark_by_run(...)[run]`` equals
  ``[a for a in check_ground_truth(gt, samples) if a.kind in SPARK_KINDS]`` (the tests assert
  it on clean, mutant and hand-corrupted runs); ordering ties inside one replica's log are the
  one documented exception (``_frames``).
* Every entry point validates its input and raises one :class:`SparkBridgeError` line.
* One query computes every check of every run (one ``collect`` of the union of the checks'
  frames, which share their common sub-plans: authoritative replicas, spans, decisions).

What it does not do
-------------------
It does not export anything (:mod:`engine.export` does) nor start Spark (the caller passes the
session).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias

from engine.check.anomaly import Anomaly, _sort_key
from engine.check.invariants import KINDS
from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.invariants import (
    aborted_index,
    atomicity,
    idempotence,
    liveness,
    offsets,
    replicas,
    transactions,
    txn_state,
)
from eos_magics.spark.invariants._frames import ANOMALY_COLUMNS, RUN, Frames, validate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "PYTHON_ONLY",
    "SPARK_KINDS",
    "anomaly_frame",
    "check_invariants_spark",
    "check_invariants_spark_by_run",
]

#: Invariants the Spark checks leave to Python, and why.
PYTHON_ONLY: dict[str, str] = {
    "L11": "needs each output's lineage, which only the copier workload keeps",
    "L12": "needs the values acknowledged to clients (the client history), not broker state",
    "L13": "replays each leader's log through the engine's ProducerStateManager",
}
#: Every anomaly kind the Spark checks report.
SPARK_KINDS: frozenset[str] = frozenset(k for k, (lid, _) in KINDS.items() if lid not in PYTHON_ONLY)
_FAMILIES = (replicas, transactions, atomicity, offsets, aborted_index, txn_state, liveness)


def anomaly_frame(tables: Mapping[str, DataFrame], *, at_least_once: bool = False) -> DataFrame:
    """Return every Spark-checked anomaly of every run as one DataFrame (nothing is computed yet).

    Columns: ``run_id, kind, topic, partition, offsets, values, message`` (``topic`` and
    ``partition`` null for anomalies with no key). Useful in a notebook to group or count
    anomalies across a sweep without collecting them.

    Raises
    ------
    SparkBridgeError
        If a table is missing, not a DataFrame, or lacks a column.
    """
    return _union(Frames(validate(tables)), at_least_once)


def _union(fr: Frames, at_least_once: bool) -> DataFrame:
    """Return the union of every check's anomaly frame."""
    frames: list[DataFrame] = []
    if not at_least_once:
        frames += idempotence.check(fr)
    for family in _FAMILIES:
        frames += family.check(fr)
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out.select(*ANOMALY_COLUMNS)


def _runs_frame(tables: Mapping[str, DataFrame]) -> DataFrame:
    names = sorted(tables)
    out = tables[names[0]].select(RUN)
    for n in names[1:]:
        out = out.union(tables[n].select(RUN))
    return out.distinct()


def _to_anomaly(row: Any) -> Anomaly:
    key = None if row["topic"] is None else (row["topic"], row["partition"])
    return Anomaly(
        row["kind"],
        key=key,
        offsets=tuple(row["offsets"] or ()),
        values=tuple(row["values"] or ()),
        message=row["message"] or "",
    )


def _check_session(spark: object) -> None:
    from pyspark.sql import SparkSession

    if not isinstance(spark, SparkSession):
        raise SparkBridgeError(
            f"pass the Spark session first (eos_magics.spark.session.start()), not {type(spark).__name__}"
        )


def check_invariants_spark_by_run(
    spark: SparkSession, tables: Mapping[str, DataFrame], *, at_least_once: bool = False
) -> dict[str, list[Anomaly]]:
    """Check every run in ``tables`` in one query; return ``{run_id: sorted anomalies}``.

    Parameters
    ----------
    spark : SparkSession
        The session the DataFrames belong to.
    tables : mapping of str to DataFrame
        The tables of :mod:`engine.export.logs` (``batches``, ``records``, ``replicas``,
        ``partitions``, ``txn_state``, ``aborted_index``, ``fetches``; ``partition_state`` for
        L7), holding any number of runs.
    at_least_once : bool
        Leave out L2 and L3, as ``check_ground_truth(..., at_least_once=True)`` does.

    Returns
    -------
    dict of str to list of Anomaly
        Every run found in any table, in run id order, each with its anomalies sorted as the
        Python checkers sort them (an empty list for a clean run).

    Raises
    ------
    SparkBridgeError
        If ``spark`` is not a session or a table is missing, not a DataFrame, or lacks a column.
    """
    _check_session(spark)
    checked = validate(tables)
    found = _union(Frames(checked, checkpoint=True), at_least_once)
    empty = (F.lit(None).cast(found.schema[c].dataType).alias(c) for c in ANOMALY_COLUMNS[1:])
    rows = found.unionByName(_runs_frame(checked).select(RUN, *empty)).collect()
    out: dict[str, list[Anomaly]] = {}
    for row in rows:
        bucket = out.setdefault(row[RUN], [])
        if row["kind"] is not None:
            bucket.append(_to_anomaly(row))
    return {run: sorted(out[run], key=_sort_key) for run in sorted(out)}


def check_invariants_spark(
    spark: SparkSession,
    tables: Mapping[str, DataFrame],
    *,
    run_id: str | None = None,
    at_least_once: bool = False,
) -> list[Anomaly]:
    """Check one run; return its anomalies sorted (see :func:`check_invariants_spark_by_run`).

    Parameters
    ----------
    run_id : str, optional
        The run to check; needed when the tables hold more than one.

    Raises
    ------
    SparkBridgeError
        As :func:`check_invariants_spark_by_run`; also when the tables hold several runs and no
        ``run_id`` is given, or none of ``run_id``.
    """
    _check_session(spark)
    checked = validate(tables)
    if run_id is not None and not isinstance(run_id, str):
        raise SparkBridgeError(f"run_id must be a string, not {run_id!r}")
    runs = _runs_frame(checked)
    if run_id is None:
        present = [r[RUN] for r in runs.limit(2).collect()]
        if len(present) > 1:
            raise SparkBridgeError("the tables hold several runs; pass run_id= to check one")
        if not present:
            return []
        run_id = present[0]
    elif not runs.where(F.col(RUN) == run_id).limit(1).collect():
        raise SparkBridgeError(f"no rows of run {run_id!r} in the tables; check the run id")
    one = {name: df.where(F.col(RUN) == run_id) for name, df in checked.items()}
    return check_invariants_spark_by_run(spark, one, at_least_once=at_least_once).get(run_id, [])
