"""The database checker's contract on hand-made SQLite files: NULL keys, mixed key types, hot journals.

Goal: ``eos check --committed FILE:TABLE.COL --effects FILE:TABLE.COL`` says what a user who knows
SQL expects (``docs/outbox.md``, "Keys: NULL and mixed types"): a NULL key pairs with nothing and
is reported by its rowid, keys pair exactly when SQLite's own join pairs them, and a database left
with a crashed writer's journal is read in its committed state without touching the user's files.
Method: real SQLite files built in ``tmp_path``, the real command line (``engine.cli.main``), and
SQLite itself (``ATTACH`` and a join) as the oracle for key equality; a writer process that dies
mid-transaction leaves the hot journal.
"""

from __future__ import annotations

import re
import shlex
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import engine.check.effects as effects_module
from engine.check.effects import check_effects, read_column
from engine.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]


def _table(path: Path, table: str, decl: str, rows: list[tuple]) -> str:
    """Create ``table(k decl)`` in the SQLite file ``path`` with ``rows`` of (rowid, key); return the spec."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"CREATE TABLE {table} (k {decl})")
        conn.executemany(f"INSERT INTO {table} (rowid, k) VALUES (?, ?)", rows)
        conn.commit()
    finally:
        conn.close()
    return f"{path}:{table}.k"


def _check(capsys, committed: str, effects: str, *extra: str) -> tuple[int, str, str]:
    status = main(["check", "--committed", committed, "--effects", effects, *extra])
    out, err = capsys.readouterr()
    return status, out, err


# 1. A NULL committed key and a NULL effect key do not pair: both are reported.


def test_null_keys_pair_with_nothing_and_are_reported_by_rowid(tmp_path, capsys) -> None:
    committed = _table(tmp_path / "orders.sqlite", "orders", "INTEGER", [(1, 1), (2, None), (3, 3)])
    effects = _table(tmp_path / "shipping.sqlite", "shipments", "INTEGER", [(1, 1), (2, None), (3, 3)])
    status, out, err = _check(capsys, committed, effects)
    assert status == 1, out + err
    assert "effect-lost 1, effect-duplicate 0, effect-phantom 1" in out
    assert "effect-lost: committed business row with a NULL key (rowid 2)" in out
    assert "effect-phantom: effect row with a NULL key (rowid 2)" in out
    # The same rule for keys given as Python values: None is SQL's NULL.
    kinds = [a.kind for a in check_effects([None, "o-1"], [None, "o-1"], row="order", effect="shipment")]
    assert kinds == ["effect-lost", "effect-phantom"]


# 2. Keys pair exactly when SQLite's own join pairs them (the columns' affinities decide).


def test_integer_key_and_text_key_pair_as_sqlite_joins_them(tmp_path, capsys) -> None:
    committed = _table(tmp_path / "orders.sqlite", "orders", "INTEGER", [(1, 1), (2, 2)])
    effects = _table(tmp_path / "shipping.sqlite", "shipments", "TEXT", [(1, "1"), (2, "2")])
    status, out, err = _check(capsys, committed, effects)
    assert (status, err) == (0, ""), out + err
    assert "effect-lost 0, effect-duplicate 0, effect-phantom 0" in out


TYPES = ("INTEGER", "TEXT", "", "REAL", "NUMERIC")
VALUES = (1, "1", " 1 ", "01", "1.0", 1.5, "1.5", "a", b"1", None)


def test_every_pairing_agrees_with_sqlites_own_join(tmp_path) -> None:
    columns = {}  # (declared type, value index) -> the one-row column read back
    for t, decl in enumerate(TYPES):
        path = tmp_path / f"t{t}.sqlite"
        for v, value in enumerate(VALUES):
            columns[decl, v] = read_column(_table(path, f"v{v}", decl, [(1, value)]))
    sql = sqlite3.connect(":memory:")
    disagree = []
    for t1, c_decl in enumerate(TYPES):
        sql.execute(f"ATTACH DATABASE '{tmp_path / f't{t1}.sqlite'}' AS c")
        for t2, e_decl in enumerate(TYPES):
            sql.execute(f"ATTACH DATABASE '{tmp_path / f't{t2}.sqlite'}' AS e")
            for v1 in range(len(VALUES)):
                for v2 in range(len(VALUES)):
                    joined = sql.execute(f"SELECT COUNT(*) FROM c.v{v1} AS x JOIN e.v{v2} AS y ON x.k = y.k").fetchone()
                    found = check_effects(columns[c_decl, v1], columns[e_decl, v2])
                    paired = not found
                    if paired != (joined[0] == 1) or (not paired and len(found) != 2):
                        disagree.append((c_decl, VALUES[v1], e_decl, VALUES[v2], joined[0], found))
            sql.execute("DETACH DATABASE e")
        sql.execute("DETACH DATABASE c")
    assert disagree == []


def test_keys_that_sqlite_keeps_apart_are_shown_with_their_types(tmp_path, capsys) -> None:
    committed = _table(tmp_path / "orders.sqlite", "orders", "", [(1, 1)])
    effects = _table(tmp_path / "shipping.sqlite", "shipments", "", [(1, "1")])
    status, out, _err = _check(capsys, committed, effects)
    assert status == 1
    assert "committed business row 1 has no effect" in out
    assert "effect for business row '1', which was never committed" in out
    # Keys given as Python values compare with ==, and are written apart when they would look alike.
    found = check_effects([1, "o-2"], ["1", "o-2"], row="order", effect="shipment")
    assert [a.message for a in found] == [
        "committed order 1 has no shipment",
        "shipment for order '1', which was never committed (1 shipment(s))",
    ]


def test_keys_that_become_equal_are_repeated_committed_keys(tmp_path, capsys) -> None:
    committed = _table(tmp_path / "orders.sqlite", "orders", "", [(1, 1), (2, "1")])
    effects = _table(tmp_path / "shipping.sqlite", "shipments", "INTEGER", [(1, 1)])
    status, _out, err = _check(capsys, committed, effects)
    assert status == 2
    assert "repeated: 1 (rowids 1, 2)" in err and len(err.splitlines()) == 1


# 3. A NULL effect key is named as what it is: an effect row with a NULL key, by rowid.


def test_null_effect_key_is_named_by_its_rowid(tmp_path, capsys) -> None:
    committed = _table(tmp_path / "orders.sqlite", "orders", "TEXT", [(1, "o-1")])
    effects = _table(tmp_path / "shipping.sqlite", "shipments", "TEXT", [(1, "o-1"), (7, None)])
    status, out, _err = _check(capsys, committed, effects, "--json")
    assert status == 1
    (phantom,) = __import__("json").loads(out)["effects"]
    assert phantom["kind"] == "effect-phantom"
    assert phantom["message"] == "effect row with a NULL key (rowid 7) names no committed business row"
    assert "None" not in out


# 4. A crashed writer's hot journal: read the committed state, change nothing of the user's.

_CRASH = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=" + sys.argv[2])
conn.execute("CREATE TABLE orders (order_id INTEGER PRIMARY KEY, pad TEXT)")
conn.executemany("INSERT INTO orders VALUES (?, ?)", [(i, "committed") for i in (1, 2, 3)])
conn.execute("PRAGMA cache_size=1")
conn.execute("BEGIN")
conn.executemany("INSERT INTO orders VALUES (?, ?)", [(i, "x" * 400) for i in range(10, 1000)])
conn.execute("DELETE FROM orders WHERE order_id = 2")
os._exit(0)
"""


