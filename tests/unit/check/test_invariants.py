"""Tests of the white-box invariants L1 to L14 (``engine/check/invariants``), the ground-truth export and the timeline.

Goal: every invariant stays silent on real, clean runs of the engine (idempotent producer,
transactional producer committing over two partitions and aborting, read_committed consumer)
and fires on a state that has its anomaly, so that a silent checker means something.
Method: no mocks of the engine. Clean runs are small real clusters on fixed seeds. Anomalies
come from (a) real engine features (an open transaction, an unclean leader election that loses
acknowledged records, a partition left without a leader), (b) a bad batch appended straight into
a real replica's ``PartitionLog`` or an entry removed from a real aborted-transaction index, or
(c) a corrupted *copy* of exported ground truth (``dataclasses.replace``) or of timeline samples.
Each test asserts the expected kind is reported; the clean ones assert the list is empty.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from engine import Cluster
from engine.check.ground_truth import GroundTruth, export_ground_truth
from engine.check.invariants import (
    KINDS,
    check_aborted_index,
    check_acked_present,
    check_atomicity,
    check_epochs,
    check_ground_truth,
    check_invariants,
    check_liveness,
    check_markers,
    check_no_hanging,
    check_offsets_monotonic,
    check_producer_state,
    check_read_committed_fetches,
    check_replica_agreement,
    check_sequences,
    check_txn_state,
)
from engine.check.timeline import PartitionTimeline
from engine.log.records import ABORT, COMMIT, RecordBatch

T0 = ("t", 0)
T1 = ("t", 1)


def kinds(anomalies: list[Any]) -> set[str]:
    return {a.kind for a in anomalies}


# -- real runs -----------------------------------------------------------------------------------


def clean_run(seed: int = 11, transaction_version: int = 2) -> tuple[Cluster, PartitionTimeline, dict[Any, set[Any]]]:
    """Commit over t-0 and t-1, abort on t-0, idempotent writes, a read_committed read; quiesce."""
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2, "transaction.version": transaction_version})
    tl = PartitionTimeline.attach(c)
    c.create_topic("t", partitions=2, replication_factor=3)
    acked: dict[Any, set[Any]] = {}

    def report(err: Any, msg: Any) -> None:
        if err is None:
            acked.setdefault((msg.topic(), msg.partition()), set()).add(msg.value())

    p = c.producer({"transactional.id": "tx", "linger.ms": 0})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"c0", partition=0, on_delivery=report)
    p.produce("t", value=b"c1", partition=1, on_delivery=report)
    p.commit_transaction()
    p.begin_transaction()
    p.produce("t", value=b"a0", partition=0)
    p.flush()
    p.abort_transaction()
    p.begin_transaction()
    p.produce("t", value=b"c2", partition=1, on_delivery=report)
    p.commit_transaction()
    q = c.producer({"linger.ms": 0, "acks": "all"})
    for i in range(6):
        q.produce("t", value=f"i{i}".encode(), partition=i % 2, on_delivery=report)
        q.flush()
    consumer = c.consumer({"isolation.level": "read_committed"})
    consumer.assign([T0, T1])
    while consumer.consume(100, timeout=0.5):
        pass
    c.run_for(1_000)
    return c, tl, acked


@pytest.fixture(scope="module")
def clean() -> tuple[Cluster, PartitionTimeline, dict[Any, set[Any]]]:
    return clean_run()


@pytest.fixture(scope="module")
def clean_gt(clean: Any) -> GroundTruth:
    return export_ground_truth(clean[0])


def idempotent_run(seed: int = 5) -> tuple[Cluster, int]:
    """Five acknowledged idempotent writes to t-0; return the cluster and the producer id."""
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=1, replication_factor=3)
    p = c.producer({"linger.ms": 0, "acks": "all"})
    for i in range(5):
        p.produce("t", value=f"v{i}".encode(), partition=0)
        p.flush()
    c.run_for(500)
    pid = c.brokers[c.leader("t")].replicas[T0].log.batches[-1].producer_id
    return c, pid


def append_everywhere(c: Cluster, tp: tuple[str, int], batch: RecordBatch) -> int:
    """Append ``batch`` straight into every live replica's log (no validation, no producer state)."""
    offset = -1
    for bid in sorted(c.brokers):
        r = c.brokers[bid].replicas.get(tp)
        if r is None:
            continue
        offset = r.log.log_end_offset
        r.log.append(batch.assigned(offset, r.log.latest_epoch()))
    return offset


