"""confluent-kafka's ``Consumer``, over the engine's consumer of the bound cluster.

``Consumer(conf)`` needs ``group.id`` (as confluent-kafka does), picks its cluster from
``bootstrap.servers`` (:mod:`.binding`) and gets librdkafka's defaults where they differ from the
engine's (auto-commit on, ``auto.offset.reset`` latest, ``isolation.level`` read_committed: see
:data:`~eos_magics.kafka.config.LIBRDKAFKA_DEFAULTS`). Calls pass through to the engine's consumer;
what differs from a plain pass-through:

* records come back as drop-in :class:`~eos_magics.kafka.messages.Message` (the engine's object,
  re-classed, not copied); partitions as drop-in ``TopicPartition``;
* ``on_assign``/``on_revoke``/``on_lost`` get ``(this consumer, [TopicPartition])``;
* ``commit()`` is asynchronous by default, as in confluent-kafka, and raises ``_NO_OFFSET`` when
  there is nothing to commit; the config's ``on_commit`` is called from ``poll()``/``consume()``
  for asynchronous and automatic commits, as librdkafka does;
* ``enable.partition.eof`` gives ``_PARTITION_EOF`` events when a partition is read to its end;
* engine exceptions become ``KafkaException``; a closed consumer raises ``RuntimeError``.

Timeouts are simulated seconds; ``poll()`` and ``consume()`` without a timeout wait until
something comes (the engine gives up with ``SimulationStalled`` when nothing ever can).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from engine.args import call_wait_ms
from engine.client.list_offsets import list_offsets
from engine.errors import ConfigError, ErrorCode, UnknownTopicOrPartitionException
from engine.sim.scheduler import SimulationStalled
from eos_magics.kafka.binding import resolve
from eos_magics.kafka.calls import ENGINE_ERRORS, ClosedOnExit, add_stubs, config_arg, unique_client_id
from eos_magics.kafka.config import invalid, settings
from eos_magics.kafka.errors import KafkaError, KafkaException, from_engine
from eos_magics.kafka.messages import Message, TopicPartition, adopt_all, topic_partitions
from eos_magics.kafka.metadata import ClusterMetadata, cluster_metadata

__all__ = ["Consumer"]

_CLOSED = "Consumer closed"


class Consumer(ClosedOnExit):
    """A consumer with confluent-kafka's API on the simulated cluster (see the module docstring).

    Parameters
    ----------
    conf
        confluent-kafka's configuration dict (``group.id`` is required); keyword arguments are merged into it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        conf = config_arg(args, kwargs)
        self._conf = {**conf, **kwargs}
        s = settings(conf, kwargs, "consumer")
        if not s.engine.get("group.id"):
            raise ValueError("Failed to create consumer: group.id must be set")
        cluster = resolve(s.bootstrap)
        unique_client_id(cluster, s.engine)
        try:
            self._c = cluster.consumer(s.engine)
        except ConfigError as exc:
            raise invalid(str(exc)) from None
        self._eof: dict[tuple[str, int], int] | None = {} if s.flags.get("enable.partition.eof") else None
        self._on_commit = s.callbacks.get("on_commit")
        self._poll = self._c.poll
        self._commit_reports: deque[tuple[ErrorCode, tuple[tuple[str, int, int], ...]]] = deque()
        if self._on_commit is not None:
            self._hook_commits()

    @property
    def engine(self) -> Any:
        """The engine's consumer behind this one (for inspection in tests and notebooks)."""
        return self._c

    @property
    def config(self) -> dict[str, Any]:
        """A copy of the configuration this consumer was created with (what a restarted process passes again)."""
        return dict(self._conf)

    def _raise(self, exc: BaseException) -> Exception:
        if self._c.closed:
            return RuntimeError(_CLOSED)
        return KafkaException(from_engine(exc))

    # -- reading ------------------------------------------------------------------------------

    def poll(self, timeout: float | None = None) -> Message | None:
        """Return the next record or event, waiting up to ``timeout`` simulated seconds; None if none came."""
        if self._eof is not None:
            eof = self._eof_events(1)
            if eof:
                return eof[0]
        try:
            m = self._poll(timeout if timeout is None or timeout >= 0 else None)
        except ENGINE_ERRORS as exc:
            raise self._raise(exc) from None
        if self._commit_reports:
            self._serve_commits()
        if m is not None:
            m.__class__ = Message
        return m  # type: ignore[return-value]

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Return up to ``num_messages`` records and events: wait until there are that many or ``timeout`` passes.

        As librdkafka's batch consume: the call returns early only with ``num_messages`` in hand;
        ``timeout`` is in simulated seconds, None or -1 waits for all of them.
        """
        if num_messages == 0 and not isinstance(num_messages, bool):
            return []
        if self._eof is not None and isinstance(num_messages, int):
            eof = self._eof_events(num_messages)
            if eof:
                return eof
        wait = timeout if timeout is None or timeout >= 0 else None
        start = self._c.world.now_ms
        try:
            out = self._c.consume(num_messages, wait)
            if len(out) < num_messages and wait != 0:
                self._consume_more(out, num_messages, wait, start)
        except ENGINE_ERRORS as exc:
            raise self._raise(exc) from None
        if self._commit_reports:
            self._serve_commits()
        return adopt_all(out)

    def _consume_more(self, out: list[Any], n: int, wait: float | None, start_ms: int) -> None:
        """Keep consuming into ``out`` until it holds ``n`` or the timeout passes (librdkafka's batch consume).

        Without a timeout it waits for all ``n``; when the simulation can never bring more
        (``SimulationStalled``) it returns what it has, or raises if it has nothing.
        """
        c = self._c
        if wait is None:
            while len(out) < n:
                try:
                    out.extend(c.consume(n - len(out), None))
                except SimulationStalled:
                    if out:
                        return
                    raise
            return
        end = start_ms + int(wait * 1000)
        while len(out) < n and c.world.now_ms < end:
            out.extend(c.consume(n - len(out), (end - c.world.now_ms) / 1000))

    def _eof_events(self, n: int) -> list[Message]:
        """Return ``_PARTITION_EOF`` events for partitions read to their end since the last one (at most ``n``)."""
        c = self._c
        if c.closed or not c.assigned:
            return []
        fetcher = c.fetcher
        out: list[Message] = []
        for key in c.assigned:
            marks = fetcher.watermarks.get(key)
            if marks is None or key in c.paused_tps:
                continue
            pos = fetcher.position_for_app(key)
            if pos >= 0 and pos >= marks[1] and self._eof.get(key) != pos:  # type: ignore[union-attr]
                self._eof[key] = pos  # type: ignore[index]
                text = f"Fetch from broker reached end of partition at offset {pos} (HighwaterMark {marks[1]})"
                err = KafkaError(KafkaError._PARTITION_EOF, text)  # type: ignore[attr-defined]
                out.append(Message(key[0], key[1], pos, error=err))
                if len(out) == n:
                    break
        return out

    # -- group membership and assignment --------------------------------------------------------

    def _rebalance_cb(self, cb: Any, name: str) -> Callable[..., Any] | None:
        if cb is None:
            return None
        if not callable(cb):
            raise TypeError(f"subscribe(): {name} must be a function (consumer, partitions) or None, got {cb!r}")
        return lambda _engine, tps: cb(self, topic_partitions(tps))

    def subscribe(
        self,
        topics: list[str],
        on_assign: Callable[..., Any] | None = None,
        on_revoke: Callable[..., Any] | None = None,
        on_lost: Callable[..., Any] | None = None,
    ) -> None:
        """Join the group and read the partitions it assigns; callbacks get ``(consumer, [TopicPartition])``."""
        cbs = [self._rebalance_cb(cb, n) for cb, n in ((on_assign, "on_assign"), (on_revoke, "on_revoke"))]
        lost = self._rebalance_cb(on_lost, "on_lost")
        self._call("subscribe", topics, cbs[0], cbs[1], lost)

    def _call(self, name: str, *args: Any) -> Any:
        if self._c.closed:
            raise RuntimeError(_CLOSED)
        try:
            return getattr(self._c, name)(*args)
        except ENGINE_ERRORS as exc:
            raise self._raise(exc) from None

    def unsubscribe(self) -> None:
        """Leave the group."""
        self._call("unsubscribe")

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Read exactly these partitions (from their offsets when given)."""
        self._call("assign", partitions)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add partitions to the assignment."""
        self._call("incremental_assign", partitions)

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove partitions from the assignment."""
        self._call("incremental_unassign", partitions)

    def unassign(self) -> None:
        """Stop reading every partition."""
        self._call("unassign")

    def assignment(self) -> list[TopicPartition]:
        """Return the assigned partitions."""
        return topic_partitions(self._call("assignment"))

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop fetching these partitions."""
        self._call("pause", partitions)

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Fetch paused partitions again."""
        self._call("resume", partitions)

    def seek(self, partition: TopicPartition) -> None:
        """Set the next offset to read of an assigned partition."""
        self._call("seek", partition)

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """Return the next offset to read of each partition (-1001: unknown)."""
        return topic_partitions(self._call("position", partitions))

    def memberid(self) -> str | None:
        """Return the member id the group coordinator gave this consumer, or None."""
        return self._call("memberid")

    def consumer_group_metadata(self) -> Any:
        """Return the group metadata ``send_offsets_to_transaction`` takes."""
        return self._call("group_metadata")

    # -- offsets ------------------------------------------------------------------------------

    def commit(
        self,
        message: Message | None = None,
        offsets: list[TopicPartition] | None = None,
        asynchronous: bool = True,
        **kwargs: Any,
    ) -> list[TopicPartition] | None:
        """Commit ``message``'s offset + 1, ``offsets``, or the consumed positions; asynchronously by default.

        ``async=`` is accepted as confluent-kafka's older spelling of ``asynchronous``. Returns the
        committed offsets when synchronous, None otherwise.
        """
        unknown = set(kwargs) - {"async"}
        if unknown:
            raise TypeError(f"'{sorted(unknown)[0]}' is an invalid keyword argument for this function")
        asynchronous = bool(kwargs.get("async", asynchronous))
        if self._c.closed:
            raise RuntimeError(_CLOSED)
        if message is not None and offsets is not None:
            raise ValueError("message and offsets are mutually exclusive")
        if isinstance(message, Message) and message.error() is not None:
            raise invalid(f"Cannot commit offsets for message with error: '{message.error().str()}'")  # type: ignore[union-attr]
        if (
            message is None
            and offsets is None
            and self._c.group is not None
            and not self._c.commits.to_commit(None, None)
        ):
            raise KafkaException(KafkaError(KafkaError._NO_OFFSET, "Commit failed: Local: No offset stored"))  # type: ignore[attr-defined]
        done = self._call("commit", message, offsets, asynchronous)
        return None if done is None else topic_partitions(done)

    def store_offsets(self, message: Message | None = None, offsets: list[TopicPartition] | None = None) -> None:
        """Store offsets for the next commit (needs ``enable.auto.offset.store`` false)."""
        self._call("store_offsets", message, offsets)

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """Return the group's committed offset of each partition (-1001: none)."""
        return topic_partitions(self._call("committed", partitions, timeout))

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float | None = None, cached: bool = False
    ) -> tuple[int, int]:
        """Return ``(low, high)`` offsets of a partition."""
        return self._call("get_watermark_offsets", partition, timeout, cached)

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """Return, per partition, the first offset whose record's timestamp is at least ``partition.offset``.

        As librdkafka's ``rd_kafka_offsets_for_times``: ListOffsets to each leader under the
        consumer's ``isolation.level``; -1 when no record below the HW (the LSO for read_committed)
        is that late; a partition that does not exist keeps its timestamp and gets
        ``UNKNOWN_TOPIC_OR_PART`` as its ``error``, and when none exists the call raises
        ``_UNKNOWN_PARTITION``. ``timeout`` is in simulated seconds (None: ``request.timeout.ms``).
        """
        if not isinstance(partitions, list):
            raise TypeError("requires list of TopicPartition")
        if not all(isinstance(p, TopicPartition) for p in partitions):
            raise TypeError("expected cimpl.TopicPartition")
        if self._c.closed:
            raise RuntimeError(_CLOSED)
        if not partitions:
            raise KafkaException(
                KafkaError(KafkaError._INVALID_ARG, "Failed to get offsets: Local: Invalid argument or configuration")
            )  # type: ignore[attr-defined]
        c = self._c
        end = c.world.now_ms + call_wait_ms(timeout, "offsets_for_times()", c.config.request_timeout_ms)
        out, missing = [], 0
        for p in partitions:
            tp = TopicPartition(p.topic, p.partition, p.offset)
            try:
                [a] = list_offsets(
                    c, (p.topic, p.partition), (p.offset,), c.isolation_level, end, "offsets_for_times()"
                )
            except UnknownTopicOrPartitionException:
                missing += 1
                tp.error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)  # type: ignore[attr-defined,assignment]
            except ENGINE_ERRORS as exc:
                raise self._raise(exc) from None
            else:
                tp.offset = a.offset
                tp.leader_epoch = a.leader_epoch if a.leader_epoch >= 0 else None
            out.append(tp)
        if missing == len(out):
            raise KafkaException(
                KafkaError(KafkaError._UNKNOWN_PARTITION, "Failed to get offsets: Local: Unknown partition")
            )  # type: ignore[attr-defined]
        return out

    def _hook_commits(self) -> None:
        """Report asynchronous and automatic commits to ``on_commit`` (not synchronous ones, as librdkafka)."""

        def answered(offsets: tuple[tuple[str, int, int], ...], code: ErrorCode) -> None:
            self._commit_reports.append((code, offsets))

        self._c.commits.on_sent_answered = answered

    def _serve_commits(self) -> None:
        while self._commit_reports:
            code, offsets = self._commit_reports.popleft()
            err = None if code is ErrorCode.NONE else KafkaError(int(code))
            self._on_commit(err, [TopicPartition(t, p, o) for t, p, o in offsets])  # type: ignore[misc]

    # -- metadata and lifecycle ---------------------------------------------------------------

    def list_topics(self, topic: str | None = None, timeout: float | None = -1) -> ClusterMetadata:
        """Ask a broker for the cluster's metadata (``timeout`` in simulated seconds)."""
        return cluster_metadata(self._call("list_topics", topic, timeout))

    def cluster_id(self, timeout: float | None = -1) -> str | None:
        """Return the cluster id."""
        return self.list_topics(None, timeout).cluster_id

    def close(self) -> None:
        """Commit (with auto-commit on), leave the group, and refuse further calls; a second close does nothing."""
        try:
            self._c.close()
        except ENGINE_ERRORS as exc:
            raise KafkaException(from_engine(exc)) from None

    def __repr__(self) -> str:
        return f"<eos_magics.kafka.Consumer {self._c.name}>"


add_stubs(Consumer, "Consumer")
