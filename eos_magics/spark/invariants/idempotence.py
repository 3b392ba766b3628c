"""L2 (contiguous, unique sequences) and L3 (epochs never go back) in Spark, over the authoritative logs.

Role
----
The twins of :func:`engine.check.invariants.idempotence.check_sequences` and
:func:`~engine.check.invariants.idempotence.check_epochs`, as window functions partitioned by
run, partition and producer.

Invariants
----------
* ``L2-sequence-gap``: per (producer id, epoch), a data batch with a sequence whose base is not
  the previous such batch's last sequence + 1 (offsets: previous batch, this batch).
* ``L2-sequence-duplicate``: every occurrence of a (producer id, epoch, sequence) after its
  first, in offset order (offsets: the first record's offset, this record's offset; a record's
  offset is its batch's base offset plus its distance from the base sequence).
* ``L3-epoch-regression``: a batch or marker whose epoch is below the highest epoch of its
  producer so far (offsets: the first batch at that highest epoch, this batch).

What it does not do
-------------------
It reads the authoritative log only (followers are L1's), and skips nothing by itself: the
caller leaves L2 and L3 out in at-least-once mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias
from pyspark.sql.window import Window

from engine.check import messages as m
from engine.check.invariants.idempotence import L2_DUPLICATE, L2_GAP, L3_EPOCH
from eos_magics.spark.invariants._frames import TP, emit, sentence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames


def _sequenced(fr: Frames) -> DataFrame:
    return fr.auth_batches.where((F.col("producer_id") >= 0) & ~F.col("is_control") & (F.col("base_sequence") >= 0))


def gaps(fr: Frames) -> DataFrame:
    """L2-sequence-gap."""
    w = Window.partitionBy(*TP, "producer_id", "producer_epoch").orderBy("base_offset", "last_offset")
    df = (
        _sequenced(fr)
        .withColumn("prev_offset", F.lag("base_offset").over(w))
        .withColumn("expected", F.lag("last_sequence").over(w) + 1)
        .where(F.col("prev_offset").isNotNull() & (F.col("base_sequence") != F.col("expected")))
    )
    return emit(df, L2_GAP, offsets=F.array("prev_offset", "base_offset"), message=sentence(m.L2_GAP))


def duplicates(fr: Frames) -> DataFrame:
    """L2-sequence-duplicate."""
    seqs = (
        _sequenced(fr)
        .where(F.col("last_sequence") >= F.col("base_sequence"))
        .withColumn("seq", F.explode(F.sequence("base_sequence", "last_sequence")))
        .withColumn("offset", F.col("base_offset") + F.col("seq") - F.col("base_sequence"))
    )
    w = Window.partitionBy(*TP, "producer_id", "producer_epoch", "seq").orderBy("base_offset", "last_offset")
    df = (
        seqs.withColumn("_rn", F.row_number().over(w))
        .withColumn("first_offset", F.first("offset").over(w))
        .where(F.col("_rn") > 1)
    )
    return emit(df, L2_DUPLICATE, offsets=F.array("first_offset", "offset"), message=sentence(m.L2_DUPLICATE))


def epochs(fr: Frames) -> DataFrame:
    """L3-epoch-regression."""
    w = (
        Window.partitionBy(*TP, "producer_id")
        .orderBy("base_offset", "last_offset")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    high = F.max(F.struct(F.col("producer_epoch").alias("epoch"), (-F.col("base_offset")).alias("neg_offset")))
    df = (
        fr.auth_batches.where(F.col("producer_id") >= 0)
        .withColumn("high", high.over(w))
        .where(F.col("high").isNotNull() & (F.col("producer_epoch") < F.col("high.epoch")))
        .withColumn("high_offset", -F.col("high.neg_offset"))
    )
    what = F.when(F.col("is_control"), F.concat(F.col("control_type"), F.lit(" marker"))).otherwise("data batch")
    message = sentence(m.L3_EPOCH, what=what, high_epoch=F.col("high.epoch"))
    return emit(df, L3_EPOCH, offsets=F.array("high_offset", "base_offset"), message=message)


def check(fr: Frames) -> list[DataFrame]:
    """Return the L2 and L3 anomaly frames."""
    return [gaps(fr), duplicates(fr), epochs(fr)]