def data(pid: int, epoch: int, seq: int, value: bytes = b"x", *, txn: bool = False) -> RecordBatch:
    return RecordBatch(
        producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn, keys=(None,), values=(value,)
    )


def marker(kind: str, pid: int, epoch: int) -> RecordBatch:
    return RecordBatch.control(kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=0, create_time=0)


def txn_pid(gt: GroundTruth) -> int:
    return next(b.producer_id for b in gt.final_log(T0) if b.is_transactional)


def unclean_run(unclean: bool) -> tuple[Cluster, dict[Any, set[Any]]]:
    """Broker 2 falls out of the ISR, 24 more writes are acknowledged by broker 1 alone, broker 1 dies.

    With ``unclean.leader.election.enable`` broker 2 becomes leader without them (lost acks);
    without it the partition stays leaderless.
    """
    c = Cluster(
        seed=3,
        brokers=3,
        config={"min.insync.replicas": 1, "unclean.leader.election.enable": unclean, "replica.lag.time.max.ms": 1_000},
    )
    c.create_topic("t", partitions=1, assignments=[(1, 2)])
    p = c.producer({"linger.ms": 0, "request.timeout.ms": 1_000, "max.in.flight.requests.per.connection": 1})
    acked: dict[Any, set[Any]] = {}

    def report(err: Any, msg: Any) -> None:
        if err is None:
            acked.setdefault((msg.topic(), msg.partition()), set()).add(msg.value())

    for i in range(3):
        p.produce("t", value=f"r{i}".encode(), on_delivery=report)
        p.flush()
    c.run_for(100)
    c.partition([1], [2])
    c.run_for(3_000)
    for i in range(3, 27):
        p.produce("t", value=f"r{i}".encode(), on_delivery=report)
        p.flush()
    c.crash(1)
    c.heal()
    c.world.crash("broker-1")  # heal restarted it; keep it down: only broker 2 is left
    c.run_for(20_000)
    return c, acked


# -- the clean runs pass every invariant ------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_clean_transactional_run_passes_every_invariant_in_both_transaction_versions(version: int) -> None:
    c, tl, acked = clean_run(transaction_version=version)
    assert tl.samples, "the timeline saw the leaders"
    assert check_invariants(c, tl, acked_values=acked) == []


@pytest.mark.parametrize(
    "checker",
    [
        check_replica_agreement,
        check_sequences,
        check_epochs,
        check_markers,
        check_no_hanging,
        check_atomicity,
        check_read_committed_fetches,
        check_aborted_index,
        check_txn_state,
        check_producer_state,
        check_liveness,
    ],
)
def test_each_checker_is_silent_on_the_clean_run(clean_gt: GroundTruth, checker: Any) -> None:
    assert checker(clean_gt) == []


def test_clean_run_exercises_what_the_checkers_read(clean_gt: GroundTruth) -> None:
    """Guard against vacuous passes: the clean run has markers of both types, an aborted index,
    read_committed fetches that returned data, coordinator history and producer tables."""
    types = {b.control_type for b in clean_gt.batches if b.is_control}
    assert types == {COMMIT, ABORT}
    assert clean_gt.aborted_index
    assert any(f.isolation == "read_committed" and f.records for f in clean_gt.fetches)
    assert {r.source for r in clean_gt.txn_history} == {"coordinator", "log"}
    assert clean_gt.producers


def test_clean_run_timeline_is_monotonic(clean: Any) -> None:
    assert check_offsets_monotonic(clean[1].samples) == []


def test_clean_run_keeps_every_acknowledged_value(clean: Any, clean_gt: GroundTruth) -> None:
    acked = clean[2]
    assert sum(len(v) for v in acked.values()) == 9
    assert check_acked_present(clean_gt, acked) == []


# -- ground truth and timeline -----------------------------------------------------------------------


def test_export_reads_only_and_is_deterministic(clean: Any) -> None:
    c = clean[0]
    before = c.fingerprint()
    a = export_ground_truth(c)
    b = export_ground_truth(c)
    assert a == b
    assert c.fingerprint() == before


def test_export_reads_a_crashed_brokers_log_from_its_disk() -> None:
    c, _pid = idempotent_run()
    follower = next(b for b in (1, 2, 3) if b != c.leader("t"))
    c.crash(follower)
    gt = export_ground_truth(c)
    row = gt.replica(T0, follower)
    assert row is not None and row.status == "down" and row.lso is None
    assert [b.values for b in gt.logs()[("t", 0, follower)]] == [(f"v{i}".encode(),) for i in range(5)]


