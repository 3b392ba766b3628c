"""A service that writes its business row and its event in one database transaction (the outbox).

:class:`Outbox` adds an event to the ``outbox`` table inside the caller's transaction; a relay
(:mod:`engine.outbox.relay`) publishes it later. Because the business row and the event commit
or roll back together, an event exists exactly when its business row does: no lost event (the
dual write's commit-then-publish gap) and no phantom event (its publish-then-roll-back gap).

Modes
-----
``polling``       the row stays in ``outbox``; the polling relay marks it sent (``sent_ms``)
``log-tailing``   the row is inserted and deleted in the same transaction; the change log
                  (``outbox_changes``, fed by a trigger on insert) keeps the event and the
                  ``outbox`` table stays empty (Debezium's recommended use)

:class:`OrderService` is the example service: ``place_order`` writes an ``orders`` row and an
``OrderPlaced`` event. Its dual-write methods are the contrasts: they publish to Kafka directly,
before or after the database commit, and lose or invent events when a crash falls in between.

Crash points
------------
``crash_at`` names where a call dies (the database connection is closed, so an open transaction
rolls back, and :class:`ServiceCrashed` is raised): ``after-business-row`` and
``after-outbox-row`` inside the transaction; the dual writes add ``between-commit-and-publish``
and ``after-publish-before-commit``.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from engine.db.database import Database, DatabaseFolder, Transaction
from engine.errors import InvalidEventError, KafkaError
from engine.outbox import schema
from engine.outbox.event import OutboxEvent, Routes, make_event, record_of

if TYPE_CHECKING:
    from engine.sim.world import World

__all__ = ["CRASH_POINTS", "DUAL_WRITE_CRASH_POINTS", "MODES", "OrderService", "Outbox", "ServiceCrashed"]

MODES = ("polling", "log-tailing")
CRASH_POINTS = ("after-business-row", "after-outbox-row")
DUAL_WRITE_CRASH_POINTS = ("between-commit-and-publish", "after-publish-before-commit")


class ServiceCrashed(Exception):  # noqa: N818 - it says what happened, like the world's faults
    """The service died at a named crash point; its database node is down until restarted."""


class Outbox:
    """The ``outbox`` table of one service database, written inside the service's transactions."""

    def __init__(self, db: Database, routes: Routes, mode: str = "polling") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown outbox mode {mode!r}; use one of {', '.join(MODES)}")
        if not isinstance(routes, Routes):
            raise TypeError(f"routes must be an engine.outbox.Routes, got {routes!r}")
        self.db = db
        self.routes = routes
        self.mode = mode
        self._ids = db.world.rng.stream(f"outbox:{db.service}")

    def new_event(self, aggregate_type: str, aggregate_id: str, event_type: str, payload: Any) -> OutboxEvent:
        """Check an event and give it a fresh id (a UUID drawn from the service's seeded stream)."""
        event_id = str(uuid.UUID(int=self._ids.getrandbits(128), version=4))
        event, _topic = make_event(
            self.routes, event_id, aggregate_type, aggregate_id, event_type, payload, self.db.world.now_ms
        )
        return event

    def add(self, txn: Transaction, event: OutboxEvent) -> None:
        """Write the event in the caller's transaction (log-tailing: insert, then delete at once)."""
        txn.execute(
            "INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload, created_ms)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (event.id, event.aggregate_type, event.aggregate_id, event.event_type, event.payload, event.created_ms),
        )
        if self.mode == "log-tailing":
            txn.execute("DELETE FROM outbox WHERE id = ?", (event.id,))


