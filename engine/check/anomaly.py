"""Anomaly records, the catalogue of anomaly kinds, the allowed sets and the checker report.

Role
----
Every checker in :mod:`engine.check` returns ``list[Anomaly]``; it never asserts. The harness
(or :func:`engine.check.checker.check_history`) decides which kinds are acceptable for the run's
configuration and puts the rest in :attr:`Report.forbidden`.

Invariants
----------
* :class:`Anomaly` is immutable and sorts deterministically (kind, key, offsets, ops), so a
  report prints the same on every run and under every ``PYTHONHASHSEED``.
* The allowed sets follow ``eos-checking.md`` §1.2 and §5.4: under EOS, ``int-send-skip``,
  ``G0`` and ww-containing ``G1c`` are allowed (Kafka transactions give no write isolation);
  subscribe mode also allows ``poll-skip`` and ``nonmonotonic-poll`` (rebalances legally move
  positions); at-least-once mode also allows ``duplicate``.

What it does not do
-------------------
It does not detect anything and does not know the seed; the harness adds the seed to its own
failure message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.check.history import Key

__all__ = [
    "ALLOWED_BY_MODE",
    "DUPLICATE_NOTE",
    "KINDS",
    "MODES",
    "Anomaly",
    "Report",
    "resolve_allowed",
]

#: Every anomaly kind, with the checklist id of ``eos-checking.md`` §5.4 and a one-line meaning.
KINDS: dict[str, tuple[str, str]] = {
    "inconsistent-offsets": ("C1", "one offset of a key holds two different values"),
    "duplicate": ("C2", "one value appears at two offsets of a key"),
    "lost-write": ("C3", "a committed write was never read although reads went past its offset"),
    "unseen": ("C4", "committed writes never read by any ok poll by the end of the history"),
    "G1a": ("C5", "an ok op read a value written by an op that definitely failed (aborted read)"),
    "precommitted-read": ("C6", "an op read its own sends before they were committed"),
    "poll-skip": ("C7", "a process's next poll of a key skipped values known to exist"),
    "nonmonotonic-poll": ("C8", "a process's next poll of a key went backwards or re-read"),
    "int-poll-skip": ("C9", "inside one op, consecutive reads of a key skipped values"),
    "int-nonmonotonic-poll": ("C10", "inside one op, consecutive reads of a key went backwards"),
    "nonmonotonic-send": ("C11", "a process's next send to a key landed before its previous one"),
    "int-nonmonotonic-send": ("C12", "inside one op, a later send to a key landed earlier"),
    "G1c-wr": ("C13", "a cycle of write-read dependencies only (circular information flow)"),
    "G0": ("C14", "a cycle of write-write dependencies only (no write isolation)"),
    "G1c-ww": ("C14", "a cycle mixing write-write and write-read dependencies"),
    "int-send-skip": ("C14", "inside one op, another producer's value landed between two sends"),
    "copier-lost": ("X1", "an input record has no committed output"),
    "copier-duplicate": ("X1", "an input record has more than one committed output"),
    "copier-phantom": ("X1", "a committed output names an input record that does not exist"),
    "copier-order": ("X2", "outputs fed by one input partition are out of input-offset order"),
    "aggregate-not-a-prefix": ("X3", "a committed running total is the sum of no prefix of its key's lines"),
    "aggregate-order": ("X3", "a key's committed running totals repeated or went back (an update committed twice)"),
    "aggregate-missed": ("X3", "a line's update of its key's running total was never committed"),
    "aggregate-mismatch": ("X3", "a key's last committed running total is not the sum of all its lines"),
    "hanging-transaction": ("X4", "a sentinel written after quiescence was never read (LSO stuck)"),
    "effect-lost": ("D1", "a committed business row has no effect downstream"),
    "effect-duplicate": ("D2", "a business row has more than one effect downstream"),
    "effect-phantom": ("D3", "an effect names a business row that was never committed"),
    "saga-incomplete": ("D4", "a saga ended neither all-done nor all-compensated"),
    "lost-input": ("E1", "a committed input record of a promise has no committed output"),
    "duplicated-output": ("E2", "a committed input record of a promise has two or more committed outputs"),
    "unexpected-output": ("E3", "a committed output of a strict promise matches no input"),
}

#: The last line of a report that lists a ``duplicate``: the rule it rests on, and how to scope it.
DUPLICATE_NOTE = (
    "note: values must be unique per partition (docs/history-format.md); a topic with duplicates on "
    "purpose (a deduplicator's input) is judged out with topics=[...] (eos_check, eos_cluster.check) "
    "or --topics (eos check)"
)

_EOS_ALLOWED = frozenset({"int-send-skip", "G0", "G1c-ww"})

#: Allowed kinds per named mode.
ALLOWED_BY_MODE: dict[str, frozenset[str]] = {
    "eos": _EOS_ALLOWED,
    "subscribe": _EOS_ALLOWED | {"poll-skip", "nonmonotonic-poll"},
    "at-least-once": _EOS_ALLOWED | {"duplicate"},
}
MODES = tuple(ALLOWED_BY_MODE)


def resolve_allowed(allowed: str | Iterable[str]) -> frozenset[str]:
    """Return the allowed set for a mode name or an explicit collection of kinds.

    Raises
    ------
    ValueError
        If a mode name or a kind is unknown.
    """
    if isinstance(allowed, str):
        try:
            return ALLOWED_BY_MODE[allowed]
        except KeyError:
            raise ValueError(f"unknown mode {allowed!r}; expected one of {', '.join(MODES)}") from None
    kinds = frozenset(allowed)
    unknown = sorted(kinds - KINDS.keys())
    if unknown:
        raise ValueError(f"unknown anomaly kinds {unknown}; expected names from {sorted(KINDS)}")
    return kinds


@dataclass(frozen=True, slots=True)
class Anomaly:
    """One anomaly found by a checker.

    Attributes
    ----------
    kind : str
        A name from :data:`KINDS`.
    key : tuple (topic, partition) or None
        The partition concerned; None for cycles spanning several keys.
    offsets : tuple of int
        Offsets involved, in the order the message refers to them.
    values : tuple of str
        Values involved.
    ops : tuple of int
        History indexes of the operations involved.
    message : str
        One readable sentence.
    """

    kind: str
    key: Key | None = None
    offsets: tuple[int, ...] = ()
    values: tuple[str, ...] = ()
    ops: tuple[int, ...] = ()
    message: str = field(default="", compare=False)

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "kind": self.kind,
            "key": list(self.key) if self.key is not None else None,
            "offsets": list(self.offsets),
            "values": list(self.values),
            "ops": list(self.ops),
            "message": self.message,
        }


def _sort_key(a: Anomaly) -> tuple[Any, ...]:
    # None keys sort first; keys with mixed types never occur (topic str, partition int).
    key = ("", -1) if a.key is None else a.key
    return (a.kind, key, a.offsets, a.ops, a.values)


@dataclass(frozen=True, slots=True)
class Report:
    """The verdict of :func:`engine.check.checker.check_history`.

    Attributes
    ----------
    forbidden : tuple of Anomaly
        Anomalies whose kind is not allowed in this mode; any one fails the run.
    allowed : tuple of Anomaly
        Anomalies reported for information only.
    allowed_kinds : frozenset of str
        The allowed set used.
    stats : dict
        Counts of what was checked (ops, reads, sends, keys).
    """

    forbidden: tuple[Anomaly, ...]
    allowed: tuple[Anomaly, ...]
    allowed_kinds: frozenset[str]
    stats: dict[str, int] = field(default_factory=dict)

    @classmethod
    def classify(
        cls, anomalies: Iterable[Anomaly], allowed_kinds: frozenset[str], stats: dict[str, int] | None = None
    ) -> Report:
        """Split ``anomalies`` into forbidden and allowed, each sorted deterministically."""
        ordered = sorted(anomalies, key=_sort_key)
        return cls(
            forbidden=tuple(a for a in ordered if a.kind not in allowed_kinds),
            allowed=tuple(a for a in ordered if a.kind in allowed_kinds),
            allowed_kinds=allowed_kinds,
            stats=dict(stats or {}),
        )

    @property
    def ok(self) -> bool:
        """True when no forbidden anomaly was found."""
        return not self.forbidden

    @property
    def anomalies(self) -> tuple[Anomaly, ...]:
        """Forbidden then allowed anomalies."""
        return self.forbidden + self.allowed

    def kinds(self) -> dict[str, int]:
        """Return ``{kind: count}`` over all anomalies, sorted by kind."""
        return dict(sorted(Counter(a.kind for a in self.anomalies).items()))

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict of the whole report."""
        return {
            "ok": self.ok,
            "allowed_kinds": sorted(self.allowed_kinds),
            "stats": dict(self.stats),
            "forbidden": [a.to_json() for a in self.forbidden],
            "allowed": [a.to_json() for a in self.allowed],
        }

    def __str__(self) -> str:
        return format_report(self)


