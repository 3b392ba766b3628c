"""The message sequence chart of one transaction (``engine.views.sequence_chart``).

Goal: the chart picks the right transaction of a transactional id and holds exactly the messages
of the transaction protocol between the right lanes, in trace order: InitProducerId with the
first transaction, Produce and the leaders' AddPartitionsToTxn verification, AddOffsetsToTxn and
TxnOffsetCommit, EndTxn and the WriteTxnMarkers to every leader with their replies, and nothing
else (no fetch, heartbeat or replication); dropped messages show their drop and the retry; state
notes sit on the right lanes; bad arguments get a clear error.
Method: small real clusters on fixed seeds run real transactions (with a fault rule where
needed); the tests read ``cluster.world.trace`` through :func:`transaction_chart` and compare
the arrows with lanes found independently (``Cluster.leader`` and the trace's own events). One
test feeds hand-made trace events to check the response pairing rules.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster, TopicPartition
from engine.sim.trace import TraceEvent
from engine.views.sequence_chart import SequenceChart, transaction_chart

TXN = "tx-1"


def _cluster(config: dict[str, Any] | None = None) -> Cluster:
    c = Cluster(seed=7, brokers=3, config=config)
    c.create_topic("out", partitions=2, replication_factor=3)
    c.create_topic("in", partitions=1, replication_factor=3)
    return c


def _transaction(c: Cluster, p: Any, *, commit: bool = True, offsets: bool = True) -> None:
    """One transaction over out-0 and out-1 (flushed one at a time, so leaders verify in turn), then 1 s."""
    p.begin_transaction()
    for partition in (0, 1):
        p.produce("out", value=b"v", partition=partition)
        p.flush()
    if offsets:
        p.send_offsets_to_transaction([TopicPartition("in", 0, 5)], "g")
    if commit:
        p.commit_transaction()
    else:
        p.abort_transaction()
    c.run_for(1000)


def _run(transactions: int = 2, *, offsets: bool = True) -> Cluster:
    c = _cluster()
    p = c.producer({"transactional.id": TXN})
    p.init_transactions()
    for _ in range(transactions):
        _transaction(c, p, offsets=offsets)
    return c


def _first_node(c: Cluster, name: str) -> str:
    return next(e.node for e in c.world.trace if e.name == name)


def _arrows(chart: SequenceChart) -> list[tuple[str, str, str]]:
    return [(a.msg, a.src, a.dst) for a in chart.arrows]


def test_a_committed_transaction_with_offsets_shows_the_protocol_in_order_on_the_right_lanes() -> None:
    c = _run()
    chart = transaction_chart(c.world.trace, TXN)  # the last one: no FindCoordinator or InitProducerId
    producer, coordinator = "producer-1", _first_node(c, "txn_state.write")
    group = _first_node(c, "txn_offset_commit.pending")
    leader0, leader1 = f"broker-{c.leader('out', 0)}", f"broker-{c.leader('out', 1)}"
    assert (chart.occurrence, chart.count, chart.producer, chart.outcome) == (1, 2, producer, "COMMIT")
    assert [lane.node for lane in chart.lanes][:3] == [producer, coordinator, group]
    assert {lane.node for lane in chart.lanes} == {producer, coordinator, group, leader0, leader1}
    assert "transaction coordinator" in chart.lanes[1].roles
    assert chart.lanes[2].roles[0] == "group coordinator g"
    assert _arrows(chart)[:14] == [
        ("ProduceRequest", producer, leader0),
        ("AddPartitionsToTxnRequest", leader0, coordinator),
        ("AddPartitionsToTxnResponse", coordinator, leader0),
        ("ProduceResponse", leader0, producer),
        ("ProduceRequest", producer, leader1),
        ("AddPartitionsToTxnRequest", leader1, coordinator),
        ("AddPartitionsToTxnResponse", coordinator, leader1),
        ("ProduceResponse", leader1, producer),
        ("AddOffsetsToTxnRequest", producer, coordinator),
        ("AddOffsetsToTxnResponse", coordinator, producer),
        ("TxnOffsetCommitRequest", producer, group),
        ("TxnOffsetCommitResponse", group, producer),
        ("EndTxnRequest", producer, coordinator),
        ("EndTxnResponse", coordinator, producer),
    ]
    # Then one COMMIT marker to each leader (the group's __consumer_offsets partition included),
    # sent together, and one reply from each, answering the marker sent to that node.
    markers, replies = chart.arrows[14:17], chart.arrows[17:]
    assert {(a.msg, a.src) for a in markers} == {("WriteTxnMarkersRequest", coordinator)}
    assert sorted(a.label for a in markers) == [
        f"WriteTxnMarkers COMMIT __consumer_offsets-{_partition(chart, group)}",
        "WriteTxnMarkers COMMIT out-0",
        "WriteTxnMarkers COMMIT out-1",
    ]
    assert sorted(a.dst for a in markers) == sorted([group, leader0, leader1])
    assert [(a.msg, a.dst) for a in replies] == [("WriteTxnMarkersResponse", coordinator)] * 3
    by_index = {a.send_index: a for a in chart.arrows}
    assert all(by_index[r.reply_to].dst == r.src for r in replies if r.reply_to is not None)
    assert all(a.deliver_ms is not None and a.drop_reason is None for a in chart.arrows)
    assert [a.label for a in chart.arrows[:4]] == [
        "Produce out-0 seq 0..0",
        "AddPartitionsToTxn verify out-0",
        "AddPartitionsToTxn reply",
        "Produce ok out-0 offset 2",
    ]


def _partition(chart: SequenceChart, node: str) -> str:
    lane = chart.lanes[chart.lane_index(node)]
    return next(p for p in lane.partitions if p.startswith("__consumer_offsets-")).rsplit("-", 1)[1]


def test_the_chart_leaves_out_fetches_heartbeats_metadata_and_replication() -> None:
    chart = transaction_chart(_run().world.trace, TXN, 0)
    apis = {a.api for a in chart.arrows}
    assert apis == {
        "FindCoordinator",
        "InitProducerId",
        "Produce",
        "AddPartitionsToTxn",
        "AddOffsetsToTxn",
        "TxnOffsetCommit",
        "EndTxn",
        "WriteTxnMarkers",
    }
    assert [a.send_index for a in chart.arrows] == sorted(a.send_index for a in chart.arrows)
    lanes = {lane.node for lane in chart.lanes}
    assert all(a.src in lanes and a.dst in lanes for a in chart.arrows)
    assert all(n.node in lanes for n in chart.notes)


def test_state_notes_show_the_coordinator_states_markers_and_the_producer_calls() -> None:
    c = _run()
    chart = transaction_chart(c.world.trace, TXN)
    coordinator, group = _first_node(c, "txn_state.write"), _first_node(c, "txn_offset_commit.pending")
    on = {lane.node: [n.text for n in chart.notes if n.node == lane.node] for lane in chart.lanes}
    assert on["producer-1"] == ["begin (epoch 1)", "commit (epoch 2)"]
    assert on[coordinator][-2:] == ["CompleteCommit", "complete: CompleteCommit"]
    states = [t for t in on[coordinator] if not t.startswith("complete")]
    assert states == ["Ongoing"] * (len(states) - 2) + ["PrepareCommit", "CompleteCommit"]
    assert "offsets pending in-0@5" in on[group]
    assert "offsets COMMIT" in on[group]
    markers = sorted(n.text.split("@")[0] for n in chart.notes if n.name == "marker.append")
    assert markers == sorted(["COMMIT out-0", "COMMIT out-1", f"COMMIT __consumer_offsets-{_partition(chart, group)}"])


def test_the_first_transaction_owns_init_transactions_and_the_coordinator_lookup() -> None:
    c = _run()
    first, second = transaction_chart(c.world.trace, TXN, 0), transaction_chart(c.world.trace, TXN, 1)
    begin = next(n.index for n in first.notes if n.name == "txn.begin")
    before = [(a.api, a.kind) for a in first.arrows if a.send_index < begin]
    assert {api for api, _ in before} == {"FindCoordinator", "InitProducerId"}
    assert before[-2:] == [("InitProducerId", "request"), ("InitProducerId", "response")]
    assert first.notes[0].text == "Empty" and first.notes[0].name == "txn_state.write"
    assert [n.text for n in first.notes if n.node == "producer-1"][:2] == ["init pid 3000 epoch 0", "begin (epoch 0)"]
    assert not [a for a in second.arrows if a.api in ("FindCoordinator", "InitProducerId")]
    assert second.producer_id == first.producer_id == 3000


def test_occurrence_counts_from_zero_and_negative_from_the_end() -> None:
    c = _run(transactions=3, offsets=False)
    charts = [transaction_chart(c.world.trace, TXN, i) for i in range(3)]
    assert [ch.occurrence for ch in charts] == [0, 1, 2]
    assert transaction_chart(c.world.trace, TXN) == charts[2]
    assert transaction_chart(c.world.trace, TXN, -3) == charts[0]
    begins = [next(n.text for n in ch.notes if n.name == "txn.begin") for ch in charts]
    assert begins == ["begin (epoch 0)", "begin (epoch 1)", "begin (epoch 2)"]
    sent = [{a.msg_id for a in ch.arrows} for ch in charts]
    assert not (sent[0] & sent[1]) and not (sent[1] & sent[2])  # every message belongs to one transaction
    assert charts[0].last_index < charts[1].first_index <= charts[1].last_index < charts[2].first_index


def test_an_aborted_transaction_ends_with_abort_markers() -> None:
    c = _cluster()
    p = c.producer({"transactional.id": TXN})
    p.init_transactions()
    _transaction(c, p, commit=False, offsets=False)
    chart = transaction_chart(c.world.trace, TXN)
    assert chart.outcome == "ABORT"
    assert [a.label for a in chart.arrows if a.api == "EndTxn" and a.kind == "request"] == ["EndTxn ABORT"]
    markers = sorted(a.label for a in chart.arrows if a.msg == "WriteTxnMarkersRequest")
    assert markers == ["WriteTxnMarkers ABORT out-0", "WriteTxnMarkers ABORT out-1"]
    texts = [n.text for n in chart.notes]
    assert "PrepareAbort" in texts and "CompleteAbort" in texts and "complete: CompleteAbort" in texts
    assert sorted(t.split("@")[0] for t in texts if t.startswith("ABORT ")) == ["ABORT out-0", "ABORT out-1"]
    assert [n.text for n in chart.notes if n.node == "producer-1"][-1] == "abort (epoch 1)"


def test_a_fenced_zombies_chart_keeps_the_coordinators_abort_markers_after_its_late_end_txn() -> None:
    """A newer instance fences the zombie: the coordinator writes PrepareAbort and sends the markers
    before the zombie's own EndTxn arrives (answered PRODUCER_FENCED); the chart shows both."""
    c = _cluster()
    zombie = c.producer({"transactional.id": TXN, "client.id": "zombie"})
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.produce("out", value=b"z", partition=0)
    zombie.flush()
    c.producer({"transactional.id": TXN, "client.id": "fresh"}).init_transactions()
    with pytest.raises(Exception, match="fence"):
        zombie.commit_transaction()
    c.run_for(1000)
    chart = transaction_chart(c.world.trace, TXN, 0)
    assert any(a.api == "EndTxn" and a.kind == "request" for a in chart.arrows), "the zombie's late EndTxn"
    assert [a.label for a in chart.arrows if a.msg == "WriteTxnMarkersRequest"] == ["WriteTxnMarkers ABORT out-0"]
    assert "PrepareAbort" in [n.text for n in chart.notes] and "CompleteAbort" in [n.text for n in chart.notes]


