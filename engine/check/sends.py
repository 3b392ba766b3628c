"""C11, C12 and C14 (part): where a producer's sends land in the version order.

Role
----
Over committed ops (``ok``, or ``info`` proven committed), with the dense index of each sent
value (its acknowledged offset, or else the first offset at which it was seen):

* ``nonmonotonic-send``: two successive send ops of one process to key k, where the later op's
  first value lands at or below the earlier op's last value. A crash of the process forgets its
  last sends (a new producer starts).
* ``int-nonmonotonic-send``: inside one op, a later send to k landed at or below an earlier one.
* ``int-send-skip``: inside one op, two sends to k are not adjacent (another producer's value
  landed between). **Allowed** under EOS: Kafka transactions give no write isolation.

Invariants
----------
One anomaly per offending pair, in history order; offsets are ``(before, after)``.

What it does not do
-------------------
Sends whose position is unknown (no offset, never read) are skipped, not guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine.check.analysis import Analysis, KeyState, as_analysis, send_summary
from engine.check.history import History, Key, Op
from engine.check.messages import history_anomaly

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly

__all__ = ["check_sends"]


def check_sends(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return ``nonmonotonic-send``, ``int-nonmonotonic-send`` and ``int-send-skip`` anomalies."""
    a = as_analysis(history)
    keys = a.keys
    proven = a.proven
    out: list[Anomaly] = []
    # process -> key -> (last offset sent, op index)
    last_sent: dict[int, dict[Key, tuple[int, int]]] = {}
    for idx, process, typ, summary, sends in a.send_ops:
        if typ == "crash":
            last_sent.pop(process, None)
            continue
        if typ == "info" and idx not in proven:
            continue
        if summary is None:
            summary = send_summary(a, sends or (), KeyState.locate)
        firsts, gaps = summary
        mine = last_sent.get(process)
        if mine is None:
            mine = last_sent[process] = {}
        if not gaps and len(firsts) == 4:
            # The common shape: one key, consecutive offsets.
            key, o, v, last = firsts
            earlier = mine.get(key)
            if earlier is not None and o <= earlier[0]:
                out.append(_nonmonotonic(keys[key], key, process, idx, o, v, earlier))
            mine[key] = (last, idx)
            continue
        it = iter(gaps)
        for key, before, bv, o, v in zip(it, it, it, it, it, strict=True):
            d = keys[key].delta(before, o)
            if d != 1:
                kind = "int-send-skip" if d > 1 else "int-nonmonotonic-send"
                out.append(history_anomaly(kind, key, (before, o), (bv, v), (idx,), n=d))
        it = iter(firsts)
        for key, o, v, last in zip(it, it, it, it, strict=True):
            earlier = mine.get(key)
            if earlier is not None and o <= earlier[0]:
                out.append(_nonmonotonic(keys[key], key, process, idx, o, v, earlier))
            mine[key] = (last, idx)
    return out


def _nonmonotonic(ks: KeyState, key: Key, process: int, idx: int, o: int, v: str, earlier: tuple[int, int]) -> Anomaly:
    """The ``nonmonotonic-send`` anomaly of op ``idx``, whose first send to ``key`` landed at ``o``.

    Both offsets hold values in the version order (an acknowledged or located send is always
    placed), so the later send lands at or below the earlier one exactly when its offset is
    not greater: no rank is needed to decide.
    """
    values = (ks.offsets.get(earlier[0], ""), v)
    return history_anomaly("nonmonotonic-send", key, (earlier[0], o), values, (earlier[1], idx), process=process)
