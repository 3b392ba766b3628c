"""C3 ``lost-write`` and C4 ``unseen`` in Spark: committed values no ``ok`` poll returned.

Role
----
Mirrors :mod:`engine.check.lost_writes`: per key, the *bound* is the highest first offset of
any value an ``ok`` op read; a committed value never read whose last offset is at or below the
bound is a ``lost-write`` (one row per value), the others are ``unseen`` (one row per key,
values ordered by first offset, never-placed ones last).

Invariants
----------
A value is reported under one kind only; offsets and writers come out in the Python order.

What it does not do
-------------------
It does not report unresolved ``info`` writes nor ``fail`` writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as sf

from engine.check.lost_writes import _UNPLACED as _PY_UNPLACED
from eos_magics.spark.checks.frames import KEY, Frames, anomaly_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["UNPLACED", "lost_writes"]

#: Sorts never-placed values after every real offset: the Python checker's own sentinel.
UNPLACED = _PY_UNPLACED


def lost_writes(fr: Frames) -> DataFrame:
    """Return ``lost-write`` rows (one per value) and ``unseen`` rows (one per key)."""
    first = sf.try_element_at("offs", sf.lit(1))
    last = sf.try_element_at("offs", sf.lit(-1))
    bound = fr.vals.where(sf.col("read").isNotNull()).groupBy(*KEY).agg(sf.max(first).alias("bound"))
    unread = fr.vals.where(sf.col("writer").isNotNull() & sf.col("read").isNull()).join(bound, list(KEY), "left")
    lost = sf.coalesce(sf.col("bound").isNotNull() & (sf.size("offs") > 0) & (last <= sf.col("bound")), sf.lit(False))
    lost_rows = anomaly_rows(
        unread.where(lost), "lost-write", sf.array(last, sf.col("bound")), sf.array("value"), sf.array("writer")
    )
    placed = sf.coalesce(first, sf.lit(UNPLACED))
    unseen = (
        unread.where(~lost)
        .groupBy(*KEY)
        .agg(
            sf.array_sort(sf.collect_list(sf.struct(placed.alias("o"), "value"))).alias("xs"),
            sf.array_sort(sf.collect_set("writer")).alias("writers"),
        )
    )
    offsets = sf.filter(sf.transform("xs", lambda x: x["o"]), lambda o: o != sf.lit(UNPLACED))
    unseen_rows = anomaly_rows(unseen, "unseen", offsets, sf.transform("xs", lambda x: x["value"]), sf.col("writers"))
    return lost_rows.unionByName(unseen_rows)
