"""The ``eos`` Spark data source: a live simulated cluster's topic as a batch or streaming DataFrame.

Role
----
:class:`EosDataSource` is a PySpark 4 Python data source named ``"eos"``. Its readers run in
Spark's worker processes, never in the kernel (``design/jupyter-spark.md`` §2.3), so they reach
the cluster through a :class:`~eos_magics.spark.feed.Feed` the kernel runs: ``latest`` for the
offsets a consumer may read up to, ``read`` for the records of one partition's range as Arrow.

* Batch (``spark.read.format("eos")``): every partition's ``[0, readable end)`` at planning time.
* Streaming (``spark.readStream.format("eos")``): offsets are ``{"<partition>": next offset}``;
  ``initialOffset`` is every partition at 0 (``startingOffsets=latest``: the readable ends now),
  ``latestOffset`` asks the feed, ``partitions(start, end)`` gives one input partition per
  partition with new records, and ``read`` pulls them. A partition whose leader is down keeps
  its offset until one is elected.

Options (strings, as Spark passes them): ``port`` and ``token`` (from the feed), ``topic``,
``isolation.level`` (``read_uncommitted``, Kafka's default, or ``read_committed``) and, for
streams, ``startingOffsets`` (``earliest`` or ``latest``). A missing or bad option fails the query
with a message naming it; a wrong token fails it with the feed's refusal.

:func:`register`, :func:`read_stream` and :func:`read_batch` are the kernel-side helpers.

Invariants
----------
* Offsets only move forward: a stream never reads a range twice and never skips one.
* The classes live in this module, so Spark pickles them by reference and its workers import
  this module (the project must be installed in ``PYSPARK_PYTHON``'s environment).

What it does not do
-------------------
No writer, no filter pushdown, no read limits (every micro-batch reads all that is readable).
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.feed import ISOLATION_LEVELS, SPARK_SCHEMA, Feed, request

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["NAME", "EosDataSource", "read_batch", "read_stream", "register"]

#: The format name: ``spark.read.format(NAME)``.
NAME = "eos"
_STARTING = ("earliest", "latest")
_KNOWN = ("port", "token", "topic", "isolation.level", "startingoffsets", "path")
_REGISTERED: weakref.WeakSet[Any] = weakref.WeakSet()


@dataclasses.dataclass(frozen=True)
class _Options:
    """The source's options, checked (picklable: the readers carry them to the workers)."""

    port: int
    token: str
    topic: str
    isolation: str
    starting: str

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> _Options:
        given = {str(k).lower(): v for k, v in options.items()}
        unknown = sorted(k for k in given if k not in _KNOWN)
        if unknown:
            raise SparkBridgeError(
                f"the eos source has no option {', '.join(unknown)}; its options are port, token, topic, "
                "isolation.level and startingOffsets"
            )
        missing = [k for k in ("port", "token", "topic") if not given.get(k)]
        if missing:
            raise SparkBridgeError(
                f"the eos source needs option {', '.join(missing)}: use .options(**feed.options(topic)) "
                "or eos_magics.spark.source.read_stream(spark, feed, topic)"
            )
        port = str(given["port"]).strip()
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise SparkBridgeError(f"option port must be the feed's port (1-65535), not {given['port']!r}")
        isolation = given.get("isolation.level", "read_uncommitted")
        if isolation not in ISOLATION_LEVELS:
            raise SparkBridgeError(
                f"option isolation.level must be read_committed or read_uncommitted, not {isolation!r}"
            )
        starting = str(given.get("startingoffsets", "earliest")).lower()
        if starting not in _STARTING:
            raise SparkBridgeError(
                f"option startingOffsets must be earliest or latest, not {given['startingoffsets']!r}"
            )
        return cls(int(port), str(given["token"]), str(given["topic"]), isolation, starting)

    def latest(self) -> dict[str, int]:
        """Ask the feed for the readable end of every partition that has a leader now."""
        answer = request(self.port, self.token, "latest", topic=self.topic, isolation=self.isolation)
        return {str(p): int(e) for p, e in answer["offsets"].items()}

    def read(self, partition: int, start: int, end: int) -> Iterator[pa.RecordBatch]:
        """Yield the Arrow batches of one partition's ``[start, end)``."""
        table = request(
            self.port,
            self.token,
            "read",
            topic=self.topic,
            partition=partition,
            start=start,
            end=end,
            isolation=self.isolation,
        )
        yield from table.to_batches()


