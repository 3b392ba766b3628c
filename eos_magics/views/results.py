"""Views of what clients and runs produced: deliveries, messages, the EOS check, a scenario run, a sweep.

Role
----
:func:`deliveries` and :func:`messages` tabulate client records (confluent-kafka-shaped
``Message`` objects); :func:`check_report` shows the checker's :class:`~engine.check.anomaly.Report`
as ``eos check`` prints it; :func:`scenario_result` a run as ``eos run`` prints its summary;
:func:`sweep`, :func:`scenarios` and :func:`mutants` what ``eos sweep``, ``eos scenarios`` and
``eos mutants`` print.

Invariants
----------
* The text of every view that has an ``eos`` command is that command's output, produced by the
  code the command prints with: the engine's functions that return its lines. Deliveries and
  messages have no tool of their own: a plain text table.
* Rows keep keys and values as the client returned them (bytes stay bytes); text and HTML
  decode bytes as UTF-8 for display.
* A contrast (a positive control: a scenario whose ``Spec.must_report`` names the anomaly it
  exists to show) says so in its HTML: ``contrast: shows effect-lost, as expected``; a sweep's
  table puts what a contrast showed in a column of its own, ``shows``, apart from ``forbidden``.
* A long finding written as ``kind: headline. Label: text. Label: text.`` (the request-reply
  deadlock's) reads in HTML as its headline over a small table of its labelled parts.

What it does not do
-------------------
It runs nothing: the caller ran the scenario, the sweep or the check and passes the result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from eos_magics.views.base import TableView, View, details, heading, html_table, plain_table, pre

__all__ = [
    "ANOMALY_COLUMNS",
    "CheckView",
    "ScenarioView",
    "anomaly_rows",
    "check_report",
    "contrast_note",
    "deliveries",
    "finding_html",
    "finding_parts",
    "messages",
    "mutants",
    "scenario_result",
    "scenarios",
    "sweep",
]

#: The short log in a scenario view's HTML keeps its last this many lines.
SHORT_LOG_TAIL = 300
#: A scenario view's HTML sets out at most this many findings (the text has them all).
MAX_FINDINGS_HTML = 5
#: A labelled part of a finding: ``Label: `` opening a sentence (``Fix: commit ...``, ``Who waits for whom: ...``).
_LABEL = re.compile(r"(?<=\. )([A-Z][a-z]+(?: [a-z]+){0,3}): ")


def _error_name(err: Any) -> str | None:
    return None if err is None else type(err).__name__


def _headers(h: Any) -> str | None:
    if not h:
        return None
    items = h.items() if isinstance(h, dict) else h
    out = []
    for k, v in items:
        key = k.decode("utf-8", errors="replace") if isinstance(k, bytes) else str(k)
        val = v.decode("utf-8", errors="replace") if isinstance(v, bytes) else str(v)
        out.append(f"{key}={val}")
    return ",".join(out)


# -- client records ---------------------------------------------------------------------------------

DELIVERY_COLUMNS = ("topic", "partition", "offset", "key", "value", "error")
MESSAGE_COLUMNS = ("topic", "partition", "offset", "key", "value", "headers", "timestamp", "leader_epoch", "error")


def deliveries(reports: Sequence[tuple[Any, Any]]) -> TableView:
    """Delivery reports ``(err, Message)`` as ``on_delivery`` receives them: one row per produced record.

    ``error`` is the exception's class name (``NotEnoughReplicasException`` ...) or None; ``offset``
    is -1 for a failed record. ``data`` keeps the reports themselves.
    """
    if isinstance(reports, (str, bytes)) or not isinstance(reports, Sequence):
        msg = f"deliveries() takes a list of (err, Message) pairs, got {reports!r}"
        raise TypeError(msg)
    rows = []
    for item in reports:
        if not (isinstance(item, tuple) and len(item) == 2):
            msg = f"deliveries() takes (err, Message) pairs as on_delivery receives them, got {item!r}"
            raise TypeError(msg)
        err, m = item
        rows.append((m.topic(), m.partition(), m.offset(), m.key(), m.value(), _error_name(err)))
    failed = sum(1 for r in rows if r[5] is not None)
    delivered = len(rows) - failed
    title = f"{delivered} record{'' if delivered == 1 else 's'} delivered" + (f", {failed} failed" if failed else "")
    tone = ("fail", "FAILED") if failed else ("ok", "DELIVERED")
    return TableView(
        plain_table(DELIVERY_COLUMNS, rows),
        DELIVERY_COLUMNS,
        rows,
        title=title,
        badge=(tone[1], tone[0]) if rows else None,
        data=list(reports),
    )


def messages(msgs: Sequence[Any]) -> TableView:
    """Records returned by ``poll``/``consume``: one row per message (error events included, offset -1001)."""
    if isinstance(msgs, (str, bytes)) or not isinstance(msgs, Sequence):
        msg = f"messages() takes a list of Message, got {msgs!r}"
        raise TypeError(msg)
    rows = [
        (
            m.topic(),
            m.partition(),
            m.offset(),
            m.key(),
            m.value(),
            _headers(m.headers()),
            m.timestamp()[1],
            m.leader_epoch(),
            _error_name(m.error()),
        )
        for m in msgs
    ]
    return TableView(
        plain_table(MESSAGE_COLUMNS, rows),
        MESSAGE_COLUMNS,
        rows,
        title=f"{len(rows)} messages",
        data=list(msgs),
    )


# -- eos check --------------------------------------------------------------------------------------

ANOMALY_COLUMNS = ("forbidden", "kind", "check", "topic", "partition", "offsets", "values", "ops", "message")
#: A white-box invariant's kind names its check first: ``L3-epoch-regression`` is L3's.
_INVARIANT = re.compile(r"^(L\d+)-")


class CheckView(TableView):
    """The checker's verdict: ``ok``, the report, one row per anomaly (forbidden first)."""

    @property
    def ok(self) -> bool:
        """True when no forbidden anomaly was found."""
        return bool(self.data.ok)

    @property
    def report(self) -> Any:
        """The :class:`engine.check.anomaly.Report`."""
        return self.data


