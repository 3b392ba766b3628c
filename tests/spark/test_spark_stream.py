"""The ``eos`` Spark source (``eos_magics.spark.source``) reading a live simulated cluster through its feed.

Goal: a Structured Streaming query over a topic shows, micro-batch by micro-batch, what a Kafka
consumer at each isolation level would see while the cluster moves: an open transaction is
visible at read_uncommitted and invisible at read_committed until it commits; an aborted one
never shows at read_committed; in the end each stream holds exactly what the engine's own
consumer reads, no record twice. A batch read agrees too, and a wrong token or option fails the
query with a message the user can act on.

Method: one Spark session for the module (fixture ``spark``), one cluster in a
:class:`~widgets.live.LiveRun` (whose lock the feed reads under), and one streaming query that
unions three sources (read_committed, read_uncommitted, and read_uncommitted from the latest
offsets) into a memory sink. The test moves the cluster between ``processAllAvailable()`` calls.
Spark work is batched into few jobs to keep the module fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql import functions as F  # noqa: N812 - Spark's usual alias

from engine.cluster import Cluster
from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.feed import Feed
from eos_magics.spark.source import read_batch, read_stream, register
from widgets.live import LiveRun

pytestmark = pytest.mark.slow

TOPIC = "out"
RC = "read_committed"
RU = "read_uncommitted"


def produce_plain(cluster: Cluster, prefix: str, n: int = 2) -> None:
    plain = cluster.producer({"linger.ms": 0})
    for i in range(n):
        plain.produce(TOPIC, key=f"{prefix}{i}", value=f"{prefix}-{i}", partition=i % 2)
    plain.flush()


def produce_in(txn: Any, prefix: str, n: int = 4) -> set[str]:
    txn.begin_transaction()
    for i in range(n):
        txn.produce(TOPIC, value=f"{prefix}-{i}", partition=i % 2)
    txn.flush()
    return {f"{prefix}-{i}" for i in range(n)}


def drain(cluster: Cluster, isolation: str) -> list[tuple[int, int, str]]:
    consumer = cluster.consumer({"isolation.level": isolation, "auto.offset.reset": "earliest"})
    consumer.assign([(TOPIC, 0), (TOPIC, 1)])
    out: list[tuple[int, int, str]] = []
    for _ in range(20):
        got = consumer.consume(100, timeout=0.5)
        if not got:
            break
        out += [(m.partition(), m.offset(), m.value()) for m in got]
    return sorted(out)


@pytest.fixture(scope="module")
def live() -> LiveRun:
    run = LiveRun.start(seed=17, brokers=3)
    run.cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
    return run


@pytest.fixture(scope="module")
def feed(live: LiveRun) -> Iterator[Feed]:
    with Feed.start(live) as f:
        yield f


class Seen:
    """The memory sink's rows, per source tag: ``rows(tag)`` -> sorted (partition, offset, value)."""

    def __init__(self, spark: Any, name: str) -> None:
        self.spark = spark
        self.name = name

    def rows(self) -> dict[str, list[tuple[int, int, str]]]:
        out: dict[str, list[tuple[int, int, str]]] = {"rc": [], "ru": [], "latest": []}
        for r in self.spark.sql(f"select src, partition, offset, value from {self.name}").collect():
            out[r.src].append((r.partition, r.offset, r.value))
        return {k: sorted(v) for k, v in out.items()}


def values(rows: list[tuple[int, int, str]]) -> set[str]:
    return {v for _, _, v in rows}


