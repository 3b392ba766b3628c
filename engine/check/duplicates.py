"""C2 ``duplicate``: one value appears at more than one offset of a key.

Role
----
Values are unique per key and clients never retry above the client library, so a value at two
offsets was written twice by the system (a broken idempotent producer, a replayed batch).

Invariants
----------
One anomaly per (key, value), offsets ascending. Allowed only in the at-least-once mode.

What it does not do
-------------------
It does not count re-reads of the *same* offset (a consumer re-reading is an ordering question,
see :mod:`engine.check.polls`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.check.analysis import Analysis, as_analysis
from engine.check.history import History, Op
from engine.check.messages import history_anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly

__all__ = ["check_duplicates"]


def check_duplicates(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return one ``duplicate`` anomaly per value found at two or more offsets of its key."""
    a = as_analysis(history)
    out: list[Anomaly] = []
    for key in a.sorted_keys():
        ks = a.keys[key]
        rows = sorted((sorted(offs), v) for v, offs in ks.dup_offsets.items())
        for offsets, value in rows:
            writer = ks.writer.get(value)
            out.append(history_anomaly("duplicate", key, offsets, (value,), () if writer is None else (writer,)))
    return out
