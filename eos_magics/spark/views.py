"""Runs as Spark temp views: ``register(spark, source)`` makes ``records``, ``history``, ``trace`` ... queryable.

Role
----
The bridge from :mod:`engine.export` to Spark SQL. A source is a
:class:`~engine.export.run.RunExport`, a catalog run's ``ScenarioResult``, a directory written by
``eos export`` (or :meth:`RunExport.write_parquet`), or a list of those; every table of the
export schema becomes one temp view, ``prefix + table``::

    from eos_magics.spark import session, views
    spark = session.start()
    views.register(spark, "out/")                # or a RunExport, a ScenarioResult, a list
    spark.sql("SELECT run_id, count(*) FROM records GROUP BY run_id").show()

Arrow tables go to Spark with ``spark.createDataFrame(table, schema)``; a directory is read with
``spark.read.schema(...).parquet(files)`` after :func:`engine.export.parquet.inspect_export` has
checked its manifest and every file's schema (no row is read into Python). Both paths give the
same Spark schema, :func:`to_spark_schema` of :data:`engine.export.schema.TABLES`.

Invariants
----------
* Views of many sources are one view per table over all of them (``unionByName``); a run id
  given twice is an error, not a silent double count.
* Every error is one :class:`~eos_magics.spark.errors.SparkBridgeError` line that says what to
  do, never a JVM or pyarrow traceback.

What it does not do
-------------------
It runs no Spark job: views are lazy, the first query reads the data. It does not drop views it
made earlier under other names.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

__all__ = ["register", "to_spark_schema"]

_PREFIX = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)?$")


def _spark_type(t: pa.DataType, where: str) -> DataType:
    from pyspark.sql import types as T  # noqa: N812 - Spark's usual alias

    simple = {
        pa.int8(): T.ByteType(),
        pa.int16(): T.ShortType(),
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float32(): T.FloatType(),
        pa.float64(): T.DoubleType(),
        pa.bool_(): T.BooleanType(),
        pa.string(): T.StringType(),
        pa.large_string(): T.StringType(),
        pa.binary(): T.BinaryType(),
        pa.large_binary(): T.BinaryType(),
        pa.date32(): T.DateType(),
    }
    for arrow, spark in simple.items():
        if t.equals(arrow):
            return spark
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field
        return T.ArrayType(_spark_type(item.type, where), containsNull=item.nullable)
    if pa.types.is_struct(t):
        return T.StructType([T.StructField(f.name, _spark_type(f.type, where), nullable=f.nullable) for f in t.fields])
    if pa.types.is_timestamp(t):
        return T.TimestampType()
    if pa.types.is_dictionary(t):
        return _spark_type(t.value_type, where)
    raise SparkBridgeError(f"{where}: Arrow type {t} has no Spark type here; cast it to a simpler type first")


def to_spark_schema(schema: pa.Schema) -> StructType:
    """Return the Spark schema of an Arrow schema (int32 -> int, int64 -> bigint, list<struct> -> array<struct>).

    Parameters
    ----------
    schema
        An Arrow schema, e.g. ``engine.export.schema.TABLES["records"]``.

    Raises
    ------
    SparkBridgeError
        For a type with no Spark counterpart here (unsigned integers, decimals, maps ...).
    """
    from pyspark.sql import types as T  # noqa: N812

    if not isinstance(schema, pa.Schema):
        raise SparkBridgeError(f"to_spark_schema takes a pyarrow Schema, not {type(schema).__name__}")
    return T.StructType(
        [T.StructField(f.name, _spark_type(f.type, f"column {f.name}"), nullable=f.nullable) for f in schema]
    )


# -- sources ---------------------------------------------------------------------------------


def _export_of(source: Any, run_id: str | None) -> Any:
    """Return the RunExport of an in-memory source (a RunExport or a run's result), or None for a path."""
    from engine.export.run import RunExport, export_run
    from engine.export.schema import ExportError

    if isinstance(source, RunExport):
        return source.select(run_id) if run_id is not None else source
    if isinstance(source, str | Path):
        return None
    try:
        return export_run(source, run_id=run_id)
    except ExportError:
        raise SparkBridgeError(
            f"cannot register a {type(source).__name__}: give a RunExport, a catalog ScenarioResult (run_spec), "
            "an export directory (eos export ... --out DIR) or a list of those"
        ) from None


def _directory_frames(spark: SparkSession, path: str | Path, run_id: str | None) -> tuple[list[str], dict[str, Any]]:
    """Check an export directory and return (its run ids, {table: DataFrame read lazily})."""
    from engine.export.parquet import inspect_export
    from engine.export.schema import TABLES

    found = inspect_export(path)
    ids = [r.run_id for r in found.runs]
    files = found.files
    if run_id is not None:
        if run_id not in ids:
            raise SparkBridgeError(f"{path} holds no run {run_id!r}; its runs are: {', '.join(ids) or 'none'}")
        pos = ids.index(run_id)
        files = {name: (paths[pos],) for name, paths in files.items()}
        ids = [run_id]
    frames = {}
    for name, schema in TABLES.items():
        reader = spark.read.schema(to_spark_schema(schema))
        paths = [str(p) for p in files[name]]
        frames[name] = reader.parquet(*paths) if paths else spark.createDataFrame([], to_spark_schema(schema))
    return ids, frames


def _arrow_frames(spark: SparkSession, export: Any) -> dict[str, Any]:
    from engine.export.schema import TABLES

    # One chunk per table: PySpark 4.3's createDataFrame silently drops the rows that follow an
    # empty chunk of a chunked Arrow table (measured: chunks of 2, 0 and 2 rows gave 2 rows), and
    # stacked runs make such chunks.
    return {
        name: spark.createDataFrame(export[name].combine_chunks(), schema=to_spark_schema(TABLES[name]))
        for name in TABLES
    }


def register(
    spark: SparkSession | None,
    source: Any,
    *,
    prefix: str = "",
    run_id: str | None = None,
) -> dict[str, DataFrame]:
    """Register every table of one or more runs as Spark temp views; return ``{view name: DataFrame}``.

    Parameters
    ----------
    spark
        The session (``eos_magics.spark.session.start()``); None starts or reuses that one.
    source
        A ``RunExport``, a catalog run's ``ScenarioResult``, the path of an export
        directory, or a list of those (their runs are stacked).
    prefix
        Put before each table name: ``prefix="m3_"`` gives ``m3_records``, ``m3_history`` ...
    run_id
        For a run's result: the id to give it. For an export or a directory: keep only this run.

    Raises
    ------
    SparkBridgeError
        For a source of another kind, a directory that is missing, no export, of another schema
        version, short of a table or file, or holding a file of another schema; a bad prefix; a
        run id given twice.
    """
    from engine.export.schema import TABLES, ExportError

    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise SparkBridgeError(f"prefix {prefix!r} must be letters, digits and '_' (not first a digit), e.g. 'm3_'")
    if run_id is not None and not isinstance(run_id, str):
        raise SparkBridgeError(f"run_id must be a string, not {type(run_id).__name__}")
    sources = list(source) if isinstance(source, list | tuple) else [source]
    if not sources:
        raise SparkBridgeError("register got an empty list; give at least one run or export directory")
    if spark is None:
        from eos_magics.spark import session

        spark = session.start()
    parts: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    try:
        for src in sources:
            export = _export_of(src, run_id)
            if export is None:
                ids, frames = _directory_frames(spark, src, run_id)
                label = str(src)
            else:
                ids, frames, label = export.run_ids, _arrow_frames(spark, export), "an in-memory export"
            for rid in ids:
                if rid in seen:
                    raise SparkBridgeError(
                        f"run {rid} is given twice (in {seen[rid]} and {label}); register each run once"
                    )
                seen[rid] = label
            parts.append(frames)
    except ExportError as exc:
        raise SparkBridgeError(str(exc)) from None
    out: dict[str, DataFrame] = {}
    for name in TABLES:
        df = _union([p[name] for p in parts])
        view = prefix + name
        df.createOrReplaceTempView(view)
        out[view] = df
    return out


def _union(frames: list[Any]) -> Any:
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return df
