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
from operator import sub

from engine.check.analysis import Analysis, as_analysis
from engine.check.anomaly import Anomaly
from engine.check.history import History, Key, Op, Send

__all__ = ["check_sends"]


def _contiguous_single_key(
    sends: tuple[Send, ...],
) -> tuple[Key, tuple[int, str], tuple[int, str]] | None:
    """For sends to one key acknowledged at consecutive offsets, return (key, first, last).

    This is the common shape of a producer batch; the test runs on whole columns in C. Any
    other shape returns None and goes through the per-send loop.
    """
    if len(sends) < 2:
        return None
    topics, partitions, values, offsets = zip(*sends, strict=True)
    n = len(values)
    if topics.count(topics[0]) != n or partitions.count(partitions[0]) != n or None in offsets:
        return None
    if offsets[-1] - offsets[0] != n - 1 or list(map(sub, offsets[1:], offsets[:-1])).count(1) != n - 1:
        return None
    return (topics[0], partitions[0]), (offsets[0], values[0]), (offsets[-1], values[-1])


def check_sends(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return ``nonmonotonic-send``, ``int-nonmonotonic-send`` and ``int-send-skip`` anomalies."""
    a = as_analysis(history)
    keys = a.keys
    out: list[Anomaly] = []
    # process -> key -> (last offset sent, op index)
    last_sent: dict[int, dict[Key, tuple[int, int]]] = {}
    for op, sends in a.send_ops:
        if op.f == "crash":
            last_sent.pop(op.process, None)
            continue
        if not a.is_committed(op):
            continue
        idx = op.index
        first: dict[Key, tuple[int, str]] = {}
        prev: dict[Key, tuple[int, str]] = {}
        fast = _contiguous_single_key(sends)
        if fast is not None:
            key, first[key], prev[key] = fast
            sends = ()
        for t, p, v, o in sends:
            key = (t, p)
            ks = keys[key]
            if o is None:
                o = ks.read.get(v)
                if o is None:
                    o = ks.seen.get(v)
                    if o is None:
                        continue
            before = prev.get(key)
            if before is None:
                first[key] = (o, v)
            elif o != before[0] + 1:
                d = ks.delta(before[0], o)
                if d != 1:
                    kind = "int-send-skip" if d > 1 else "int-nonmonotonic-send"
                    how = f"{d - 1} other value(s) landed between" if d > 1 else "the later send landed first"
                    out.append(
                        Anomaly(
                            kind,
                            key,
                            (before[0], o),
                            (before[1], v),
                            (idx,),
                            f"op {idx} sent {before[1]!r} then {v!r} to {t}/{p}; they landed at offsets "
                            f"{before[0]} and {o}: {how}",
                        )
                    )
            prev[key] = (o, v)
        mine = last_sent.get(op.process)
        if mine is None:
            mine = last_sent[op.process] = {}
        for key, (o, v) in first.items():
            earlier = mine.get(key)
            if earlier is not None and keys[key].delta(earlier[0], o) < 1:
                out.append(
                    Anomaly(
                        "nonmonotonic-send",
                        key,
                        (earlier[0], o),
                        (keys[key].offsets.get(earlier[0], ""), v),
                        (earlier[1], idx),
                        f"op {idx} of process {op.process} sent {v!r} to {key[0]}/{key[1]} at offset {o}, "
                        f"at or below offset {earlier[0]} of its previous send op {earlier[1]}",
                    )
                )
            mine[key] = (prev[key][0], idx)
    return out
