"""The saga across two services: conditional commit, compensation, the checker, and the scenario with its contrast.

Goal: each step of ``engine.outbox.saga`` does what its table says when driven call by call on
a real cluster and real SQLite files; the checker names every way a saga can be left half done;
and the scenario ends every saga all-done or all-compensated under crashes, while the contrast
without compensation is caught on every seed. Method: a 3-broker cluster and a fresh folder per
test; relays and consumers are stepped by hand until idle; tables are read back with plain SQL.
"""

from __future__ import annotations

import pytest

from engine import Cluster
from engine.check.anomaly import KINDS
from engine.check.saga import check_sagas, outcomes, read_rows
from engine.db.database import DatabaseFolder
from engine.errors import IllegalStateError, InvalidEventError
from engine.outbox.relay import PollingRelay
from engine.outbox.saga import ConsumerCrashed, OrdersService, PaymentsService, SagaConsumer
from engine.scenarios.harness import run_spec
from engine.scenarios.saga import SAGA_SPECS

PARTS = {"order-events": 2, "payment-events": 2}
SAGA, CONTRAST = SAGA_SPECS


class Pipeline:
    """Both services, their relays and consumers, stepped by hand."""

    def __init__(self, tmp_path, *, stock=1, balance=1_000, compensate=True) -> None:
        self.c = Cluster(seed=5, brokers=3)
        for t, n in PARTS.items():
            self.c.create_topic(t, partitions=n, replication_factor=3)
        folder = DatabaseFolder(tmp_path)
        self.orders = OrdersService(self.c.world, folder, stock={"book": stock}, compensate=compensate)
        self.payments = PaymentsService(self.c.world, folder, accounts={"ada": balance})
        self.relays = [self._relay(s) for s in (self.orders, self.payments)]
        self.consumers = [self._consumer(self.orders, "payment-events"), self._consumer(self.payments, "order-events")]

    def _relay(self, service):
        name = f"{service.db.service}-relay"
        return PollingRelay(
            service.connection("relay"), self.c.producer({"client.id": name, "linger.ms": 0}), *_routes()
        )

    def _consumer(self, service, topic, gen=0, db=None):
        consumer = self.c.consumer({"client.id": f"{topic}-{gen}", "isolation.level": "read_committed"})
        db = db or service.connection("consumer")
        return SagaConsumer(db, consumer, [(topic, p) for p in range(PARTS[topic])], service.handle)

    def settle(self) -> None:
        idle = 0
        while idle < 3:
            moved = sum(r.step() for r in self.relays) + sum(k.step(timeout=0.2) for k in self.consumers)
            idle = 0 if moved else idle + 1

    def order(self, order_id):
        return self.orders.db.query("SELECT status, reason FROM orders WHERE order_id = ?", (order_id,))[0]

    def payment(self, order_id):
        rows = self.payments.db.query("SELECT status FROM payments WHERE order_id = ?", (order_id,))
        return rows[0][0] if rows else None

    def balance(self):
        return self.payments.db.query("SELECT balance FROM accounts WHERE customer = 'ada'")[0][0]

    def anomalies(self):
        o, p = self.orders.db.path, self.payments.db.path
        return check_sagas(
            read_rows(o, "orders"),
            read_rows(p, "payments"),
            ledger=read_rows(p, "ledger"),
            accounts=read_rows(p, "accounts"),
        )


def _routes():
    from engine.outbox.saga import ROUTES

    return ROUTES, PARTS


def test_conditional_commit_approves_when_the_balance_covers_the_amount(tmp_path) -> None:
    p = Pipeline(tmp_path, stock=5, balance=1_000)
    p.orders.create_order("o-1", "ada", 600, "book")
    p.settle()
    assert p.payment("o-1") == "CHARGED"
    assert p.balance() == 400
    assert p.order("o-1") == ("APPROVED", None)
    assert p.anomalies() == []


def test_conditional_commit_rejects_and_charges_nothing_when_the_balance_is_short(tmp_path) -> None:
    p = Pipeline(tmp_path, stock=5, balance=1_000)
    p.orders.create_order("o-1", "ada", 600, "book")
    p.orders.create_order("o-2", "ada", 600, "book")  # 400 left: rejected, in the same transaction as the event
    p.settle()
    assert [p.payment("o-1"), p.payment("o-2")] == ["CHARGED", "REJECTED"]
    assert p.balance() == 400
    assert p.order("o-2") == ("CANCELLED", "payment-rejected")
    assert p.payments.db.query("SELECT COUNT(*) FROM ledger")[0][0] == 1
    assert p.anomalies() == []


