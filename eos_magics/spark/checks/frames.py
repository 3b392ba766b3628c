"""The shared intermediates of the Spark history checks: operations, micro-ops, values, version order.

Role
----
:func:`build_frames` turns the ``history`` and ``history_mops`` DataFrames of an export
(:mod:`engine.export.history`) into the evidence :func:`engine.check.analysis.analyse` gathers,
as DataFrames keyed by ``run_id``, so every check runs over many runs in one pass:

=============  ===============================================================================
frame          one row per
=============  ===============================================================================
``ops``        operation (a completion; an invocation never completed counts as ``info``)
``mops``       micro-op of an operation, as :meth:`History.completions` gives it (an empty
               completion takes its invocation's), ``assign``/``subscribe``/``crash`` left out;
               ``committed`` marks the sends of ``ok`` ops and of ``info`` ops proven committed
``vals``       (key, value): first ok read, first other sighting, every offset, writer, failed
``holders``    (key, offset) of the version order: the value holding it (and that value's
               writer and first offset), its dense rank, every value claiming it and their writers
``polls``      poll, with the dense rank and the holder of its offset
``sends``      send of a committed op that has a place (``eo``: its acknowledged offset, else
               where :meth:`KeyState.locate` finds it), with the rank and holder of ``eo``
=============  ===============================================================================

The Python pass decides several things by the order in which it meets records; here that order
is a sortable struct ``ord`` = (phase, seq, kind, mop_index): ``seq`` is the completion order
(an op never completed comes after every completion), ``kind`` puts an op's polls before its
sends, and ``phase`` 1 marks sends of ``info`` ops proven committed, which the pass commits only
once every op was read.

Invariants
----------
Mirrors :mod:`engine.check.analysis` exactly (see each column's comment): same readers (``ok``
ops only), same proof of ``info`` ops (an ``ok`` op read one of their sends), same holder of an
offset claimed by several values (first read, else first sighting of an unread value, else the
smallest duplicated value).

What it does not do
-------------------
It reports nothing (the checker modules do) and collects nothing to the driver. The frames are
cached, lazily: the first action that reads one fills it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import Column, Window
from pyspark.sql import functions as sf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "ANOMALY_COLUMNS",
    "KEY",
    "NEVER_COMPLETED",
    "Frames",
    "anomaly_rows",
    "build_frames",
]

#: The columns naming a key, after ``run_id``.
KEY = ("run_id", "topic", "partition")
#: Added to the index of an invocation never completed: it comes after every completion.
NEVER_COMPLETED = 1 << 40
#: Ops whose micro-ops the checkers ignore (the Python pass returns before reading them).
_NOT_DATA = ("assign", "subscribe", "crash")

#: The columns every checker returns, one row per anomaly.
ANOMALY_COLUMNS = ("run_id", "kind", "topic", "partition", "offsets", "values", "ops", "n", "process", "ranks")


@dataclass(frozen=True)
class Frames:
    """The intermediates every check reads (see the module docstring), each cached."""

    ops: DataFrame
    mops: DataFrame
    vals: DataFrame
    holders: DataFrame
    polls: DataFrame
    sends: DataFrame

    def unpersist(self) -> None:
        """Drop the cached frames."""
        for df in (self.ops, self.mops, self.vals, self.holders, self.polls, self.sends):
            df.unpersist()


def _ord(phase: Column, kind: int) -> Column:
    return sf.struct(
        phase.cast("int").alias("phase"),
        sf.col("seq").alias("seq"),
        sf.lit(kind).alias("kind"),
        sf.col("mop_index").cast("int").alias("mop_index"),
    )


def _ord_zero() -> Column:
    return sf.struct(
        sf.lit(0).alias("phase"),
        sf.lit(0).cast("long").alias("seq"),
        sf.lit(0).alias("kind"),
        sf.lit(0).alias("mop_index"),
    )


def _ops(history: DataFrame, mops: DataFrame) -> DataFrame:
    """One row per operation: its completion (or lone invocation) and which line's micro-ops it has.

    A process runs one op at a time, so a completion's invocation is the previous line of its
    process. A completion with no micro-ops takes its invocation's, and then its keys too when
    it has none of its own (:meth:`History.completions`).
    """
    counts = mops.groupBy("run_id", "index").agg(sf.count(sf.lit(1)).alias("n_mops"))
    lines = history.select("run_id", "index", "process", "type", "f", "keys", "rebalance_keys").join(
        counts, ["run_id", "index"], "left"
    )
    lines = lines.withColumn("n_mops", sf.coalesce("n_mops", sf.lit(0)))
    w = Window.partitionBy("run_id", "process").orderBy("index")
    lines = (
        lines.withColumn("inv_index", sf.lag("index").over(w))
        .withColumn("inv_n", sf.lag("n_mops").over(w))
        .withColumn("inv_keys", sf.lag("keys").over(w))
        .withColumn("next_type", sf.lead("type").over(w))
    )
    completed = sf.col("type") != "invoke"
    borrow = completed & (sf.col("n_mops") == 0) & ((sf.col("inv_n") > 0) | (sf.size("inv_keys") > 0))
    never = ~completed & sf.col("next_type").isNull()
    return lines.where(completed | never).select(
        "run_id",
        sf.col("index").alias("op"),
        sf.when(never, sf.col("index") + NEVER_COMPLETED).otherwise(sf.col("index")).alias("seq"),
        "process",
        sf.when(never, sf.lit("info")).otherwise(sf.col("type")).alias("type"),
        "f",
        sf.when(borrow & (sf.size("keys") == 0), sf.col("inv_keys")).otherwise(sf.col("keys")).alias("keys"),
        "rebalance_keys",
        sf.when(borrow, sf.col("inv_index")).otherwise(sf.col("index")).alias("src"),
    )


def _with_commits(mops: DataFrame) -> DataFrame:
    """Add ``committed`` (a send of an ``ok`` op, or of an ``info`` op proven committed) and ``phase``.

    An ``info`` op is proven committed when an ``ok`` op read one of its sends. Two windows
    decide it without a join: whether each value was read by an ok op (per key and value),
    then whether any of the op's sends was (per op). ``phase`` is 0 for ``ok`` ops and 1 for
    the others: the Python pass commits proven ``info`` sends after every op was read.
    """
    is_send = sf.col("mop_f") == "send"
    by_value = Window.partitionBy(*KEY, "value")
    by_op = Window.partitionBy("run_id", "op")
    read_ok = sf.max(((sf.col("mop_f") == "poll") & (sf.col("type") == "ok")).cast("int")).over(by_value)
    return (
        mops.withColumn("read_ok", read_ok)
        .withColumn("proof", (is_send & (sf.col("type") == "info") & (sf.col("read_ok") == 1)).cast("int"))
        .withColumn("proven", sf.max("proof").over(by_op) == 1)
        .withColumn("committed", is_send & ((sf.col("type") == "ok") | sf.col("proven")))
        .withColumn("phase", sf.when(sf.col("type") == "ok", 0).otherwise(1))
        .drop("read_ok", "proof", "proven")
    )


def _vals(mops: DataFrame) -> DataFrame:
    """One row per (key, value): what :class:`engine.check.analysis.KeyState` knows of the value.

    * ``read``: (ord, offset) of the first ``ok`` read; null when no ok op read it;
    * ``seen``: (ord, offset) of the first other sighting (a non-ok poll, a committed send with
      an offset); :meth:`KeyState.locate` reads it for values no ok op read;
    * ``offs``: every offset the value was sighted at, ascending (two or more: a duplicate);
    * ``writer``: the first committed op (``ok``, then ``info`` proven) that sent it;
    * ``failed``: the first ``fail`` op that sent it.
    """
    is_poll = sf.col("mop_f") == "poll"
    committed = sf.col("committed")
    phase = sf.col("phase")
    m = mops.select(
        *KEY,
        "value",
        "offset",
        "op",
        "seq",
        (is_poll & (sf.col("type") == "ok")).alias("ok_read"),
        (is_poll | (committed & sf.col("offset").isNotNull())).alias("sighting"),
        committed.alias("committed"),
        (~is_poll & (sf.col("type") == "fail")).alias("failed"),
        sf.when(is_poll, _ord(sf.lit(0), 0)).otherwise(_ord(phase, 1)).alias("ord"),
        "phase",
    )
    placed = sf.struct(sf.col("ord"), sf.col("offset").alias("offset"))
    return m.groupBy(*KEY, "value").agg(
        sf.min(sf.when(sf.col("ok_read"), placed)).alias("read"),
        sf.min(sf.when(sf.col("sighting") & ~sf.col("ok_read"), placed)).alias("seen"),
        sf.array_sort(sf.collect_set(sf.when(sf.col("sighting"), sf.col("offset")))).alias("offs"),
        sf.min(sf.when(sf.col("committed"), sf.struct("phase", "seq", "op"))).getField("op").alias("writer"),
        sf.min(sf.when(sf.col("failed"), sf.struct("seq", "op"))).getField("op").alias("failed"),
    )


def _holders(vals: DataFrame) -> DataFrame:
    """One row per sighted (key, offset): who holds it in the version order, its dense rank, its claimants.

    Mirrors ``_build_version_order``: the offsets are claimed first by the values ok ops read
    there first (earliest first read wins), then by unread values first sighted there (earliest
    sighting wins), then by duplicated values (smallest value wins). The holder's writer and
    first offset come along for the ww edges (:mod:`eos_magics.spark.checks.cycles`).
    """
    claims = vals.select(*KEY, "value", "read", "seen", "writer", "offs", sf.explode("offs").alias("offset"))
    by_read = sf.col("read").isNotNull() & (sf.col("read.offset") == sf.col("offset"))
    by_seen = sf.col("read").isNull() & (sf.col("seen.offset") == sf.col("offset"))
    prio = sf.struct(
        sf.when(by_read, 1).when(by_seen, 2).otherwise(3).alias("cls"),
        sf.when(by_read, sf.col("read.ord")).when(by_seen, sf.col("seen.ord")).otherwise(_ord_zero()).alias("ord"),
        sf.col("value").alias("value"),
        sf.col("writer").alias("writer"),
        sf.try_element_at("offs", sf.lit(1)).alias("first"),
        sf.size("offs").alias("n_offs"),
    )
    held = claims.groupBy(*KEY, "offset").agg(
        sf.min(prio).alias("h"),
        sf.array_sort(sf.collect_set("value")).alias("claimants"),
        sf.array_sort(sf.collect_set("writer")).alias("writers"),
    )
    w = Window.partitionBy(*KEY).orderBy("offset")
    return held.select(
        *KEY,
        "offset",
        sf.row_number().over(w).cast("long").alias("rank"),
        sf.col("h.value").alias("holder"),
        sf.col("h.writer").alias("holder_writer"),
        # A duplicate copy (not its value's first offset) stays out of the ww edges.
        ((sf.col("h.n_offs") <= 1) | (sf.col("h.first") == sf.col("offset"))).alias("holder_first"),
        "claimants",
        "writers",
    )


def _ranked_polls(mops: DataFrame, holders: DataFrame) -> DataFrame:
    """Every poll with the rank and holder of its offset (a polled offset is always sighted)."""
    return mops.where(sf.col("mop_f") == "poll").join(
        holders.select(*KEY, "offset", "rank", "holder"), [*KEY, "offset"]
    )


def _placed_sends(mops: DataFrame, vals: DataFrame, holders: DataFrame) -> DataFrame:
    """The sends of committed ops that have a place ``eo``, with its rank and holder.

    ``eo`` is the acknowledged offset, else the first ok read of the value, else its first
    sighting (:meth:`KeyState.locate`); a send with none is left out, as the Python checker
    skips it.
    """
    where = vals.select(*KEY, "value", sf.col("read.offset").alias("r_off"), sf.col("seen.offset").alias("s_off"))
    placed = (
        mops.where("committed")
        .join(where, [*KEY, "value"], "left")
        .withColumn("eo", sf.coalesce("offset", "r_off", "s_off"))
        .where(sf.col("eo").isNotNull())
    )
    ranked = holders.select(*KEY, sf.col("offset").alias("eo"), "rank", "holder")
    return placed.join(ranked, [*KEY, "eo"]).select(
        *KEY, "op", "seq", "process", "mop_index", "eo", "value", "rank", "holder"
    )


def build_frames(history: DataFrame, mops: DataFrame) -> Frames:
    """Return the cached intermediates of the ``history`` / ``history_mops`` DataFrames (see the module docstring)."""
    ops = _ops(history, mops).cache()
    emops = (
        mops.select(
            "run_id",
            sf.col("index").alias("src"),
            "mop_index",
            "mop_f",
            "topic",
            sf.col("partition").cast("int").alias("partition"),
            "offset",
            "value",
        )
        .join(ops.where(~sf.col("f").isin(*_NOT_DATA)), ["run_id", "src"])
        .drop("src", "keys")
    )
    cmops = _with_commits(emops).cache()
    vals = _vals(cmops).cache()
    holders = _holders(vals).cache()
    polls = _ranked_polls(cmops, holders).cache()
    sends = _placed_sends(cmops, vals, holders).cache()
    return Frames(ops, cmops, vals, holders, polls, sends)


def anomaly_rows(
    df: DataFrame,
    kind: Column | str,
    offsets: Column,
    values: Column,
    ops: Column,
    n: Column | None = None,
    process: Column | None = None,
    ranks: Column | None = None,
) -> DataFrame:
    """Select the checker output columns (:data:`ANOMALY_COLUMNS`) from ``df``.

    ``n`` is a count the message needs (the rank difference of an ordering anomaly), ``process``
    the process a message names, ``ranks`` the ranks ``(before, after)`` of a skip, whose
    skipped values are looked up afterwards.
    """
    return df.select(
        "run_id",
        (sf.lit(kind) if isinstance(kind, str) else kind).alias("kind"),
        "topic",
        "partition",
        offsets.cast("array<bigint>").alias("offsets"),
        values.cast("array<string>").alias("values"),
        ops.cast("array<bigint>").alias("ops"),
        (sf.lit(None) if n is None else n).cast("bigint").alias("n"),
        (sf.lit(None) if process is None else process).cast("bigint").alias("process"),
        (sf.lit(None) if ranks is None else ranks).cast("array<bigint>").alias("ranks"),
    )
