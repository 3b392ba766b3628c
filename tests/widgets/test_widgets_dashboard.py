"""The live dashboard without a browser: it never changes a run, replays exactly, scrubs, forks, throttles.

Method: real clusters (``widgets.live.LiveRun``) and real ``Dashboard`` widgets; outside a kernel their
comm is ipywidgets' ``DummyComm``, so what the page would get (the frame's diffs, custom messages) is
caught by replacing ``send``. One workload (topic, idempotent producer, transactions with an abort, a
zombie fenced by a replacement, a broker crash and restart, a read_committed consumer) runs three ways:
on a bare ``Cluster``, in a ``LiveRun`` alone, and in a ``LiveRun`` with a dashboard whose pacer thread
publishes while the workload runs and which is scrubbed back and forth and closed. All three must end
with the same fingerprint; the journal's replay of the dashboard run too. Then the dashboard's own
behaviour: only changed values are sent (numbers and short strings, never a panel's HTML; issue 44), a
view that opens gets the whole frame, the scrubbed board is the recorder's, acting while scrubbed forks
and leaves the old run alone, the pacer stays at or under 10 Hz, and the static snapshot carries every
panel.
"""

from __future__ import annotations

import base64
import itertools
import re
import time
from typing import Any

import pytest

from engine import Cluster
from engine.errors import InvalidProducerEpochException, ProducerFencedException
from engine.views.board import board_state
from widgets import dashboard as dashboard_module
from widgets import frame, panels
from widgets.dashboard import MAX_HZ, PANELS, Dashboard
from widgets.live import LiveRun


def workload(c: Cluster) -> None:
    """A bit of everything the dashboard shows; the same calls on any cluster."""
    c.create_topic("orders", partitions=2, replication_factor=3)
    p = c.producer({"client.id": "p1"})
    for i in range(6):
        p.produce("orders", value=b"o-%d" % i, partition=i % 2)
    p.flush()
    tx = c.producer({"transactional.id": "app", "client.id": "tx"})
    tx.init_transactions()
    tx.begin_transaction()
    tx.produce("orders", value=b"paid", partition=0)
    tx.commit_transaction()
    tx.begin_transaction()
    tx.produce("orders", value=b"refund", partition=1)
    tx.abort_transaction()
    tx.begin_transaction()
    tx.produce("orders", value=b"late", partition=0)
    tx.flush()  # "late" is in the log, in the transaction the replacement will abort
    tx2 = c.producer({"transactional.id": "app", "client.id": "tx2"})
    tx2.init_transactions()
    with pytest.raises((ProducerFencedException, InvalidProducerEpochException)):
        tx.commit_transaction()  # fenced: by the coordinator, or first by the leader rejecting its epoch
    c.crash(2)
    c.run_for(300)
    c.restart(2)
    c.run_for(1500)
    cons = c.consumer({"isolation.level": "read_committed", "client.id": "reader"})
    cons.assign([("orders", 0), ("orders", 1)])
    cons.consume(100, 2.0)


def bare_fingerprint() -> str:
    c = Cluster(seed=11, brokers=3)
    workload(c)
    return c.world.fingerprint()


@pytest.fixture(scope="module")
def baseline() -> str:
    return bare_fingerprint()


def test_the_recorded_run_is_the_bare_run(baseline: str) -> None:
    run = LiveRun.start(seed=11, brokers=3)
    workload(run.cluster)
    assert run.cluster.world.fingerprint() == baseline