def _by_partition(offsets: Mapping[str, int]) -> list[str]:
    return sorted(offsets, key=int)


class EosDataSource(DataSource):
    """The ``eos`` format: a simulated cluster's topic, read through a kernel's feed (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        """Return the format name, ``"eos"``."""
        return NAME

    def schema(self) -> str:
        """Return the columns: topic, partition, offset, key, value, timestamp, producer fields."""
        _Options.parse(self.options)  # a bad option fails at analysis, before any job
        return SPARK_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        """Return the batch reader."""
        return _BatchReader(_Options.parse(self.options))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802 - Spark's name
        """Return the micro-batch stream reader."""
        return _StreamReader(_Options.parse(self.options))


class _BatchReader(DataSourceReader):
    """Every partition's ``[0, readable end)`` as seen when the query is planned."""

    def __init__(self, options: _Options) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        latest = self.options.latest()
        return [InputPartition((int(p), 0, latest[p])) for p in _by_partition(latest)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        p, start, end = partition.value
        if end > start:
            yield from self.options.read(p, start, end)


class _StreamReader(DataSourceStreamReader):
    """Micro-batches of new records; offsets are ``{"<partition>": next offset}``."""

    def __init__(self, options: _Options) -> None:
        self.options = options

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's name
        latest = self.options.latest()
        if self.options.starting == "latest":
            return latest
        return dict.fromkeys(_by_partition(latest), 0)

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:  # noqa: N802
        latest = self.options.latest()
        out = dict(start or {})
        for p, end in latest.items():
            # Never behind the start: a new leader may briefly report a lower end than the old one did.
            out[p] = max(end, out.get(p, 0))
        return {p: out[p] for p in _by_partition(out)}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        parts = []
        for p in _by_partition(end):
            s = int(start.get(p, 0))
            e = int(end[p])
            if e > s:
                parts.append(InputPartition((int(p), s, e)))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        p, start, end = partition.value
        yield from self.options.read(p, start, end)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to do: the feed keeps no positions."""


# -- kernel-side helpers ----------------------------------------------------------------------------


def register(spark: SparkSession) -> None:
    """Register the ``eos`` format with ``spark`` (once per session; later calls do nothing)."""
    if spark in _REGISTERED:
        return
    spark.dataSource.register(EosDataSource)
    _REGISTERED.add(spark)


def _checked(spark: Any, feed: Any, topic: str, isolation: str) -> dict[str, str]:
    if not isinstance(feed, Feed):
        raise SparkBridgeError(f"pass the Feed serving the cluster (Feed.start(cluster)), not {type(feed).__name__}")
    if not hasattr(spark, "dataSource"):
        raise SparkBridgeError("pass a SparkSession: eos_magics.spark.session.start()")
    options = feed.options(topic, isolation)
    register(spark)
    return options


def read_stream(
    spark: SparkSession,
    feed: Feed,
    topic: str,
    *,
    isolation: str = "read_committed",
    starting_offsets: str = "earliest",
) -> DataFrame:
    """Return a streaming DataFrame of ``topic``'s records as a consumer at ``isolation`` reads them.

    Parameters
    ----------
    spark : SparkSession
        The session (``eos_magics.spark.session.start()``).
    feed : Feed
        The running feed of the cluster.
    topic : str
        A topic of that cluster.
    isolation : str
        ``read_committed`` (default) or ``read_uncommitted``.
    starting_offsets : str
        ``earliest`` (default: from offset 0) or ``latest`` (only records readable from now on).

    Raises
    ------
    SparkBridgeError
        For a stopped feed, an unknown topic, isolation level or starting point.
    """
    options = _checked(spark, feed, topic, isolation)
    if starting_offsets not in _STARTING:
        raise SparkBridgeError(f"starting_offsets must be earliest or latest, not {starting_offsets!r}")
    return spark.readStream.format(NAME).options(**options, startingOffsets=starting_offsets).load()


def read_batch(spark: SparkSession, feed: Feed, topic: str, *, isolation: str = "read_committed") -> DataFrame:
    """Return ``topic``'s records readable now (every partition from offset 0) as a DataFrame.

    Parameters and errors as :func:`read_stream`.
    """
    options = _checked(spark, feed, topic, isolation)
    return spark.read.format(NAME).options(**options).load()
