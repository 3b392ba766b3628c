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

    eos check --committed orders.sqlite:orders.order_id --effects shipping.sqlite:shipments.order_id

Keys pair as SQLite's own ``JOIN ... ON committed.col = effects.col`` pairs them (the columns'
affinities decide; text compares byte for byte), and a NULL key pairs with nothing: a committed
row with a NULL key is ``effect-lost``, an effect row with a NULL key ``effect-phantom``, each
named by its rowid. ``docs/outbox.md`` ("Keys: NULL and mixed types") states the contract. Keys
given as Python values compare with ``==``, ``None`` playing NULL.

A file is read without being changed: read-only, or, when a crashed writer left a hot journal
(which SQLite must roll back before anyone can read the committed rows), from a temporary copy
in which SQLite rolls it back.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.check.anomaly import Anomaly
from engine.db.database import connect_read_only

__all__ = ["EFFECT_KINDS", "Column", "check_effects", "read_column"]

#: The kinds this checker reports.
EFFECT_KINDS = ("effect-lost", "effect-duplicate", "effect-phantom")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHOWN = 5

#: SQLite's name of a column's affinity, from the declared type ``CREATE TABLE AS`` gives a copy of it.
_AFFINITY = {"INT": "INTEGER", "TEXT": "TEXT", "NUM": "NUMERIC", "REAL": "REAL", "": "BLOB"}
_NUMERIC = frozenset({"INTEGER", "REAL", "NUMERIC"})


class Column(list):  # type: ignore[type-arg]
    """One column read by :func:`read_column`: its values (``None`` for NULL) in the table's order.

    ``name`` is the ``FILE:TABLE.COLUMN`` it was read from; ``affinity`` the column's SQLite
    affinity (``INTEGER``, ``TEXT``, ``BLOB``, ``REAL`` or ``NUMERIC``), which decides how its keys
    pair with another column's; ``rows`` names each value's row, ``("rowid", 7)`` (or ``("row", 3)``,
    its position, for a table without rowids); ``note`` says how the file was read when that is
    worth knowing (a hot journal rolled back in a copy), else None.
    """

    def __init__(
        self, values: Iterable[Any], *, name: str, affinity: str, rows: list[tuple[str, int]], note: str | None = None
    ) -> None:
        super().__init__(values)
        self.name = name
        self.affinity = affinity
        self.rows = rows
        self.note = note


def _show(ids: list[Any]) -> str:
    head = ", ".join(str(i) for i in ids[:_SHOWN])
    return head + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def _rows(labels: list[tuple[str, int]]) -> str:
    """``[("rowid", 1), ("rowid", 2)]`` -> ``"rowids 1, 2"``."""
    word = labels[0][0]
    if len(labels) == 1:
        return f"{word} {labels[0][1]}"
    if all(w == word for w, _n in labels):
        return f"{word}s " + _show([n for _w, n in labels])
    return _show([f"{w} {n}" for w, n in labels])


def _sql(key: Any) -> str:
    """A key as SQL writes it: ``1``, ``1.5``, ``'o-1'``, ``X'01'``, so ``1`` and ``'1'`` differ in a message."""
    if isinstance(key, str):
        return "'" + key.replace("'", "''") + "'"
    if isinstance(key, bytes):
        return f"X'{key.hex().upper()}'"
    return repr(key)


def _numeric_affinity(keys: list[Any]) -> list[Any]:
    """Apply SQLite's NUMERIC affinity to ``keys``, by SQLite itself: ``'42'``, ``' 4.2e1 '`` -> 42; ``'o-1'`` stays."""
    texts = [i for i, k in enumerate(keys) if isinstance(k, str)]
    if not texts:
        return keys
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE a (v NUMERIC)")
        conn.executemany("INSERT INTO a (v) VALUES (?)", [(keys[i],) for i in texts])
        out = list(keys)
        for i, (v,) in zip(texts, conn.execute("SELECT v FROM a ORDER BY rowid"), strict=True):
            out[i] = v
        return out
    finally:
        conn.close()


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

    Two :class:`Column` (from :func:`read_column`) pair as SQLite joins them: when either column
    has a numeric affinity, text that reads as a number is that number on both sides; otherwise
    keys compare as stored. Other iterables compare with ``==``. A NULL (``None``) key pairs with
    nothing: ``effect-lost`` for a committed row, ``effect-phantom`` for an effect row. Keys read
    from SQLite are written as SQL writes them (``1``, ``'1'``); others with ``str``, unless a lost
    and a phantom key would then look alike.
    """
    c_keys, c_rows = _keys(committed)
    e_keys, e_rows = _keys(effects)
    show: Callable[[Any], str] = str
    converted = False
    if isinstance(committed, Column) and isinstance(effects, Column):
        show = _sql
        if committed.affinity in _NUMERIC or effects.affinity in _NUMERIC:
            c_keys, e_keys = _numeric_affinity(c_keys), _numeric_affinity(e_keys)
            converted = True
    where: dict[Any, list[tuple[str, int]]] = {}
    for k, r in zip(c_keys, c_rows, strict=True):
        if k is not None:
            where.setdefault(k, []).append(r)
    repeated = sorted((k for k, rs in where.items() if len(rs) > 1), key=show)
    if repeated:
        head = f"{committed.name}: " if isinstance(committed, Column) else ""
        how = " (compared as SQLite compares them with the effects' column)" if converted else ""
        shown = _show([f"{show(k)} ({_rows(where[k])})" for k in repeated])
        raise ValueError(f"{head}committed keys must be unique{how}; repeated: {shown}; give a key column")
    done = Counter(k for k in e_keys if k is not None)
    lost = [k for k in where if done[k] == 0]
    phantom = [k for k in done if k not in where]
    if {str(k) for k in lost} & {str(k) for k in phantom}:
        show = _sql  # 1 and '1' apart: write them so that the messages show why
    out = [
        Anomaly("effect-lost", values=(show(k),), message=f"committed {row} {show(k)} has no {effect}")
        for k in sorted(lost, key=show)
    ]
    out += _null_keys(
        "effect-lost", c_keys, c_rows, f"committed {row} with a NULL key ({{}}) has no {effect}: NULL matches no key"
    )
    out += [
        Anomaly(
            "effect-duplicate",
            values=(show(k),),
            message=f"{row} {show(k)} has {done[k]} {effect}s, not exactly one",
        )
        for k in sorted((k for k, n in done.items() if n > 1 and k in where), key=show)
    ]
    out += [
        Anomaly(
            "effect-phantom",
            values=(show(k),),
            message=f"{effect} for {row} {show(k)}, which was never committed ({done[k]} {effect}(s))",
        )
        for k in sorted(phantom, key=show)
    ]
    out += _null_keys("effect-phantom", e_keys, e_rows, f"{effect} row with a NULL key ({{}}) names no committed {row}")
    return out


def _null_keys(kind: str, keys: list[Any], rows: list[tuple[str, int]], message: str) -> list[Anomaly]:
    """One ``kind`` anomaly per row whose key is NULL, in row order; ``{}`` in ``message`` names the row."""
    nulls = sorted((r for k, r in zip(keys, rows, strict=True) if k is None), key=lambda r: r[1])
    return [Anomaly(kind, values=(f"NULL ({_rows([r])})",), message=message.format(_rows([r]))) for r in nulls]


def _keys(values: Iterable[Any]) -> tuple[list[Any], list[tuple[str, int]]]:
    """The keys and how to name each one's row: the rowid read from SQLite, else the position (1 = first)."""
    keys = list(values)
    if isinstance(values, Column):
        return keys, list(values.rows)
    return keys, [("item", i) for i in range(1, len(keys) + 1)]


