"""The black-box EOS checks in Spark: the same :class:`~engine.check.anomaly.Report` as the Python checker.

Role
----
:func:`check_history_spark` judges the ``history`` and ``history_mops`` tables of an export
(:mod:`engine.export.history`), loaded as Spark DataFrames, and returns the report that
:func:`engine.check.checker.check_history` gives on the same history: the same anomaly records
(kind, key, offsets, values, ops, and a message worded alike), the same split into forbidden
and allowed, the same stats. :func:`check_runs_spark` does it for every run in the tables at
once, which is what a sweep's export needs: every check is grouped by ``run_id``.

How
---
Two Spark actions per call, over cached intermediates (:mod:`eos_magics.spark.checks.frames`),
each collecting the union of several checkers' rows:

1. the stats of each run with the lines that make a table no history at all
   (:mod:`eos_magics.spark.checks.stats`), and the checks over values and offsets (C1-C5);
2. the ordering checks (C6-C12) and the dependency edges of the runs that have a backward edge;
   the cycle search runs on the driver with networkx (:mod:`eos_magics.spark.checks.cycles`).

Only when some poll skipped values does a third, small join name them. While a check runs,
adaptive execution, broadcast joins and code generation are off, and small inputs use one
shuffle partition (the session's settings are restored afterwards): on queries this small
each costs more than it saves.

Invariants
----------
* Parity: on any history, ``check_history_spark(...) == check_history(history, allowed=...)``
  (``tests/spark/test_spark_history_checks.py`` holds it on the example catalogue, catalog
  runs and mutant runs).
* The cached intermediates are released before the call returns, also when it raises.

What it does not do
-------------------
It does not read Parquet or build the DataFrames (``spark.createDataFrame(arrow_table)`` or the
export's views do) and does not run the white-box invariants.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from engine.check.anomaly import Anomaly, Report, resolve_allowed
from engine.export.history import HISTORY_FIELDS, HISTORY_MOPS_FIELDS
from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["check_history_spark", "check_runs_spark"]


def _allowed(allowed: str | Iterable[str]) -> frozenset[str]:
    try:
        return resolve_allowed(allowed)
    except ValueError as exc:
        raise SparkBridgeError(str(exc)) from None


def _frame(df: Any, fields: Any, what: str) -> DataFrame:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as sf

    if not isinstance(df, DataFrame):
        raise SparkBridgeError(
            f"{what} must be a Spark DataFrame, not {type(df).__name__}; "
            "load the export's table with spark.createDataFrame(arrow_table) or spark.read.parquet(path)"
        )
    missing = [f.name for f in fields if f.name not in df.columns]
    if missing:
        raise SparkBridgeError(
            f"the {what} DataFrame has no column(s) {', '.join(missing)}; "
            f"pass the '{what}' table of engine.export.history.history_tables"
        )
    if "run_id" not in df.columns:
        df = df.withColumn("run_id", sf.lit(""))
    return df


#: Session settings for the checks' many small queries. Adaptive execution re-plans every stage,
#: each broadcast join runs a job of its own and holds pages of driver memory, and code
#: generation compiles every stage and expression (``factoryMode`` is Spark's internal switch
#: for the latter): on data this small each costs more than it saves. Measured on the example
#: catalogue, on two cores: about a third of the time and of the CPU of the defaults.
_SETTINGS = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


#: Below this estimated input size one shuffle partition is enough: every stage is then one task.
_SMALL_BYTES = 64 << 20


def _estimated_bytes(df: DataFrame) -> int | None:
    """Return Spark's own estimate of ``df``'s size without running it, or None where it has none."""
    try:
        return int(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes())
    except Exception:  # Spark Connect has no JVM handle; then the session's setting stays
        return None


@contextlib.contextmanager
def _settings(spark: SparkSession, size: int | None) -> Iterator[None]:
    """Apply :data:`_SETTINGS` for the duration of a check, then put the session's own back."""
    settings = dict(_SETTINGS)
    if size is not None and size < _SMALL_BYTES:
        settings["spark.sql.shuffle.partitions"] = "1"
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _collect(dfs: Iterable[DataFrame]) -> list[Any]:
    """Collect the union of ``dfs`` (one Spark action)."""
    it = iter(dfs)
    rows = next(it)
    for df in it:
        rows = rows.unionByName(df)
    return rows.collect()


