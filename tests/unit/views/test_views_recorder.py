"""The recorder is exact: ``Recorder.at(i)`` is the board the live cluster showed after event ``i``.

Goal: time travel must never show a board that did not exist. For every trace index at which the
engine's state was whole (after each scheduler event, after each application call), the board
the recorder rebuilds from its row changes must equal the board read from the live engine then.

Method: a *probe* observer reads the whole board (``board_state(cluster)``) after every scheduler
event (``after_step``) and, as a journal listener, after every application call
(``on_call_end``), keyed by ``trace.count - 1`` (a later read at the same index replaces an
earlier one, as in the recorder). Every board the probe kept must equal ``recorder.at(index)``.
The runs: (a) a hand-made session through :meth:`Journal.new_cluster` (transactions committed and
aborted, an idempotent producer, a read_committed consumer group, a broker crash and restart with
a leader change, a dropped ProduceResponse, a zombie producer fenced by a new instance, calls that
raise); (b) catalog scenarios with faults, through ``run_spec(..., observers=...)``: the
recorder and the probe watch from the first event, and a ``Journal.attach``-ed journal tells both
of the calls the workloads' processes make; the fingerprint must equal a plain ``run_spec``'s. Smaller
tests pin ``at()``'s clamping, ``attach`` later, ``latest()``, a log tail cut by an unclean
election and by a power loss, internal topics, and :class:`Series`.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest

from engine import Cluster
from engine.journal import Journal
from engine.scenarios.catalog import BY_NAME
from engine.scenarios.harness import run_spec
from engine.scenarios.result import ScenarioResult
from engine.sim.faults import FaultEntry, FaultPlan
from engine.views.board import BoardState, LogTail, board_state
from engine.views.recorder import Recorder, Series


class Probe:
    """Read the whole live board after every handler that emitted an event and every application call.

    The recorder's definition of "the board after event i" (engine/views/recorder.py), written the
    simplest way: a full read of the live cluster after each handler that emitted at least one
    event (but not inside a waiting call before the call's first event), and after every call;
    the last read at an index wins.
    """

    def __init__(self) -> None:
        self.cluster: Cluster | None = None
        self.boards: dict[int, BoardState] = {}
        #: The last index of every scheduler event, and the index before every call (for the handler test).
        self.step_ends: list[int] = []
        self.call_starts: list[int] = []
        self._call_start = -1

    # observer hooks
    def on_cluster(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.snap()

    def after_step(self, world: Any, callback: Any) -> None:
        index = world.trace.count - 1
        emitted = not self.step_ends or index != self.step_ends[-1]
        self.step_ends.append(index)
        if emitted and index >= self._call_start:
            self.snap()

    # journal listener hooks
    def on_call_start(self, entry: Any) -> None:
        """No board: the board before a call is the board after the previous one."""
        self.call_starts.append(entry.start_index - 1)
        self._call_start = entry.start_index

    def on_call_end(self, entry: Any) -> None:
        self._call_start = -1
        self.snap()

    def snap(self) -> None:
        assert self.cluster is not None
        self.boards[self.cluster.world.trace.count - 1] = board_state(self.cluster)


FIELDS = [f.name for f in dataclasses.fields(BoardState) if f.compare]


def same_logs(a: tuple[LogTail, ...], b: tuple[LogTail, ...]) -> bool:
    """``a == b``, faster: tails holding the very same batch objects are equal without summarising."""
    return len(a) == len(b) and all(
        (x.topic, x.partition) == (y.topic, y.partition) and (x.batches == y.batches or x == y)
        for x, y in zip(a, b, strict=True)
    )


def mismatches(recorder: Recorder, probe: Probe) -> list[str]:
    """Return each index where the recorder's board differs from the live one, with the fields that differ."""
    out = []
    for index, live in sorted(probe.boards.items()):
        got = recorder.at(index)
        fields = [
            f
            for f in FIELDS
            if not (same_logs(got.logs, live.logs) if f == "logs" else getattr(got, f) == getattr(live, f))
        ]
        if fields:
            out.append(f"{index}: {', '.join(fields)}")
    return out


# -- (a) the hand-made session -----------------------------------------------------------------------


def recorded_session(hand_session: Any, seed: int = 5) -> tuple[Cluster, Journal, Recorder, Probe]:
    recorder, probe = Recorder(), Probe()
    # The recorder is the first listener, so it has read a call's changes before the probe compares.
    cluster, journal = hand_session(seed, (recorder, probe), (recorder, probe))
    return cluster, journal, recorder, probe


@pytest.fixture(scope="module")
def session(hand_session: Any) -> tuple[Cluster, Journal, Recorder, Probe]:
    return recorded_session(hand_session)


def test_the_hand_session_does_what_it_says(session) -> None:
    cluster, journal, _, _ = session
    names = [e.name for e in cluster.world.trace.events]
    for name in ("txn.commit", "txn.abort", "crash", "restart", "pause", "rule.add", "election.clean", "produce.retry"):
        assert name in names, name
    (crash,) = cluster.world.trace.select(name="crash")
    crashed = int(crash.node.removeprefix("broker-"))
    elections = cluster.world.trace.select(name="election.clean")
    assert any(e.index > crash.index and e.get("tp") == "orders-0" and e.get("leader") != crashed for e in elections)
    assert [e.error for e in journal.entries if e.error] == [
        "TopicExistsException",
        "TypeError",
        "InvalidProducerEpochException",
    ]


def test_the_recorder_equals_the_live_board_after_every_handler_and_call_of_the_hand_session(session) -> None:
    _, journal, recorder, probe = session
    assert len(probe.boards) > 500
    assert probe.boards.keys() >= {e.end_index - 1 for e in journal.entries}
    assert mismatches(recorder, probe) == []


def test_the_recorder_changes_nothing_in_the_run(hand_session: Any, session) -> None:
    cluster, _, _, _ = session
    plain, _ = hand_session(5)
    assert plain.world.trace.short_log() == cluster.world.trace.short_log()
    assert plain.fingerprint() == cluster.fingerprint()


def test_latest_is_the_live_board_at_the_end(session) -> None:
    cluster, _, recorder, _ = session
    assert recorder.last_index == cluster.world.trace.count - 1
    assert recorder.latest() == board_state(cluster)


# -- (b) catalog scenarios with faults ---------------------------------------------------------------


def observed_catalog_run(name: str, seed: int) -> tuple[ScenarioResult, Recorder, Probe]:
    """Run a catalog scenario with a recorder and a probe watching it from its first event.

    The workloads' processes call the clients between events, as an application does, so a journal
    attached to the scenario's cluster tells both of every call.
    """
    recorder, probe = Recorder(), Probe()

    class CallsToo:
        def on_cluster(self, cluster: Cluster) -> None:
            Journal.attach(cluster).listeners.extend((recorder, probe))

    result = run_spec(BY_NAME[name], seed, observers=(recorder, probe, CallsToo()))
    return result, recorder, probe


@pytest.mark.parametrize(
    ("name", "seed", "faults"),
    [
        ("transactions: producer crash mid transaction", 1, {"crash"}),
        ("replication: unclean election", 2, {"partition", "crash", "restart"}),
        ("transactions: timeout", 1, {"pause", "resume"}),
    ],
)
def test_the_recorder_equals_the_live_board_through_a_catalog_scenario(name: str, seed: int, faults: set[str]) -> None:
    run, recorder, probe = observed_catalog_run(name, seed)
    assert run.fingerprint == run_spec(BY_NAME[name], seed).fingerprint  # watching changed nothing
    assert faults <= {e.name for e in run.cluster.world.trace.events if e.kind == "fault"}
    assert len(probe.boards) > 1_000
    assert mismatches(recorder, probe) == []


# -- at(), attach, detach --------------------------------------------------------------------------


def test_at_clamps_to_what_the_recorder_holds(session) -> None:
    _, _, recorder, probe = session
    assert recorder.first_index == min(probe.boards)  # bound by Cluster() before the startup
    assert recorder.at(-100) == recorder.at(0) == recorder.at(recorder.first_index)
    assert recorder.at(10**9) == recorder.latest()
    assert recorder.at(10**9).event_index == recorder.last_index


@pytest.mark.parametrize("index", ["3", 2.0, True, None])
def test_at_takes_an_int(session, index: Any) -> None:
    _, _, recorder, _ = session
    with pytest.raises(TypeError, match="at\\(\\) takes a trace event index"):
        recorder.at(index)


def test_a_recorder_bound_to_nothing_says_how_to_bind_it() -> None:
    with pytest.raises(ValueError, match=r"Recorder\.attach"):
        Recorder().at(0)


def test_a_recorder_binds_to_one_cluster_only(session) -> None:
    cluster, _, recorder, _ = session
    with pytest.raises(ValueError, match="already records a cluster"):
        recorder.on_cluster(cluster)


def test_attach_later_records_from_that_index_on(broker_config: dict[str, Any]) -> None:
    cluster, journal = Journal.new_cluster(seed=3, brokers=3, config=broker_config)
    cluster.create_topic("orders", partitions=2, replication_factor=3)
    producer = cluster.producer({"linger.ms": 0})
    producer.produce("orders", value=b"before")
    producer.flush()
    start = cluster.world.trace.count - 1
    at_attach = board_state(cluster)
    recorder = Recorder.attach(cluster)
    probe = Probe()
    cluster.world.attach(probe)
    probe.on_cluster(cluster)
    journal.listeners += [recorder, probe]
    assert recorder.first_index == start
    assert recorder.at(0) == recorder.at(start) == at_attach  # earlier indexes clamp to the first board
    cluster.crash(2)
    for k in range(5):
        producer.produce("orders", value=f"after-{k}".encode())
    producer.flush()
    cluster.run_for(3_000)
    assert mismatches(recorder, probe) == []
    recorder.detach()
    assert recorder not in cluster.world.trace.observers
    # detach() leaves the journal's listeners alone: a recorder still listening would go on
    # reading the rows a call marks (clients, brokers, txns) but not the partitions.
    journal.listeners.remove(recorder)
    last = recorder.last_index
    cluster.run_for(500)
    assert recorder.last_index == last  # detached: nothing more recorded, what was kept stays readable
    assert recorder.latest() == probe.boards[last]


def test_sync_reads_what_a_call_outside_the_journal_changed() -> None:
    recorder = Recorder()
    cluster = Cluster(seed=1, brokers=1, observers=[recorder])  # no journal: nobody tells the recorder of calls
    cluster.create_topic("t", replication_factor=1)
    producer = cluster.producer({"linger.ms": 1_000})
    cluster.run_for(50)
    producer.produce("t", value=b"queued")  # no event, no handler: the recorder cannot know
    assert recorder.latest() != board_state(cluster)
    recorder.sync()
    assert recorder.latest() == board_state(cluster)
    assert recorder.latest().producer("producer-1").partitions[0].queued == 1


def test_rows_lists_one_rows_changes(session) -> None:
    _, _, recorder, _ = session
    txn = recorder.rows("txn", "app")
    assert [i for i, _ in txn] == sorted({i for i, _ in txn})
    states = {row.state for _, row in txn if row is not None}  # None: no coordinator held the id then
    assert states >= {"ONGOING", "PREPARE_COMMIT", "COMPLETE_COMMIT", "COMPLETE_ABORT"}
    assert recorder.changes() >= len(txn)
    with pytest.raises(ValueError, match="rows\\(\\) takes one of"):
        recorder.rows("topic", "orders")
    with pytest.raises(KeyError, match="no txn row"):
        recorder.rows("txn", "nobody")


# -- the log tail and internal topics ---------------------------------------------------------------


def test_the_log_tail_follows_an_unclean_election_that_cuts_the_leaders_tail(broker_config: dict[str, Any]) -> None:
    config = {**broker_config, "min.insync.replicas": 1, "unclean.leader.election.enable": True}
    recorder, probe = Recorder(), Probe()
    cluster, journal = Journal.new_cluster(seed=2, brokers=3, config=config, observers=[recorder, probe])
    journal.listeners += [recorder, probe]
    cluster.create_topic("u", partitions=1, replication_factor=3, assignments=[(1, 2, 3)])
    producer = cluster.producer({"acks": 1, "linger.ms": 0, "enable.idempotence": False})
    for i in range(3):
        producer.produce("u", value=f"replicated-{i}".encode())
        producer.flush()
    cluster.partition([1], [2, 3])  # broker-1 keeps leading alone: the ISR shrinks to it
    for i in range(8):
        producer.produce("u", value=f"alone-{i}".encode())
        producer.flush()
        cluster.run_for(300)
    before = cluster.world.trace.count - 1
    cluster.crash(1)
    cluster.schedule_faults(FaultPlan((FaultEntry.of(cluster.now_ms + 1, "heal"),)))  # heal links only
    cluster.run_for(4_000)
    after = cluster.world.trace.count - 1
    cluster.restart(1)
    cluster.run_for(3_000)
    (unclean,) = cluster.world.trace.select(name="election.unclean")
    (truncate,) = cluster.world.trace.select(name="replica.truncate")
    assert before < unclean.index < after < truncate.index
    old_tail, new_tail = recorder.at(before).log("u"), recorder.at(after).log("u")
    assert [b.base_offset for b in old_tail.summaries()] == list(range(11))
    assert [b.base_offset for b in new_tail.summaries()] == list(range(3))
    # The controller's handler that elected broker-2 emitted several events; its board is at its last.
    handler_end = min(i for i in probe.boards if i >= unclean.index)
    handler_before = max(i for i in probe.step_ends if i < unclean.index)
    assert recorder.at(handler_before).log("u") == old_tail
    assert recorder.at(unclean.index).log("u") == recorder.at(handler_end).log("u") == new_tail
    assert mismatches(recorder, probe) == []


def test_the_log_tail_follows_a_power_loss_of_the_leader(broker_config: dict[str, Any]) -> None:
    config = {**broker_config, "log.flush.interval.ms": 600_000}
    recorder, probe = Recorder(), Probe()
    cluster, journal = Journal.new_cluster(seed=4, brokers=3, config=config, observers=[recorder, probe])
    journal.listeners += [recorder, probe]
    cluster.create_topic("p", partitions=1, replication_factor=3, assignments=[(1, 2, 3)])
    producer = cluster.producer({"linger.ms": 0})
    for i in range(6):
        producer.produce("p", value=f"v{i}".encode())
    producer.flush()
    before = recorder.at(cluster.world.trace.count - 1).log("p")
    cluster.crash(1, lose_unflushed_tail=True)
    (crash,) = cluster.world.trace.select(name="crash")
    assert crash.get("lost")  # the tail was lost
    assert len(recorder.at(crash.index).log("p").batches) < len(before.batches)
    cluster.run_for(4_000)
    cluster.restart(1)
    cluster.run_for(2_000)
    assert mismatches(recorder, probe) == []


def test_internal_topics_have_no_partition_rows(session) -> None:
    cluster, _, recorder, _ = session
    board = recorder.latest()
    assert {row.topic for row in board.partitions} == {"orders"}
    assert {tail.topic for tail in board.logs} == {"orders"}
    assert any(b.txn_partitions for b in board.brokers)  # the coordinators show on the broker rows
    assert any(b.group_partitions for b in board.brokers)
    assert board.txn("app").coordinator in cluster.brokers
    for topic in ("__transaction_state", "__consumer_offsets"):
        with pytest.raises(KeyError, match="no partition row"):
            recorder.rows("partition", (topic, 0))


# -- Series ----------------------------------------------------------------------------------------


def test_series_keeps_changes_only() -> None:
    s = Series()
    assert s.at(5)[1] == -1  # nothing before the first value
    s.set(3, "a")
    s.set(4, "a")  # no change: no entry
    s.set(7, "b")
    assert (s.indexes, s.values, len(s)) == ([3, 7], ["a", "b"], 2)
    assert s.at(2)[1] == -1
    assert s.at(3) == ("a", 3)
    assert s.at(6) == ("a", 3)
    assert s.at(100) == ("b", 7)


def test_series_replaces_a_value_read_again_at_the_same_index() -> None:
    s = Series()
    s.set(1, "a")
    s.set(2, "b")
    s.set(2, "c")  # a later read at the same index wins
    assert (s.indexes, s.values) == ([1, 2], ["a", "c"])
    s.set(2, "a")  # back to the previous value: the change at 2 collapses away
    assert (s.indexes, s.values) == ([1], ["a"])
    assert s.at(2) == ("a", 1)
    s.set(2, "d")  # index 2 is past the last change again: a new entry
    assert (s.indexes, s.values) == ([1, 2], ["a", "d"])


# -- known gaps -------------------------------------------------------------------------------------


def test_events_emitted_by_one_handler_share_one_board(session) -> None:
    _, _, recorder, probe = session
    calls = set(probe.call_starts)
    handlers = [
        (previous + 1, end)
        for previous, end in itertools.pairwise(probe.step_ends)
        # Events previous+1 .. end came from the one handler that ran last (no call emitted any of them).
        if end - previous > 1 and not any(previous <= c < end for c in calls)
    ]
    assert len(handlers) > 100
    # Same board: every row and log tail; only the index the board was asked for differs.
    split = [
        first for first, end in handlers if dataclasses.replace(recorder.at(first), event_index=end) != recorder.at(end)
    ]
    assert split == []


def test_a_client_changed_by_a_callback_during_another_clients_call_is_recorded(broker_config: dict[str, Any]) -> None:
    recorder, probe = Recorder(), Probe()
    cluster, journal = Journal.new_cluster(seed=1, brokers=3, config=broker_config, observers=[recorder, probe])
    journal.listeners += [recorder, probe]
    cluster.create_topic("in", partitions=1, replication_factor=3)
    cluster.create_topic("out", partitions=1, replication_factor=3)
    producer = cluster.producer({"linger.ms": 200})

    def greet(consumer: Any, partitions: Any) -> None:
        producer.produce("out", value=b"assigned")

    consumer = cluster.consumer({"group.id": "g", "auto.offset.reset": "earliest"})
    consumer.subscribe(["in"], on_assign=greet)
    for _ in range(5):
        consumer.poll(0.3)
    assert mismatches(recorder, probe) == []
