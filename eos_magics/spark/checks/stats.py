"""What a Spark check counted, and what makes tables no history at all, as rows of the checkers' shape.

Role
----
:func:`stats_rows` gives, per run, the counts of :attr:`engine.check.anomaly.Report.stats`
(``ops``, ``reads``, ``sends``, ``keys``, counted as :class:`~engine.check.analysis.AnalysisBuilder`
counts them) and one row per line the Python :class:`~engine.check.history.History` would
refuse: an unknown type or f, a completion without an invocation of its process or with another
f, an invocation followed by another one, an index used twice, an unknown ``mop_f``, a poll
without an offset. The rows have the checkers' columns
(:data:`~eos_magics.spark.checks.frames.ANOMALY_COLUMNS`) so they travel in the same action;
:func:`read_stats` turns them back into stats, or into an error.

Invariants
----------
Every run with a history line gets a stats row; a run with no micro-op counts zero reads,
sends and keys.

What it does not do
-------------------
It does not look for micro-ops of lines the history does not hold, nor at what an invocation
announces; :func:`engine.export.history.history_from_tables` checks those when it rebuilds a
history.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as sf

from engine.check.history import FUNCTIONS, TYPES
from eos_magics.spark.checks.frames import Frames
from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["read_stats", "stats_rows"]

_OPS = "__ops__"
_MOPS = "__mops__"
_PROBLEM = "__problem__"
#: The row kinds of this module; they are never anomalies.
KINDS = (_OPS, _MOPS, _PROBLEM)


def _meta(df: DataFrame, kind: str, ops: Column, values: Column | None = None) -> DataFrame:
    return df.select(
        "run_id",
        sf.lit(kind).alias("kind"),
        sf.lit(None).cast("string").alias("topic"),
        sf.lit(None).cast("int").alias("partition"),
        sf.array().cast("array<bigint>").alias("offsets"),
        (sf.array() if values is None else values).cast("array<string>").alias("values"),
        ops.cast("array<bigint>").alias("ops"),
        sf.lit(None).cast("bigint").alias("n"),
        sf.lit(None).cast("bigint").alias("process"),
        sf.lit(None).cast("array<bigint>").alias("ranks"),
    )


def _problems(history: DataFrame, mops: DataFrame) -> DataFrame:
    w = Window.partitionBy("run_id", "process").orderBy("index")
    lines = (
        history.select("run_id", "index", "process", "type", "f")
        .withColumn("prev_type", sf.lag("type").over(w))
        .withColumn("prev_f", sf.lag("f").over(w))
        .withColumn("next_type", sf.lead("type").over(w))
    )
    done = sf.col("type") != "invoke"
    what = (
        sf.when(~sf.col("type").isin(*TYPES), sf.concat(sf.lit("unknown type "), sf.col("type")))
        .when(~sf.col("f").isin(*FUNCTIONS), sf.concat(sf.lit("unknown f "), sf.col("f")))
        .when(
            done & (sf.col("prev_type").isNull() | (sf.col("prev_type") != "invoke")),
            sf.lit("a completion without an invocation"),
        )
        .when(done & (sf.col("prev_f") != sf.col("f")), sf.lit("a completion with another f than its invocation"))
        .when(~done & (sf.col("next_type") == "invoke"), sf.lit("an invocation followed by another one"))
    )
    bad_lines = lines.select("run_id", "index", what.alias("what"))
    twice = (
        history.groupBy("run_id", "index")
        .agg(sf.count(sf.lit(1)).alias("n"))
        .select("run_id", "index", sf.when(sf.col("n") > 1, sf.lit("an index used by two lines")).alias("what"))
    )
    what_mop = sf.when(
        ~sf.col("mop_f").isin("send", "poll"), sf.concat(sf.lit("unknown mop_f "), sf.col("mop_f"))
    ).when((sf.col("mop_f") == "poll") & sf.col("offset").isNull(), sf.lit("a poll without an offset"))
    bad_mops = mops.select("run_id", "index", what_mop.alias("what"))
    found = bad_lines.unionByName(twice).unionByName(bad_mops).where(sf.col("what").isNotNull())
    return _meta(found, _PROBLEM, sf.array("index"), sf.array("what"))


def stats_rows(fr: Frames, history: DataFrame, mops: DataFrame) -> DataFrame:
    """Return the stats rows of every run and one row per problem line (see the module docstring)."""
    ops = _meta(fr.ops.groupBy("run_id").agg(sf.count(sf.lit(1)).alias("n")), _OPS, sf.array("n"))
    counts = fr.mops.groupBy("run_id").agg(
        sf.count(sf.when(sf.col("mop_f") == "poll", 1)).alias("reads"),
        sf.count(sf.when(sf.col("mop_f") == "send", 1)).alias("sends"),
        sf.count_distinct("topic", "partition").alias("keys"),
    )
    return ops.unionByName(_meta(counts, _MOPS, sf.array("reads", "sends", "keys"))).unionByName(
        _problems(history, mops)
    )


def read_stats(rows: Iterable[Any]) -> dict[str, dict[str, int]]:
    """Return ``run_id -> stats`` from the collected rows (other kinds are skipped).

    Raises
    ------
    SparkBridgeError
        If a run has a problem row: its tables are no history (the first bad line is named).
    """
    stats: dict[str, dict[str, int]] = {}
    problems: dict[str, list[tuple[int, str]]] = {}
    for r in rows:
        kind = r["kind"]
        if kind == _OPS:
            stats.setdefault(r["run_id"], {"ops": 0, "reads": 0, "sends": 0, "keys": 0})["ops"] = r["ops"][0]
        elif kind == _MOPS:
            s = stats.setdefault(r["run_id"], {"ops": 0, "reads": 0, "sends": 0, "keys": 0})
            s["reads"], s["sends"], s["keys"] = r["ops"]
        elif kind == _PROBLEM:
            problems.setdefault(r["run_id"], []).append((r["ops"][0], r["values"][0]))
    for run in sorted(problems):
        found = sorted(problems[run])
        index, what = found[0]
        raise SparkBridgeError(
            f"run {run!r} is not a history: line {index}: {what} ({len(found)} problem(s)); "
            "pass the tables of engine.export.history.history_tables"
        )
    return stats