def test_a_dropped_marker_reply_shows_the_drop_and_the_retry() -> None:
    c = _cluster()
    p = c.producer({"transactional.id": TXN})
    p.init_transactions()
    p.begin_transaction()
    for partition in (0, 1):
        p.produce("out", value=b"v", partition=partition)
    p.flush()
    rule = c.add_rule("drop", body_type="WriteTxnMarkersResponse", count=1)
    p.commit_transaction()
    c.run_for(40_000)  # the coordinator resends after its request timeout
    chart = transaction_chart(c.world.trace, TXN)
    dropped = [a for a in chart.arrows if a.dropped]
    assert len(dropped) == 1
    lost = dropped[0]
    assert (lost.msg, lost.drop_reason, lost.deliver_ms) == ("WriteTxnMarkersResponse", f"rule {rule}", None)
    assert lost.end_ms is not None and lost.end_index is not None
    answered = next(a for a in chart.arrows if a.send_index == lost.reply_to)
    retries = [
        a
        for a in chart.arrows
        if a.msg == "WriteTxnMarkersRequest" and a.dst == answered.dst and a.send_index > lost.send_index
    ]
    assert [a.label for a in retries] == [answered.label]
    retry_reply = next(a for a in chart.arrows if a.reply_to == retries[0].send_index)
    assert retry_reply.deliver_ms is not None
    complete = next(n for n in chart.notes if n.name == "txn.complete")
    assert complete.index > retry_reply.end_index  # type: ignore[operator]
    assert "dropped" in lost.short() and f"rule {rule}" in lost.short()


