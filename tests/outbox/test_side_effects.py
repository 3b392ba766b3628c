"""A side effect inside a transactional loop repeats, although Kafka's output is exactly once.

Goal: the contrast (the invoice e-mail sent inside the Kafka transaction) is caught as
``effect-duplicate`` on every seed while its ``invoices`` topic stays exactly once, and the
pattern that works (an idempotent sender reading the committed invoices) sends exactly one
e-mail per committed invoice. Method: run both scenarios through ``run_spec`` and read the
e-mail provider's SQLite file back with plain SQL.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from engine.scenarios.harness import finding_kind, run_spec
from engine.scenarios.side_effects import SIDE_EFFECT_SPECS, InvoiceLoop

INSIDE, FROM_OUTPUT = SIDE_EFFECT_SPECS


def _emails(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT order_id, invoice FROM sent_emails ORDER BY email_id").fetchall()


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_email_inside_the_transaction_repeats_while_the_invoices_are_exactly_once(seed):
    r = run_spec(INSIDE, seed)
    assert r.status == "CAUGHT", r.verdict()
    # The e-mails repeat (duplicate) and some name an invoice whose transaction aborted (phantom).
    assert "effect-duplicate" in {finding_kind(f) for f in r.evidence} <= {"effect-duplicate", "effect-phantom"}
    # Kafka's side held: every order has exactly one committed invoice, and the history checks are clean.
    assert not [f for f in r.findings if finding_kind(f).startswith("copier-")], r.findings
    assert r.report.ok, r.report.forbidden
    state = r.state
    assert state.invoices_committed == state.orders == 80
    assert state.effects["effect-duplicate"] > 0 and state.effects["effect-lost"] == 0
    assert state.aborts + state.crashes > 0
    per_order = Counter(o for o, _i in _emails(state.db.path))
    assert state.emails_sent == sum(per_order.values()) > state.invoices_committed
    assert state.duplicates == sum(n - 1 for n in per_order.values())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_email_from_the_committed_output_is_sent_once_per_invoice(seed):
    r = run_spec(FROM_OUTPUT, seed)
    assert r.status == "PASS", r.verdict()
    state = r.state
    assert state.emails_sent == state.invoices_committed == state.orders == 80
    assert state.duplicates == 0
    emails = _emails(state.db.path)
    assert len({o for o, _i in emails}) == len(emails)
    assert all(i.startswith(f"invoice:{o}:") for o, i in emails)


def test_a_seed_replays_exactly():
    a, b = run_spec(FROM_OUTPUT, 7), run_spec(FROM_OUTPUT, 7)
    assert a.fingerprint == b.fingerprint
    drop_db = lambda s: {k: v for k, v in vars(s).items() if k != "db"}  # noqa: E731 - the file lives in a fresh folder
    assert drop_db(a.state) == drop_db(b.state)
    assert [o for o, _i in _emails(a.state.db.path)] == [o for o, _i in _emails(b.state.db.path)]


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="unknown side-effect mode 'outside'"):
        InvoiceLoop("outside")
