"""Tests of ClientHistory: the client history of a session driven by hand, judged by the checker.

Goal: what a notebook user does with a real Cluster (sends, transactions, consumers, seeks,
groups, faults) is recorded in the documented format with the outcomes the scenario workloads
would record (ok / fail / info), the checker can both pass and fail such a session, and the
recorder changes nothing in the run. Method: short scripts against the real engine, no mocks;
each test asserts concrete records (types, offsets, keys, errors) and the checker's verdict.
"""

from __future__ import annotations

import pytest

from engine import Cluster
from engine.check import ClientHistory, History, Poll, Send, check_history, load_jsonl
from engine.check.client_history import NULL_VALUE, record_value
from engine.client.message import TopicPartition
from engine.errors import RecordTooLargeException, TimeoutException


def cluster(seed: int = 1, partitions: int = 1) -> Cluster:
    c = Cluster(seed=seed)
    c.create_topic("orders", partitions=partitions)
    return c


def completions(rec: ClientHistory, f: str) -> list:
    return [op for op in rec.history() if op.f == f and op.type != "invoke"]


def reports(box: list):
    return lambda err, msg: box.append((err, msg.partition(), msg.offset(), msg.value()))


def read_all(c: Cluster, isolation: str = "read_committed", group: str | None = None):
    config = {"isolation.level": isolation, "auto.offset.reset": "earliest"}
    if group is not None:
        config["group.id"] = group
    consumer = c.consumer(config)
    consumer.assign([("orders", p) for p in range(c.topics["orders"])])
    got = consumer.consume(100, timeout=3)
    return consumer, got


def test_idempotent_sends_are_ok_with_the_offsets_of_their_delivery_reports():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer()
    box: list = []
    for i in range(3):
        p.produce("orders", value=f"o-{i}".encode(), partition=0, on_delivery=reports(box))
    assert p.flush() == 0
    read_all(c)
    sends = completions(rec, "send")
    assert [op.type for op in sends] == ["ok", "ok", "ok"]
    assert [op.mops for op in sends] == [(Send("orders", 0, f"o-{i}", off),) for i, (_, _, off, _) in enumerate(box)]
    assert [off for _, _, off, _ in box] == [0, 1, 2]
    # each in-flight send is its own process; the producer and the consumer took the first ids
    assert len({op.process for op in sends}) == 3
    assert rec.process_of(p) == 0
    polls = completions(rec, "poll")
    assert polls[-1].mops == tuple(Poll("orders", 0, i, f"o-{i}") for i in range(3))
    report = rec.check()
    assert report.ok, report


def test_partition_chosen_by_the_partitioner_is_recorded():
    c = cluster(partitions=3)
    rec = ClientHistory.attach(c)
    p = c.producer()
    box: list = []
    p.produce("orders", value=b"k", on_delivery=reports(box))  # no partition: the producer picks one
    p.flush()
    [(err, partition, offset, _)] = box
    assert err is None
    [invoke, ok] = rec.history()
    assert invoke.mops == (Send("orders", partition, "k"),)
    assert ok.mops == (Send("orders", partition, "k", offset),)


def test_a_committed_and_an_aborted_transaction_are_ok_and_fail_with_their_offsets():
    c = cluster()
    rec = ClientHistory.attach(c)
    t = c.producer({"transactional.id": "app"})
    t.init_transactions()
    box: list = []
    t.begin_transaction()
    t.produce("orders", value=b"c-1", partition=0, on_delivery=reports(box))
    t.produce("orders", value=b"c-2", partition=0, on_delivery=reports(box))
    t.commit_transaction()
    t.begin_transaction()
    t.produce("orders", value=b"a-1", partition=0, on_delivery=reports(box))
    t.flush()
    t.abort_transaction()
    offsets = {v.decode(): off for _, _, off, v in box}
    txns = completions(rec, "txn")
    assert [(op.type, op.error) for op in txns] == [("ok", None), ("fail", "aborted")]
    assert txns[0].mops == (Send("orders", 0, "c-1", offsets["c-1"]), Send("orders", 0, "c-2", offsets["c-2"]))
    assert txns[1].mops == (Send("orders", 0, "a-1", offsets["a-1"]),)
    assert {op.process for op in txns} == {rec.process_of(t)}
    invocations = [op for op in rec.history() if op.f == "txn" and op.type == "invoke"]
    assert [op.mops for op in invocations] == [
        (Send("orders", 0, "c-1"), Send("orders", 0, "c-2")),
        (Send("orders", 0, "a-1"),),
    ]
    _, got = read_all(c)
    assert [m.value() for m in got] == [b"c-1", b"c-2"]
    report = rec.check()
    assert report.ok, report


