"""The SVG chart of partition ownership over time (``widgets.ownership_svg``).

Goal: the chart is well-formed, self-contained XML with one bar per ownership interval and one red
box per gap (each with its hover title), a gap of a few milliseconds in a window of a minute is
still drawn (at least 2 px), every text is escaped, and the same ownership gives the same bytes.
Method: an ownership read by :func:`engine.views.ownership.ownership` from a few trace events built
by hand (a member name full of markup), parsed back with ``xml.etree``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from engine import trace_events as events
from engine.sim.trace import TraceEvent
from engine.views.ownership import ownership
from widgets.ownership_svg import ownership_svg

SVG = "{http://www.w3.org/2000/svg}"


def _assigned(i: int, t: int, node: str, *tps: str) -> TraceEvent:
    return TraceEvent(i, t, node, "state", events.CONSUMER_ASSIGNMENT, (("group", "g<&>"), ("assignment", list(tps))))


def test_bars_gaps_titles_and_a_tiny_gap_still_shows() -> None:
    trace = [
        _assigned(0, 0, "a<b>&", "t-0", "t-1"),
        _assigned(1, 30_000, "a<b>&", "t-1"),
        _assigned(2, 30_003, "c", "t-0"),  # 3 ms without an owner in a 60 s window
    ]
    own = ownership(trace, end_ms=60_000)
    svg = ownership_svg(own, title="one <gap>")
    assert svg == ownership_svg(own, title="one <gap>")
    root = ET.fromstring(svg)
    titles = [t.text for t in root.iter(f"{SVG}title")]
    assert titles[0] == "one <gap>"
    assert "g<&> t-0: no owner 30000..30003 ms (3 ms)" in titles
    assert "g<&> t-0: a<b>& owned it 0..30000 ms" in titles
    gap_boxes = [r for r in root.iter(f"{SVG}rect") if r.get("stroke") == "#d1493f"]
    assert len(gap_boxes) == 1 and int(gap_boxes[0].get("width")) >= 2
    lanes = [t.text for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("g<&> ")]
    assert lanes == ["g<&> t-0", "g<&> t-1"]
    totals = [t.text for t in root.iter(f"{SVG}text") if t.get("x") == "856"]
    assert totals == ["no owner", "3 ms", "-"]
