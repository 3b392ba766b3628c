"""Spark's own Kafka source and sink (spark-sql-kafka-0-10) against a cluster ``eos serve`` serves.

Role
----
The ``eos`` data source (:mod:`eos_magics.spark.source`) reads a cluster in this kernel through a
feed. This module is the other way in: Spark's **own** Kafka connector, a JVM Kafka client
(kafka-clients 3.9.2 inside spark-sql-kafka-0-10), speaking the wire protocol to a served cluster
as it would to Kafka. :func:`options` gives the ``spark.read`` / ``readStream`` / ``write`` options
for a served cluster (SASL/PLAIN, its password, the isolation level); :func:`read` and
:func:`write` use them; :func:`log_records` reads what the engine's own log holds, each record
with its transaction's outcome, to judge what Spark read.

The jars
--------
Maven Central serves no spark-sql-kafka-0-10_2.13 4.3.0 for the installed PySpark 4.3.0; 4.2.0
is the newest it serves and the one used (``reference/spark-kafka/pom.xml`` says why it fits).
``scripts/fetch-spark-kafka.sh`` (run by ``scripts/setup.sh``) copies it and its dependencies that
``pyspark/jars`` lacks into ``.cache/spark-kafka-4.2.0``; ``EOS_SPARK_KAFKA_JARS`` names another
folder. :func:`eos_magics.spark.session.start` puts them in ``spark.jars`` when the JVM starts
(never ``spark.jars.packages``: nothing is downloaded at run time). Spark reads ``spark.jars``
into the driver's class path only at the JVM's launch, so a session whose JVM started without
them cannot gain them: :func:`require` says to stop it and start again.

Invariants
----------
* Pure option building: :func:`options` opens no socket; only Spark's own client does.
* :func:`log_records` only reads the cluster (under the served cluster's lock).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "CONNECTOR_VERSION",
    "FETCH_HINT",
    "PROVIDER",
    "LogRecord",
    "TopicLog",
    "available",
    "jars",
    "jars_dir",
    "log_records",
    "options",
    "read",
    "require",
    "session_has_kafka",
    "write",
]

#: The spark-sql-kafka-0-10 version fetched (the newest Maven Central serves; PySpark is 4.3.0).
CONNECTOR_VERSION = "4.2.0"
#: The environment variable that names another folder of the connector's jars.
JARS_ENV = "EOS_SPARK_KAFKA_JARS"
#: The class Spark loads for ``format("kafka")``.
PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
ISOLATION_LEVELS = ("read_committed", "read_uncommitted")
FETCH_HINT = "bash scripts/fetch-spark-kafka.sh (scripts/setup.sh runs it; needs Java 17 and Maven)"
_ROOT = Path(__file__).resolve().parents[2]


def jars_dir() -> Path:
    """Return the folder of the connector's jars: ``EOS_SPARK_KAFKA_JARS`` or ``.cache/spark-kafka-4.2.0``."""
    named = os.environ.get(JARS_ENV, "").strip()
    return Path(named) if named else _ROOT / ".cache" / f"spark-kafka-{CONNECTOR_VERSION}"


def available() -> bool:
    """Return True when the connector's jars were fetched."""
    return (jars_dir() / f"spark-sql-kafka-0-10_2.13-{CONNECTOR_VERSION}.jar").is_file()


def jars() -> tuple[str, ...]:
    """Return the connector's jar paths, sorted; raise :class:`SparkBridgeError` when not fetched."""
    if not available():
        raise SparkBridgeError(f"Spark's Kafka source is not fetched (no jars in {jars_dir()}); run {FETCH_HINT}")
    return tuple(str(p) for p in sorted(jars_dir().glob("*.jar")))


def session_has_kafka(spark: SparkSession) -> bool:
    """Return True when ``spark``'s driver can load the Kafka source (its JVM started with the jars)."""
    try:
        jvm = spark.sparkContext._jvm
    except Exception:  # Spark Connect has no sparkContext: the server's class path decides
        return True
    if jvm is None:
        return True
    return bool(jvm.org.apache.spark.util.Utils.classIsLoadable(PROVIDER))


def require(spark: SparkSession) -> None:
    """Raise :class:`SparkBridgeError` unless ``spark`` can use the Kafka source, saying what to do."""
    if not session_has_kafka(spark):
        how = "" if available() else f"fetch the jars ({FETCH_HINT}), then "
        raise SparkBridgeError(
            "this Spark session started without the Kafka source's jars (spark-sql-kafka-0-10), and Spark "
            f"reads them only when its JVM starts: {how}stop it (%eos_spark stop, or session.stop()) and "
            "start it again with them (%eos_spark start --kafka, or session.start(kafka=True))"
        )


def _client_config(target: Any) -> Mapping[str, Any]:
    if hasattr(target, "client_config"):
        return target.client_config()
    if isinstance(target, str):
        return {"bootstrap.servers": target}
    if hasattr(target, "get") and target.get("bootstrap.servers"):
        return target
    raise SparkBridgeError(
        f"cannot reach Kafka from {type(target).__name__}; give a served cluster (%eos_serve), its client "
        "config (a dict with bootstrap.servers) or host:port,..."
    )


