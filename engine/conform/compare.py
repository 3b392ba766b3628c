"""Judge one case: the observations of two targets, compared key by key.

Role
----
:func:`compare` reads a case's :class:`~engine.conform.case.Observation` on the reference (Kafka
4.4) and on the target under test and says one of:

* **same**: every value equal (errors, records read with their offsets, committed offsets,
  assignments, descriptions) and the same ``eos check`` verdict, and the case measured no timing;
* **same within bounds**: the same, and every timing within the case's :class:`~engine.conform.case.Bounds`;
* **documented**: it differs only in keys that :mod:`engine.conform.known` lists for this case,
  with the reason and Kafka's source reference (a simplification kept on purpose);
* **diverges**: anything else. A key observed on one side only diverges too.

Invariants
----------
* Nothing is compared loosely: values are plain JSON data compared with ``==``; the only tolerance
  is the case's stated bounds on durations.
* A documented entry covers only the keys it names: a new difference in any other key diverges.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.conform.case import Case, Observation
from engine.conform.known import KNOWN

__all__ = ["OUTCOMES", "Judgement", "compare"]

#: The outcomes, best first.
OUTCOMES = ("same", "same within bounds", "documented", "diverges")


@dataclass(frozen=True)
class Judgement:
    """A case's outcome and the differences behind it (``key: reference … | other …``)."""

    outcome: str
    differences: tuple[str, ...] = field(default=())
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-able dict."""
        return {"outcome": self.outcome, "differences": list(self.differences), "note": self.note}


def _short(value: Any, limit: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compare(case: Case, reference: Observation, other: Observation) -> Judgement:
    """Compare ``other`` with ``reference`` for ``case``; see the module docstring."""
    differing: dict[str, str] = {}
    for key in [*reference.values, *(k for k in other.values if k not in reference.values)]:
        a, b = reference.values.get(key, "<not observed>"), other.values.get(key, "<not observed>")
        if a != b:
            differing[key] = f"{key}: reference {_short(a)} | other {_short(b)}"
    if reference.verdict != other.verdict:
        differing["verdict"] = f"verdict: reference {reference.verdict!r} | other {other.verdict!r}"
    for key in [*reference.timings, *(k for k in other.timings if k not in reference.timings)]:
        a_t, b_t = reference.timings.get(key), other.timings.get(key)
        if a_t is None or b_t is None or not case.bounds.agree(a_t, b_t):
            differing[key] = f"{key}: reference {a_t} s | other {b_t} s (bounds {case.bounds})"
    if not differing:
        return Judgement("same within bounds" if reference.timings else "same")
    known = KNOWN.get(case.name)
    if known is not None and set(differing) <= set(known.keys):
        return Judgement("documented", tuple(differing.values()), known.note())
    return Judgement("diverges", tuple(differing.values()))
