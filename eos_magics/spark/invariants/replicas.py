"""L1 in Spark: replicas agree below the final high watermark; each replica's batches leave no hole or overlap.

Role
----
The twin of :func:`engine.check.invariants.replicas.check_replica_agreement`, over the
``batches`` and ``records`` DataFrames of any number of runs.

Invariants
----------
* The same anomalies as the Python check: one ``L1-offset-order`` per batch that does not start
  where the previous batch of its replica ended (offsets: expected, actual); one
  ``L1-replica-divergence`` per non-leader replica that differs from the authoritative replica
  below its limit (offsets: the first 10 differing offsets; values: its value and the leader's
  at the first one, ``"None"`` for a missing record or a null value).
* A replica's limit is ``min(final HW, its LEO)`` when it is in the final ISR, else
  ``min(final HW, its own HW)``.
* When two batches of one replica hold the same offset, the record of the batch starting last
  is compared (as the Python check's dict overwrite does).

What it does not do
-------------------
It does not say which replica is right; the authoritative one is the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias
from pyspark.sql.window import Window

from engine.check import messages as msg
from engine.check.invariants.replicas import L1_DIVERGENCE, L1_OFFSETS
from eos_magics.spark.invariants._frames import TP, emit, sentence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames

#: The record fields two replicas must agree on (``replicas._records``).
_COMPARED = (
    "leader_epoch",
    "producer_id",
    "producer_epoch",
    "sequence",
    "is_transactional",
    "is_control",
    "control_type",
    "key",
    "value",
)


def offset_order(fr: Frames) -> DataFrame:
    """L1-offset-order: a batch that does not start at the previous batch's next offset."""
    w = Window.partitionBy(*TP, "broker_id").orderBy("base_offset", "last_offset")
    df = fr.batches.withColumn("expected", F.lag("next_offset").over(w)).where(
        F.col("expected").isNotNull() & (F.col("base_offset") != F.col("expected"))
    )
    how = F.when(F.col("base_offset") < F.col("expected"), "offsets held twice").otherwise("hole")
    message = sentence(msg.L1_OFFSET_ORDER, how=how)
    return emit(df, L1_OFFSETS, offsets=F.array("expected", "base_offset"), message=message)


def _latest_records(fr: Frames) -> DataFrame:
    """One record per (replica, offset): the copy from the batch starting last."""
    w = Window.partitionBy(*TP, "broker_id", "offset").orderBy(F.desc("batch_base_offset"), F.desc("batch_last_offset"))
    recs = fr.t["records"].select(
        *TP,
        "broker_id",
        F.col("offset").cast("long").alias("offset"),
        "batch_base_offset",
        "batch_last_offset",
        *_COMPARED,
    )
    return recs.withColumn("_rn", F.row_number().over(w)).where("_rn = 1").drop("_rn")


def divergence(fr: Frames) -> DataFrame:
    """L1-replica-divergence: a replica's records differ from the authoritative replica's below its limit."""
    auth = fr.authoritative.where(F.col("auth_broker").isNotNull())
    isr = fr.t["partitions"].select(*TP, "isr")
    others = (
        fr.t["replicas"]
        .join(auth, TP)
        .join(isr, TP, "left")
        .where(F.col("broker_id") != F.col("auth_broker"))
        .select(
            *TP,
            "broker_id",
            "auth_broker",
            "final_hw",
            F.least(
                F.coalesce(F.col("final_hw"), F.lit(0)),
                F.when(
                    F.coalesce(F.array_contains(F.col("isr"), F.col("broker_id")), F.lit(False)), F.col("leo")
                ).otherwise(F.col("hw")),
            )
            .cast("long")
            .alias("limit"),
        )
    )
    recs = _latest_records(fr)
    mine = recs.join(others.select(*TP, "broker_id", "limit"), [*TP, "broker_id"]).where(
        F.col("offset") < F.col("limit")
    )
    ref = (
        recs.withColumnRenamed("broker_id", "auth_broker")
        .join(others.select(*TP, "broker_id", "auth_broker", "limit"), [*TP, "auth_broker"])
        .where(F.col("offset") < F.col("limit"))
    )
    keys = [*TP, "broker_id", "offset"]
    m = mine.select(*keys, F.struct(*_COMPARED).alias("ours"))
    r = ref.select(*keys, F.struct(*_COMPARED).alias("theirs"))
    bad = m.join(r, keys, "full").where(~F.col("ours").eqNullSafe(F.col("theirs")))
    first = F.min(
        F.struct(
            F.col("offset"),
            F.coalesce(F.col("ours.value"), F.lit("None")).alias("ours_value"),
            F.coalesce(F.col("theirs.value"), F.lit("None")).alias("theirs_value"),
            F.col("ours").cast("string").alias("ours_text"),
            F.col("theirs").cast("string").alias("theirs_text"),
        )
    )
    grouped = bad.join(others.select(*TP, "broker_id", "auth_broker", "final_hw"), [*TP, "broker_id"]).groupBy(
        *TP, "broker_id", "auth_broker", "final_hw"
    )
    df = grouped.agg(
        F.count("*").alias("n"),
        F.slice(F.sort_array(F.collect_list("offset")), 1, 10).alias("offs"),
        first.alias("first"),
    )
    message = sentence(
        msg.L1_DIVERGENCE,
        offset=F.col("first.offset"),
        ours=F.coalesce("first.ours_text", F.lit("None")),
        theirs=F.coalesce("first.theirs_text", F.lit("None")),
    )
    return emit(
        df,
        L1_DIVERGENCE,
        offsets=F.col("offs"),
        values=F.array("first.ours_value", "first.theirs_value"),
        message=message,
    )


def check(fr: Frames) -> list[DataFrame]:
    """Return the L1 anomaly frames."""
    return [offset_order(fr), divergence(fr)]