@pytest.mark.parametrize(("isolation", "verdict"), [("read_uncommitted", ["G1a"]), ("read_committed", [])])
def test_reading_an_aborted_transaction_is_g1a_only_for_read_uncommitted(isolation, verdict):
    c = cluster()
    rec = ClientHistory.attach(c)
    t = c.producer({"transactional.id": "app"})
    t.init_transactions()
    t.begin_transaction()
    t.produce("orders", value=b"kept", partition=0)
    t.commit_transaction()
    t.begin_transaction()
    t.produce("orders", value=b"dropped", partition=0)
    t.flush()
    t.abort_transaction()
    _, got = read_all(c, isolation)
    assert (b"dropped" in [m.value() for m in got]) == (isolation == "read_uncommitted")
    report = rec.check()
    assert [a.kind for a in report.forbidden] == verdict
    if verdict:
        [g1a] = report.forbidden
        assert g1a.values == ("dropped",)


def test_a_value_the_application_sends_twice_to_one_partition_is_a_duplicate():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer()
    p.produce("orders", value=b"same", partition=0)
    p.flush()
    p.produce("orders", value=b"same", partition=0)  # an application-level retry: the broker cannot see it
    p.flush()
    read_all(c)
    assert [op.mops[0].offset for op in completions(rec, "send")] == [0, 1]
    report = rec.check()
    assert [(a.kind, a.key) for a in report.forbidden] == [("duplicate", ("orders", 0))]
    assert rec.check("at-least-once").ok


def test_a_send_whose_answers_are_all_lost_is_info():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer({"request.timeout.ms": 200, "delivery.timeout.ms": 1_000, "retry.backoff.ms": 50})
    p.flush(1)  # metadata and producer id first
    c.add_rule("drop", kind="response", body_type="ProduceResponse", count=None)
    box: list = []
    p.produce("orders", value=b"lost-answer", partition=0, on_delivery=reports(box))
    p.flush()
    [(err, *_)] = box
    assert err is not None
    [done] = completions(rec, "send")
    assert (done.type, done.error) == ("info", type(err).__name__)
    assert done.mops == (Send("orders", 0, "lost-answer", None),)
    assert rec.check().ok  # an unknown outcome is neither a loss nor a read


def test_a_record_too_large_is_a_fail():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer({"max.request.size": 100})
    box: list = []
    p.produce("orders", value=b"x" * 200, partition=0, on_delivery=reports(box))
    p.flush()
    [(err, *_)] = box
    assert isinstance(err, RecordTooLargeException)
    [done] = completions(rec, "send")
    assert (done.type, done.error) == ("fail", "RecordTooLargeException")
    assert done.mops == (Send("orders", 0, "x" * 200, None),)


def test_produce_batch_records_one_send_per_value_and_purged_records_fail():
    c = cluster()
    rec = ClientHistory.attach(c)
    lingering = c.producer({"linger.ms": 5_000})
    lingering.flush(1)
    lingering.produce("orders", value=b"queued", partition=0)
    lingering.purge(in_flight=False)
    lingering.flush()
    p = c.producer()
    p.produce_batch("orders", [b"b0", b"b1", b"b2"], partition=0)
    p.flush()
    sends = completions(rec, "send")
    assert [(op.type, op.error) for op in sends] == [("fail", "PurgedException")] + [("ok", None)] * 3
    assert [op.mops for op in sends[1:]] == [(Send("orders", 0, f"b{i}", i),) for i in range(3)]
    assert len({op.process for op in sends}) == 4


def test_a_commit_that_times_out_stays_open_until_the_retried_commit_returns():
    c = cluster()
    rec = ClientHistory.attach(c)
    t = c.producer({"transactional.id": "app"})
    t.init_transactions()
    t.begin_transaction()
    t.produce("orders", value=b"slow", partition=0)
    rule = c.add_rule("hold", body_type="EndTxnRequest", count=None)
    with pytest.raises(TimeoutException):
        t.commit_transaction(timeout=0.5)
    assert [op.type for op in rec.history() if op.f == "txn"] == ["invoke"]
    c.remove_rule(rule)
    c.release()
    t.commit_transaction()
    [done] = completions(rec, "txn")
    assert (done.type, done.mops) == ("ok", (Send("orders", 0, "slow", 0),))


