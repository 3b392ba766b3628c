"""``check_history``: run every black-box checker over a client history and classify the result.

Role
----
Builds the :class:`~engine.check.analysis.Analysis` once, runs each checker module over it,
and splits the anomalies into forbidden and allowed according to a mode (``eos``,
``subscribe``, ``at-least-once``) or an explicit allowed set.

Invariants
----------
Pure: reads the history, never mutates it, never asserts; the same history gives the same
report (anomalies sorted) under every ``PYTHONHASHSEED``.

What it does not do
-------------------
The copier and sentinel oracles take other inputs (records, not ops) and are called separately:
:func:`engine.check.copier.check_copier`, :func:`engine.check.sentinel.check_sentinels`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from engine.check.aborted_reads import check_aborted_reads, check_precommitted_reads
from engine.check.analysis import Analysis, as_analysis
from engine.check.anomaly import Anomaly, Report, resolve_allowed
from engine.check.cycles import check_cycles
from engine.check.duplicates import check_duplicates
from engine.check.history import History, Op
from engine.check.lost_writes import check_lost_writes
from engine.check.offsets import check_inconsistent_offsets
from engine.check.polls import check_polls
from engine.check.promises import Promise, check_promises, committed_reads, promises_of, scope_history
from engine.check.sends import check_sends

__all__ = ["CHECKERS", "check_history"]

#: The history checkers, in the order of the checklist (C1-C14).
CHECKERS: tuple[Callable[[Analysis], list[Anomaly]], ...] = (
    check_inconsistent_offsets,
    check_duplicates,
    check_lost_writes,
    check_aborted_reads,
    check_precommitted_reads,
    check_polls,
    check_sends,
    check_cycles,
)


def check_history(
    history: History | Analysis | Iterable[Op],
    *,
    allowed: str | Iterable[str] = "eos",
    topics: Iterable[str] | None = None,
    promise: str | Promise | Iterable[str | Promise] | None = None,
    committed: Iterable[tuple[Any, ...]] | None = None,
) -> Report:
    """Check ``history`` for every Jepsen Kafka anomaly and return a :class:`Report`.

    Parameters
    ----------
    history : History, Analysis or iterable of Op
        The client history (or an analysis of it already built; not with ``topics`` or ``promise``).
    allowed : str or iterable of str
        A mode name (``eos``: int-send-skip, G0, G1c-ww; ``subscribe``: also poll-skip and
        nonmonotonic-poll; ``at-least-once``: also duplicate) or an explicit set of kinds.
    topics : iterable of str or None
        Judge only the sends and reads of these topics (:func:`~engine.check.promises.scope_history`);
        None: all.
    promise : str, Promise, or a list of them
        End-to-end promises (:mod:`engine.check.promises`), judged on ``committed``; their
        anomalies are forbidden in every mode.
    committed : iterable of (topic, partition, offset, key, value), optional
        The committed records the promises are judged on; None: the records the history's ``ok``
        ops read (keys unknown).

    Raises
    ------
    ValueError
        For an unknown mode or kind name, or a promise that cannot be read.
    """
    allowed_kinds = resolve_allowed(allowed)
    promises = promises_of(promise)
    if isinstance(history, Analysis) and (topics is not None or promises):
        raise ValueError("check_history: topics and promises need the history, not an Analysis of it")
    if not isinstance(history, (History, Analysis)):
        history = History(history)
    found: list[Anomaly] = []
    if promises:
        assert isinstance(history, History)
        found.extend(check_promises(committed_reads(history) if committed is None else committed, promises))
    a = as_analysis(history if topics is None else scope_history(history, topics))
    for checker in CHECKERS:
        found.extend(checker(a))
    return Report.classify(found, allowed_kinds, a.stats)
