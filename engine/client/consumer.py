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
An assigned partition the cluster does not have is reported once per assignment: the next
``poll``/``consume`` returns a :class:`Message` whose ``error()`` is
``UnknownTopicOrPartitionException`` (confluent-kafka's ``UNKNOWN_TOPIC_OR_PART``), and the consumer
starts reading if the topic is created (:mod:`engine.client.fetcher`).

Offset store (librdkafka's ``enable.auto.offset.store``)
--------------------------------------------------------
With it true (the default), ``commit()`` without arguments and auto-commit send each assigned
partition's position after the records the application was given; with it false, only what
:meth:`Consumer.store_offsets` stored (:mod:`engine.client.offset_commits`).

Consumer groups (classic protocol)
----------------------------------
``subscribe(topics)`` joins the group through :class:`~engine.client.group_member.GroupMember`
(FindCoordinator, JoinGroup, SyncGroup, heartbeats every ``heartbeat.interval.ms``) with the
assignors of ``partition.assignment.strategy`` (:mod:`engine.client.assignors`). With eager ones
(range, the default, and roundrobin) each rebalance revokes every partition first; with
cooperative-sticky (KIP-429) only the partitions that move are revoked, ``on_revoke`` and
``on_assign`` get just those, and each change is made when the callback asks for it
(``incremental_unassign``/``incremental_assign``) or after it returns, as confluent-kafka does.
``close()`` revokes the assignment through ``on_revoke``. A new assignment starts from the
group's committed offsets (OffsetFetch, with ``require_stable`` under read_committed: KIP-447),
then ``auto.offset.reset``. ``assign()`` also starts from committed offsets when ``group.id`` is
set and no offset is given. ``enable.auto.commit`` (off by default here) commits the positions
the application has consumed every ``auto.commit.interval.ms`` and before each revocation.
``on_assign``/``on_revoke``/``on_lost`` callbacks run inside the next ``poll``/``consume``, as
in confluent-kafka. ``max.poll.interval.ms`` is sent as the rebalance timeout but not enforced
on the client.

read_committed (KIP-98)
-----------------------
With ``isolation.level`` read_committed (:class:`~engine.config.IsolationLevel`) fetches stop at
the last stable offset and come with the aborted transactions they overlap; the consumer drops
those transactions' batches and never returns markers (:mod:`engine.client.read_committed`), so
offsets returned to the application have gaps where markers and aborted records sit. Positions,
fetches and the records they bring are the :class:`~engine.client.fetcher.Fetcher`'s.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.args import call_wait_ms, wait_ms
from engine.client.base import ClientNode
from engine.client.consumer_member import ConsumerMember
from engine.client.fetcher import Fetcher
from engine.client.group_member import GroupMember
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
from engine.client.offset_commits import OffsetCommits
from engine.config import IGNORED_CLIENT_KEYS, ConsumerConfig, IsolationLevel, parse_config
from engine.errors import ErrorCode, IllegalStateError, KafkaError, exception_for
from engine.group.txn_offsets import ConsumerGroupMetadata
from engine.sim.scheduler import SimulationStalled

if TYPE_CHECKING:
    from engine.client.observer import ConsumerObserver
    from engine.sim.world import World

#: confluent-kafka's bounds on ``consume(num_messages)``.
MAX_CONSUME_MESSAGES = 1_000_000
#: How many events a ``poll``/``consume`` with timeout None or -1 runs before giving up.
UNBOUNDED_WAIT_MAX_EVENTS = 1_000_000

RebalanceCallback = Callable[["Consumer", list[TopicPartition]], None]


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
        super().__init__(world, name, bootstrap, self.config)
        #: An optional watcher of what the application does (engine/client/observer.py); None: no cost.
        self.observer: ConsumerObserver | None = None
        #: ``isolation.level`` (the config's).
        self.isolation_level: IsolationLevel = self.config.isolation_level
        #: The assigned partitions, sorted (``assignment()`` returns them as TopicPartitions).
        self.assigned: list[tuple[str, int]] = []
        #: Paused partitions: not fetched, their buffered records held back.
        self.paused_tps: set[tuple[str, int]] = set()
        self.closed = False
        self.fetcher = Fetcher(self, self, self.config)
        self._callbacks: deque[tuple[Callable[..., None], list[TopicPartition]]] = deque()
        self._on_assign: RebalanceCallback | None = None
        self._on_revoke: RebalanceCallback | None = None
        self._on_lost: RebalanceCallback | None = None
        #: Inside a cooperative rebalance callback: the partitions the group just added or revoked.
        self._rebalancing: tuple[frozenset[tuple[str, int]], Callable[[], None]] | None = None
        #: Bumped by a full revocation or a crash: queued incremental changes are outdated then.
        self._rebalance_version = 0
        self.commits = OffsetCommits(self, self, self.config)
        self.group: GroupMember | None = None
        if self.config.group_id:
            member = ConsumerMember if self.config.group_protocol == "consumer" else GroupMember
            self.group = member(self, self, self.config, self.config.group_id)
        self.refresh_metadata()
        self.commits.start_auto_commit()

    @property
    def positions(self) -> dict[tuple[str, int], int]:
        """The next offset the fetcher reads per assigned partition (absent: not known yet)."""
        return self.fetcher.positions

    @property
    def fetch_log(self) -> list[tuple[int, str, int, int, int, int]]:
        """``(time_ms, topic, partition, fetch_offset, hw, lso)`` of every answered fetch."""
        return self.fetcher.fetch_log

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
        self._assignment_changed(self._start_from(tps))

    def incremental_assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Add partitions to the assignment; those already assigned keep their position and records."""
        self._check_open()
        tps = partition_list(partitions, "incremental_assign()")
        if self._rebalancing is not None and {t.key() for t in tps} == self._rebalancing[0]:
            self._rebalancing[1]()  # the group's addition, made now (see _incremental)
            return
        self._refuse_if_subscribed("incremental_assign()")
        for t in tps:
            if t.key() in self.assigned:
                msg = f"incremental_assign(): {t.topic}-{t.partition} is already assigned to {self.name}; seek() it"
                raise IllegalStateError(msg)
        self._set_assignment(self.assigned + [t.key() for t in tps], fresh=False)
        self._assignment_changed(self._start_from(tps))

    def incremental_unassign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Remove partitions from the assignment; the others keep their position and records."""
        self._check_open()
        keys = [t.key() for t in partition_list(partitions, "incremental_unassign()")]
        if self._rebalancing is not None and set(keys) == self._rebalancing[0]:
            self._rebalancing[1]()  # the group's revocation, made now (see _incremental)
            return
        self._refuse_if_subscribed("incremental_unassign()")
        self._require_assigned(keys, "incremental_unassign()")
        self._set_assignment([k for k in self.assigned if k not in keys], fresh=False)
        self._assignment_changed()

    def assignment(self) -> list[TopicPartition]:
        """Return the assigned partitions, sorted, as TopicPartitions without offsets."""
        return [TopicPartition(t, p) for t, p in self.assigned]

    def _start_from(self, tps: list[TopicPartition]) -> tuple[tuple[str, int], ...]:
        """Start each partition that was given an offset (>= 0, OFFSET_BEGINNING, OFFSET_END) there; return them."""
        started = []
        for t in tps:
            if t.offset >= 0 or t.offset in (OFFSET_BEGINNING, OFFSET_END):
                self.fetcher.start_at(t.key(), t.offset)
                started.append(t.key())
        return tuple(started)

    def _assignment_changed(self, started: tuple[tuple[str, int], ...] = ()) -> None:
        """Wake the fetcher for the new assignment; tell the observer, with the partitions ``started`` at an offset."""
        self.fetcher.kick()
        if self.observer is not None:
            self.observer.on_assignment(self, "assign", started)

    def _set_assignment(self, keys: list[tuple[str, int]], *, fresh: bool = True) -> None:
        """Replace the assignment. ``fresh``: a new assignment (errors are reported anew), not an increment.

        A subscribed consumer traces each change (``consumer.assignment``): the partitions it owns
        from now on, which :mod:`engine.views.ownership` turns into ownership intervals.
        """
        before = self.assigned
        self.assigned = sorted(keys)
        if self.assigned != before and self.group is not None and self.group.subscription:
            self.world.trace.emit(
                self.name,
                "state",
                events.CONSUMER_ASSIGNMENT,
                ("group", self.group.group_id),
                ("assignment", [f"{t}-{p}" for t, p in self.assigned]),
            )
        kept = set(self.assigned)
        self.paused_tps &= kept
        self.commits.retain(kept)
        self.fetcher.retain(kept, fresh=fresh)

    def unassign(self) -> None:
        """Stop reading every partition."""
        self._set_assignment([])
        if self.observer is not None:
            self.observer.on_assignment(self, "assign", ())

    def _refuse_if_subscribed(self, action: str) -> None:
        if self.group is not None and self.group.subscription:
            msg = (
                f"{action} is for partitions the application assigns; {self.name} subscribe()d, and its group "
                "assigns them: call it in on_assign/on_revoke with the partitions given (cooperative-sticky), "
                "or unsubscribe() first"
            )
            raise IllegalStateError(msg)

    def _require_assigned(self, keys: Iterable[tuple[str, int]], action: str) -> None:
        for t, p in keys:
            if (t, p) not in self.assigned:
                have = ", ".join(f"{a}-{b}" for a, b in self.assigned) or "none"
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
        if key not in self.assigned:
            msg = f"cannot seek {key[0]}-{key[1]}: it is not assigned to {self.name}; assign() it first"
            raise IllegalStateError(msg)
        self.fetcher.seek(key, tp.offset)
        self.fetcher.kick()
        if self.observer is not None:
            self.observer.on_seek(self, key)

    def position(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> list[TopicPartition]:
        """Return the next offset to read for each partition (-1001 when unknown)."""
        return [
            TopicPartition(t.topic, t.partition, self.fetcher.position_for_app(t.key()))
            for t in partition_list(partitions, "position()")
        ]

    def pause(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Stop fetching these assigned partitions; their records already fetched wait for :meth:`resume`."""
        self._check_open()
        keys = [t.key() for t in partition_list(partitions, "pause()")]
        self._require_assigned(keys, "pause()")
        self.paused_tps.update(keys)

    def resume(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Fetch paused partitions again, from where the application left them."""
        self._check_open()
        keys = [t.key() for t in partition_list(partitions, "resume()")]
        self._require_assigned(keys, "resume()")
        self.paused_tps.difference_update(keys)
        self.fetcher.kick()

    def paused(self) -> list[TopicPartition]:
        """Return the paused partitions, sorted."""
        return [TopicPartition(t, p) for t, p in sorted(self.paused_tps)]

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
        observer = self.observer
        if observer is None:
            return self._fetch_for_app(num_messages, wait_ms, action)
        observer.on_poll_start(self)
        try:
            out = self._fetch_for_app(num_messages, wait_ms, action)
        except BaseException as exc:
            observer.on_poll_end(self, [], exc)
            raise
        observer.on_poll_end(self, out, None)
        return out

    def _fetch_for_app(self, num_messages: int, wait_ms: int | None, action: str) -> list[Message]:
        """Wait up to ``wait_ms`` for records or error events (None: until one comes) and hand them out."""
        self.fetcher.kick()
        if not self._ready():
            if wait_ms is None:
                self._wait_unbounded(action)
            elif wait_ms > 0:
                end = self.world.now_ms + wait_ms
                self.world.run_until(lambda: self._ready() or not self.is_up, deadline_ms=end)
        out = self.fetcher.take(num_messages, self.paused_tps)
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
        return self.fetcher.ready(self.paused_tps)

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
            return self.fetcher.watermarks.get(key, (OFFSET_INVALID, OFFSET_INVALID))
        end = self.world.now_ms + call_wait_ms(timeout, "get_watermark_offsets()", self.config.request_timeout_ms)
        return self.fetcher.watermark_offsets(key, end, "get_watermark_offsets()")

    def request_timeout_ms(self) -> int:
        """Return the consumer's ``request.timeout.ms``."""
        return self.config.request_timeout_ms

    def close(self) -> None:
        """Stop the consumer: commit (if auto-commit is on), revoke (``on_revoke``) and leave the group (LeaveGroup)."""
        if self.closed:
            return
        if self.group is not None and self.is_up:
            if self.config.enable_auto_commit and self.assigned:
                try:
                    self.commit(asynchronous=False)
                except KafkaError as exc:
                    self.world.trace.emit(self.name, "state", events.CONSUMER_CLOSE_COMMIT_FAILED, ("error", str(exc)))
            if self.group.subscription and self.assigned and self._on_revoke is not None:
                # confluent-kafka revokes the assignment in close(), through the rebalance callback.
                tps = list(self.assigned)
                handler = self._rebalance_handler(self._on_revoke, tps, lambda: self._set_assignment([]))
                handler(self, [TopicPartition(t, p) for t, p in tps])
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
        """Join ``group.id`` and read the partitions the group assigns (``partition.assignment.strategy``).

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
        if self.observer is not None:
            self.observer.on_assignment(self, "subscribe", ())

    def unsubscribe(self) -> None:
        """Leave the group and stop reading."""
        self._check_open()
        group = self._require_group("unsubscribe()")
        if group.subscription:
            self.on_group_revoke(lost=False)
            group.leave("the consumer unsubscribed")
            group.subscription = ()
        if self.observer is not None:
            self.observer.on_assignment(self, "subscribe", ())

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
        triples = self.commits.to_commit(message, offsets)
        if not triples:
            return None if asynchronous else []
        if asynchronous:
            self.commits.send(group, triples)
            return None
        return self.commits.commit_sync(group, triples)

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
        self.commits.store(triples)

    def committed(
        self, partitions: Iterable[TopicPartition | tuple[str, int]], timeout: float | None = None
    ) -> list[TopicPartition]:
        """Return the group's committed offset of each partition (-1001 when none), waiting for stable ones."""
        self._check_open()
        group = self._require_group("committed()")
        keys = tuple(t.key() for t in partition_list(partitions, "committed()"))
        wait_ms = call_wait_ms(timeout, "committed()", self.config.request_timeout_ms)
        return self.commits.committed(group, keys, wait_ms)

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

    def on_group_assignment(self, tps: list[tuple[str, int]]) -> None:
        """The group gave this consumer ``tps`` (SyncGroup): read them from the committed offsets."""
        self._set_assignment(list(tps))
        self.fetcher.no_committed = set()
        if self._on_assign is not None:
            self._callbacks.append((self._on_assign, [TopicPartition(t, p) for t, p in self.assigned]))
        self.fetcher.kick()
        if self.observer is not None:
            self.observer.on_rebalance(self)

    def on_group_revoke_partitions(self, tps: list[tuple[str, int]], then: Callable[[], None]) -> None:
        """Cooperative rebalance: give back just ``tps``, then run ``then`` (the rejoin).

        As confluent-kafka: with an ``on_revoke`` callback the partitions are given back when it
        runs (in the next poll), and the consumer keeps reading them until then; without one, at
        once. Auto-commit commits first.
        """
        if self.config.enable_auto_commit:
            self.commits.auto_commit()

        def apply() -> None:
            gone = set(tps)
            self._set_assignment([k for k in self.assigned if k not in gone], fresh=False)
            if self.observer is not None:
                self.observer.on_rebalance(self)
            then()

        self._incremental(self._on_revoke, tps, apply)

    def on_group_add_partitions(self, tps: list[tuple[str, int]]) -> None:
        """Cooperative rebalance: add ``tps`` (read from the committed offsets), when ``on_assign`` runs or at once."""

        def apply() -> None:
            self._set_assignment(self.assigned + [k for k in tps if k not in self.assigned], fresh=False)
            self.fetcher.no_committed -= set(tps)
            self.fetcher.kick()
            if self.observer is not None:
                self.observer.on_rebalance(self)

        self._incremental(self._on_assign, tps, apply)

    def _incremental(self, cb: RebalanceCallback | None, tps: list[tuple[str, int]], apply: Callable[[], None]) -> None:
        """Apply an incremental change now (no callback), or queue the callback that applies it.

        confluent-kafka's rebalance handler: the callback gets the partitions; when it calls
        ``incremental_assign``/``incremental_unassign`` with them the change is made then, and when
        it does not, the consumer makes it after the callback returns.
        """
        if cb is None:
            apply()
            return
        self._callbacks.append((self._rebalance_handler(cb, tps, apply), [TopicPartition(t, p) for t, p in tps]))

    def _rebalance_handler(
        self, cb: RebalanceCallback, tps: list[tuple[str, int]], apply: Callable[[], None]
    ) -> RebalanceCallback:
        """Return ``cb`` wrapped to make the change (``apply``) when it asks for it or after it returns.

        A handler outdated by a full revocation (partitions lost, unsubscribed) or a crash since it
        was queued does nothing, as librdkafka drops outdated rebalance events.
        """
        version = self._rebalance_version

        def call(_consumer: Consumer, parts: list[TopicPartition]) -> None:
            if version == self._rebalance_version:
                self._run_rebalance_callback(cb, tps, apply)

        return call

    def _run_rebalance_callback(
        self, cb: RebalanceCallback | None, tps: Iterable[tuple[str, int]], apply: Callable[[], None]
    ) -> None:
        """Call ``cb`` with ``tps``; make the change (``apply``) once: when the callback calls
        ``incremental_assign``/``incremental_unassign`` with exactly them, or after it returns."""
        keys = list(tps)
        pending = [apply]

        def run() -> None:
            if pending:
                pending.pop()()

        if cb is None:
            run()
            return
        self._rebalancing = (frozenset(keys), run)
        try:
            cb(self, [TopicPartition(t, p) for t, p in keys])
        finally:
            self._rebalancing = None
            run()

    def rebalance_protocol(self) -> str:
        """Return ``"COOPERATIVE"`` or ``"EAGER"``: the protocol of the configured assignors (librdkafka's
        ``rd_kafka_rebalance_protocol``), ``"NONE"`` without ``group.id``."""
        return "NONE" if self.group is None else self.group.protocol

    def on_group_revoke(self, *, lost: bool) -> None:
        """Give back every partition (eager rebalance, lost partitions); commit first unless they were lost."""
        self._rebalance_version += 1
        if not lost and self.config.enable_auto_commit:
            self.commits.auto_commit()
        cb = self._on_lost if lost and self._on_lost is not None else self._on_revoke
        if cb is not None and self.assigned:
            self._callbacks.append((cb, [TopicPartition(t, p) for t, p in self.assigned]))
        self._set_assignment([])
        if self.observer is not None:
            self.observer.on_rebalance(self)

    def on_group_increment(
        self,
        revoked: tuple[tuple[str, int], ...],
        added: tuple[tuple[str, int], ...],
        *,
        lost: bool,
        done: Callable[[], None],
        leaving: bool = False,
        current: Callable[[], bool] | None = None,
        keep: Callable[[tuple[tuple[str, int], ...]], tuple[tuple[str, int], ...]] | None = None,
    ) -> None:
        """KIP-848 reconciliation (:mod:`engine.client.consumer_member`), in the next poll as librdkafka does it.

        ``revoked``: on_revoke (on_lost when ``lost``: then also whatever else is assigned when the
        step runs), auto-commit unless lost, then give them up; then, when ``added`` is not empty or
        something was revoked (not lost, not ``leaving``): on_assign(added) and take them; then
        ``done()``. ``current``: when it returns False as the step runs (the member was fenced
        since), the step does nothing -- a stale reconciliation must not assign partitions the
        member no longer has (Kafka's ``ConsumerMembershipManager`` drops a reconciliation whose
        member epoch changed). ``keep``: filters ``added`` as the step runs (the member's newest
        target: a partition the coordinator took back meanwhile is not taken).
        """

        def step(_c: Consumer, _tps: list[TopicPartition]) -> None:
            nonlocal revoked, added
            if current is not None and not current():
                return
            if keep is not None:
                added = keep(added)
            if lost:
                revoked = tuple(sorted(set(revoked) | set(self.assigned)))
            if revoked:
                if not lost and self.config.enable_auto_commit:
                    self.commits.auto_commit()
                gone = set(revoked)
                self._run_rebalance_callback(
                    self._on_lost if lost and self._on_lost is not None else self._on_revoke,
                    revoked,
                    lambda: self._set_assignment([k for k in self.assigned if k not in gone], fresh=False),
                )
            if added or (revoked and not lost and not leaving):
                self._run_rebalance_callback(
                    self._on_assign,
                    added,
                    lambda: self._set_assignment(
                        self.assigned + [k for k in added if k not in self.assigned], fresh=False
                    ),
                )
                self.fetcher.kick()
            if self.observer is not None:
                self.observer.on_rebalance(self)
            done()

        self._callbacks.append((step, []))

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

    def _check_open(self) -> None:
        if self.closed:
            msg = f"consumer {self.name} is closed; create a new consumer"
            raise IllegalStateError(msg)

    def on_crash(self) -> None:
        """A crashed consumer forgets positions and buffered records."""
        super().on_crash()
        self.fetcher.on_crash()
        self._callbacks = deque()
        self._rebalance_version += 1
        self.paused_tps = set()
        self.commits.stored = {}
        if self.group is not None:
            self.assigned = [] if self.group.subscription else self.assigned
            self.group.on_crash()
        if self.observer is not None:
            self.observer.on_crash(self)

    def on_restart(self) -> None:
        """A restarted consumer process rejoins its group (if subscribed) and re-reads committed offsets."""
        super().on_restart()
        self.refresh_metadata()
        if self.group is not None and not self.closed:
            self.commits.start_auto_commit()
            self.group.join()
