"""The coordinator's decisions in Spark: one history per transactional id, folded into decisions.

Role
----
The twin of ``engine.check.invariants._common.txn_histories`` and ``decisions``. L4 (how many
markers were decided per partition), L6 (markers against decisions) and L10 (the history's
transitions) read these frames.

* :func:`histories`: per (run, transactional id) the rows of one source: the coordinator that
  describes the id with the longest history (lowest broker id on ties), else the
  ``__transaction_state`` log replica with the lowest broker id; with ``pos``, the row's place
  in ``index`` order.
* :func:`decisions`: per transactional id, each PREPARE_COMMIT / PREPARE_ABORT is a decision,
  except a prepare repeating the previous decision while that one is not completed (a rewrite
  after a failed write); a COMPLETE_* marks the latest decision of its producer id, epoch and
  type as completed. Spark folds each history with the SQL ``aggregate`` function, in order.
* :func:`by_partition`: one row per (decision, partition it names), with ``rank``, its place in
  the reference's order (transactional ids sorted, then history order, then partition order).

Invariants
----------
* Order is explicit everywhere (``index``, then the decision's place); nothing depends on the
  order Spark returns rows in.

What it does not do
-------------------
It judges nothing: L6-incomplete and the marker checks are in :mod:`.atomicity` and
:mod:`.transactions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias
from pyspark.sql.window import Window

from eos_magics.spark.invariants._frames import RUN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from eos_magics.spark.invariants._frames import Frames

_ID = [RUN, "transactional_id"]
_DECISION = (
    "struct<producer_id:bigint,producer_epoch:bigint,control_type:string,"
    "partitions:array<struct<topic:string,partition:int>>,offset:bigint,completed:boolean>"
)
_PREPARE = "CASE r.state WHEN 'PREPARE_COMMIT' THEN 'COMMIT' WHEN 'PREPARE_ABORT' THEN 'ABORT' END"
_COMPLETE = "CASE r.state WHEN 'COMPLETE_COMMIT' THEN 'COMMIT' WHEN 'COMPLETE_ABORT' THEN 'ABORT' END"
_NEW = (
    "named_struct('producer_id', r.producer_id, 'producer_epoch', r.producer_epoch, 'control_type', "
    f"{_PREPARE}, 'partitions', r.partitions, 'offset', r.offset, 'completed', false)"
)
_LAST = "get(acc, size(acc) - 1)"
_MATCH = (
    f"array_max(transform(acc, (e, j) -> IF(e.producer_id = r.producer_id AND e.producer_epoch = r.producer_epoch "
    f"AND e.control_type = {_COMPLETE}, j, -1)))"
)
_FOLD = f"""
aggregate(rows, cast(array() as array<{_DECISION}>), (acc, r) ->
  CASE
    WHEN r.state IN ('PREPARE_COMMIT', 'PREPARE_ABORT') THEN
      CASE
        WHEN NOT {_LAST}.completed AND {_LAST}.producer_id = r.producer_id
             AND {_LAST}.producer_epoch = r.producer_epoch AND {_LAST}.control_type = {_PREPARE}
             AND {_LAST}.partitions = r.partitions THEN acc
        ELSE concat(acc, array({_NEW}))
      END
    WHEN r.state IN ('COMPLETE_COMMIT', 'COMPLETE_ABORT') THEN
      transform(acc, (d, k) -> IF(k = {_MATCH},
        named_struct('producer_id', d.producer_id, 'producer_epoch', d.producer_epoch,
                     'control_type', d.control_type, 'partitions', d.partitions, 'offset', d.offset,
                     'completed', true),
        d))
    ELSE acc
  END)
"""


def histories(fr: Frames) -> DataFrame:
    """Return the chosen history rows: ``run_id, transactional_id, pos, source, broker_id, index, ...``."""
    return fr.shared("histories", _histories)


def _histories(fr: Frames) -> DataFrame:
    txn = fr.t["txn_state"].select(
        *_ID,
        "source",
        "broker_id",
        "index",
        F.col("offset").cast("long").alias("offset"),
        F.col("producer_id").cast("long").alias("producer_id"),
        F.col("producer_epoch").cast("long").alias("producer_epoch"),
        "state",
        F.col("partitions").cast("array<struct<topic:string,partition:int>>").alias("partitions"),
    )
    sources = (
        txn.where(F.col("source").isin("coordinator", "log"))
        .groupBy(*_ID, "source", "broker_id")
        .agg(F.count("*").alias("n"))
    )
    coordinator = F.col("source") == "coordinator"
    rank = Window.partitionBy(*_ID).orderBy(
        F.when(coordinator, 0).otherwise(1), F.when(coordinator, -F.col("n")).otherwise(0), F.col("broker_id")
    )
    chosen = sources.withColumn("_rn", F.row_number().over(rank)).where("_rn = 1").select(*_ID, "source", "broker_id")
    rows = txn.join(chosen, [*_ID, "source", "broker_id"])
    return rows.withColumn("pos", F.row_number().over(Window.partitionBy(*_ID).orderBy("index", "offset")) - 1)


def decisions(fr: Frames) -> DataFrame:
    """Return one row per decision: ``run_id, transactional_id, dpos, producer_id, producer_epoch,
    control_type, partitions, offset, completed`` (``dpos``: its place in the id's decisions)."""
    return fr.shared("decisions", _decisions)


def _decisions(fr: Frames) -> DataFrame:
    rows = F.struct("pos", "offset", "producer_id", "producer_epoch", "state", "partitions")
    folded = (
        histories(fr)
        .groupBy(*_ID)
        .agg(F.sort_array(F.collect_list(rows)).alias("rows"))
        .select(*_ID, F.expr(_FOLD).alias("decs"))
    )
    return folded.select(*_ID, F.posexplode("decs").alias("dpos", "d")).select(*_ID, "dpos", "d.*")


def by_partition(fr: Frames) -> DataFrame:
    """Return one row per (decision, partition it names) with ``topic``, ``partition`` and ``rank``."""
    return fr.shared("by_partition", _by_partition)


def _by_partition(fr: Frames) -> DataFrame:
    exploded = decisions(fr).select("*", F.posexplode("partitions").alias("ppos", "tp"))
    return exploded.select(
        RUN,
        "transactional_id",
        "producer_id",
        "producer_epoch",
        "control_type",
        "offset",
        F.col("tp.topic").alias("topic"),
        F.col("tp.partition").alias("partition"),
        F.struct("transactional_id", "dpos", "ppos").alias("rank"),
    )
