"""Spark's own Kafka source and sink (spark-sql-kafka-0-10, a JVM Kafka client) against ``eos serve``.

Goal: Spark reads a served cluster as it reads Kafka. Under ``kafka.isolation.level=read_committed``
a batch read and a Structured Streaming read return exactly the committed records the engine's own
log holds (no record of an aborted transaction, no control record); ``read_uncommitted`` returns
the aborted ones too; Spark's Kafka sink writes a DataFrame that lands in the engine's log.
Method: one served cluster (3 brokers, SASL/PLAIN) and one Spark session for the module; a
transactional confluent-kafka producer commits, aborts and commits again; what Spark returns is
compared, partition by partition and offset by offset, with
:func:`eos_magics.spark.kafka.log_records` (the leaders' logs with each batch's outcome from
``engine.views.log_batches``). The jars come from ``scripts/fetch-spark-kafka.sh`` (set-up): the
module skips without them, and fails under ``CI=true``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from engine.serve.realtime_server import ServedCluster
from engine.wire.journal import ServeSpec
from eos_magics.spark import kafka as spark_kafka
from eos_magics.spark import session as spark_session
from eos_magics.spark.errors import SparkBridgeError
from tests.wire.conftest import _txn_producer, ck_config

pytestmark = pytest.mark.slow

TOPIC = "orders"
COMMITTED = [b"c-0", b"c-1", b"c-2", b"c-3", b"c-4", b"c-5"]
ABORTED = [b"a-0", b"a-1", b"a-2"]


@pytest.fixture(scope="module")
def kspark(spark) -> Any:
    """The module's session, with the Kafka source (conftest's ``spark`` adds the jars when fetched)."""
    if not spark_kafka.available():
        message = f"Spark's Kafka source is not fetched: {spark_kafka.FETCH_HINT}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return spark_session.start(kafka=True)


@pytest.fixture(scope="module")
def server() -> Iterator[ServedCluster]:
    """A served cluster whose topic holds two committed transactions with an aborted one between."""
    spec = ServeSpec(1, 3, {}, ((TOPIC, 2, 3), ("sunk", 1, 3)))
    served = ServedCluster(spec.build(), spec=spec).start()
    try:
        p = _txn_producer(ck_config(served), "spark-writer")
        for values, commit in ((COMMITTED[:4], True), (ABORTED, False), (COMMITTED[4:], True)):
            p.begin_transaction()
            for i, v in enumerate(values):
                p.produce(TOPIC, value=v, key=v, partition=i % 2)
            p.flush(10)  # in the log before the end: an abort would purge unsent records
            (p.commit_transaction if commit else p.abort_transaction)(15)
        del p  # its connections close before the server stops
        yield served
    finally:
        served.stop()


def _rows(df: Any) -> list[tuple[int, int, bytes]]:
    return sorted((r.partition, r.offset, bytes(r.value)) for r in df.select("partition", "offset", "value").collect())


def _logged(server: ServedCluster, *kinds: str) -> list[tuple[int, int, bytes]]:
    records = spark_kafka.log_records(server, TOPIC).records
    return sorted((r.partition, r.offset, r.value) for r in records if r.kind in kinds)


def test_the_engines_log_holds_committed_and_aborted_transactions(server) -> None:
    log = spark_kafka.log_records(server, TOPIC)
    assert sorted(log.values("committed")) == COMMITTED and sorted(log.values("aborted")) == ABORTED
    assert log.markers == {"COMMIT": 4, "ABORT": 2}, "one marker per partition per transaction"


def test_a_batch_read_committed_returns_exactly_the_committed_records(kspark, server) -> None:
    df = spark_kafka.read(kspark, server, TOPIC, isolation="read_committed")
    assert _rows(df) == _logged(server, "committed")


def test_a_batch_read_uncommitted_returns_the_aborted_records_too(kspark, server) -> None:
    rows = _rows(spark_kafka.read(kspark, server, TOPIC, isolation="read_uncommitted"))
    assert rows == _logged(server, "committed", "aborted")
    assert {v for _p, _o, v in rows} >= set(ABORTED)


def test_a_stream_read_committed_gives_the_same_committed_set(kspark, server) -> None:
    stream = spark_kafka.read(kspark, server, TOPIC, isolation="read_committed", stream=True)
    query = stream.writeStream.format("memory").queryName("kafka_rc").trigger(availableNow=True).start()
    try:
        query.awaitTermination(60)
        assert query.exception() is None
        assert _rows(kspark.table("kafka_rc")) == _logged(server, "committed")
    finally:
        query.stop()


def test_the_kafka_sink_writes_a_dataframe_into_the_engines_log(kspark, server) -> None:
    df = kspark.createDataFrame([("k1", "total-1"), ("k2", "total-2"), ("k3", "total-3")], "key string, value string")
    spark_kafka.write(df, server, "sunk")
    log = spark_kafka.log_records(server, "sunk")
    assert sorted(log.values("plain")) == [b"total-1", b"total-2", b"total-3"], log
    assert sorted(r.key for r in log.records) == [b"k1", b"k2", b"k3"]


def test_options_carry_sasl_plain_and_the_isolation_level(server) -> None:
    opts = spark_kafka.options(server, isolation="read_uncommitted")
    assert opts["kafka.bootstrap.servers"] == server.bootstrap
    assert opts["kafka.security.protocol"] == "SASL_PLAINTEXT" and opts["kafka.sasl.mechanism"] == "PLAIN"
    assert f'password="{server.password}";' in opts["kafka.sasl.jaas.config"]
    assert opts["kafka.isolation.level"] == "read_uncommitted"
    assert "kafka.isolation.level" not in spark_kafka.options(server, isolation=None)
    with pytest.raises(SparkBridgeError, match="read_committed or read_uncommitted"):
        spark_kafka.options(server, isolation="serializable")


def test_the_magic_offers_the_source_in_one_line(kspark) -> None:
    from IPython.core.error import UsageError

    from eos_magics._testing import dispose, run, testing_shell

    ip = testing_shell()
    try:
        run(ip, "%eos_cluster create --brokers 1 --seed 3\n%eos_topic create t --partitions 1")
        with pytest.raises(UsageError, match="not served; serve it first: %eos_serve"):
            run(ip, "%eos_spark kafka t")
        config = run(ip, "%eos_serve")
        opts = run(ip, "%eos_spark kafka --isolation read_uncommitted")
        assert opts == spark_kafka.options(config.served, isolation="read_uncommitted")
        assert 'spark.read.format("kafka")' in repr(opts)
        df = run(ip, "%eos_spark kafka t")
        assert df.count() == 0 and not df.isStreaming
        assert run(ip, "%eos_spark kafka t --stream").isStreaming
        assert "Kafka source: spark-sql-kafka-0-10 4.2.0" in str(spark_session.status())
    finally:
        run(ip, "%eos_serve stop")
        dispose(ip)
