"""``%eos_db``: the service databases of the last scenario run (the outbox, sinks, sagas), read with SQL."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from eos_magics.errors import EosUsageError
from eos_magics.magics import FamilyMagics


@magics_class
class DbMagics(FamilyMagics):
    """Look into the SQLite files a scenario's services wrote: tables, SQL as pandas, the effects check."""

    @line_magic
    @magic_arguments()
    @argument("action", choices=["tables", "sql", "check"])
    @argument("query", nargs="*", help="sql: the query (read-only; no quotes needed)")
    @argument("--db", default=None, help="sql: which database (a service name from %%eos_db tables)")
    @argument("--committed", default="orders:orders.order_id", help="check: DB:TABLE.COLUMN of the business keys")
    @argument("--effects", default="shipping:shipments.order_id", help="check: DB:TABLE.COLUMN the effects name")
    def eos_db(self, line: str) -> Any:
        """Read the last scenario run's databases.

        %eos_db tables
        %eos_db sql --db orders SELECT order_id, status FROM orders LIMIT 5
        %eos_db check --committed orders:orders.order_id --effects shipping:shipments.order_id
        """
        head, _, rest = line.strip().partition(" ")
        if head == "sql":  # the query is taken as written (quotes, commas, * and all), not split as arguments
            return self.session.sql(*_sql_and_db(rest.strip()))
        args = parse_argstring(self.eos_db, line)
        query = " ".join(args.query)
        if args.action == "tables":
            if query:
                raise EosUsageError("tables takes no query")
            return self.session.database_tables()
        if query:
            raise EosUsageError("check takes no query; name the columns with --committed and --effects")
        return self.session.check_effects(args.committed, args.effects)


def _sql_and_db(rest: str) -> tuple[str, str | None]:
    """Split ``[--db NAME] QUERY`` into the query and the database name."""
    if not rest.startswith("--db"):
        return rest, None
    parts = rest.split(None, 2)
    if len(parts) < 2 or parts[0] != "--db":
        raise EosUsageError("sql --db takes a database name, e.g. %eos_db sql --db orders SELECT * FROM orders")
    return (parts[2] if len(parts) > 2 else ""), parts[1]