def test_to_tables_gives_equal_length_plain_columns(clean_gt: GroundTruth) -> None:
    tables = clean_gt.to_tables()
    assert set(tables) >= {"records", "batches", "replicas", "partitions", "txn_state", "aborted_index", "faults"}
    for name, cols in tables.items():
        lengths = {len(v) for v in cols.values()}
        assert len(lengths) == 1, name
    assert len(tables["records"]["offset"]) == sum(b.count for b in clean_gt.batches)
    assert all(isinstance(p, list) for p in tables["partitions"]["isr"])


def test_timeline_does_not_change_the_run() -> None:
    plain = clean_run(seed=4)[0].fingerprint()
    c, tl, _ = clean_run(seed=4)
    assert c.fingerprint() == plain
    assert {(s.topic, s.partition) for s in tl.samples} >= {T0, T1}


def test_faults_are_exported_from_the_plan_and_the_trace() -> None:
    c, _pid = idempotent_run()
    c.crash(3)
    c.restart(3)
    gt = export_ground_truth(c)
    assert [(f.kind, f.node) for f in gt.faults if f.source == "trace"] == [
        ("crash", "broker-3"),
        ("restart", "broker-3"),
    ]


# -- L1 ------------------------------------------------------------------------------------------------


def test_l1_fires_when_a_follower_holds_a_different_record_below_the_hw() -> None:
    c, _pid = idempotent_run()
    follower = next(b for b in (1, 2, 3) if b != c.leader("t"))
    log = c.brokers[follower].replicas[T0].log
    last = log.batches[-1]
    log.truncate_to(last.base_offset)
    log.append(data(last.producer_id, last.producer_epoch, last.base_sequence, b"evil").assigned(last.base_offset, 0))
    found = check_replica_agreement(export_ground_truth(c))
    assert kinds(found) == {"L1-replica-divergence"}
    assert found[0].offsets == (4,)


def test_l1_fires_when_an_offset_is_held_twice(clean_gt: GroundTruth) -> None:
    dup = clean_gt.final_log(T0)[0]
    bad = dataclasses.replace(clean_gt, batches=(*clean_gt.batches, dup))
    assert "L1-offset-order" in kinds(check_replica_agreement(bad))


# -- L2, L3 --------------------------------------------------------------------------------------------


def test_l2_fires_on_a_sequence_gap() -> None:
    c, pid = idempotent_run()
    append_everywhere(c, T0, data(pid, 0, 6))  # last sequence was 4; 5 is skipped
    assert kinds(check_sequences(export_ground_truth(c))) == {"L2-sequence-gap"}


def test_l2_fires_on_a_sequence_written_twice() -> None:
    c, pid = idempotent_run()
    append_everywhere(c, T0, data(pid, 0, 2))
    assert "L2-sequence-duplicate" in kinds(check_sequences(export_ground_truth(c)))


def test_l3_fires_when_an_older_epoch_writes_after_a_newer_one() -> None:
    c, pid = idempotent_run()
    append_everywhere(c, T0, data(pid, 3, 0))
    append_everywhere(c, T0, data(pid, 2, 0))  # a zombie of epoch 2 accepted after epoch 3
    found = check_epochs(export_ground_truth(c))
    assert kinds(found) == {"L3-epoch-regression"}


# -- L4 --------------------------------------------------------------------------------------------------


def test_l4_fires_on_data_of_an_ended_transaction_after_its_marker() -> None:
    c, _tl, _ = clean_run()
    gt = export_ground_truth(c)
    pid = txn_pid(gt)
    first_epoch = gt.final_log(T0)[0].producer_epoch  # TV2: the marker after it carries first_epoch + 1
    append_everywhere(c, T0, data(pid, first_epoch, 1, txn=True))
    assert "L4-data-after-marker" in kinds(check_markers(export_ground_truth(c)))


def test_l4_fires_on_a_marker_older_than_its_data() -> None:
    c, pid = idempotent_run()
    append_everywhere(c, T0, data(pid, 7, 0, txn=True))
    append_everywhere(c, T0, marker(COMMIT, pid, 6))
    assert "L4-marker-epoch" in kinds(check_markers(export_ground_truth(c)))


