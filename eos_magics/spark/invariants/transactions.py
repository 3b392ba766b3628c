"""L4 (one marker ends each transaction) and L5 (no hanging transaction) in Spark.

Role
----
The twins of :func:`engine.check.invariants.transactions.check_markers` and
:func:`~engine.check.invariants.transactions.check_no_hanging`, over the transaction spans of
each authoritative log (:attr:`Frames.auth_spans`), taken per (run, partition, producer id) in
the reference's order: a closed span at its marker's offset, an open one at its first offset.

Invariants
----------
* ``L4-data-after-marker``: a span's data with an epoch below the last marker of the highest
  epoch seen so far for the producer (offsets: that marker, then the stale data offsets).
* ``L4-marker-epoch``: a marker below its own data's highest epoch (offsets: first data, marker).
* ``L4-duplicate-marker``: for a producer the coordinator decided for (a decision naming a
  partition), more markers of one (epoch, type) in a partition than decisions (offsets: every
  such marker); for another producer, an empty span whose marker repeats the previous one
  (offsets: previous marker, this marker).
* ``L4-non-transactional-in-txn``: a non-transactional batch inside an open transaction.
* ``L5-hanging-txn``: an open span (offsets: its first 10 data offsets); ``L5-lso-below-hw``:
  the authoritative replica leads and its LSO is not its HW (offsets: LSO, HW).

What it does not do
-------------------
Marker agreement with the coordinator's decisions is L6's (:mod:`.atomicity`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias
from pyspark.sql.window import Window

from engine.check import messages as m
from engine.check.invariants.transactions import (
    L4_DATA_AFTER_MARKER,
    L4_DUPLICATE_MARKER,
    L4_MARKER_EPOCH,
    L4_NON_TXN_IN_TXN,
    L5_HANGING,
    L5_LSO,
)
from eos_magics.spark.invariants import decisions
from eos_magics.spark.invariants._frames import RUN, TP, emit, sentence, text_list

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames

_PRODUCER = [*TP, "producer_id"]


def data_after_marker(fr: Frames) -> DataFrame:
    """L4-data-after-marker."""
    w = Window.partitionBy(*_PRODUCER).orderBy("sort_offset").rowsBetween(Window.unboundedPreceding, -1)
    closed = F.col("marker_offset").isNotNull()
    last = F.max(F.when(closed, F.struct(F.col("marker_epoch").alias("epoch"), F.col("marker_offset").alias("offset"))))
    df = (
        fr.auth_spans.withColumn("lm", last.over(w))
        .where(F.col("lm").isNotNull())
        .withColumn("stale", F.expr("transform(filter(data, d -> d.epoch < lm.epoch), d -> d.offset)"))
        .where(F.size("stale") > 0)
    )
    message = sentence(
        m.L4_DATA_AFTER_MARKER,
        stale=text_list(F.col("stale")),
        marker_epoch=F.col("lm.epoch"),
        marker_offset=F.col("lm.offset"),
    )
    offsets = F.concat(F.array(F.col("lm.offset")), F.col("stale"))
    return emit(df, L4_DATA_AFTER_MARKER, offsets=offsets, message=message)


def marker_epoch(fr: Frames) -> DataFrame:
    """L4-marker-epoch."""
    df = fr.auth_spans.where(F.col("marker_offset").isNotNull() & (F.size("data") > 0)).withColumn(
        "data_epoch", F.expr("array_max(transform(data, d -> d.epoch))")
    )
    df = df.where(F.col("marker_epoch") < F.col("data_epoch"))
    message = sentence(m.L4_MARKER_EPOCH)
    offsets = F.array(F.expr("get(data, 0).offset"), F.col("marker_offset"))
    return emit(df, L4_MARKER_EPOCH, offsets=offsets, message=message)


def duplicate_markers(fr: Frames) -> DataFrame:
    """L4-duplicate-marker, against the coordinator's decisions or, without them, against the previous marker."""
    decided = decisions.by_partition(fr)
    counts = decided.groupBy(*_PRODUCER, F.col("producer_epoch").alias("marker_epoch"), "control_type").agg(
        F.count("*").alias("allowed")
    )
    known = decided.select(RUN, "producer_id").distinct()
    closed = fr.auth_spans.where(F.col("marker_offset").isNotNull())
    seen = closed.groupBy(*_PRODUCER, "marker_epoch", "control_type").agg(
        F.sort_array(F.collect_list("marker_offset")).alias("offs")
    )
    over = seen.join(counts, [*_PRODUCER, "marker_epoch", "control_type"]).where(F.size("offs") > F.col("allowed"))
    msg_over = sentence(m.L4_MARKERS_OVER, n=F.size("offs"))
    w = Window.partitionBy(*_PRODUCER).orderBy("marker_offset")
    repeat = (
        closed.join(known, [RUN, "producer_id"], "left_anti")
        .withColumn("prev_epoch", F.lag("marker_epoch").over(w))
        .withColumn("prev_type", F.lag("control_type").over(w))
        .withColumn("prev_offset", F.lag("marker_offset").over(w))
        .where(
            F.col("prev_offset").isNotNull()
            & (F.size("data") == 0)
            & F.col("prev_epoch").eqNullSafe(F.col("marker_epoch"))
            & F.col("prev_type").eqNullSafe(F.col("control_type"))
        )
    )
    msg_repeat = sentence(m.L4_MARKER_REPEAT)
    return emit(over, L4_DUPLICATE_MARKER, offsets=F.col("offs"), message=msg_over).unionByName(
        emit(repeat, L4_DUPLICATE_MARKER, offsets=F.array("prev_offset", "marker_offset"), message=msg_repeat)
    )


def non_transactional(fr: Frames) -> DataFrame:
    """L4-non-transactional-in-txn."""
    return emit(fr.mixed, L4_NON_TXN_IN_TXN, offsets=F.array("base_offset"), message=sentence(m.L4_NON_TXN_IN_TXN))


def hanging(fr: Frames) -> DataFrame:
    """L5-hanging-txn and L5-lso-below-hw."""
    open_ = fr.auth_spans.where(F.col("marker_offset").isNull())
    msg_open = sentence(m.L5_HANGING, n=F.size("data"))
    offsets = F.slice(F.expr("transform(data, d -> d.offset)"), 1, 10)
    lso = fr.authoritative.where(
        F.col("auth_is_leader") & F.col("auth_lso").isNotNull() & (F.col("auth_lso") != F.col("final_hw"))
    )
    msg_lso = sentence(m.L5_LSO, leader=F.col("auth_broker"), lso=F.col("auth_lso"), hw=F.col("final_hw"))
    return emit(open_, L5_HANGING, offsets=offsets, message=msg_open).unionByName(
        emit(lso, L5_LSO, offsets=F.array("auth_lso", "final_hw"), message=msg_lso)
    )


def check(fr: Frames) -> list[DataFrame]:
    """Return the L4 and L5 anomaly frames."""
    return [data_after_marker(fr), marker_epoch(fr), duplicate_markers(fr), non_transactional(fr), hanging(fr)]