def _found(spark: SparkSession, history: DataFrame, mops: DataFrame) -> dict[str, tuple[list[Anomaly], dict[str, int]]]:
    """Run every check over every run: ``run_id -> (anomalies, stats)``.

    Two actions: the stats and the checks over values and offsets (C1-C5), then the ordering
    checks (C6-C12) and the dependency edges; a third, only when some poll skipped values,
    names them.
    """
    from engine.check.cycles import cycles_of_edges
    from engine.check.messages import history_anomaly
    from eos_magics.spark.checks.aborted_reads import aborted_reads, precommitted_reads
    from eos_magics.spark.checks.cycles import EDGE, edge_rows, edges_by_run
    from eos_magics.spark.checks.frames import build_frames
    from eos_magics.spark.checks.lost_writes import lost_writes
    from eos_magics.spark.checks.offsets_dups import duplicates, inconsistent_offsets
    from eos_magics.spark.checks.polls import polls, skipped_values
    from eos_magics.spark.checks.sends import sends
    from eos_magics.spark.checks.stats import KINDS, read_stats, stats_rows

    fr = build_frames(history, mops)
    try:
        first = _collect(
            [
                stats_rows(fr, history, mops),
                *(c(fr) for c in (inconsistent_offsets, duplicates, lost_writes, aborted_reads)),
            ]
        )
        stats = read_stats(first)
        if not stats:
            return {}
        second = _collect([*(c(fr) for c in (precommitted_reads, polls, sends)), edge_rows(fr)])
        skipped = skipped_values(spark, fr, second)
    finally:
        fr.unpersist()
    found: dict[str, list[Anomaly]] = {run: [] for run in stats}
    for r in [*first, *second]:
        if r["kind"] in KINDS or r["kind"] == EDGE:
            continue
        key = (r["topic"], r["partition"])
        values = r["values"] if r["ranks"] is None else skipped[(r["run_id"], *key, *r["ranks"])]
        found[r["run_id"]].append(
            history_anomaly(r["kind"], key, r["offsets"], values, r["ops"], n=r["n"], process=r["process"])
        )
    for run, edges in edges_by_run(second).items():
        found[run].extend(cycles_of_edges(edges))
    return {run: (found[run], stats[run]) for run in stats}


def check_runs_spark(
    spark: SparkSession,
    history_df: DataFrame,
    mops_df: DataFrame,
    *,
    allowed: str | Iterable[str] | Mapping[str, str | Iterable[str]] = "eos",
) -> dict[str, Report]:
    """Check every run in the tables at once; return ``{run_id: Report}``, run ids sorted.

    Parameters
    ----------
    spark : SparkSession
        The session the DataFrames belong to (``eos_magics.spark.session.start()``).
    history_df, mops_df : DataFrame
        The ``history`` and ``history_mops`` tables of one or many runs (see
        :mod:`engine.export.history`); without a ``run_id`` column they are one run, ``""``.
    allowed : str, iterable of str, or mapping
        A mode (``eos``, ``subscribe``, ``at-least-once``) or an explicit set of kinds, for
        every run; or ``{run_id: mode or kinds}``, one per run, as a sweep over scenarios of
        several modes needs (runs it does not name are checked in ``eos``).

    Raises
    ------
    SparkBridgeError
        For an unknown mode or kind, something that is not a DataFrame, a missing column, or
        tables that do not form a history.
    """
    if isinstance(allowed, Mapping):
        per_run = {run: _allowed(mode) for run, mode in allowed.items()}
        default = _allowed("eos")
    else:
        per_run = {}
        default = _allowed(allowed)
    if not hasattr(spark, "createDataFrame"):
        raise SparkBridgeError(
            f"spark must be a SparkSession, not {type(spark).__name__}; use eos_magics.spark.session.start()"
        )
    history = _frame(history_df, HISTORY_FIELDS, "history")
    mops = _frame(mops_df, HISTORY_MOPS_FIELDS, "history_mops")
    sizes = [_estimated_bytes(history), _estimated_bytes(mops)]
    size = None if None in sizes else sum(s for s in sizes if s is not None)
    with _settings(spark, size):
        found = _found(spark, history, mops)
    return {
        run: Report.classify(anomalies, per_run.get(run, default), stats)
        for run, (anomalies, stats) in sorted(found.items())
    }


def check_history_spark(
    spark: SparkSession,
    history_df: DataFrame,
    mops_df: DataFrame,
    *,
    allowed: str | Iterable[str] = "eos",
    run_id: str | None = None,
) -> Report:
    """Check one run's history in Spark; the result equals :func:`engine.check.checker.check_history`'s.

    Parameters
    ----------
    spark : SparkSession
        The session the DataFrames belong to.
    history_df, mops_df : DataFrame
        The ``history`` and ``history_mops`` tables (:mod:`engine.export.history`).
    allowed : str or iterable of str
        A mode (``eos``, ``subscribe``, ``at-least-once``) or an explicit set of kinds.
    run_id : str, optional
        The run to check; required when the tables hold several runs.

    Raises
    ------
    SparkBridgeError
        As :func:`check_runs_spark`, and when the tables hold several runs and no ``run_id``
        was given, or none of ``run_id``.
    """
    from pyspark.sql import functions as sf

    _allowed(allowed)
    history = _frame(history_df, HISTORY_FIELDS, "history")
    mops = _frame(mops_df, HISTORY_MOPS_FIELDS, "history_mops")
    if run_id is not None:
        history = history.where(sf.col("run_id") == run_id)
        mops = mops.where(sf.col("run_id") == run_id)
    else:
        # Fail before the real work when the caller forgot to pick a run.
        runs = [r["run_id"] for r in history.select("run_id").distinct().limit(3).collect()]
        if len(runs) > 1:
            shown = ", ".join(repr(r) for r in sorted(runs)[:2])
            raise SparkBridgeError(f"the tables hold several runs ({shown}, ...); pass run_id= to pick one")
    reports = check_runs_spark(spark, history, mops, allowed=allowed)
    if run_id is not None:
        if run_id not in reports:
            raise SparkBridgeError(f"the tables hold no rows of run_id={run_id!r}")
        return reports[run_id]
    if not reports:
        return Report.classify([], _allowed(allowed), {"ops": 0, "reads": 0, "sends": 0, "keys": 0})
    return next(iter(reports.values()))
