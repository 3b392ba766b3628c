"""``%eos_dashboard`` through a real IPython shell: it shows the current cluster, refuses bad input in one
line, follows forks (the notebook's names and the client history move to the forked run) and stops its
pacer when the cluster or the extension goes away.

Method: the ``ip`` fixture's ``TestingShell`` with ``eos_magics`` loaded; the dashboard's pacer thread runs
for real; actions are sent as the front-end sends them (``Dashboard.act``) on the kernel's thread.
"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from eos_magics._testing import run
from widgets.dashboard import Dashboard


def setup_session(ip) -> None:
    for line in (
        "%eos_cluster create --brokers 3 --seed 7",
        "%eos_topic create orders --partitions 1",
        "%eos_producer p1 -t orders-app",
    ):
        run(ip, line)
    run(ip, "%%eos_txn p1\n%eos_produce p1 orders a b")


def test_the_dashboard_shows_the_current_cluster(ip) -> None:
    setup_session(ip)
    dash = run(ip, "%eos_dashboard --rate 500")
    try:
        assert isinstance(dash, Dashboard) and dash.rate == 500 and not dash.playing
        assert dash.run.cluster is ip.user_ns["cluster"]
        assert 'data-txn="orders-app"' in dash.txns and "p1" in dash.producers
        assert dash.status["title"] == "cluster" and dash.status["live"]
    finally:
        dash.close()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%eos_dashboard --name nope", "no cluster 'nope'"),
        ("%eos_dashboard --rate 0", "--rate must be at least 1"),
        ("%eos_dashboard --rate fast", "argument --rate: invalid int value"),
        ("%eos_dashboard extra", "unrecognized arguments: extra"),
    ],
)
def test_bad_input_is_one_line(ip, line: str, message: str) -> None:
    setup_session(ip)
    with pytest.raises(UsageError, match=message):
        run(ip, line)
    assert run(ip, "%eos_consumer c --assign orders:0") is not None  # the session goes on


def test_no_cluster_yet_is_one_line(ip) -> None:
    with pytest.raises(UsageError, match="no cluster yet"):
        run(ip, "%eos_dashboard")


def test_a_fork_from_the_dashboard_rebinds_the_names_and_the_history(ip) -> None:
    setup_session(ip)
    old_cluster, old_p1 = ip.user_ns["cluster"], ip.user_ns["p1"]
    old_fingerprint = old_cluster.world.fingerprint()
    dash = run(ip, "dash = %eos_dashboard\ndash")
    try:
        old_recorder = dash.run.recorder
        dash.scrub = dash.run.recorder.last_index - 30
        note = dash.act("pause-node", "broker-3")
        assert note.startswith("forked at event "), note
        new_cluster = ip.user_ns["cluster"]
        assert new_cluster is dash.run.cluster and new_cluster is not old_cluster
        assert ip.user_ns["p1"] is not old_p1 and ip.user_ns["p1"] is new_cluster.world.node("p1")
        assert new_cluster.brokers[3].status.value == "paused"
        assert old_cluster.world.fingerprint() == old_fingerprint  # the old run is untouched
        stop = int(note.split()[3].rstrip(";"))  # "forked at event N; broker-3 paused"
        assert old_recorder.at(stop).partitions == dash.run.recorder.at(stop).partitions
        # the session goes on in the fork: magics, then the judge on the replayed history
        run(ip, "%eos_fault resume broker-3")
        # the fork stopped before the commit call the scrubbed event was in: the transaction is open
        assert ip.user_ns["p1"].txn.state.name == "IN_TRANSACTION"
        run(ip, "%eos_txn commit p1")
        run(ip, "%%eos_txn p1\n%eos_produce p1 orders c")
        report = run(ip, "%eos_check")
        assert report.ok, report
    finally:
        dash.close()


def test_session_fork_by_hand_and_replay(ip) -> None:
    setup_session(ip)
    from eos_magics import _LOADED

    s = next(iter(_LOADED.values())).session
    entry = s.entry()
    live = entry.cluster.world.fingerprint()
    assert entry.run.replay().cluster.world.fingerprint() == live
    stop = s.fork(10)
    assert stop >= 0 and ip.user_ns["cluster"] is entry.cluster
    with pytest.raises(UsageError, match="event index must be at least 0"):
        s.fork(-1)


def test_deleting_the_cluster_or_unloading_stops_the_pacer(ip) -> None:
    setup_session(ip)
    dash = run(ip, "%eos_dashboard")
    assert dash.pacer.is_alive()
    run(ip, "%eos_cluster delete")
    assert not dash.pacer.is_alive()
    setup_session(ip)
    dash2 = run(ip, "%eos_dashboard")
    run(ip, "%unload_ext eos_magics")
    assert not dash2.pacer.is_alive()