def anomaly_rows(anomalies: Sequence[Any], *, forbidden: bool) -> list[tuple[Any, ...]]:
    """Return one :data:`ANOMALY_COLUMNS` row per :class:`~engine.check.anomaly.Anomaly` (history or white-box)."""
    from engine.check.anomaly import KINDS

    rows = []
    for a in anomalies:
        topic, partition = a.key if a.key is not None else (None, None)
        invariant = _INVARIANT.match(a.kind)
        check = KINDS.get(a.kind, (invariant.group(1) if invariant else "?", ""))[0]
        rows.append((forbidden, a.kind, check, topic, partition, a.offsets, a.values, a.ops, a.message))
    return rows


def check_report(report: Any) -> CheckView:
    """``eos check``'s verdict for a report: text = ``str(report)``, an OK/FAIL badge, a table of anomalies."""
    from engine.check.anomaly import Report

    if not isinstance(report, Report):
        msg = f"check_report() takes an engine.check.anomaly.Report, got {type(report).__name__}"
        raise TypeError(msg)
    rows = anomaly_rows(report.forbidden, forbidden=True) + anomaly_rows(report.allowed, forbidden=False)
    stats = " ".join(f"{k}={v}" for k, v in report.stats.items())
    title = f"{len(report.forbidden)} forbidden, {len(report.allowed)} allowed anomalies"
    return CheckView(
        str(report),
        ANOMALY_COLUMNS,
        rows,
        title=title,
        summary=f"checked: {stats}" if stats else "",
        badge=("OK", "ok") if report.ok else ("FAIL", "fail"),
        text_label="eos check output",
        data=report,
    )


# -- eos run ----------------------------------------------------------------------------------------


def _as_scenario_result(result: Any) -> Any:
    """Return ``result`` when it is a scenario run (a ``ScenarioResult``)."""
    from engine.scenarios.result import ScenarioResult

    if isinstance(result, ScenarioResult):
        return result
    msg = f"scenario_result() takes a ScenarioResult, got {type(result).__name__}"
    raise TypeError(msg)


