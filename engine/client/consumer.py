"""The consumer: confluent-kafka's API over simulated fetches, with isolation levels.

``assign``, ``incremental_assign``, ``incremental_unassign``, ``unassign``, ``assignment``,
``seek``, ``position``, ``pause``, ``resume``, ``paused``, ``poll``, ``consume``,
``get_watermark_offsets``, ``list_topics``, ``close``, and with ``group.id``: ``subscribe``,
``unsubscribe``, ``commit``, ``store_offsets``, ``committed``, ``group_metadata``. Times are
*simulated* seconds. Arguments are checked as confluent-kafka checks them: a malformed one is a
``TypeError`` or ``ValueError`` saying what to pass, before anything changes.

Timeouts
--------
``poll``/``consume``: seconds >= 0 (0: do not wait), or ``None``/``-1`` to wait until a record or
an error comes, as confluent-kafka does; in a simulation nothing may ever come, so an unbounded
wait gives up with ``SimulationStalled`` after :data:`UNBOUNDED_WAIT_MAX_EVENTS` events (hours of
simulated time for an idle cluster). Other negative values are refused. ``committed``,
``get_watermark_offsets`` and ``list_topics``: seconds >= 0, or ``None``/``-1`` for
``request.timeout.ms``; they raise ``TimeoutException`` when no answer comes in time.

A partition that does not exist
-------------------------------
A consumer assigned a partition it finds no leader for refreshes metadata (paced by the client's
``retry.backoff.ms`` → ``retry.backoff.max.ms`` backoff). When an answer shows the topic missing,
or the partition at or past the topic's partition count, the next ``poll``/``consume`` returns a
:class:`Message` whose ``error()`` is ``UnknownTopicOrPartitionException``, once per assignment of
that partition, as confluent-kafka reports ``UNKNOWN_TOPIC_OR_PART``; the consumer keeps
refreshing metadata in the background and starts reading if the topic is created. A metadata
answer with no partitions at all (a cluster without any topic) is treated by the client as no
answer, so nothing is reported until some topic exists.

Offset store (librdkafka's ``enable.auto.offset.store``)
--------------------------------------------------------
With ``enable.auto.offset.store`` true (the default), ``commit()`` without arguments and
auto-commit send each assigned partition's *position* after the records the application was
given (Java's ``commitSync()``: past a transaction marker that follows them). With it false, they
send only what :meth:`Consumer.store_offsets` stored (``message.offset() + 1``, or the offsets
given) for partitions still assigned; nothing stored, nothing committed.

Consumer groups (classic protocol, eager range assignment)
----------------------------------------------------------
``subscribe(topics)`` joins the group through :class:`~engine.group.member.GroupMember`
(FindCoordinator, JoinGroup, SyncGroup, heartbeats every ``heartbeat.interval.ms``). Each
rebalance revokes every partition first (eager protocol) and the new assignment starts from the
group's committed offsets (OffsetFetch, with ``require_stable`` under read_committed: KIP-447),
then ``auto.offset.reset``. ``assign()`` also starts from committed offsets when ``group.id`` is
set and no offset is given. ``enable.auto.commit`` (off by default here) commits the positions
the application has consumed every ``auto.commit.interval.ms`` and before each revocation.
``on_assign``/``on_revoke``/``on_lost`` callbacks run inside the next ``poll``/``consume``, as
in confluent-kafka. ``max.poll.interval.ms`` is sent as the rebalance timeout but not enforced
on the client.

read_committed (KIP-98)
-----------------------
A read_committed fetch returns data only below the last stable offset (LSO) and, with it, the
aborted transactions that overlap the range. The consumer walks the batches in order, keeping a
queue of aborted transactions sorted by first offset: when a data batch's last offset reaches an
aborted transaction's first offset, that producer id joins the *aborted producers* set; a
transactional batch of a producer in that set is dropped; the producer's ABORT marker takes it
out again. Control batches are never returned to the application, in either isolation level.
The position moves past dropped batches and markers, so offsets returned to the application have
gaps exactly where markers and aborted records sit.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine.args import call_wait_ms, wait_ms
from engine.client.base import ClientNode
from engine.client.message import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    Message,
    TopicPartition,
    offsets_arg,
    partition_arg,
    partition_list,
    topic_names_arg,
)
from engine.config import IGNORED_CLIENT_KEYS, ConsumerConfig, parse_config
from engine.errors import (
    CommitFailedException,
    ErrorCode,
    IllegalStateError,
    KafkaError,
    TimeoutException,
    UnknownTopicOrPartitionException,
    exception_for,
)
from engine.group.member import GroupMember
from engine.log.records import ABORT
from engine.protocol import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse
from engine.sim.scheduler import SimulationStalled

if TYPE_CHECKING:
    from engine.sim.world import World

#: confluent-kafka's bounds on ``consume(num_messages)``.
MAX_CONSUME_MESSAGES = 1_000_000
#: How many events a ``poll``/``consume`` with timeout None or -1 runs before giving up.
UNBOUNDED_WAIT_MAX_EVENTS = 1_000_000
#: ListOffsets errors after which the leader is looked up again.
_STALE_LEADER = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)

RebalanceCallback = Callable[["Consumer", list[TopicPartition]], None]


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What ``send_offsets_to_transaction`` needs to fence a zombie (KIP-447)."""

    #: The consumer's ``group.id``.
    group_id: str
    #: The generation the consumer believes it is in (-1: not in a generation).
    generation_id: int
    #: The member id the coordinator gave it ("" before the first join).
    member_id: str
    #: ``group.instance.id`` (static membership; always None here).
    group_instance_id: str | None = None