def _jaas_quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def options(target: Any, *, isolation: str | None = "read_committed") -> dict[str, str]:
    """Return the ``kafka.*`` options that reach a served cluster, for ``spark.read``, ``readStream`` and ``write``.

    Parameters
    ----------
    target
        A served cluster (``ServedCluster``, what ``%eos_serve`` starts), its confluent-kafka client
        config, or a bootstrap string.
    isolation : str or None
        ``kafka.isolation.level`` for reads: ``read_committed`` (default) or ``read_uncommitted``
        (Kafka's default); None leaves it out (a sink's producer has none).

    Returns
    -------
    dict
        ``kafka.bootstrap.servers`` and, with a password, ``kafka.security.protocol=SASL_PLAINTEXT``,
        ``kafka.sasl.mechanism=PLAIN`` and ``kafka.sasl.jaas.config`` (Kafka's ``PlainLoginModule``
        with user and password: the Java client takes them so, not as ``sasl.username``).
    """
    config = _client_config(target)
    out = {"kafka.bootstrap.servers": str(config["bootstrap.servers"])}
    protocol = config.get("security.protocol")
    if protocol:
        out["kafka.security.protocol"] = str(protocol)
    mechanism = config.get("sasl.mechanism")
    if mechanism:
        if str(mechanism).upper() != "PLAIN":
            raise SparkBridgeError(f"sasl.mechanism {mechanism!r} is not served; eos serve speaks PLAIN")
        out["kafka.sasl.mechanism"] = "PLAIN"
        out["kafka.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f"username={_jaas_quote(config.get('sasl.username', ''))} "
            f"password={_jaas_quote(config.get('sasl.password', ''))};"
        )
    if isolation is not None:
        if isolation not in ISOLATION_LEVELS:
            raise SparkBridgeError(f"isolation level {isolation!r}: use read_committed or read_uncommitted")
        out["kafka.isolation.level"] = isolation
    return out


def read(
    spark: SparkSession, target: Any, topic: str, *, isolation: str = "read_committed", stream: bool = False
) -> DataFrame:
    """Return ``topic`` of a served cluster through Spark's Kafka source, from the earliest offsets.

    A batch reads up to the latest offsets at planning time (under ``read_committed`` Kafka's
    ListOffsets answers the last stable offset); ``stream=True`` gives a streaming DataFrame. The
    columns are Spark's: ``key``, ``value`` (binary), ``topic``, ``partition``, ``offset``,
    ``timestamp``, ``timestampType``.
    """
    require(spark)
    reader = spark.readStream if stream else spark.read
    return (
        reader.format("kafka")
        .options(**options(target, isolation=isolation))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )


def write(df: DataFrame, target: Any, topic: str) -> None:
    """Write a batch DataFrame (``value``, optionally ``key``; string or binary) to ``topic`` with Spark's Kafka sink.

    Spark's sink is an idempotent, non-transactional producer (at least once: a retried task may
    write a record again; Spark's Kafka integration guide says so).
    """
    require(df.sparkSession)
    df.write.format("kafka").options(**options(target, isolation=None)).option("topic", topic).save()


@dataclasses.dataclass(frozen=True, slots=True)
class LogRecord:
    """One data record of a leader's log, with the outcome of the batch that holds it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    #: ``plain``, ``open``, ``committed`` or ``aborted`` (``engine.views.log_batches``).
    kind: str


@dataclasses.dataclass(frozen=True, slots=True)
class TopicLog:
    """A topic's data records in its leaders' logs, and how many COMMIT and ABORT markers they hold."""

    records: tuple[LogRecord, ...]
    markers: dict[str, int]

    def values(self, *kinds: str) -> list[bytes | None]:
        """Return the values of the records of those kinds (all when none), partition by partition."""
        return [r.value for r in self.records if not kinds or r.kind in kinds]


def log_records(target: Any, topic: str) -> TopicLog:
    """Return what the leaders' logs of ``topic`` hold: every data record with its outcome, and the markers.

    ``target`` is a served cluster (read under its lock) or an engine ``Cluster``. Outcomes come
    from :func:`engine.views.log_batches.summarize`: a transactional batch is ``committed`` or
    ``aborted`` by the next marker of its producer, ``open`` before one.
    """
    from engine.views.log_batches import summarize
    from engine.views.lookup import hosting_broker

    def collect(cluster: Any) -> TopicLog:
        if topic not in cluster.topics:
            raise SparkBridgeError(f"no topic {topic!r} in the cluster")
        records: list[LogRecord] = []
        markers = {"COMMIT": 0, "ABORT": 0}
        for p in range(cluster.topics[topic]):
            log = cluster.brokers[hosting_broker(cluster, topic, p, None)].disk.get(f"log:{topic}-{p}")
            batches = list(log.batches) if log is not None else []
            for batch, summary in zip(batches, summarize(batches), strict=True):
                if batch.is_control:
                    markers[batch.control_type] += 1
                    continue
                for i, value in enumerate(batch.values):
                    key = batch.keys[i] if i < len(batch.keys) else None
                    records.append(LogRecord(p, batch.base_offset + i, key, value, summary.kind))
        return TopicLog(tuple(records), markers)

    if hasattr(target, "locked"):
        with target.locked() as cluster:
            return collect(cluster)
    return collect(target)
