"""Producer-id allocation (Kafka's ``ProducerIdManager`` and its ``AllocateProducerIds`` blocks).

Every idempotent producer, and every transactional id's coordinator, needs producer ids that no
other producer in the cluster ever got. Kafka's controller hands each broker blocks of 1,000 ids;
here each broker owns an interleaved range instead (block ``k`` of broker ``b`` is
``k * MAX_BROKERS + b``), which keeps ids unique without a round trip to the controller. The
next free id is durable: it lives on the broker's disk, so a restarted broker never hands out
an id twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.sim.disk import Disk

#: Ids per block, as Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``.
PRODUCER_ID_BLOCK_SIZE = 1000
#: Brokers the interleaving leaves room for.
MAX_BROKERS = 100


class ProducerIdBlock:
    """The durable producer-id allocator state of one broker."""

    __slots__ = ("end_id", "next_block", "next_id")

    def __init__(self) -> None:
        self.next_block = 0
        self.next_id = 0
        self.end_id = 0


def allocate_producer_id(disk: Disk, broker_id: int) -> int:
    """Hand out a new producer id from this broker's durable block, opening a new block when spent."""
    block: ProducerIdBlock = disk.open("producer-id-block", ProducerIdBlock)
    if block.next_id >= block.end_id:
        index = block.next_block * MAX_BROKERS + broker_id
        block.next_block += 1
        block.next_id = index * PRODUCER_ID_BLOCK_SIZE
        block.end_id = block.next_id + PRODUCER_ID_BLOCK_SIZE
    producer_id = block.next_id
    block.next_id += 1
    return producer_id
