"""The SVG drawing of a transaction's sequence chart (``widgets.sequence_svg``).

Goal: the SVG is well-formed, self-contained XML with one lane group per lane, one arrow group
per arrow (with its hover title) and one note group per note; every text is escaped, even a
transactional id full of markup or characters XML cannot hold; a dropped message ends in an x and
the legend says so; and the same seed gives byte-identical SVG, in this process and in another
one with a different hash seed.
Method: real clusters on fixed seeds run transactions (one with a fault rule dropping a marker
reply); their charts are drawn and parsed back with ``xml.etree``. One chart is made by hand to
put hostile strings where a trace never would (node names, labels).
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from engine import Cluster, TopicPartition
from engine.views.sequence_chart import Arrow, Lane, Note, SequenceChart, transaction_chart
from widgets.sequence_svg import API_COLOURS, WIDTH, sequence_svg

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def _chart(transactional_id: str = "tx-1", *, drop_marker_reply: bool = False) -> SequenceChart:
    c = Cluster(seed=7, brokers=3)
    c.create_topic("out", partitions=2, replication_factor=3)
    c.create_topic("in", partitions=1, replication_factor=3)
    p = c.producer({"transactional.id": transactional_id})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"a", partition=0)
    p.produce("out", value=b"b", partition=1)
    p.send_offsets_to_transaction([TopicPartition("in", 0, 5)], "g")
    if drop_marker_reply:
        c.add_rule("drop", body_type="WriteTxnMarkersResponse", count=1)
    p.commit_transaction()
    c.run_for(40_000 if drop_marker_reply else 1000)
    return transaction_chart(c.world.trace, transactional_id)


def _groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == cls]


def test_the_svg_parses_and_has_one_group_per_lane_arrow_and_note() -> None:
    chart = _chart()
    root = ET.fromstring(sequence_svg(chart))
    assert root.tag == f"{SVG}svg"
    assert root.get("width") == str(WIDTH)
    assert [g.get("data-node") for g in _groups(root, "lane")] == [lane.node for lane in chart.lanes]
    arrows = _groups(root, "arrow")
    assert [int(g.get("data-index", "-1")) for g in arrows] == [a.send_index for a in chart.arrows]
    assert [g.get("data-api") for g in arrows] == [a.api for a in chart.arrows]
    assert len(_groups(root, "note")) == len(chart.notes)
    for g, a in zip(arrows, chart.arrows, strict=True):
        title = g[0]
        assert title.tag == f"{SVG}title"  # first child: the hover text of the whole group
        assert a.msg in (title.text or "") and f"trace #{a.send_index}" in (title.text or "")
        assert g.find(f"{SVG}line") is not None or g.find(f"{SVG}path") is not None


def test_the_svg_is_self_contained_and_colours_arrows_by_message_type() -> None:
    text = sequence_svg(_chart())
    root = ET.fromstring(text)
    tags = {el.tag.removeprefix(SVG) for el in root.iter()}
    assert not tags & {"script", "style", "image", "foreignObject", "a", "use"}
    assert "href" not in text and "url(" not in text and "javascript" not in text.lower()
    for g in _groups(root, "arrow"):
        colour = API_COLOURS[g.get("data-api", "")]
        assert colour in ET.tostring(g, encoding="unicode")
    legend = _groups(root, "legend")[0]
    legend_text = [t.text for t in legend.iter(f"{SVG}text")]
    assert legend_text[:8] == [
        "FindCoordinator",
        "InitProducerId",
        "AddPartitionsToTxn",
        "Produce",
        "AddOffsetsToTxn",
        "TxnOffsetCommit",
        "EndTxn",
        "WriteTxnMarkers",
    ]


def test_a_dropped_message_ends_in_a_red_x_and_the_legend_explains_it() -> None:
    chart = _chart(drop_marker_reply=True)
    root = ET.fromstring(sequence_svg(chart))
    lost = next(a for a in chart.arrows if a.dropped)
    group = next(g for g in _groups(root, "arrow") if g.get("data-index") == str(lost.send_index))
    assert [p.get("stroke") for p in group.iter(f"{SVG}path")] == ["#cc0000"]
    assert group.find(f"{SVG}polygon") is None  # no arrowhead: it never arrived
    assert f"dropped at {lost.end_ms} ms" in (group[0].text or "")
    assert "dropped" in [t.text for t in _groups(root, "legend")[0].iter(f"{SVG}text")]
    # The 10 s the coordinator waits before resending is drawn as a break, not 500 empty rows.
    assert any((t.text or "").endswith(" ms later") for t in root.iter(f"{SVG}text"))


def test_a_transactional_id_with_markup_is_escaped() -> None:
    text = sequence_svg(_chart("a<b&c"))
    assert "a<b&c" not in text
    assert "a&lt;b&amp;c" in text
    root = ET.fromstring(text)
    assert "a<b&c" in (root.find(f"{SVG}title").text or "")  # type: ignore[union-attr]


def test_hostile_strings_anywhere_still_give_well_formed_xml() -> None:
    nasty = "x\"<y>&'\x00\x1b\ufffe"
    arrow = Arrow(1, 2, 7, nasty, "b", "request", nasty, nasty, nasty, 0, 1, None, "partitioned", None, (("k", nasty),))
    note = Note(3, 1, "b", "txn_state.write", nasty, (("state", nasty),))
    lanes = (Lane(nasty, (nasty,), (nasty,)), Lane("b", (), ()))
    chart = SequenceChart(nasty, 0, 1, nasty, None, None, 0, 3, lanes, (arrow,), (note,))
    root = ET.fromstring(sequence_svg(chart))
    assert len(_groups(root, "arrow")) == 1
    assert _groups(root, "lane")[0].get("data-node") == "x\"<y>&'\ufffd\ufffd\ufffd"


def test_the_same_seed_draws_byte_identical_svg_in_two_runs_and_two_processes() -> None:
    first, second = sequence_svg(_chart()), sequence_svg(_chart())
    assert first == second
    script = "\n".join(
        [
            "import sys",
            "from engine import Cluster, TopicPartition",
            "from engine.views.sequence_chart import SequenceChart, transaction_chart",
            "from widgets.sequence_svg import sequence_svg",
            inspect.getsource(_chart),
            "sys.stdout.write(sequence_svg(_chart()))",
        ]
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, encoding="utf-8", check=True, env=env, cwd=ROOT
    )
    assert out.stdout == first
