"""C1 ``inconsistent-offsets`` and C2 ``duplicate`` in Spark: the version order seen from both sides.

Role
----
Mirrors :mod:`engine.check.offsets` and :mod:`engine.check.duplicates` over
:class:`~eos_magics.spark.checks.frames.Frames`: an offset claimed by two or more values, and a
value sighted at two or more offsets (``GROUP BY ... HAVING count(DISTINCT ...) > 1``, already
folded into ``holders.claimants`` and ``vals.offs``).

Invariants
----------
One row per (key, offset) and per (key, value), with the fields the Python checkers fill:
values and writers sorted, offsets ascending.

What it does not do
-------------------
It does not say which value is right, nor count re-reads of one offset (that is an ordering
question, :mod:`eos_magics.spark.checks.polls`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as sf

from eos_magics.spark.checks.frames import Frames, anomaly_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["duplicates", "inconsistent_offsets"]


def inconsistent_offsets(fr: Frames) -> DataFrame:
    """Return one ``inconsistent-offsets`` row per offset that several values claim."""
    rows = fr.holders.where(sf.size("claimants") >= 2)
    return anomaly_rows(rows, "inconsistent-offsets", sf.array("offset"), sf.col("claimants"), sf.col("writers"))


def duplicates(fr: Frames) -> DataFrame:
    """Return one ``duplicate`` row per value sighted at two or more offsets of its key."""
    rows = fr.vals.where(sf.size("offs") >= 2)
    ops = sf.when(sf.col("writer").isNull(), sf.array().cast("array<bigint>")).otherwise(sf.array("writer"))
    return anomaly_rows(rows, "duplicate", sf.col("offs"), sf.array("value"), ops)