def _fmt_key(key: Key | None) -> str:
    return "-" if key is None else f"{key[0]}/{key[1]}"


def _fmt_ints(xs: tuple[int, ...], limit: int = 6) -> str:
    if not xs:
        return "-"
    shown = ",".join(str(x) for x in xs[:limit])
    return shown + (f",+{len(xs) - limit}" if len(xs) > limit else "")


def format_report(report: Report, limit: int = 50) -> str:
    """Return a readable table: a verdict line, counts per kind, then one row per anomaly.

    At most ``limit`` rows are printed per class (forbidden, allowed); the counts are exact.
    """
    lines: list[str] = []
    verdict = "OK" if report.ok else "FAIL"
    stats = " ".join(f"{k}={v}" for k, v in report.stats.items())
    lines.append(
        f"{verdict}: {len(report.forbidden)} forbidden, {len(report.allowed)} allowed anomalies"
        + (f" ({stats})" if stats else "")
    )
    for title, group in (("forbidden", report.forbidden), ("allowed", report.allowed)):
        if not group:
            continue
        counts = Counter(a.kind for a in group)
        lines.append("")
        lines.append(f"{title}: " + ", ".join(f"{k} x{n}" for k, n in sorted(counts.items())))
        lines.append(f"  {'kind':<22} {'key':<16} {'offsets':<22} {'ops':<22} message")
        lines.extend(
            f"  {a.kind:<22} {_fmt_key(a.key):<16} {_fmt_ints(a.offsets):<22} {_fmt_ints(a.ops):<22} {a.message}"
            for a in group[:limit]
        )
        if len(group) > limit:
            lines.append(f"  ... {len(group) - limit} more {title} anomalies")
    if any(a.kind == "duplicate" for a in report.forbidden):
        lines.extend(("", DUPLICATE_NOTE))
    return "\n".join(lines)
