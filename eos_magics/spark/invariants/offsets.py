"""L7 (HW and LSO monotonic per leader epoch; LSO ≤ HW ≤ LEO) and L8 (read_committed below the LSO) in Spark.

Role
----
The twins of :func:`engine.check.invariants.offsets.check_offsets_monotonic` (over the
``partition_state`` table, the timeline samples) and
:func:`~engine.check.invariants.offsets.check_read_committed_fetches` (over ``fetches``).

Invariants
----------
* Samples are taken in the order they were recorded: by trace ``index`` (never decreasing in a
  timeline), ties broken by the row's position in the input DataFrame
  (``monotonically_increasing_id`` assigned before any shuffle), so one event that moved a
  replica twice keeps its two samples in order.
* ``L7-offset-order`` per sample without ``LSO ≤ HW ≤ LEO`` (offsets: LSO, HW, LEO);
  ``L7-hw-regression`` / ``L7-lso-regression`` per sample whose HW / LSO is below the previous
  sample's of the same (partition, broker, leader epoch) (offsets: before, after).
* ``L8-read-beyond-lso`` per fetch answered with LSO > HW (offsets: fetch offset, LSO, HW) and
  per read_committed fetch whose next offset passed ``max(LSO, fetch offset)`` (offsets: fetch
  offset, next offset, LSO).

What it does not do
-------------------
L7 runs only when a ``partition_state`` table is given. L8 is the weak form of the reference
(batches returned, not records handed to the application; see ``docs/invariants.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias
from pyspark.sql.window import Window

from engine.check import messages as m
from engine.check.invariants.offsets import L7_HW, L7_LSO, L7_ORDER, L8_BEYOND_LSO
from eos_magics.spark.invariants._frames import TP, emit, sentence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames


def monotonic(fr: Frames) -> list[DataFrame]:
    """L7: offsets in order on every sample; HW and LSO never back within a leader epoch."""
    if "partition_state" not in fr.t:
        return []
    samples = fr.t["partition_state"].withColumn("_row", F.monotonically_increasing_id())
    for c in ("leo", "hw", "lso"):
        samples = samples.withColumn(c, F.col(c).cast("long"))
    disorder = samples.where(~((F.col("lso") <= F.col("hw")) & (F.col("hw") <= F.col("leo"))))
    out = [emit(disorder, L7_ORDER, offsets=F.array("lso", "hw", "leo"), message=sentence(m.L7_ORDER))]
    w = Window.partitionBy(*TP, "broker_id", "leader_epoch").orderBy("index", "_row")
    stepped = samples.withColumn("prev_time", F.lag("time_ms").over(w))
    for kind, name, col in ((L7_HW, "HW", "hw"), (L7_LSO, "LSO", "lso")):
        back = stepped.withColumn("before", F.lag(col).over(w)).where(F.col(col) < F.col("before"))
        message = sentence(m.L7_BACK, name=F.lit(name), after=F.col(col))
        out.append(emit(back, kind, offsets=F.array("before", col), message=message))
    return out


def read_committed(fr: Frames) -> DataFrame:
    """L8-read-beyond-lso."""
    f = fr.t["fetches"]
    above = f.where(F.col("lso") > F.col("hw"))
    msg_above = sentence(m.L8_LSO_ABOVE_HW)
    beyond = f.where(
        (F.col("isolation") == "read_committed")
        & F.col("next_offset").isNotNull()
        & (F.col("next_offset") > F.greatest("lso", "fetch_offset"))
    )
    msg_beyond = sentence(m.L8_BEYOND_LSO)
    return emit(above, L8_BEYOND_LSO, offsets=F.array("fetch_offset", "lso", "hw"), message=msg_above).unionByName(
        emit(beyond, L8_BEYOND_LSO, offsets=F.array("fetch_offset", "next_offset", "lso"), message=msg_beyond)
    )


def check(fr: Frames) -> list[DataFrame]:
    """Return the L7 (when samples are given) and L8 anomaly frames."""
    return [*monotonic(fr), read_committed(fr)]
