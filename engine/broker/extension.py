"""Broker extensions: coordinators that live inside brokers (transactions, consumer groups).

A :class:`BrokerExtension` is created once per broker and kept across crashes (its volatile
state must be dropped in :meth:`on_crash`). The broker calls these hooks; every hook has a
do-nothing default, so an extension implements only what it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.broker.broker import Broker
    from engine.broker.produce import ProduceCall
    from engine.broker.replica import Replica
    from engine.log.records import RecordBatch
    from engine.protocol import PartitionState
    from engine.sim.network import Message


class BrokerExtension:
    """Base class of broker-hosted coordinators."""

    broker: Broker

    def install(self, broker: Broker) -> None:
        """Register request handlers on ``broker.handlers`` (called at start and every restart)."""
        self.broker = broker

    def on_crash(self) -> None:
        """Drop volatile state."""

    def on_restart(self) -> None:
        """The broker came back (handlers are installed again before this)."""

    def on_become_leader(self, state: PartitionState) -> None:
        """This broker now leads ``state``'s partition (coordinators load their partitions here)."""

    def on_become_follower(self, state: PartitionState) -> None:
        """This broker no longer leads ``state``'s partition (coordinators unload it)."""

    def intercept_produce(self, call: ProduceCall, index: int, r: Replica) -> bool:
        """Take over one partition of a produce before it is appended; return True if the extension will finish it.

        The extension later calls ``broker.continue_produce(call, index, verified=True)`` or
        ``broker.produce_error(call, index, ...)``.
        """
        return False

    def on_high_watermark(self, r: Replica) -> None:
        """The HW of a partition this broker leads moved."""

    def on_txn_marker(self, r: Replica, batch: RecordBatch) -> None:
        """A transaction marker was appended to a partition this broker leads."""

    def handles_init_producer_id(self, m: Message) -> bool:
        """Return True if this extension answers an InitProducerId with a transactional id."""
        return False

    def describe(self) -> Any:
        """Return a frozen snapshot of the extension's state for views."""
        return None
