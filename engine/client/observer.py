"""Client observers: the optional slot through which a recorder watches what an application does.

Role
----
A producer or consumer has an ``observer`` attribute, None by default. When something sets it,
the client calls the hooks below at the points where the application's calls start, change
something or learn an outcome; ``engine.check.ClientHistory`` implements them to keep a
Jepsen-style client history of a notebook session. The cluster has a matching slot,
``Cluster.client_observer`` (:class:`NewClientObserver`), told of every client it creates, so a
recorder sees clients made after it was attached.

This module only names the protocol: the client layer must not import ``engine.check``, so the
hooks are declared here and implemented above.

Invariants
----------
* With no observer the cost is one ``is None`` test at each hook site (the produce path is
  benchmarked).
* A hook watches and never acts: it must not change the client, draw from a random stream,
  schedule anything or emit a trace event, so a run is the same with or without one
  (same trace, same ``cluster.fingerprint()``). It must not raise either: the client calls it
  in the middle of its own work.
* Hooks are called in simulated-time order on the simulation's single thread.

What it does not do
-------------------
It records nothing itself, keeps no state and reads no clock. Offsets sent with
``send_offsets_to_transaction`` and consumer offset commits have no hook: the history format has
no micro-operation for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from engine.client.accumulator import ProducerBatch
    from engine.client.message import Message
    from engine.errors import KafkaError

__all__ = ["ConsumerObserver", "NewClientObserver", "ProducerObserver"]

Key = tuple[str, int]


class ProducerObserver(Protocol):
    """What a producer tells its observer (``producer.observer``).

    A record accepted by ``produce()`` gets an opaque *token* from :meth:`on_produce`; the
    producer carries it with the record (also while the record waits for metadata) and hands it
    back when the record joins a batch or fails before joining one. Batches are then followed
    by identity until :meth:`on_batch_done`.
    """

    def on_produce(self, producer: Any, topic: str, partition: int, value: Any) -> object | None:
        """``produce()`` accepted a record (arguments and state checked); ``partition`` may be -1.

        Return a token for the record, or None to follow it no further.
        """
        ...

    def on_record_queued(self, producer: Any, token: object, batch: ProducerBatch, index: int) -> None:
        """The record of ``token`` is record ``index`` of ``batch`` (its partition is now fixed)."""
        ...

    def on_record_failed(self, producer: Any, token: object, partition: int, error: KafkaError) -> None:
        """The record of ``token`` failed before joining a batch: it was never sent."""
        ...

    def on_produce_batch(self, producer: Any, batch: ProducerBatch) -> None:
        """``produce_batch()`` put every value it was given in ``batch``, a new batch."""
        ...

    def on_batch_done(self, producer: Any, batch: ProducerBatch, base_offset: int, error: KafkaError | None) -> None:
        """``batch`` is acknowledged (``error`` None; ``base_offset`` -1 when unknown) or failed for good."""
        ...

    def on_transaction(self, producer: Any, action: str, error: BaseException | None) -> None:
        """``begin_transaction()`` returned (``action`` "begin"), or ``commit_transaction()`` /
        ``abort_transaction()`` returned or raised ``error`` (``action`` "commit" / "abort")."""
        ...

    def on_crash(self, client: Any) -> None:
        """The client's process crashed: what it had not delivered is gone."""
        ...


class ConsumerObserver(Protocol):
    """What a consumer tells its observer (``consumer.observer``)."""

    def on_assignment(self, consumer: Any, f: str, restarted: tuple[Key, ...]) -> None:
        """An application call changed the assignment: ``f`` is "assign" (``assign``,
        ``incremental_assign``, ``incremental_unassign``, ``unassign``) or "subscribe"
        (``subscribe``, ``unsubscribe``); ``restarted`` are the keys it gave a start offset."""
        ...

    def on_seek(self, consumer: Any, key: Key) -> None:
        """``seek()`` moved the next offset to read of ``key``."""
        ...

    def on_rebalance(self, consumer: Any) -> None:
        """The group assigned or revoked partitions (``consumer.assigned`` is the new assignment)."""
        ...

    def on_poll_start(self, consumer: Any) -> None:
        """``poll()``/``consume()`` starts waiting for records (its rebalance callbacks have run)."""
        ...

    def on_poll_end(self, consumer: Any, messages: list[Message], error: BaseException | None) -> None:
        """``poll()``/``consume()`` returns ``messages`` (error events included), or raised ``error``."""
        ...

    def on_crash(self, client: Any) -> None:
        """The client's process crashed: it forgot its positions and buffered records."""
        ...


class NewClientObserver(Protocol):
    """What a cluster tells its observer (``cluster.client_observer``)."""

    def on_new_client(self, client: Any) -> None:
        """The cluster created ``client`` (a producer or a consumer); nothing was done with it yet."""
        ...
