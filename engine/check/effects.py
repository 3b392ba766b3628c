"""The database-side checker: every committed business row has exactly one effect downstream.

Kafka's exactly-once covers writes to Kafka; what a data engineer is judged on is the effect in
the next system (a shipment, an e-mail, a ledger line). This checker compares the two ends of a
pipeline, each read from a real database (or given as rows):

``effect-lost`` (D1)
    a committed business row has no effect (the dual write's commit-then-publish gap).
``effect-duplicate`` (D2)
    a business row has more than one effect (a sink without deduplication after a relay or
    consumer crash; a side effect called inside a transaction that was retried).
``effect-phantom`` (D3)
    an effect names a business row that was never committed (publish, then roll back).

It runs as a scenario verdict (the outbox workloads call it), with the EOS checks on the same
run's history, and from the command line on two SQLite files::

    eos check-effects --committed orders.sqlite:orders.order_id --effects shipping.sqlite:shipments.order_id
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from engine.check.anomaly import Anomaly

__all__ = ["EFFECT_KINDS", "check_effects", "read_column"]

#: The kinds this checker reports.
EFFECT_KINDS = ("effect-lost", "effect-duplicate", "effect-phantom")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHOWN = 5


def _show(ids: list[Any]) -> str:
    head = ", ".join(str(i) for i in ids[:_SHOWN])
    return head + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def check_effects(
    committed: Iterable[Any],
    effects: Iterable[Any],
    *,
    row: str = "business row",
    effect: str = "effect",
) -> list[Anomaly]:
    """Compare committed business keys with the keys the effects name; return the anomalies, sorted.

    ``committed``: the key of every committed business row (each once; a repeated key is a
    ``ValueError``: it is not a key). ``effects``: the business key of every effect applied, once
    per effect. ``row`` and ``effect`` name them in the messages (``"order"``, ``"shipment"``).
    """
    keys = list(committed)
    counts = Counter(keys)
    repeated = sorted(str(k) for k, n in counts.items() if n > 1)
    if repeated:
        raise ValueError(f"committed keys must be unique; repeated: {_show(repeated)}")
    done = Counter(effects)
    known = set(keys)
    lost = sorted((k for k in keys if done[k] == 0), key=str)
    out = [Anomaly("effect-lost", values=(str(k),), message=f"committed {row} {k} has no {effect}") for k in lost]
    out += [
        Anomaly("effect-duplicate", values=(str(k),), message=f"{row} {k} has {done[k]} {effect}s, not exactly one")
        for k in sorted((k for k, n in done.items() if n > 1 and k in known), key=str)
    ]
    out += [
        Anomaly(
            "effect-phantom",
            values=(str(k),),
            message=f"{effect} for {row} {k}, which was never committed ({done[k]} {effect}(s))",
        )
        for k in sorted((k for k in done if k not in known), key=str)
    ]
    return out


def summary(anomalies: list[Anomaly]) -> dict[str, int]:
    """Return the count of each effect kind (zeros included), for tables and notebooks."""
    n = Counter(a.kind for a in anomalies)
    return {k: n.get(k, 0) for k in EFFECT_KINDS}


def read_column(spec: str) -> list[Any]:
    """Read ``FILE:TABLE.COLUMN`` from a SQLite file (read-only); return the column's values.

    Raises ``ValueError`` with one line saying what is wrong: a spec not of that shape, a file
    that does not exist or is not SQLite, a table or column it lacks.
    """
    if not isinstance(spec, str) or ":" not in spec or "." not in spec.rsplit(":", 1)[1]:
        raise ValueError(f"expected FILE:TABLE.COLUMN (e.g. orders.sqlite:orders.order_id), got {spec!r}")
    file, where = spec.rsplit(":", 1)
    table, column = where.split(".", 1)
    for part in (table, column):
        if not _NAME.match(part):
            raise ValueError(f"{part!r} in {spec!r} is not a plain SQL name (letters, digits, '_')")
    path = Path(file)
    if not path.is_file():
        raise ValueError(f"{file}: no such file; give the path of a SQLite database")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            if table not in tables:
                raise ValueError(f"{file} has no table {table!r}; its tables are {', '.join(sorted(tables)) or 'none'}")
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            if column not in cols:
                raise ValueError(f"{file}: table {table!r} has no column {column!r}; its columns are {', '.join(cols)}")
            return [r[0] for r in conn.execute(f"SELECT {column} FROM {table}")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{file}: not a readable SQLite database ({exc})") from None
