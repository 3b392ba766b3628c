"""One service's SQLite database as a node of the simulated world.

Kafka's exactly-once ends at Kafka's edge; the services around it keep their state in databases.
Here each service's database is a real SQLite file (the standard library's :mod:`sqlite3`, one
file per service in a :class:`DatabaseFolder`) owned by a :class:`Database` node named
``db-<service>``. The simulation stays deterministic because the database is only ever called
from the simulation's own processes, at a simulated instant, never from a thread or a timer of
its own; SQLite itself is deterministic for the same statements (row ids, ``ORDER BY`` ties are
broken by the statements, which name their order).

Life cycle
----------
==========  ==============================================================================
event       what the database does
==========  ==============================================================================
up          :meth:`Database.transaction` runs statements in one ``BEGIN IMMEDIATE`` …
            ``COMMIT``; an exception inside rolls the transaction back and is re-raised
crash       the connection is closed: an open transaction is lost (SQLite rolls it back),
            every committed row stays (the file is the durable state, ``synchronous=FULL``)
restart     a new connection opens the same file
down        every call raises :class:`~engine.errors.DatabaseUnavailableError`
==========  ==============================================================================

Every transaction's end is traced (``db.commit`` / ``db.rollback`` with its label and statement
count), so the trace shows a service's database work in the same total order as the Kafka
events around it.

Where the engine simplifies: a statement takes no simulated time (SQLite's own cost is measured
by ``bench/outbox.py``, not simulated), and there is one connection per database.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import trace_events as events
from engine.errors import DatabaseUnavailableError
from engine.sim.node import Node, NodeStatus

if TYPE_CHECKING:
    from engine.sim.world import World

__all__ = ["Database", "DatabaseFolder", "Transaction", "connect_read_only", "databases_of", "read_only"]


class DatabaseFolder:
    """The folder that holds one SQLite file per service of a run.

    ``path=None`` (the default) makes a fresh temporary folder, removed when this object is
    garbage-collected (keep it, e.g. in a run's ``extra``, as long as the files are wanted);
    :meth:`file` names the file of a service. The folder's name never reaches the trace, so runs
    in different folders are equal.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        if path is not None and not isinstance(path, (str, Path)):
            msg = f"path must be a folder path (str or pathlib.Path) or None for a temporary folder, got {path!r}"
            raise TypeError(msg)
        self._tmp = tempfile.TemporaryDirectory(prefix="eos-db-", ignore_cleanup_errors=True) if path is None else None
        self.path = Path(path) if path is not None else Path(self._tmp.name)  # type: ignore[union-attr]
        self.path.mkdir(parents=True, exist_ok=True)

    def file(self, service: str) -> Path:
        """Return the database file of ``service`` (``<folder>/<service>.sqlite``)."""
        return self.path / f"{service}.sqlite"


class Transaction:
    """The statements of one open database transaction (what :meth:`Database.transaction` yields)."""

    __slots__ = ("_conn", "statements")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.statements = 0

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement inside the transaction."""
        self.statements += 1
        return self._conn.execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one query inside the transaction; return its rows."""
        return self.execute(sql, params).fetchall()


class Database(Node):
    """A service's SQLite database file, opened by a node of the world.

    Parameters
    ----------
    world
        The simulated world.
    service
        The service's name; the node is ``db-<service>`` and the file ``<service>.sqlite``.
    folder
        Where the file lives (a fresh temporary folder when None).
    schema
        SQL run once when the file is new (``CREATE TABLE IF NOT EXISTS …``; run on every open).
    client
        Another connection to the same file, for another process (a relay reading the service's
        outbox): the node is ``db-<service>-<client>`` and crashes on its own.
    """

    def __init__(
        self,
        world: World,
        service: str,
        folder: DatabaseFolder | None = None,
        schema: str = "",
        *,
        client: str | None = None,
    ) -> None:
        if not isinstance(service, str) or not service or not service.replace("-", "").replace("_", "").isalnum():
            msg = f"service must be a name of letters, digits, '-' and '_' (it names the file), got {service!r}"
            raise ValueError(msg)
        if not isinstance(schema, str):
            raise TypeError(f"schema must be SQL text, got {schema!r}")
        if client is not None and (not isinstance(client, str) or not client.replace("-", "").isalnum()):
            raise ValueError(f"client must be a name of letters, digits and '-', got {client!r}")
        super().__init__(world, f"db-{service}" if client is None else f"db-{service}-{client}")
        self.service = service
        self.folder = folder if folder is not None else DatabaseFolder()
        self.path = self.folder.file(service)
        self.schema = schema
        self.commits = 0
        self.rollbacks = 0
        self._conn: sqlite3.Connection | None = None
        self._open()

    # -- life cycle ---------------------------------------------------------------------------

    def _open(self) -> None:
        # timeout=0: a lock held by another connection fails at once instead of waiting on the wall clock
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        if self.schema:
            conn.executescript(self.schema)
        self._conn = conn

    def on_crash(self) -> None:
        """Close the connection: an open transaction is lost, committed rows stay in the file."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def on_restart(self) -> None:
        """Open the file again."""
        self._open()

    def close(self) -> None:
        """Close the connection for good (the file stays)."""
        self.on_crash()

    def _connection(self) -> sqlite3.Connection:
        if self.status is not NodeStatus.UP or self._conn is None:
            msg = f"{self.name} is {self.status.value}: restart it (cluster.restart('{self.name}')) before using it"
            raise DatabaseUnavailableError(msg)
        return self._conn

    # -- calls ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, label: str = "") -> Iterator[Transaction]:
        """Run the block's statements in one transaction: commit at the end, roll back on an exception.

        The exception is re-raised after the rollback; nothing the block wrote is kept.
        """
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        txn = Transaction(conn)
        try:
            yield txn
        except BaseException as exc:
            if self._conn is conn:  # a crash inside the block already closed (and so rolled back) it
                conn.execute("ROLLBACK")
            self.rollbacks += 1
            self.world.trace.emit(
                self.name,
                "state",
                events.DB_ROLLBACK,
                ("label", label),
                ("statements", txn.statements),
                ("reason", type(exc).__name__),
            )
            raise
        conn.execute("COMMIT")
        self.commits += 1
        self.world.trace.emit(self.name, "state", events.DB_COMMIT, ("label", label), ("statements", txn.statements))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one read outside a transaction; return its rows."""
        return self._connection().execute(sql, params).fetchall()

    def rows(self, table: str, order_by: str = "rowid") -> list[dict[str, Any]]:
        """Return every row of ``table`` as dicts, in ``order_by`` order (for views and checkers)."""
        known = {r[0] for r in self.query("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if table not in known:
            names = ", ".join(sorted(known)) or "none"
            raise ValueError(f"{self.name} has no table {table!r}; its tables are {names}")
        cur = self._connection().execute(f"SELECT * FROM {table} ORDER BY {order_by}")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def connect_read_only(path: str | Path) -> sqlite3.Connection:
    """Open a SQLite file read-only (``mode=ro``): checkers and views read a run's files, never write them.

    The caller closes the connection (or uses :func:`read_only`).
    """
    return sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)


@contextlib.contextmanager
def read_only(path: str | Path) -> Iterator[sqlite3.Connection]:
    """Yield a read-only connection to a SQLite file (:func:`connect_read_only`); close it afterwards."""
    conn = connect_read_only(path)
    try:
        yield conn
    finally:
        conn.close()


def databases_of(run: Any) -> dict[str, Path]:
    """Return the database files a run kept, by service name, sorted.

    ``run`` is a scenario's result (its ``state``) or a workload's state itself: a dataclass (or a
    dict) whose fields hold :class:`DatabaseFolder` objects (every ``*.sqlite`` in them),
    :class:`Database` nodes, services with a ``db`` node, and paths under names ending in ``_db``.
    """
    found: dict[str, Path] = {}
    state = getattr(run, "state", run)
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        fields = vars(state)
    elif isinstance(state, dict):
        fields = state
    else:
        return found
    for key, value in fields.items():
        db = getattr(value, "db", None)
        if isinstance(value, DatabaseFolder):
            for f in sorted(value.path.glob("*.sqlite")):
                found[f.stem] = f
        elif isinstance(value, Database) or isinstance(db, Database):
            node = value if isinstance(value, Database) else db
            found[node.service] = node.path
        elif isinstance(value, str | Path) and str(key).endswith("_db") and str(value).endswith(".sqlite"):
            found[Path(value).stem] = Path(value)
    return dict(sorted(found.items()))
