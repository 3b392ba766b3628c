"""Small things a newcomer saw in the dashboard (issue 42, item 11): counts in words, the aborted swatch.

Goal:

1. A count of one is singular: "1 aborted record skipped; 1 record of open transactions held back",
   never "1 aborted records", in the reads panel.
2. The log strip's legend draws the "aborted" swatch as the boxes are drawn: hatched. In the
   dashboard, where a data batch takes its producer's colour, the outcome swatches are drawn in the
   text colour by their pattern alone, never in the pink of the engine's aborted colour.

Method: a real cluster in ``widgets.live.LiveRun`` (one aborted and one open transaction of one
record each) for the reads panel; the log strip is parsed with ``xml.etree``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from engine.views.log_batches import BatchSummary
from widgets import panels, svg
from widgets.live import LiveRun

SVG = "{http://www.w3.org/2000/svg}"


def _batch(base: int, count: int, kind: str, producer: int = 1000) -> BatchSummary:
    return BatchSummary(
        base, base + count - 1, count, producer, 0, 0, count - 1, 0, kind != "plain", False, None, -1, 0, 0, 0, kind
    )


def test_counted_is_singular_for_one_only() -> None:
    assert [svg.counted(n, "record") for n in (0, 1, 2)] == ["0 records", "1 record", "2 records"]


def test_one_aborted_record_and_one_open_record_are_counted_in_the_singular() -> None:
    run = LiveRun.start(seed=5, brokers=3)
    c = run.cluster
    c.create_topic("t", partitions=1, replication_factor=3)
    aborted = c.producer({"transactional.id": "a"})
    aborted.init_transactions()
    aborted.begin_transaction()
    aborted.produce("t", value=b"x")
    aborted.flush()
    aborted.abort_transaction()
    still_open = c.producer({"transactional.id": "b"})
    still_open.init_transactions()
    still_open.begin_transaction()
    still_open.produce("t", value=b"y")
    still_open.flush()
    c.run_for(500)
    text = re.sub(r"<[^>]+>", "", panels.reads_panel(run.recorder.latest(), "t", 0))
    assert "1 aborted record skipped; 1 record of open transactions held back" in text, text
    assert "records of open" not in text and "aborted records" not in text


def _legend_swatch(picture: str, label: str) -> tuple[ET.Element, list[ET.Element]]:
    """The legend's 10 x 10 swatch left of ``label`` and the hatch lines drawn inside it."""
    root = ET.fromstring(picture)
    text = next(t for t in root.iter(f"{SVG}text") if t.text == label)
    x, y = int(text.get("x", "0")) - 14, int(text.get("y", "0")) - 9
    spot = (str(x), str(y), "10")
    rect = next(r for r in root.iter(f"{SVG}rect") if (r.get("x"), r.get("y"), r.get("width")) == spot)
    lines = [
        ln
        for ln in root.iter(f"{SVG}line")
        if x <= float(ln.get("x1", "-1")) <= x + 10 and y <= float(ln.get("y2", "-1")) <= y + 10
    ]
    return rect, lines


def test_the_aborted_swatch_is_hatched_as_the_aborted_boxes_are() -> None:
    batches = [_batch(0, 2, "committed"), _batch(2, 2, "aborted")]
    plain = svg.log_strip(batches, high_watermark=4, last_stable_offset=4)
    rect, hatch = _legend_swatch(plain, "aborted")
    assert hatch, "the aborted swatch is not hatched"
    assert {ln.get("stroke") for ln in hatch} == {svg.COLOURS["aborted"]}

    dashboard = svg.log_strip(
        batches,
        high_watermark=4,
        last_stable_offset=4,
        fill=lambda b: "#3366cc",
        legend=[("#3366cc", "p1000")],
    )
    rect, hatch = _legend_swatch(dashboard, "aborted")
    assert hatch and {ln.get("stroke") for ln in hatch} == {"currentColor"}
    assert rect.get("fill") == "currentColor", "the swatch is pink while the boxes take the producer's colour"
    assert svg.COLOURS["aborted"] not in dashboard, "no pink left in a picture without markers"