def test_out_of_stock_after_the_charge_is_compensated_by_a_refund_in_the_other_service(tmp_path) -> None:
    p = Pipeline(tmp_path, stock=1, balance=1_000)
    p.orders.create_order("o-1", "ada", 300, "book")
    p.orders.create_order("o-2", "ada", 200, "book")  # charged, then no stock: refunded
    p.settle()
    assert p.order("o-2") == ("CANCELLED", "out-of-stock")
    assert p.payment("o-2") == "REFUNDED"
    assert p.balance() == 700
    deltas = p.payments.db.query("SELECT delta, kind FROM ledger WHERE order_id = 'o-2' ORDER BY entry_id")
    assert deltas == [(-200, "charge"), (200, "refund")]
    assert p.anomalies() == []


def test_without_compensation_the_charge_stays_and_the_checker_says_so(tmp_path) -> None:
    p = Pipeline(tmp_path, stock=1, balance=1_000, compensate=False)
    p.orders.create_order("o-1", "ada", 300, "book")
    p.orders.create_order("o-2", "ada", 200, "book")
    p.settle()
    [a] = p.anomalies()
    assert a.kind == "saga-incomplete"
    assert a.message == (
        "order o-2 of amount 200 is CANCELLED with payment CHARGED, net debit 200: neither all-done nor all-compensated"
    )


@pytest.mark.parametrize("point", ["after-poll", "before-commit", "after-commit"])
def test_a_consumer_crash_anywhere_applies_each_event_once(tmp_path, point) -> None:
    p = Pipeline(tmp_path, stock=5, balance=1_000)
    p.orders.create_order("o-1", "ada", 600, "book")
    p.relays[0].step()
    with pytest.raises(ConsumerCrashed):
        while not p.consumers[1].step(timeout=0.2, crash_at=point):
            pass
    p.relays[0].db.query("UPDATE outbox SET sent_ms = NULL")  # the relay re-sends the event, too
    p.relays[0].step()
    db = p.consumers[1].db
    p.c.world.restart(db.name)
    p.consumers[1] = p._consumer(p.payments, "order-events", gen=1, db=db)
    p.settle()
    assert p.balance() == 400
    assert p.order("o-1") == ("APPROVED", None)
    assert p.anomalies() == []


def test_bad_orders_and_illegal_transitions_are_refused_in_one_line(tmp_path) -> None:
    p = Pipeline(tmp_path)
    for args, says in [
        (("o-1", "ada", -5, "book"), "amount must be a positive int"),
        (("o-1", "ada", 5, "chair"), "unknown item 'chair'"),
        (("o-1", "", 5, "book"), "customer must be a non-empty str"),
    ]:
        with pytest.raises(InvalidEventError, match=says) as info:
            p.orders.create_order(*args)
        assert "\n" not in str(info.value)
    assert p.orders.db.query("SELECT COUNT(*) FROM orders")[0][0] == 0
    with (
        p.payments.db.transaction() as txn,
        pytest.raises(IllegalStateError, match="cannot go from nothing to REFUNDED"),
    ):
        p.payments.handle(txn, "OrderCancelled", {"order_id": "o-9"})


# -- the checker on hand-made rows ----------------------------------------------------------------


def _o(status, amount=100, order_id="o-1"):
    return {"order_id": order_id, "status": status, "amount": amount}


def _p(status, amount=100, order_id="o-1"):
    return {"order_id": order_id, "status": status, "amount": amount}