class ScenarioView(View):
    """One scenario run: text = ``eos run``'s summary; ``ok``, ``status``, ``fingerprint``, ``replay``."""

    def __init__(self, text: str, *, result: Any, replay: str, **kw: Any) -> None:
        super().__init__(text, data=result, **kw)
        self.replay = replay

    @property
    def result(self) -> Any:
        """The run's ``ScenarioResult`` (``.state`` is the workload's own state)."""
        return self.data

    @property
    def ok(self) -> bool:
        """True for PASS and CAUGHT (and SKIP)."""
        return bool(self.data.ok)

    @property
    def status(self) -> str:
        """``PASS``, ``CAUGHT`` (a positive control showed its anomaly), ``FAIL`` or ``SKIP``."""
        return str(self.data.status)

    @property
    def fingerprint(self) -> str:
        """The run's fingerprint."""
        return self.data.fingerprint

    def short_log(self, mode: str = "short") -> str:
        """The run's short log as ``eos run --log`` prints it: ``short`` (all) or ``faults`` (faults, state changes)."""
        trace = self.data.cluster.world.trace
        if mode == "short":
            return trace.short_log()
        if mode == "faults":
            return trace.short_log(_fault_events(trace))
        msg = f"mode is 'short' or 'faults', got {mode!r}"
        raise ValueError(msg)

    def _body_html(self) -> str:
        trace = self.data.cluster.world.trace
        faults = _fault_events(trace)
        parts = [self._findings_html(), pre(self.text)]
        for label, events in (("faults and state changes", faults), ("short log", trace.events)):
            tail = events[-SHORT_LOG_TAIL:]
            cut = len(events) - len(tail)
            note = f" (last {len(tail)} of {len(events)} lines)" if cut else f" ({len(events)} lines)"
            parts.append(details(label + note, pre(trace.short_log(tail))))
        return "".join(parts)

    def _findings_html(self) -> str:
        """Set out the findings that have labelled parts (what a contrast caught, why a run failed) as tables.

        The text keeps each finding on one line, as ``eos run`` prints it; a one-sentence finding
        reads well there, so only the long, labelled ones get a table.
        """
        labelled = [f for f in self.data.evidence + self.data.problems if finding_parts(f)[1]]
        return "".join(finding_html(f) for f in labelled[:MAX_FINDINGS_HTML])


def finding_parts(finding: str) -> tuple[str, list[tuple[str, str]]]:
    """Split ``kind: headline. Label: text. Label: text.`` into the headline and its (label, text) parts.

    A finding is one line wherever it is printed (``eos run``, a sweep's failures, a log); the
    labels let a reader, and the HTML, find its parts: who waits for whom, since when, the fix.
    A finding without labels is all headline.
    """
    marks = list(_LABEL.finditer(finding))
    if not marks:
        return finding, []
    ends = [m.start() for m in marks[1:]] + [len(finding)]
    parts = [(m.group(1), finding[m.end() : end].strip()) for m, end in zip(marks, ends, strict=True)]
    return finding[: marks[0].start()].strip(), parts


def finding_html(finding: str) -> str:
    """Return a finding as its headline over a two-column table of its labelled parts."""
    head, parts = finding_parts(finding)
    table = html_table(("part", "what"), parts, head=False) if parts else ""
    return heading(head) + table


def contrast_note(expected: Sequence[str], caught: Sequence[str], status: str) -> str:
    """Return what a contrast's run demonstrates, in one line; ``""`` for a scenario that is no contrast.

    A contrast (``Spec.must_report``) exists to show an anomaly, so showing it is the expected
    outcome (``CAUGHT``), and missing it is the failure.
    """
    if not expected:
        return ""
    if status == "CAUGHT":
        return f"contrast: shows {', '.join(caught)}, as expected (the anomaly this scenario exists to show)"
    if status == "SKIP":
        return f"contrast: could not show {' or '.join(expected)} on this seed (see the reason below)"
    return f"contrast: meant to show {' or '.join(expected)}, and did not"


def _fault_events(trace: Any) -> list[Any]:
    return [e for e in trace.events if e.kind in ("fault", "state", "mark", "phase", "site")]