def test_l4_fires_on_a_second_marker_for_the_same_transaction() -> None:
    c, _tl, _ = clean_run()
    last = [b for b in c.brokers[c.leader("t", 1)].replicas[T1].log.batches if b.is_control][-1]
    assert last.control_type == COMMIT  # the COMMIT of the last transaction; write it a second time
    append_everywhere(c, T1, marker(last.control_type, last.producer_id, last.producer_epoch))
    gt = export_ground_truth(c)
    assert "L4-duplicate-marker" in kinds(check_markers(gt))
    # Without coordinator history the repeat is still found (same epoch and type, no data between).
    assert "L4-duplicate-marker" in kinds(check_markers(dataclasses.replace(gt, txn_history=())))


def test_l4_is_silent_on_the_real_duplicate_free_clean_markers(clean_gt: GroundTruth) -> None:
    assert check_markers(dataclasses.replace(clean_gt, txn_history=())) == []


def test_l4_fires_on_a_non_transactional_batch_inside_an_open_transaction() -> None:
    c, pid = idempotent_run()
    append_everywhere(c, T0, data(pid, 1, 0, txn=True))
    append_everywhere(c, T0, data(pid, 1, 1, txn=False))
    append_everywhere(c, T0, marker(ABORT, pid, 1))
    assert "L4-non-transactional-in-txn" in kinds(check_markers(export_ground_truth(c)))


# -- L5, L14 -------------------------------------------------------------------------------------------------


def open_transaction_run() -> Cluster:
    c = Cluster(seed=11, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=2, replication_factor=3)
    p = c.producer({"transactional.id": "tx", "linger.ms": 0})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"open", partition=0)
    p.flush()
    c.run_for(500)  # far below transaction.timeout.ms: the transaction is still open
    return c


def test_l5_fires_on_an_open_transaction_with_lso_below_hw() -> None:
    gt = export_ground_truth(open_transaction_run())
    found = check_no_hanging(gt)
    assert kinds(found) == {"L5-hanging-txn", "L5-lso-below-hw"}
    assert all(a.key == T0 for a in found)


def test_l14_fires_on_lso_stuck_and_on_a_partition_without_leader() -> None:
    assert kinds(check_liveness(export_ground_truth(open_transaction_run()))) == {"L14-lso-below-hw"}
    c, _acked = unclean_run(unclean=False)
    assert c.leader("t") == -1
    found = check_liveness(export_ground_truth(c))
    assert kinds(found) == {"L14-no-leader"}


# -- L6 ---------------------------------------------------------------------------------------------------------


def _retype_marker(gt: GroundTruth, tp: tuple[str, int], offset: int, new_type: str) -> GroundTruth:
    rows = tuple(
        b._replace(control_type=new_type) if b.is_control and b.tp == tp and b.base_offset == offset else b
        for b in gt.batches
    )
    return dataclasses.replace(gt, batches=rows)


def test_l6_fires_when_one_partition_aborts_what_the_others_commit(clean_gt: GroundTruth) -> None:
    first_commit_t1 = next(b for b in clean_gt.final_log(T1) if b.is_control)
    bad = _retype_marker(clean_gt, T1, first_commit_t1.base_offset, ABORT)
    assert kinds(check_atomicity(bad)) == {"L6-atomicity"}
    # Without coordinator history, TV2's one-epoch-per-transaction still exposes the mismatch.
    assert kinds(check_atomicity(dataclasses.replace(bad, txn_history=()))) == {"L6-atomicity"}


def test_l6_fires_when_a_partition_misses_its_marker(clean_gt: GroundTruth) -> None:
    first_commit_t1 = next(b for b in clean_gt.final_log(T1) if b.is_control)
    rows = tuple(b for b in clean_gt.batches if not (b.tp == T1 and b.base_offset == first_commit_t1.base_offset))
    found = check_atomicity(dataclasses.replace(clean_gt, batches=rows))
    assert "L6-atomicity" in kinds(found)


def test_l6_fires_when_a_decision_never_completes(clean_gt: GroundTruth) -> None:
    rows = tuple(r for r in clean_gt.txn_history if r.state != "COMPLETE_ABORT")
    assert kinds(check_atomicity(dataclasses.replace(clean_gt, txn_history=rows))) == {"L6-incomplete"}


def test_l6_accepts_two_transactions_with_one_epoch_under_transaction_version_1() -> None:
    c, _tl, _ = clean_run(transaction_version=1)
    gt = export_ground_truth(c)
    epochs = {b.producer_epoch for b in gt.final_log(T0) if b.is_control}
    assert len(epochs) == 1  # commit and abort share the epoch: only the coordinator tells them apart
    assert check_atomicity(gt) == []


# -- L7 ----------------------------------------------------------------------------------------------------------


