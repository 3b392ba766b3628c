"""Admin views of transactions: ``kafka-transactions.sh`` and the transaction dumps, read from the engine.

Goal: an operator who knows Kafka's tools reads the same tables and dumps here, and the hanging
transaction they are built to find can be made, found and cleared. Method: small clusters on fixed
seeds run real transactional producers; the tests compare the exact text (header line, TAB after
every cell, padding, ``None``/``-1`` rules of views.md §3.1-3.2) and the frozen rows, and build a
hanging transaction the way KIP-890 describes it (transaction version 1: a produce delayed past the
producer's own abort lands after the ABORT marker), then find it with ``find-hanging`` and clear it
with the admin client's ``abort``. Each test name reads like a row of an error table.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster
from engine.admin import AbortTransactionError, AdminClient
from engine.coordinator_lookup import partition_for
from engine.errors import CoordinatorNotAvailableException, TimeoutException, TransactionalIdNotFoundException
from engine.views import transactions as views
from engine.views.transactions import format_table

TAB = "\t"


def _cluster(seed: int = 7, **config: Any) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2, **config})
    c.create_topic("t", partitions=2, replication_factor=3)
    return c


def _txn_producer(c: Cluster, txn_id: str = "tx-1", **config: Any) -> Any:
    p = c.producer({"transactional.id": txn_id, "linger.ms": 0, **config})
    p.init_transactions()
    return p


def _cells(line: str) -> list[str]:
    assert line.endswith(TAB), f"every cell, the last included, is followed by a TAB: {line!r}"
    return [cell.rstrip(" ") for cell in line.split(TAB)[:-1]]


def _table(text: str) -> list[list[str]]:
    return [_cells(line) for line in text.split("\n")]


def _hanging_cluster() -> tuple[Cluster, Any]:
    """Build KIP-890's hanging transaction on transaction version 1.

    The producer's only produce request is delayed 5 s; the producer gives up on it after
    delivery.timeout.ms (1 s), aborts (the coordinator writes ABORT to t-0, which has no data of
    the producer yet) and gets a new epoch. The delayed request then arrives: v1 has no partition
    verification, the epoch still matches the partition's, so it opens a transaction that the
    coordinator (now Empty) will never end.
    """
    c = _cluster(seed=3, **{"transaction.version": 1})
    p = _txn_producer(c, "tx-h", **{"request.timeout.ms": 1_000, "delivery.timeout.ms": 1_000})
    p.begin_transaction()
    c.add_rule("delay", body_type="ProduceRequest", delay_ms=5_000)
    p.produce("t", value=b"late", partition=0)
    p.flush(3)
    p.abort_transaction()
    c.run_for(6_000)
    return c, p


# -- the table printer --------------------------------------------------------------------------


def test_table_cells_are_left_aligned_padded_to_the_column_and_each_followed_by_a_tab() -> None:
    text = format_table(["A", "Longer"], [["xyz", "1"], ["q", "22"]])
    assert text.split("\n") == ["A  \tLonger\t", "xyz\t1     \t", "q  \t22    \t"]


def test_table_without_rows_is_its_header_alone() -> None:
    assert format_table(["ProducerId", "ProducerEpoch"], []) == "ProducerId\tProducerEpoch\t"


def test_table_row_with_the_wrong_cell_count_is_refused() -> None:
    with pytest.raises(ValueError, match="cells for 2 columns"):
        format_table(["A", "B"], [["only one"]])


def test_every_subcommand_prints_kafkas_header_line_exactly() -> None:
    c = _cluster()
    p = _txn_producer(c)
    p.begin_transaction()
    p.produce("t", value=b"v", partition=0)
    p.flush()
    tx = c.transactions()
    assert tx.list().split("\n")[0] == "TransactionalId\tCoordinator\tProducerId\tTransactionState\t"
    assert tx.describe("tx-1").split("\n")[0] == (
        "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\t"
        "CurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions\t"
    )
    assert tx.describe_producers("t", 0).split("\n")[0] == (
        "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset\t"
    )
    assert tx.find_hanging(topic="t") == (
        "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t"
    )
    for text in (tx.list(), tx.describe("tx-1"), tx.describe_producers("t", 0)):
        lines = text.split("\n")
        widths = [len(cell) for cell in lines[0].split(TAB)[:-1]]
        for line in lines[1:]:
            assert [len(cell) for cell in line.split(TAB)[:-1]] == widths  # every cell padded to its column


# -- list / describe ----------------------------------------------------------------------------


def test_describe_of_an_open_transaction_shows_ongoing_its_start_time_and_partitions() -> None:
    c = _cluster()
    p = _txn_producer(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.produce("t", value=b"b", partition=1)
    p.flush()
    c.run_for(40)
    row = c.admin().describe_transaction("tx-1")
    assert (row.state, row.producer_id, row.topic_partitions) == ("Ongoing", p.producer_id, (("t", 0), ("t", 1)))
    assert row.start_time_ms is not None
    assert row.duration_ms == c.now_ms - row.start_time_ms > 0
    _header, cells = _table(c.transactions().describe("tx-1"))
    assert cells == [
        str(row.coordinator_id),
        "tx-1",
        str(p.producer_id),
        str(p.producer_epoch),
        "Ongoing",
        "60000",
        str(row.start_time_ms),
        str(c.now_ms - row.start_time_ms),  # a second DescribeTransactions: its answer came later
        "t-0,t-1",
    ]
    n = c.config.transaction_state_log_num_partitions
    assert row.coordinator_id == c.leader("__transaction_state", partition_for("tx-1", n))


def test_describe_after_commit_shows_complete_commit() -> None:
    c = _cluster()
    p = _txn_producer(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.commit_transaction()
    c.run_for(200)  # the markers are written after the client's EndTxn is answered
    _header, cells = _table(c.transactions().describe("tx-1"))
    assert cells[4] == "CompleteCommit"
    assert cells[3] == str(p.producer_epoch)  # transaction version 2 bumped the epoch at the end


def test_describe_of_an_initialised_id_without_a_transaction_prints_none_for_start_and_duration() -> None:
    c = _cluster()
    _txn_producer(c)
    _header, cells = _table(c.transactions().describe("tx-1"))
    assert (cells[4], cells[6], cells[7], cells[8]) == ("Empty", "None", "None", "")


def test_describe_of_an_unknown_transactional_id_is_not_found() -> None:
    c = _cluster()
    with pytest.raises(TransactionalIdNotFoundException, match="'nobody' was not found"):
        c.transactions().describe("nobody")


def test_list_shows_every_transactional_id_by_coordinator_with_its_state() -> None:
    c = _cluster()
    producers = {txn_id: _txn_producer(c, txn_id) for txn_id in ("tx-1", "orders-7", "payments")}
    producers["tx-1"].begin_transaction()
    producers["tx-1"].produce("t", value=b"a", partition=0)
    producers["tx-1"].flush()
    rows = c.admin().list_transactions()
    assert sorted(r.transactional_id for r in rows) == ["orders-7", "payments", "tx-1"]
    assert [r.coordinator_id for r in rows] == sorted(r.coordinator_id for r in rows)
    by_id = {r.transactional_id: r for r in rows}
    assert by_id["tx-1"].state == "Ongoing"
    assert by_id["orders-7"].state == by_id["payments"].state == "Empty"
    for txn_id, p in producers.items():
        assert by_id[txn_id].producer_id == p.producer_id
    table = _table(c.transactions().list())
    assert table[1:] == [[r.transactional_id, str(r.coordinator_id), str(r.producer_id), r.state] for r in rows]


def test_list_with_a_duration_filter_keeps_only_transactions_running_longer() -> None:
    c = _cluster()
    old = _txn_producer(c, "old")
    new = _txn_producer(c, "new")
    old.begin_transaction()
    old.produce("t", value=b"a", partition=0)
    old.flush()
    c.run_for(5_000)
    new.begin_transaction()
    new.produce("t", value=b"b", partition=1)
    new.flush()
    ongoing = {r.transactional_id for r in views.list_transactions_rows(c, 3_000) if r.state == "Ongoing"}
    assert ongoing == {"old"}


# -- describe-producers -------------------------------------------------------------------------


def test_describe_producers_shows_the_open_transaction_start_offset_then_none_after_commit() -> None:
    c = _cluster()
    idem = c.producer({"linger.ms": 0})
    idem.produce("t", value=b"plain", partition=0)
    idem.flush()
    p = _txn_producer(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.produce("t", value=b"b", partition=0)
    p.flush()
    rows = {r.producer_id: r for r in c.admin().describe_producers("t", 0)}
    assert rows[p.producer_id].current_txn_start_offset == 1
    assert rows[idem.producer_id].current_txn_start_offset is None
    table = _table(c.transactions().describe_producers("t", 0))
    assert [line[0] for line in table[1:]] == sorted(str(pid) for pid in rows)
    open_line = next(line for line in table[1:] if line[0] == str(p.producer_id))
    assert open_line[2] == "-1"  # no marker from this producer yet: no coordinator epoch
    assert open_line[5] == "1"
    p.commit_transaction()
    c.run_for(200)
    closed = next(
        line for line in _table(c.transactions().describe_producers("t", 0))[1:] if line[0] == str(p.producer_id)
    )
    assert closed[5] == "None"
    assert closed[2] == "0"  # the COMMIT marker's coordinator epoch


def test_describe_producers_of_a_follower_replica_reads_that_replica() -> None:
    c = _cluster()
    p = _txn_producer(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.flush()
    c.run_for(100)
    follower = next(b for b in c.controller.partitions[("t", 0)].replicas if b != c.leader("t", 0))
    rows = c.admin().describe_producers("t", 0, broker_id=follower)
    assert [(r.broker_id, r.producer_id, r.current_txn_start_offset) for r in rows] == [(follower, p.producer_id, 0)]


# -- dumps --------------------------------------------------------------------------------------


def test_transaction_state_dump_holds_the_whole_history_of_one_id_in_offset_order() -> None:
    c = _cluster()
    p = _txn_producer(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.commit_transaction()
    c.run_for(200)
    rows = views.transaction_state_rows(c, "tx-1")
    assert [r.state for r in rows] == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]
    assert [r.offset for r in rows] == sorted(r.offset for r in rows)
    assert len({r.partition for r in rows}) == 1
    text = c.dump_transaction_state("tx-1")
    lines = text.split("\n")
    assert lines[0].startswith("Dumping /var/lib/kafka/data-") and lines[0].endswith(
        f"/__transaction_state-{rows[0].partition}/00000000000000000000.log"
    )
    assert lines[1] == "Log starting offset: 0"
    records = [line for line in lines if line.startswith("| offset: ")]
    assert [int(line.split()[2]) for line in records] == [r.offset for r in rows]
    assert records[1].endswith(
        f"key: transaction_metadata::transactionalId=tx-1 payload: producerId:{rows[1].value.producer_id},"
        f"producerEpoch:0,state=Ongoing,partitions=[t-0],txnLastUpdateTimestamp={rows[1].create_time},"
        "txnTimeoutMs=60000"
    )
    assert all(line.startswith("baseOffset: ") for line in lines[2::2])


def test_transaction_state_dump_of_every_id_covers_each_id_once_per_transition() -> None:
    c = _cluster()
    for txn_id in ("tx-1", "orders-7"):
        _txn_producer(c, txn_id)
    rows = views.transaction_state_rows(c)
    assert sorted((r.transactional_id, r.state) for r in rows) == [("orders-7", "Empty"), ("tx-1", "Empty")]
    assert [r.create_time for r in rows] == sorted(r.create_time for r in rows)
    assert c.dump_transaction_state().count("Dumping ") == len({r.partition for r in rows})


def test_txn_index_after_an_aborted_transaction_has_one_line_for_its_range() -> None:
    c = _cluster()
    p = _txn_producer(c)
    p.begin_transaction()
    for v in (b"a", b"b", b"c"):
        p.produce("t", value=v, partition=0)
    p.flush()
    p.abort_transaction()
    c.run_for(200)
    entries = views.txn_index_rows(c, "t", 0)
    assert [(e.producer_id, e.first_offset, e.last_offset) for e in entries] == [(p.producer_id, 0, 3)]
    lines = c.dump_txn_index("t", 0).split("\n")
    assert lines[0] == f"Dumping /var/lib/kafka/data-{c.leader('t', 0)}/t-0/00000000000000000000.txnindex"
    assert lines[1:] == [
        (
            f"version: 0 producerId: {p.producer_id} firstOffset: 0 lastOffset: 3 "
            f"lastStableOffset: {entries[0].last_stable_offset}"
        )
    ]
    assert c.dump_txn_index("t", 1).split("\n") == [
        f"Dumping /var/lib/kafka/data-{c.leader('t', 1)}/t-1/00000000000000000000.txnindex"
    ]


def test_txn_index_last_stable_offset_is_past_the_marker_when_no_other_transaction_is_open() -> None:
    # Kafka's ProducerStateManager.lastStableOffset(completedTxn): the first offset of the next
    # open transaction of another producer, else the marker's offset + 1.
    c = _cluster()
    p = _txn_producer(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.flush()
    p.abort_transaction()
    c.run_for(200)
    assert [e.last_stable_offset for e in views.txn_index_rows(c, "t", 0)] == [2]


# -- find-hanging and abort ---------------------------------------------------------------------


def test_find_hanging_reports_a_late_v1_produce_after_abort_and_admin_abort_unsticks_the_lso() -> None:
    c, p = _hanging_cluster()
    part = c.describe_partition("t", 0)
    assert (part.high_watermark, part.last_stable_offset) == (2, 1)  # ABORT marker at 0, the late record at 1
    assert c.admin().describe_transaction("tx-h").state == "Empty"
    c.run_for(60_000)
    assert c.describe_partition("t", 0).last_stable_offset == 1  # stuck: no coordinator will end it
    hanging = c.admin().find_hanging(topic="t", max_transaction_timeout_min=1)
    assert [(h.topic, h.partition, h.producer_id, h.start_offset, h.reason) for h in hanging] == [
        ("t", 0, p.producer_id, 1, "partition not in the transaction")
    ]
    h = hanging[0]
    _header, cells = _table(c.transactions().find_hanging(topic="t", max_transaction_timeout_min=1))
    assert cells == ["t", "0", str(h.producer_id), str(h.producer_epoch), "0", "1", str(h.last_timestamp), "1"]
    assert views.find_hanging_rows(c, broker_id=c.leader("t", 0), max_transaction_timeout_min=1) == hanging

    sent = c.admin().abort_transaction("t", 0, h.start_offset)
    assert (sent.producer_id, sent.producer_epoch, sent.coordinator_epoch, sent.committed) == (
        h.producer_id,
        h.producer_epoch,
        h.coordinator_epoch,
        False,
    )
    part = c.describe_partition("t", 0)
    assert part.last_stable_offset == part.high_watermark == part.log_end_offset == 3
    assert [(e.first_offset, e.last_offset) for e in views.txn_index_rows(c, "t", 0)][-1] == (1, 2)
    assert views.find_hanging_rows(c, topic="t", max_transaction_timeout_min=1) == ()
    reader = c.consumer({"isolation.level": "read_committed"})
    reader.assign([("t", 0)])
    assert [m.value() for m in reader.consume(10, timeout=2)] == []  # the late record stays aborted


def test_find_hanging_ignores_an_open_transaction_younger_than_the_max_timeout() -> None:
    c, _p = _hanging_cluster()
    assert views.find_hanging_rows(c, topic="t") == ()  # default 15 minutes not yet passed
    assert len(views.find_hanging_rows(c, topic="t", partition=0, max_transaction_timeout_min=0)) == 1


def test_find_hanging_ignores_a_long_transaction_its_coordinator_knows() -> None:
    c = _cluster()
    p = _txn_producer(c, **{"transaction.timeout.ms": 300_000})
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.flush()
    c.run_for(70_000)
    candidates = [r for r in c.admin().describe_producers("t", 0) if r.current_txn_start_offset is not None]
    assert len(candidates) == 1
    assert views.find_hanging_rows(c, topic="t", max_transaction_timeout_min=1) == ()


def test_abort_with_no_open_transaction_at_that_offset_is_an_error() -> None:
    c, _p = _hanging_cluster()
    with pytest.raises(AbortTransactionError, match="Could not find any open transactions starting at offset 0"):
        c.admin().abort_transaction("t", 0, 0)
    assert c.describe_partition("t", 0).last_stable_offset == 1


def test_views_do_not_change_the_run() -> None:
    def run(look: bool) -> str:
        c = _cluster(seed=11)
        p = _txn_producer(c)
        p.begin_transaction()
        p.produce("t", value=b"a", partition=0)
        p.flush()
        if look:
            tx = c.transactions()
            # list, describe and describe-producers are requests to the coordinators and the leader:
            # they cross the network. The views and dumps read without a node.
            views.list_transactions_rows(c)
            views.describe_transaction_row(c, "tx-1")
            tx.find_hanging(broker_id=1, max_transaction_timeout_min=0)
            c.dump_txn_index("t", 0)
            c.dump_transaction_state()
        p.commit_transaction()
        c.run_for(500)
        return c.fingerprint()

    assert run(look=True) == run(look=False)


def _open_transaction_and_admin() -> tuple[Cluster, AdminClient]:
    """A cluster with tx-1's transaction open on t-0 (its record flushed), and an admin client."""
    c = _cluster(seed=5)
    p = _txn_producer(c)
    p.begin_transaction()
    p.produce("t", value=b"a", partition=0)
    p.flush()
    return c, c.admin()