def scenario_result(result: Any) -> ScenarioView:
    """A scenario run (a ``ScenarioResult``, what every scenario and ``run_spec`` return) as ``eos run`` summarises it.

    Text: ``eos run NAME --seed N [--mutant M] [--swarm]`` without ``--log``: scenario, seed,
    counts, the verdict with its findings, ``fingerprint: …`` and ``replay: …``. HTML: a
    PASS/FAIL/SKIP badge, the summary, and the short log (faults only, then all) folded.
    """
    from engine.scenarios.summary import summary_lines

    r = _as_scenario_result(result)
    lines = summary_lines(r)
    replay = next((line[len("replay: ") :] for line in reversed(lines) if line.startswith("replay: ")), "")
    status = r.status
    tone = {"PASS": "ok", "CAUGHT": "ok", "FAIL": "fail", "SKIP": "warn"}[status]
    badge_, summary = (status, tone), contrast_note(r.expected, r.caught, status)
    if r.mutant and status == "FAIL":
        # a mutant breaks the broker on purpose: the checker failing the run is the mutant caught
        badge_ = ("CAUGHT", "ok")
        summary = "\n".join(
            filter(None, [f"{r.mutant} caught: the verdict FAIL is the checker catching the mutant", summary])
        )
    return ScenarioView(
        "\n".join(lines),
        result=r,
        replay=replay,
        title=f"{r.name} · seed {r.seed}",
        badge=badge_,
        summary=summary,
    )


# -- eos sweep, eos scenarios, eos mutants ----------------------------------------------------------

SWEEP_COLUMNS = ("scenario", "seed", "verdict", "shows", "forbidden", "ops", "sim_ms", "fingerprint", "replay")
_MUTANT_FLAG = re.compile(r" --mutant (\S+)")


def _expected(name: str) -> tuple[str, ...]:
    """Return the anomaly kinds a catalog scenario exists to show (a contrast's ``must_report``), else ()."""
    from engine.scenarios.catalog import BY_NAME

    spec = BY_NAME.get(name)
    return spec.must_report if spec is not None else ()


def _sweep_row(r: Any) -> tuple[Any, ...]:
    """One row of a sweep's table: what a contrast showed under ``shows``, what failed a run under ``forbidden``.

    ``eos sweep`` prints both under ``forbidden``; the table keeps a contrast's catch apart, so a
    reader does not take the anomaly a contrast exists to show for a failure.
    """
    caught = r.status == "CAUGHT"
    shows = r.kinds if caught else "-"
    forbidden = "-" if caught else r.kinds
    return (r.name, r.seed, r.status, shows, forbidden, r.ops, r.sim_ms, r.fingerprint, r.replay)


def _contrast_lines(rows: Sequence[Any]) -> list[str]:
    """Return one line per contrast in a sweep: what it showed, on how many seeds, and where it did not."""
    lines = []
    for name in dict.fromkeys(r.name for r in rows):
        expected = _expected(name)
        if not expected:
            continue
        mine = [r for r in rows if r.name == name]
        caught = [r for r in mine if r.status == "CAUGHT"]
        kinds = sorted({k for r in caught for k in r.kinds.split(",")}) or list(expected)
        line = f"contrast: {name} shows {', '.join(kinds)}, as expected, on {len(caught)} of {len(mine)} seeds"
        missed = [str(r.seed) for r in mine if r.status != "CAUGHT"]
        if missed:
            line += f"; not on seed {', '.join(missed)}"
        lines.append(line)
    return lines


def _sweep_badge(passed: int, caught: int, failed: int) -> tuple[str, str]:
    """FAIL when a run failed; CAUGHT when every judged run was a contrast's catch; else PASS."""
    if failed:
        return ("FAIL", "fail")
    if caught and not passed:
        return ("CAUGHT", "ok")
    if not passed:
        return ("SKIP", "warn")
    return ("PASS", "ok")


def _mutant_head(rows: Sequence[Any], mutant: str) -> tuple[str, str, tuple[str, str]]:
    """Title, summary and badge of a mutant's sweep, where a run's ``FAIL`` is the mutant caught.

    A mutant breaks the broker on purpose, so the checker failing a run is the outcome wanted:
    the run caught the mutant. A run that raised (an internal error) caught nothing, and still
    fails the sweep; a run that passed is one the mutant slipped through.
    """
    caught = [r for r in rows if r.status == "FAIL" and not r.traceback]
    raised = [r for r in rows if r.traceback]
    missed = [r for r in rows if r.status != "FAIL"]
    title = f"sweep with {mutant}: {len(rows)} runs, {mutant} caught on {len(caught)}, missed on {len(missed)}"
    if raised:
        title += f", {len(raised)} raised an exception"
    lines = []
    if caught:
        kinds = sorted({k for r in caught for k in r.kinds.split(",") if k})
        seeds = ", ".join(str(r.seed) for r in caught)
        lines.append(f"{mutant} caught on seed {seeds} (as {', '.join(kinds)}): a FAIL verdict here is the catch")
    if missed:
        lines.append(f"{mutant} not caught on seed {', '.join(str(r.seed) for r in missed)}")
    if raised:
        badge_ = ("FAIL", "fail")
    elif caught:
        badge_ = ("CAUGHT", "ok")
    else:
        badge_ = ("MISSED", "warn")
    return title, "\n".join(lines), badge_


