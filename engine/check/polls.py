"""C7-C10: the order in which consumers see a key.

Role
----
* ``poll-skip`` / ``nonmonotonic-poll``: two successive ``ok`` ops of one process that polled
  key k, with no assign, subscribe or crash of that process between them (an assign trims the
  positions to the keys still assigned). With ``delta`` = dense index of the first value of the
  later op minus that of the last value of the earlier op, ``delta > 1`` skipped values known to
  exist and ``delta < 1`` went backwards or re-read.
* ``int-poll-skip`` / ``int-nonmonotonic-poll``: the same arithmetic between consecutive reads
  of k inside one op (any completion type: a consumer's fetches are ordered whatever the op's
  outcome). Keys in the op's rebalance log are exempt.

The analysis pass already dropped every pair whose offsets are consecutive (they are adjacent
in the dense index); only the rest needs rank arithmetic here.

Invariants
----------
One anomaly per offending pair (by key, then in history order); offsets are ``(before, after)``.

What it does not do
-------------------
It does not decide whether subscribe-mode skips are acceptable; the allowed set does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.check.analysis import Analysis, KeyState, as_analysis
from engine.check.history import History, Key, Op
from engine.check.messages import history_anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly

__all__ = ["check_polls"]

#: How many skipped values an anomaly lists; the count in the message is exact.
_SHOWN = 10


def _between(ks: KeyState, before: int, after: int) -> list[str]:
    """Values strictly between two offsets in the version order (the ones a skip missed)."""
    s = ks.sorted_offsets
    i, j = ks.index(before) + 1, ks.index(after)
    return [ks.offsets[o] for o in s[i : min(j, i + _SHOWN)]]


def _describe(ks: KeyState, key: Key, kind: str, before: int, after: int, delta: int, ops: tuple[int, ...]) -> Anomaly:
    if delta > 1:
        values = _between(ks, before, after)
    else:
        values = [ks.offsets[o] for o in (before, after) if o in ks.offsets]
    return history_anomaly(kind, key, (before, after), values, ops, n=delta)


def check_polls(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return ``poll-skip``, ``nonmonotonic-poll``, ``int-poll-skip`` and ``int-nonmonotonic-poll``."""
    a = as_analysis(history)
    keys = a.keys
    out: list[Anomaly] = []
    for key in a.sorted_keys():
        ks = keys[key]
        it = iter(ks.poll_gaps)
        for idx, before, after in zip(it, it, it, strict=True):
            d = ks.delta(before, after)
            if d > 1:
                out.append(_describe(ks, key, "int-poll-skip", before, after, d, (idx,)))
            elif d < 1:
                out.append(_describe(ks, key, "int-nonmonotonic-poll", before, after, d, (idx,)))
    for _process, key, prev_op, before, idx, after in a.poll_jumps:
        ks = keys[key]
        d = ks.delta(before, after)
        if d > 1:
            out.append(_describe(ks, key, "poll-skip", before, after, d, (prev_op, idx)))
        elif d < 1:
            out.append(_describe(ks, key, "nonmonotonic-poll", before, after, d, (prev_op, idx)))
    return out
