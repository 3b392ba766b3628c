"""What every Spark invariant reads: the checked input tables, the authoritative log, transaction spans.

Role
----
The Python checkers walk a :class:`~engine.check.ground_truth.GroundTruth`; the Spark ones read
the tables of :mod:`engine.export.logs` as DataFrames, for any number of runs at once (every
window and join is partitioned by ``run_id``). :class:`Frames` validates the input once and
derives, lazily, the frames several checks share:

* ``authoritative``: per partition, the broker whose log stands for it (the controller's leader
  when it has a replica row, else the replica with the highest LEO, lowest broker id on ties),
  with that replica's HW, LSO and role (``GroundTruth.authoritative``);
* ``spans``: per replica and producer id, each transaction span (``_common.txn_spans``): the
  transactional data since the producer's previous marker and the marker that ended it, if any;
* ``mixed``: non-transactional batches of a producer inside its open transaction.

:func:`emit` shapes every check's result the same way, so the checks can be unioned and
collected in one job.

Invariants
----------
* Batches of one replica are ordered by ``(base_offset, last_offset)``; the Python reference
  sorts by ``base_offset`` alone, keeping its input order on ties (only a hand-made overlap of
  two batches starting at one offset can tell the two apart).
* Sequences, epochs and offsets are widened to 64 bits before any arithmetic (Spark runs in
  ANSI mode: an int32 overflow would be an error, not a wrap).

What it does not do
-------------------
No check of its own; no collect.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias
from pyspark.sql.window import Window

from engine.check.messages import Sentence
from engine.export.logs import LOG_FIELDS
from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

RUN = "run_id"
TP = ["run_id", "topic", "partition"]
#: Tables every run of the Spark checks needs; ``partition_state`` (L7) is optional.
REQUIRED = ("batches", "records", "replicas", "partitions", "txn_state", "aborted_index", "fetches")
OPTIONAL = ("partition_state",)

#: The columns of every anomaly frame, in order.
ANOMALY_COLUMNS = ("run_id", "kind", "topic", "partition", "offsets", "values", "message")


def validate(tables: object) -> dict[str, DataFrame]:
    """Return the tables the checks read, after checking that each is a DataFrame with its columns.

    Raises
    ------
    SparkBridgeError
        If ``tables`` is not a mapping, a required table is missing, a table is not a DataFrame
        or lacks a column.
    """
    from pyspark.sql import DataFrame

    if not isinstance(tables, Mapping):
        raise SparkBridgeError(
            f"the Spark invariants need a mapping of table name to DataFrame, not {type(tables).__name__}"
        )
    missing = [n for n in REQUIRED if n not in tables]
    if missing:
        raise SparkBridgeError(
            f"no {missing[0]!r} table given; pass every table of engine.export.logs ({', '.join(REQUIRED)})"
        )
    out: dict[str, DataFrame] = {}
    for name in (*REQUIRED, *(n for n in OPTIONAL if n in tables)):
        df = tables[name]
        if not isinstance(df, DataFrame):
            raise SparkBridgeError(f"table {name!r} must be a Spark DataFrame, not {type(df).__name__}")
        want = [RUN, *(f.name for f in LOG_FIELDS[name])]
        have = set(df.columns)
        lacking = [c for c in want if c not in have]
        if lacking:
            raise SparkBridgeError(
                f"table {name!r} has no column {lacking[0]!r}; export it again with engine.export.logs"
            )
        out[name] = df
    return out


def sentence(s: Sentence, **columns: Column) -> Column:
    """Return the sentence ``s`` as Spark renders it: each field from ``columns``, else the column of its name."""
    fmt, names = s.printf()
    return F.format_string(fmt, *(columns.get(n, F.col(n)) for n in names))


def emit(
    df: DataFrame,
    kind: str,
    *,
    offsets: Column,
    message: Column,
    values: Column | None = None,
    topic: Column | None = None,
    partition: Column | None = None,
    keyed: bool = True,
) -> DataFrame:
    """Return ``df`` shaped as anomalies of ``kind`` (:data:`ANOMALY_COLUMNS`).

    ``keyed=False`` gives the anomalies no partition key; ``topic``/``partition`` override the
    frame's own columns.
    """
    if keyed:
        t = topic if topic is not None else F.col("topic")
        p = partition if partition is not None else F.col("partition")
    else:
        t, p = F.lit(None), F.lit(None)
    return df.select(
        F.col(RUN).alias("run_id"),
        F.lit(kind).alias("kind"),
        t.cast("string").alias("topic"),
        p.cast("int").alias("partition"),
        offsets.cast("array<bigint>").alias("offsets"),
        (values if values is not None else F.array()).cast("array<string>").alias("values"),
        message.cast("string").alias("message"),
    )


def text_list(col: Column) -> Column:
    """Return an array of numbers as ``[a, b, c]`` text (Python's list repr)."""
    return F.concat(F.lit("["), F.array_join(col.cast("array<string>"), ", "), F.lit("]"))


class Frames:
    """The validated input of one call and the frames derived from it, each built once.

    Every check asks for a shared frame by name and gets the same DataFrame. With
    ``checkpoint=True`` each shared frame is computed once, when first asked for, and kept as a
    local checkpoint: the checks' plans then start from it instead of repeating its whole
    lineage, which keeps Spark's planning of the final union small (planning, not execution,
    dominates on the small tables of simulated runs).
    """

    def __init__(self, tables: Mapping[str, DataFrame], *, checkpoint: bool = False) -> None:
        self.t = dict(tables)
        self.checkpoint = checkpoint
        self._memo: dict[str, DataFrame] = {}

    def shared(self, name: str, build: Callable[[Frames], DataFrame]) -> DataFrame:
        """Return the frame ``name``, built by ``build(self)`` on first use."""
        df = self._memo.get(name)
        if df is None:
            df = build(self)
            if self.checkpoint:
                df = df.localCheckpoint(eager=True)
            self._memo[name] = df
        return df

    @functools.cached_property
    def batches(self) -> DataFrame:
        """Every batch of every replica, with ``next_offset`` and 64-bit epochs and sequences."""
        return self.t["batches"].select(
            *TP,
            "broker_id",
            F.col("base_offset").cast("long").alias("base_offset"),
            F.col("last_offset").cast("long").alias("last_offset"),
            (F.col("last_offset").cast("long") + 1).alias("next_offset"),
            F.col("leader_epoch").cast("long").alias("leader_epoch"),
            F.col("producer_id").cast("long").alias("producer_id"),
            F.col("producer_epoch").cast("long").alias("producer_epoch"),
            F.col("base_sequence").cast("long").alias("base_sequence"),
            F.col("last_sequence").cast("long").alias("last_sequence"),
            "is_transactional",
            "is_control",
            "control_type",
        )

    @property
    def partition_keys(self) -> DataFrame:
        """Every (run, topic, partition) named by ``partitions`` or ``replicas``."""
        return self.shared("partition_keys", Frames._partition_keys)

    def _partition_keys(self) -> DataFrame:
        return self.t["partitions"].select(*TP).union(self.t["replicas"].select(*TP)).distinct()

    @functools.cached_property
    def versions(self) -> DataFrame:
        """Per run, the transaction protocol version (from ``partitions``)."""
        return self.t["partitions"].groupBy(RUN).agg(F.max("transaction_version").alias("transaction_version"))

    @property
    def authoritative(self) -> DataFrame:
        """Per partition with a replica row: ``auth_broker`` and that replica's HW, LSO, role."""
        return self.shared("authoritative", Frames._authoritative)

    def _authoritative(self) -> DataFrame:
        reps = self.t["replicas"]
        parts = self.t["partitions"].select(*TP, "leader")
        longest = (
            reps.withColumn(
                "_rn",
                F.row_number().over(Window.partitionBy(*TP).orderBy(F.desc("leo"), F.asc("broker_id"))),
            )
            .where("_rn = 1")
            .select(*TP, F.col("broker_id").alias("_longest"))
        )
        led = (
            reps.join(parts, TP)
            .where((F.col("leader") >= 0) & (F.col("broker_id") == F.col("leader")))
            .select(*TP, F.col("leader").alias("_led"))
            .distinct()
        )
        auth = longest.join(led, TP, "left").select(*TP, F.coalesce("_led", "_longest").alias("auth_broker"))
        row = reps.select(
            *TP,
            F.col("broker_id").alias("auth_broker"),
            F.col("hw").cast("long").alias("final_hw"),
            F.col("lso").cast("long").alias("auth_lso"),
            F.col("is_leader").alias("auth_is_leader"),
        )
        return auth.join(row, [*TP, "auth_broker"], "left")

    @property
    def auth_batches(self) -> DataFrame:
        """The batches of each partition's authoritative log."""
        return self.shared("auth_batches", Frames._auth_batches)

    def _auth_batches(self) -> DataFrame:
        return self._on_auth_log(self.batches)

    def _on_auth_log(self, df: DataFrame) -> DataFrame:
        """Keep the rows of ``df`` (one set per replica) that come from each partition's authoritative broker."""
        auth = self.authoritative.select(*TP, F.col("auth_broker").alias("broker_id"))
        return df.join(auth, [*TP, "broker_id"])

    @functools.cached_property
    def _grouped(self) -> DataFrame:
        """Batches of producers, each with ``grp``: how many markers of its producer precede it in its log."""
        w = (
            Window.partitionBy(*TP, "broker_id", "producer_id")
            .orderBy("base_offset", "last_offset")
            .rowsBetween(Window.unboundedPreceding, -1)
        )
        return self.batches.where(F.col("producer_id") >= 0).withColumn(
            "grp", F.coalesce(F.sum(F.col("is_control").cast("int")).over(w), F.lit(0))
        )

    @property
    def spans(self) -> DataFrame:
        """Every transaction span of every replica's log.

        Columns: run and partition, ``broker_id``, ``producer_id``, ``marker_offset``,
        ``marker_epoch``, ``control_type`` (null for an open span), ``data`` (sorted
        ``struct(offset, epoch)`` of its transactional data batches), ``first_offset`` and
        ``sort_offset`` (the marker's offset, or the first data offset of an open span).
        """
        return self.shared("spans", Frames._spans)

    def _spans(self) -> DataFrame:
        ctl = F.col("is_control")
        spans = (
            self._grouped.where(ctl | F.col("is_transactional"))
            .groupBy(*TP, "broker_id", "producer_id", "grp")
            .agg(
                F.max(F.when(ctl, F.col("base_offset"))).alias("marker_offset"),
                F.max(F.when(ctl, F.col("producer_epoch"))).alias("marker_epoch"),
                F.max(F.when(ctl, F.col("control_type"))).alias("control_type"),
                F.max(ctl.cast("int")).alias("_closed"),
                F.sort_array(
                    F.collect_list(
                        F.when(
                            ~ctl, F.struct(F.col("base_offset").alias("offset"), F.col("producer_epoch").alias("epoch"))
                        )
                    )
                ).alias("data"),
            )
        )
        first = F.coalesce(F.expr("get(data, 0).offset"), F.col("marker_offset"))
        return spans.select(
            *TP,
            "broker_id",
            "producer_id",
            F.when(F.col("_closed") == 1, F.col("marker_offset")).alias("marker_offset"),
            "marker_epoch",
            "control_type",
            "data",
            first.alias("first_offset"),
            F.coalesce(F.col("marker_offset"), first).alias("sort_offset"),
        )

    @property
    def auth_spans(self) -> DataFrame:
        """The transaction spans of each partition's authoritative log."""
        return self.shared("auth_spans", Frames._auth_spans)

    def _auth_spans(self) -> DataFrame:
        return self._on_auth_log(self.spans)

    @property
    def mixed(self) -> DataFrame:
        """Non-transactional data batches of the authoritative log written inside their producer's open transaction."""
        return self.shared("mixed", Frames._mixed)

    def _mixed(self) -> DataFrame:
        w = (
            Window.partitionBy(*TP, "broker_id", "producer_id", "grp")
            .orderBy("base_offset", "last_offset")
            .rowsBetween(Window.unboundedPreceding, -1)
        )
        txn_data = (F.col("is_transactional") & ~F.col("is_control")).cast("int")
        return (
            self._on_auth_log(self._grouped)
            .withColumn("_open", F.coalesce(F.sum(txn_data).over(w), F.lit(0)))
            .where(~F.col("is_control") & ~F.col("is_transactional") & (F.col("_open") > 0))
            .select(*TP, "producer_id", "base_offset")
        )
