"""Run the conformance suite: each case on each target, judged, compared, written down.

Role
----
:func:`run_case` runs one case's program on one target and returns what it observed, with the
``eos check`` verdict of its recorded history. :func:`run_suite` runs the chosen cases on the
reference (Kafka 4.4, or the observations a Kafka 4.4 run left in a results file) and on the target
under test, and :func:`compare` judges each pair. :func:`render_table` writes the table of
``docs/conformance.md``; :func:`save_results` and :func:`load_results` keep a run as JSON, so that
``eos conform --bootstrap`` compares any cluster with the last Kafka 4.4 run without starting Kafka.

Invariants
----------
* A case's program never stops the suite: what escapes it is observed as ``raised``.
* Every case gets fresh names (a tag of the run), and the target's ``end`` brings back every
  broker the case broke, whatever happened.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.conform.case import CASES, Case, Ctx, Observation
from engine.conform.compare import Judgement, compare
from engine.conform.realtime_wait import Stopwatch, run_nonce

__all__ = [
    "CaseResult",
    "load_results",
    "outcome_counts",
    "render_table",
    "run_case",
    "run_suite",
    "save_results",
    "select_cases",
    "summary",
    "verdict_of",
    "write_docs",
]


def verdict_of(report: Any) -> str:
    """Return ``eos check``'s verdict in one comparable line: ``OK``, or ``FAIL`` and the forbidden kinds."""
    if report.ok:
        return "OK"
    kinds: dict[str, int] = {}
    for anomaly in report.forbidden:
        kinds[anomaly.kind] = kinds.get(anomaly.kind, 0) + 1
    return "FAIL " + " ".join(f"{kind}x{count}" for kind, count in sorted(kinds.items()))


def run_case(target: Any, case: Case, tag: str | None = None) -> Observation:
    """Run ``case`` on ``target`` once; return its observation (never raises for the program's sake)."""
    stopwatch = Stopwatch()
    ctx = Ctx(target, case.name, tag or run_nonce())
    target.begin(case)
    try:
        case.program(ctx)
    except Exception as exc:
        ctx.observation.values.setdefault("raised", f"{type(exc).__name__}: {_first_line(exc)}")
        ctx.observation.values.setdefault("raised.where", traceback.format_exc(limit=-1).strip().splitlines()[-3:])
    finally:
        ctx.close_clients()
        target.end(case)
    ctx.observation.verdict = verdict_of(ctx.recorder.check())
    ctx.observation.seconds = stopwatch.seconds()
    return ctx.observation


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


@dataclass
class CaseResult:
    """One case's observations on both sides and the judgement."""

    case: Case
    reference: Observation
    other: Observation
    judgement: Judgement

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-able dict."""
        return {
            "case": self.case.name,
            "area": self.case.area,
            "title": self.case.title,
            "reference": self.reference.to_json(),
            "other": self.other.to_json(),
            **self.judgement.to_json(),
        }


def select_cases(patterns: Iterable[str] = (), *, faults: bool = True) -> list[Case]:
    """Return the registered cases whose names contain any of ``patterns`` (all when none), in order."""
    import engine.conform.cases  # noqa: F401  (registers every case)

    wanted = [p for p in patterns if p]
    chosen = [c for c in CASES.values() if not wanted or any(p in c.name for p in wanted)]
    return [c for c in chosen if faults or not c.faults]


def usable(case: Case, target: Any) -> bool:
    """Return whether ``target`` can run ``case``: its faults, and what it ``needs`` (SASL, a client library)."""
    if case.faults and not target.can_fault:
        return False
    return set(case.needs) <= set(target.features)


def run_suite(
    reference: Any,
    other: Any,
    cases: Iterable[Case],
    *,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run ``cases`` on both targets; ``reference`` may be a live target or ``{case name: Observation}``."""
    results: list[CaseResult] = []
    for case in cases:
        if not usable(case, other) or (not isinstance(reference, dict) and not usable(case, reference)):
            continue
        if isinstance(reference, dict):
            if case.name not in reference:
                continue
            ref_obs = reference[case.name]
        else:
            ref_obs = run_case(reference, case)
        other_obs = run_case(other, case)
        result = CaseResult(case, ref_obs, other_obs, compare(case, ref_obs, other_obs))
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def save_results(results: list[CaseResult], path: str | Path, *, reference: str, other: str) -> None:
    """Write ``results`` as JSON (the reference's observations are what ``eos conform`` compares with)."""
    data = {
        "reference": reference,
        "other": other,
        "results": [r.to_json() for r in results],
    }
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")


def load_results(path: str | Path) -> dict[str, Observation]:
    """Read the reference's observations from a results file of :func:`save_results`."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    observations: dict[str, Observation] = {}
    for row in data["results"]:
        ref = row["reference"]
        observations[row["case"]] = Observation(
            values=ref["values"],
            timings=ref["timings"],
            faults=ref["faults"],
            verdict=ref["verdict"],
            seconds=ref["seconds"],
        )
    return observations


def outcome_counts(results: list[CaseResult]) -> dict[str, int]:
    """Return how many cases had each outcome, in the order first seen."""
    counts: dict[str, int] = {}
    for r in results:
        counts[r.judgement.outcome] = counts.get(r.judgement.outcome, 0) + 1
    return counts


def summary(results: list[CaseResult]) -> str:
    """Return the outcomes in one line: ``42 same, 7 same within bounds (49 cases)``."""
    counts = outcome_counts(results)
    return ", ".join(f"{n} {outcome}" for outcome, n in counts.items()) + f" ({len(results)} cases)"


#: The lines around the generated table in ``docs/conformance.md``.
TABLE_START, TABLE_END = "<!-- conformance table: generated by eos conform --docs -->", "<!-- end of table -->"


def write_docs(path: str | Path, results: list[CaseResult], *, reference: str, other: str) -> None:
    """Put the table of ``results`` into ``path`` between :data:`TABLE_START` and :data:`TABLE_END`.

    A file without those lines (or no file) gets the table alone.
    """
    table = render_table(results, reference=reference, other=other)
    block = f"{TABLE_START}\n\n{summary(results)}.\n\n{table}\n{TABLE_END}"
    target = Path(path)
    text = target.read_text(encoding="utf-8") if target.exists() else ""
    if TABLE_START in text and TABLE_END in text:
        head, rest = text.split(TABLE_START, 1)
        text = head + block + rest.split(TABLE_END, 1)[1]
    else:
        text = block + "\n"
    target.write_text(text, encoding="utf-8")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_table(results: list[CaseResult], *, reference: str = "Kafka 4.4", other: str = "eos serve") -> str:
    """Return the Markdown table: case, area, what it shows, both verdicts, the outcome and its note."""
    lines = [
        f"| case | area | what it shows | {reference} | {other} | outcome | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        note = r.judgement.note or "; ".join(r.judgement.differences)
        timings = ", ".join(
            f"{k} {r.reference.timings[k]:g}/{r.other.timings.get(k, float('nan')):g} s" for k in r.reference.timings
        )
        if timings and r.judgement.outcome == "same within bounds":
            note = f"{timings} ({r.case.bounds})"
        lines.append(
            f"| `{r.case.name}` | {r.case.area} | {_cell(r.case.title)} | {r.reference.verdict} | "
            f"{r.other.verdict} | **{r.judgement.outcome}** | {_cell(note)} |"
        )
    return "\n".join(lines) + "\n"
