"""X3 on real records: a Streams-style running total per key, judged against its input lines.

Role
----
An aggregating app (Kafka Streams' ``groupByKey().aggregate``, ``eosmagics.jvm.streams.OrderTotals``)
reads lines ``(key, amount)`` and writes, per line it folds in, the key's running total. Given the
committed input lines of each key in their log order and the committed outputs of each key in
theirs (as read_committed consumers returned them), :func:`check_running_totals` judges that:

* every output is the sum of a prefix of the key's lines (``aggregate-not-a-prefix`` otherwise:
  a line counted twice, one skipped, or a total restored from a wrong state);
* the prefixes grow from one output to the next (``aggregate-order``: a total repeated or gone
  back, i.e. one line's update committed twice, or a restart that recounted from an older state);
* with ``every``, each prefix appears (``aggregate-missed``: an update lost; an app whose record
  cache is off emits one output per line);
* the last output equals the sum of all the key's lines (``aggregate-mismatch``, the word of the
  simulated X3 scenario, ``engine/scenarios/copier.py``'s ``Aggregator``), and a key with lines has
  an output at all (also ``aggregate-mismatch``).

Invariants
----------
Pure: plain ``(key, amount)`` / ``(key, total)`` pairs in, sorted anomalies out. Amounts must be
positive, so that prefix sums are strictly increasing and each total names one prefix (a zero or
negative amount is a ``ValueError``).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate

from engine.check.anomaly import Anomaly

__all__ = ["check_running_totals"]


def check_running_totals(
    lines: Iterable[tuple[str, int]], totals: Iterable[tuple[str, int]], *, every: bool = False
) -> list[Anomaly]:
    """Return the ``aggregate-*`` anomalies of ``totals`` against ``lines``.

    Parameters
    ----------
    lines : iterable of (key, amount)
        The committed input lines, each key's in log order; amounts > 0.
    totals : iterable of (key, total)
        The committed outputs, each key's in log order.
    every : bool
        Also require one output per line (an app that emits every update).
    """
    prefixes: dict[str, list[int]] = {}
    for key, amount in lines:
        if amount <= 0:
            raise ValueError(f"amounts must be positive so that each total names one prefix; {key!r} has {amount}")
        prefixes.setdefault(key, []).append(amount)
    prefixes = {k: list(accumulate(v)) for k, v in prefixes.items()}
    outputs: dict[str, list[int]] = {}
    for key, total in totals:
        outputs.setdefault(key, []).append(total)
    found: list[Anomaly] = []
    for key in sorted(prefixes.keys() | outputs.keys()):
        sums, seen = prefixes.get(key, []), outputs.get(key, [])
        index = {s: i + 1 for i, s in enumerate(sums)}
        last = 0
        counted: list[int] = []
        for at, total in enumerate(seen):
            n = index.get(total)
            if n is None:
                found.append(
                    _anomaly(
                        "aggregate-not-a-prefix",
                        key,
                        at,
                        total,
                        f"{total} is the sum of no prefix of its {len(sums)} line(s) (a line counted twice or skipped)",
                    )
                )
                continue
            if n <= last:
                found.append(
                    _anomaly(
                        "aggregate-order",
                        key,
                        at,
                        total,
                        f"{total} (lines 1..{n}) follows a total that already counted lines 1..{last}",
                    )
                )
            last = max(last, n)
            counted.append(n)
        if every and sums:
            missed = sorted(set(range(1, len(sums) + 1)) - set(counted))
            if missed:
                shown = ", ".join(map(str, missed[:20])) + (", ..." if len(missed) > 20 else "")
                found.append(
                    Anomaly(
                        "aggregate-missed",
                        None,
                        (),
                        (key,),
                        (),
                        f"customer {key!r}: no committed total counts exactly lines 1..n for n = {shown}",
                    )
                )
        want = sums[-1] if sums else 0
        got = seen[-1] if seen else None
        if got != want and (sums or seen):
            found.append(
                Anomaly(
                    "aggregate-mismatch",
                    None,
                    (),
                    (key, str(got)),
                    (),
                    f"customer {key!r}: the last committed total is {got}, its {len(sums)} line(s) sum to {want}",
                )
            )
    return found


def _anomaly(kind: str, key: str, at: int, total: int, why: str) -> Anomaly:
    return Anomaly(kind, None, (at,), (key, str(total)), (), f"customer {key!r}, output #{at + 1}: {why}")