def sweep(rows: Sequence[Any], *, mutant: str | None = None) -> TableView:
    """A sweep's rows (``engine.scenarios.sweep.Row``) as ``eos sweep`` prints them, and as a table.

    ``mutant`` names the sweep's mutant for the summary line (``N runs with M10: ...``); by
    default it is read from the rows' replay commands when they all name the same one. A
    contrast's runs say what they showed: a ``shows`` column, and one summary line per contrast.
    In a mutant's sweep a run's ``FAIL`` is the mutant caught: the heading counts the catches and
    the badge reads CAUGHT (FAIL only when a run raised), while the table keeps ``eos sweep``'s verdicts.
    """
    from engine.scenarios import sweep as report

    rows = list(rows)
    if mutant is None:
        found = {m.group(1) for r in rows if (m := _MUTANT_FLAG.search(r.replay))}
        if len(found) == 1 and all(_MUTANT_FLAG.search(r.replay) for r in rows):
            mutant = found.pop()
    failures = [r for r in rows if r.status == "FAIL"]

    # eos sweep prints: the table, a blank line, the summary line, then the failures
    text = "\n".join(report.table_lines(rows)) + "\n\n" + report.summary_line(rows, mutant)
    failed_text = "\n".join(report.failure_lines(failures))
    if failed_text:
        text += "\n" + failed_text
    passed = sum(1 for r in rows if r.status == "PASS")
    caught = sum(1 for r in rows if r.status == "CAUGHT")
    title = f"sweep: {len(rows)} runs, {passed} passed, {caught} caught, {len(failures)} failed"
    summary = "\n".join(_contrast_lines(rows))
    badge_ = _sweep_badge(passed, caught, len(failures))
    if mutant is not None:
        title, summary, badge_ = _mutant_head(rows, mutant)
    return TableView(
        text,
        SWEEP_COLUMNS,
        [_sweep_row(r) for r in rows],
        title=title,
        summary=summary,
        badge=badge_,
        text_label="eos sweep output",
        data=rows,
    )


def scenarios() -> TableView:
    """Every scenario ``eos run`` knows, as ``eos scenarios`` prints them (name, description, mutants caught).

    ``shows`` names the anomaly a contrast (a positive control) exists to show; None for the others.
    """
    from engine.scenarios.catalog import BY_NAME
    from engine.scenarios.listing import scenario_lines
    from engine.scenarios.registry import DESCRIPTIONS, load_all

    load_all()
    text = "\n".join(scenario_lines())
    rows = []
    for name in sorted(DESCRIPTIONS):
        spec = BY_NAME.get(name)
        catches = ", ".join(f"{m}->{c}" for m, c in spec.catches) if spec is not None and spec.catches else None
        rows.append((name, DESCRIPTIONS[name], ", ".join(_expected(name)) or None, catches))
    return TableView(
        text,
        ("scenario", "description", "shows", "catches"),
        rows,
        title=f"{len(rows)} scenarios",
        text_label="eos scenarios output",
    )


def mutants() -> TableView:
    """The weakened configurations, as ``eos mutants`` lists them (id, name, the guarantee it removes)."""
    from engine.scenarios.listing import mutant_lines
    from engine.scenarios.mutants import MUTANTS

    text = "\n".join(mutant_lines())
    rows = [(mid, m.name, m.removes) for mid, m in MUTANTS.items()]
    return TableView(
        text,
        ("mutant", "name", "removes"),
        rows,
        title=f"{len(rows)} mutants",
        text_label="eos mutants output",
    )
