"""C1 ``inconsistent-offsets``: one offset of a key holds two or more different values.

Role
----
Reads the version order built by :mod:`engine.check.analysis` (committed sends with known
offsets plus every poll) and reports each (key, offset) that more than one value claims.

Invariants
----------
One anomaly per (key, offset); values sorted, so output is deterministic.

What it does not do
-------------------
It does not say which value is right; with replicas that diverged, both are suspects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.check.analysis import Analysis, as_analysis
from engine.check.history import History, Op
from engine.check.messages import history_anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly

__all__ = ["check_inconsistent_offsets"]


def check_inconsistent_offsets(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return one ``inconsistent-offsets`` anomaly per offset that holds several values."""
    a = as_analysis(history)
    out: list[Anomaly] = []
    for key in a.sorted_keys():
        ks = a.keys[key]
        for offset in sorted(ks.conflicts):
            values = tuple(sorted(ks.conflicts[offset]))
            writers = sorted({ks.writer[v] for v in values if v in ks.writer})
            out.append(history_anomaly("inconsistent-offsets", key, (offset,), values, writers))
    return out
