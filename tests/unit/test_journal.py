"""The journal: application calls recorded with their trace indexes, replayed event for event, forked.

Goal: a session driven by hand is rebuilt exactly from its journal (same fingerprint, same short
log, the same calls failing with the same errors); a fork stops where its docstring says (the
end of the handler that emitted the event, or just before a client call that waits) with the
board the recorder shows there; a fork is a new run that leaves the original alone; a replay
that does not match what was recorded says so (``ReplayDiverged``); the guard and listeners see
every outermost call and nothing else.

Method: the hand-made session of tests/unit/views/test_views_recorder.py (repeated here: shared
helpers may only live in a conftest.py) runs once with a :class:`~engine.views.recorder.Recorder`
and an observer noting where each handler and call ended; replays and forks are compared with
it. Small sessions on one broker pin each rule (errors, nested calls, names, the guard, calls
the journal does not see, tampered entries).
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster
from engine.client.producer import Producer
from engine.errors import KafkaError, TopicExistsException
from engine.journal import Entry, Journal, ReplayDiverged
from engine.views.board import board_state
from engine.views.recorder import Recorder

# -- the hand-made session (as in test_views_recorder.py) ----------------------------------------


class Ends:
    """Note the trace index at which every scheduler event and every application call ended."""

    def __init__(self) -> None:
        self.cluster: Cluster | None = None
        self.handlers: list[int] = []
        self.calls: list[int] = []

    def on_cluster(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def after_step(self, world: Any, callback: Any) -> None:
        self.handlers.append(world.trace.count - 1)

    def on_call_start(self, entry: Entry) -> None:
        """Nothing to note."""

    def on_call_end(self, entry: Entry) -> None:
        self.calls.append(entry.end_index - 1)


@pytest.fixture(scope="module")
def session(hand_session: Any) -> tuple[Cluster, Journal, Recorder, Ends]:
    recorder, ends = Recorder(), Ends()
    cluster, journal = hand_session(5, (recorder, ends), (recorder, ends))
    return cluster, journal, recorder, ends


WAITS = frozenset({"run_for", "run_until", "step"})


def entry_at(journal: Journal, index: int) -> Entry | None:
    """Return the recorded call that emitted event ``index`` (None: the startup, before any call)."""
    for e in journal.entries:
        if e.start_index <= index < e.end_index:
            return e
    return None


def is_time_call(entry: Entry | None) -> bool:
    return entry is not None and entry.target == "cluster" and entry.method in WAITS


# -- replay ---------------------------------------------------------------------------------------


def test_replay_rebuilds_the_hand_session_event_for_event(session) -> None:
    cluster, journal, _, _ = session
    replayed, again = journal.replay()
    assert replayed is not cluster
    assert replayed.world.trace.short_log() == cluster.world.trace.short_log()
    assert replayed.fingerprint() == cluster.fingerprint()
    # The replay was journaled in turn, call for call, with the same outcomes.
    recorded = [(e.target, e.method, e.start_index, e.end_index, e.end_ms, e.error) for e in journal.entries]
    assert [(e.target, e.method, e.start_index, e.end_index, e.end_ms, e.error) for e in again.entries] == recorded


def test_entries_keep_the_names_of_the_errors_calls_raised(session) -> None:
    _, journal, _, _ = session
    failed = [(e.target, e.method, e.error) for e in journal.entries if e.error]
    assert failed == [
        ("cluster", "create_topic", "TopicExistsException"),
        ("producer-2", "produce_batch", "TypeError"),
        ("producer-1", "commit_transaction", "InvalidProducerEpochException"),  # the fenced zombie
    ]
    lines = journal.lines()
    assert len(lines) == len(journal)
    assert lines[1].startswith("cluster.create_topic('orders') @ event ")
    assert lines[1].endswith(" -> TopicExistsException")
    assert all(e.start_index <= e.end_index and e.start_ms <= e.end_ms for e in journal.entries)


def test_replay_takes_observers_from_the_first_event_and_runs_setup_before_the_first_call(session) -> None:
    cluster, journal, _, _ = session
    seen: list[tuple[int, int]] = []
    ends = Ends()
    replayed, _ = journal.replay(observers=[ends], setup=lambda c: seen.append((c.world.trace.count, len(c.producers))))
    assert ends.cluster is replayed
    assert len(seen) == 1
    assert seen[0][0] == journal.entries[0].start_index and seen[0][1] == 0
    assert ends.handlers[-1] == cluster.world.trace.count - 1


def test_run_until_with_a_predicate_naming_the_old_run_replays_without_calling_it() -> None:
    cluster, journal = Journal.new_cluster(seed=2, brokers=1)
    cluster.create_topic("t", replication_factor=1)
    producer = cluster.producer({"linger.ms": 5})
    for i in range(3):
        producer.produce("t", value=f"v{i}".encode())
    calls: list[int] = []

    def written() -> bool:  # names the old cluster and the old producer
        calls.append(1)
        return cluster.describe_partition("t").high_watermark >= 3 and len(producer) == 0

    cluster.run_until(written)
    producer.poll(0)
    asked = len(calls)
    replayed, _ = journal.replay()
    assert len(calls) == asked  # the replay ran "until the trace held as many events", not the predicate
    assert replayed.fingerprint() == cluster.fingerprint()
    assert replayed.describe_partition("t").high_watermark == 3


# -- fork -----------------------------------------------------------------------------------------


def test_fork_stops_where_its_docstring_says(session) -> None:
    cluster, journal, _, ends = session
    handler_ends = sorted(set(ends.handlers))
    checked = {"time": 0, "wait": 0}
    for index in range(0, cluster.world.trace.count, 50):
        _, _, stop = journal.fork(index)
        entry = entry_at(journal, index)
        if is_time_call(entry):
            # Inside run_for / run_until / step: the end of the handler that emitted the event.
            assert stop == min(i for i in handler_ends if i >= index), index
            checked["time"] += 1
        elif entry is not None:
            # Inside a client call that waits (flush, commit_transaction, consume ...): just before it.
            assert stop == entry.start_index - 1, (index, entry.describe())
            checked["wait"] += 1
    assert checked["time"] > 5 and checked["wait"] > 5


def test_a_fork_inside_run_for_has_the_board_the_recorder_shows_at_its_stop(session) -> None:
    cluster, journal, recorder, _ = session
    forks = 0
    for index in range(0, cluster.world.trace.count, 50):
        if not is_time_call(entry_at(journal, index)):
            continue
        forked, _, stop = journal.fork(index)
        assert forked.world.trace.count == stop + 1
        assert forked.world.trace.short_log() == cluster.world.trace.short_log(cluster.world.trace.events[: stop + 1])
        assert board_state(forked) == recorder.at(stop), index
        forks += 1
    assert forks > 5


def test_a_fork_at_every_50th_event_has_the_board_the_recorder_shows_at_its_stop(session) -> None:
    cluster, journal, recorder, _ = session
    differ = []
    for index in range(0, cluster.world.trace.count, 50):
        forked, _, stop = journal.fork(index)
        if board_state(forked) != recorder.at(stop):
            differ.append((index, stop))
    assert differ == []


def test_a_fork_keeps_a_call_that_emitted_no_event_after_its_stop() -> None:
    recorder = Recorder()
    cluster, journal = Journal.new_cluster(seed=1, brokers=1, observers=[recorder])
    journal.listeners.append(recorder)
    cluster.create_topic("t", replication_factor=1)
    producer = cluster.producer({"linger.ms": 1_000})
    cluster.run_for(100)
    stop = cluster.world.trace.count - 1
    producer.produce("t", value=b"queued")  # no event: the record waits for linger.ms
    assert cluster.world.trace.count == stop + 1
    assert recorder.at(stop).producer("producer-1").partitions[0].queued == 1
    forked, _, forked_stop = journal.fork(stop)
    assert forked_stop == stop
    assert board_state(forked) == recorder.at(stop)


def test_a_fork_before_a_waiting_call_has_the_board_the_recorder_shows_there() -> None:
    recorder = Recorder()
    config = {"transaction.state.log.num.partitions": 1}
    cluster, journal = Journal.new_cluster(seed=1, brokers=1, config=config, observers=[recorder])
    journal.listeners.append(recorder)
    cluster.create_topic("t", replication_factor=1)
    txn = {"transactional.id": "app", "linger.ms": 0}
    zombie = cluster.producer(txn)
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.produce("t", value=b"zombie")
    cluster.pause("producer-1")
    cluster.producer(txn).init_transactions()  # fences producer-1
    cluster.resume("producer-1")
    start = cluster.world.trace.count
    with pytest.raises(KafkaError):
        zombie.commit_transaction()  # a handler that emits nothing runs before its first event
    forked, _, stop = journal.fork(start)
    assert stop == start - 1
    assert board_state(forked).producer("producer-1").state == "IN_TRANSACTION"
    assert recorder.at(stop).producer("producer-1").state == "IN_TRANSACTION"


def test_acting_after_a_fork_diverges_and_leaves_the_original_alone(session) -> None:
    cluster, journal, _, _ = session
    fingerprint, count, entries = cluster.fingerprint(), cluster.world.trace.count, len(journal)
    index = next(i for i in range(count // 2, count) if is_time_call(entry_at(journal, i)))
    forked, fork_journal, stop = journal.fork(index)
    victim = next(b for b, broker in sorted(forked.brokers.items()) if broker.status.value == "up")
    forked.crash(victim)
    forked.run_for(1_000)
    assert forked.fingerprint() != fingerprint
    assert forked.world.trace.events[stop].short() == cluster.world.trace.events[stop].short()
    assert (cluster.fingerprint(), cluster.world.trace.count, len(journal)) == (fingerprint, count, entries)
    # The fork's own journal holds the catch-up and the new calls: it replays the fork.
    assert [(e.method, e.error) for e in fork_journal.entries[-2:]] == [("crash", None), ("run_for", None)]
    again, _ = fork_journal.replay()
    assert again.fingerprint() == forked.fingerprint()


@pytest.mark.parametrize(("index", "error"), [(-1, ValueError), ("3", TypeError), (True, TypeError)])
def test_fork_takes_an_event_index(session, index: Any, error: type[Exception]) -> None:
    _, journal, _, _ = session
    with pytest.raises(error, match="event_index"):
        journal.fork(index)


# -- divergence -----------------------------------------------------------------------------------


def small_session() -> tuple[Cluster, Journal]:
    cluster, journal = Journal.new_cluster(seed=3, brokers=1)
    cluster.create_topic("t", replication_factor=1)
    producer = cluster.producer({"linger.ms": 2})
    producer.produce("t", value=b"a")
    producer.flush()
    with pytest.raises(TopicExistsException):
        cluster.create_topic("t")
    cluster.run_for(50)
    return cluster, journal


@pytest.mark.parametrize(
    ("field", "change", "says"),
    [
        ("end_index", 1, "recorded end event"),
        ("end_ms", 1, "recorded end event"),
        ("error", "KafkaError", "KafkaError"),
        ("start_index", -3, "the trace already holds"),
    ],
)
def test_a_tampered_entry_makes_the_replay_diverge(field: str, change: Any, says: str) -> None:
    _, journal = small_session()
    flush = next(e for e in journal.entries if e.method == "flush")
    if field == "error":
        flush.error = change
    else:
        setattr(flush, field, getattr(flush, field) + change)
    with pytest.raises(ReplayDiverged, match=r"producer-1\.flush") as diverged:
        journal.replay()
    assert says in str(diverged.value)


def test_an_untouched_small_session_replays() -> None:
    cluster, journal = small_session()
    replayed, _ = journal.replay()
    assert replayed.fingerprint() == cluster.fingerprint()


# -- what is recorded -----------------------------------------------------------------------------


def test_a_client_is_journaled_under_its_node_name() -> None:
    cluster, journal = Journal.new_cluster(seed=1, brokers=1)
    cluster.create_topic("t", replication_factor=1)
    named = cluster.producer({"client.id": "orders-app", "linger.ms": 0})
    unnamed = cluster.producer({"linger.ms": 0})
    reader = cluster.consumer({"auto.offset.reset": "earliest"})
    named.produce("t", value=b"n")
    unnamed.produce("t", value=b"u")
    named.flush()
    unnamed.flush()
    reader.assign([("t", 0)])
    reader.consume(5, timeout=1.0)
    targets = [(e.target, e.method) for e in journal.entries if e.target != "cluster"]
    assert targets == [
        ("orders-app", "produce"),
        ("producer-1", "produce"),
        ("orders-app", "flush"),
        ("producer-1", "flush"),
        ("consumer-1", "assign"),
        ("consumer-1", "consume"),
    ]
    replayed, _ = journal.replay()  # the names resolve to the new cluster's nodes
    assert replayed.fingerprint() == cluster.fingerprint()
    assert replayed.world.node("orders-app") is not named


def test_a_nested_call_is_one_entry() -> None:
    cluster, journal = Journal.new_cluster(seed=1, brokers=1)
    cluster.create_topic("t", replication_factor=1)
    producer = cluster.producer({"linger.ms": 0})

    def again(err: Any, msg: Any) -> None:  # a delivery callback producing, run inside flush()
        if msg.value() == b"first":
            producer.produce("t", value=b"second")

    producer.produce("t", value=b"first", on_delivery=again)
    producer.flush()
    assert len(producer) == 1  # the callback did queue "second"
    assert [(e.target, e.method) for e in journal.entries[-2:]] == [("producer-1", "produce"), ("producer-1", "flush")]
    admin = cluster.admin()  # admin() calls transactions(), itself a recorded call
    assert admin.name == "admin-1"
    assert [(e.target, e.method) for e in journal.entries[-1:]] == [("cluster", "admin")]
    assert [e.method for e in journal.entries].count("transactions") == 0


def test_a_transactional_commit_is_one_entry_with_its_flush_inside(session) -> None:
    cluster, journal, _, _ = session
    calls = [e.method for e in journal.entries if e.target == "producer-1"]
    assert "flush" not in calls and "poll" not in calls
    commits = [e for e in journal.entries if e.target == "producer-1" and e.method == "commit_transaction"]
    appends_inside = [
        ev for c in commits for ev in cluster.world.trace.events[c.start_index : c.end_index] if ev.name == "log.append"
    ]
    assert appends_inside  # the commit's own flush sent the batches
    assert len(commits) == 5


def test_a_callback_closing_over_the_recorded_run_is_refused_on_replay_and_the_original_left_alone() -> None:
    # Documented limit (engine/journal.py): a replay cannot rebind what a callback closes over.
    cluster, journal = Journal.new_cluster(seed=1, brokers=1)
    cluster.create_topic("t", replication_factor=1)
    producer = cluster.producer({"linger.ms": 0})

    def again(err: Any, msg: Any) -> None:
        if msg.value() == b"first":
            producer.produce("t", value=b"second")

    producer.produce("t", value=b"first", on_delivery=again)
    producer.flush()
    producer.flush()
    cluster.run_for(10)
    fingerprint, entries, queued = cluster.fingerprint(), len(journal), len(producer)
    diverged = None
    try:
        journal.replay()
    except ReplayDiverged as exc:
        diverged = exc
    # The replay must not touch the original: no new entry, no record queued on the old producer.
    assert (cluster.fingerprint(), len(journal), len(producer)) == (fingerprint, entries, queued)
    assert diverged is not None and "closes over it" in str(diverged), diverged
    assert "producer-1.produce()" in str(diverged)


def test_calls_the_journal_did_not_wrap_are_not_recorded_and_the_run_does_not_replay() -> None:
    # Documented limit (engine/journal.py, "What it does not do"): only the cluster's calls and
    # those of the clients it created are recorded. A client built directly on the world, or a
    # call on cluster.world, changes the run behind the journal's back.
    cluster, journal = Journal.new_cluster(seed=1, brokers=1)
    cluster.create_topic("t", replication_factor=1)
    direct = Producer(cluster.world, cluster.bootstrap(), {"client.id": "direct", "linger.ms": 0})
    direct.produce("t", value=b"unseen")
    direct.flush()
    cluster.world.run_for(50)
    assert [e.target for e in journal.entries] == ["cluster"]
    assert [e.method for e in journal.entries] == ["create_topic"]
    cluster.run_for(10)  # recorded, but it starts at an index the replay cannot reach
    with pytest.raises(ReplayDiverged, match=r"cluster\.run_for"):
        journal.replay()


class CountingGuard:
    """A context manager that counts how often it is entered and left (the notebook sets a lock)."""

    def __init__(self) -> None:
        self.entered = 0
        self.exited = 0
        self.depth = 0
        self.max_depth = 0

    def __enter__(self) -> CountingGuard:
        self.entered += 1
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)
        return self

    def __exit__(self, *exc: object) -> None:
        self.exited += 1
        self.depth -= 1


class Listener:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Entry, int]] = []

    def on_call_start(self, entry: Entry) -> None:
        self.seen.append(("start", entry, entry.end_index))

    def on_call_end(self, entry: Entry) -> None:
        self.seen.append(("end", entry, entry.end_index))


def test_every_outermost_call_runs_in_the_guard_and_is_told_to_the_listeners() -> None:
    cluster, journal = Journal.new_cluster(seed=1, brokers=1)
    guard, listener = CountingGuard(), Listener()
    journal.guard = guard
    journal.listeners.append(listener)
    cluster.create_topic("t", replication_factor=1)
    producer = cluster.producer({"linger.ms": 0})

    def again(err: Any, msg: Any) -> None:  # nested: neither guarded again nor told
        if msg.value() == b"first":
            producer.produce("t", value=b"second")

    producer.produce("t", value=b"first", on_delivery=again)
    producer.flush()
    with pytest.raises(TopicExistsException):
        cluster.create_topic("t")
    cluster.run_for(20)
    assert guard.entered == guard.exited == len(journal) == 6
    assert guard.max_depth == 1
    starts = [(entry, end) for what, entry, end in listener.seen if what == "start"]
    finishes = [(entry, end) for what, entry, end in listener.seen if what == "end"]
    assert [what for what, _, _ in listener.seen] == ["start", "end"] * 6
    assert [entry for entry, _ in starts] == [entry for entry, _ in finishes] == journal.entries
    assert all(end == -1 for _, end in starts)  # not ended yet when the start is told
    assert [end for _, end in finishes] == [e.end_index for e in journal.entries]
    assert finishes[4][0].error == "TopicExistsException"  # a call that raised is told too


def test_reads_are_not_recorded() -> None:
    cluster, journal = Journal.new_cluster(seed=1, brokers=1)
    cluster.create_topic("t", replication_factor=1)
    cluster.describe_partition("t")
    cluster.leader("t")
    cluster.fingerprint()
    board_state(cluster)
    assert [e.method for e in journal.entries] == ["create_topic"]


def test_a_recorder_given_to_replay_records_the_same_boards(session) -> None:
    _, journal, recorder, ends = session
    again = Recorder()
    journal.replay(observers=[again], listeners=[again])
    differ = [i for i in sorted(set(ends.handlers + ends.calls)) if again.at(i) != recorder.at(i)]
    assert differ == []


def test_a_journal_attached_to_a_cluster_built_elsewhere_records_but_refuses_to_replay() -> None:
    cluster = Cluster(seed=1, brokers=1)
    journal = Journal.attach(cluster)
    cluster.create_topic("t", replication_factor=1)
    cluster.producer({}).produce("t", value=b"v")
    assert [(e.target, e.method) for e in journal.entries] == [
        ("cluster", "create_topic"),
        ("cluster", "producer"),
        ("producer-1", "produce"),
    ]
    with pytest.raises(ReplayDiverged, match="cannot replay"):
        journal.replay()


def test_describing_and_listing_transactions_cross_the_network_and_replay() -> None:
    # DescribeTransactions, ListTransactions and DescribeProducers are requests to the node that
    # answers them: they move time, so the journal records them and a replay makes them again.
    cluster, journal = Journal.new_cluster(seed=3, brokers=3)
    cluster.create_topic("t", partitions=1, replication_factor=3)
    p = cluster.producer({"transactional.id": "app"})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"v", partition=0)
    p.commit_transaction()
    admin = cluster.transactions()
    before = cluster.world.trace.count
    admin.describe("app")
    admin.list()
    admin.describe_producers("t")
    assert cluster.world.trace.count > before, "the requests crossed the network"
    methods = [e.method for e in journal.entries]
    assert methods[-3:] == ["describe", "list", "describe_producers"], methods
    replayed, _ = journal.replay()
    assert replayed.fingerprint() == cluster.fingerprint()


def test_an_admin_client_made_after_transactions_is_journaled_too() -> None:
    # The notebook's views ask cluster.transactions().client, made on first use, after the journal
    # adopted the TransactionsAdmin: its requests are recorded as well.
    cluster, journal = Journal.new_cluster(seed=3, brokers=3)
    cluster.create_topic("t", partitions=1, replication_factor=3)
    p = cluster.producer({"transactional.id": "app"})
    p.init_transactions()
    admin = cluster.transactions()
    admin.client.describe_transaction("app")
    admin.client.list_transactions()
    assert [e.method for e in journal.entries][-2:] == ["describe_transaction", "list_transactions"]
    replayed, _ = journal.replay()
    assert replayed.fingerprint() == cluster.fingerprint()
