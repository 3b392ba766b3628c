"""What every exported table shares: the run columns, the partition-key type, text for values.

Every table of an export (``docs/export-schema.md``) begins with the same three columns, so
tables of many runs can be stacked and joined: ``run_id`` (string, unique per run in one export
directory), ``scenario`` (string; ``""`` for a session driven by hand) and ``seed`` (int64).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

__all__ = [
    "KEY_LIST",
    "KEY_STRUCT",
    "RUN_FIELDS",
    "RunId",
    "as_text",
    "table",
]

#: The leading columns of every table.
RUN_FIELDS: tuple[pa.Field, ...] = (
    pa.field("run_id", pa.string(), nullable=False),
    pa.field("scenario", pa.string(), nullable=False),
    pa.field("seed", pa.int64(), nullable=False),
)

#: A partition key ``(topic, partition)`` as one value.
KEY_STRUCT = pa.struct([pa.field("topic", pa.string()), pa.field("partition", pa.int32())])
#: A list of partition keys (assignments, rebalance logs, a transaction's partitions).
KEY_LIST = pa.list_(KEY_STRUCT)


class RunId:
    """The three run columns of one run: ``RunId("demo-7", "demo", 7)``."""

    __slots__ = ("run_id", "scenario", "seed")

    def __init__(self, run_id: str, scenario: str, seed: int) -> None:
        if not isinstance(run_id, str) or not run_id:
            raise ValueError(f"run_id must be a non-empty string, not {run_id!r}")
        if not isinstance(scenario, str):
            raise ValueError(f"scenario must be a string, not {scenario!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an integer, not {seed!r}")
        self.run_id = run_id
        self.scenario = scenario
        self.seed = seed

    def __repr__(self) -> str:
        return f"RunId({self.run_id!r}, {self.scenario!r}, {self.seed})"


def as_text(v: Any) -> str | None:
    """Return a record key or value as text: str as is, bytes decoded (bad bytes escaped), else ``str(v)``."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bytes | bytearray):
        return bytes(v).decode("utf-8", "backslashreplace")
    return str(v)


def table(run: RunId, fields: Sequence[pa.Field], columns: Mapping[str, Sequence[Any]]) -> pa.Table:
    """Build one table: the run columns, then ``fields`` filled from ``columns`` (same names, same lengths).

    The schema is exactly ``RUN_FIELDS + fields``, also when there are no rows.
    """
    schema = pa.schema([*RUN_FIELDS, *fields])
    n = len(columns[fields[0].name]) if fields else 0
    arrays = [
        pa.array([run.run_id] * n, pa.string()),
        pa.array([run.scenario] * n, pa.string()),
        pa.array([run.seed] * n, pa.int64()),
    ]
    for f in fields:
        col = columns[f.name]
        if len(col) != n:
            raise ValueError(f"column {f.name} has {len(col)} values, expected {n}")
        arrays.append(pa.array(col, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)
