"""The consumer: confluent-kafka's API over simulated fetches, with isolation levels.

``assign``, ``seek``, ``position``, ``poll``, ``consume``, ``close``, and with ``group.id``:
``subscribe``, ``unsubscribe``, ``commit``, ``committed``, ``group_metadata``. Times are
*simulated* seconds.

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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.client.base import ClientNode
from engine.client.message import Message, TopicPartition
from engine.config import ConsumerConfig, parse_config
from engine.errors import (
    CommitFailedException,
    ErrorCode,
    IllegalStateError,
    KafkaError,
    TimeoutException,
    exception_for,
)
from engine.group.member import GroupMember
from engine.log.records import ABORT
from engine.protocol import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse

if TYPE_CHECKING:
    from collections.abc import Iterable

    from engine.sim.world import World

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_INVALID = -1001

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
        self.config: ConsumerConfig = parse_config(ConsumerConfig, config, what="consumer")
        name = self.config.client_id or f"consumer-{len([n for n in world.nodes if n.startswith('consumer-')]) + 1}"
        super().__init__(world, name, bootstrap, self.config.retry_backoff_ms)
        self.read_committed = self.config.isolation_level == "read_committed"
        self.assignment: list[tuple[str, int]] = []
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
        self.group: GroupMember | None = GroupMember(self, self.config.group_id) if self.config.group_id else None
        self.refresh_metadata()
        self._start_auto_commit()

    # ======================================================================================
    # public API
    # ======================================================================================

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Read exactly these partitions (no group management)."""
        self._check_open()
        tps = [_tp(p) for p in partitions]
        self._set_assignment([t.key() for t in tps])
        for t in tps:
            if t.offset >= 0:
                self.positions[t.key()] = t.offset
            elif t.offset == OFFSET_BEGINNING:
                self._reset_offset(t.key(), -2)
            elif t.offset == OFFSET_END:
                self._reset_offset(t.key(), -1)
        self._kick()

    def _set_assignment(self, keys: list[tuple[str, int]]) -> None:
        self.assignment = sorted(keys)
        self.positions = {k: v for k, v in self.positions.items() if k in self.assignment}
        self._buffer = deque(m for m in self._buffer if (m.topic(), m.partition()) in self.assignment)
        self._fetch_gen += 1
        self._fetching = set()
        self._resolving = set()

    def unassign(self) -> None:
        """Stop reading every partition."""
        self._set_assignment([])

    def seek(self, partition: TopicPartition) -> None:
        """Set the next offset to read for one assigned partition."""
        self._check_open()
        key = partition.key()
        if key not in self.assignment:
            msg = f"cannot seek {key[0]}-{key[1]}: it is not assigned to {self.name}; assign() it first"
            raise IllegalStateError(msg)
        self._buffer = deque(m for m in self._buffer if (m.topic(), m.partition()) != key)
        self._fetch_gen += 1
        self._fetching = set()
        if partition.offset == OFFSET_BEGINNING:
            self._reset_offset(key, -2)
        elif partition.offset == OFFSET_END:
            self._reset_offset(key, -1)
        else:
            self.positions[key] = partition.offset
        self._kick()

    def position(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> list[TopicPartition]:
        """Return the next offset to read for each partition (-1001 when unknown)."""
        out = []
        for p in partitions:
            t = _tp(p)
            out.append(TopicPartition(t.topic, t.partition, self._position_for_app(t.key())))
        return out

    def _position_for_app(self, key: tuple[str, int]) -> int:
        """The position as the application sees it: after the last record it was given."""
        for m in self._buffer:
            if (m.topic(), m.partition()) == key:
                return m.offset()
        return self.positions.get(key, OFFSET_INVALID)

    def poll(self, timeout: float | None = 1.0) -> Message | None:
        """Return the next record, waiting up to ``timeout`` simulated seconds; None if none came."""
        msgs = self.consume(1, timeout)
        return msgs[0] if msgs else None

    def consume(self, num_messages: int = 1, timeout: float | None = 1.0) -> list[Message]:
        """Return up to ``num_messages`` records, waiting up to ``timeout`` simulated seconds."""
        self._check_open()
        self.before_poll()
        self._kick()
        if not self._buffer and timeout:
            end = self.world.now_ms + int(timeout * 1000)
            self.world.run_until(lambda: bool(self._buffer) or self.world.now_ms >= end or not self.is_up)
        out = []
        while self._buffer and len(out) < num_messages:
            out.append(self._buffer.popleft())
        self.after_poll(out)
        return out

    def close(self) -> None:
        """Stop the consumer: commit (if auto-commit is on) and leave the group (LeaveGroup)."""
        if self.closed:
            return
        if self.group is not None and self.is_up:
            if self.config.enable_auto_commit and self.assignment:
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
        """Join ``group.id`` and read the partitions the group assigns (range assignor)."""
        self._check_open()
        group = self._require_group("subscribe()")
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        wanted = tuple(sorted(set(topics)))
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
        """Commit offsets to the group: ``message``'s offset + 1, ``offsets``, or every consumed position.

        confluent-kafka's shape, but synchronous by default: the call runs the simulation until
        the coordinator answers and raises ``CommitFailedException`` when the group moved on
        (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION), ``RebalanceInProgressException`` during a
        rebalance, or the error's own exception. Returns the committed offsets (None if async).
        """
        self._check_open()
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

    def _commit_offsets(
        self, message: Message | None, offsets: list[TopicPartition] | None
    ) -> tuple[tuple[str, int, int], ...]:
        if message is not None:
            return ((message.topic(), message.partition(), message.offset() + 1),)
        if offsets is not None:
            return tuple((t.topic, t.partition, t.offset) for t in offsets if t.offset >= 0)
        out = []
        for key in self.assignment:
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
        keys = tuple(_tp(p).key() for p in partitions)
        box: list[tuple[ErrorCode, dict[tuple[str, int], int]]] = []
        group.fetch_committed(keys, lambda code, offs: box.append((code, offs)))
        end = self.world.now_ms + (int(timeout * 1000) if timeout is not None else self.config.request_timeout_ms)
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
            self._callbacks.append((self._on_assign, [TopicPartition(t, p) for t, p in self.assignment]))
        self._kick()

    def on_group_revoke(self, *, lost: bool) -> None:
        """Give back every partition (eager rebalance); commit first unless they were lost."""
        if not lost and self.config.enable_auto_commit:
            self._auto_commit()
        cb = self._on_lost if lost and self._on_lost is not None else self._on_revoke
        if cb is not None and self.assignment:
            self._callbacks.append((cb, [TopicPartition(t, p) for t, p in self.assignment]))
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
        if group is None or not self.assignment or (group.subscription and group.state != "STABLE"):
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
        for key in self.assignment:
            if key in self._fetching or key in self._resetting or key in self._resolving:
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

    def _reset_offset(self, key: tuple[str, int], timestamp: int) -> None:
        leader = self.leader_of(*key)
        if leader < 0:
            self.refresh_metadata(self._kick)
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
        if key in self.assignment and gen == self._fetch_gen:
            self.positions[key] = resp.offset
        self._kick()

    def _fetch(self, key: tuple[str, int]) -> None:
        leader = self.leader_of(*key)
        if leader < 0:
            self.refresh_metadata(self._kick)
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
        if gen != self._fetch_gen or key not in self.assignment:
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
        if not records:
            self._fetch(key) if key not in self._fetching else None

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
        if self.group is not None:
            self.assignment = [] if self.group.subscription else self.assignment
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


def _tp(p: TopicPartition | tuple[str, int]) -> TopicPartition:
    if isinstance(p, TopicPartition):
        return p
    return TopicPartition(p[0], p[1])