def summary(anomalies: list[Anomaly]) -> dict[str, int]:
    """Return the count of each effect kind (zeros included), for tables and notebooks."""
    n = Counter(a.kind for a in anomalies)
    return {k: n.get(k, 0) for k in EFFECT_KINDS}


def read_column(spec: str) -> Column:
    """Read ``FILE:TABLE.COLUMN`` from a SQLite file, without changing it; return the column's values.

    The values come as a :class:`Column` (a list, with the column's affinity and each row's rowid).
    The file is opened read-only; if SQLite must write to read it (a crashed writer's hot journal to
    roll back, a write-ahead log to recover in a read-only folder), it is copied with its journal
    or log into a temporary folder and read there, and :attr:`Column.note` says so.

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
        with _reading(path) as (conn, note):
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
            if table not in tables:
                raise ValueError(f"{file} has no table {table!r}; its tables are {', '.join(sorted(tables)) or 'none'}")
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            if column not in cols:
                raise ValueError(f"{file}: table {table!r} has no column {column!r}; its columns are {', '.join(cols)}")
            affinity = _affinity(conn, table, column)
            try:
                rows = conn.execute(f'SELECT rowid, "{column}" FROM "{table}"').fetchall()
            except sqlite3.OperationalError:  # a WITHOUT ROWID table
                rows = [(None, v) for (v,) in conn.execute(f'SELECT "{column}" FROM "{table}"')]
    except OSError as exc:
        raise ValueError(f"{file}: cannot read ({exc.strerror or exc})") from None
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{file}: not a readable SQLite database ({exc})") from None
    labels = [("rowid", r) if isinstance(r, int) else ("row", i) for i, (r, _v) in enumerate(rows, 1)]
    return Column((v for _r, v in rows), name=spec, affinity=affinity, rows=labels, note=note)


def _affinity(conn: sqlite3.Connection, table: str, column: str) -> str:
    """The column's affinity as SQLite computes it (a view's column too): the declared type of a copy of it."""
    conn.execute(f'CREATE TEMP TABLE "_eos_affinity" AS SELECT "{column}" FROM main."{table}" LIMIT 0')
    try:
        declared = conn.execute('PRAGMA temp.table_info("_eos_affinity")').fetchone()[2]
    finally:
        conn.execute('DROP TABLE temp."_eos_affinity"')
    return _AFFINITY.get(declared, "NUMERIC")


def _must_write(exc: sqlite3.OperationalError) -> bool:
    """Did a read-only open fail because SQLite had to write first (hot journal, WAL recovery)?"""
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN"))


@contextmanager
def _reading(path: Path) -> Iterator[tuple[sqlite3.Connection, str | None]]:
    """Yield a connection that reads ``path``'s committed state, and a note when it reads a copy."""
    conn = connect_read_only(path)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # SQLite looks at the journal here
    except sqlite3.OperationalError as exc:
        conn.close()
        logs = [p for p in (Path(f"{path}-journal"), Path(f"{path}-wal")) if p.is_file()]
        if not (_must_write(exc) and logs):
            raise
        with tempfile.TemporaryDirectory(prefix="eos-check-") as tmp:
            for source in (path, *logs):
                shutil.copyfile(source, Path(tmp) / source.name)
            copy = sqlite3.connect(Path(tmp) / path.name)  # read-write: SQLite rolls back (or recovers) the copy
            try:
                copy.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
                if logs[0].name.endswith("-journal"):
                    what = "unfinished transaction (hot journal) was rolled back"
                else:
                    what = "write-ahead log was recovered"
                note = f"{path}: a crashed writer's {what} in a temporary copy to read the committed rows; "
                yield copy, note + f"{path} and {logs[0].name} were not changed"
            finally:
                copy.close()
        return
    try:
        yield conn, None
    finally:
        conn.close()
