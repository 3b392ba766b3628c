"""The dashboard's consumer groups panel: live, scrubbable, sent only when it changed.

Method: a real ``LiveRun`` and ``Dashboard`` (no browser). Two engine consumers of one group on a
4-partition topic: the board's group row before and after the second joins differ (generation,
members, assignment), scrubbing back shows the earlier row, and the group's row is not sent again
when nothing about the group changed.
"""

from __future__ import annotations

from typing import Any

from widgets import panels
from widgets.dashboard import Dashboard
from widgets.live import LiveRun

SESSION = {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000}


def _consumer(run: LiveRun, name: str):
    c = run.cluster.consumer({"group.id": "g", "client.id": name, **SESSION})
    c.subscribe(["t"])
    return c


def test_the_groups_panel_follows_a_rebalance_and_scrubs_back() -> None:
    run = LiveRun.start(seed=4, brokers=3)
    cluster = run.cluster
    cluster.create_topic("t", partitions=4, replication_factor=3)
    dash = Dashboard(run, pacer=False)
    assert "no consumer groups yet" in dash.groups
    a = _consumer(run, "a")
    cluster.run_until(lambda: len(a.assignment()) == 4, max_ms=30_000)
    run.recorder.sync()
    one = run.recorder.last_index
    before = run.recorder.at(one).group("g")
    assert (before.protocol, before.state, len(before.members)) == ("classic", "Stable", 1)
    assert before.members[0].assignment == tuple(("t", p) for p in range(4))
    b = _consumer(run, "b")
    cluster.run_until(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2, max_ms=30_000)
    run.recorder.sync()
    after = run.recorder.latest().group("g")
    assert after.generation > before.generation and len(after.members) == 2
    assert sorted(len(m.assignment) for m in after.members) == [2, 2]
    dash.publish()
    assert "generation " + str(after.generation) in dash.groups and "classic" in dash.groups
    # scrubbed back: the group as it was with one member
    dash.scrub = one
    assert dash.groups == panels.groups_panel(run.recorder.at(one))
    assert f"generation {before.generation}" in dash.groups and "t:0,1,2,3" in dash.groups
    # during the rebalance the board shows the group rebalancing at some step between
    states = {s.state for _, s in run.recorder.rows("group", "g") if s is not None}
    assert {"PreparingRebalance", "CompletingRebalance"} & states
    dash.act("live")
    sent: list[dict[str, Any]] = []
    dash.send = lambda content, buffers=None: sent.append(content)  # what the page gets: the frame's diffs
    p = cluster.producer({"client.id": "p"})
    p.produce("t", value=b"v", partition=0)
    p.flush()
    dash.publish()
    changed = {k for m in sent for k in m["set"]}
    assert "p:t-0" in changed
    # nothing more happened: nothing is sent, the group's row neither
    sent.clear()
    dash.publish()
    assert sent == []


def test_the_groups_panel_shows_member_epochs_of_a_kip848_group() -> None:
    from engine.views.board import BoardState
    from engine.views.board_groups import GroupMember, GroupRow

    row = GroupRow("cg", 2, "consumer", "Reconciling", 3, 2, (GroupMember("m1", "a", 2, (("t", 0), ("t", 1))),), 7)
    board = BoardState(0, 0, "up", (), (), (), (), (), (), groups=(row,))
    html = panels.groups_panel(board)
    assert "epoch 3" in html and "target 2" in html and "e2" in html and "t:0,1" in html and ">7<" in html
