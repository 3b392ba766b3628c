"""X4: the sentinel probe for hanging transactions (the "all transactions finished" check).

Role
----
After the run heals and goes quiet, a fresh non-transactional producer writes one sentinel
value to every partition of interest, and a read_committed consumer reads to the end. A
transaction left open (no end marker) pins the last stable offset below the sentinel, so the
sentinel never becomes visible: each unseen sentinel is a ``hanging-transaction`` on its
partition. Kafka's ``streams_eos_test.py`` ends with this probe.

Invariants
----------
One anomaly per partition with unseen sentinels, in key order.

What it does not do
-------------------
It does not write the sentinels or poll; the harness does, then hands the values in.
"""

from __future__ import annotations

from collections.abc import Iterable

from engine.check.anomaly import Anomaly
from engine.check.history import Key

__all__ = ["check_sentinels"]


def check_sentinels(sentinels: Iterable[tuple], reads: Iterable[tuple]) -> list[Anomaly]:
    """Return a ``hanging-transaction`` anomaly for each partition whose sentinel was not read.

    Parameters
    ----------
    sentinels : iterable of (topic, partition, value, ...) tuples
        The sentinels written after quiescence (a :class:`~engine.check.history.Send` fits).
    reads : iterable of (topic, partition, offset, value) tuples
        Every record the final read_committed consumer returned (a
        :class:`~engine.check.history.Poll` fits).
    """
    seen: set[tuple[str, int, str]] = {(r[0], r[1], r[3]) for r in reads}
    missing: dict[Key, list[str]] = {}
    for s in sentinels:
        if (s[0], s[1], s[2]) not in seen:
            missing.setdefault((s[0], s[1]), []).append(s[2])
    return [
        Anomaly(
            "hanging-transaction",
            key,
            (),
            tuple(sorted(values)),
            (),
            f"sentinel {', '.join(repr(v) for v in sorted(values))} written to {key[0]}/{key[1]} after "
            "quiescence was never read: a transaction may hang and pin the last stable offset",
        )
        for key, values in sorted(missing.items())
    ]
