"""read_committed on the client: the aborted-transactions walk, alone and inside a consumer.

Goal: a read_committed consumer returns exactly the committed records below the LSO, dropping the
batches of aborted transactions by the broker's aborted list and skipping every marker, while a
read_uncommitted one only skips markers; and the position always moves past what was dropped.
Method: :func:`~engine.client.read_committed.visible_batches` on hand-written partition logs
(offsets, producer ids, markers and aborted lists chosen so each rule decides one batch), then
one small cluster where a transaction is aborted between two committed ones, read with both
isolation levels.
"""

from __future__ import annotations

from engine import Cluster
from engine.client.fetcher import ABORTED_BATCH_DROPPED
from engine.client.read_committed import visible_batches
from engine.config import IsolationLevel
from engine.log.records import ABORT, COMMIT, RecordBatch
from engine.log.txn_index import AbortedTxn

RC = IsolationLevel.READ_COMMITTED
RU = IsolationLevel.READ_UNCOMMITTED


def _data(base: int, pid: int, n: int = 1, *, txn: bool = True) -> RecordBatch:
    values = tuple(f"{pid}@{base + i}".encode() for i in range(n))
    return RecordBatch(base_offset=base, producer_id=pid, is_transactional=txn, keys=(None,) * n, values=values)


def _marker(base: int, pid: int, kind: str) -> RecordBatch:
    return RecordBatch(
        base_offset=base, producer_id=pid, is_transactional=True, is_control=True, control_type=kind, values=(None,)
    )


def _aborted(pid: int, first: int, last: int) -> AbortedTxn:
    return AbortedTxn(pid, first, last, first)


def _bases(batches: tuple[RecordBatch, ...]) -> list[int]:
    return [b.base_offset for b in batches]


# Producer 7 commits a transaction (0-1, COMMIT at 2), aborts one (3-4, ABORT at 5), then commits
# again (6, COMMIT at 7); producer 8's transaction interleaves with the aborted one and commits.
LOG = (
    _data(0, 7, 2),
    _marker(2, 7, COMMIT),
    _data(3, 7),
    _data(4, 8),
    _data(5, 7),
    _marker(6, 7, ABORT),
    _marker(7, 8, COMMIT),
    _data(8, 7),
    _marker(9, 7, COMMIT),
)
ABORTED = (_aborted(7, 3, 6),)


def test_read_committed_drops_the_aborted_transaction_and_every_marker() -> None:
    v = visible_batches(LOG, 0, ABORTED, RC)
    assert _bases(v.batches) == [0, 4, 8]
    assert v.aborted_dropped == 2
    assert v.next_offset == 10


def test_read_uncommitted_keeps_aborted_data_and_skips_only_markers() -> None:
    v = visible_batches(LOG, 0, None, RU)
    assert _bases(v.batches) == [0, 3, 4, 5, 8]
    assert v.aborted_dropped == 0
    assert v.next_offset == 10


def test_an_aborted_list_is_ignored_under_read_uncommitted() -> None:
    assert visible_batches(LOG, 0, ABORTED, RU) == visible_batches(LOG, 0, None, RU)


def test_the_abort_marker_ends_the_aborted_transaction_so_the_producers_next_one_is_read() -> None:
    v = visible_batches(LOG, 6, ABORTED, RC)  # fetched from the ABORT marker on
    assert _bases(v.batches) == [8]
    assert v.aborted_dropped == 0


def test_a_producer_is_aborted_only_from_its_aborted_transactions_first_offset() -> None:
    log = (_data(0, 7), _marker(1, 7, COMMIT), _data(2, 7), _marker(3, 7, ABORT))
    v = visible_batches(log, 0, (_aborted(7, 2, 3),), RC)
    assert _bases(v.batches) == [0]
    assert v.aborted_dropped == 1


def test_non_transactional_batches_are_never_dropped_even_from_an_aborted_producer_id() -> None:
    log = (_data(0, 7), _data(1, 7, txn=False), _marker(2, 7, ABORT))
    v = visible_batches(log, 0, (_aborted(7, 0, 2),), RC)
    assert _bases(v.batches) == [1]
    assert v.aborted_dropped == 1


def test_batches_that_end_before_the_fetch_offset_are_skipped_and_one_that_spans_it_is_kept() -> None:
    v = visible_batches(LOG, 1, ABORTED, RC)
    assert _bases(v.batches) == [0, 4, 8]  # the batch 0-1 spans offset 1: the fetcher trims record 0
    v = visible_batches(LOG, 2, ABORTED, RC)
    assert _bases(v.batches) == [4, 8]


def test_the_position_moves_past_a_fetch_that_returned_only_markers_and_aborted_data() -> None:
    log = (_data(3, 7), _marker(4, 7, ABORT), _marker(5, 8, COMMIT))
    v = visible_batches(log, 3, (_aborted(7, 3, 4),), RC)
    assert v.batches == ()
    assert v.next_offset == 6


def test_an_empty_fetch_leaves_the_position_where_it_was() -> None:
    assert visible_batches((), 42, None, RC).next_offset == 42


# -- inside a consumer ------------------------------------------------------------------------


def test_a_consumer_drops_an_aborted_transaction_between_two_committed_ones() -> None:
    c = Cluster(seed=5, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=1, replication_factor=3)
    p = c.producer({"transactional.id": "tx", "linger.ms": 0})
    p.init_transactions()
    for value, commit in ((b"a", True), (b"x", False), (b"b", True)):
        p.begin_transaction()
        p.produce("t", value=value, partition=0)
        p.flush()
        if commit:
            p.commit_transaction()
        else:
            p.abort_transaction()

    def read(isolation: IsolationLevel) -> list[tuple[int, bytes]]:
        consumer = c.consumer({"isolation.level": isolation.value})
        consumer.assign([("t", 0)])
        out = []
        while got := consumer.consume(100, timeout=1.0):
            out.extend((m.offset(), m.value()) for m in got)
        assert consumer.position(consumer.assignment())[0].offset == 6  # past the last COMMIT marker
        return out

    # a@0 COMMIT@1 x@2 ABORT@3 b@4 COMMIT@5
    assert read(RC) == [(0, b"a"), (4, b"b")]
    assert c.world.trace.marks[ABORTED_BATCH_DROPPED] == 1
    assert read(RU) == [(0, b"a"), (2, b"x"), (4, b"b")]
    assert c.world.trace.marks[ABORTED_BATCH_DROPPED] == 1
