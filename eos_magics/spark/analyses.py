"""Analyses of exported runs as Spark DataFrames: the questions data engineers ask of a Kafka run.

Role
----
Each function takes the tables of an export as Spark DataFrames (what
:func:`eos_magics.spark.views.register` returns: ``{"records": df, "txn_state": df, ...}``) and
returns one DataFrame, grouped by ``run_id`` so that one call answers for every run of a sweep:

=============================  ================================================================
function                       one row per
=============================  ================================================================
:func:`transactions`           transaction (latency, partitions, records, outcome) from the
                               coordinator's ``__transaction_state`` and the partition logs
:func:`abort_ratio`            transactional id (committed, aborted, ratio)
:func:`lso_lag`                leader offset change (HW - LSO, LEO - HW over simulated time)
:func:`producer_sequences`     (partition, producer id, epoch): records, duplicated values,
                               duplicated and missing sequences
:func:`end_to_end_latency`     isolation level: how long a record took from its append to the
                               first fetch that returned it (count, mean, p50, p95, max)
:func:`coordinator_load`       ``__transaction_state`` partition: writes, transactional ids
=============================  ================================================================

Invariants
----------
* Pure DataFrame transformations: nothing is collected to the driver, nothing is cached.
* Times are simulated milliseconds (``*_ms`` columns), never wall time.

What it does not do
-------------------
No checking (that is :mod:`eos_magics.spark.history_checks` and the invariant checks): these
describe a run, they do not judge it. The end-to-end latency counts from the record's append on
the leader (its create time) to the consumer's fetch; the client-side produce delay before the
append is not in the export.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from engine.coordinator_lookup import TRANSACTION_STATE_TOPIC
from engine.views.lookup import INTERNAL_TOPICS
from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = [
    "abort_ratio",
    "coordinator_load",
    "end_to_end_latency",
    "lso_lag",
    "producer_sequences",
    "transactions",
]

_TXN_STATE_TOPIC = TRANSACTION_STATE_TOPIC
_INTERNAL = INTERNAL_TOPICS


def _table(tables: Mapping[str, DataFrame], name: str) -> DataFrame:
    try:
        return tables[name]
    except KeyError:
        raise SparkBridgeError(
            f"no '{name}' table among {sorted(tables)}; pass what eos_magics.spark.views.register returned"
        ) from None


def _final_data(tables: Mapping[str, DataFrame]) -> DataFrame:
    """Data records of the authoritative replica of every user topic."""
    from pyspark.sql import functions as sf

    r = _table(tables, "records")
    return r.where(sf.col("final_leader") & ~sf.col("is_control") & ~sf.col("topic").isin(*_INTERNAL))


def _with_outcome(records: DataFrame) -> DataFrame:
    """Data records of the final logs of user topics, with ``outcome``: the fate of their transaction.

    ``committed`` or ``aborted`` from the marker that ended the record's transaction in its
    partition, ``open`` when no marker followed yet, ``none`` for a record outside any transaction.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    r = records.where(sf.col("final_leader") & ~sf.col("topic").isin(*_INTERNAL))
    w = Window.partitionBy("run_id", "topic", "partition", "producer_id").orderBy("offset")
    following = w.rowsBetween(Window.currentRow, Window.unboundedFollowing)
    marker = sf.first(sf.when(sf.col("is_control"), sf.col("control_type")), ignorenulls=True).over(following)
    outcome = (
        sf.when(~sf.col("is_transactional"), "none")
        .when(sf.col("_marker") == "COMMIT", "committed")
        .when(sf.col("_marker") == "ABORT", "aborted")
        .otherwise("open")
    )
    return r.withColumn("_marker", marker).where(~sf.col("is_control")).withColumn("outcome", outcome).drop("_marker")


