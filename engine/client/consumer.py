"""The consumer: confluent-kafka's API over simulated fetches, with isolation levels.

``assign``, ``seek``, ``position``, ``poll``, ``consume``, ``close``; group membership
(``subscribe``, ``commit``, ``committed``) is added by the group layer. Times are *simulated*
seconds.

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

import heapq
from collections import deque
from typing import TYPE_CHECKING, Any

from engine.client.base import ClientNode
from engine.client.message import Message, TopicPartition
from engine.config import ConsumerConfig, parse_config
from engine.errors import ErrorCode, IllegalStateError
from engine.log.records import ABORT
from engine.protocol import FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse

if TYPE_CHECKING:
    from collections.abc import Iterable

    from engine.sim.world import World

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_INVALID = -1001


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
        self.refresh_metadata()

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
        """Stop the consumer."""
        self.closed = True
        self._set_assignment([])

    # -- hooks for the group layer ----------------------------------------------------------

    def before_poll(self) -> None:
        """Run group duties before a poll (the group layer overrides it)."""

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
        for key in self.assignment:
            if key in self._fetching or key in self._resetting:
                continue
            if key not in self.positions:
                self._reset_offset(key, -2 if self.config.auto_offset_reset == "earliest" else -1)
                continue
            if any((m.topic(), m.partition()) == key for m in self._buffer):
                continue
            self._fetch(key)

    def _reset_offset(self, key: tuple[str, int], timestamp: int) -> None:
        leader = self.leader_of(*key)
        if leader < 0:
            self.refresh_metadata(self._kick)
            return
        self._resetting.add(key)
        gen = self._fetch_gen
        req = ListOffsetsRequest(key[0], key[1], timestamp, self.config.isolation_level)
        self.request(f"broker-{leader}", req, lambda r: self._on_list_offsets(key, gen, r),
                     timeout_ms=self.config.request_timeout_ms)

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
        req = FetchRequest(key[0], key[1], offset, replica_id=-1, isolation_level=self.config.isolation_level,
                           max_bytes=self.config.max_partition_fetch_bytes, max_wait_ms=self.config.fetch_max_wait_ms)
        self.request(f"broker-{leader}", req, lambda r: self._on_fetch(key, gen, offset, r),
                     timeout_ms=self.config.request_timeout_ms + self.config.fetch_max_wait_ms)

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
        self.world.trace.emit(self.name, "state", "consumer.fetched", ("tp", f"{key[0]}-{key[1]}"), ("from", offset),
                              ("records", len(records)), ("next", next_offset), ("lso", resp.last_stable_offset),
                              ("hw", resp.high_watermark))
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
                out.append(Message(topic, partition, o, b.keys[i], v, timestamp=b.record_timestamp(i),
                                   headers=b.headers[i] if b.headers else None, leader_epoch=b.partition_leader_epoch))
        return out, next_offset

    def on_crash(self) -> None:
        """A crashed consumer forgets positions and buffered records."""
        super().on_crash()
        self._buffer = deque()
        self._fetching = set()
        self._resetting = set()
        self.positions = {}


def _tp(p: TopicPartition | tuple[str, int]) -> TopicPartition:
    if isinstance(p, TopicPartition):
        return p
    return TopicPartition(p[0], p[1])
