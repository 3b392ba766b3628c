"""Draw a transaction's message sequence chart as a self-contained SVG (a Lamport / space-time diagram).

Role
----
:func:`sequence_svg` turns the :class:`~engine.views.sequence_chart.SequenceChart` of one
transaction into SVG text a notebook can display or save: one vertical lane per node with its
name and roles on top, time running downwards, one arrow per message from its send to its
delivery. It follows the peers' lessons (design/views.md section 2): the protocol as a
space-time diagram with one colour per message type and the detail on hover (Maelstrom's
``messages.svg``, lesson 4), faults drawn where they happen (a dropped message ends in a red x,
lesson 3).

Layout
------
The title says how the transaction ended, from what the chart shows (:func:`outcome`): committed,
aborted by the producer, aborted by the coordinator and then fenced, or still open. Rows follow
trace order: every send, delivery, drop and note gets its own row, so events of the
same millisecond stay apart and an arrow slants from its send row down to its delivery row. The
simulated time is printed at the left whenever it changes; a jump of more than
:data:`GAP_MS` is drawn as a dashed break saying how long nothing happened. Requests are solid,
responses dashed, messages still in flight at the end of the trace dotted down to an
"end of trace" row. Each arrow's label sits at its sender, on the side it goes to, in a layer
above every line (with a white halo) so that crossing arrows never hide it. State notes
(coordinator states, markers, the producer's begin/commit) are small boxes on their lane. The
canvas is :data:`WIDTH` px wide whatever the number of lanes.

Invariants
----------
- Deterministic: the output depends only on the chart; integer coordinates, except arrowheads
  printed with one decimal.
- Self-contained: no script, no style sheet, no external reference; every text is XML-escaped
  (characters XML cannot hold are replaced by U+FFFD), so the result parses with any XML parser.
- One ``<g class="lane">`` per lane, one ``<g class="arrow">`` per arrow and one
  ``<g class="note">`` per note, in the chart's order; an arrow's ``<title>`` (the hover text)
  is in its group and again in its label, which is easier to point at than a line.
"""

from __future__ import annotations

import re
from typing import Any
from xml.sax.saxutils import escape

from engine import trace_events as ev
from engine.views.sequence_chart import APIS, Arrow, Note, SequenceChart

__all__ = ["API_COLOURS", "GAP_MS", "WIDTH", "chart_values", "outcome", "sequence_svg"]

#: Canvas width in px.
WIDTH = 800
#: A time jump longer than this (simulated ms) between two rows is drawn as a break.
GAP_MS = 1000
#: One colour per message type (Okabe-Ito, colour-blind safe), the same for request and response.
API_COLOURS = dict(
    zip(APIS, ("#888888", "#cc79a7", "#e69f00", "#0072b2", "#009e73", "#56b4e9", "#d55e00", "#000000"), strict=True)
)
_OTHER_COLOUR = "#555555"
_NOTE_FILL = {
    ev.TXN_STATE_WRITE: "#fff3c4",
    ev.TXN_COMPLETE: "#d9f2d9",
    ev.MARKER_APPEND: "#eadcf0",
    ev.MARKER_REJECTED: "#f8d0d0",
    ev.PRODUCE_FAILED: "#f8d0d0",
    ev.TXN_OFFSET_COMMIT_PENDING: "#dff0f7",
    ev.TXN_OFFSET_COMMIT_COMPLETED: "#dff0f7",
}
_PRODUCER_FILL = "#e8eef7"
_ROW = 18
_GAP_ROW = 24
_TIME_X = 54
_LANE_LEFT = 130
_LANE_RIGHT = WIDTH - 80
_CHAR_PX = 5.6
_LOOP_PX = 36
_BAD_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(value: object) -> str:
    """Escape text for an element's content."""
    return escape(_BAD_XML.sub("\ufffd", str(value)))