def test_describe_producers_asks_the_leader_so_a_cut_off_leader_shows() -> None:
    # DescribeProducers is answered by the leader's replica manager over the simulated network
    # (Kafka's ReplicaManager.activeProducerState): the admin cut off from the leader gets no
    # answer, where reading the cluster's state directly answered as if nothing were wrong.
    c, admin = _open_transaction_and_admin()
    assert [r.current_txn_start_offset for r in admin.describe_producers("t", 0)] == [0]
    leader = c.leader("t", 0)
    c.partition([admin.name], [leader])
    with pytest.raises(TimeoutException):
        admin.describe_producers("t", 0, timeout_ms=2_000)
    c.heal()
    assert [r.current_txn_start_offset for r in admin.describe_producers("t", 0)] == [0]


def test_describe_and_list_ask_the_coordinator_so_a_cut_off_coordinator_shows() -> None:
    # DescribeTransactions goes to the id's coordinator and ListTransactions to every broker's
    # coordinator over the simulated network (Kafka's TransactionCoordinator.handleDescribeTransactions
    # and handleListTransactions): the admin cut off from the coordinator gets no answer, where
    # reading the coordinators' state directly answered as if nothing were wrong.
    c, admin = _open_transaction_and_admin()
    coordinator = admin.describe_transaction("tx-1").coordinator_id
    assert [(r.transactional_id, r.coordinator_id) for r in admin.list_transactions()] == [("tx-1", coordinator)]
    c.partition([admin.name], [coordinator])
    with pytest.raises(TimeoutException, match=f"broker {coordinator}"):
        admin.describe_transaction("tx-1", timeout_ms=2_000)
    with pytest.raises(TimeoutException, match=f"broker {coordinator}"):
        admin.list_transactions(timeout_ms=2_000)
    c.heal()
    assert admin.describe_transaction("tx-1").state == "Ongoing"
    assert [r.transactional_id for r in admin.list_transactions()] == ["tx-1"]


def test_list_asks_each_broker_so_a_crashed_coordinator_shows_until_its_partitions_move() -> None:
    # Each broker's coordinator lists the ids of the __transaction_state partitions it leads. A
    # crashed coordinator refuses the connection; once the controller has fenced it, the new
    # leader of the id's partition loads it and lists it.
    c = _cluster(seed=5)
    _txn_producer(c)
    admin = c.admin()
    coordinator = admin.describe_transaction("tx-1").coordinator_id
    c.crash(coordinator)
    with pytest.raises(CoordinatorNotAvailableException, match=f"broker {coordinator}"):
        admin.list_transactions()
    c.run_for(15_000)  # broker.session.timeout.ms: fenced, the partition's leadership moves
    [row] = admin.list_transactions()
    assert row.transactional_id == "tx-1" and row.coordinator_id != coordinator
