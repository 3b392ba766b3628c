"""C5 ``G1a`` (aborted read) and C6 ``precommitted-read``.

Role
----
* ``G1a``: an ``ok`` op read a value whose sending op definitely failed (``fail``: an aborted
  transaction, a rejected send). read_committed consumers must never return such data.
* ``precommitted-read``: an op polled values it had itself sent in the same op. Most databases
  allow a transaction to read its own writes; Kafka does not: a transaction's sends are
  invisible to every poller, its own consumer included, until the commit marker is written.

Invariants
----------
One ``G1a`` anomaly per (key, value), naming every ``ok`` reader; one ``precommitted-read``
anomaly per (op, key). The readers of an aborted value are found by a second, targeted scan
that runs only when there is something to report.

What it does not do
-------------------
It does not flag reads of ``info`` writes: an ``ok`` read of one *proves* that op committed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.check.analysis import Analysis, as_analysis
from engine.check.history import History, Key, Op
from engine.check.messages import history_anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly

__all__ = ["check_aborted_reads", "check_precommitted_reads"]


def check_aborted_reads(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return one ``G1a`` anomaly per value of a failed op that an ok op read."""
    a = as_analysis(history)
    hits: dict[Key, set[str]] = {}
    for key in a.sorted_keys():
        ks = a.keys[key]
        if ks.failed and ks.read:
            found = ks.failed.keys() & ks.read.keys()
            if found:
                hits[key] = found
    if not hits:
        return []
    readers = a.ok_readers(hits)
    out: list[Anomaly] = []
    for key in sorted(hits):
        ks = a.keys[key]
        for v in sorted(hits[key]):
            rows = sorted(set(readers.get((key, v), [])))
            reader_ops = sorted({r for r, _o in rows})
            offsets = sorted({o for _r, o in rows})
            out.append(history_anomaly("G1a", key, offsets, (v,), (ks.failed[v], *reader_ops)))
    return out


def check_precommitted_reads(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return one ``precommitted-read`` anomaly per (op, key) where an op read its own sends."""
    a = as_analysis(history)
    out: list[Anomaly] = []
    for idx, key, values in sorted(a.precommitted):
        ks = a.keys[key]
        offsets = sorted({o for v in values for o in ks.offsets_of(v)})
        out.append(history_anomaly("precommitted-read", key, offsets, values, (idx,)))
    return out
