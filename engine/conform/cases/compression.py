"""Compression cases: a confluent-kafka producer per codec (gzip, snappy, lz4, zstd) and a transactional lz4 one.

Each value is long and repetitive, so librdkafka really compresses the batch (it sends a batch
uncompressed when compression would not make it smaller). What is recorded is what a client sees:
the delivery reports' offsets and the values read back under read_committed and read_uncommitted.
"""

from __future__ import annotations

from engine.conform.case import Ctx, case
from engine.conform.cases.common import CALL_S, make_topic, read_partition, send
from engine.conform.cases.txn import transactional

CODECS = ("gzip", "snappy", "lz4", "zstd")
#: Records per burst, and the filler that makes each value compress well.
COUNT = 20
FILLER = "x" * 100


def _values(prefix: str) -> list[str]:
    return [f"{prefix}-{i}-{FILLER}" for i in range(COUNT)]


def _codec_case(codec: str) -> None:
    @case(
        f"compression.{codec}",
        "compression",
        f"compression.type={codec}: offsets 0..n-1, every value read back under both isolations",
    )
    def run(ctx: Ctx) -> None:
        topic = make_topic(ctx, codec[:2])
        producer = ctx.producer(**{"compression.type": codec, "enable.idempotence": True, "linger.ms": 20})
        ctx.observe("offsets", send(producer, topic, _values(codec)))
        ctx.observe("read_committed", read_partition(ctx, topic, min_records=COUNT))
        ctx.observe("read_uncommitted", read_partition(ctx, topic, isolation="read_uncommitted"))


for _codec in CODECS:
    _codec_case(_codec)


@case(
    "compression.txn-lz4",
    "compression",
    "a transactional lz4 producer: one transaction committed, one aborted; read under both isolations",
)
def txn_lz4(ctx: Ctx) -> None:
    topic = make_topic(ctx, "tl")
    producer = transactional(ctx, "lz4", **{"compression.type": "lz4", "linger.ms": 20})
    producer.begin_transaction()
    ctx.observe("committed-offsets", send(producer, topic, _values("c")))
    ctx.attempt("commit", producer.commit_transaction, CALL_S)
    producer.begin_transaction()
    ctx.observe("aborted-offsets", send(producer, topic, _values("a")))
    ctx.attempt("abort", producer.abort_transaction, CALL_S)
    ctx.observe("read_committed", read_partition(ctx, topic, min_records=COUNT))
    ctx.observe("read_uncommitted", read_partition(ctx, topic, isolation="read_uncommitted"))
