"""C13/C14 in Spark and on the driver: dependency cycles (``G0``, ``G1c-wr``, ``G1c-ww``).

Role
----
The edges are built in Spark, as :func:`engine.check.cycles.dependency_edges` builds them:

* **ww**: along each key's version order (duplicate copies left out, as ``_ww_pairs`` does),
  the writers of the holders, runs of one writer collapsed (an unwritten value breaks the run),
  each run's writer to the next run's;
* **wr**: the writer of a value to every other ``ok`` op that both sent and read it.

Each edge is labelled with the smallest key that produced it. Only runs with an edge pointing
backwards (to an earlier op) can hold a cycle; only theirs are collected. The cycle search
itself (trim, strongly connected components, one shortest cycle per component, classified by
labels) is :mod:`engine.check.cycles`'s own, run on the collected edges.

Invariants
----------
Same edges, same labels and so the same cycles as the Python checker.

What it does not do
-------------------
No rw (anti-dependency) edges, as in the Python checker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Window
from pyspark.sql import functions as sf

from engine.check import cycles as py_cycles
from eos_magics.spark.checks.frames import KEY, Frames, anomaly_rows

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pyspark.sql import DataFrame

__all__ = ["EDGE", "edge_rows", "edges_by_run"]

#: The kind of an edge row (never an anomaly).
EDGE = "__edge__"


def _ww(fr: Frames) -> DataFrame:
    # Duplicate copies stay out (holder_first): placing one again would add a spurious edge back.
    h = fr.holders.where("holder_first").select(*KEY, "offset", sf.col("holder_writer").alias("writer"))
    w = Window.partitionBy(*KEY).orderBy("offset")
    h = h.withColumn("first", sf.lag(sf.lit(1)).over(w).isNull()).withColumn("pw", sf.lag("writer").over(w))
    starts = h.where(sf.col("first") | ~sf.col("writer").eqNullSafe(sf.col("pw")))
    return (
        starts.withColumn("u", sf.lag("writer").over(w))
        .where(sf.col("u").isNotNull() & sf.col("writer").isNotNull())
        .select("run_id", "u", sf.col("writer").alias("v"), sf.lit("ww").alias("label"), "topic", "partition")
    )


def _wr(fr: Frames) -> DataFrame:
    ok = fr.mops.where(sf.col("type") == "ok")
    mixed = (
        ok.groupBy("run_id", "op")
        .agg(sf.max(sf.col("mop_f") == "poll").alias("p"), sf.max(sf.col("mop_f") == "send").alias("s"))
        .where(sf.col("p") & sf.col("s"))
        .select("run_id", "op")
    )
    return (
        fr.polls.where(sf.col("type") == "ok")
        .join(mixed, ["run_id", "op"], "left_semi")
        .join(fr.vals.select(*KEY, "value", "writer"), [*KEY, "value"])
        .where(sf.col("writer").isNotNull() & (sf.col("writer") != sf.col("op")))
        .select(
            "run_id",
            sf.col("writer").alias("u"),
            sf.col("op").alias("v"),
            sf.lit("wr").alias("label"),
            "topic",
            "partition",
        )
    )


def edge_rows(fr: Frames) -> DataFrame:
    """Return the edges of the runs that have a backward edge (the others are acyclic), as checker rows.

    One row per (run, edge, label): kind :data:`EDGE`, the smallest key producing it, ``ops``
    ``[from, to]`` and ``values`` ``[label]``.
    """
    edges = (
        _ww(fr)
        .unionByName(_wr(fr))
        .groupBy("run_id", "u", "v", "label")
        .agg(sf.min(sf.struct("topic", "partition")).alias("key"))
    )
    backward = edges.where(sf.col("u") > sf.col("v")).select("run_id")  # a semi join: duplicates are harmless
    edges = edges.join(backward, ["run_id"], "left_semi").select("*", "key.topic", "key.partition")
    return anomaly_rows(edges, EDGE, sf.array(), sf.array("label"), sf.array("u", "v"))


def edges_by_run(rows: Iterable[Any]) -> dict[str, py_cycles.Edges]:
    """Group the collected :data:`EDGE` rows into :data:`engine.check.cycles.Edges` per run (others are skipped)."""
    out: dict[str, py_cycles.Edges] = {}
    for r in rows:
        if r["kind"] != EDGE:
            continue
        u, v = r["ops"]
        labels = out.setdefault(r["run_id"], {}).setdefault((u, v), {})
        labels[r["values"][0]] = (r["topic"], r["partition"])
    return out
