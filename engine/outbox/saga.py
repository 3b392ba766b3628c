"""A saga across two services: an order, its payment, its stock, and the compensation when a late step fails.

Two services, each with its own SQLite database, talk only through Kafka, each publishing through
its transactional outbox (:class:`~engine.outbox.service.Outbox`, sent by a polling relay) and
reading through :class:`SagaConsumer`, an idempotent consumer that applies each event once and
stores its offsets in the same database transaction as the effect.

The saga of one order
---------------------
=====  ==================  ===================================================================  ===============
step   service             one database transaction                                             emits
=====  ==================  ===================================================================  ===============
T1     orders              order ``PENDING``                                                    OrderCreated
T2     payments            **conditional commit**: balance >= amount ? charge (balance -=       PaymentApproved
                           amount, payment ``CHARGED``, ledger line) : payment ``REJECTED``     | PaymentRejected
T3     orders              on PaymentRejected: order ``CANCELLED`` (nothing to undo)            -
T3     orders              on PaymentApproved: stock >= qty ? reserve it, order ``APPROVED``    -
                           : order ``CANCELLED`` (out of stock, after the charge committed)     OrderCancelled
C2     payments            the compensating transaction: payment ``REFUNDED``, balance +=       -
                           amount, ledger line
=====  ==================  ===================================================================  ===============

Every saga so ends all-done (``APPROVED`` + ``CHARGED``) or all-compensated (``CANCELLED`` +
no charge left); :mod:`engine.check.saga` judges it. ``compensate=False`` is the contrast: the
orders service cancels an order it has no stock for but never emits ``OrderCancelled``, so the
customer stays charged for an order that will never ship.

State tables (keyed by the target status, the house style's ``VALID_PREVIOUS``): see
:data:`ORDER_PREVIOUS` and :data:`PAYMENT_PREVIOUS`; any other transition raises
:class:`~engine.errors.IllegalStateError` and rolls the transaction back.

Crash points: ``create_order(crash_at=…)`` takes the service's own (``after-business-row``,
``after-outbox-row``: the order rolls back); ``SagaConsumer.step(crash_at=…)`` takes
``after-poll``, ``before-commit`` (both: nothing applied, read again) and ``after-commit``
(applied and stored: not read again).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from engine.check.history import Poll
from engine.client.message import TopicPartition
from engine.db.database import Database, DatabaseFolder, Transaction
from engine.errors import IllegalStateError, InvalidEventError
from engine.outbox import schema
from engine.outbox.event import ID_HEADER, TYPE_HEADER, Routes, header
from engine.outbox.service import CRASH_POINTS as SERVICE_CRASH_POINTS
from engine.outbox.service import Outbox, ServiceCrashed

if TYPE_CHECKING:
    from engine.sim.world import World

__all__ = [
    "CONSUMER_CRASH_POINTS",
    "ORDER_PREVIOUS",
    "PAYMENT_PREVIOUS",
    "ROUTES",
    "ConsumerCrashed",
    "OrdersService",
    "PaymentsService",
    "SagaConsumer",
]

#: Aggregate type -> topic: each service publishes its own events to its own topic.
ROUTES = Routes({"order": "order-events", "payment": "payment-events"})
CONSUMER_CRASH_POINTS = ("after-poll", "before-commit", "after-commit")

#: Order status -> the statuses it may follow (None: the row does not exist yet).
ORDER_PREVIOUS: dict[str, frozenset[str | None]] = {
    "PENDING": frozenset({None}),
    "APPROVED": frozenset({"PENDING"}),
    "CANCELLED": frozenset({"PENDING"}),
}
#: Payment status -> the statuses it may follow (None: no payment yet).
PAYMENT_PREVIOUS: dict[str, frozenset[str | None]] = {
    "CHARGED": frozenset({None}),
    "REJECTED": frozenset({None}),
    "REFUNDED": frozenset({"CHARGED"}),
}

# The outbox tables of engine.outbox.schema (outbox, change log, relay position), without its orders table.
_OUTBOX = schema.OUTBOX
_INBOX = """
CREATE TABLE IF NOT EXISTS processed_messages (
    event_id TEXT PRIMARY KEY, topic TEXT NOT NULL, partition INTEGER NOT NULL,
    "offset" INTEGER NOT NULL, processed_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS consumer_offsets (
    topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL, PRIMARY KEY (topic, partition)
);
"""
ORDERS_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS orders (
    order_id TEXT PRIMARY KEY, customer TEXT NOT NULL, amount INTEGER NOT NULL, item TEXT NOT NULL,
    qty INTEGER NOT NULL, status TEXT NOT NULL, reason TEXT, updated_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS stock (item TEXT PRIMARY KEY, available INTEGER NOT NULL, opening INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS reservations (order_id TEXT PRIMARY KEY, item TEXT NOT NULL, qty INTEGER NOT NULL);
"""
    + _OUTBOX
    + _INBOX
)
PAYMENTS_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS accounts (customer TEXT PRIMARY KEY, balance INTEGER NOT NULL, opening INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS payments (
    order_id TEXT PRIMARY KEY, customer TEXT NOT NULL, amount INTEGER NOT NULL, status TEXT NOT NULL,
    updated_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    entry_id INTEGER PRIMARY KEY AUTOINCREMENT, order_id TEXT NOT NULL, customer TEXT NOT NULL,
    delta INTEGER NOT NULL, kind TEXT NOT NULL, created_ms INTEGER NOT NULL
);
"""
    + _OUTBOX
    + _INBOX
)

Handler = Callable[[Transaction, str, dict[str, Any]], None]


class ConsumerCrashed(Exception):  # noqa: N818 - it says what happened
    """The consumer died at a named crash point; restart its database node and start a new one."""


def _check_transition(table: dict[str, frozenset[str | None]], what: str, key: str, old: Any, new: str) -> None:
    if old not in table[new]:
        raise IllegalStateError(f"{what} {key} cannot go from {old or 'nothing'} to {new}")


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidEventError(f"malformed payload: {name} must be a positive int, got {value!r}")


class _Service:
    """What both services share: the database, the outbox, a second connection for their consumer."""

    def __init__(self, world: World, name: str, folder: DatabaseFolder | None, ddl: str) -> None:
        self.world = world
        self.db = Database(world, name, folder, ddl)
        self.outbox = Outbox(self.db, ROUTES)
        self._ddl = ddl

    def connection(self, client: str) -> Database:
        """Return another connection to the service's file (node ``db-<service>-<client>``), e.g. for its consumer."""
        return Database(self.world, self.db.service, self.db.folder, self._ddl, client=client)

    def _add_event(self, txn: Transaction, aggregate: str, key: str, event_type: str, payload: dict[str, Any]) -> None:
        self.outbox.add(txn, self.outbox.new_event(aggregate, key, event_type, {"event": event_type, **payload}))


class OrdersService(_Service):
    """The orders service: orders, stock and reservations; T1 and T3 of the saga.

    ``stock`` maps item -> units (written once, when the file is new); ``compensate=False`` is the
    contrast that cancels an out-of-stock order without telling payments.
    """

    def __init__(
        self,
        world: World,
        folder: DatabaseFolder | None = None,
        *,
        stock: Mapping[str, int] | None = None,
        compensate: bool = True,
        name: str = "orders",
    ) -> None:
        super().__init__(world, name, folder, ORDERS_SCHEMA)
        self.compensate = compensate
        with self.db.transaction("seed-stock") as txn:
            for item, units in sorted((stock or {}).items()):
                txn.execute(
                    "INSERT OR IGNORE INTO stock (item, available, opening) VALUES (?, ?, ?)", (item, units, units)
                )

    def create_order(
        self, order_id: str, customer: str, amount: int, item: str, qty: int = 1, *, crash_at: str | None = None
    ) -> None:
        """T1: write the order ``PENDING`` and its ``OrderCreated`` event in one transaction."""
        if crash_at is not None and crash_at not in SERVICE_CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; use one of {', '.join(SERVICE_CRASH_POINTS)}")
        for name, value in (("order_id", order_id), ("customer", customer), ("item", item)):
            if not isinstance(value, str) or not value:
                raise InvalidEventError(f"malformed payload: {name} must be a non-empty str, got {value!r}")
        _positive("amount", amount)
        _positive("qty", qty)
        with self.db.transaction("create-order") as txn:
            if not txn.query("SELECT 1 FROM stock WHERE item = ?", (item,)):
                raise InvalidEventError(f"unknown item {item!r}: the orders service has no stock row for it")
            txn.execute(
                "INSERT INTO orders (order_id, customer, amount, item, qty, status, updated_ms)"
                " VALUES (?, ?, ?, ?, ?, 'PENDING', ?)",
                (order_id, customer, amount, item, qty, self.world.now_ms),
            )
            if crash_at == "after-business-row":
                self._crash("after writing the order row, before the outbox row")
            self._add_event(
                txn, "order", order_id, "OrderCreated", {"order_id": order_id, "customer": customer, "amount": amount}
            )
            if crash_at == "after-outbox-row":
                self._crash("after writing the outbox row, before the commit")

    def _crash(self, where: str) -> None:
        self.world.crash(self.db.name)
        raise ServiceCrashed(f"{self.db.service} crashed {where}")

    def handle(self, txn: Transaction, event_type: str, payload: dict[str, Any]) -> None:
        """T3: settle an order on its payment's outcome (other event types are not the orders service's)."""
        if event_type not in ("PaymentApproved", "PaymentRejected"):
            return
        order_id = str(payload["order_id"])
        rows = txn.query("SELECT customer, amount, item, qty, status FROM orders WHERE order_id = ?", (order_id,))
        if not rows:
            raise IllegalStateError(f"{event_type} for order {order_id}, which the orders service never committed")
        customer, amount, item, qty, status = rows[0]
        if event_type == "PaymentRejected":
            self._set(txn, order_id, status, "CANCELLED", "payment-rejected")
        elif txn.query("SELECT available FROM stock WHERE item = ?", (item,))[0][0] >= qty:
            txn.execute("UPDATE stock SET available = available - ? WHERE item = ?", (qty, item))
            txn.execute("INSERT INTO reservations (order_id, item, qty) VALUES (?, ?, ?)", (order_id, item, qty))
            self._set(txn, order_id, status, "APPROVED", None)
        else:  # out of stock after the charge committed in the other service
            self._set(txn, order_id, status, "CANCELLED", "out-of-stock")
            if self.compensate:  # ask payments to undo the charge: the compensating transaction
                body = {"order_id": order_id, "customer": customer, "amount": amount, "reason": "out-of-stock"}
                self._add_event(txn, "order", order_id, "OrderCancelled", body)

    def _set(self, txn: Transaction, order_id: str, old: str, new: str, reason: str | None) -> None:
        _check_transition(ORDER_PREVIOUS, "order", order_id, old, new)
        txn.execute(
            "UPDATE orders SET status = ?, reason = ?, updated_ms = ? WHERE order_id = ?",
            (new, reason, self.world.now_ms, order_id),
        )


class PaymentsService(_Service):
    """The payments service: accounts, payments and a ledger; T2 (the conditional commit) and C2 (the refund).

    ``accounts`` maps customer -> opening balance (written once, when the file is new).
    """

    def __init__(
        self, world: World, folder: DatabaseFolder | None = None, *, accounts: Mapping[str, int] | None = None
    ) -> None:
        super().__init__(world, "payments", folder, PAYMENTS_SCHEMA)
        with self.db.transaction("seed-accounts") as txn:
            for customer, balance in sorted((accounts or {}).items()):
                txn.execute(
                    "INSERT OR IGNORE INTO accounts (customer, balance, opening) VALUES (?, ?, ?)",
                    (customer, balance, balance),
                )

    def handle(self, txn: Transaction, event_type: str, payload: dict[str, Any]) -> None:
        """Charge or reject on ``OrderCreated``; refund on ``OrderCancelled``; ignore the rest."""
        if event_type == "OrderCreated":
            self._charge(txn, str(payload["order_id"]), str(payload["customer"]), int(payload["amount"]))
        elif event_type == "OrderCancelled":
            self._refund(txn, str(payload["order_id"]))

    def _charge(self, txn: Transaction, order_id: str, customer: str, amount: int) -> None:
        """T2, the conditional commit: charge and approve, or reject and charge nothing, in the caller's transaction."""
        now = self.world.now_ms
        old = txn.query("SELECT status FROM payments WHERE order_id = ?", (order_id,))
        rows = txn.query("SELECT balance FROM accounts WHERE customer = ?", (customer,))
        balance = rows[0][0] if rows else 0
        status = "CHARGED" if balance >= amount else "REJECTED"
        _check_transition(PAYMENT_PREVIOUS, "payment", order_id, old[0][0] if old else None, status)
        txn.execute(
            "INSERT INTO payments (order_id, customer, amount, status, updated_ms) VALUES (?, ?, ?, ?, ?)",
            (order_id, customer, amount, status, now),
        )
        body = {"order_id": order_id, "amount": amount}
        if status == "REJECTED":
            reason = "no account" if not rows else f"balance {balance} < amount {amount}"
            self._add_event(txn, "payment", order_id, "PaymentRejected", {**body, "reason": reason})
            return
        txn.execute("UPDATE accounts SET balance = balance - ? WHERE customer = ?", (amount, customer))
        txn.execute(
            "INSERT INTO ledger (order_id, customer, delta, kind, created_ms) VALUES (?, ?, ?, 'charge', ?)",
            (order_id, customer, -amount, now),
        )
        self._add_event(txn, "payment", order_id, "PaymentApproved", body)

    def _refund(self, txn: Transaction, order_id: str) -> None:
        """C2, the compensating transaction: undo a committed charge."""
        rows = txn.query("SELECT customer, amount, status FROM payments WHERE order_id = ?", (order_id,))
        _check_transition(PAYMENT_PREVIOUS, "payment", order_id, rows[0][2] if rows else None, "REFUNDED")
        customer, amount, _ = rows[0]
        now = self.world.now_ms
        txn.execute("UPDATE payments SET status = 'REFUNDED', updated_ms = ? WHERE order_id = ?", (now, order_id))
        txn.execute("UPDATE accounts SET balance = balance + ? WHERE customer = ?", (amount, customer))
        txn.execute(
            "INSERT INTO ledger (order_id, customer, delta, kind, created_ms) VALUES (?, ?, ?, 'refund', ?)",
            (order_id, customer, amount, now),
        )


class SagaConsumer:
    """An idempotent consumer: per batch, one transaction applies each new event, records its id, stores offsets.

    ``handle(txn, event_type, payload)`` is the service's effect (it may add outbox events to
    ``txn``). ``dedup=False`` applies every copy a relay re-sent. ``history=(recorder, process)``
    records each poll for the black-box checker.
    """

    def __init__(
        self,
        db: Database,
        consumer: Any,
        partitions: list[tuple[str, int]],
        handle: Handler,
        *,
        dedup: bool = True,
        history: tuple[Any, int] | None = None,
    ) -> None:
        if not partitions:
            raise ValueError("partitions must list the (topic, partition) pairs the consumer reads")
        self.db, self.consumer, self.handle, self.dedup, self.history = db, consumer, handle, dedup, history
        self.applied = self.skipped = 0
        self.crashed = False
        stored = {(t, p): o for t, p, o in db.query("SELECT topic, partition, next_offset FROM consumer_offsets")}
        consumer.assign([TopicPartition(t, p, stored.get((t, p), 0)) for t, p in sorted(partitions)])
        if history is not None:
            op = history[0].invoke(history[1], "assign", (), db.world.now_ms, keys=sorted(partitions))
            history[0].complete(op, "ok", (), db.world.now_ms)

    def _crash(self, where: str) -> None:
        self.crashed = True
        for node in (self.consumer, self.db):
            if node.is_up:
                self.db.world.crash(node.name)
        raise ConsumerCrashed(f"consumer of {self.db.service} crashed {where}")

    def step(self, max_records: int = 50, timeout: float = 0.05, crash_at: str | None = None) -> int:
        """Read one batch and apply it in one transaction; return how many records were read."""
        if crash_at is not None and crash_at not in CONSUMER_CRASH_POINTS:
            raise ValueError(f"unknown crash point {crash_at!r}; use one of {', '.join(CONSUMER_CRASH_POINTS)}")
        if self.crashed:
            raise IllegalStateError("this consumer crashed; restart its database and start a new consumer")
        now = self.db.world.now_ms
        op = self.history[0].invoke(self.history[1], "poll", (), now) if self.history is not None else None
        msgs = [m for m in self.consumer.consume(max_records, timeout=timeout) if m.error() is None]
        if op is not None:
            polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs]
            self.history[0].complete(op, "ok", polls, self.db.world.now_ms)  # type: ignore[index]
        if not msgs:
            return 0
        if crash_at == "after-poll":
            self._crash("after reading a batch, before applying it")
        with self.db.transaction(f"{self.db.service}-consume") as txn:
            for m in msgs:
                self._apply(txn, m)
            if crash_at == "before-commit":
                self._crash("after applying a batch, before the commit")
        if crash_at == "after-commit":
            self._crash("after committing a batch")
        return len(msgs)

    def _apply(self, txn: Transaction, m: Any) -> None:
        txn.execute(
            "INSERT INTO consumer_offsets (topic, partition, next_offset) VALUES (?, ?, ?)"
            " ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset",
            (m.topic(), m.partition(), m.offset() + 1),
        )
        event_id, event_type = header(m.headers(), ID_HEADER), header(m.headers(), TYPE_HEADER)
        if event_id is None or event_type is None:  # not an outbox event (e.g. the harness's sentinels)
            return
        if self.dedup and txn.query("SELECT 1 FROM processed_messages WHERE event_id = ?", (event_id,)):
            self.skipped += 1
            return
        self.handle(txn, event_type, json.loads(m.value()))
        txn.execute(
            'INSERT OR IGNORE INTO processed_messages (event_id, topic, partition, "offset", processed_ms)'
            " VALUES (?, ?, ?, ?, ?)",
            (event_id, m.topic(), m.partition(), m.offset(), self.db.world.now_ms),
        )
        self.applied += 1
