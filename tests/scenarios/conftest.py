"""Helpers for deterministic scenario tests: a raw client that sends hand-made requests."""

from __future__ import annotations

from typing import Any

import pytest

from engine.log.records import RecordBatch
from engine.protocol import InitProducerIdRequest, ProducePartition, ProduceRequest
from engine.rpc import RpcNode


class RawClient(RpcNode):
    """A test client that sends requests exactly as written and keeps every response."""

    def __init__(self, world: Any, name: str = "raw-client") -> None:
        super().__init__(world, name)
        self.responses: list[Any] = []

    def call(self, dst: str, body: Any, timeout_ms: int = 2_000) -> list[Any]:
        """Send one request; the returned list gets the response (or None) when it comes."""
        box: list[Any] = []

        def done(resp: Any) -> None:
            box.append(resp)
            self.responses.append(resp)

        self.request(dst, body, done, timeout_ms=timeout_ms)
        return box


def data_batch(pid: int, epoch: int, seq: int, values: list[bytes], *, transactional: bool = False) -> RecordBatch:
    """Build a producer batch as an idempotent producer would send it."""
    return RecordBatch(
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
        keys=tuple(None for _ in values),
        values=tuple(values),
    )


def produce_request(topic: str, partition: int, batch: RecordBatch) -> ProduceRequest:
    """Wrap a batch in an acks=all produce request of one partition (its answer: ``.partitions[0]``)."""
    return ProduceRequest((ProducePartition(topic, partition, batch),), acks=-1, timeout_ms=5_000)


def init_pid(cluster: Any, client: RawClient) -> tuple[int, int]:
    """Get a producer id from broker 1."""
    box = client.call("broker-1", InitProducerIdRequest())
    cluster.run_until(lambda: bool(box))
    return box[0].producer_id, box[0].producer_epoch


def log_values(cluster: Any, topic: str, partition: int = 0, broker: int | None = None) -> list[Any]:
    """Return every data record value in a replica's log, in offset order (markers skipped)."""
    b = broker if broker is not None else cluster.leader(topic, partition)
    log = cluster.brokers[b].disk.get(f"log:{topic}-{partition}")
    return [v for batch in log.batches if not batch.is_control for v in batch.values]


@pytest.fixture
def raw_client_factory() -> Any:
    """Return the RawClient class."""
    return RawClient
