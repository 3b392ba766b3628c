"""L9 in Spark: each replica's aborted-transaction index is exactly its non-empty aborted transactions.

Role
----
The twin of :func:`engine.check.invariants.aborted_index.check_aborted_index`: per replica, the
multiset of ``(producer id, first offset, marker offset)`` of spans with data ended by an ABORT
marker (:attr:`Frames.spans`, every replica, down brokers too) against the multiset of index
entries ``(producer_id, first_offset, last_offset)``, compared by counts (a full outer join).

Invariants
----------
* One ``L9-aborted-index`` per missing copy and per extra copy (offsets: first, last), as the
  reference's ``Counter`` differences give them.

What it does not do
-------------------
It does not check the entries' ``last_stable_offset``, like the reference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias

from engine.check import messages as m
from engine.check.invariants.aborted_index import L9_INDEX
from eos_magics.spark.invariants._frames import TP, emit, sentence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames

_ENTRY = [*TP, "broker_id", "producer_id", "first_offset", "last_offset"]


def check(fr: Frames) -> list[DataFrame]:
    """Return the L9 anomaly frame."""
    want = (
        fr.spans.where(F.col("marker_offset").isNotNull() & (F.col("control_type") == "ABORT") & (F.size("data") > 0))
        .select(*TP, "broker_id", "producer_id", "first_offset", F.col("marker_offset").alias("last_offset"))
        .groupBy(*_ENTRY)
        .agg(F.count("*").alias("want"))
    )
    have = (
        fr.t["aborted_index"]
        .select(
            *TP,
            "broker_id",
            F.col("producer_id").cast("long").alias("producer_id"),
            F.col("first_offset").cast("long").alias("first_offset"),
            F.col("last_offset").cast("long").alias("last_offset"),
        )
        .groupBy(*_ENTRY)
        .agg(F.count("*").alias("have"))
    )
    diff = want.join(have, _ENTRY, "full").withColumn(
        "d", F.coalesce(F.col("want"), F.lit(0)) - F.coalesce(F.col("have"), F.lit(0))
    )
    copies = diff.where(F.col("d") != 0).withColumn(
        "_copy", F.explode(F.array_repeat(F.lit(1), F.abs(F.col("d")).cast("int")))
    )
    message = F.when(F.col("d") > 0, sentence(m.L9_MISSING)).otherwise(sentence(m.L9_UNMATCHED))
    return [emit(copies, L9_INDEX, offsets=F.array("first_offset", "last_offset"), message=message)]