def _attr(value: object) -> str:
    """Escape text for a double-quoted attribute (newlines kept as character references)."""
    return escape(_BAD_XML.sub("\ufffd", str(value)), {'"': "&quot;", "\n": "&#10;", "\t": "&#9;"})


def _colour(api: str) -> str:
    return API_COLOURS.get(api, _OTHER_COLOUR)


class _Layout:
    """Where lanes and rows are: x per node, y per trace index."""

    def __init__(self, chart: SequenceChart) -> None:
        n = len(chart.lanes)
        step = (_LANE_RIGHT - _LANE_LEFT) // (n - 1) if n > 1 else 0
        start = _LANE_LEFT if n > 1 else WIDTH // 2
        self.x = {lane.node: start + i * step for i, lane in enumerate(chart.lanes)}
        self.header_lines = max((len(lane.describe()) for lane in chart.lanes), default=1)
        self.top = 58 + 11 * self.header_lines + 16
        times: dict[int, int] = {}
        for a in chart.arrows:
            times[a.send_index] = a.send_ms
            if a.end_index is not None and a.end_ms is not None:
                times[a.end_index] = a.end_ms
        for note in chart.notes:
            times[note.index] = note.time_ms
        self.y: dict[int, int] = {}
        self.time_labels: list[tuple[int, int]] = []  # (y, ms) where the time changes
        self.gaps: list[tuple[int, int]] = []  # (y of the break, ms skipped)
        y, last_ms = self.top, None
        for index in sorted(times):
            ms = times[index]
            if last_ms is not None and ms - last_ms > GAP_MS:
                self.gaps.append((y - _ROW // 2 + _GAP_ROW // 2, ms - last_ms))
                y += _GAP_ROW
            if ms != last_ms:
                self.time_labels.append((y, ms))
            self.y[index] = y
            last_ms = ms
            y += _ROW
        self.in_flight = any(a.end_index is None for a in chart.arrows)
        self.end_row = y if self.in_flight else None
        self.bottom = y + (_ROW if self.in_flight else 0)


def sequence_svg(chart: SequenceChart) -> str:
    """Return the chart as SVG text (see the module docstring)."""
    layout = _Layout(chart)
    legend, legend_height = _legend(chart, layout.bottom + 14)
    height = layout.bottom + 14 + legend_height + 8
    pid = "unknown" if chart.producer_id is None else chart.producer_id
    heading = f"Transaction {chart.occurrence + 1} of {chart.count} of {chart.transactional_id}: {outcome(chart)}"
    producer = f"producer {chart.producer}, pid {pid}"
    root = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        'font-family="Helvetica, Arial, sans-serif" font-size="10">'
    )
    first, last = min(layout.y, default=chart.first_index), max(layout.y, default=chart.last_index)
    subtitle = (
        f"{producer}; trace events {first}..{last}; "
        "time runs downwards (simulated ms at the left); "
        "hover an arrow for its detail"
    )
    parts = [
        root,
        f"<title>{_text(heading)} ({_text(producer)})</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        f'<text x="10" y="18" font-size="13" font-weight="bold">{_text(heading)}</text>',
        f'<text x="10" y="34" fill="#555555">{_text(subtitle)}</text>',
    ]
    parts += _lanes(chart, layout)
    parts += _time_column(layout)
    arrows = [_arrow(a, layout) for a in chart.arrows]
    parts += [group for group, _ in arrows]
    parts += ['<g class="labels">', *(label for _, label in arrows), "</g>"]
    parts += [_note(n, chart.producer, layout) for n in chart.notes]
    parts += legend
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def chart_values(chart: SequenceChart) -> dict[str, Any]:
    """The chart as numbers and short strings, for a page that draws it (``dashboard.js``, as :func:`sequence_svg`).

    ``arrows``: ``[send index, end index, message id, src, dst, kind, msg, api, label, send ms, end ms,
    deliver ms, drop reason, reply to, detail]``; ``notes``: ``[index, ms, node, name, text, detail]``
    (detail: the hover's ``key=value`` words); ``lanes``: ``[node, its description lines]``.
    """
    pid = "unknown" if chart.producer_id is None else chart.producer_id
    return {
        "heading": f"Transaction {chart.occurrence + 1} of {chart.count} of {chart.transactional_id}: {outcome(chart)}",
        "producer": chart.producer,
        "pid": pid,
        "first": chart.first_index,
        "last": chart.last_index,
        "lanes": [[lane.node, list(lane.describe())] for lane in chart.lanes],
        "arrows": [
            [
                a.send_index,
                a.end_index,
                a.msg_id,
                a.src,
                a.dst,
                a.kind,
                a.msg,
                a.api,
                a.label,
                a.send_ms,
                a.end_ms,
                a.deliver_ms,
                a.drop_reason,
                a.reply_to,
                " ".join(f"{k}={_plain(v)}" for k, v in a.detail if k not in ("to", "id", "msg")),
            ]
            for a in chart.arrows
        ],
        "notes": [
            [n.index, n.time_ms, n.node, n.name, n.text, " ".join(f"{k}={_plain(v)}" for k, v in n.detail)]
            for n in chart.notes
        ],
    }


#: The coordinator's states that decide a transaction (a prepare is the decision; markers follow).
_DECIDED = {
    "PrepareCommit": "committed",
    "CompleteCommit": "committed",
    "PrepareAbort": "aborted",
    "CompleteAbort": "aborted",
}
#: Errors that tell a producer a newer instance (epoch) of its transactional id exists.
_FENCED = ("PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "ProducerFenced", "InvalidProducerEpoch")


def outcome(chart: SequenceChart) -> str:
    """Say what happened to the transaction, from the events the chart shows.

    The producer's own end (``txn.commit`` / ``txn.abort``) says it when there is one. Without
    it, the coordinator may still have decided (its PrepareCommit or PrepareAbort: an abort
    after a timeout, or when a newer instance fenced this one) and the producer may have
    learnt it was fenced (an answer with PRODUCER_FENCED or INVALID_PRODUCER_EPOCH); both are
    said, the decision first (``aborted by the coordinator, then fenced (EndTxn PRODUCER_FENCED)``).
    Only when neither shows is it still open.
    """
    if chart.outcome == "COMMIT":
        return "committed"
    if chart.outcome == "ABORT":
        return "aborted by the producer"
    said = []
    decided = next((n.text for n in chart.notes if n.name == ev.TXN_STATE_WRITE and n.text in _DECIDED), None)
    if decided is not None:
        said.append(f"{_DECIDED[decided]} by the coordinator")
    answers = [(a.send_index, a.label) for a in chart.arrows if a.kind == "response" and a.dst == chart.producer]
    answers += [(n.index, n.text) for n in chart.notes if n.node == chart.producer and n.name == ev.PRODUCE_FAILED]
    fenced = min(((i, text) for i, text in answers if any(word in text for word in _FENCED)), default=None)
    if fenced is not None:
        said.append(("then " if said else "") + f"fenced ({fenced[1]})")
    return ", ".join(said) or "still open at the last event shown"


def _lanes(chart: SequenceChart, layout: _Layout) -> list[str]:
    out = []
    for lane in chart.lanes:
        x = layout.x[lane.node]
        roles = lane.describe()
        name = _text(lane.node)
        lines = [f'<text x="{x}" y="58" text-anchor="middle" font-size="11" font-weight="bold">{name}</text>']
        lines += [
            f'<text x="{x}" y="{71 + 11 * i}" text-anchor="middle" font-size="9" fill="#444444">{_text(r)}</text>'
            for i, r in enumerate(roles)
        ]
        top = layout.top - 10
        out.append(
            f'<g class="lane" data-node="{_attr(lane.node)}"><title>{name}: {_text("; ".join(roles))}</title>'
            + "".join(lines)
            + f'<line x1="{x}" y1="{top}" x2="{x}" y2="{layout.bottom}" stroke="#b0b0b0" stroke-width="1.5"/></g>'
        )
    return out


def _time_column(layout: _Layout) -> list[str]:
    out = [
        f'<text x="{_TIME_X}" y="{y + 3}" text-anchor="end" font-size="9" fill="#666666">{ms} ms</text>'
        for y, ms in layout.time_labels
    ]
    for y, skipped in layout.gaps:
        out.append(
            f'<line x1="10" y1="{y}" x2="{WIDTH - 10}" y2="{y}" stroke="#999999" stroke-dasharray="2 4"/>'
            f'<text x="{_TIME_X + 8}" y="{y - 3}" font-size="9" fill="#666666" font-style="italic">'
            f"{skipped} ms later</text>"
        )
    if layout.end_row is not None:
        out.append(
            f'<text x="{_TIME_X}" y="{layout.end_row + 3}" text-anchor="end" font-size="9" fill="#666666">'
            "end of trace</text>"
        )
    return out


def _hover(a: Arrow) -> str:
    if a.drop_reason is not None:
        fate = f"dropped at {a.end_ms} ms (trace #{a.end_index}): {a.drop_reason}"
    elif a.deliver_ms is None:
        fate = "still in flight when the trace ends"
    else:
        fate = f"delivered at {a.deliver_ms} ms (trace #{a.end_index})"
    lines = [
        f"{a.msg} {a.src} -> {a.dst} (message id {a.msg_id})",
        f"sent at {a.send_ms} ms (trace #{a.send_index}); {fate}",
    ]
    if a.reply_to is not None:
        lines.append(f"answers the request sent at trace #{a.reply_to}")
    body = [f"{k}={_plain(v)}" for k, v in a.detail if k not in ("to", "id", "msg")]
    if body:
        lines.append(" ".join(body))
    return "\n".join(lines)


def _plain(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_plain(v) for v in value) + "]"
    return "-" if value is None else str(value)


def _arrow(a: Arrow, layout: _Layout) -> tuple[str, str]:
    """Return the arrow's group (line, head or x, hover title) and its label, drawn later on top of every line."""
    colour = _colour(a.api)
    x1, y1 = layout.x[a.src], layout.y[a.send_index]
    xd = layout.x[a.dst]
    if a.end_index is None:
        x2, y2 = xd, layout.end_row if layout.end_row is not None else y1 + _ROW
    else:
        x2, y2 = xd, layout.y[a.end_index]
    dash = ' stroke-dasharray="5 3"' if a.kind == "response" else ""
    if a.end_index is None:
        dash = ' stroke-dasharray="1 3"'
    stroke = f'fill="none" stroke="{colour}" stroke-width="1.5"{dash}'
    if a.src == a.dst:  # a node that talks to itself (a coordinator that leads the partition): a loop
        side = -1 if x1 > WIDTH // 2 else 1  # bulge towards the middle of the canvas
        bend = x1 + side * _LOOP_PX
        end_x = bend if a.drop_reason is not None else x1 + 2 * side
        shapes = [f'<path d="M{x1} {y1}C{bend} {y1} {bend} {y2} {end_x} {y2}" {stroke}/>']
        head_from = bend
    else:
        if a.drop_reason is not None:  # it ends part of the way, in an x
            x2 = x1 + (xd - x1) * 3 // 5
        shapes = [f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" {stroke}/>']
        end_x, head_from = x2, x1
    if a.drop_reason is not None:
        shapes.append(
            f'<path d="M{end_x - 5} {y2 - 5}L{end_x + 5} {y2 + 5}M{end_x - 5} {y2 + 5}L{end_x + 5} {y2 - 5}" '
            'stroke="#cc0000" stroke-width="2"/>'
        )
    else:
        shapes.append(_head(head_from, y1 if a.src != a.dst else y2, end_x, y2, colour))
    hover = f"<title>{_text(_hover(a))}</title>"
    group = (
        f'<g class="arrow" data-api="{_attr(a.api)}" data-kind="{_attr(a.kind)}" data-index="{a.send_index}">'
        + hover
        + "".join(shapes)
        + "</g>"
    )
    right = xd > x1 or (xd == x1 and x1 <= WIDTH // 2)
    label = (
        f'<text class="label" data-index="{a.send_index}" x="{x1 + 6 if right else x1 - 6}" y="{y1 - 3}" '
        f'text-anchor="{"start" if right else "end"}" fill="{colour}" stroke="#ffffff" stroke-width="3" '
        f'paint-order="stroke">{hover}{_text(a.label)}</text>'
    )
    return group, label


def _head(x1: int, y1: int, x2: int, y2: int, colour: str) -> str:
    """Return a filled arrowhead with its tip at (x2, y2), pointing away from (x1, y1)."""
    dx, dy = x2 - x1, y2 - y1
    length = (dx * dx + dy * dy) ** 0.5 or 1.0
    ux, uy = dx / length, dy / length
    bx, by = x2 - 8 * ux, y2 - 8 * uy
    px, py = -uy * 3.5, ux * 3.5
    points = f"{x2:.1f},{y2:.1f} {bx + px:.1f},{by + py:.1f} {bx - px:.1f},{by - py:.1f}"
    return f'<polygon points="{points}" fill="{colour}"/>'


def _note(n: Note, producer: str, layout: _Layout) -> str:
    x, y = layout.x[n.node], layout.y[n.index]
    fill = _NOTE_FILL.get(n.name, _PRODUCER_FILL if n.node == producer else "#eeeeee")
    width = int(len(n.text) * _CHAR_PX) + 10
    hover = n.name + " " + " ".join(f"{k}={_plain(v)}" for k, v in n.detail) + f" (at {n.time_ms} ms, trace #{n.index})"
    return (
        f'<g class="note" data-index="{n.index}"><title>{_text(hover)}</title>'
        f'<rect x="{x - width // 2}" y="{y - 7}" width="{width}" height="14" rx="3" fill="{fill}" stroke="#888888"/>'
        f'<text x="{x}" y="{y + 3}" text-anchor="middle" font-size="9" fill="#222222">{_text(n.text)}</text></g>'
    )


def _legend(chart: SequenceChart, top: int) -> tuple[list[str], int]:
    """Return the legend's elements (message types present, then line styles) and its height."""
    present = {a.api for a in chart.arrows}
    items: list[tuple[str, str, str]] = [(api, _colour(api), "") for api in APIS if api in present]
    items += [(api, _colour(api), "") for api in sorted(present - set(APIS))]
    items += [("request", "#333333", ""), ("response", "#333333", ' stroke-dasharray="5 3"')]
    if any(a.end_index is None for a in chart.arrows):
        items.append(("in flight at the end", "#333333", ' stroke-dasharray="1 3"'))
    out, x, y = ['<g class="legend">'], 10, top
    for name, colour, dash in items:
        width = 26 + int(len(name) * _CHAR_PX) + 14
        if x + width > WIDTH - 10:
            x, y = 10, y + 16
        out.append(
            f'<line x1="{x}" y1="{y}" x2="{x + 20}" y2="{y}" stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text x="{x + 26}" y="{y + 3}">{_text(name)}</text>'
        )
        x += width
    if any(a.drop_reason is not None for a in chart.arrows):
        if x + 70 > WIDTH - 10:
            x, y = 10, y + 16
        out.append(
            f'<path d="M{x + 5} {y - 5}L{x + 15} {y + 5}M{x + 5} {y + 5}L{x + 15} {y - 5}" stroke="#cc0000" '
            f'stroke-width="2"/><text x="{x + 26}" y="{y + 3}">dropped</text>'
        )
    out.append("</g>")
    return out, y - top + 12
