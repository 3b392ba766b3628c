"""What a newcomer met in the live dashboard, each pinned down: it asks before forking, says what it does not know.

Goal, one test (or a few) per point a first reader of the tour hit:

1. A click that changes the run while rewound (crash, play, step, a fault) asks first and forks only
   when the fork button answers; the tour ends live.
2. A crashed leader's LEO, HW and LSO are unknown, shown as unknown with the reason, never as the
   engine's ``-1``, in every panel and in the log strip.
3. The status bar's note is the one of the event shown: scrubbed back before a crash, it does not say
   the broker crashed.
4. The front-end uses only characters Debian's chromium can draw with its default fonts (DejaVu): no
   emoji such as the pause sign U+23F8, which is an empty box there.
5. (The time slider's keys are a browser matter: tests/browser/test_browser_dashboard.py.)
6. The sequence chart's title says how the transaction ended, from the events it shows: aborted by
   the coordinator, then fenced; not "not ended".
7. Play goes fast through quiet time (a crashed leader's 9 s session timeout) and slows down at
   the first change; it still replays exactly.
8. The log strip's cursor labels never overlap each other, and no cursor line crosses a label.

Method: real clusters in ``widgets.live.LiveRun`` and real ``Dashboard`` widgets without a pacer;
clicks are sent as the page sends them (``Dashboard._on_action``). The pictures are parsed with
``xml.etree``; label boxes are measured with DejaVu Sans Mono's advance (0.602 em), the font
chromium uses for the strip's ``monospace`` on Debian. The tour runs in a fresh IPython process.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from engine import Cluster
from engine.errors import InvalidProducerEpochException, ProducerFencedException
from engine.views.log_batches import BatchSummary
from engine.views.sequence_chart import transaction_chart
from tests.widgets.test_widgets_dashboard import workload_small
from widgets import dashboard as dashboard_module
from widgets import panels, svg
from widgets.dashboard import MAX_HZ, RUN_ACTIONS, Dashboard
from widgets.live import LiveRun
from widgets.sequence_svg import sequence_svg

ROOT = Path(__file__).resolve().parents[2]
SVG = "{http://www.w3.org/2000/svg}"


def click(dash: Dashboard, op: str, node: str = "") -> None:
    """What the page sends for a button."""
    dash._on_action(dash, {"op": op, "node": node}, [])


def started(seed: int = 9) -> LiveRun:
    """A run with a topic, a few committed transactions, then a client created later."""
    run = LiveRun.start(seed=seed, brokers=3)
    workload_small(run.cluster)
    return run


# -- 1. asking before a fork --------------------------------------------------------------------


def test_a_click_on_the_run_while_rewound_asks_and_forks_only_when_confirmed() -> None:
    run = started()
    before_late = run.recorder.last_index
    late = run.cluster.producer({"client.id": "late"})
    late.produce("t", value=b"x")
    late.flush()
    fingerprint = run.cluster.world.fingerprint()
    dash = Dashboard(run, pacer=False)
    dash.scrub = before_late
    last = run.recorder.last_index

    click(dash, "crash", "broker-2")
    asked = dash.confirm
    assert dash.run is run and dash.forks == 0, "a click forked at once"
    assert asked["fork"] == "Fork here and crash broker-2"
    assert asked["text"] == (
        f"Acting at event {before_late} of {last} forks the run there. It drops the {last - before_late} later"
        " events and the clients late; the notebook's names move to the fork."
    )
    assert dash.status["index"] == before_late and not dash.status["live"]  # still looking at the past
    assert run.cluster.brokers[2].status.value == "up" and run.cluster.world.fingerprint() == fingerprint

    click(dash, "fork")
    assert dash.run is not run and dash.forks == 1 and dash.confirm == {}
    assert dash.status["live"] and re.fullmatch(r"forked at event \d+; broker-2 crashed", dash.status["note"])
    assert dash.run.cluster.brokers[2].status.value == "down"
    assert "late" not in dash.run.cluster.world.nodes  # created after the fork point: not in the fork
    assert run.cluster.world.fingerprint() == fingerprint  # the run we came from is untouched


def test_the_fork_question_is_two_short_sentences_naming_only_the_users_own_clients() -> None:
    """The checker's final readers (``eos-check-reader-N``) are its own clients: the question never names them."""
    from engine.scenarios.supervisor import check_reader_id, read_until_idle

    run = started()
    point = run.recorder.last_index
    for name in ("late", "later"):
        p = run.cluster.producer({"client.id": name})
        p.produce("t", value=b"x")
        p.flush()
    keys = [("t", p) for p in range(run.cluster.topics["t"])]
    for n in (1, 2):
        read_until_idle(run.cluster, keys, check_reader_id(n))
    dash = Dashboard(run, pacer=False)
    dash.scrub = point
    click(dash, "crash", "broker-2")
    text = dash.confirm["text"]
    assert "eos-check-reader" not in text, text
    assert "later events and the clients late, later;" in text, text
    sentences = [s for s in re.split(r"(?<=\.) ", text) if s]
    assert len(sentences) == 2 and all(len(s) <= 100 for s in sentences), sentences


