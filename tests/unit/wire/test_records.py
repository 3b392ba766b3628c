"""Record batches on the wire: ``engine.wire.records`` against kafka-python as an independent oracle.

Batches built by kafka-python's ``DefaultRecordBatchBuilder`` (plain, gzip, idempotent, transactional,
with headers, with null keys) must decode to the engine batch holding the same records; batches the
engine encodes must be read back by kafka-python's ``DefaultRecordBatch`` with the CRC valid and the
same records, control batches included. Malformed bytes (a flipped byte, a cut, a bad magic, bad
varints, lengths or offsets) must raise ``CorruptRecordError``. Batches compressed by aiokafka's
builder (gzip, xerial snappy, lz4, zstd) decode to their records; raw snappy too; compressed bytes
that do not inflate, an lz4 frame with linked blocks and an undefined codec raise
``UndecodableCompressionError``, and any codec without cramjam ``UnsupportedCompressionError``.
Malformed batches are framed by hand (``_frame``) with a correct CRC so that the check under test,
not the CRC, is what refuses them.
"""

from __future__ import annotations

import struct
import sys

import cramjam
import pytest
from aiokafka import codec as aiokafka_codec
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AiokafkaBatchBuilder
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from engine.log.records import ABORT, COMMIT, CONTROL_BATCH_BYTES, RecordBatch
from engine.wire import codecs
from engine.wire.records import (
    CorruptRecordError,
    UndecodableCompressionError,
    UnsupportedCompressionError,
    decode_batches,
    encode_batch,
    encode_batches,
    first_codec,
)

PROFILE = settings(derandomize=True, max_examples=100, deadline=None)

GZIP = DefaultRecordBatch.CODEC_GZIP

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def _kafka_python_batch(
    records: list[Record],
    *,
    compression: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    offsets: list[int] | None = None,
) -> bytes:
    """Build one v2 batch with kafka-python: records are (timestamp, key, value, headers)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 24,
    )
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(offsets[i] if offsets else i, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def _read_back(data: bytes) -> list[DefaultRecordBatch]:
    """Return kafka-python's view of concatenated batches, each checked for a valid CRC."""
    records = MemoryRecords(data)
    batches = []
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        batches.append(batch)
    return batches