def test_a_failed_send_in_a_transaction_fails_the_transaction_once_it_is_aborted():
    c = cluster()
    rec = ClientHistory.attach(c)
    t = c.producer({"transactional.id": "app", "max.request.size": 100})
    t.init_transactions()
    t.begin_transaction()
    t.produce("orders", value=b"good", partition=0)
    t.produce("orders", value=b"y" * 200, partition=0)
    with pytest.raises(RecordTooLargeException):
        t.commit_transaction()
    # the producer can only abort now: the op stays open until it does
    assert [op.type for op in rec.history() if op.f == "txn"] == ["invoke"]
    t.abort_transaction()
    [done] = completions(rec, "txn")
    assert (done.type, done.error) == ("fail", "aborted")
    assert [m.value for m in done.mops] == ["good", "y" * 200]


def test_operations_in_flight_stay_invocations_and_the_history_still_builds():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer()
    t = c.producer({"transactional.id": "app"})
    t.init_transactions()
    p.produce("orders", value=b"pending", partition=0)
    t.begin_transaction()
    t.produce("orders", value=b"in-txn", partition=0)
    history = rec.history()
    assert isinstance(history, History)
    assert [(op.f, op.type) for op in history] == [("send", "invoke"), ("txn", "invoke")]
    assert history[1].mops == (Send("orders", 0, "in-txn"),)
    assert len(rec) == 2 and rec.ops == 2
    completed = list(history.completions())
    assert [(op.f, op.type, op.error) for op in completed] == [
        ("send", "info", "never completed"),
        ("txn", "info", "never completed"),
    ]
    assert rec.check().ok
    t.commit_transaction()
    p.flush()
    assert sorted((op.f, op.type) for op in completions(rec, "send") + completions(rec, "txn")) == [
        ("send", "ok"),
        ("txn", "ok"),
    ]


def test_a_seek_backwards_is_no_nonmonotonic_poll():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer()
    for i in range(4):
        p.produce("orders", value=f"v{i}", partition=0)
    p.flush()
    consumer, got = read_all(c)
    assert [m.offset() for m in got] == [0, 1, 2, 3]
    consumer.seek(TopicPartition("orders", 0, 1))
    again = consumer.consume(100, timeout=2)
    assert [m.offset() for m in again] == [1, 2, 3]
    history = rec.history()
    seek_ops = [op for op in history if op.f == "assign" and op.type == "ok"][-2:]
    assert [op.keys for op in seek_ops] == [(), (("orders", 0),)]
    report = rec.check()
    assert report.ok, report
    # without the two ops the seek recorded, the checker would call the rewind a nonmonotonic poll
    seek_indexes = {op.index for op in seek_ops} | {op.index - 1 for op in seek_ops}
    stripped = History(op for op in history if op.index not in seek_indexes)
    assert [a.kind for a in check_history(stripped).forbidden] == ["nonmonotonic-poll"]