@pytest.mark.parametrize("op", sorted(RUN_ACTIONS))
def test_every_action_on_the_run_asks_and_cancel_scrub_or_live_forget_the_question(op: str) -> None:
    run = started()
    fingerprint = run.cluster.world.fingerprint()
    dash = Dashboard(run, pacer=False)
    dash.scrub = run.recorder.last_index - 20
    click(dash, op, "broker-1")
    assert dash.confirm["op"] == op and dash.confirm["fork"].startswith("Fork here and ")
    assert dash.run is run and not dash.playing and run.cluster.world.fingerprint() == fingerprint
    click(dash, "cancel")
    assert dash.confirm == {} and dash.status["note"] == "cancelled: nothing forked" and dash.run is run
    click(dash, op, "broker-1")
    dash.scrub = run.recorder.last_index - 25  # the question was about another event
    assert dash.confirm == {}
    click(dash, op, "broker-1")
    click(dash, "live")
    assert dash.confirm == {} and dash.status["live"] and dash.forks == 0
    assert run.cluster.world.fingerprint() == fingerprint


def test_pause_and_going_live_never_ask() -> None:
    dash = Dashboard(started(), pacer=False)
    dash.scrub = 10
    for op in ("pause", "live"):
        click(dash, op)
        assert dash.confirm == {}


TOUR_SCRIPT = """
import contextlib, io, json, sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
for source, may_raise in json.load(sys.stdin):
    with contextlib.redirect_stdout(io.StringIO()):
        result = ip.run_cell(source)
    if not result.success and not may_raise:
        sys.exit(f"cell failed: {result.error_in_exec or result.error_before_exec}\\n{source}")
dash = ip.user_ns["dash"]
dash.publish()  # what the pacer publishes within a tenth of a second
print(json.dumps({"status": dash.status, "last": dash.run.recorder.last_index}))
"""


def test_the_tour_ends_live() -> None:
    """Run the tour's code cells in a fresh IPython, as Run All does, and read the dashboard at the end."""
    cells = json.loads((ROOT / "notebooks" / "00-tour.ipynb").read_text())["cells"]
    code = [("".join(c["source"]), "raises-exception" in c["metadata"].get("tags", ())) for c in cells]
    code = [c for c, cell in zip(code, cells, strict=True) if cell["cell_type"] == "code"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", TOUR_SCRIPT],
        input=json.dumps(code),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    end = json.loads(done.stdout.strip().splitlines()[-1])
    assert end["status"]["live"] and end["status"]["index"] == end["last"], end


# -- 2. unknown is unknown ----------------------------------------------------------------------

#: ``-1`` as a number in text (not the end of ``orders-1``, nor the ``HW-1`` lag note).
MINUS_ONE = re.compile(r"(?<![\w-])-1(?!\d)")


def _said(fragment: str) -> str:
    """The text a reader sees or hovers: element text and title attributes, tags stripped."""
    titles = " ".join(re.findall(r'title="([^"]*)"', fragment))
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment) + " " + titles)


def test_a_down_leaders_offsets_are_unknown_with_the_reason_never_minus_one() -> None:
    run = started()
    consumer = run.cluster.consumer({"isolation.level": "read_committed", "client.id": "reader"})
    consumer.assign([("t", 0)])
    consumer.consume(10, 1.0)
    leader = run.recorder.latest().partition("t", 0).leader
    dash = Dashboard(run, pacer=False)
    click(dash, "crash", f"broker-{leader}")
    assert dash.status["note"] == f"broker-{leader} crashed"
    row = run.recorder.latest().partition("t", 0)
    assert (row.leader, row.leo, row.hw, row.lso) == (leader, -1, -1, -1)  # what the board says: unknown
    why = f"leader {leader} is down"
    for name in ("brokers", "partitions", "producers", "txns", "logs", "reads"):
        seen = _said(getattr(dash, name))
        assert not MINUS_ONE.search(seen), f"{name} shows -1: {MINUS_ONE.search(seen)} in {seen[:600]}"
    assert panels.UNKNOWN in dash.partitions and why in dash.partitions
    assert f"HW {panels.UNKNOWN} ({why})" in _said(dash.reads) and f"LSO {panels.UNKNOWN}" in _said(dash.reads)
    assert f"LSO, HW, LEO unknown: {why}" in _svg_texts(dash.logs)