def _records_of(batch: DefaultRecordBatch) -> list[Record]:
    """Return (timestamp, key, value, headers) of each record of a kafka-python batch."""
    return [(r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


def _frame(body: bytes, count: int, *, attributes: int = 0, last_delta: int | None = None, magic: int = 2) -> bytes:
    """Frame a hand-made records body as a v2 batch with a correct CRC32C."""
    tail = struct.pack(
        ">hiqqqhii", attributes, count - 1 if last_delta is None else last_delta, 0, 0, -1, -1, -1, count
    )
    crc = crc32c(tail + body)
    return struct.pack(">qiibI", 0, 49 + len(body), -1, magic, crc) + tail + body


def _varint(n: int) -> bytes:
    """Zigzag-encode ``n`` (the test's own writer, independent of the module's)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _record(offset_delta: int, key: bytes | None, value: bytes | None, tail: bytes = b"\x00") -> bytes:
    """Hand-encode one record: attributes, deltas, key, value, then ``tail`` (the headers)."""

    def field(x: bytes | None) -> bytes:
        return b"\x01" if x is None else _varint(len(x)) + x

    body = b"\x00" + _varint(0) + _varint(offset_delta) + field(key) + field(value) + tail
    return _varint(len(body)) + body


def _engine_records(batch: RecordBatch) -> list[Record]:
    """Return (timestamp, key, value, headers) of each record of an engine batch."""
    headers = batch.headers or ((),) * batch.count
    return [(batch.record_timestamp(i), batch.keys[i], batch.values[i], list(headers[i])) for i in range(batch.count)]


THREE: list[Record] = [
    (1_000, b"k0", b"v0", []),
    (1_005, b"k1", b"v1" * 40, []),
    (1_002, b"k2", b"", []),
]


# -- decoding kafka-python's batches --------------------------------------------------------------


def test_a_plain_kafka_python_batch_decodes_to_the_same_records_and_timestamps() -> None:
    [batch] = decode_batches(_kafka_python_batch(THREE))
    assert _engine_records(batch) == THREE
    assert batch.count == 3
    assert batch.create_time == 1_000
    assert batch.timestamps == (1_000, 1_005, 1_002)
    assert batch.headers is None
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert not batch.is_transactional
    assert not batch.is_control


def test_the_base_offset_and_leader_epoch_come_from_the_frame() -> None:
    data = bytearray(_kafka_python_batch(THREE))
    struct.pack_into(">q", data, 0, 4_242)  # base offset and leader epoch lie outside the CRC
    struct.pack_into(">i", data, 12, 7)
    [batch] = decode_batches(bytes(data))
    assert batch.base_offset == 4_242
    assert batch.partition_leader_epoch == 7
    assert batch.last_offset == 4_244


def test_a_gzip_batch_decodes_to_the_same_records_and_keeps_its_compressed_size() -> None:
    records: list[Record] = [(2_000 + i, None, b"same value " * 20, []) for i in range(30)]
    data = _kafka_python_batch(records, compression=GZIP)
    plain = _kafka_python_batch(records)
    [batch] = decode_batches(data)
    assert _engine_records(batch) == records
    assert batch.size_bytes == len(data) < len(plain)


def test_an_idempotent_batch_keeps_its_producer_id_epoch_and_sequences() -> None:
    data = _kafka_python_batch(THREE, producer_id=17, producer_epoch=3, base_sequence=40)
    [batch] = decode_batches(data)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (17, 3, 40)
    assert batch.last_sequence == 42
    assert not batch.is_transactional


def test_a_transactional_batch_is_flagged_transactional_and_not_control() -> None:
    data = _kafka_python_batch(THREE, transactional=True, producer_id=9, producer_epoch=0, base_sequence=0)
    [batch] = decode_batches(data)
    assert batch.is_transactional
    assert not batch.is_control
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 0, 0)


def test_headers_decode_per_record_as_str_keys_and_bytes_or_none_values() -> None:
    records: list[Record] = [
        (5, b"a", b"1", [("trace", b"t-1"), ("empty", b""), ("gone", None)]),
        (5, b"b", b"2", []),
        (5, b"c", b"3", [("ü-key", b"\x00\xff")]),
    ]
    [batch] = decode_batches(_kafka_python_batch(records))
    assert batch.headers == (
        (("trace", b"t-1"), ("empty", b""), ("gone", None)),
        (),
        (("ü-key", b"\x00\xff"),),
    )


def test_null_keys_and_values_decode_as_none_and_empty_ones_as_empty_bytes() -> None:
    records: list[Record] = [(1, None, b"v", []), (1, b"", None, []), (1, None, None, [])]
    [batch] = decode_batches(_kafka_python_batch(records))
    assert batch.keys == (None, b"", None)
    assert batch.values == (b"v", None, None)
    assert all(type(v) is bytes for v in (*batch.keys, *batch.values) if v is not None)


def test_concatenated_batches_decode_in_order_and_empty_bytes_to_none() -> None:
    first = _kafka_python_batch(THREE, producer_id=1, producer_epoch=0, base_sequence=0)
    second = _kafka_python_batch(THREE[:1], producer_id=1, producer_epoch=0, base_sequence=3)
    batches = decode_batches(first + second)
    assert [b.base_sequence for b in batches] == [0, 3]
    assert [b.size_bytes for b in batches] == [len(first), len(second)]
    assert decode_batches(b"") == []


def test_records_past_64_and_values_past_8_kib_use_multi_byte_varints_correctly() -> None:
    records: list[Record] = [
        (10_000 + 300 * i, None, bytes([i % 256]) * (20_000 if i == 70 else 3), []) for i in range(130)
    ]
    [batch] = decode_batches(_kafka_python_batch(records))
    assert _engine_records(batch) == records


# -- encoding for kafka-python --------------------------------------------------------------------


def test_an_encoded_batch_is_read_back_by_kafka_python_with_a_valid_crc_and_the_same_records() -> None:
    batch = RecordBatch(
        base_offset=100,
        producer_id=5,
        producer_epoch=2,
        base_sequence=11,
        partition_leader_epoch=4,
        is_transactional=True,
        create_time=7_000,
        keys=(b"a", None, b"c"),
        values=(b"x", b"y" * 300, None),
        headers=((("h", b"1"),), None, (("n", None),)),
        timestamps=(7_000, 6_990, 7_020),
    )
    [kp] = _read_back(encode_batches([batch]))
    assert (kp.base_offset, kp.leader_epoch, kp.last_offset) == (100, 4, 102)
    assert (kp.producer_id, kp.producer_epoch, kp.base_sequence) == (5, 2, 11)
    assert kp.is_transactional and not kp.is_control_batch
    assert (kp.first_timestamp, kp.max_timestamp) == (7_000, 7_020)
    assert _records_of(kp) == [
        (7_000, b"a", b"x", [("h", b"1")]),
        (6_990, None, b"y" * 300, []),
        (7_020, b"c", None, [("n", None)]),
    ]
    assert [r.offset for r in DefaultRecordBatch(bytearray(encode_batch(batch)))] == [100, 101, 102]


def test_engine_str_values_are_written_as_utf8_and_other_objects_as_their_repr() -> None:
    batch = RecordBatch(
        base_offset=0,
        keys=("clé", 42),
        values=({"order": 1}, "ünïcode"),
        headers=([("id", "e-1")], {"type": b"created"}),
        create_time=3,
    )
    [kp] = _read_back(encode_batch(batch))
    assert _records_of(kp) == [
        (3, "clé".encode(), b"{'order': 1}", [("id", b"e-1")]),
        (3, b"42", "ünïcode".encode(), [("type", b"created")]),
    ]


@pytest.mark.parametrize(("control_type", "kafka_type"), [(COMMIT, 1), (ABORT, 0)])
def test_an_encoded_marker_is_a_78_byte_control_batch_of_the_right_type(control_type: str, kafka_type: int) -> None:
    marker = RecordBatch.control(control_type, producer_id=12, producer_epoch=3, coordinator_epoch=9, create_time=50)
    data = encode_batch(marker.assigned(base_offset=31, partition_leader_epoch=2))
    [kp] = _read_back(data)
    assert len(data) == CONTROL_BATCH_BYTES
    assert kp.is_control_batch and kp.is_transactional
    assert (kp.base_offset, kp.producer_id, kp.producer_epoch, kp.base_sequence) == (31, 12, 3, -1)
    [record] = list(kp)
    assert (record.version, record.type) == (0, kafka_type)
    assert struct.unpack(">hi", record.value) == (0, 9)


def test_an_encoded_marker_decodes_back_to_the_same_marker() -> None:
    marker = RecordBatch.control(ABORT, producer_id=12, producer_epoch=3, coordinator_epoch=9, create_time=50)
    [back] = decode_batches(encode_batch(marker.assigned(base_offset=8, partition_leader_epoch=1)))
    assert back.is_control and back.is_transactional
    assert (back.control_type, back.coordinator_epoch) == (ABORT, 9)
    assert (back.base_offset, back.producer_id, back.producer_epoch, back.base_sequence) == (8, 12, 3, -1)
    assert (back.keys, back.values, back.create_time) == ((None,), (None,), 50)
    assert back.size_bytes == CONTROL_BATCH_BYTES


def test_a_hand_made_commit_marker_decodes_with_its_type_and_coordinator_epoch() -> None:
    body = _record(0, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 77))
    [batch] = decode_batches(_frame(body, 1, attributes=0x30))
    assert (batch.is_control, batch.control_type, batch.coordinator_epoch) == (True, COMMIT, 77)


def test_a_batch_without_timestamps_is_stamped_with_its_create_time() -> None:
    batch = RecordBatch(base_offset=0, keys=(None, None), values=(b"a", b"b"), create_time=123)
    [kp] = _read_back(encode_batch(batch))
    assert [r.timestamp for r in kp] == [123, 123]


def test_reencoding_a_decoded_kafka_python_batch_gives_back_the_same_bytes() -> None:
    records: list[Record] = [(9_000 + i, b"k%d" % i, b"v" * i, [("h", b"%d" % i)] if i % 3 else []) for i in range(70)]
    data = _kafka_python_batch(records, transactional=True, producer_id=4, producer_epoch=1, base_sequence=5)
    assert encode_batches(decode_batches(data)) == data


def test_encoding_several_batches_concatenates_them() -> None:
    a = RecordBatch(base_offset=0, keys=(None,), values=(b"a",), create_time=1)
    b = RecordBatch(base_offset=1, keys=(None,), values=(b"b",), create_time=2)
    assert encode_batches([a, b]) == encode_batch(a) + encode_batch(b)
    assert [kp.base_offset for kp in _read_back(encode_batches([a, b]))] == [0, 1]


# -- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", [21, 30, 60, 61, -1])
def test_a_flipped_byte_in_the_crc_covered_part_is_corrupt(where: int) -> None:
    data = bytearray(_kafka_python_batch(THREE))
    data[where] ^= 0x40
    with pytest.raises(CorruptRecordError, match="CRC32C"):
        decode_batches(bytes(data))


@pytest.mark.parametrize("keep", [1, 5, 16, 17, 60, 61, -1])
def test_a_truncated_batch_is_corrupt(keep: int) -> None:
    data = _kafka_python_batch(THREE)
    with pytest.raises(CorruptRecordError, match="truncated"):
        decode_batches(data[:keep])
    with pytest.raises(CorruptRecordError, match="truncated"):
        decode_batches(data + data[:keep])


@pytest.mark.parametrize("magic", [0, 1, 3])
def test_a_magic_other_than_2_is_corrupt(magic: int) -> None:
    data = bytearray(_kafka_python_batch(THREE))
    data[16] = magic
    with pytest.raises(CorruptRecordError, match=f"magic {magic}"):
        decode_batches(bytes(data))


CODECS = [(1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")]


def _aiokafka_batch(records: list[Record], compression: int) -> bytes:
    """Build one v2 batch with aiokafka's builder (its codecs are cramjam's, snappy xerial-framed)."""
    builder = AiokafkaBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    for i, (ts, key, value, headers) in enumerate(records):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


@pytest.mark.parametrize(("codec", "name"), CODECS)
def test_a_batch_compressed_by_aiokafka_decodes_to_the_same_records(codec: int, name: str) -> None:
    records = [(1_700_000_000_000 + i, f"k{i}".encode(), f"{name}-{i}".encode() * 20, []) for i in range(30)]
    data = _aiokafka_batch(records, codec)
    assert data[22] & 0x07 == codec, "aiokafka wrote the batch uncompressed"
    [batch] = decode_batches(data)
    assert batch.values == tuple(r[2] for r in records)
    assert batch.keys == tuple(r[1] for r in records)
    assert batch.size_bytes == len(data)


def test_snappy_is_read_raw_as_well_as_xerial_framed_over_several_blocks() -> None:
    body = b"".join(_record(i, None, bytes([65 + i % 26]) * 3000) for i in range(40))  # > 32 KiB: 4 blocks
    raw = bytes(cramjam.snappy.compress_raw(body))
    xerial = codecs.compress(2, body)
    assert xerial.startswith(b"\x82SNAPPY\x00") and len(body) > 3 * 32 * 1024
    for payload in (raw, xerial, aiokafka_codec.snappy_encode(body, xerial_blocksize=1024)):
        [batch] = decode_batches(_frame(payload, 40, attributes=2))
        assert [len(v) for v in batch.values] == [3000] * 40


@pytest.mark.parametrize(("codec", "name"), CODECS)
def test_bytes_that_do_not_inflate_are_undecodable(codec: int, name: str) -> None:
    with pytest.raises(UndecodableCompressionError, match=f"{name} payload that does not inflate") as caught:
        decode_batches(_frame(b"\x00\x01 not a compressed stream at all", 1, attributes=codec))
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, CorruptRecordError)


def test_a_xerial_block_longer_than_what_is_left_is_undecodable() -> None:
    payload = codecs.compress(2, _record(0, None, b"v" * 100))
    with pytest.raises(UndecodableCompressionError, match="xerial block"):
        decode_batches(_frame(payload[:-5], 1, attributes=2))


def test_an_lz4_frame_with_linked_blocks_is_refused_as_kafka_refuses_it() -> None:
    body = _record(0, None, b"v" * 100)
    linked = bytes(cramjam.lz4.compress(body))  # cramjam's default frame links its blocks
    assert not linked[4] & 0x20
    with pytest.raises(UndecodableCompressionError, match="dependent"):
        decode_batches(_frame(linked, 1, attributes=3))
    [batch] = decode_batches(_frame(codecs.compress(3, body), 1, attributes=3))
    assert batch.values == (b"v" * 100,)


def test_an_undefined_codec_is_undecodable() -> None:
    with pytest.raises(UndecodableCompressionError, match="codec 5"):
        decode_batches(_frame(_record(0, None, b"v"), 1, attributes=5))


def test_without_cramjam_a_compressed_batch_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cramjam", None)  # an absent package: import raises ImportError
    data = _frame(b"any bytes: the codec is not reached", 1, attributes=3)
    with pytest.raises(UnsupportedCompressionError, match="lz4 codec needs the cramjam package"):
        decode_batches(data)


def test_first_codec_reads_the_attributes_of_the_first_batch() -> None:
    assert first_codec(_frame(b"x", 1, attributes=4 | 0x10)) == 4
    assert first_codec(_frame(b"x", 1)) == 0
    assert first_codec(b"\x00" * 10) is None


def test_a_gzip_payload_that_does_not_inflate_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="gzip"):
        decode_batches(_frame(b"\x1f\x8b not really gzip", 1, attributes=GZIP))


def test_a_record_count_that_disagrees_with_the_last_offset_delta_is_corrupt() -> None:
    data = _kafka_python_batch(THREE[:2], offsets=[0, 2])
    with pytest.raises(CorruptRecordError, match="last offset delta of 2"):
        decode_batches(data)


def test_a_record_whose_offset_delta_is_not_its_index_is_corrupt() -> None:
    data = _kafka_python_batch(THREE[:2], offsets=[1, 1])
    with pytest.raises(CorruptRecordError, match="record 0 has offset delta 1"):
        decode_batches(data)


def test_a_batch_without_records_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="0 records"):
        decode_batches(_frame(b"", 0))


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"\xff" * 11, "varint runs past 10 bytes"),
        (_record(0, None, b"v")[:-2], "truncated"),
        (_varint(5) + b"\x00\x00\x00" + _varint(-2) + b"\x01\x00", "length -2"),
        (_record(0, None, b"v") + b"\x00\x00", "2 bytes follow"),
        (_varint(9) + _record(0, None, b"v")[1:], "declares 9 bytes but holds 7"),
        (_record(0, None, b"v", tail=_varint(1) + b"\x01" + b"\x01"), "null key"),
        (_record(0, None, b"v", tail=_varint(1) + _varint(2) + b"\xff\xfe" + b"\x01"), "not UTF-8"),
        (_record(0, None, b"v", tail=_varint(-3)), "header count of -3"),
    ],
    ids=[
        "long-varint",
        "cut-record",
        "negative-length",
        "trailing",
        "length-mismatch",
        "null-header-key",
        "bad-header-key",
        "negative-header-count",
    ],
)
def test_a_malformed_record_is_corrupt_with_a_one_line_reason(body: bytes, match: str) -> None:
    with pytest.raises(CorruptRecordError, match=match) as caught:
        decode_batches(_frame(body, 1))
    assert "\n" not in str(caught.value)
    assert caught.value.__cause__ is None


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        (struct.pack(">hh", 0, 2), struct.pack(">hi", 0, 1), "type 2"),
        (b"\x00", struct.pack(">hi", 0, 1), "4-byte key"),
        (struct.pack(">hh", 0, 1), b"\x00\x00", "shorter than 6 bytes"),
    ],
)
def test_a_control_batch_without_a_valid_end_transaction_marker_is_corrupt(
    key: bytes, value: bytes, match: str
) -> None:
    with pytest.raises(CorruptRecordError, match=match):
        decode_batches(_frame(_record(0, key, value), 1, attributes=0x30))


# -- round trips ----------------------------------------------------------------------------------

maybe_bytes = st.none() | st.binary(max_size=300)
header_lists = st.lists(st.tuples(st.text(max_size=8), maybe_bytes), max_size=3)
records_strategy = st.lists(
    st.tuples(st.integers(0, 2**41), maybe_bytes, maybe_bytes, header_lists), min_size=1, max_size=50
)


@PROFILE
@given(records=records_strategy, producer=st.sampled_from([(-1, -1, -1), (3, 0, 0), (2**40, 7, 2**31 - 60)]))
def test_any_kafka_python_batch_decodes_to_its_records_and_reencodes_to_the_same_bytes(
    records: list[Record], producer: tuple[int, int, int]
) -> None:
    pid, epoch, seq = producer
    data = _kafka_python_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    [batch] = decode_batches(data)
    assert _engine_records(batch) == [(ts, k, v, list(h)) for ts, k, v, h in records]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.headers is None or len(batch.headers) == len(records)
    assert encode_batch(batch) == data


@PROFILE
@given(records=records_strategy, base_offset=st.integers(0, 2**40))
def test_any_engine_batch_is_read_back_by_kafka_python_and_decodes_to_itself(
    records: list[Record], base_offset: int
) -> None:
    batch = RecordBatch(
        base_offset=base_offset,
        keys=tuple(k for _, k, _, _ in records),
        values=tuple(v for _, _, v, _ in records),
        headers=tuple(tuple(h) for *_, h in records),
        timestamps=tuple(ts for ts, *_ in records),
        create_time=records[0][0],
    )
    data = encode_batch(batch)
    [kp] = _read_back(data)
    read = list(kp)
    assert [(r.timestamp, r.key, r.value, list(r.headers)) for r in read] == _engine_records(batch)
    assert [r.offset for r in read] == list(range(base_offset, base_offset + len(records)))
    [back] = decode_batches(data)
    assert _engine_records(back) == _engine_records(batch)
    assert (back.base_offset, back.size_bytes) == (base_offset, len(data))
