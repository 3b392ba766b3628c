"""C5 ``G1a`` (aborted read) and C6 ``precommitted-read`` in Spark.

Role
----
Mirrors :mod:`engine.check.aborted_reads`: a value a ``fail`` op sent and an ``ok`` op read
(join of failed sends with ok polls on key and value), naming the failed writer then every ok
reader; and an op that polled values it sent itself (self-join of one op's polls and sends).

Invariants
----------
One ``G1a`` row per (key, value), readers and offsets sorted and distinct; one
``precommitted-read`` row per (op, key), values in the order the op polled them.

What it does not do
-------------------
It does not flag reads of ``info`` writes: an ok read of one proves that op committed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as sf

from eos_magics.spark.checks.frames import KEY, Frames, anomaly_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["aborted_reads", "precommitted_reads"]


def aborted_reads(fr: Frames) -> DataFrame:
    """Return one ``G1a`` row per value of a failed op that an ok op read."""
    hits = fr.vals.where(sf.col("failed").isNotNull() & sf.col("read").isNotNull()).select(*KEY, "value", "failed")
    reads = fr.polls.where(sf.col("type") == "ok").select(*KEY, "value", "op", "offset")
    rows = (
        reads.join(hits, [*KEY, "value"])
        .groupBy(*KEY, "value", "failed")
        .agg(
            sf.array_sort(sf.collect_set("offset")).alias("offsets"),
            sf.array_sort(sf.collect_set("op")).alias("readers"),
        )
    )
    ops = sf.concat(sf.array("failed"), sf.col("readers"))
    return anomaly_rows(rows, "G1a", sf.col("offsets"), sf.array("value"), ops)


def precommitted_reads(fr: Frames) -> DataFrame:
    """Return one ``precommitted-read`` row per (op, key) where an op polled its own sends."""
    sent = fr.mops.where(sf.col("mop_f") == "send").select("run_id", "op", "topic", "partition", "value")
    own = fr.polls.join(sent, ["run_id", "op", "topic", "partition", "value"], "left_semi").join(
        fr.vals.select(*KEY, "value", "offs"), [*KEY, "value"]
    )
    rows = own.groupBy("run_id", "op", "topic", "partition").agg(
        sf.array_sort(sf.collect_list(sf.struct("mop_index", "value"))).alias("xs"),
        sf.array_sort(sf.array_distinct(sf.flatten(sf.collect_list("offs")))).alias("offsets"),
    )
    values = sf.transform("xs", lambda x: x["value"])
    return anomaly_rows(rows, "precommitted-read", sf.col("offsets"), values, sf.array("op"))
