"""``%eos_db``: the last scenario run's service databases as tables, SQL as pandas, and the effects check.

Goal: a notebook reader sees the outbox and the sink as tables and can ask them questions in
SQL, and the database checker is one magic away. Method: run catalog scenarios through
``%eos_scenario run`` in a real IPython shell and read their SQLite files with ``%eos_db``.
"""

from __future__ import annotations

import pytest

from eos_magics._testing import run
from eos_magics.errors import EosUsageError


def test_tables_sql_and_check_after_an_outbox_run(ip) -> None:
    view = run(ip, "%eos_scenario run outbox: polling relay --seed 2")
    assert view.ok
    tables = run(ip, "%eos_db tables")
    counts = {(r["database"], r["table"]): r["rows"] for r in tables}
    orders = counts[("orders", "orders")]
    assert orders > 40
    assert counts[("shipping", "shipments")] == orders
    assert counts[("orders", "outbox_changes")] >= orders  # the trigger-fed change log keeps every insert
    df = run(ip, "%eos_db sql --db orders SELECT status, COUNT(*) AS n FROM orders GROUP BY status")
    assert df.to_dict("records") == [{"status": "PLACED", "n": orders}]
    unsent = run(ip, "%eos_db sql --db orders SELECT COUNT(*) AS n FROM outbox WHERE sent_ms IS NULL")
    assert unsent["n"].tolist() == [0]
    check = run(ip, "%eos_db check")
    assert len(check) == 0
    assert "effect-lost 0, effect-duplicate 0, effect-phantom 0" in check.text


def test_check_finds_the_lost_events_of_the_dual_write(ip) -> None:
    run(ip, "%eos_scenario run outbox contrast: dual write, commit then publish --seed 1")
    check = run(ip, "%eos_db check")
    assert set(check.column("kind")) == {"effect-lost"}
    assert len(check) > 0


def test_errors_are_one_line_usage_errors(ip) -> None:
    with pytest.raises(EosUsageError, match="no scenario has run yet"):
        run(ip, "%eos_db tables")
    run(ip, "%eos_scenario run outbox: log tailing --seed 1")
    with pytest.raises(EosUsageError, match="pick one with --db"):
        run(ip, "%eos_db sql SELECT 1")
    with pytest.raises(EosUsageError, match="no database 'nope'"):
        run(ip, "%eos_db sql --db nope SELECT 1")
    with pytest.raises(EosUsageError, match="no such table: missing"):
        run(ip, "%eos_db sql --db orders SELECT * FROM missing")
    with pytest.raises(EosUsageError, match="attempt to write a readonly database"):
        run(ip, "%eos_db sql --db orders DELETE FROM orders")
    with pytest.raises(EosUsageError, match="has no table 'shipment'"):
        run(ip, "%eos_db check --effects shipping:shipment.order_id")
    assert run(ip, "%eos_db sql --db orders SELECT COUNT(*) AS n FROM orders")["n"].tolist()[0] > 0
