"""Scenarios of producer-state recovery on a broker restart: snapshots, the log, the dedup window.

A hand-driven client sends exact batches (producer id, epoch, sequence) so the tests can retry
any batch at any moment. One broker and a topic with one replica keep the restarted broker the
leader, so every retry meets the rebuilt state.
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.errors import ErrorCode
from engine.views.dump import dump_snapshot
from tests.scenarios.conftest import RawClient, data_batch, init_pid, log_values, produce_request


def _setup(segment_bytes: int | None = None) -> tuple[Cluster, RawClient, int]:
    config: dict[str, Any] = {}
    if segment_bytes is not None:
        config["log.segment.bytes"] = segment_bytes
    c = Cluster(seed=5, brokers=1, config=config)
    c.create_topic("t", partitions=1, replication_factor=1)
    client = RawClient(c.world)
    pid, _epoch = init_pid(c, client)
    return c, client, pid


def _send(c: Cluster, client: RawClient, pid: int, seq: int) -> Any:
    box = client.call("broker-1", produce_request("t", 0, data_batch(pid, 0, seq, [f"s{seq}".encode()])))
    c.run_until(lambda: bool(box))
    return box[0].partitions[0]


def _restart(c: Cluster, *, clean: bool) -> None:
    if clean:
        c.brokers[1].clean_shutdown()
    else:
        c.crash(1)
    c.restart(1)
    c.run_until(lambda: c.brokers[1].replicas.get(("t", 0)) is not None and c.brokers[1].replicas[("t", 0)].is_leader)


def test_retry_of_any_of_the_last_five_batches_is_deduplicated_before_a_restart() -> None:
    c, client, pid = _setup()
    offsets = [_send(c, client, pid, seq).base_offset for seq in range(5)]
    for seq in range(5):
        resp = _send(c, client, pid, seq)
        assert (resp.error, resp.base_offset, resp.duplicate) == (ErrorCode.NONE, offsets[seq], True)
    assert log_values(c, "t") == [f"s{i}".encode() for i in range(5)]


def test_clean_restart_loads_a_snapshot_that_keeps_only_the_last_batch_so_the_window_is_one_deep() -> None:
    c, client, pid = _setup()
    offsets = [_send(c, client, pid, seq).base_offset for seq in range(5)]
    _restart(c, clean=True)
    table = c.producer_state("t")
    assert [len(e.window) for e in table.producers] == [1]
    last = _send(c, client, pid, 4)  # the newest batch is still known
    assert (last.error, last.base_offset) == (ErrorCode.NONE, offsets[4])
    older = _send(c, client, pid, 2)  # before the restart this was a duplicate; now it is unknown
    assert older.error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "2 (incoming seq. number), 4 (current end sequence number)" in older.error_message
    assert log_values(c, "t") == [f"s{i}".encode() for i in range(5)]  # nothing written twice
    snapshot = c.brokers[1].disk.get("snapshots:t-0").items[-1]
    assert f"producerId: {pid} producerEpoch: 0" in dump_snapshot(snapshot)
    assert "firstSequence: 4 lastSequence: 4 lastOffset: 4" in dump_snapshot(snapshot)


def test_crash_restart_rebuilds_from_the_latest_snapshot_plus_the_log_and_still_deduplicates_a_retry() -> None:
    c, client, pid = _setup(segment_bytes=300)  # a segment rolls (and a snapshot is written) every 5 batches
    offsets = [_send(c, client, pid, seq).base_offset for seq in range(8)]
    snapshots = c.brokers[1].disk.get("snapshots:t-0").items
    assert [s.offset for s in snapshots] == [5]  # batches 5.. must come from the log replay
    # The answer to batch 8 is lost; the broker crashes; the retry reaches the restarted broker.
    c.add_rule("drop", kind="response", body_type="ProduceResponse", count=1)
    lost = client.call("broker-1", produce_request("t", 0, data_batch(pid, 0, 8, [b"s8"])), timeout_ms=500)
    c.run_until(lambda: bool(lost))
    assert lost == [None]
    _restart(c, clean=False)
    retry = _send(c, client, pid, 8)
    assert (retry.error, retry.base_offset, retry.duplicate) == (ErrorCode.NONE, 8, True)
    window = c.producer_state("t").producers[0].window
    assert [w.first_sequence for w in window] == [4, 5, 6, 7, 8]  # rebuilt deeper than the snapshot
    assert offsets == list(range(8))
    assert log_values(c, "t") == [f"s{i}".encode() for i in range(9)]


def test_unknown_producer_with_a_nonzero_sequence_is_answered_unknown_producer_id() -> None:
    c, client, _pid = _setup()
    resp = _send(c, client, 424242, 7)
    assert resp.error is ErrorCode.UNKNOWN_PRODUCER_ID
    assert log_values(c, "t") == []


def test_stale_epoch_is_answered_invalid_producer_epoch() -> None:
    c, client, pid = _setup()
    box = client.call("broker-1", produce_request("t", 0, data_batch(pid, 3, 0, [b"new"])))
    c.run_until(lambda: bool(box))
    assert box[0].partitions[0].error is ErrorCode.NONE
    box = client.call("broker-1", produce_request("t", 0, data_batch(pid, 2, 1, [b"old"])))
    c.run_until(lambda: bool(box))
    assert box[0].partitions[0].error is ErrorCode.INVALID_PRODUCER_EPOCH
    assert log_values(c, "t") == [b"new"]


def test_expired_producer_state_makes_the_client_bump_its_epoch_and_resend_without_loss_or_duplicate() -> None:
    c = Cluster(
        seed=5, brokers=1, config={"producer.id.expiration.ms": 1_000, "producer.id.expiration.check.interval.ms": 100}
    )
    c.create_topic("t", partitions=1, replication_factor=1)
    p = c.producer({"linger.ms": 0})
    got: list[Any] = []
    p.produce("t", value=b"before", on_delivery=lambda e, m: got.append(e))
    p.flush()
    c.run_for(2_000)  # idle past producer.id.expiration.ms: the broker forgets the producer
    assert c.world.trace.select(name="producer.expired")
    assert c.producer_state("t").producers == ()
    p.produce("t", value=b"after", on_delivery=lambda e, m: got.append(e))
    p.flush()
    assert got == [None, None]  # both delivered: the UNKNOWN_PRODUCER_ID answer was handled (KIP-360)
    assert c.world.trace.marks["producer: unknown producer id, epoch bumped and batch resent"] == 1
    assert log_values(c, "t") == [b"before", b"after"]
    assert p.producer_epoch == 1
