"""The versioned schema of an export: every table's exact Arrow schema, and the check against it.

Role
----
One place that says what an export of this version holds (``docs/export-schema.md`` describes
it in words, and a test keeps the two equal). :data:`TABLES` assembles each table's schema from
the run columns (:data:`engine.export.common.RUN_FIELDS`) and the field tuples of the modules
that build the rows: :mod:`engine.export.history`, :mod:`engine.export.logs` and
:mod:`engine.export.events`. :func:`validate` compares a schema met elsewhere (a Parquet file, a
table handed in) with it.

Invariants
----------
* :data:`TABLES` is in a fixed order (client history, logs, trace), the order of the manifest.
* :data:`SCHEMA_VERSION` changes whenever a table or a column is added, removed, renamed, or
  changes type or nullability (the version policy of ``docs/export-schema.md``).
* Errors are one line: the table, the first column that differs, and what to do.

What it does not do
-------------------
It reads no files (:mod:`engine.export.parquet` does) and builds no rows.
"""

from __future__ import annotations

import pyarrow as pa

from engine.errors import _ShortTraceback
from engine.export.common import RUN_FIELDS
from engine.export.events import EVENT_FIELDS
from engine.export.history import HISTORY_FIELDS, HISTORY_MOPS_FIELDS
from engine.export.logs import LOG_FIELDS

__all__ = ["REEXPORT_HINT", "SCHEMA_VERSION", "TABLES", "ExportError", "difference", "validate"]

#: The version of the tables below; written to, and checked in, every export's manifest.
SCHEMA_VERSION = 1

#: What to tell a user whose files do not match this version.
REEXPORT_HINT = "re-export it with this version of eos: eos export SCENARIO --seed N --out DIR"


class ExportError(_ShortTraceback, ValueError):
    """An export cannot be built, written or read; the message is one line that says what to do."""


def _assemble() -> dict[str, pa.Schema]:
    parts: list[tuple[str, tuple[pa.Field, ...]]] = [
        ("history", tuple(HISTORY_FIELDS)),
        ("history_mops", tuple(HISTORY_MOPS_FIELDS)),
    ]
    parts += [(name, tuple(fields)) for name, fields in LOG_FIELDS.items()]
    parts += list(EVENT_FIELDS.items())
    out: dict[str, pa.Schema] = {}
    for name, fields in parts:
        if name in out:
            raise ExportError(f"table {name} is defined twice; this is a bug in eos")
        out[name] = pa.schema([*RUN_FIELDS, *fields])
    return out


#: Every table of an export with its full schema (the run columns first).
TABLES: dict[str, pa.Schema] = _assemble()


def _type_text(t: pa.DataType) -> str:
    return " ".join(str(t).split())


def difference(name: str, schema: pa.Schema) -> str | None:
    """Return the first way ``schema`` differs from table ``name``'s, or None when they agree.

    Columns are compared in order by name, type and nullability; schema metadata is ignored.
    """
    expected = TABLES[name]
    got = {f.name: f for f in schema}
    for i, want in enumerate(expected):
        have = got.get(want.name)
        if have is None:
            return f"has no column {want.name}"
        if not have.type.equals(want.type):
            return f"column {want.name} is {_type_text(have.type)}, expected {_type_text(want.type)}"
        if have.nullable != want.nullable:
            return f"column {want.name} is {'nullable' if have.nullable else 'not nullable'}, expected the opposite"
        if i < len(schema) and schema[i].name != want.name:
            return f"column {want.name} is at position {schema.get_field_index(want.name)}, expected {i}"
    extra = [f.name for f in schema if f.name not in expected.names]
    if extra:
        return f"has an extra column {extra[0]}"
    return None


def validate(name: str, schema: pa.Schema, *, where: str = "") -> None:
    """Check that ``schema`` is exactly table ``name``'s schema of this version.

    Parameters
    ----------
    name
        A table name, a key of :data:`TABLES`.
    schema
        The schema to check (of a table or a Parquet file).
    where
        Where the schema came from (a file path), named in the message.

    Raises
    ------
    ExportError
        One line naming the table, the first column that differs and what to do.
    """
    if name not in TABLES:
        raise ExportError(f"no table named {name!r}; the tables are: {', '.join(TABLES)}")
    if not isinstance(schema, pa.Schema):
        raise ExportError(f"table {name}: expected a pyarrow Schema, got {type(schema).__name__}")
    diff = difference(name, schema)
    if diff is not None:
        at = f" ({where})" if where else ""
        raise ExportError(
            f"table {name}{at} does not match export schema version {SCHEMA_VERSION}: {diff}; {REEXPORT_HINT}"
        )
