"""C11, C12 and C14 (part) in Spark: where a producer's sends land in the version order.

Role
----
Mirrors :mod:`engine.check.sends` over the placed sends of committed ops (``ok``, or ``info``
proven; :attr:`Frames.sends`), each at its acknowledged offset or else where
:meth:`KeyState.locate` finds it:

* inside one op, two successive sends to a key whose offsets are not consecutive and whose
  rank moved by other than 1: ``int-send-skip`` (more) or ``int-nonmonotonic-send``;
* between two successive committed ops of one process sending to a key, with no crash of the
  process between them: the later op's first send at or below the earlier op's last one is
  ``nonmonotonic-send``.

Invariants
----------
Offsets are ``(before, after)``, values the two values, ops the op (or the two ops).

What it does not do
-------------------
It does not guess where an unplaced send landed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Window
from pyspark.sql import functions as sf

from eos_magics.spark.checks.frames import KEY, Frames, anomaly_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["sends"]


def _inside_ops(fr: Frames) -> DataFrame:
    w = Window.partitionBy("run_id", "op", "topic", "partition").orderBy("mop_index")
    delta = sf.col("rank") - sf.col("rank_before")
    gaps = (
        fr.sends.withColumn("before", sf.lag("eo").over(w))
        .withColumn("bv", sf.lag("value").over(w))
        .withColumn("rank_before", sf.lag("rank").over(w))
        .where(sf.col("before").isNotNull() & (sf.col("eo") != sf.col("before") + 1) & (delta != 1))
    )
    kind = sf.when(delta > 1, sf.lit("int-send-skip")).otherwise(sf.lit("int-nonmonotonic-send"))
    offsets = sf.array("before", "eo")
    return anomaly_rows(gaps, kind, offsets, sf.array("bv", "value"), sf.array("op"), n=delta)


def _between_ops(fr: Frames) -> DataFrame:
    spans = fr.sends.groupBy(*KEY, "op", "seq", "process").agg(
        sf.min(sf.struct("mop_index", "eo", "value")).alias("first"),
        sf.max(sf.struct("mop_index", "eo", "holder")).alias("last"),
    )
    w = Window.partitionBy("run_id", "process", "topic", "partition").orderBy("seq")
    back = (
        spans.withColumn("prev", sf.lag("last").over(w))
        .withColumn("prev_op", sf.lag("op").over(w))
        .withColumn("prev_seq", sf.lag("seq").over(w))
        .where(sf.col("prev").isNotNull() & (sf.col("first.eo") <= sf.col("prev.eo")))
    )
    # A crashed process comes back as a new producer: its previous sends are forgotten.
    crashes = fr.ops.where(sf.col("f") == "crash").select("run_id", "process", sf.col("seq").alias("c_seq"))
    ids = [*KEY, "process", "op"]
    cut = (
        back.join(crashes, ["run_id", "process"])
        .where((sf.col("c_seq") > sf.col("prev_seq")) & (sf.col("c_seq") < sf.col("seq")))
        .select(*ids)
        .distinct()
    )
    back = back.join(cut, ids, "left_anti")
    return anomaly_rows(
        back,
        "nonmonotonic-send",
        sf.array("prev.eo", "first.eo"),
        sf.array("prev.holder", "first.value"),
        sf.array("prev_op", "op"),
        process=sf.col("process"),
    )


def sends(fr: Frames) -> DataFrame:
    """Return ``int-send-skip``, ``int-nonmonotonic-send`` and ``nonmonotonic-send`` rows."""
    return _inside_ops(fr).unionByName(_between_ops(fr))
