"""The summary ``eos run`` prints of one scenario run, and the notebooks' scenario view shows.

:func:`summary_lines` returns the scenario, the seed, the counts that matter, the checker's report
(a catalog run), a positive control's catch, the verdict with what failed the run (one per line, at
most :data:`MAX_FINDINGS_SHOWN`), then ``fingerprint: HASH`` and ``replay: eos run ...``: scripts and
tests grep the last two.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from engine.scenarios.mutants import get_mutant

if TYPE_CHECKING:
    from engine.scenarios.result import ScenarioResult

#: The summary lists at most this many findings of a failed run, one per line.
MAX_FINDINGS_SHOWN = 10

#: Findings longer than this are cut in the summary (``--log`` has the run itself).
MAX_FINDING_CHARS = 200


def summary_lines(result: ScenarioResult) -> list[str]:
    """Return the summary of one run, ending with the fingerprint and replay lines."""
    lines = [f"scenario: {result.name}", f"seed: {result.seed}"]
    if result.mutant:
        mutant = get_mutant(result.mutant)
        lines.append(f"mutant: {mutant.id} {mutant.name}; removes: {mutant.removes}")
    if result.swarm:
        lines.append("swarm: yes")
    lines += [f"{k}: {v}" for k, v in result.summary.items()]
    lines.append(f"trace_events: {len(result.cluster.world.trace)}")
    if result.spec is not None:  # a catalog run: the checker's report of its history
        report = result.report
        if report.stats:
            lines.append("checked: " + " ".join(f"{k}={v}" for k, v in report.stats.items()))
        lines.append(f"forbidden: {_kind_counts(a.kind for a in report.forbidden)}")
        lines.append(f"allowed: {_kind_counts(a.kind for a in report.allowed)}")
    if result.expected:
        lines.append(f"positive control: expects {', '.join(result.expected)}")
        evidence = result.evidence
        if evidence:  # what it caught, the first in full: it is the tool's explanation
            lines.append(f"caught: {evidence[0]}")
            if len(evidence) > 1:
                lines.append(f"  ... and {len(evidence) - 1} more of the expected kinds")
    lines += _verdict_lines(result)
    lines.append(f"fingerprint: {result.fingerprint}")
    name = f"'{result.name}'" if " " in result.name else result.name
    extra = (f" --mutant {result.mutant}" if result.mutant else "") + (" --swarm" if result.swarm else "")
    lines.append(f"replay: eos run {name} --seed {result.seed}{extra}")
    return lines


def _kind_counts(kinds: Any) -> str:
    counts = Counter(kinds)
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"


def _verdict_lines(result: ScenarioResult) -> list[str]:
    """Return the verdict line, then what failed the run, one per line (at most MAX_FINDINGS_SHOWN)."""
    problems = result.problems
    if result.skipped or not problems:
        return [result.verdict()]  # e.g. "PASS demo seed=7: no anomalies", "CAUGHT ...", or "SKIP ...: why"
    head = result.status
    n = len(problems)
    kinds = _kind_counts(f.split(":", 1)[0] for f in problems)
    lines = [f"{head} {result.name} seed={result.seed}: {n} finding{'s' if n != 1 else ''} ({kinds})"]
    for finding in problems[:MAX_FINDINGS_SHOWN]:
        cut = finding if len(finding) <= MAX_FINDING_CHARS else finding[: MAX_FINDING_CHARS - 3] + "..."
        lines.append(f"  {cut}")
    if n > MAX_FINDINGS_SHOWN:
        lines.append(f"  ... and {n - MAX_FINDINGS_SHOWN} more")
    return lines
