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

from engine.check.aborted_reads import check_aborted_reads, check_precommitted_reads
from engine.check.analysis import Analysis, as_analysis
from engine.check.anomaly import Anomaly, Report, resolve_allowed
from engine.check.cycles import check_cycles
from engine.check.duplicates import check_duplicates
from engine.check.history import History, Op
from engine.check.lost_writes import check_lost_writes
from engine.check.offsets import check_inconsistent_offsets
from engine.check.polls import check_polls
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


def check_history(history: History | Analysis | Iterable[Op], *, allowed: str | Iterable[str] = "eos") -> Report:
    """Check ``history`` for every Jepsen Kafka anomaly and return a :class:`Report`.

    Parameters
    ----------
    history : History, Analysis or iterable of Op
        The client history (or an analysis of it already built).
    allowed : str or iterable of str
        A mode name (``eos``: int-send-skip, G0, G1c-ww; ``subscribe``: also poll-skip and
        nonmonotonic-poll; ``at-least-once``: also duplicate) or an explicit set of kinds.

    Raises
    ------
    ValueError
        For an unknown mode or kind name.
    """
    allowed_kinds = resolve_allowed(allowed)
    a = as_analysis(history)
    found: list[Anomaly] = []
    for checker in CHECKERS:
        found.extend(checker(a))
    return Report.classify(found, allowed_kinds, a.stats)
