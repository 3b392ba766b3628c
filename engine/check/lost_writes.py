"""C3 ``lost-write`` and C4 ``unseen``: committed writes that no ``ok`` poll ever returned.

Role
----
A write is *committed* when its op completed ``ok``, or completed ``info`` and some ``ok`` op
read one of that op's sends (then all of the op's sends must be visible). For each key:

* ``lost-write``: a committed value was never read by an ``ok`` op although ``ok`` reads went
  past it: its last known offset is at or below the *bound*, the highest first-offset of any
  value read by an ``ok`` op. (Comparing offsets is the same as comparing dense indexes, since
  the index is monotone in the offset.)
* ``unseen``: the remaining committed values never read by the end of the history (not placed,
  or placed beyond the bound). This cannot tell loss from extreme delay, which is why the
  harness forbids it only after the heal-and-liveness phase.

Invariants
----------
A value is reported under at most one of the two kinds (lost writes are not repeated in
``unseen``). One ``lost-write`` anomaly per value; one ``unseen`` anomaly per key.

What it does not do
-------------------
It does not report unresolved ``info`` writes (they may never have happened) nor ``fail``
writes (their absence is correct; reading them is ``G1a``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.check.analysis import Analysis, KeyState, as_analysis
from engine.check.history import History, Key, Op
from engine.check.messages import history_anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly

__all__ = ["check_lost_writes"]

_UNPLACED = 1 << 62  # sorts unplaced values after every real offset


def _bound(ks: KeyState) -> int | None:
    """Highest first-offset of any value read by an ok op, or None if nothing was read."""
    read = ks.read
    if not read:
        return None
    dups = ks.dup_offsets
    if not dups:
        return max(read.values())
    return max(min(dups[v]) if v in dups else o for v, o in read.items())


def check_lost_writes(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return ``lost-write`` anomalies (one per value) and ``unseen`` ones (one per key)."""
    a = as_analysis(history)
    out: list[Anomaly] = []
    for key in a.sorted_keys():
        ks = a.keys[key]
        unread = ks.unread_writes()
        if not unread:
            continue
        bound = _bound(ks)
        unseen: list[tuple[int, str]] = []
        for v in sorted(unread):
            offs = ks.offsets_of(v)
            if bound is not None and offs and offs[-1] <= bound:
                out.append(_lost(key, ks, v, offs[-1], bound))
            else:
                unseen.append((offs[0] if offs else _UNPLACED, v))
        if unseen:
            out.append(_unseen(key, ks, sorted(unseen)))
    return out


def _lost(key: Key, ks: KeyState, value: str, offset: int, bound: int) -> Anomaly:
    return history_anomaly("lost-write", key, (offset, bound), (value,), (ks.writer[value],))


def _unseen(key: Key, ks: KeyState, rows: list[tuple[int, str]]) -> Anomaly:
    values = tuple(v for _o, v in rows)
    offsets = tuple(o for o, _v in rows if o != _UNPLACED)
    return history_anomaly("unseen", key, offsets, values, sorted({ks.writer[v] for v in values}))
