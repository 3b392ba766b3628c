"""The consumer's fetcher: where each assigned partition starts, its fetches, and the records they bring.

Kafka's consumer splits this between ``SubscriptionState`` (positions), ``OffsetFetcher``
(ListOffsets for ``auto.offset.reset`` and seeks to the beginning or end) and ``Fetcher`` (Fetch
requests and the buffered results). Here one :class:`Fetcher` per consumer does all three,
driven by the consumer's node (timers and answers), so fetches go on whenever the simulation
runs. The consumer keeps the assignment and the paused set; the fetcher reads them.

Per assigned partition
----------------------
==========================  ==============================================================
situation                   what :meth:`Fetcher.kick` does
==========================  ==============================================================
in flight, paused           nothing (an answer, or ``resume()``, kicks again)
no position, a start asked  ListOffsets for it: ``OFFSET_BEGINNING``/``OFFSET_END`` given to
by ``assign``/``seek``      ``assign`` or ``seek`` is kept until answered (also while no
                            leader is known), as Kafka's ``SubscriptionState`` keeps it
no position, ``group.id``   OffsetFetch for the group's committed offset (with
                            ``require_stable`` under read_committed, KIP-447)
no position otherwise       ListOffsets per ``auto.offset.reset`` (earliest; else latest),
                            also when the group has no committed offset
records still buffered      nothing: the application has not taken them yet
otherwise                   Fetch from the position (long poll: ``fetch.max.wait.ms``)
==========================  ==============================================================

Every answer is checked against the fetcher's *generation*, bumped whenever the assignment or
a position changes under it (``seek``, a new assignment): an answer to an older generation is
dropped. A Fetch answer is turned into records by :func:`engine.client.read_committed.visible_batches`
(markers and, under read_committed, aborted transactions removed) and the position moves to the
end of the fetched range. With no leader known, the fetcher refreshes metadata (see below).

A partition that does not exist
-------------------------------
A consumer assigned a partition it finds no leader for refreshes metadata (paced by the client's
``retry.backoff.ms`` → ``retry.backoff.max.ms`` backoff). When an answer shows the topic missing,
or the partition at or past the topic's partition count, the next ``poll``/``consume`` returns a
:class:`~engine.client.message.Message` whose ``error()`` is ``UnknownTopicOrPartitionException``,
once per assignment of that partition, as confluent-kafka reports ``UNKNOWN_TOPIC_OR_PART``; the
fetcher keeps refreshing metadata in the background and starts reading if the topic is created.
A metadata answer with no partitions at all (a cluster without any topic) is treated by the
client as no answer, so nothing is reported until some topic exists.

``get_watermark_offsets`` (:meth:`Fetcher.watermark_offsets`) asks the leader with ListOffsets
too, but waits for the answer: it is a blocking call of the application.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from engine import trace_events as events
from engine.client.list_offsets import EARLIEST, LATEST, list_offsets, missing_text
from engine.client.message import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, Message
from engine.client.read_committed import visible_batches
from engine.config import IsolationLevel
from engine.errors import ErrorCode, UnknownTopicOrPartitionException
from engine.protocol import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse

if TYPE_CHECKING:
    from engine.client.base import ClientNode
    from engine.client.group_member import GroupMember
    from engine.config import ConsumerConfig
    from engine.log.records import RecordBatch

Key = tuple[str, int]


class Subscriptions(Protocol):
    """What the fetcher reads of its consumer (Kafka's ``SubscriptionState``): the assignment, the paused
    partitions, and the group whose committed offsets start a partition with no position.
    """

    assigned: list[tuple[str, int]]
    paused_tps: set[tuple[str, int]]
    group: GroupMember | None


#: The coverage mark hit once per transactional batch dropped as part of an aborted transaction.
ABORTED_BATCH_DROPPED = "consumer: aborted batch dropped (read_committed)"


class Fetcher:
    """Positions, in-flight requests and fetched records of one consumer's assigned partitions."""

    def __init__(self, client: ClientNode, consumer: Subscriptions, config: ConsumerConfig) -> None:
        self.client = client
        self.consumer = consumer
        self.config = config
        self.isolation: IsolationLevel = config.isolation_level
        #: The next offset to fetch per partition (absent: not known yet).
        self.positions: dict[Key, int] = {}
        #: Fetched records the application has not taken, in fetch order.
        self.buffer: deque[Message] = deque()
        #: Error events for the application (a Message with error()), returned before records.
        self.events: deque[Message] = deque()
        #: Partitions with a Fetch, a ListOffsets, or an OffsetFetch in flight.
        self.fetching: set[Key] = set()
        self.resetting: set[Key] = set()
        #: key -> the OffsetFetch (its token) resolving the key's start from the committed offset
        self.resolving: dict[Key, int] = {}
        self._resolve_token = 0
        #: Partitions the group is known to have no committed offset for (auto.offset.reset applies).
        self.no_committed: set[Key] = set()
        #: Bumped whenever in-flight answers must be ignored (new assignment, seek).
        self.generation = 0
        #: ``(time_ms, topic, partition, fetch_offset, hw, lso)`` of every answered fetch (for the checkers).
        self.fetch_log: list[tuple[int, str, int, int, int, int]] = []
        #: ``(low, high)`` from the last fetch of each partition (``get_watermark_offsets(cached=True)``).
        self.watermarks: dict[Key, tuple[int, int]] = {}
        #: Assigned partitions a metadata answer showed do not exist; those already reported.
        self.missing: set[Key] = set()
        self.reported: set[Key] = set()
        self.metadata_waiting = False
        #: Where the application asked a partition to start (EARLIEST or LATEST, by assign/seek) until
        #: ListOffsets answers: kept across a wait for a leader or a failed ListOffsets, as Kafka's
        #: ``SubscriptionState`` keeps a requested reset, so it is not replaced by the committed
        #: offset or ``auto.offset.reset``.
        self.requested: dict[Key, int] = {}

    # -- what the consumer asks ---------------------------------------------------------------

    def retain(self, kept: set[Key], *, fresh: bool) -> None:
        """The assignment became ``kept``: forget the rest and ignore every answer in flight.

        ``fresh``: a new assignment, whose missing partitions are reported again.
        """
        self.positions = {k: v for k, v in self.positions.items() if k in kept}
        self.requested = {k: v for k, v in self.requested.items() if k in kept}
        self.buffer = deque(m for m in self.buffer if (m.topic(), m.partition()) in kept)
        # A partition given up forgets that the group had no offset for it: when it comes back
        # (KIP-848 or cooperative reconciliation), another member may have committed one since.
        self.no_committed &= kept
        if fresh:
            self.missing.clear()
            self.reported.clear()
        else:
            self.missing &= kept
            self.reported &= kept
        self.generation += 1
        self.fetching = set()
        self.resolving = {}

    def start_at(self, key: Key, offset: int) -> None:
        """Read ``key`` from ``offset`` (>= 0), or from the log start or end (OFFSET_BEGINNING, OFFSET_END)."""
        if offset in (OFFSET_BEGINNING, OFFSET_END):
            self.positions.pop(key, None)  # no fetch from the old position while the new one is asked
            self.requested[key] = EARLIEST if offset == OFFSET_BEGINNING else LATEST
            self.reset_offset(key, self.requested[key])
        else:
            self.requested.pop(key, None)
            self.positions[key] = offset

    def seek(self, key: Key, offset: int) -> None:
        """Drop what was fetched for ``key`` and read it from ``offset`` (see :meth:`start_at`)."""
        self.buffer = deque(m for m in self.buffer if (m.topic(), m.partition()) != key)
        self.generation += 1
        self.fetching = set()
        self.start_at(key, offset)

    def position_for_app(self, key: Key) -> int:
        """The position as the application sees it: after the last record it was given."""
        for m in self.buffer:
            if (m.topic(), m.partition()) == key:
                return m.offset()
        return self.positions.get(key, OFFSET_INVALID)

    def ready(self, paused: set[Key]) -> bool:
        """Return True when a poll would return something: an error event or a record of an unpaused partition."""
        if self.events:
            return True
        if not paused:
            return bool(self.buffer)
        return any((m.topic(), m.partition()) not in paused for m in self.buffer)

    def take(self, n: int, paused: set[Key]) -> list[Message]:
        """Hand out up to ``n`` error events, then records; records of ``paused`` partitions stay buffered."""
        out: list[Message] = []
        while self.events and len(out) < n:
            out.append(self.events.popleft())
        if not paused:
            while self.buffer and len(out) < n:
                out.append(self.buffer.popleft())
            return out
        held: deque[Message] = deque()
        while self.buffer and len(out) < n:
            m = self.buffer.popleft()
            (held if (m.topic(), m.partition()) in paused else out).append(m)
        held.extend(self.buffer)
        self.buffer = held
        return out

    def on_crash(self) -> None:
        """A crashed consumer forgets positions, buffered records and everything in flight."""
        self.buffer = deque()
        self.fetching = set()
        self.resetting = set()
        self.resolving = {}
        self.no_committed = set()
        self.positions = {}
        self.requested = {}
        self.events = deque()
        self.missing = set()
        self.reported = set()
        self.metadata_waiting = False

    # -- the loop -----------------------------------------------------------------------------

    def kick(self) -> None:
        """Start whatever each assigned partition needs next (see the module docstring's table)."""
        c = self.consumer
        unresolved = []
        for key in c.assigned:
            if key in self.fetching or key in self.resetting or key in self.resolving or key in c.paused_tps:
                continue
            if key not in self.positions:
                if key in self.requested:
                    self.reset_offset(key, self.requested[key])
                elif c.group is not None and key not in self.no_committed:
                    unresolved.append(key)
                else:
                    self.reset_offset(key, EARLIEST if self.config.auto_offset_reset == "earliest" else LATEST)
                continue
            if any((m.topic(), m.partition()) == key for m in self.buffer):
                continue
            self._fetch(key)
        if unresolved:
            self._fetch_committed(tuple(unresolved))

    def _fetch_committed(self, keys: tuple[Key, ...]) -> None:
        """Start ``keys`` from the group's committed offsets (then auto.offset.reset)."""
        c = self.consumer
        n = self.client
        group = c.group
        if group is None:
            return
        self._resolve_token += 1
        token = self._resolve_token
        for key in keys:
            self.resolving[key] = token
        gen = self.generation

        def answered(code: ErrorCode, offsets: dict[Key, int]) -> None:
            # Only the keys this request still owns: a stale answer (an older assignment, a seek)
            # must not free a key a newer OffsetFetch is resolving, or a second one would start and
            # its late answer would move the position back after records were read.
            for key in keys:
                if self.resolving.get(key) == token:
                    del self.resolving[key]
            if gen != self.generation:
                self.kick()
                return
            if code is not ErrorCode.NONE:
                n.set_timer(self.config.retry_backoff_ms, self.kick)
                return
            for key in keys:
                offset = offsets.get(key, -1)
                if offset >= 0:
                    self.positions[key] = offset
                else:
                    self.no_committed.add(key)
            n.world.trace.emit(
                n.name,
                "state",
                events.CONSUMER_COMMITTED,
                ("group", c.group.group_id if c.group else ""),
                ("offsets", [f"{t}-{p}@{offsets.get((t, p), -1)}" for t, p in keys]),
            )
            self.kick()

        group.fetch_committed(keys, answered)

    # -- partitions without a leader ----------------------------------------------------------

    def _await_leader(self, key: Key) -> None:
        """No leader is known for ``key``: refresh metadata, then see whether the partition exists at all."""
        if key in self.missing or self.metadata_waiting:
            return  # a refresh is on its way (paced by the metadata backoff); _after_metadata kicks
        self.metadata_waiting = True
        self.client.refresh_metadata(self._after_metadata)

    def _after_metadata(self) -> None:
        """A metadata answer landed: report assigned partitions it shows do not exist, then carry on.

        Each is reported once per assignment; while any is missing the consumer keeps refreshing
        (the client's backoff makes that about once per ``retry.backoff.max.ms``), so it starts
        reading if the topic is created.
        """
        c = self.consumer
        n = self.client
        self.metadata_waiting = False
        missing = set()
        for key in c.assigned:
            if n.leader_of(*key) >= 0:
                continue
            count = n.partition_counts.get(key[0])
            if count is None or key[1] >= count:
                missing.add(key)
                if key not in self.reported:
                    self._report_missing(key, count)
        self.missing = missing
        if missing:
            self.metadata_waiting = True
            n.refresh_metadata(self._after_metadata)
        self.kick()

    def _report_missing(self, key: Key, count: int | None) -> None:
        n = self.client
        self.reported.add(key)
        text = f"{missing_text(key, count)}; {n.name} keeps refreshing metadata and reads it if it is created"
        error = UnknownTopicOrPartitionException(text, topic=key[0], partition=key[1])
        self.events.append(Message(key[0], key[1], OFFSET_INVALID, None, None, error=error))
        n.world.trace.emit(n.name, "state", events.CONSUMER_UNKNOWN_PARTITION, ("tp", f"{key[0]}-{key[1]}"))

    # -- ListOffsets --------------------------------------------------------------------------

    def reset_offset(self, key: Key, timestamp: int) -> None:
        """Ask the leader for the earliest or latest offset of ``key`` (:data:`EARLIEST`, :data:`LATEST`)."""
        n = self.client
        leader = n.leader_of(*key)
        if leader < 0:
            self._await_leader(key)
            return
        self.resetting.add(key)
        gen = self.generation
        req = ListOffsetsRequest(key[0], key[1], timestamp, self.isolation)
        n.request(
            f"broker-{leader}",
            req,
            lambda r: self._on_list_offsets(key, gen, r),
            timeout_ms=self.config.request_timeout_ms,
        )

    def _on_list_offsets(self, key: Key, gen: int, resp: ListOffsetsResponse | None) -> None:
        c = self.consumer
        n = self.client
        self.resetting.discard(key)
        if resp is None or resp.error is not ErrorCode.NONE:
            n.refresh_metadata()
            n.set_timer(self.config.retry_backoff_ms, self.kick)
            return
        if key in c.assigned and gen == self.generation:
            self.positions[key] = resp.offset
            self.requested.pop(key, None)
        self.kick()

    def watermark_offsets(self, key: Key, end: int, action: str) -> tuple[int, int]:
        """Ask the leader for ``key``'s ``(earliest, latest)`` offsets, running the simulation until ``end``.

        Latest is the HW, or the LSO under read_committed; the errors are those of
        :func:`engine.client.list_offsets.list_offsets`.
        """
        earliest, latest = list_offsets(self.client, key, (EARLIEST, LATEST), self.isolation, end, action)
        return (earliest.offset, latest.offset)

    # -- Fetch --------------------------------------------------------------------------------

    def _fetch(self, key: Key) -> None:
        n = self.client
        leader = n.leader_of(*key)
        if leader < 0:
            self._await_leader(key)
            return
        self.fetching.add(key)
        gen = self.generation
        offset = self.positions[key]
        req = FetchRequest(
            key[0],
            key[1],
            offset,
            replica_id=-1,
            isolation_level=self.isolation,
            max_bytes=self.config.max_partition_fetch_bytes,
            max_wait_ms=self.config.fetch_max_wait_ms,
        )
        n.request(
            f"broker-{leader}",
            req,
            lambda r: self._on_fetch(key, gen, offset, r),
            timeout_ms=self.config.request_timeout_ms + self.config.fetch_max_wait_ms,
        )

    def _on_fetch(self, key: Key, gen: int, offset: int, resp: FetchResponse | None) -> None:
        c = self.consumer
        n = self.client
        if gen != self.generation or key not in c.assigned:
            return
        self.fetching.discard(key)
        if resp is None or resp.error is not ErrorCode.NONE:
            code = n.no_answer if resp is None else resp.error
            if code is ErrorCode.OFFSET_OUT_OF_RANGE:
                self.positions.pop(key, None)
            else:
                n.refresh_metadata()
            n.set_timer(self.config.retry_backoff_ms, self.kick)
            return
        if self.positions.get(key) != offset:
            return
        self.fetch_log.append((n.world.now_ms, key[0], key[1], offset, resp.high_watermark, resp.last_stable_offset))
        visible = visible_batches(resp.batches, offset, resp.aborted_transactions, self.isolation)
        for _ in range(visible.aborted_dropped):
            n.world.trace.mark(n.name, ABORTED_BATCH_DROPPED)
        records = _records(key, offset, visible.batches)
        next_offset = visible.next_offset
        self.positions[key] = next_offset
        read_committed = self.isolation is IsolationLevel.READ_COMMITTED
        high = resp.last_stable_offset if read_committed else resp.high_watermark
        self.watermarks[key] = (resp.log_start_offset, high)
        self.buffer.extend(records)
        n.world.trace.emit(
            n.name,
            "state",
            events.CONSUMER_FETCHED,
            ("tp", f"{key[0]}-{key[1]}"),
            ("from", offset),
            ("records", len(records)),
            ("next", next_offset),
            ("lso", resp.last_stable_offset),
            ("hw", resp.high_watermark),
        )
        if not records and key not in self.fetching and key not in c.paused_tps:
            self._fetch(key)


def _records(key: Key, fetch_offset: int, batches: Iterable[RecordBatch]) -> list[Message]:
    """Turn visible batches into the application's records, from ``fetch_offset`` on."""
    topic, partition = key
    out: list[Message] = []
    for b in batches:
        base = b.base_offset
        for i, v in enumerate(b.values):
            o = base + i
            if o < fetch_offset:
                continue
            out.append(
                Message(
                    topic,
                    partition,
                    o,
                    b.keys[i],
                    v,
                    timestamp=b.record_timestamp(i),
                    headers=b.headers[i] if b.headers else None,
                    leader_epoch=b.partition_leader_epoch,
                )
            )
    return out