GOOD = [
    ([_o("APPROVED")], [_p("CHARGED")], [{"order_id": "o-1", "delta": -100}]),
    ([_o("CANCELLED")], [], []),
    ([_o("CANCELLED")], [_p("REJECTED")], []),
    ([_o("CANCELLED")], [_p("REFUNDED")], [{"order_id": "o-1", "delta": -100}, {"order_id": "o-1", "delta": 100}]),
]
BAD = [
    ([_o("PENDING")], [], [], "is PENDING with no payment"),
    ([_o("PENDING")], [_p("CHARGED")], [{"order_id": "o-1", "delta": -100}], "is PENDING with payment CHARGED"),
    ([_o("CANCELLED")], [_p("CHARGED")], [{"order_id": "o-1", "delta": -100}], "is CANCELLED with payment CHARGED"),
    ([_o("APPROVED")], [_p("REFUNDED")], [], "is APPROVED with payment REFUNDED"),
    ([_o("APPROVED")], [_p("REJECTED")], [], "is APPROVED with payment REJECTED"),
    ([_o("APPROVED")], [], [], "is APPROVED with no payment"),
    ([], [_p("CHARGED")], [{"order_id": "o-1", "delta": -100}], "has no order row with payment CHARGED"),
    ([_o("APPROVED")], [_p("CHARGED")], [{"order_id": "o-1", "delta": -100}] * 2, "net debit 200"),
    ([_o("CANCELLED")], [_p("REFUNDED")], [{"order_id": "o-1", "delta": -100}], "REFUNDED, net debit 100"),
]


@pytest.mark.parametrize(("orders", "payments", "ledger"), GOOD)
def test_the_checker_passes_every_finished_saga(orders, payments, ledger) -> None:
    assert check_sagas(orders, payments, ledger=ledger) == []
    assert outcomes(orders, payments, ledger=ledger)["incomplete"] == 0


@pytest.mark.parametrize(("orders", "payments", "ledger", "says"), BAD, ids=[b[3] for b in BAD])
def test_the_checker_names_each_way_a_saga_is_left_half_done(orders, payments, ledger, says) -> None:
    [a] = check_sagas(orders, payments, ledger=ledger)
    assert a.kind == "saga-incomplete"
    assert a.values == ("o-1",)
    assert says in a.message
    assert a.message.startswith("order o-1") and "\n" not in a.message


def test_the_checker_counts_money_and_refuses_repeated_rows() -> None:
    accounts = [{"customer": "ada", "balance": 900, "opening": 1_000}]
    assert check_sagas([_o("APPROVED")], [_p("CHARGED")], accounts=accounts) == []
    [a] = check_sagas([_o("CANCELLED")], [_p("REFUNDED")], accounts=accounts)  # refunded, but the balance was not
    assert a.values == ("money",)
    assert a.message == (
        "money is not conserved: balances sum to 900 and charged payments to 0, 900 in all, "
        "but the accounts opened with 1000"
    )
    with pytest.raises(ValueError, match="o-1 appears twice"):
        check_sagas([_o("APPROVED"), _o("CANCELLED")], [])
    assert KINDS["saga-incomplete"][0] == "D4"


# -- the scenario and its contrast ----------------------------------------------------------------


def test_the_saga_scenario_ends_every_saga_done_or_compensated() -> None:
    """Per seed: every saga ended, money is conserved, crashes happened; over the seeds: every ending."""
    seen = {"done": 0, "compensated": 0, "refunded": 0, "rejected": 0}
    for seed in (1, 2, 3):
        r = run_spec(SAGA, seed)
        assert r.ok, r.verdict()
        s = r.state
        assert s.incomplete == 0 and s.money_conserved
        assert s.done + s.compensated == s.created
        assert s.relay_crashes + s.consumer_crashes > 0
        for ending in seen:
            seen[ending] += getattr(s, ending)
    assert all(seen.values()), seen  # each way a saga can end, shown by at least one seed


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_contrast_without_compensation_is_caught_every_time(seed) -> None:
    r = run_spec(CONTRAST, seed)
    assert r.ok, r.verdict()
    assert r.evidence and all(e.startswith("saga-incomplete: order ") for e in r.evidence)
    assert "is CANCELLED with payment CHARGED" in r.evidence[0]


def test_a_saga_run_is_deterministic() -> None:
    a, b = run_spec(SAGA, 7), run_spec(SAGA, 7)
    assert a.fingerprint == b.fingerprint
    files = ("folder", "orders_db", "payments_db")  # each run has a fresh folder
    assert {k: v for k, v in vars(a.state).items() if k not in files} == {
        k: v for k, v in vars(b.state).items() if k not in files
    }