def test_l7_fires_when_hw_or_lso_goes_back_within_a_leader_epoch(clean: Any) -> None:
    samples = list(clean[1].samples)
    last = next(s for s in reversed(samples) if (s.topic, s.partition) == T0 and s.hw > 0)
    back = last._replace(index=last.index + 1, hw=last.hw - 1, lso=last.lso - 1, leo=last.leo)
    found = check_offsets_monotonic([*samples, back])
    assert kinds(found) == {"L7-hw-regression", "L7-lso-regression"}


def test_l7_fires_when_lso_passes_hw(clean: Any) -> None:
    samples = list(clean[1].samples)
    last = samples[-1]
    assert kinds(check_offsets_monotonic([*samples, last._replace(lso=last.hw + 1)])) == {"L7-offset-order"}


# -- L8 ----------------------------------------------------------------------------------------------------------


def test_l8_fires_when_a_read_committed_fetch_returned_batches_past_the_lso(clean_gt: GroundTruth) -> None:
    i, f = next((i, f) for i, f in enumerate(clean_gt.fetches) if f.isolation == "read_committed" and f.records)
    fetches = list(clean_gt.fetches)
    fetches[i] = f._replace(lso=f.fetch_offset)  # the same answer, had the LSO been at the fetch offset
    found = check_read_committed_fetches(dataclasses.replace(clean_gt, fetches=tuple(fetches)))
    assert kinds(found) == {"L8-read-beyond-lso"}


# -- L9 ----------------------------------------------------------------------------------------------------------


def test_l9_fires_when_an_aborted_index_entry_is_missing_or_extra() -> None:
    c, _tl, _ = clean_run()
    follower = next(b for b in (1, 2, 3) if b != c.leader("t"))
    index = c.brokers[follower].replicas[T0].txn_index
    entry = index.entries.pop()
    found = check_aborted_index(export_ground_truth(c))
    assert kinds(found) == {"L9-aborted-index"}
    assert "missing" in found[0].message
    index.entries.append(entry)
    index.entries.append(entry._replace(first_offset=0))
    found = check_aborted_index(export_ground_truth(c))
    assert kinds(found) == {"L9-aborted-index"}
    assert "matches no ABORT" in found[0].message


# -- L10 ---------------------------------------------------------------------------------------------------------


def test_l10_fires_on_an_illegal_transition_and_an_epoch_going_back(clean_gt: GroundTruth) -> None:
    rows = list(clean_gt.txn_history)
    i = next(i for i, r in enumerate(rows) if r.state == "PREPARE_COMMIT" and r.source == "coordinator")
    rows[i - 1] = rows[i - 1]._replace(state="EMPTY")  # EMPTY -> PREPARE_COMMIT is illegal
    found = check_txn_state(dataclasses.replace(clean_gt, txn_history=tuple(rows)))
    assert kinds(found) == {"L10-illegal-transition"}
    rows = list(clean_gt.txn_history)
    j = max(i for i, r in enumerate(rows) if r.source == "coordinator")
    rows[j] = rows[j]._replace(producer_epoch=rows[j].producer_epoch - 2)
    assert kinds(check_txn_state(dataclasses.replace(clean_gt, txn_history=tuple(rows)))) == {"L10-epoch-regression"}


def test_l10_reads_the_log_when_no_coordinator_has_the_id_loaded(clean_gt: GroundTruth) -> None:
    log_only = tuple(r for r in clean_gt.txn_history if r.source == "log")
    rows = [r._replace(state="COMPLETE_COMMIT") if r.state == "PREPARE_COMMIT" else r for r in log_only]
    assert check_txn_state(dataclasses.replace(clean_gt, txn_history=log_only)) == []
    assert "L10-illegal-transition" in kinds(check_txn_state(dataclasses.replace(clean_gt, txn_history=tuple(rows))))


# -- L12 ---------------------------------------------------------------------------------------------------------


def test_l12_fires_when_an_unclean_election_loses_acknowledged_records() -> None:
    c, acked = unclean_run(unclean=True)
    assert c.leader("t") == 2
    assert len(acked[T0]) == 27
    found = check_acked_present(export_ground_truth(c), acked)
    assert kinds(found) == {"L12-lost-ack"}
    assert set(found[0].values) == {f"r{i}" for i in range(3, 27)}
    assert "L12-lost-ack" in kinds(check_invariants(c, acked_values=acked))


# -- L13 ---------------------------------------------------------------------------------------------------------