class Consumer(ClientNode):
    """A simulated Kafka consumer (see the module docstring)."""

    def __init__(self, world: World, bootstrap: list[str], config: dict[str, Any] | None = None) -> None:
        if config is not None and not isinstance(config, Mapping):
            msg = f"consumer config must be a dict of Kafka-named keys (e.g. {{'group.id': 'g'}}), got {config!r}"
            raise TypeError(msg)
        self.config: ConsumerConfig = parse_config(
            ConsumerConfig, config, what="consumer", extra_keys=IGNORED_CLIENT_KEYS
        )
        name = self.config.client_id or f"consumer-{len([n for n in world.nodes if n.startswith('consumer-')]) + 1}"
        super().__init__(world, name, bootstrap, self.config.retry_backoff_ms, self.config.retry_backoff_max_ms)
        self.read_committed = self.config.isolation_level == "read_committed"
        #: The assigned partitions, sorted (``assignment()`` returns them as TopicPartitions).
        self._assignment: list[tuple[str, int]] = []
        self.positions: dict[tuple[str, int], int] = {}
        self._buffer: deque[Message] = deque()
        self._fetching: set[tuple[str, int]] = set()
        self._resetting: set[tuple[str, int]] = set()
        self._fetch_gen = 0
        self.closed = False
        self.fetch_log: list[tuple[int, str, int, int, int, int]] = []
        #: Partitions whose committed offset is being fetched, and those known to have none.
        self._resolving: set[tuple[str, int]] = set()
        self._no_committed: set[tuple[str, int]] = set()
        self._callbacks: deque[tuple[Callable[..., None], list[TopicPartition]]] = deque()
        self._on_assign: RebalanceCallback | None = None
        self._on_revoke: RebalanceCallback | None = None
        self._on_lost: RebalanceCallback | None = None
        #: Paused partitions (not fetched, their buffered records held back), and stored offsets.
        self._paused: set[tuple[str, int]] = set()
        self._stored: dict[tuple[str, int], int] = {}
        #: Error events for the application (a Message with error()), returned before records.
        self._events: deque[Message] = deque()
        #: Assigned partitions a metadata answer showed do not exist; those already reported.
        self._missing: set[tuple[str, int]] = set()
        self._reported: set[tuple[str, int]] = set()
        self._metadata_waiting = False
        #: ``(low, high)`` from the last fetch of each partition (``get_watermark_offsets(cached=True)``).
        self._watermarks: dict[tuple[str, int], tuple[int, int]] = {}
        self.group: GroupMember | None = GroupMember(self, self.config.group_id) if self.config.group_id else None
        self.refresh_metadata()
        self._start_auto_commit()

    # ======================================================================================
    # public API
    # ======================================================================================

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Read exactly these partitions (no group management), replacing the assignment.

        Each is a ``TopicPartition`` (its offset, if >= 0 or OFFSET_BEGINNING/OFFSET_END, is where
        to start) or a ``(topic, partition)`` pair; without an offset the consumer starts from the
        group's committed offset (with ``group.id``), then ``auto.offset.reset``.
        """
        self._check_open()
        tps = partition_list(partitions, "assign()")
        self._set_assignment([t.key() for t in tps])
        self._start_from(tps)
        self._kick()

    def incremental_assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Add partitions to the assignment; those already assigned keep their position and records."""
        self._check_open()
        tps = partition_list(partitions, "incremental_assign()")
        self._refuse_if_subscribed("incremental_assign()")
        for t in tps:
            if t.key() in self._assignment:
                msg = f"incremental_assign(): {t.topic}-{t.partition} is already assigned to {self.name}; seek() it"
                raise IllegalStateError(msg)
        self._set_assignment(self._assignment + [t.key() for t in tps], fresh=False)
        self._start_from(tps)
        self._kick()

    def incremental_unassign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Remove partitions from the assignment; the others keep their position and records."""
        self._check_open()
        keys = [t.key() for t in partition_list(partitions, "incremental_unassign()")]
        self._refuse_if_subscribed("incremental_unassign()")
        self._require_assigned(keys, "incremental_unassign()")
        self._set_assignment([k for k in self._assignment if k not in keys], fresh=False)
        self._kick()

    def assignment(self) -> list[TopicPartition]:
        """Return the assigned partitions, sorted, as TopicPartitions without offsets."""
        return [TopicPartition(t, p) for t, p in self._assignment]

    def _start_from(self, tps: list[TopicPartition]) -> None:
        for t in tps:
            if t.offset >= 0:
                self.positions[t.key()] = t.offset
            elif t.offset == OFFSET_BEGINNING:
                self._reset_offset(t.key(), -2)
            elif t.offset == OFFSET_END:
                self._reset_offset(t.key(), -1)

    def _set_assignment(self, keys: list[tuple[str, int]], *, fresh: bool = True) -> None:
        """Replace the assignment. ``fresh``: a new assignment (errors are reported anew), not an increment."""
        self._assignment = sorted(keys)
        kept = set(self._assignment)
        self.positions = {k: v for k, v in self.positions.items() if k in kept}
        self._buffer = deque(m for m in self._buffer if (m.topic(), m.partition()) in kept)
        self._paused &= kept
        self._stored = {k: v for k, v in self._stored.items() if k in kept}
        if fresh:
            self._missing.clear()
            self._reported.clear()
        else:
            self._missing &= kept
            self._reported &= kept
        self._fetch_gen += 1
        self._fetching = set()
        self._resolving = set()

    def unassign(self) -> None:
        """Stop reading every partition."""
        self._set_assignment([])

    def _refuse_if_subscribed(self, action: str) -> None:
        if self.group is not None and self.group.subscription:
            msg = (
                f"{action} is for partitions the application assigns; {self.name} subscribe()d, and its group "
                "assigns them (eager protocol): use assign() in on_assign, or unsubscribe() first"
            )
            raise IllegalStateError(msg)

    def _require_assigned(self, keys: Iterable[tuple[str, int]], action: str) -> None:
        for t, p in keys:
            if (t, p) not in self._assignment:
                have = ", ".join(f"{a}-{b}" for a, b in self._assignment) or "none"
                msg = f"{action}: {t}-{p} is not assigned to {self.name}; its assignment: {have}"
                raise IllegalStateError(msg)

    def seek(self, partition: TopicPartition) -> None:
        """Set the next offset to read for one assigned partition (an offset >= 0, OFFSET_BEGINNING or OFFSET_END)."""
        self._check_open()
        if not isinstance(partition, TopicPartition):
            msg = f"seek() takes a TopicPartition(topic, partition, offset), got {partition!r}"
            raise TypeError(msg)
        tp = partition_arg(partition, "seek()")
        if tp.offset in (OFFSET_STORED, OFFSET_INVALID):
            msg = (
                f"seek(): {tp.topic}-{tp.partition} has offset {tp.offset}; give the offset to read next "
                "(>= 0), OFFSET_BEGINNING (-2) or OFFSET_END (-1)"
            )
            raise ValueError(msg)
        key = tp.key()
        if key not in self._assignment:
            msg = f"cannot seek {key[0]}-{key[1]}: it is not assigned to {self.name}; assign() it first"
            raise IllegalStateError(msg)
        self._buffer = deque(m for m in self._buffer if (m.topic(), m.partition()) != key)
        self._fetch_gen += 1
        self._fetching = set()
        if tp.offset == OFFSET_BEGINNING:
            self._reset_offset(key, -2)
        elif tp.offset == OFFSET_END:
            self._reset_offset(key, -1)
        else:
            self.positions[key] = tp.offset
        self._kick()

    def position(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> list[TopicPartition]:
        """Return the next offset to read for each partition (-1001 when unknown)."""
        return [
            TopicPartition(t.topic, t.partition, self._position_for_app(t.key()))
            for t in partition_list(partitions, "position()")
        ]

    def _position_for_app(self, key: tuple[str, int]) -> int:
        """The position as the application sees it: after the last record it was given."""
        for m in self._buffer:
            if (m.topic(), m.partition()) == key:
                return m.offset()
        return self.positions.get(key, OFFSET_INVALID)

    def pause(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Stop fetching these assigned partitions; their records already fetched wait for :meth:`resume`."""
        self._check_open()
        keys = [t.key() for t in partition_list(partitions, "pause()")]
        self._require_assigned(keys, "pause()")
        self._paused.update(keys)

    def resume(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Fetch paused partitions again, from where the application left them."""
        self._check_open()
        keys = [t.key() for t in partition_list(partitions, "resume()")]
        self._require_assigned(keys, "resume()")
        self._paused.difference_update(keys)
        self._kick()

    def paused(self) -> list[TopicPartition]:
        """Return the paused partitions, sorted."""
        return [TopicPartition(t, p) for t, p in sorted(self._paused)]

    def poll(self, timeout: float | None = 1.0) -> Message | None:
        """Return the next record or error event, waiting up to ``timeout`` simulated seconds; None if none came.

        ``timeout`` 0 does not wait; None or -1 waits until something comes (see the module docstring).
        """
        self._check_open()
        msgs = self._consume(1, wait_ms(timeout, "poll()"), "poll()")
        return msgs[0] if msgs else None

    def consume(self, num_messages: int = 1, timeout: float | None = 1.0) -> list[Message]:
        """Return up to ``num_messages`` (1 to 1,000,000) records and error events, waiting up to ``timeout`` s.

        Error events (a Message whose ``error()`` is set, e.g. an assigned partition that does not
        exist) come first; records of paused partitions are held back.
        """
        self._check_open()
        if isinstance(num_messages, bool) or not isinstance(num_messages, int):
            msg = f"consume(): num_messages must be an int between 1 and {MAX_CONSUME_MESSAGES}, got {num_messages!r}"
            raise TypeError(msg)
        if not 1 <= num_messages <= MAX_CONSUME_MESSAGES:
            msg = f"consume(): num_messages must be between 1 and {MAX_CONSUME_MESSAGES}, got {num_messages}"
            raise ValueError(msg)
        return self._consume(num_messages, wait_ms(timeout, "consume()"), "consume()")

    def _consume(self, num_messages: int, wait_ms: int | None, action: str) -> list[Message]:
        self.before_poll()
        self._kick()
        if not self._ready():
            if wait_ms is None:
                self._wait_unbounded(action)
            elif wait_ms > 0:
                end = self.world.now_ms + wait_ms
                self.world.run_until(lambda: self._ready() or self.world.now_ms >= end or not self.is_up)
        out = self._take(num_messages)
        self.after_poll(out)
        return out

    def _wait_unbounded(self, action: str) -> None:
        try:
            self.world.run_until(lambda: self._ready() or not self.is_up, UNBOUNDED_WAIT_MAX_EVENTS)
        except SimulationStalled as exc:
            reason = (
                f"{action} with timeout None/-1 waited for a record that never came ({exc.reason}); "
                "pass a timeout in simulated seconds"
            )
            raise SimulationStalled(reason, exc.now_ms, exc.events) from None

    def _ready(self) -> bool:
        """Return True when a poll would return something: an error event or a record of an unpaused partition."""
        if self._events:
            return True
        if not self._paused:
            return bool(self._buffer)
        return any((m.topic(), m.partition()) not in self._paused for m in self._buffer)

    def _take(self, n: int) -> list[Message]:
        out: list[Message] = []
        while self._events and len(out) < n:
            out.append(self._events.popleft())
        if not self._paused:
            while self._buffer and len(out) < n:
                out.append(self._buffer.popleft())
            return out
        held: deque[Message] = deque()
        while self._buffer and len(out) < n:
            m = self._buffer.popleft()
            (held if (m.topic(), m.partition()) in self._paused else out).append(m)
        held.extend(self._buffer)
        self._buffer = held
        return out

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float | None = None, cached: bool = False
    ) -> tuple[int, int]:
        """Return ``(low, high)`` offsets of a partition (any partition, assigned or not).

        Asks the leader with ListOffsets (earliest, latest): ``high`` is the high watermark, or the
        last stable offset for a read_committed consumer (the broker's "latest" for that isolation
        level). ``cached=True`` answers from the last fetch of the partition instead, without a
        request: ``(-1001, -1001)`` before any. Raises ``UnknownTopicOrPartitionException`` for a
        partition that does not exist, ``TimeoutException`` when no answer comes within ``timeout``
        simulated seconds (None or -1: ``request.timeout.ms``).
        """
        self._check_open()
        if not isinstance(partition, TopicPartition):
            msg = f"get_watermark_offsets() takes a TopicPartition(topic, partition), got {partition!r}"
            raise TypeError(msg)
        key = partition_arg(partition, "get_watermark_offsets()").key()
        if cached:
            return self._watermarks.get(key, (OFFSET_INVALID, OFFSET_INVALID))
        end = self.world.now_ms + call_wait_ms(timeout, "get_watermark_offsets()", self.config.request_timeout_ms)
        while self.world.now_ms < end and self.is_up:
            leader = self._leader_for_call(key, end, "get_watermark_offsets()")
            if leader >= 0:
                answers = self._earliest_and_latest(leader, key, end)
                if len(answers) == 2 and all(a.error is ErrorCode.NONE for a in answers):
                    return (answers[0].offset, answers[1].offset)
                bad = [a.error for a in answers if a.error is not ErrorCode.NONE and a.error not in _STALE_LEADER]
                if bad:
                    raise exception_for(bad[0], topic=key[0], partition=key[1])
                self.forget_leader(*key)
            self.world.run_for(min(self.config.retry_backoff_ms, max(0, end - self.world.now_ms)))
        msg = f"get_watermark_offsets(): no answer for {key[0]}-{key[1]} in time"
        raise TimeoutException(msg, topic=key[0], partition=key[1])

    def _earliest_and_latest(self, leader: int, key: tuple[str, int], end: int) -> list[ListOffsetsResponse]:
        """Send ListOffsets(earliest) and ListOffsets(latest) to the leader; return the answers that came by ``end``."""
        boxes: tuple[list[Any], list[Any]] = ([], [])
        for ts, box in zip((-2, -1), boxes, strict=True):
            req = ListOffsetsRequest(key[0], key[1], ts, self.config.isolation_level)
            self.request(f"broker-{leader}", req, box.append, timeout_ms=max(1, end - self.world.now_ms))
        self.world.run_until(lambda: bool(boxes[0] and boxes[1]) or self.world.now_ms >= end or not self.is_up)
        return [b[0] for b in boxes if b and b[0] is not None]

    def _leader_for_call(self, key: tuple[str, int], end: int, action: str) -> int:
        """Return the partition's leader (-1: none now), asking a broker when the cache has none.

        Raises ``UnknownTopicOrPartitionException`` when the answer shows no such partition.
        """
        leader = self.leader_of(*key)
        if leader >= 0:
            return leader
        md = self.list_topics(key[0], timeout=max(0, end - self.world.now_ms) / 1000)
        topic = md.topics[key[0]]
        if topic.error is not None or key[1] not in topic.partitions:
            raise UnknownTopicOrPartitionException(
                f"{action}: {_missing_text(key, len(topic.partitions) if topic.error is None else None)}",
                topic=key[0],
                partition=key[1],
            )
        return topic.partitions[key[1]].leader

    def request_timeout_ms(self) -> int:
        """Return the consumer's ``request.timeout.ms``."""
        return self.config.request_timeout_ms

    def close(self) -> None:
        """Stop the consumer: commit (if auto-commit is on) and leave the group (LeaveGroup)."""
        if self.closed:
            return
        if self.group is not None and self.is_up:
            if self.config.enable_auto_commit and self._assignment:
                try:
                    self.commit(asynchronous=False)
                except KafkaError as exc:
                    self.world.trace.emit(self.name, "state", "consumer.close.commit_failed", ("error", str(exc)))
            self.group.leave("the consumer is closing")
        self.closed = True
        self._set_assignment([])

    # ======================================================================================
    # consumer groups
    # ======================================================================================

    def subscribe(
        self,
        topics: Iterable[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
    ) -> None:
        """Join ``group.id`` and read the partitions the group assigns (range assignor).

        ``topics`` is a list of topic names (an empty list unsubscribes); the callbacks are
        ``callback(consumer, partitions)`` or None. A topic that does not exist gets no partitions
        (no error event: see docs/engine.md, "Differences from confluent-kafka").
        """
        self._check_open()
        wanted = topic_names_arg(topics, "subscribe()")
        for name, cb in (("on_assign", on_assign), ("on_revoke", on_revoke), ("on_lost", on_lost)):
            if cb is not None and not callable(cb):
                msg = f"subscribe(): {name} must be a function (consumer, partitions) or None, got {cb!r}"
                raise TypeError(msg)
        group = self._require_group("subscribe()")
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        if not wanted:
            self.unsubscribe()
            return
        if not group.subscription:
            self._set_assignment([])
        group.subscribe(wanted)

    def unsubscribe(self) -> None:
        """Leave the group and stop reading."""
        self._check_open()
        group = self._require_group("unsubscribe()")
        if group.subscription:
            self.on_group_revoke(lost=False)
            group.leave("the consumer unsubscribed")
            group.subscription = ()

    def commit(
        self,
        message: Message | None = None,
        offsets: list[TopicPartition] | None = None,
        asynchronous: bool = False,
    ) -> list[TopicPartition] | None:
        """Commit offsets to the group: ``message``'s offset + 1, ``offsets``, or the consumed/stored ones.

        confluent-kafka's shape, but synchronous by default: the call runs the simulation until
        the coordinator answers and raises ``CommitFailedException`` when the group moved on
        (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION), ``RebalanceInProgressException`` during a
        rebalance, or the error's own exception. Returns the committed offsets (None if async).
        ``message`` and ``offsets`` exclude each other; offsets below 0 in ``offsets`` are skipped.
        Without either: every assigned partition's position, or with ``enable.auto.offset.store``
        false the stored offsets (module docstring).
        """
        self._check_open()
        if message is not None or offsets is not None:
            offsets_arg(message, offsets, "commit()", strict=False)
        if not isinstance(asynchronous, bool):
            msg = f"commit(): asynchronous must be True or False, got {asynchronous!r}"
            raise TypeError(msg)
        group = self._require_group("commit()")
        triples = self._commit_offsets(message, offsets)
        if not triples:
            return None if asynchronous else []
        end = self.world.now_ms + self.config.request_timeout_ms
        if asynchronous:
            group.commit(triples, lambda code: self._commit_done(triples, code), retry_until_ms=end)
            return None
        box: list[ErrorCode] = []
        group.commit(triples, box.append, retry_until_ms=end)
        self.world.run_until(lambda: bool(box) or self.world.now_ms >= end or not self.is_up)
        if not box:
            raise TimeoutException(
                f"commit of {len(triples)} offsets got no answer within {self.config.request_timeout_ms} ms",
                group=group.group_id,
            )
        self._commit_done(triples, box[0])
        if box[0] is not ErrorCode.NONE:
            raise _commit_exception(box[0], group.group_id)
        return [TopicPartition(t, p, o) for t, p, o in triples]

    def store_offsets(self, message: Message | None = None, offsets: list[TopicPartition] | None = None) -> None:
        """Store the offset the next ``commit()`` (or auto-commit) sends: ``message.offset() + 1``, or ``offsets``.

        Needs ``enable.auto.offset.store`` false (``IllegalStateError`` otherwise: the consumer
        stores every position itself), exactly one of ``message`` and ``offsets`` (offsets >= 0),
        and partitions assigned to this consumer (``IllegalStateError``), as librdkafka does.
        """
        self._check_open()
        if self.config.enable_auto_offset_store:
            msg = (
                "store_offsets() needs the consumer configuration 'enable.auto.offset.store': False; with it "
                "on (the default) the consumer stores the position of what it returns by itself"
            )
            raise IllegalStateError(msg)
        triples = offsets_arg(message, offsets, "store_offsets()", strict=True)
        self._require_assigned([(t, p) for t, p, _ in triples], "store_offsets()")
        for t, p, o in triples:
            self._stored[(t, p)] = o

    def _commit_offsets(
        self, message: Message | None, offsets: list[TopicPartition] | None
    ) -> tuple[tuple[str, int, int], ...]:
        if message is not None:
            return ((message.topic(), message.partition(), message.offset() + 1),)
        if offsets is not None:
            return tuple((t.topic, t.partition, t.offset) for t in offsets if t.offset >= 0)
        if not self.config.enable_auto_offset_store:
            return tuple((t, p, o) for (t, p), o in sorted(self._stored.items()) if (t, p) in self._assignment)
        out = []
        for key in self._assignment:
            pos = self._position_for_app(key)
            if pos >= 0:
                out.append((key[0], key[1], pos))
        return tuple(out)

    def _commit_done(self, triples: tuple[tuple[str, int, int], ...], code: ErrorCode) -> None:
        self.world.trace.emit(
            self.name,
            "state",
            "consumer.commit",
            ("error", code.name),
            ("offsets", [f"{t}-{p}@{o}" for t, p, o in triples]),
        )

    def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout: float | None = None
    ) -> list[TopicPartition]:
        """Return the group's committed offset of each partition (-1001 when none), waiting for stable ones."""
        self._check_open()
        group = self._require_group("committed()")
        keys = tuple(t.key() for t in partition_list(partitions, "committed()"))
        wait_ms = call_wait_ms(timeout, "committed()", self.config.request_timeout_ms)
        box: list[tuple[ErrorCode, dict[tuple[str, int], int]]] = []
        group.fetch_committed(keys, lambda code, offs: box.append((code, offs)))
        end = self.world.now_ms + wait_ms
        self.world.run_until(lambda: bool(box) or self.world.now_ms >= end or not self.is_up)
        if not box:
            raise TimeoutException(
                "committed() got no answer in time (an unstable offset or no coordinator)", group=group.group_id
            )
        code, offs = box[0]
        if code is not ErrorCode.NONE:
            raise exception_for(code, group=group.group_id)
        return [TopicPartition(t, p, o if (o := offs.get((t, p), -1)) >= 0 else OFFSET_INVALID) for t, p in keys]

    def group_metadata(self) -> ConsumerGroupMetadata:
        """Return the group id, generation and member id as this consumer believes them now."""
        group = self._require_group("group_metadata()")
        return ConsumerGroupMetadata(group.group_id, group.generation_id, group.member_id, group.group_instance_id)

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """confluent-kafka's name for :meth:`group_metadata` (what ``send_offsets_to_transaction`` takes)."""
        return self.group_metadata()

    def memberid(self) -> str | None:
        """Return the member id the group coordinator gave this consumer, or None before it joined."""
        group = self._require_group("memberid()")
        return group.member_id or None

    def _require_group(self, action: str) -> GroupMember:
        if self.group is None:
            raise exception_for(
                ErrorCode.INVALID_GROUP_ID, f"{action} needs the consumer configuration 'group.id'", consumer=self.name
            )
        return self.group

    # -- called by GroupMember ----------------------------------------------------------------

    def pick_broker(self) -> str:
        """Return a broker to ask for metadata or the coordinator (round robin)."""
        return self._pick_broker()

    def on_group_assignment(self, tps: list[tuple[str, int]]) -> None:
        """The group gave this consumer ``tps`` (SyncGroup): read them from the committed offsets."""
        self._set_assignment(list(tps))
        self._no_committed = set()
        if self._on_assign is not None:
            self._callbacks.append((self._on_assign, [TopicPartition(t, p) for t, p in self._assignment]))
        self._kick()

    def on_group_revoke(self, *, lost: bool) -> None:
        """Give back every partition (eager rebalance); commit first unless they were lost."""
        if not lost and self.config.enable_auto_commit:
            self._auto_commit()
        cb = self._on_lost if lost and self._on_lost is not None else self._on_revoke
        if cb is not None and self._assignment:
            self._callbacks.append((cb, [TopicPartition(t, p) for t, p in self._assignment]))
        self._set_assignment([])

    # -- auto commit ------------------------------------------------------------------------

    def _start_auto_commit(self) -> None:
        if self.group is not None and self.config.enable_auto_commit:
            self.set_timer(self.config.auto_commit_interval_ms, self._auto_commit_tick)

    def _auto_commit_tick(self) -> None:
        if self.closed:
            return
        self._auto_commit()
        self.set_timer(self.config.auto_commit_interval_ms, self._auto_commit_tick)

    def _auto_commit(self) -> None:
        group = self.group
        if group is None or not self._assignment or (group.subscription and group.state != "STABLE"):
            return
        triples = self._commit_offsets(None, None)
        if triples:
            end = self.world.now_ms + self.config.request_timeout_ms
            group.commit(triples, lambda code: self._commit_done(triples, code), retry_until_ms=end)

    # -- hooks --------------------------------------------------------------------------------

    def before_poll(self) -> None:
        """Raise a fatal group error; run the rebalance callbacks queued since the last poll."""
        if self.group is not None and self.group.fatal is not None:
            raise exception_for(self.group.fatal, group=self.group.group_id)
        while self._callbacks:
            cb, tps = self._callbacks.popleft()
            cb(self, tps)

    def after_poll(self, messages: list[Message]) -> None:
        """Learn what a poll returned (history recording)."""

    # ======================================================================================
    # fetching
    # ======================================================================================

    def _check_open(self) -> None:
        if self.closed:
            msg = f"consumer {self.name} is closed; create a new consumer"
            raise IllegalStateError(msg)

    def _kick(self) -> None:
        unresolved = []
        for key in self._assignment:
            if key in self._fetching or key in self._resetting or key in self._resolving or key in self._paused:
                continue
            if key not in self.positions:
                if self.group is not None and key not in self._no_committed:
                    unresolved.append(key)
                else:
                    self._reset_offset(key, -2 if self.config.auto_offset_reset == "earliest" else -1)
                continue
            if any((m.topic(), m.partition()) == key for m in self._buffer):
                continue
            self._fetch(key)
        if unresolved:
            self._fetch_committed(tuple(unresolved))

    def _fetch_committed(self, keys: tuple[tuple[str, int], ...]) -> None:
        """Start ``keys`` from the group's committed offsets (then auto.offset.reset)."""
        group = self.group
        if group is None:
            return
        self._resolving.update(keys)
        gen = self._fetch_gen

        def answered(code: ErrorCode, offsets: dict[tuple[str, int], int]) -> None:
            self._resolving.difference_update(keys)
            if gen != self._fetch_gen:
                self._kick()
                return
            if code is not ErrorCode.NONE:
                self.set_timer(self.config.retry_backoff_ms, self._kick)
                return
            for key in keys:
                offset = offsets.get(key, -1)
                if offset >= 0:
                    self.positions[key] = offset
                else:
                    self._no_committed.add(key)
            self.world.trace.emit(
                self.name,
                "state",
                "consumer.committed",
                ("group", self.group.group_id if self.group else ""),
                ("offsets", [f"{t}-{p}@{offsets.get((t, p), -1)}" for t, p in keys]),
            )
            self._kick()

        group.fetch_committed(keys, answered)

    def _await_leader(self, key: tuple[str, int]) -> None:
        """No leader is known for ``key``: refresh metadata, then see whether the partition exists at all."""
        if key in self._missing or self._metadata_waiting:
            return  # a refresh is on its way (paced by the metadata backoff); _after_metadata kicks
        self._metadata_waiting = True
        self.refresh_metadata(self._after_metadata)

    def _after_metadata(self) -> None:
        """A metadata answer landed: report assigned partitions it shows do not exist, then carry on.

        Each is reported once per assignment; while any is missing the consumer keeps refreshing
        (the client's backoff makes that about once per ``retry.backoff.max.ms``), so it starts
        reading if the topic is created.
        """
        self._metadata_waiting = False
        missing = set()
        for key in self._assignment:
            if self.leader_of(*key) >= 0:
                continue
            count = self.partition_counts.get(key[0])
            if count is None or key[1] >= count:
                missing.add(key)
                if key not in self._reported:
                    self._report_missing(key, count)
        self._missing = missing
        if missing:
            self._metadata_waiting = True
            self.refresh_metadata(self._after_metadata)
        self._kick()

    def _report_missing(self, key: tuple[str, int], count: int | None) -> None:
        self._reported.add(key)
        text = f"{_missing_text(key, count)}; {self.name} keeps refreshing metadata and reads it if it is created"
        error = UnknownTopicOrPartitionException(text, topic=key[0], partition=key[1])
        self._events.append(Message(key[0], key[1], OFFSET_INVALID, None, None, error=error))
        self.world.trace.emit(self.name, "state", "consumer.unknown_partition", ("tp", f"{key[0]}-{key[1]}"))

    def _reset_offset(self, key: tuple[str, int], timestamp: int) -> None:
        leader = self.leader_of(*key)
        if leader < 0:
            self._await_leader(key)
            return
        self._resetting.add(key)
        gen = self._fetch_gen
        req = ListOffsetsRequest(key[0], key[1], timestamp, self.config.isolation_level)
        self.request(
            f"broker-{leader}",
            req,
            lambda r: self._on_list_offsets(key, gen, r),
            timeout_ms=self.config.request_timeout_ms,
        )

    def _on_list_offsets(self, key: tuple[str, int], gen: int, resp: ListOffsetsResponse | None) -> None:
        self._resetting.discard(key)
        if resp is None or resp.error is not ErrorCode.NONE:
            self.refresh_metadata()
            self.set_timer(self.config.retry_backoff_ms, self._kick)
            return
        if key in self._assignment and gen == self._fetch_gen:
            self.positions[key] = resp.offset
        self._kick()

    def _fetch(self, key: tuple[str, int]) -> None:
        leader = self.leader_of(*key)
        if leader < 0:
            self._await_leader(key)
            return
        self._fetching.add(key)
        gen = self._fetch_gen
        offset = self.positions[key]
        req = FetchRequest(
            key[0],
            key[1],
            offset,
            replica_id=-1,
            isolation_level=self.config.isolation_level,
            max_bytes=self.config.max_partition_fetch_bytes,
            max_wait_ms=self.config.fetch_max_wait_ms,
        )
        self.request(
            f"broker-{leader}",
            req,
            lambda r: self._on_fetch(key, gen, offset, r),
            timeout_ms=self.config.request_timeout_ms + self.config.fetch_max_wait_ms,
        )

    def _on_fetch(self, key: tuple[str, int], gen: int, offset: int, resp: FetchResponse | None) -> None:
        if gen != self._fetch_gen or key not in self._assignment:
            return
        self._fetching.discard(key)
        if resp is None or resp.error is not ErrorCode.NONE:
            code = ErrorCode.REQUEST_TIMED_OUT if resp is None else resp.error
            if code is ErrorCode.OFFSET_OUT_OF_RANGE:
                self.positions.pop(key, None)
            else:
                self.refresh_metadata()
            self.set_timer(self.config.retry_backoff_ms, self._kick)
            return
        if self.positions.get(key) != offset:
            return
        self.fetch_log.append((self.world.now_ms, key[0], key[1], offset, resp.high_watermark, resp.last_stable_offset))
        records, next_offset = self._unpack(key, offset, resp)
        self.positions[key] = next_offset
        high = resp.last_stable_offset if self.read_committed else resp.high_watermark
        self._watermarks[key] = (resp.log_start_offset, high)
        self._buffer.extend(records)
        self.world.trace.emit(
            self.name,
            "state",
            "consumer.fetched",
            ("tp", f"{key[0]}-{key[1]}"),
            ("from", offset),
            ("records", len(records)),
            ("next", next_offset),
            ("lso", resp.last_stable_offset),
            ("hw", resp.high_watermark),
        )
        if not records and key not in self._fetching and key not in self._paused:
            self._fetch(key)

    def _unpack(self, key: tuple[str, int], offset: int, resp: FetchResponse) -> tuple[list[Message], int]:
        """Turn fetched batches into records, dropping markers and (read_committed) aborted data."""
        topic, partition = key
        out: list[Message] = []
        next_offset = offset
        aborted_heap: list[tuple[int, int]] = []
        aborted_producers: set[int] = set()
        if self.read_committed and resp.aborted_transactions:
            aborted_heap = [(t.first_offset, t.producer_id) for t in resp.aborted_transactions]
            heapq.heapify(aborted_heap)
        for b in resp.batches:
            if b.next_offset <= offset:
                continue
            next_offset = b.next_offset
            if self.read_committed:
                while aborted_heap and aborted_heap[0][0] <= b.last_offset:
                    aborted_producers.add(heapq.heappop(aborted_heap)[1])
                if b.is_control:
                    if b.control_type == ABORT:
                        aborted_producers.discard(b.producer_id)
                    continue
                if b.is_transactional and b.producer_id in aborted_producers:
                    self.world.trace.mark(self.name, "consumer: aborted batch dropped (read_committed)")
                    continue
            elif b.is_control:
                continue
            base = b.base_offset
            for i, v in enumerate(b.values):
                o = base + i
                if o < offset:
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
        return out, next_offset

    def on_crash(self) -> None:
        """A crashed consumer forgets positions and buffered records."""
        super().on_crash()
        self._buffer = deque()
        self._fetching = set()
        self._resetting = set()
        self._resolving = set()
        self._no_committed = set()
        self.positions = {}
        self._callbacks = deque()
        self._events = deque()
        self._paused = set()
        self._stored = {}
        self._missing = set()
        self._reported = set()
        self._metadata_waiting = False
        if self.group is not None:
            self._assignment = [] if self.group.subscription else self._assignment
            self.group.on_crash()

    def on_restart(self) -> None:
        """A restarted consumer process rejoins its group (if subscribed) and re-reads committed offsets."""
        super().on_restart()
        self.refresh_metadata()
        if self.group is not None and not self.closed:
            self._start_auto_commit()
            self.group.join()


def _commit_exception(code: ErrorCode, group_id: str) -> KafkaError:
    """The exception ``commit()`` raises (Kafka's ``commitSync``: a lost generation is CommitFailed)."""
    if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
        return CommitFailedException(
            f"Commit cannot be completed: the group {group_id!r} rebalanced and gave the partitions to another "
            f"member ({code.name}); poll() to rejoin, then process and commit again",
            group=group_id,
            error=code.name,
        )
    return exception_for(code, group=group_id)


def _missing_text(key: tuple[str, int], count: int | None) -> str:
    """Say that ``key`` does not exist, and what does (``count``: the topic's partitions, None: no topic)."""
    topic, partition = key
    if count is None:
        return f"topic {topic!r} does not exist (partition {topic}-{partition})"
    tp = f"{topic}-{partition}"
    return f"partition {partition} of topic {topic!r} ({tp}) does not exist: the topic has {count} partitions"