def test_markers_still_in_flight_when_the_trace_ends_have_no_delivery() -> None:
    c = _cluster()
    p = c.producer({"transactional.id": TXN})
    p.init_transactions()
    p.begin_transaction()
    p.produce("out", value=b"a", partition=0)
    p.produce("out", value=b"b", partition=1)
    p.commit_transaction()  # returns on the EndTxn answer: the markers are on their way
    chart = transaction_chart(c.world.trace, TXN)
    markers = [a for a in chart.arrows if a.api == "WriteTxnMarkers"]
    assert [a.kind for a in markers] == ["request", "request"]
    assert all(a.end_index is None and a.deliver_ms is None and a.drop_reason is None for a in markers)
    assert "in flight" in markers[0].short()


def test_transaction_version_1_has_the_producer_add_its_partitions() -> None:
    c = _cluster(config={"transaction.version": 1})
    p = c.producer({"transactional.id": TXN})
    p.init_transactions()
    _transaction(c, p, offsets=False)
    chart = transaction_chart(c.world.trace, TXN)
    adds = [a for a in chart.arrows if a.msg == "AddPartitionsToTxnRequest"]
    assert {a.src for a in adds} == {"producer-1"}
    assert sorted(a.label for a in adds) == ["AddPartitionsToTxn out-0", "AddPartitionsToTxn out-1"]