def test_a_producer_without_an_id_yet_shows_none_not_minus_one() -> None:
    run = LiveRun.start(seed=4, brokers=3)
    run.cluster.producer({"transactional.id": "x", "client.id": "fresh"})  # no init_transactions yet
    board = run.recorder.latest()
    assert board.producer("fresh").producer_id == -1
    assert not MINUS_ONE.search(_said(panels.producers_panel(board)))


# -- 3. the note of the event shown ---------------------------------------------------------------


def test_the_note_is_the_one_of_the_event_shown() -> None:
    run = started()
    dash = Dashboard(run, pacer=False)
    before = run.recorder.last_index
    click(dash, "crash", "broker-1")
    assert dash.status["note"] == "broker-1 crashed"
    dash.scrub = before
    assert dash.status["index"] == before and dash.status["note"] == "", dash.status
    dash.live()
    assert dash.status["note"] == "broker-1 crashed"


# -- 4. glyphs chromium can draw -------------------------------------------------------------------

#: Every non-ASCII character the dashboard may show, each in DejaVu Sans or DejaVu Sans Mono, the fonts
#: of Debian's chromium (fonts-dejavu-core); checked against the font files below when they are there.
DRAWABLE = frozenset("·×…→—▶❚◂✓✗")
DEJAVU = [Path("/usr/share/fonts/truetype/dejavu") / f for f in ("DejaVuSans.ttf", "DejaVuSansMono.ttf")]


def test_the_list_of_drawable_characters_is_true_of_the_dejavu_fonts() -> None:
    fonts = [f for f in DEJAVU if f.exists()]
    if not fonts:
        pytest.skip("no DejaVu fonts here (fonts-dejavu-core)")
    from fontTools.ttLib import TTFont

    covered = {chr(cp) for f in fonts for cp in TTFont(f).getBestCmap()}
    assert not DRAWABLE - covered, sorted(DRAWABLE - covered)
    assert "\u23f8" not in covered  # the pause sign: an empty box there


def test_the_dashboard_shows_only_characters_chromium_can_draw() -> None:
    run = started()
    run.cluster.crash(1)
    dash = Dashboard(run, pacer=False)
    shown = [(name, getattr(dash, name)) for name in dashboard_module.PANELS]
    shown += [(p.name, p.read_text()) for p in (ROOT / "widgets").glob("dashboard.*") if p.suffix in (".js", ".css")]
    for where, text in shown:
        strange = sorted({ch for ch in text if ord(ch) > 127} - DRAWABLE)
        assert not strange, f"{where}: {[f'{ch} U+{ord(ch):04X}' for ch in strange]}"


# -- 6. the chart's title -------------------------------------------------------------------------


def _title(picture: str) -> str:
    """The chart's title: "Transaction k of n of <id>: <what happened> (producer <name>, pid <id>)"."""
    return ET.fromstring(picture).find(f"{SVG}title").text or ""  # type: ignore[union-attr]


def test_the_chart_title_says_the_coordinator_aborted_and_the_producer_was_fenced() -> None:
    c = Cluster(seed=11, brokers=3)
    c.create_topic("orders", partitions=1, replication_factor=3)
    tx = c.producer({"transactional.id": "app", "client.id": "tx"})
    tx.init_transactions()
    tx.begin_transaction()
    tx.produce("orders", value=b"late")
    tx.flush()
    c.producer({"transactional.id": "app", "client.id": "tx2"}).init_transactions()  # fences tx
    with pytest.raises((ProducerFencedException, InvalidProducerEpochException)):
        tx.commit_transaction()
    chart = transaction_chart(c.world.trace, "app", 0)
    assert chart.outcome is None  # the zombie never ended it itself
    title = _title(sequence_svg(chart))
    assert "not ended" not in title, title
    said = r": aborted by the coordinator, then fenced \((EndTxn|Produce) [A-Z_]+\) \(producer tx,"
    assert re.search(said, title), title


def test_the_chart_title_of_an_ended_or_open_transaction() -> None:
    c = Cluster(seed=7, brokers=3)
    c.create_topic("t", partitions=1, replication_factor=3)
    p = c.producer({"transactional.id": "a"})
    p.init_transactions()
    for end in (p.commit_transaction, p.abort_transaction, None):
        p.begin_transaction()
        p.produce("t", value=b"v")
        p.flush()
        if end is not None:
            end()
    titles = [_title(sequence_svg(transaction_chart(c.world.trace, "a", k))) for k in range(3)]
    assert [t.split(": ", 1)[1].split(" (producer ")[0] for t in titles] == [
        "committed",
        "aborted by the producer",
        "still open at the last event shown",
    ]