class OrderService:
    """The order service: an ``orders`` table and an outbox in one SQLite file.

    Parameters
    ----------
    world
        The simulated world (``cluster.world``).
    name
        The service name: the database node is ``db-<name>``, the file ``<name>.sqlite``.
    folder
        The run's :class:`~engine.db.database.DatabaseFolder` (a fresh temporary one when None).
    routes
        Aggregate type -> topic; ``{"order": "orders"}`` by default.
    mode
        ``polling`` or ``log-tailing`` (see the module docstring).
    """

    def __init__(
        self,
        world: World,
        name: str = "orders",
        folder: DatabaseFolder | None = None,
        routes: Routes | None = None,
        mode: str = "polling",
    ) -> None:
        if mode not in MODES:  # checked before the database node exists, so a refused call leaves nothing behind
            raise ValueError(f"unknown outbox mode {mode!r}; use one of {', '.join(MODES)}")
        self.db = Database(world, name, folder, schema.SERVICE)
        self.outbox = Outbox(self.db, routes or Routes({"order": "orders"}), mode)
        self.world = world

    def _crash(self, where: str) -> None:
        self.world.crash(self.db.name)
        raise ServiceCrashed(f"{self.db.service} crashed {where}")

    def _order_event(self, order_id: Any, customer: Any, amount: Any, aggregate_type: str) -> OutboxEvent:
        if not isinstance(order_id, str) or not order_id:
            raise InvalidEventError(f"order_id must be a non-empty str, got {order_id!r}")
        if not isinstance(customer, str) or not customer:
            raise InvalidEventError(f"malformed payload: customer must be a non-empty str, got {customer!r}")
        if isinstance(amount, bool) or not isinstance(amount, int) or amount <= 0:
            raise InvalidEventError(f"malformed payload: amount must be a positive int (cents), got {amount!r}")
        payload = {"order_id": order_id, "customer": customer, "amount": amount}
        return self.outbox.new_event(aggregate_type, order_id, "OrderPlaced", payload)

    def place_order(
        self,
        order_id: str,
        customer: Any,
        amount: Any,
        *,
        aggregate_type: str = "order",
        extra: Any = None,
        crash_at: str | None = None,
    ) -> OutboxEvent:
        """Write the order and its ``OrderPlaced`` event in one transaction; return the event.

        The order row is written first and the event checked after it, inside the transaction: a
        malformed payload (a bad customer or amount, an ``extra`` that is not JSON) or an unknown
        ``aggregate_type`` raises :class:`~engine.errors.InvalidEventError`, the transaction rolls
        back, and neither row exists. ``crash_at`` (one of :data:`CRASH_POINTS`) kills the service there.
        """
        if crash_at is not None and crash_at not in CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; use one of {', '.join(CRASH_POINTS)}")
        with self.db.transaction("place-order") as txn:
            txn.execute(
                "INSERT INTO orders (order_id, customer, amount, status, created_ms) VALUES (?, ?, ?, 'PLACED', ?)",
                (str(order_id), str(customer), amount if isinstance(amount, int) else 0, self.world.now_ms),
            )
            if crash_at == "after-business-row":
                self._crash("after writing the order row, before the outbox row")
            event = self._order_event(order_id, customer, amount, aggregate_type)
            if extra is not None:
                payload = {**json.loads(event.payload), "extra": extra}
                event = self.outbox.new_event(aggregate_type, order_id, "OrderPlaced", payload)
            self.outbox.add(txn, event)
            if crash_at == "after-outbox-row":
                self._crash("after writing the outbox row, before the commit")
        return event

    # -- the dual write (contrasts) -------------------------------------------------------------

    def place_order_dual_write(
        self,
        producer: Any,
        order_id: str,
        customer: str,
        amount: int,
        *,
        publish_first: bool = False,
        crash_at: str | None = None,
        timeout: float = 30.0,
    ) -> OutboxEvent:
        """The anti-pattern: write the order, and publish its event to Kafka directly, in two systems.

        ``publish_first=False``: commit, then publish; a crash ``between-commit-and-publish``
        keeps the order and loses its event. ``publish_first=True``: publish (and wait for the
        ack) inside the open transaction, then commit; a crash ``after-publish-before-commit``
        rolls the order back while its event is already in Kafka (a phantom).
        """
        if crash_at is not None and crash_at not in DUAL_WRITE_CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; use one of {', '.join(DUAL_WRITE_CRASH_POINTS)}")
        event = self._order_event(order_id, customer, amount, "order")
        topic = self.outbox.routes.topic("order")
        if publish_first:
            with self.db.transaction("place-order") as txn:
                txn.execute(
                    "INSERT INTO orders (order_id, customer, amount, status, created_ms) VALUES (?, ?, ?, 'PLACED', ?)",
                    (order_id, customer, amount, self.world.now_ms),
                )
                _publish(producer, topic, event, timeout)
                if crash_at == "after-publish-before-commit":
                    self._crash("after publishing the event, before the database commit")
            return event
        with self.db.transaction("place-order") as txn:
            txn.execute(
                "INSERT INTO orders (order_id, customer, amount, status, created_ms) VALUES (?, ?, ?, 'PLACED', ?)",
                (order_id, customer, amount, self.world.now_ms),
            )
        if crash_at == "between-commit-and-publish":
            self._crash("after the database commit, before publishing the event")
        _publish(producer, topic, event, timeout)
        return event

    # -- reading ----------------------------------------------------------------------------------

    def committed_orders(self) -> list[str]:
        """Return the ids of the committed orders, sorted."""
        return [r[0] for r in self.db.query("SELECT order_id FROM orders ORDER BY order_id")]


def _publish(producer: Any, topic: str, event: OutboxEvent, timeout: float) -> None:
    """Produce one event and wait for its acknowledgement; raise the delivery error."""
    box: list[Any] = []
    producer.produce(topic, on_delivery=lambda err, msg: box.append(err), **record_of(event))
    producer.flush(timeout=timeout)
    if not box:
        raise KafkaError(f"no acknowledgement for event {event.id} within {timeout} s")
    if box[0] is not None:
        raise box[0]
