"""The saga checker: every saga ends all-done or all-compensated, and no money appears or vanishes.

A saga here is one order that crosses two services, each with its own database: the orders
service (the order row) and the payments service (the payment row, its ledger lines and the
customers' accounts). Read from the two databases at the end of a run, every saga must be in
one of two end states:

==================  ===============================  ============================================  ==================
end state           order status                     payment status                                net debit (ledger)
==================  ===============================  ============================================  ==================
all-done            ``APPROVED``                     ``CHARGED``                                   the order's amount
all-compensated     ``CANCELLED``                    none, ``REJECTED`` or ``REFUNDED``            0
==================  ===============================  ============================================  ==================

Anything else is ``saga-incomplete`` (D4): an order still ``PENDING``, an order cancelled whose
charge was never refunded (the compensating transaction is missing), an order approved whose
payment is not charged, a payment for an order the orders service never committed, a customer
debited twice. Money conservation is checked too (reported with the same kind, naming the
sums): the balances plus the charged amounts must equal the opening balances.

Messages are one sentence naming the order and both states.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from engine.check.anomaly import Anomaly
from engine.db.database import connect_read_only

__all__ = ["KIND", "OUTCOMES", "check_sagas", "outcomes", "read_rows"]

#: The kind this checker reports.
KIND = "saga-incomplete"
#: How a saga can end, as :func:`outcomes` counts them.
OUTCOMES = ("done", "compensated", "incomplete")

_DONE_PAYMENT = frozenset({"CHARGED"})
_COMPENSATED_PAYMENT = frozenset({None, "REJECTED", "REFUNDED"})


def _by_order(rows: Iterable[Mapping[str, Any]], what: str) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for r in rows:
        key = str(r["order_id"])
        if key in out:
            raise ValueError(f"{what} rows must name each order once; {key} appears twice")
        out[key] = r
    return out


def _debits(ledger: Iterable[Mapping[str, Any]] | None) -> dict[str, int] | None:
    """Return the net debit per order (a ledger line's ``delta`` is negative for a charge)."""
    if ledger is None:
        return None
    net: dict[str, int] = defaultdict(int)
    for line in ledger:
        net[str(line["order_id"])] -= int(line["delta"])
    return dict(net)


def _outcome(order: Mapping[str, Any] | None, payment: Mapping[str, Any] | None, debit: int | None) -> str:
    """Return ``done``, ``compensated`` or ``incomplete`` for one saga."""
    if order is None:
        return "incomplete"
    status = payment["status"] if payment is not None else None
    amount = int(order["amount"])
    if order["status"] == "APPROVED" and status in _DONE_PAYMENT and debit in (None, amount):
        return "done"
    if order["status"] == "CANCELLED" and status in _COMPENSATED_PAYMENT and debit in (None, 0):
        return "compensated"
    return "incomplete"


def _message(order_id: str, order: Mapping[str, Any] | None, payment: Mapping[str, Any] | None, debit: Any) -> str:
    o = "has no order row" if order is None else f"is {order['status']}"
    p = "no payment" if payment is None else f"payment {payment['status']}"
    money = "" if debit is None else f", net debit {debit}"
    amount = "" if order is None else f" of amount {order['amount']}"
    return f"order {order_id}{amount} {o} with {p}{money}: neither all-done nor all-compensated"


def _sagas(
    orders: Iterable[Mapping[str, Any]],
    payments: Iterable[Mapping[str, Any]],
    ledger: Iterable[Mapping[str, Any]] | None,
) -> list[tuple[str, Mapping[str, Any] | None, Mapping[str, Any] | None, int | None, str]]:
    by_order, by_payment = _by_order(orders, "order"), _by_order(payments, "payment")
    debits = _debits(ledger)
    out = []
    for key in sorted(set(by_order) | set(by_payment) | set(debits or ())):
        order, payment = by_order.get(key), by_payment.get(key)
        debit = None if debits is None else debits.get(key, 0)
        out.append((key, order, payment, debit, _outcome(order, payment, debit)))
    return out


def check_sagas(
    orders: Iterable[Mapping[str, Any]],
    payments: Iterable[Mapping[str, Any]],
    *,
    ledger: Iterable[Mapping[str, Any]] | None = None,
    accounts: Iterable[Mapping[str, Any]] | None = None,
) -> list[Anomaly]:
    """Judge every saga from the rows of both services; return the anomalies, sorted by order.

    ``orders``: one mapping per order (``order_id``, ``status``, ``amount``). ``payments``: one per
    payment (``order_id``, ``status``, ``amount``). ``ledger`` (optional): every balance change
    (``order_id``, ``delta``; a charge is negative), so a double charge shows. ``accounts``
    (optional): every customer's ``balance`` and ``opening`` balance, for money conservation.
    """
    payments = list(payments)
    out = [
        Anomaly(KIND, values=(key,), message=_message(key, order, payment, debit))
        for key, order, payment, debit, outcome in _sagas(orders, payments, ledger)
        if outcome == "incomplete"
    ]
    if accounts is not None:
        accounts = list(accounts)
        balances = sum(int(a["balance"]) for a in accounts)
        opening = sum(int(a["opening"]) for a in accounts)
        charged = sum(int(p["amount"]) for p in payments if p["status"] == "CHARGED")
        if balances + charged != opening:
            msg = (
                f"money is not conserved: balances sum to {balances} and charged payments to {charged}, "
                f"{balances + charged} in all, but the accounts opened with {opening}"
            )
            out.append(Anomaly(KIND, values=("money",), message=msg))
    return out


def outcomes(
    orders: Iterable[Mapping[str, Any]],
    payments: Iterable[Mapping[str, Any]],
    *,
    ledger: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, int]:
    """Return how many sagas ended done, compensated and incomplete (zeros included)."""
    n = Counter(s[4] for s in _sagas(orders, payments, ledger))
    return {k: n.get(k, 0) for k in OUTCOMES}


def read_rows(path: str | Path, table: str) -> list[dict[str, Any]]:
    """Read every row of ``table`` from a SQLite file, read-only, as dicts in rowid order."""
    if not table.replace("_", "").isalnum():
        raise ValueError(f"table must be a plain SQL name (letters, digits, '_'), got {table!r}")
    if not Path(path).is_file():
        raise ValueError(f"{path}: no such file; give the path of a SQLite database")
    conn = connect_read_only(path)
    try:
        cur = conn.execute(f"SELECT * FROM {table} ORDER BY rowid")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    finally:
        conn.close()