def test_the_chart_is_a_pure_function_of_the_events() -> None:
    c = _run(transactions=1)
    events = list(c.world.trace)
    assert transaction_chart(events, TXN) == transaction_chart(c.world.trace, TXN)
    assert transaction_chart(iter(events), TXN).text() == transaction_chart(events, TXN).text()


def test_an_unknown_transactional_id_names_the_ids_present() -> None:
    c = _run(transactions=1)
    with pytest.raises(ValueError, match=r"no transaction of transactional id 'nope'.*present: 'tx-1'"):
        transaction_chart(c.world.trace, "nope")
    with pytest.raises(ValueError, match="present: none"):
        transaction_chart(_cluster().world.trace, TXN)
    p = c.producer({"transactional.id": "idle"})
    p.init_transactions()
    with pytest.raises(ValueError, match="'idle' ran init_transactions"):
        transaction_chart(c.world.trace, "idle")


def test_an_occurrence_out_of_range_says_how_many_there_are() -> None:
    c = _run(transactions=2, offsets=False)
    for bad in (2, -3, 10):
        with pytest.raises(ValueError, match=r"has 2 transaction\(s\).*-2\.\.1.*got " + str(bad)):
            transaction_chart(c.world.trace, TXN, bad)
    with pytest.raises(TypeError, match="occurrence must be an int"):
        transaction_chart(c.world.trace, TXN, True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="transactional_id must be a str"):
        transaction_chart(c.world.trace, 1)  # type: ignore[arg-type]


# -- response pairing on hand-made events -------------------------------------------------------


def _events(*rows: tuple[str, str, str, tuple[tuple[str, object], ...]]) -> list[TraceEvent]:
    return [TraceEvent(i, i, node, kind, name, detail) for i, (node, kind, name, detail) in enumerate(rows)]


def _send(node: str, name: str, to: str, msg_id: int, msg: str, *extra: tuple[str, object]) -> tuple:
    return (node, "send", name, (("to", to), ("id", msg_id), ("msg", msg), *extra))


def _deliver(node: str, name: str, src: str, msg_id: int, msg: str) -> tuple:
    return (node, "deliver", name, (("from", src), ("id", msg_id), ("msg", msg)))


def test_replies_pair_in_order_per_connection_by_partition_and_exactly_when_the_event_says() -> None:
    begin = ("p", "state", "txn.begin", (("txn_id", TXN), ("epoch", 0)))
    produce = [_send("p", "request", "b", i, "ProduceRequest", ("tp", f"t-{i}"), ("pid", 1)) for i in (1, 2)]
    delivered = [_deliver("b", "request", "p", i, "ProduceRequest") for i in (1, 2)]
    # b answers t-2 first: the partition in the reply pairs it with request 2, not the older 1.
    replies = [_send("b", "response", "p", 3, "ProduceResponse", ("tp", "t-2"), ("error", "NONE"))]
    replies.append(_send("b", "response", "p", 4, "ProduceResponse", ("tp", "t-1"), ("error", "NONE")))
    end = [_send("p", "request", "c", 5, "EndTxnRequest", ("pid", 1), ("result", "COMMIT"))]
    end += [_deliver("c", "request", "p", 5, "EndTxnRequest"), _deliver("c", "request", "p", 5, "EndTxnRequest")]
    end += [_send("c", "response", "p", 6, "EndTxnResponse", ("re", 5))]  # exact, despite the duplicate
    done = ("p", "state", "txn.commit", (("txn_id", TXN), ("epoch", 0)))
    chart = transaction_chart(_events(begin, *produce, *delivered, *replies, *end, done), TXN)
    pairs = {a.msg_id: a.reply_to for a in chart.arrows if a.kind == "response"}
    index = {a.msg_id: a.send_index for a in chart.arrows}
    assert pairs == {3: index[2], 4: index[1], 6: index[5]}
    assert [lane.node for lane in chart.lanes] == ["p", "c", "b"]