def test_subscribe_records_the_group_assignment_and_splits_the_poll_it_arrived_in():
    c = cluster(partitions=2)
    rec = ClientHistory.attach(c)
    p = c.producer()
    p.produce("orders", value=b"s-0", partition=0)
    p.produce("orders", value=b"s-1", partition=1)
    p.flush()
    consumer = c.consumer({"group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    got = []
    for _ in range(5):
        got += consumer.consume(10, timeout=1)
    assert sorted(m.value() for m in got) == [b"s-0", b"s-1"]
    mine = [op for op in rec.history() if op.process == rec.process_of(consumer)]
    subscribes = [op for op in mine if op.f == "subscribe" and op.type == "ok"]
    assert [op.keys for op in subscribes] == [(), (("orders", 0), ("orders", 1))]
    # the group's assignment came while the first poll waited: that poll ended empty before it
    first_poll = next(i for i, op in enumerate(mine) if op.f == "poll")
    assert [(op.f, op.type, op.mops) for op in mine[first_poll : first_poll + 4]] == [
        ("poll", "invoke", ()),
        ("poll", "ok", ()),
        ("subscribe", "invoke", ()),
        ("subscribe", "ok", ()),
    ]
    report = rec.check()
    assert report.ok, report


def test_a_crashed_consumer_records_a_crash():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer()
    p.produce("orders", value=b"v", partition=0)
    p.flush()
    consumer, got = read_all(c)
    c.crash(consumer.name)
    c.restart(consumer.name)
    again = consumer.consume(10, timeout=3)
    assert [m.offset() for m in got] == [m.offset() for m in again] == [0]
    history = rec.history()
    crash = [op for op in history if op.f == "crash" and op.type != "invoke"]
    assert [(op.process, op.type, op.error) for op in crash] == [(rec.process_of(consumer), "info", "client crashed")]
    assert rec.check().ok  # re-reading after the crash is not a nonmonotonic poll
    without_crash = History(op for op in history if op.f != "crash")
    assert [a.kind for a in check_history(without_crash).forbidden] == ["nonmonotonic-poll"]


def test_a_crashed_producer_leaves_its_unanswered_sends_info():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer()
    p.flush(1)
    p.produce("orders", value=b"maybe", partition=0)
    c.crash(p.name)
    [done] = completions(rec, "send")
    assert (done.type, done.error, done.mops) == ("info", "client crashed", (Send("orders", 0, "maybe"),))


def script(c: Cluster) -> None:
    c.create_topic("orders", partitions=2)
    p = c.producer()
    for i in range(5):
        p.produce("orders", value=f"o-{i}")
    p.flush()
    t = c.producer({"transactional.id": "app"})
    t.init_transactions()
    t.begin_transaction()
    t.produce("orders", value=b"t-1", partition=1)
    t.commit_transaction()
    consumer = c.consumer({"group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    for _ in range(3):
        consumer.consume(10, timeout=1)
    consumer.seek(TopicPartition("orders", 0, 0))
    consumer.consume(10, timeout=1)


def test_the_recorder_changes_nothing_in_the_run():
    bare = Cluster(seed=5)
    script(bare)
    watched = Cluster(seed=5)
    rec = ClientHistory.attach(watched)
    script(watched)
    assert rec.ops > 10
    assert watched.fingerprint() == bare.fingerprint()
    assert list(watched.world.trace.events) == list(bare.world.trace.events)


def test_write_jsonl_round_trips_and_checks_the_same(tmp_path):
    c = Cluster(seed=3)
    rec = ClientHistory.attach(c)
    script(c)
    c.producer().produce("orders", value=b"\xff\xfe", partition=0)  # in flight, not UTF-8
    path = tmp_path / "session.jsonl"
    rec.write_jsonl(path)
    loaded = load_jsonl(path)
    assert loaded == rec.history()
    assert check_history(loaded) == rec.check()
    assert loaded[-1].mops == (Send("orders", 0, repr(b"\xff\xfe")),)


def test_existing_clients_are_recorded_in_creation_order_and_attach_is_once_per_cluster():
    c = cluster()
    consumer = c.consumer()
    producer = c.producer()
    rec = ClientHistory.attach(c)
    assert ClientHistory.attach(c) is rec
    with pytest.raises(ValueError, match="already has a ClientHistory"):
        ClientHistory(c)
    assert (rec.process_of(consumer), rec.process_of(producer)) == (0, 1)
    later = c.consumer()
    assert rec.process_of(later) == 2
    with pytest.raises(ValueError, match="not recorded"):
        rec.process_of(Cluster(seed=2).consumer())


def test_values_are_recorded_as_text():
    assert record_value(b"caf\xc3\xa9") == "café"
    assert record_value(bytearray(b"ab")) == "ab"
    assert record_value("plain") == "plain"
    assert record_value(None) == NULL_VALUE
    assert record_value(b"\x80") == repr(b"\x80")
    assert record_value("\ud800") == repr("\ud800")


def test_a_fault_in_the_recorder_never_reaches_the_application():
    c = cluster()
    rec = ClientHistory.attach(c)
    p = c.producer()
    rec._open = None  # break the bookkeeping on purpose
    box: list = []
    p.produce("orders", value=b"still-sent", partition=0, on_delivery=reports(box))
    assert p.flush() == 0
    assert box == [(None, 0, 0, b"still-sent")]
    assert rec.faults and rec.faults[0].startswith("on_produce: AttributeError")
    assert isinstance(rec.history(), History)
