"""A saga as a scenario: orders and payments, two SQLite services, compensation through Kafka, crashes everywhere.

:class:`SagaWorkload` runs five kinds of process in one simulated world: the orders API (creates
orders, crashing now and then mid-transaction), one polling relay per service (crashing at its
crash points; a restarted relay is a new process), one idempotent consumer per service
(crashing before and after its commit) and, from the fault plan, broker crashes and lost acks.
The saga itself is :mod:`engine.outbox.saga`: order ``PENDING`` -> payment charged or rejected
(the conditional commit) -> stock reserved, or the order cancelled and the charge refunded (the
compensating transaction, in the other service).

The verdict joins the EOS checks of the client history (relay sends, consumer polls; both topics
are at-least-once, so a re-sent event is an allowed duplicate) with :func:`engine.check.saga.check_sagas`
over the two database files: every saga all-done or all-compensated, and money conserved.

The contrast takes the compensation away (the orders service cancels an out-of-stock order and
never says so): a positive control that passes only when the checker reports ``saga-incomplete``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from engine.check.saga import check_sagas, outcomes, read_rows
from engine.db.database import Database, DatabaseFolder
from engine.outbox import relay as relays
from engine.outbox import saga
from engine.outbox.service import CRASH_POINTS as SERVICE_CRASH_POINTS
from engine.outbox.service import ServiceCrashed
from engine.scenarios.fault_plans import crashes_and_lost_acks
from engine.scenarios.harness import FAST_FAILOVER, Process, Run, Sleep, Spec, TopicSpec, relay_producer_config
from engine.scenarios.supervisor import Crashes, counter, relay_crashes, supervise, supervise_consumer
from engine.scenarios.workloads import Workload

__all__ = ["SAGA_SPECS", "SagaState", "SagaWorkload"]

TOPICS = ("order-events", "payment-events")
ITEMS = ("book", "lamp", "mug")
CUSTOMERS = tuple(f"customer-{i}" for i in range(1, 7))


@dataclasses.dataclass
class SagaState:
    """What a saga run keeps: its two databases (the files live as long as the result keeps them), its counts."""

    folder: DatabaseFolder
    orders_db: Path
    payments_db: Path
    #: orders the API created (a crashed create rolled back and is not counted)
    created: int = 0
    service_crashes: int = 0
    relay_crashes: int = 0
    consumer_crashes: int = 0
    #: redeliveries the consumers' processed-messages tables dropped
    duplicates_dropped: int = 0
    api_done: bool = False
    #: the verdict's counts: how the sagas ended, the payments refunded and rejected, money conserved
    done: int = 0
    compensated: int = 0
    incomplete: int = 0
    refunded: int = 0
    rejected: int = 0
    money_conserved: bool = True


@dataclasses.dataclass(frozen=True)
class SagaWorkload(Workload):
    """Orders -> payments -> stock, with compensation; service, relay, consumer and broker crashes."""

    orders: int = 40
    compensate: bool = True
    units: int = 5  #: stock per item: small, so some charged orders find no stock and are compensated
    service_crash_p: float = 0.05
    relay_crash_p: float = 0.1
    consumer_crash_p: float = 0.1
    poll_ms: int = 40

    # -- set up ---------------------------------------------------------------------------------

    def start(self, run: Run) -> None:
        """Open both databases in a fresh folder and spawn the API, two relays and two consumers."""
        rng = run.rng
        folder = DatabaseFolder()
        accounts = {c: rng.randint(30, 120) * 100 for c in CUSTOMERS}
        orders = saga.OrdersService(
            run.world, folder, stock=dict.fromkeys(ITEMS, self.units), compensate=self.compensate
        )
        payments = saga.PaymentsService(run.world, folder, accounts=accounts)
        state = SagaState(folder, orders.db.path, payments.db.path)
        run.state = state
        run.spawn(lambda r, proc: self._api(r, orders, state))
        for service in (orders, payments):
            recorded: set[str] = set()
            run.spawn(lambda r, proc, s=service, rec=recorded: self._relay(r, proc, s, rec, state), service=True)
        run.spawn(lambda r, proc: self._consumer(r, proc, orders, "payment-events", state), service=True)
        run.spawn(lambda r, proc: self._consumer(r, proc, payments, "order-events", state), service=True)

    # -- the orders API -------------------------------------------------------------------------

    def _api(self, run: Run, service: saga.OrdersService, state: SagaState) -> Process:
        rng = run.rng
        for i in range(self.orders):
            customer, item = rng.choice(CUSTOMERS), rng.choice(ITEMS)
            amount, qty = rng.randint(5, 30) * 100, rng.randint(1, 2)
            point = rng.choice(SERVICE_CRASH_POINTS) if rng.random() < self.service_crash_p else None
            while not service.db.is_up:
                yield Sleep(20)
            try:
                service.create_order(f"order-{i:04d}", customer, amount, item, qty, crash_at=point)
                state.created += 1
            except ServiceCrashed:  # the order rolled back: it never existed, in either service
                state.service_crashes += 1
                yield Sleep(rng.randint(50, 200))
                run.restart_if_down(service.db)
            yield Sleep(rng.randint(5, 30))
        state.api_done = True

    # -- the relays -----------------------------------------------------------------------------

    def _relay(self, run: Run, proc: int, service: Any, recorded: set[str], state: SagaState) -> Process:
        name = service.db.service
        db = service.connection("relay")
        parts = {t: run.cluster.topics[t] for t in TOPICS}

        def make(gen: int, proc: int) -> relays.PollingRelay:
            producer = run.cluster.producer(relay_producer_config(run, f"{name}-relay-{gen}"))
            # a short flush: a batch stuck on a crashed broker is sent again at the next poll, not waited on for
            # 10 s while every other process of the run stands still
            history = (run.history, proc, recorded)
            return relays.PollingRelay(db, producer, saga.ROUTES, parts, flush_timeout=2.0, history=history)

        crashes = relay_crashes(run, db, state, relays.CRASH_POINTS, self.relay_crash_p)
        yield from supervise(run, proc, make, crashes, restart=db, poll_ms=self.poll_ms)

    # -- the consumers --------------------------------------------------------------------------

    def _consumer(self, run: Run, proc: int, service: Any, topic: str, state: SagaState) -> Process:
        name = service.db.service
        db: Database = service.connection("consumer")
        parts = [(topic, p) for p in range(run.cluster.topics[topic])]

        def make(gen: int, proc: int) -> saga.SagaConsumer:
            config = {"isolation.level": "read_committed", "client.id": f"{name}-consumer-{gen}"}
            consumer = run.cluster.consumer(run.consumer_config(config))
            return saga.SagaConsumer(db, consumer, parts, service.handle, history=(run.history, proc))

        on_crash = counter(state, "consumer_crashes")
        crashes = Crashes(saga.ConsumerCrashed, saga.CONSUMER_CRASH_POINTS, self.consumer_crash_p, on_crash)
        yield from supervise_consumer(run, proc, make, crashes, db=db, state=state, poll_ms=self.poll_ms)

    # -- the verdict ----------------------------------------------------------------------------

    def judge(self, run: Run) -> list[str]:
        """The saga checker over both database files: all-done or all-compensated, money conserved."""
        state = run.state_of(SagaState)
        orders = read_rows(state.orders_db, "orders")
        payments = read_rows(state.payments_db, "payments")
        ledger = read_rows(state.payments_db, "ledger")
        accounts = read_rows(state.payments_db, "accounts")
        anomalies = check_sagas(orders, payments, ledger=ledger, accounts=accounts)
        ends = outcomes(orders, payments, ledger=ledger)
        state.done, state.compensated, state.incomplete = ends["done"], ends["compensated"], ends["incomplete"]
        state.refunded = sum(p["status"] == "REFUNDED" for p in payments)
        state.rejected = sum(p["status"] == "REJECTED" for p in payments)
        state.money_conserved = not any(a.values == ("money",) for a in anomalies)
        return [f"{a.kind}: {a.message}" for a in anomalies]


def _specs() -> tuple[Spec, Spec]:
    common: dict[str, Any] = {
        "topics": tuple(TopicSpec(t, 3) for t in TOPICS),
        "broker_config": FAST_FAILOVER,
        "safety_ms": 5_000,
        "liveness_ms": 20_000,  # a relay or consumer step stalls every process; leave the last saga time to end
        "allowed": "at-least-once",
    }
    return (
        Spec(
            "saga: order and payment with compensation",
            "two SQLite services talk through outboxes and idempotent consumers: payments charges or rejects "
            "in one transaction, orders reserves stock or cancels and has the charge refunded; service, relay, "
            "consumer and broker crashes",
            SagaWorkload(),
            crashes_and_lost_acks,
            **common,
        ),
        Spec(
            "saga contrast: no compensation",
            "the orders service cancels an order it has no stock for but never asks payments to refund it "
            "(positive control: saga-incomplete)",
            SagaWorkload(compensate=False),
            crashes_and_lost_acks,
            must_report=("saga-incomplete",),
            **common,
        ),
    )


#: The saga scenario and its contrast, in the catalog's order.
SAGA_SPECS = _specs()