def test_a_stream_shows_each_isolation_level_as_the_cluster_moves(spark, live: LiveRun, feed: Feed):
    cluster = live.cluster
    produce_plain(cluster, "before")
    app = cluster.producer({"transactional.id": "app", "linger.ms": 0})
    app.init_transactions()
    first = produce_in(app, "first")
    app.commit_transaction()
    cluster.run_for(200)

    rc = read_stream(spark, feed, TOPIC, isolation=RC).withColumn("src", F.lit("rc"))
    ru = read_stream(spark, feed, TOPIC, isolation=RU).withColumn("src", F.lit("ru"))
    latest = read_stream(spark, feed, TOPIC, isolation=RU, starting_offsets="latest").withColumn("src", F.lit("latest"))
    query = rc.unionByName(ru).unionByName(latest).writeStream.format("memory").queryName("eos_stream").start()
    seen = Seen(spark, "eos_stream")
    try:
        query.processAllAvailable()
        got = seen.rows()
        assert values(got["rc"]) == values(got["ru"]) == {"before-0", "before-1"} | first
        assert got["latest"] == []  # it started at the end

        # An open transaction: its records are in the log below the HW, above the LSO.
        open_ = produce_in(app, "open")
        cluster.run_for(200)
        query.processAllAvailable()
        got = seen.rows()
        assert not values(got["rc"]) & open_
        assert open_ <= values(got["ru"])
        assert values(got["latest"]) == open_

        app.commit_transaction()
        cluster.run_for(200)
        query.processAllAvailable()
        got = seen.rows()
        assert open_ <= values(got["rc"])

        # An aborted transaction, then plain records after it: read_committed moves past it, never showing it.
        aborted = produce_in(app, "aborted")
        app.abort_transaction()
        produce_plain(cluster, "after")
        cluster.run_for(200)
        query.processAllAvailable()
        got = seen.rows()
        assert not values(got["rc"]) & aborted
        assert {"after-0", "after-1"} <= values(got["rc"])
        assert aborted <= values(got["ru"])
        assert query.exception() is None
    finally:
        query.stop()

    # Exactly the engine consumer's records: nothing twice, nothing skipped, the same offsets.
    assert got["rc"] == drain(cluster, RC)
    assert got["ru"] == drain(cluster, RU)
    later = open_ | aborted | {"after-0", "after-1"}
    assert got["latest"] == [r for r in got["ru"] if r[2] in later]
    # A batch read of both levels in one job agrees with the streams.
    both = read_batch(spark, feed, TOPIC, isolation=RC).withColumn("src", F.lit("rc"))
    both = both.unionByName(read_batch(spark, feed, TOPIC, isolation=RU).withColumn("src", F.lit("ru")))
    batch: dict[str, list[tuple[int, int, str]]] = {"rc": [], "ru": []}
    for r in both.select("src", "partition", "offset", "value").collect():
        batch[r.src].append((r.partition, r.offset, r.value))
    assert sorted(batch["rc"]) == got["rc"]
    assert sorted(batch["ru"]) == got["ru"]


def test_a_stream_with_a_wrong_token_fails_saying_the_token_was_refused(spark, feed: Feed):
    register(spark)
    options = {**feed.options(TOPIC), "token": "guessed"}
    df = spark.readStream.format("eos").options(**options).load()
    query = df.writeStream.format("memory").queryName("eos_refused").start()
    try:
        with pytest.raises(StreamingQueryException, match="refused the token"):
            query.processAllAvailable()
    finally:
        query.stop()


def test_a_bad_option_fails_at_load_naming_the_option(spark, feed: Feed):
    register(spark)
    register(spark)  # idempotent
    options = {**feed.options(TOPIC), "isolation.level": "snapshot"}
    with pytest.raises(AnalysisException, match=r"option isolation\.level must be read_committed or read_uncommitted"):
        spark.readStream.format("eos").options(**options).load()


def test_the_helpers_check_their_arguments_before_spark_runs(spark, feed: Feed, live: LiveRun):
    with pytest.raises(SparkBridgeError, match="no topic 'nope' in the cluster"):
        read_stream(spark, feed, "nope")
    with pytest.raises(SparkBridgeError, match="isolation must be read_committed or read_uncommitted"):
        read_batch(spark, feed, TOPIC, isolation="dirty")
    with pytest.raises(SparkBridgeError, match="starting_offsets must be earliest or latest"):
        read_stream(spark, feed, TOPIC, starting_offsets="now")
    with pytest.raises(SparkBridgeError, match="pass the Feed serving the cluster"):
        read_stream(spark, live, TOPIC)
    with Feed.start(live) as stopped:
        pass
    with pytest.raises(SparkBridgeError, match="this feed is stopped"):
        read_batch(spark, stopped, TOPIC)