def test_l13_fires_when_the_leaders_producer_table_misses_a_batch_of_its_log() -> None:
    c, pid = idempotent_run()
    log = c.brokers[c.leader("t")].replicas[T0].log
    log.append(data(pid, 0, 5).assigned(log.log_end_offset, log.latest_epoch()))  # in the log, not in the table
    found = check_producer_state(export_ground_truth(c))
    assert kinds(found) == {"L13-producer-state"}
    assert "(0, 4, None)" in found[0].message and "(0, 5, None)" in found[0].message


# -- the runner ---------------------------------------------------------------------------------------------------


def test_check_invariants_sorts_and_names_every_kind_it_reports() -> None:
    gt = export_ground_truth(open_transaction_run())
    found = check_ground_truth(gt)
    assert found == sorted(found, key=lambda a: (a.kind, a.key or ("", -1), a.offsets))
    assert kinds(found) <= set(KINDS)
    assert {KINDS[k][0] for k in kinds(found)} == {"L5", "L14"}


def test_at_least_once_skips_idempotence_and_fencing() -> None:
    c, pid = idempotent_run()
    append_everywhere(c, T0, data(pid, 0, 9))
    assert "L2-sequence-gap" in kinds(check_invariants(c))
    assert "L2-sequence-gap" not in kinds(check_invariants(c, at_least_once=True))


# -- engine bugs the invariants found (fixed; these runs now stay clean) --


def stuck_completion_run() -> Cluster:
    """The COMPLETE_COMMIT write of a transaction cannot replicate for 6 s, then can.

    The followers' fetches from the coordinator (which carry ``__transaction_state``) are dropped,
    so the markers (on a partition led elsewhere) are written and acknowledged, and the coordinator's
    COMPLETE write times out after ``WRITE_TIMEOUT_MS`` while it stays coordinator.
    """
    from engine.coordinator_lookup import partition_for

    c = Cluster(seed=1, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=3, replication_factor=3)
    p = c.producer({"transactional.id": "tx", "linger.ms": 0})
    p.init_transactions()
    coord = c.leader("__transaction_state", partition_for("tx", 50))
    tp = next(i for i in range(3) if c.leader("t", i) != coord)
    p.begin_transaction()
    p.produce("t", value=b"v", partition=tp)
    p.commit_transaction()

    def txn_state_fetch(m: Any) -> bool:
        # A follower's fetch carries every partition it follows on the coordinator, these among them.
        return any(p.topic == "__transaction_state" for p in m.body.partitions)

    rules = [
        c.add_rule("drop", src=f, dst=coord, body_type="ReplicaFetchRequest", count=None, where=txn_state_fetch)
        for f in (1, 2, 3)
        if f != coord
    ]
    dropped = c.world.network.dropped
    c.run_for(6_000)
    assert c.world.network.dropped > dropped, "the followers' fetches from the coordinator were dropped"
    for r in rules:
        c.world.network.remove_rule(r)
    c.run_for(60_000)
    return c


def test_a_transaction_whose_complete_write_timed_out_is_eventually_completed() -> None:
    assert check_invariants(stuck_completion_run()) == []


def power_loss_restart_run() -> tuple[Cluster, PartitionTimeline, dict[Any, set[Any]]]:
    """The leader of t-0 loses its unflushed tail in a power loss and restarts at once.

    Five acks=all writes are replicated to all three brokers; none was flushed on the leader.
    It comes back before the controller's session timeout, so the controller keeps it leader in
    the same leader epoch, with an empty log.
    """
    c = Cluster(seed=1, brokers=3, config={"min.insync.replicas": 2})
    tl = PartitionTimeline.attach(c)
    c.create_topic("t", partitions=1, replication_factor=3)
    acked: dict[Any, set[Any]] = {T0: set()}

    def report(err: Any, msg: Any) -> None:
        if err is None:
            acked[T0].add(msg.value())

    p = c.producer({"linger.ms": 0, "acks": "all"})
    for i in range(5):
        p.produce("t", value=f"a{i}".encode(), on_delivery=report)
        p.flush()
    leader = c.leader("t")
    c.crash(leader, lose_unflushed_tail=True)
    c.restart(leader)
    c.run_for(100)
    q = c.producer({"linger.ms": 0, "acks": "all"})
    for i in range(3):
        q.produce("t", value=f"b{i}".encode(), on_delivery=report)
        q.flush()
    c.run_for(2_000)
    return c, tl, acked


def test_a_single_power_loss_never_loses_acknowledged_replicated_records() -> None:
    c, tl, acked = power_loss_restart_run()
    assert check_invariants(c, tl, acked_values=acked) == []
