"""C7-C10 in Spark: the order in which consumers see a key.

Role
----
Mirrors :mod:`engine.check.polls` with windows over the ranked polls (each poll knows the dense
rank of its offset, so the rank difference is a subtraction):

* inside one op (any completion type), consecutive reads of a key (``lag`` over
  ``mop_index``) whose offsets are not consecutive, keys of the op's rebalance log left out:
  ``int-poll-skip`` when the rank moved by more than 1, ``int-nonmonotonic-poll`` when by less;
* between two successive ``ok`` polls of a key by one process (``lag`` over the completion
  order), unless a crash of the process, or an assign or subscribe (not failed) that left the
  key out, lies between them: ``poll-skip`` / ``nonmonotonic-poll``.

A step back names the holders of both offsets. A skip names the values it skipped, at most
:data:`SHOWN` of them: :func:`skipped_values` looks them up, for the skips found only.

Invariants
----------
Offsets are ``(before, after)``, ``n`` the rank difference, ``ranks`` the two ranks of a skip.

What it does not do
-------------------
It does not decide whether subscribe-mode skips are acceptable; the allowed set does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as sf

from engine.check.polls import _SHOWN as _PY_SHOWN
from eos_magics.spark.checks.frames import KEY, Frames, anomaly_rows

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["SHOWN", "polls", "skipped_values"]

#: How many skipped values an anomaly lists: the Python checker's own number.
SHOWN = _PY_SHOWN


def _has_key(keys: str) -> Column:
    return sf.exists(keys, lambda k: (k["topic"] == sf.col("topic")) & (k["partition"] == sf.col("partition")))


def _rows(df: DataFrame, skip: str, back: str, ops: Column, process: Column | None = None) -> DataFrame:
    """Anomaly rows of ``df`` (``before``, ``after``, ``rank_before``, ``rank_after``, holders)."""
    delta = sf.col("rank_after") - sf.col("rank_before")
    return anomaly_rows(
        df,
        sf.when(delta > 1, sf.lit(skip)).otherwise(sf.lit(back)),
        sf.array("before", "after"),
        sf.when(delta > 1, sf.array()).otherwise(sf.array("holder_before", "holder_after")),
        ops,
        n=delta,
        process=process,
        ranks=sf.when(delta > 1, sf.array("rank_before", "rank_after")),
    )


def _inside_ops(fr: Frames) -> DataFrame:
    w = Window.partitionBy("run_id", "op", "topic", "partition").orderBy("mop_index")
    gaps = (
        fr.polls.withColumn("before", sf.lag("offset").over(w))
        .withColumn("rank_before", sf.lag("rank").over(w))
        .withColumn("holder_before", sf.lag("holder").over(w))
        .where(
            sf.col("before").isNotNull()
            & (sf.col("offset") != sf.col("before") + 1)
            & (sf.col("rank") - sf.col("rank_before") != 1)
            & ~_has_key("rebalance_keys")
        )
        .withColumnsRenamed({"offset": "after", "rank": "rank_after", "holder": "holder_after"})
    )
    return _rows(gaps, "int-poll-skip", "int-nonmonotonic-poll", sf.array("op"))


def _between_ops(fr: Frames) -> DataFrame:
    at = sf.struct("mop_index", "offset", "rank", "holder")
    spans = (
        fr.polls.where(sf.col("type") == "ok")
        .groupBy(*KEY, "op", "seq", "process")
        .agg(sf.min(at).alias("first"), sf.max(at).alias("last"))
    )
    w = Window.partitionBy("run_id", "process", "topic", "partition").orderBy("seq")
    jumps = (
        spans.withColumn("prev", sf.lag("last").over(w))
        .withColumn("prev_op", sf.lag("op").over(w))
        .withColumn("prev_seq", sf.lag("seq").over(w))
        .where(
            sf.col("prev").isNotNull()
            & (sf.col("first.offset") != sf.col("prev.offset") + 1)
            & (sf.col("first.rank") - sf.col("prev.rank") != 1)
        )
        .select(
            *KEY,
            "op",
            "seq",
            "process",
            "prev_op",
            "prev_seq",
            sf.col("prev.offset").alias("before"),
            sf.col("prev.rank").alias("rank_before"),
            sf.col("prev.holder").alias("holder_before"),
            sf.col("first.offset").alias("after"),
            sf.col("first.rank").alias("rank_after"),
            sf.col("first.holder").alias("holder_after"),
        )
    )
    # A crash forgets every position of the process; an assign or subscribe that did not fail
    # keeps only the keys it names.
    resets = fr.ops.where(
        (sf.col("f") == "crash") | (sf.col("f").isin("assign", "subscribe") & (sf.col("type") != "fail"))
    ).select("run_id", "process", sf.col("seq").alias("r_seq"), sf.col("f").alias("r_f"), sf.col("keys").alias("r_ks"))
    between = (sf.col("r_seq") > sf.col("prev_seq")) & (sf.col("r_seq") < sf.col("seq"))
    ids = [*KEY, "process", "op"]
    cut = (
        jumps.join(resets, ["run_id", "process"])
        .where(between & ((sf.col("r_f") == "crash") | ~_has_key("r_ks")))
        .select(*ids)
        .distinct()
    )
    jumps = jumps.join(cut, ids, "left_anti")
    return _rows(jumps, "poll-skip", "nonmonotonic-poll", sf.array("prev_op", "op"), sf.col("process"))


def polls(fr: Frames) -> DataFrame:
    """Return ``int-poll-skip``, ``int-nonmonotonic-poll``, ``poll-skip`` and ``nonmonotonic-poll`` rows.

    Skips come with empty ``values``: :func:`skipped_values` finds them.
    """
    return _inside_ops(fr).unionByName(_between_ops(fr))


def skipped_values(spark: SparkSession, fr: Frames, rows: Iterable[Any]) -> dict[tuple[Any, ...], list[str]]:
    """Return ``(run_id, topic, partition, rank_before, rank_after) -> values`` for the skip rows among ``rows``.

    The values are the holders of the first :data:`SHOWN` ranks strictly between the two, in
    offset order, looked up in one join; rows without ``ranks`` are not skips and are ignored.
    """
    wanted = sorted({(r["run_id"], r["topic"], r["partition"], *r["ranks"]) for r in rows if r["ranks"] is not None})
    if not wanted:
        return {}
    spans = spark.createDataFrame(
        wanted, "run_id string, topic string, partition int, rank_before bigint, rank_after bigint"
    )
    ranks = sf.sequence(sf.col("rank_before") + 1, sf.least(sf.col("rank_after") - 1, sf.col("rank_before") + SHOWN))
    found = (
        spans.select("*", sf.explode(ranks).alias("rank"))
        .join(fr.holders.select(*KEY, "rank", "holder"), [*KEY, "rank"])
        .select(*KEY, "rank_before", "rank_after", "rank", "holder")
        .collect()
    )
    out: dict[tuple[Any, ...], list[tuple[int, str]]] = {}
    for r in found:
        out.setdefault((r["run_id"], r["topic"], r["partition"], r["rank_before"], r["rank_after"]), []).append(
            (r["rank"], r["holder"])
        )
    return {k: [h for _rank, h in sorted(v)] for k, v in out.items()}