def transactions(tables: Mapping[str, DataFrame]) -> DataFrame:
    """One row per transaction the coordinator began: its outcome, latency, partitions and size.

    A transaction is the ``Ongoing`` .. ``Complete*`` run of one transactional id in
    ``__transaction_state`` (its authoritative log), keyed by producer id and start time (under
    transaction version 2 the epoch is bumped at the end, so the epoch is not part of the key).
    ``records`` counts its data records in the final logs of user topics (offsets sent to the
    transaction are not counted): the spans of transactional data that a marker of this producer
    id closed while the transaction was ending.

    Columns: ``run_id``, ``transactional_id``, ``producer_id``, ``producer_epoch`` (at the start),
    ``start_ms``, ``end_ms`` (null while open), ``latency_ms``, ``outcome`` (``committed``,
    ``aborted``, ``preparing``, ``open``), ``partitions``, ``records``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    ts = _table(tables, "txn_state").where(
        (sf.col("source") == "log")
        & (sf.col("txn_start_ms") >= 0)
        & sf.col("state").isin("ONGOING", "PREPARE_COMMIT", "PREPARE_ABORT", "COMPLETE_COMMIT", "COMPLETE_ABORT")
    )
    key = ["run_id", "transactional_id", "producer_id", "txn_start_ms"]
    txns = ts.groupBy(*key).agg(
        sf.min("producer_epoch").alias("producer_epoch"),
        sf.max(sf.when(sf.col("state").startswith("COMPLETE"), sf.col("update_ms"))).alias("end_ms"),
        sf.max(sf.when(sf.col("state").startswith("PREPARE"), sf.col("update_ms"))).alias("prepare_ms"),
        sf.max(sf.when(sf.col("state") == "COMPLETE_COMMIT", 1).otherwise(0)).alias("_commit"),
        sf.max(sf.when(sf.col("state") == "COMPLETE_ABORT", 1).otherwise(0)).alias("_abort"),
        sf.max(sf.when(sf.col("state").startswith("PREPARE"), 1).otherwise(0)).alias("_prepare"),
        sf.max(sf.size("partitions")).alias("partitions"),
    )
    outcome = (
        sf.when(sf.col("_commit") == 1, "committed")
        .when(sf.col("_abort") == 1, "aborted")
        .when(sf.col("_prepare") == 1, "preparing")
        .otherwise("open")
    )
    txns = txns.withColumn("outcome", outcome)

    # Spans: transactional data records with the offset and time of the marker that ended them.
    rec = _table(tables, "records").where(
        sf.col("final_leader") & (sf.col("producer_id") >= 0) & ~sf.col("topic").isin(*_INTERNAL)
    )
    w = Window.partitionBy("run_id", "topic", "partition", "producer_id").orderBy("offset")
    following = w.rowsBetween(Window.currentRow, Window.unboundedFollowing)
    marker_time = sf.first(sf.when(sf.col("is_control"), sf.col("create_time_ms")), ignorenulls=True).over(following)
    spans = (
        rec.where(sf.col("is_transactional") | sf.col("is_control"))
        .withColumn("marker_ms", marker_time)
        .where(~sf.col("is_control") & sf.col("marker_ms").isNotNull())
        .groupBy("run_id", "producer_id", "marker_ms")
        .agg(sf.count(sf.lit(1)).alias("span_records"))
    )
    joined = txns.alias("t").join(
        spans.alias("s"),
        (sf.col("t.run_id") == sf.col("s.run_id"))
        & (sf.col("t.producer_id") == sf.col("s.producer_id"))
        & (sf.col("s.marker_ms") >= sf.coalesce(sf.col("t.prepare_ms"), sf.col("t.txn_start_ms")))
        & (sf.col("s.marker_ms") <= sf.coalesce(sf.col("t.end_ms"), sf.lit(2**62))),
        "left",
    )
    out = joined.groupBy(*[sf.col(f"t.{k}") for k in key]).agg(
        sf.first("t.producer_epoch").alias("producer_epoch"),
        sf.first("t.end_ms").alias("end_ms"),
        sf.first("t.outcome").alias("outcome"),
        sf.first("t.partitions").alias("partitions"),
        sf.coalesce(sf.sum("s.span_records"), sf.lit(0)).cast("long").alias("records"),
    )
    return out.select(
        "run_id",
        "transactional_id",
        "producer_id",
        "producer_epoch",
        sf.col("txn_start_ms").alias("start_ms"),
        "end_ms",
        (sf.col("end_ms") - sf.col("txn_start_ms")).alias("latency_ms"),
        "outcome",
        "partitions",
        "records",
    ).orderBy("run_id", "transactional_id", "start_ms")


def abort_ratio(tables: Mapping[str, DataFrame]) -> DataFrame:
    """Per transactional id: transactions committed, aborted, and the share aborted (of the ended ones)."""
    from pyspark.sql import functions as sf

    t = transactions(tables)
    return (
        t.groupBy("run_id", "transactional_id")
        .agg(
            sf.sum(sf.when(sf.col("outcome") == "committed", 1).otherwise(0)).cast("long").alias("committed"),
            sf.sum(sf.when(sf.col("outcome") == "aborted", 1).otherwise(0)).cast("long").alias("aborted"),
            sf.sum(sf.when(sf.col("outcome").isin("open", "preparing"), 1).otherwise(0))
            .cast("long")
            .alias("unfinished"),
        )
        .withColumn(
            "abort_ratio",
            sf.when(
                (sf.col("committed") + sf.col("aborted")) > 0,
                sf.col("aborted") / (sf.col("committed") + sf.col("aborted")),
            ),
        )
        .orderBy("run_id", "transactional_id")
    )


def lso_lag(tables: Mapping[str, DataFrame], *, internal: bool = False) -> DataFrame:
    """Every change of a leader's offsets: ``lso_lag`` = HW - LSO (records read_committed must wait for).

    Columns: ``run_id``, ``topic``, ``partition``, ``time_ms``, ``broker_id``, ``leader_epoch``, ``leo``,
    ``hw``, ``lso``, ``lso_lag``, ``hw_lag`` (LEO - HW: records not yet replicated). Internal topics are
    left out unless ``internal``.
    """
    from pyspark.sql import functions as sf

    ps = _table(tables, "partition_state")
    if not internal:
        ps = ps.where(~sf.col("topic").isin(*_INTERNAL))
    return ps.select(
        "run_id",
        "topic",
        "partition",
        "time_ms",
        "broker_id",
        "leader_epoch",
        "leo",
        "hw",
        "lso",
        (sf.col("hw") - sf.col("lso")).alias("lso_lag"),
        (sf.col("leo") - sf.col("hw")).alias("hw_lag"),
    ).orderBy("run_id", "topic", "partition", "time_ms", "index")


def producer_sequences(tables: Mapping[str, DataFrame]) -> DataFrame:
    """Per (partition, producer id, epoch) in the final logs: records, duplicates and gaps.

    ``duplicate_values`` counts records whose value another record of the same group already
    holds (what a retry without idempotence leaves behind); ``duplicates`` counts records whose
    sequence another record of the same producer epoch already has (what idempotence forbids);
    ``gaps`` counts sequence numbers missing between the lowest and the highest (what a lost
    write leaves). Producers without idempotence share producer id -1 and have no sequences:
    their ``duplicates``, ``gaps`` and sequence columns are null.
    """
    from pyspark.sql import functions as sf

    idempotent = sf.col("producer_id") >= 0
    return (
        _final_data(tables)
        .groupBy("run_id", "topic", "partition", "producer_id", "producer_epoch")
        .agg(
            sf.count(sf.lit(1)).alias("records"),
            sf.countDistinct("value").alias("_values"),
            sf.countDistinct("sequence").alias("_distinct"),
            sf.min("sequence").alias("first_sequence"),
            sf.max("sequence").alias("last_sequence"),
        )
        .select(
            "run_id",
            "topic",
            "partition",
            "producer_id",
            "producer_epoch",
            "records",
            sf.when(idempotent, sf.col("first_sequence")).alias("first_sequence"),
            sf.when(idempotent, sf.col("last_sequence")).alias("last_sequence"),
            (sf.col("records") - sf.col("_values")).alias("duplicate_values"),
            sf.when(idempotent, sf.col("records") - sf.col("_distinct")).alias("duplicates"),
            sf.when(idempotent, sf.col("last_sequence") - sf.col("first_sequence") + 1 - sf.col("_distinct")).alias(
                "gaps"
            ),
        )
        .orderBy("run_id", "topic", "partition", "producer_id", "producer_epoch")
    )


def end_to_end_latency(tables: Mapping[str, DataFrame], *, consumers: Sequence[str] | None = None) -> DataFrame:
    """Per isolation level: how long records waited between their append and the first fetch that returned them.

    A record counts for a consumer when one of its fetches covered the record's offset
    (``fetch_offset <= offset < next_offset``), except an aborted record for a read_committed
    consumer (it filtered that record out); its latency is that fetch's time minus the
    record's create time. A read_committed consumer waits for the LSO, so its latencies include
    the time each transaction stayed open. ``consumers`` keeps only those clients (by client id);
    by default every consumer counts, which includes a checker's final reader (it reads late on
    purpose). Columns: ``run_id``, ``isolation``, ``records``, ``mean_ms``, ``p50_ms``,
    ``p95_ms``, ``max_ms``.
    """
    from pyspark.sql import functions as sf

    d = _with_outcome(_table(tables, "records")).select(
        "run_id", "topic", "partition", "offset", "create_time_ms", "outcome"
    )
    f = _table(tables, "fetches").where(
        sf.col("next_offset").isNotNull() & (sf.col("next_offset") > sf.col("fetch_offset"))
    )
    if consumers is not None:
        if isinstance(consumers, str) or not all(isinstance(c, str) for c in consumers):
            raise SparkBridgeError("consumers must be a list of client ids, e.g. ['reader-rc', 'reader-ru']")
        f = f.where(sf.col("consumer").isin(*consumers))
    hit = (
        d.alias("d")
        .join(
            f.alias("f"),
            (sf.col("d.run_id") == sf.col("f.run_id"))
            & (sf.col("d.topic") == sf.col("f.topic"))
            & (sf.col("d.partition") == sf.col("f.partition"))
            & (sf.col("d.offset") >= sf.col("f.fetch_offset"))
            & (sf.col("d.offset") < sf.col("f.next_offset"))
            & ((sf.col("f.isolation") != "read_committed") | (sf.col("d.outcome") != "aborted")),
        )
        .groupBy("d.run_id", "f.consumer", "f.isolation", "d.topic", "d.partition", "d.offset")
        .agg((sf.min("f.time_ms") - sf.first("d.create_time_ms")).alias("latency_ms"))
    )
    return (
        hit.groupBy("run_id", "isolation")
        .agg(
            sf.count(sf.lit(1)).alias("records"),
            sf.avg("latency_ms").alias("mean_ms"),
            sf.percentile("latency_ms", 0.5).alias("p50_ms"),
            sf.percentile("latency_ms", 0.95).alias("p95_ms"),
            sf.max("latency_ms").alias("max_ms"),
        )
        .orderBy("run_id", "isolation")
    )


def coordinator_load(tables: Mapping[str, DataFrame]) -> DataFrame:
    """Per ``__transaction_state`` partition: writes, transactional ids it coordinates, and its leader.

    Kafka maps a transactional id to partition ``abs(hashCode) % transaction.state.log.num.partitions``;
    the leader of that partition is the id's coordinator, so uneven ids mean uneven coordinators.
    """
    from pyspark.sql import functions as sf

    r = _table(tables, "records").where(
        sf.col("final_leader") & ~sf.col("is_control") & (sf.col("topic") == _TXN_STATE_TOPIC)
    )
    return (
        r.groupBy("run_id", "partition")
        .agg(
            sf.count(sf.lit(1)).alias("writes"),
            sf.countDistinct("key").alias("transactional_ids"),
            sf.first("broker_id").alias("leader"),
        )
        .orderBy("run_id", "partition")
    )
