"""``eos run NAME --seed N [--mutant M..] [--swarm] [--log [MODE]]``: run one scenario, print a summary.

By default the output is a summary: the scenario, the seed, the counts that matter, the verdict
(with each finding on its own line when it failed), the fingerprint and the replay command. The
short log comes before the summary only when asked for: ``--log`` (the whole short log, the same
as ``--log short``), ``--log faults`` (faults and state changes only) or ``--log auto`` (the whole
log when it is small, else faults only). The last two lines are always ``fingerprint: HASH`` and
``replay: eos run ...``; scripts and tests grep them.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

#: Above this many trace events, ``--log auto`` prints faults and state changes only.
AUTO_SHORT_LOG_LIMIT = 5_000

#: The summary lists at most this many findings of a failed run, one per line.
MAX_FINDINGS_SHOWN = 10

#: Findings longer than this are cut in the summary (``--log`` has the run itself).
MAX_FINDING_CHARS = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments."""
    parser.add_argument("name", help="scenario name (see 'eos scenarios'); quote names with spaces")
    parser.add_argument("--seed", type=int, default=7, help="the run's seed (default 7)")
    parser.add_argument("--mutant", help="run a weakened configuration, M1..M18 (see 'eos mutants --list')")
    parser.add_argument("--swarm", action="store_true", help="replace the fault plan with a swarm plan for this seed")
    parser.add_argument(
        "--log",
        nargs="?",
        const="short",
        choices=("short", "faults", "auto", "none"),
        default="none",
        help=(
            "also print the run's short log before the summary: --log alone prints all of it (same as "
            "'short'); 'faults' only faults and state changes; 'auto' all when small, else faults; "
            "'none' (default) the summary only"
        ),
    )


def run(args: argparse.Namespace) -> int:
    """Run the scenario; exit 0 on PASS (or SKIP), 1 on FAIL, 2 on a bad name."""
    from engine.cli import UsageError
    from engine.scenarios.registry import get_scenario

    try:
        fn = get_scenario(args.name)
    except KeyError as exc:
        raise UsageError(f"eos run: {exc.args[0]}") from None
    kwargs: dict[str, Any] = {}
    if args.mutant or args.swarm:
        if not hasattr(fn, "spec"):
            raise UsageError(f"eos run: '{args.name}' takes no --mutant/--swarm; pick a catalog scenario")
        if args.mutant:
            from engine.scenarios.mutants import get_mutant

            try:
                kwargs["mutant"] = get_mutant(args.mutant)
            except KeyError as exc:
                raise UsageError(f"eos run: {exc.args[0]}") from None
        kwargs["swarm"] = args.swarm
    result = fn(args.seed, **kwargs)
    trace = result.cluster.world.trace
    mode = args.log
    if mode == "auto":
        mode = "short" if len(trace) <= AUTO_SHORT_LOG_LIMIT else "faults"
    if mode == "short":
        print(trace.short_log())
    elif mode == "faults":
        print(trace.short_log(e for e in trace.events if e.kind in ("fault", "state", "mark", "phase", "site")))
    for line in summary_lines(args, result, len(trace), mutant=kwargs.get("mutant")):
        print(line)
    sys.stdout.flush()
    return 0 if result.ok else 1


def summary_lines(args: argparse.Namespace, result: Any, trace_events: int, *, mutant: Any = None) -> list[str]:
    """Return the summary of one run, ending with the fingerprint and replay lines."""
    lines = [f"scenario: {result.name}", f"seed: {args.seed}"]
    if mutant is not None:
        lines.append(f"mutant: {mutant.id} {mutant.name}; removes: {mutant.removes}")
    if args.swarm:
        lines.append("swarm: yes")
    lines += [f"{k}: {v}" for k, v in result.summary.items()]
    lines.append(f"trace_events: {trace_events}")
    detail = getattr(result, "extra", None)  # a catalog run's RunResult: the checker's report
    report = getattr(detail, "report", None)
    if report is not None:
        if report.stats:
            lines.append("checked: " + " ".join(f"{k}={v}" for k, v in report.stats.items()))
        lines.append(f"forbidden: {_kind_counts(a.kind for a in report.forbidden)}")
        lines.append(f"allowed: {_kind_counts(a.kind for a in report.allowed)}")
    if detail is not None and getattr(detail, "expected", ()):
        lines.append(f"positive control: expects {', '.join(detail.expected)}")
        evidence = getattr(detail, "evidence", [])
        if evidence:  # what it caught, the first in full: it is the tool's explanation
            lines.append(f"caught: {evidence[0]}")
            if len(evidence) > 1:
                lines.append(f"  ... and {len(evidence) - 1} more of the expected kinds")
    lines += _verdict_lines(result)
    lines.append(f"fingerprint: {result.fingerprint}")
    name = f"'{args.name}'" if " " in args.name else args.name
    extra = (f" --mutant {args.mutant}" if args.mutant else "") + (" --swarm" if args.swarm else "")
    lines.append(f"replay: eos run {name} --seed {args.seed}{extra}")
    return lines


def _kind_counts(kinds: Any) -> str:
    counts = Counter(kinds)
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"


def _verdict_lines(result: Any) -> list[str]:
    """Return the verdict line, then the findings one per line (at most MAX_FINDINGS_SHOWN)."""
    if result.skipped or not result.findings:
        return [result.verdict()]  # e.g. "PASS demo seed=7: no anomalies", "CAUGHT ...", or "SKIP ...: why"
    head = result.status
    n = len(result.findings)
    kinds = _kind_counts(f.split(":", 1)[0] for f in result.findings)
    lines = [f"{head} {result.name} seed={result.seed}: {n} finding{'s' if n != 1 else ''} ({kinds})"]
    for finding in result.findings[:MAX_FINDINGS_SHOWN]:
        cut = finding if len(finding) <= MAX_FINDING_CHARS else finding[: MAX_FINDING_CHARS - 3] + "..."
        lines.append(f"  {cut}")
    if n > MAX_FINDINGS_SHOWN:
        lines.append(f"  ... and {n - MAX_FINDINGS_SHOWN} more")
    return lines
