"""The consumer's offset commits: what ``commit()`` sends, the offset store, auto-commit.

What is committed
-----------------
``commit(message)`` sends ``message.offset() + 1``; ``commit(offsets=...)`` the offsets given
(those below 0 are skipped). Without either, and for auto-commit, it depends on librdkafka's
``enable.auto.offset.store``:

* true (the default): each assigned partition's *position* after the records the application was
  given (Java's ``commitSync()``: past a transaction marker that follows them);
* false: only what ``store_offsets()`` stored (``message.offset() + 1``, or the offsets given) for
  partitions still assigned; nothing stored, nothing committed.

When
----
``commit()`` is synchronous by default: it runs the simulation until the coordinator answers
(retrying coordinator errors for ``request.timeout.ms``) and raises the answer's error, a lost
generation as ``CommitFailedException`` (Kafka's ``commitSync``). ``enable.auto.commit`` (off by
default here) commits every ``auto.commit.interval.ms`` and before each eager revocation, while
the member is STABLE. The OffsetCommit itself is sent by the group member
(:meth:`engine.client.group_member.GroupMember.commit`); transactional commits are the
producer's ``send_offsets_to_transaction`` (:mod:`engine.group.txn_offsets`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from engine import trace_events as events
from engine.client.base import wait_for
from engine.client.message import OFFSET_INVALID, Message, TopicPartition
from engine.errors import CommitFailedException, ErrorCode, KafkaError, TimeoutException, exception_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.base import ClientNode
    from engine.client.fetcher import Fetcher
    from engine.client.group_member import GroupMember
    from engine.config import ConsumerConfig

Key = tuple[str, int]
Offsets = tuple[tuple[str, int, int], ...]


class CommitSource(Protocol):
    """What the offset commits read of their consumer: the assignment, its fetcher's positions, its group."""

    assigned: list[tuple[str, int]]
    closed: bool
    group: GroupMember | None
    fetcher: Fetcher


class OffsetCommits:
    """One consumer's offset store and commits to its group."""

    def __init__(self, client: ClientNode, consumer: CommitSource, config: ConsumerConfig) -> None:
        self.client = client
        self.consumer = consumer
        self.config = config
        #: Offsets ``store_offsets()`` stored for the next commit (``enable.auto.offset.store`` false).
        self.stored: dict[Key, int] = {}
        #: Told ``(offsets, code)`` when a commit made without waiting (:meth:`send`: an asynchronous
        #: or automatic one) is answered; the drop-in reports those to ``on_commit``, as librdkafka.
        self.on_sent_answered: Callable[[Offsets, ErrorCode], None] | None = None

    def retain(self, kept: set[Key]) -> None:
        """The assignment became ``kept``: forget what was stored for the other partitions."""
        self.stored = {k: v for k, v in self.stored.items() if k in kept}

    def store(self, offsets: Offsets) -> None:
        """Store ``(topic, partition, offset)`` triples for the next commit."""
        for t, p, o in offsets:
            self.stored[(t, p)] = o

    def to_commit(self, message: Message | None, offsets: list[TopicPartition] | None) -> Offsets:
        """Return what a commit sends (see the module docstring)."""
        c = self.consumer
        if message is not None:
            return ((message.topic(), message.partition(), message.offset() + 1),)
        if offsets is not None:
            return tuple((t.topic, t.partition, t.offset) for t in offsets if t.offset >= 0)
        if not self.config.enable_auto_offset_store:
            return tuple((t, p, o) for (t, p), o in sorted(self.stored.items()) if (t, p) in c.assigned)
        out = []
        for key in c.assigned:
            pos = c.fetcher.position_for_app(key)
            if pos >= 0:
                out.append((key[0], key[1], pos))
        return tuple(out)

    def send(self, group: GroupMember, offsets: Offsets) -> None:
        """Commit without waiting; the answer is only traced."""
        end = self.client.world.now_ms + self.config.request_timeout_ms
        group.commit(offsets, lambda code: self._sent_answered(offsets, code), retry_until_ms=end)

    def _sent_answered(self, offsets: Offsets, code: ErrorCode) -> None:
        self._done(offsets, code)
        if self.on_sent_answered is not None:
            self.on_sent_answered(offsets, code)

    def commit_sync(self, group: GroupMember, offsets: Offsets) -> list[TopicPartition]:
        """Commit and run the simulation until the answer; raise its error, or TimeoutException."""
        end = self.client.world.now_ms + self.config.request_timeout_ms
        code: ErrorCode | None = wait_for(
            self.client, lambda done: group.commit(offsets, done, retry_until_ms=end), end
        )
        if code is None:
            raise TimeoutException(
                f"commit of {len(offsets)} offsets got no answer within {self.config.request_timeout_ms} ms",
                group=group.group_id,
            )
        self._done(offsets, code)
        if code is not ErrorCode.NONE:
            raise commit_exception(code, group.group_id)
        return [TopicPartition(t, p, o) for t, p, o in offsets]

    def committed(self, group: GroupMember, keys: tuple[Key, ...], wait_ms: int) -> list[TopicPartition]:
        """Fetch the group's committed offsets of ``keys`` (-1001 when none), waiting up to ``wait_ms``."""
        n = self.client
        answer: tuple[ErrorCode, dict[Key, int]] | None = wait_for(
            n,
            lambda done: group.fetch_committed(keys, lambda code, offs: done((code, offs))),
            n.world.now_ms + wait_ms,
        )
        if answer is None:
            raise TimeoutException(
                "committed() got no answer in time (an unstable offset or no coordinator)", group=group.group_id
            )
        code, offs = answer
        if code is not ErrorCode.NONE:
            raise exception_for(code, group=group.group_id)
        return [TopicPartition(t, p, o if (o := offs.get((t, p), -1)) >= 0 else OFFSET_INVALID) for t, p in keys]

    def _done(self, offsets: Offsets, code: ErrorCode) -> None:
        n = self.client
        n.world.trace.emit(
            n.name,
            "state",
            events.CONSUMER_COMMIT,
            ("error", code.name),
            ("offsets", [f"{t}-{p}@{o}" for t, p, o in offsets]),
        )

    # -- auto commit ------------------------------------------------------------------------

    def start_auto_commit(self) -> None:
        """Start the ``auto.commit.interval.ms`` timer (with ``group.id`` and ``enable.auto.commit``)."""
        if self.consumer.group is not None and self.config.enable_auto_commit:
            self.client.set_timer(self.config.auto_commit_interval_ms, self._auto_commit_tick)

    def _auto_commit_tick(self) -> None:
        if self.consumer.closed:
            return
        self.auto_commit()
        self.client.set_timer(self.config.auto_commit_interval_ms, self._auto_commit_tick)

    def auto_commit(self) -> None:
        """Commit the positions (or stored offsets) now, unless a rebalance is under way."""
        c = self.consumer
        group = c.group
        if group is None or not c.assigned or (group.subscription and not group.may_auto_commit()):
            return
        offsets = self.to_commit(None, None)
        if offsets:
            self.send(group, offsets)


def commit_exception(code: ErrorCode, group_id: str) -> KafkaError:
    """The exception ``commit()`` raises (Kafka's ``commitSync``: a lost generation is CommitFailed)."""
    if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
        return CommitFailedException(
            f"Commit cannot be completed: the group {group_id!r} rebalanced and gave the partitions to another "
            f"member ({code.name}); poll() to rejoin, then process and commit again",
            group=group_id,
            error=code.name,
        )
    return exception_for(code, group=group_id)
