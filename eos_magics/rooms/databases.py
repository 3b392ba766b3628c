"""The last scenario run's service databases (the outbox, sinks, sagas), read with SQL and checked.

Invariants
----------
Every database is opened read-only (``mode=ro``): reading never changes what the run left.
"""

from __future__ import annotations

from typing import Any

from eos_magics.errors import EosUsageError, require, unknown_name
from eos_magics.rooms.catalog import Catalog, workload_of

__all__ = ["Databases"]


class Databases:
    """SQL over the database files of the last scenario run (``%eos_db``).

    Parameters
    ----------
    catalog : Catalog
        The scenario catalog; its last run's databases are the ones read.
    """

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def databases(self) -> dict[str, Any]:
        """Return the last scenario run's database files by service name (``%eos_db``)."""
        from engine.db import databases_of

        last = self.catalog.last_scenario
        found = databases_of(workload_of(last))
        if not found:
            what = "no scenario has run yet" if last is None else "the last scenario kept no database"
            raise EosUsageError(f"{what}; run one with a database, e.g. %eos_scenario run outbox: polling relay")
        return found

    def database(self, name: str | None) -> Any:
        """Return one database file of the last run (the only one, or by ``name``)."""
        found = self.databases()
        if name is None:
            if len(found) != 1:
                raise EosUsageError(f"the last run has {len(found)} databases; pick one with --db ({', '.join(found)})")
            return next(iter(found.values()))
        if name not in found:
            raise unknown_name("database", name, found, how="list them with %eos_db tables")
        return found[name]

    def sql(self, query: str, db: str | None = None) -> Any:
        """Run a read-only SQL query on one of the last run's databases; return a pandas DataFrame."""
        import sqlite3

        from engine.db import connect_read_only

        pd = require("pandas", "%eos_db sql (a pandas DataFrame)")
        if not query.strip():
            raise EosUsageError("give a query, e.g. %eos_db sql --db orders SELECT * FROM orders LIMIT 5")
        path = self.database(db)
        conn = connect_read_only(path)
        try:
            return pd.read_sql_query(query, conn)
        except (pd.errors.DatabaseError, sqlite3.Error) as exc:
            raise EosUsageError(f"{path.stem}: {str(exc).splitlines()[0]}") from None
        finally:
            conn.close()

    def database_tables(self) -> Any:
        """Return every table of the last run's databases with its row count (``%eos_db tables``)."""
        from engine.db import connect_read_only
        from eos_magics.views.base import TableView

        rows = []
        for name, path in self.databases().items():
            conn = connect_read_only(path)
            try:
                query = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
                for (t,) in conn.execute(query).fetchall():
                    if t.startswith("sqlite_"):
                        continue
                    n = conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
                    rows.append((name, t, n))
            finally:
                conn.close()
        text = "\n".join(f"{d:<12} {t:<20} {n:>7}" for d, t, n in rows)
        return TableView(text, ("database", "table", "rows"), rows, title="service databases of the last run")

    def check_effects(self, committed: str, effects: str) -> Any:
        """Run the database checker on ``DB:TABLE.COLUMN`` specs of the last run's databases."""
        from engine.check.effects import check_effects, read_column, summary
        from eos_magics.views.base import TableView

        def column(spec: str) -> list[Any]:
            if ":" not in spec:
                raise EosUsageError(f"expected DB:TABLE.COLUMN (e.g. orders:orders.order_id), got {spec!r}")
            name, where = spec.split(":", 1)
            try:
                return read_column(f"{self.database(name)}:{where}")
            except ValueError as exc:
                raise EosUsageError(str(exc)) from None

        committed_keys, effect_keys = column(committed), column(effects)
        try:
            found = check_effects(committed_keys, effect_keys)
        except ValueError as exc:  # two committed rows with one key: the check has no single answer
            raise EosUsageError(" ".join(str(exc).split())) from None
        counts = summary(found)
        notes = [n for n in (getattr(committed_keys, "note", ""), getattr(effect_keys, "note", "")) if n]
        head = "database side: " + ", ".join(f"{k} {n}" for k, n in counts.items())
        head += "".join(f" ({n})" for n in notes)
        rows = [(a.kind, a.values[0] if a.values else "", a.message) for a in found]
        text = "\n".join([head, *(f"  {k}: {m}" for k, _v, m in rows)])
        return TableView(text, ("kind", "key", "message"), rows, title="effects check", summary=head)
