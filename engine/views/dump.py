"""Text dumps that read like ``kafka-dump-log.sh``: a log segment, a txn index, a snapshot.

The batch and record lines follow ``DumpLogSegments.scala`` (views.md §3.2) field for field:
``baseOffset lastOffset count baseSequence lastSequence producerId producerEpoch
partitionLeaderEpoch isTransactional isControl deleteHorizonMs position CreateTime size magic
compresscodec crc isvalid``, then ``| offset: … CreateTime: … keySize: … valueSize: … sequence: …
headerKeys: [...]`` with ``key:``/``payload:`` for data and ``endTxnMarker: … coordinatorEpoch:``
for markers. ``crc`` is a CRC-32C-like checksum computed over the batch's fields (not Kafka's
byte encoding, which the simulation does not have); ``size`` is the estimate the engine uses.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

from engine.log.records import RecordBatch
from engine.views import lookup

if TYPE_CHECKING:
    from engine.log.producer_state import ProducerSnapshot
    from engine.views.lookup import ClusterState


def _show(x: Any) -> str:
    if isinstance(x, bytes):
        return x.decode("utf-8", errors="replace")
    return str(x)


def _len(x: Any) -> int:
    if x is None:
        return -1
    if isinstance(x, (bytes, str)):
        return len(x.encode() if isinstance(x, str) else x)
    return len(str(x))


def _crc(b: RecordBatch) -> int:
    text = f"{b.base_offset}|{b.producer_id}|{b.producer_epoch}|{b.base_sequence}|{b.values!r}|{b.control_type}"
    return zlib.crc32(text.encode())


def batch_line(b: RecordBatch, position: int) -> str:
    """Return the batch header line."""
    return (
        f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.count} baseSequence: {b.base_sequence} "
        f"lastSequence: {b.last_sequence} producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
        f"partitionLeaderEpoch: {b.partition_leader_epoch} isTransactional: {str(b.is_transactional).lower()} "
        f"isControl: {str(b.is_control).lower()} deleteHorizonMs: OptionalLong.empty position: {position} "
        f"CreateTime: {b.create_time} size: {b.size_bytes} magic: 2 compresscodec: none crc: {_crc(b)} isvalid: true"
    )


def record_lines(b: RecordBatch, *, print_data: bool = True) -> list[str]:
    """Return the ``| offset: …`` lines of a batch."""
    if b.is_control:
        line = (
            f"| offset: {b.base_offset} CreateTime: {b.create_time} keySize: 4 valueSize: 6 sequence: -1 "
            f"headerKeys: [] endTxnMarker: {b.control_type} coordinatorEpoch: {b.coordinator_epoch}"
        )
        return [line]
    out = []
    for i, v in enumerate(b.values):
        k = b.keys[i]
        seq = b.base_sequence + i if b.base_sequence >= 0 else -1
        headers = b.headers[i] if b.headers else None
        header_keys = ",".join(_show(h[0]) for h in headers) if headers else ""
        line = (
            f"| offset: {b.base_offset + i} CreateTime: {b.record_timestamp(i)} keySize: {_len(k)} "
            f"valueSize: {_len(v)} sequence: {seq} headerKeys: [{header_keys}]"
        )
        if print_data:
            if k is not None:
                line += f" key: {_show(k)}"
            if v is not None:
                line += f" payload: {_show(v)}"
        out.append(line)
    return out


def dump_batches(batches: list[RecordBatch], file_name: str, *, print_data: bool = True) -> str:
    """Return the dump of a list of batches as one segment file."""
    base = batches[0].base_offset if batches else 0
    lines = [f"Dumping {file_name}", f"Log starting offset: {base}"]
    position = 0
    for b in batches:
        lines.append(batch_line(b, position))
        lines.extend(record_lines(b, print_data=print_data))
        position += b.size_bytes
    return "\n".join(lines)


def dump_log(
    cluster: ClusterState, topic: str, partition: int = 0, broker: int | None = None, *, print_data: bool = True
) -> str:
    """Dump one replica's log (the leader's by default) like ``kafka-dump-log.sh --print-data-log``.

    The log is read from the broker's disk, so a crashed broker's replica can be dumped. Raises as
    :func:`~engine.views.lookup.hosting_broker` does.
    """
    b = lookup.hosting_broker(cluster, topic, partition, broker)
    log = cluster.brokers[b].disk.get(f"log:{topic}-{partition}")
    batches = list(log.batches) if log is not None else []
    return dump_batches(
        batches,
        f"/var/lib/kafka/data-{b}/{topic}-{partition}/00000000000000000000.log",
        print_data=print_data,
    )


def dump_snapshot(snapshot: ProducerSnapshot) -> str:
    """Dump a producer-state snapshot like ``kafka-dump-log.sh`` on a ``.snapshot`` file."""
    lines = [f"Dumping {snapshot.offset:020d}.snapshot"]
    for e in snapshot.entries:
        txn = (
            f"OptionalLong[{e.current_txn_first_offset}]"
            if e.current_txn_first_offset is not None
            else "OptionalLong.empty"
        )
        lines.append(
            f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {txn} lastTimestamp: {e.last_timestamp} firstSequence: {e.first_sequence} "
            f"lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
            f"offsetDelta: {e.last_sequence - e.first_sequence} "
            f"timestamp: {e.timestamp}"
        )
    return "\n".join(lines)