def test_a_dashboard_attached_scrubbed_and_closed_changes_nothing(baseline: str) -> None:
    run = LiveRun.start(seed=11, brokers=3)
    dash = Dashboard(run, pacer=True)
    try:
        workload(run.cluster)  # the pacer publishes from its thread meanwhile
        time.sleep(0.35)  # a few pacer ticks at least
        last = run.recorder.last_index
        for i in (0, last // 3, last // 2, last - 1, -1):
            dash.scrub = i
            dash.publish(force=True)
    finally:
        dash.close()
    assert not dash.pacer.is_alive() and dash.pacer.errors == []
    assert dash.pacer.ticks > 0
    assert run.cluster.world.fingerprint() == baseline
    replayed = run.replay()
    assert replayed.cluster.world.fingerprint() == baseline
    assert replayed.cluster.world.trace.short_log() == run.cluster.world.trace.short_log()


def test_dashboard_actions_are_journaled_and_replay_to_the_same_fingerprint() -> None:
    run = LiveRun.start(seed=5, brokers=3)
    c = run.cluster
    c.create_topic("t", partitions=1, replication_factor=3)
    p = c.producer({"client.id": "p"})
    dash = Dashboard(run, pacer=False)
    dash.act("drop-ack", "p")
    p.produce("t", value=b"x")
    dash.act("crash", "broker-1")
    dash.act("step")
    dash.act("step-request")
    dash.playing = True
    for _ in range(5):
        dash.step_publish()  # what the pacer does each tick while playing
    dash.act("restart", "broker-1")
    p.flush()
    live = c.world.fingerprint()
    methods = [e.method for e in run.journal.entries]
    assert {"add_rule", "crash", "step", "run_until", "run_for", "restart"} <= set(methods), methods
    assert run.replay().cluster.world.fingerprint() == live


def _frames(dash: Dashboard) -> list[dict[str, Any]]:
    """Catch what the dashboard sends to the page (its custom messages) in a list, buffers unpacked."""
    sent: list[dict[str, Any]] = []

    def send(content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
        values = content["set"]
        for k, v in values.items():
            if isinstance(v, dict) and set(v) == {"buffer"}:
                values[k] = frame.unpack((buffers or [])[v["buffer"]])
        sent.append(content)

    dash.send = send  # type: ignore[method-assign]
    return sent


def test_only_changed_values_are_sent() -> None:
    """A tick sends the frame's changed keys only: numbers and short strings, never a panel's HTML."""
    run = LiveRun.start(seed=3, brokers=3)
    run.cluster.create_topic("t", partitions=1, replication_factor=3)
    dash = Dashboard(run, pacer=False)
    sent = _frames(dash)
    assert dash.publish() is False and sent == []  # nothing happened: nothing built or sent
    p = run.cluster.producer({"client.id": "p"})
    p.produce("t", value=b"v")
    p.flush()
    assert dash.publish() is True
    (msg,) = sent
    assert msg["op"] == "frame" and not msg.get("full")
    changed = set(msg["set"])
    assert {"p:t-0", "pr:p", "o:pr", "lt:t-0", "tl"} <= changed
    assert not any(k.startswith(("b:", "t:", "g:", "o:b", "o:t")) for k in changed)  # brokers, txns: unchanged
    assert msg["set"]["p:t-0"][6:9] == [1, 1, 1]  # LEO, HW, LSO
    pid = p.producer_id
    assert msg["set"]["lt:t-0"] == [0, 1, frame.KINDS["plain"], pid, 0, 0]  # one batch: offset 0, 1 record, seq 0
    assert not any(isinstance(v, str) and "<" in v for v in msg["set"].values())
    sent.clear()
    run.cluster.crash(3)
    dash.publish()
    (msg,) = sent
    assert msg["set"]["b:3"][0] == "down" and "pr:p" not in msg["set"] and "lt:t-0" not in msg["set"]
    gone = [k for k in msg["del"] if k.startswith("e:")]  # the recent events scrolled: the old ones go
    assert gone and all(k not in dash.sent_frame for k in gone)


def test_a_view_that_opens_gets_the_whole_frame_and_diffs_rebuild_it() -> None:
    """The page asks with ``hello``; the whole frame, then every diff applied in order, equals the kernel's frame."""
    run = LiveRun.start(seed=3, brokers=3)
    dash = Dashboard(run, pacer=False)
    sent = _frames(dash)
    dash._on_action(dash, {"op": "hello"}, [])  # what the page's message does
    page: dict[str, Any] = {}
    workload(run.cluster)
    for step in range(4):
        run.cluster.run_for(50)
        dash.publish()
        if step == 1:
            dash.scrub = run.recorder.last_index // 2
    for msg in sent:
        if msg.get("full"):
            page = {}
        for k in msg["del"]:
            del page[k]
        page.update(msg["set"])
    kernel = {k: frame.unpack(v) if type(v) is bytes else v for k, v in dash.sent_frame.items()}
    assert sent[0]["full"] and page == kernel


def test_a_live_tick_packs_a_few_log_tails_and_the_next_ticks_catch_up() -> None:
    """A busy run changes every log tail each tick: a live tick packs at most a few, the rest follow."""
    run = LiveRun.start(seed=3, brokers=3)
    run.cluster.create_topic("t", partitions=12, replication_factor=3)
    dash = Dashboard(run, pacer=False)
    sent = _frames(dash)
    p = run.cluster.producer({"client.id": "p"})
    for k in range(12):
        p.produce("t", value=b"v", partition=k)
    p.flush()
    budget = max(dashboard_module.TAILS_PER_TICK, -(-12 // dashboard_module.TAIL_TICKS))
    ticks = 0
    while dash.publish():
        ticks += 1
        assert ticks <= dashboard_module.TAIL_TICKS + 1
    packed = [sum(k.startswith("lt:") for k in m["set"]) for m in sent]
    assert packed[0] == budget < 12 and sum(packed) == 12, packed
    board = run.recorder.latest()
    whole = frame.Encoder().frame(board, run.cluster.world.trace.events, ())
    assert {k: v for k, v in dash.sent_frame.items() if k.startswith("lt:")} == {
        k: v for k, v in whole.items() if k.startswith("lt:")
    }


def test_scrubbing_shows_the_recorded_board_and_live_comes_back() -> None:
    run = LiveRun.start(seed=9, brokers=3)
    workload_small(run.cluster)
    dash = Dashboard(run, pacer=False)
    last = run.recorder.last_index
    target = last // 2
    dash.scrub = target
    assert dash.status["index"] == target and dash.status["live"] is False
    board = run.recorder.at(target)
    assert dash.partitions == panels.partitions_panel(board)
    assert dash.txns == panels.txns_panel(board)
    dash.act("live")
    assert dash.status["index"] == last and dash.status["live"] is True
    assert dash.partitions == panels.partitions_panel(run.recorder.latest())
    assert run.recorder.latest() == board_state(run.cluster)


def workload_small(c: Cluster) -> None:
    c.create_topic("t", partitions=1, replication_factor=3)
    tx = c.producer({"transactional.id": "a", "client.id": "tx"})
    tx.init_transactions()
    for k in range(3):
        tx.begin_transaction()
        tx.produce("t", value=b"v%d" % k)
        tx.commit_transaction()


def test_acting_while_scrubbed_forks_and_leaves_the_old_run_alone() -> None:
    run = LiveRun.start(seed=9, brokers=3)
    workload_small(run.cluster)
    before = run.cluster.world.fingerprint()
    dash = Dashboard(run, pacer=False)
    dash.scrub = run.recorder.last_index - 40
    note = dash.act("crash", "broker-2")
    assert note.startswith("forked at event ") and "broker-2 crashed" in note
    assert dash.run is not run and dash.forks == 1 and dash.status["live"]
    assert run.cluster.world.fingerprint() == before  # the old run is untouched
    assert dash.run.cluster.brokers[2].status.value == "down"
    assert run.cluster.brokers[2].status.value == "up"


def test_a_refused_action_is_a_note_not_an_exception() -> None:
    run = LiveRun.start(seed=1, brokers=3)
    dash = Dashboard(run, pacer=False)
    dash._on_action(dash, {"op": "restart", "node": "broker-1"}, [])  # it is up: cannot restart
    assert dash.status["note"].startswith("IllegalNodeTransitionError"), dash.status
    dash._on_action(dash, {"op": "explode", "node": "broker-1"}, [])
    assert "unknown action 'explode'" in dash.status["note"]
    with pytest.raises(ValueError, match="unknown action"):
        dash.act("explode")
    assert run.cluster.brokers[1].status.value == "up"


def test_the_pacer_publishes_at_most_ten_times_a_second() -> None:
    run = LiveRun.start(seed=2, brokers=3)
    run.cluster.create_topic("t", partitions=1, replication_factor=3)
    dash = Dashboard(run, pacer=True, rate=100)
    calls: list[float] = []
    original = dash.publish

    def counted(**kwargs: Any) -> bool:
        calls.append(time.monotonic())
        return original(**kwargs)

    dash.publish = counted  # type: ignore[method-assign]
    dash.playing = True
    time.sleep(1.05)
    dash.close()
    assert 3 <= len(calls) <= MAX_HZ + 1, len(calls)
    # The rate, over the whole span: a pacer that ticked faster than MAX_HZ fails here, whatever the load.
    assert (calls[-1] - calls[0]) / (len(calls) - 1) >= 0.9 / MAX_HZ, calls
    # No catch-up burst after a late tick (gaps near 0). One gap may be short of a period by the
    # difference between two ticks' own run times, which a loaded machine stretches: not a burst.
    gaps = [b - a for a, b in itertools.pairwise(calls)]
    assert min(gaps) >= 0.25 / MAX_HZ, gaps
    assert run.cluster.now_ms > 100  # it played: ~10 ms of simulated time per tick at 100 ms/s


def test_the_static_snapshot_carries_every_panel() -> None:
    run = LiveRun.start(seed=9, brokers=3)
    workload_small(run.cluster)
    dash = Dashboard(run, pacer=False)
    data, _meta = dash._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    html = data["text/html"]
    for name in PANELS:
        assert f"eos-p-{name}" in html
    assert "t-0" in html and "orders" not in html
    # what JupyterLab's sanitiser strips from an untrusted output is not there: pictures are images
    for stripped in ("<svg", "<style", "<button", "<script"):
        assert stripped not in html, stripped
    pictures = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    charts = [base64.b64decode(p).decode() for p in pictures]
    assert any("COMMIT" in c for c in charts)  # the sequence chart of the last transaction
    assert all(c.startswith("<svg") and "currentColor" not in c for c in charts)
    assert f"event {dash.status['last']} of {dash.status['last']}" in html


def test_a_fenced_epoch_is_grey_in_the_log() -> None:
    run = LiveRun.start(seed=11, brokers=3)
    workload(run.cluster)
    board = run.recorder.latest()
    zombies = panels.fenced_epochs(board)
    tx = board.producer("tx")
    assert (tx.producer_id, tx.epoch) in zombies
    assert (board.producer("tx2").producer_id, board.producer("tx2").epoch) not in zombies
    assert panels.batch_colour(tx.producer_id, tx.epoch, {}, zombies) == panels._FENCED_GREY
    assert "zombie: a newer epoch exists" in panels.producers_panel(board)
    assert "fenced epoch (zombie)" in panels.logs_panel(board)


def test_the_reads_panel_follows_the_chosen_partition() -> None:
    run = LiveRun.start(seed=11, brokers=3)
    workload(run.cluster)
    dash = Dashboard(run, pacer=False)
    assert dash.partition_names == ["orders-0", "orders-1"]
    assert 'data-tp="orders-0"' in dash.reads
    dash.reads_tp = "orders-1"
    assert 'data-tp="orders-1"' in dash.reads
    assert dash.reads == panels.reads_panel(run.recorder.latest(), "orders", 1)


def test_the_displayed_picture_follows_the_run_to_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Displayed, the dashboard is the widget and its picture; the picture is updated as the run moves on.

    What a saved notebook keeps is the picture last sent under its display id: it must be the end
    of the run, not the moment the cell showing the dashboard ran (issue 42).
    """
    import IPython.display

    shown: list[tuple[dict[str, Any], str | None]] = []
    monkeypatch.setattr(IPython.display, "display", lambda data, **kw: shown.append((data, kw.get("display_id"))))
    monkeypatch.setattr(IPython.display, "update_display", lambda data, **kw: shown.append((data, kw["display_id"])))
    run = LiveRun.start(seed=9, brokers=3)
    dash = Dashboard(run, pacer=False)
    dash._ipython_display_()
    (widget, no_id), (first, name) = shown
    assert "application/vnd.jupyter.widget-view+json" in widget and "text/html" not in widget and no_id is None
    assert name == dash.picture and f"eos-picture-{name}" in first["text/html"]
    assert "no topics yet" in first["text/html"]

    workload_small(run.cluster)
    dash.publish()  # what the pacer does; a cell's end does it too (update_picture, forced)
    dash.update_picture()
    last = run.recorder.last_index
    html, updated = shown[-1][0]["text/html"], shown[-1][1]
    assert updated == name and f"event {last} of {last}" in html
    assert "<svg" not in html and "data:image/svg+xml;base64," in html  # the log strip, as an image
    count = len(shown)
    dash.update_picture()  # nothing changed: nothing sent
    assert len(shown) == count