# -- 7. play skips quiet time -----------------------------------------------------------------------


def test_play_fast_forwards_a_quiet_wait_and_still_replays_exactly() -> None:
    run = started()
    leader = run.recorder.latest().partition("t", 0).leader
    dash = Dashboard(run, pacer=False)
    assert dash.rate == dashboard_module.DEFAULT_RATE
    run.cluster.crash(leader)
    start = run.cluster.now_ms
    dash.playing = True
    ticks = 0
    while run.recorder.latest().partition("t", 0).leader == leader:
        ticks += 1
        assert ticks <= 40, f"no new leader after 4 s of play ({run.cluster.now_ms - start} ms): play crawls"
        dash.step_publish()
    assert run.cluster.now_ms - start > 9000 > ticks * dash.rate // MAX_HZ  # faster than the rate, while quiet
    assert run.replay().cluster.world.fingerprint() == run.cluster.world.fingerprint()


def test_play_keeps_the_rate_while_the_board_changes() -> None:
    run = started()
    dash = Dashboard(run, pacer=False)
    p = run.cluster.producer({"client.id": "busy"})
    for i in range(20):
        p.produce("t", value=b"%d" % i)
    start = run.cluster.now_ms
    dash.playing = True
    dash.step_publish()
    assert run.cluster.now_ms - start == dash.rate // MAX_HZ and not dash.status["quiet"]


# -- 8. the log strip's labels -------------------------------------------------------------------

#: DejaVu Sans Mono's advance per character at font-size 10, and a label's extent above and below its baseline.
CHAR_PX, ASCENT, DESCENT = 6.02, 8, 3


def _batch(base: int, count: int, kind: str) -> BatchSummary:
    return BatchSummary(
        base, base + count - 1, count, 1000, 0, 0, count - 1, 0, kind != "plain", False, None, -1, 0, 0, 0, kind
    )


def _svg_texts(fragment: str) -> str:
    return " ".join(
        t.text or "" for m in re.findall(r"<svg.*?</svg>", fragment, re.S) for t in ET.fromstring(m).iter(f"{SVG}text")
    )


def _cursor_marks(picture: str) -> list[tuple[tuple[float, float, float, float], tuple[int, int, int]]]:
    """Return each cursor's label box (x0, y0, x1, y1) and line (x, y1, y2)."""
    out = []
    for g in ET.fromstring(picture).iter(f"{SVG}g"):
        line, text = g.find(f"{SVG}line"), g.find(f"{SVG}text")
        if line is None or text is None or not re.search(r"(LSO|HW|LEO)", text.text or ""):
            continue
        x, y, w = int(text.get("x", "0")), int(text.get("y", "0")), CHAR_PX * len(text.text or "")
        x0 = x - w / 2 if text.get("text-anchor") == "middle" else x
        box = (x0, y - ASCENT, x0 + w, y + DESCENT)
        out.append((box, (int(line.get("x1", "0")), int(line.get("y1", "0")), int(line.get("y2", "0")))))
    return out


@pytest.mark.parametrize(
    ("batches", "hw", "lso", "leo"),
    [
        ([_batch(0, 1, "committed"), _batch(1, 1, "open")], 2, 1, 2),
        ([_batch(0, 2, "open")], 2, 1, 2),
        ([_batch(0, 1, "open"), _batch(1, 1, "open")], 2, 0, 2),
        ([_batch(0, 1, "committed"), _batch(1, 1, "open")], 1, 0, 2),
        ([_batch(0, 1, "open")], 1, 0, 1),
        ([_batch(b, 1, "plain") for b in range(40)] + [_batch(40, 1, "open")], 41, 5, 41),
        ([_batch(0, 1000, "committed"), _batch(1000, 1, "open")], 1001, 1000, 1001),
    ],
)
def test_cursor_labels_never_overlap_each_other_or_a_line(batches: list[Any], hw: int, lso: int, leo: int) -> None:
    marks = _cursor_marks(svg.log_strip(batches, high_watermark=hw, last_stable_offset=lso, log_end_offset=leo))
    assert len(marks) == len({hw, lso, leo})
    for i, (box, _) in enumerate(marks):
        for j, (other, (x, y1, y2)) in enumerate(marks):
            if i == j:
                continue
            apart = box[2] <= other[0] or other[2] <= box[0] or box[3] <= other[1] or other[3] <= box[1]
            assert apart, f"labels overlap: {box} {other}"
            crosses = box[0] <= x <= box[2] and y1 < box[3] and y2 > box[1]
            assert not crosses, f"the line at x={x} ({y1}..{y2}) crosses the label {box}"