def _crashed_writer(path: Path, journal_mode: str) -> None:
    subprocess.run([sys.executable, "-c", textwrap.dedent(_CRASH), str(path), journal_mode], check=True)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.endswith("-shm")}


def test_hot_journal_is_rolled_back_in_a_copy_and_the_file_is_untouched(tmp_path, capsys) -> None:
    data = tmp_path / "data"
    data.mkdir()
    orders = data / "orders.sqlite"
    _crashed_writer(orders, "DELETE")
    journal = data / "orders.sqlite-journal"
    assert journal.stat().st_size > 0, "the writer should have died with its journal on disk"
    before = _files(data)
    effects = _table(tmp_path / "shipping.sqlite", "shipments", "INTEGER", [(1, 1), (2, 2), (3, 3)])
    status, out, err = _check(capsys, f"{orders}:orders.order_id", effects)
    assert status == 0, out + err
    assert "effect-lost 0, effect-duplicate 0, effect-phantom 0" in out
    assert "rolled back in a temporary copy" in err and len(err.splitlines()) == 1
    assert _files(data) == before  # the database and its journal, byte for byte
    assert sorted(read_column(f"{orders}:orders.order_id")) == [1, 2, 3]


def test_crashed_wal_writer_is_read_in_its_committed_state(tmp_path, capsys) -> None:
    data = tmp_path / "data"
    data.mkdir()
    orders = data / "orders.sqlite"
    _crashed_writer(orders, "WAL")
    before = _files(data)
    assert sorted(read_column(f"{orders}:orders.order_id")) == [1, 2, 3]
    assert _files(data) == before


# 5. The history format cites sources that exist.


@pytest.mark.parametrize("doc", ["docs/history-format.md", "docs/outbox.md"])
def test_docs_cite_files_that_exist(doc) -> None:
    text = (REPO / doc).read_text(encoding="utf-8")
    # Paths the reader can follow: a Markdown file, or a path with a folder (a bare `sink.py` is named in context).
    cited = {c for c in re.findall(r"`([\w./-]+\.(?:md|py))`", text) if c.endswith(".md") or "/" in c}
    cited |= set(re.findall(r"\]\(([\w./-]+\.md)\)", text))
    missing = [c for c in sorted(cited) if not (REPO / c).exists() and not (REPO / doc).parent.joinpath(c).exists()]
    assert missing == []
    assert "eos-checking" not in text


# 6. The module docstring shows the real command.


def test_effects_docstring_shows_a_command_the_cli_accepts() -> None:
    doc = effects_module.__doc__ or ""
    commands = [line.strip() for line in doc.splitlines() if line.strip().startswith("eos ")]
    assert commands
    for command in commands:
        args = build_parser().parse_args(shlex.split(command)[1:])
        assert args.command == "check" and args.committed and args.effects
