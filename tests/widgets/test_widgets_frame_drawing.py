"""The page draws from the frame what the picture draws from the board: every panel, the same markup.

Method: a faulty run in a real ``LiveRun`` (the widgets' workload: an idempotent producer, transactions
with an abort and a zombie fenced by its replacement, a broker crash and restart, a read_committed
consumer; then 70 one-record batches on another topic, so a log tail holds more batches than a strip
draws, a consumer group, a transaction with a dropped acknowledgement and a request in flight when its
leader crashes). A ``Dashboard`` is scrubbed to 27 moments of it, with the reads partition and the
sequence chart's id switched on the way, and at each moment we keep its frame (what the kernel sends,
:mod:`widgets.frame`; a packed log tail unpacked to its numbers, as the page does) and every panel's
HTML from :mod:`widgets.panels` and :mod:`widgets.sequence_svg` (what the static picture shows). Node
then runs the drawing functions of ``widgets/dashboard.js`` on each frame: every panel must equal
Python's, character for character (after ``&#x27;``/``&quot;`` are read as the quotes they stand for:
the two escape differently, the browser shows the same). Without node (``check-js.sh`` needs it too)
the test is skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from engine import fault_verbs
from tests.widgets.test_widgets_dashboard import workload
from widgets import dashboard as dashboard_module
from widgets import frame
from widgets.dashboard import PANELS, Dashboard
from widgets.live import LiveRun

ROOT = Path(__file__).resolve().parents[2]

#: Node: load dashboard.js's drawing functions, draw each moment's panels, print the ones that differ.
_NODE = r"""
import fs from "fs";
const [js, cases, out] = process.argv.slice(2);
const src = fs.readFileSync(js, "utf8").replace("export default { render };", "export { DRAW, View };");
fs.writeFileSync(out, src);
const { DRAW, View } = await import(out);
const norm = (s) => s.replace(/&#x27;/g, "'").replace(/&quot;/g, '"');
const bad = [];
let n = 0;
for (const [i, c] of JSON.parse(fs.readFileSync(cases, "utf8")).entries()) {
  const v = new View(c.frame);
  for (const [name, want] of Object.entries(c.html)) {
    n += 1;
    const got = DRAW[name](v);
    if (norm(got) !== norm(want)) {
      let k = 0;
      while (k < got.length && got[k] === want[k]) k++;
      bad.push(`moment ${i}, ${name}, at ${k}: js ${got.slice(k, k + 120)} | py ${want.slice(k, k + 120)}`);
    }
  }
}
console.log(JSON.stringify({ n, bad }));
"""


def _moments(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    monkeypatch.setattr(dashboard_module, "MSC_EVERY_S", 0.0)  # the chart follows every scrub here
    run = LiveRun.start(seed=11, brokers=3)
    c = run.cluster
    workload(c)
    c.create_topic("many", partitions=1, replication_factor=3)
    bulk = c.producer({"client.id": "bulk"})
    for _ in range(70):
        bulk.produce("many", value=b"xyz", partition=0)
        bulk.flush()
    member = c.consumer({"group.id": "grp", "client.id": "gc"})
    member.subscribe(["orders"])
    member.consume(10, 1.0)
    z = c.producer({"transactional.id": "z", "client.id": "tz"})
    z.init_transactions()
    z.begin_transaction()
    fault_verbs.lose_next_ack(c, dst="tz")
    z.produce("orders", value=b"q", partition=1)
    c.run_for(50)
    z.produce("orders", value=b"r", partition=0)
    c.crash(1)
    c.run_for(200)
    dash = Dashboard(run, pacer=False)
    out = []
    last = run.recorder.last_index
    for i in [*range(0, last, max(1, last // 25)), last]:
        dash.scrub = i if i < last else -1
        dash.reads_tp = "orders-1" if i % 2 else ""
        dash.msc_txn = "z" if (i // 3) % 2 else ""
        dash.publish(force=True)
        html = {name: getattr(dash, name) for name in PANELS}
        sent = {k: frame.unpack(v) if type(v) is bytes else v for k, v in dash.sent_frame.items()}
        out.append({"frame": sent, "html": html})
    return out


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (scripts/check-js.sh needs it too)")
def test_the_page_draws_every_panel_as_the_picture_does(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    moments = _moments(monkeypatch)
    shown = {json.dumps(m["frame"]["msc"])[:60] for m in moments}  # type: ignore[index]
    assert len(shown) >= 3, shown  # the chart: none yet, the zombie's, the one with a drop and a request in flight
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(moments))
    script = tmp_path / "draw.mjs"
    script.write_text(_NODE)
    proc = subprocess.run(
        ["node", str(script), str(ROOT / "widgets" / "dashboard.js"), str(cases), str(tmp_path / "dashboard.mjs")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["n"] == len(moments) * len(PANELS)
    assert result["bad"] == [], "\n".join(result["bad"][:5])
