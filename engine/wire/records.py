"""Kafka record batches (magic v2) on the wire, to and from the engine's :class:`RecordBatch`.

A Produce request carries its records as one or more concatenated v2 batches, and a Fetch response
answers with the same layout; this module is the only place that reads or writes it. The layout is
Kafka's ``DefaultRecordBatch``: a 61-byte header (base offset, batch length, partition leader epoch,
magic, CRC32C, attributes, last offset delta, first and max timestamps, producer id, epoch, base
sequence, record count), then the records, each a varint length, attributes, timestamp and offset
deltas, a key, a value and headers, with zigzag varints and ``-1`` as the length of null.

:func:`decode_batches` checks what a broker checks before it appends (magic, length, CRC32C, the
record count against the offset range, every record's own length) and raises
:class:`CorruptRecordError` (Kafka's CORRUPT_MESSAGE) on any breach;
:func:`encode_batches` writes the engine's batches back, uncompressed, with a correct CRC.

What is simplified
------------------
- Compression: gzip, snappy, lz4 and zstd batches are inflated by :mod:`engine.wire.codecs`;
  bytes that do not inflate, or a codec id Kafka does not define, raise
  :class:`UndecodableCompressionError` (Kafka 4.4 answers UNKNOWN_SERVER_ERROR), and
  without the codec library (cramjam) a compressed batch raises
  :class:`UnsupportedCompressionError` (Kafka's UNSUPPORTED_COMPRESSION_TYPE). Encoding never
  compresses: a Fetch answers uncompressed batches (docs/wire.md says why). A payload is
  inflated whole, without a size cap.
- Offsets are implicit in an engine batch, so a batch whose record offset deltas are not
  ``0 .. count - 1`` is refused as corrupt (Kafka refuses the same on produce); so is a batch
  with no records.
- The timestamp-type bit (LogAppendTime) and the delete-horizon bit are read past and never
  written: the engine's timestamps are create times.
- A control batch must hold one end-transaction marker (COMMIT or ABORT); other control record
  types (KRaft's) are refused. Marker key and value versions above 0 are read like version 0.
- Keys and values that an engine-internal producer left as Python objects are written as text:
  ``str`` as UTF-8, ``bytes`` as is, None as null, anything else as ``repr(x).encode()``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crc32c import crc32c

from engine.log.records import ABORT, COMMIT, RecordBatch, none_keys
from engine.wire import codecs

__all__ = [
    "CorruptRecordError",
    "UndecodableCompressionError",
    "UnsupportedCompressionError",
    "decode_batches",
    "encode_batch",
    "encode_batches",
    "first_codec",
]


class CorruptRecordError(ValueError):
    """A record batch that is not well-formed v2: bad magic, length, CRC, varint or record layout."""


class UndecodableCompressionError(CorruptRecordError):
    """A compressed batch that cannot be inflated: bytes not of its codec, or a codec id Kafka lacks.

    Kafka 4.4 answers these UNKNOWN_SERVER_ERROR, not CORRUPT_MESSAGE: ``CompressionType.forId``
    throws ``IllegalArgumentException`` and the codec streams a ``KafkaException``, neither of which
    ``ReplicaManager.appendToLocalLog`` maps to an error of its own.
    """


class UnsupportedCompressionError(ValueError):
    """A record batch compressed with a codec whose library (cramjam) is not installed here."""


#: baseOffset, batchLength, partitionLeaderEpoch, magic: enough to tell a v2 batch from older ones.
_PREFIX = struct.Struct(">qiib")
#: The whole v2 header, 61 bytes (Kafka's RECORD_BATCH_OVERHEAD).
_HEADER = struct.Struct(">qiibIhiqqqhii")
#: The header from the attributes on (what the CRC covers, with the records).
_TAIL = struct.Struct(">hiqqqhii")
#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc.
_HEAD = struct.Struct(">qiibI")
#: Bytes before the batch length counts: baseOffset and batchLength.
_LOG_OVERHEAD = 12
#: Where the CRC-covered part begins: the attributes.
_CRC_FROM = 21
_HEADER_SIZE = _HEADER.size
_MAGIC = 2

_CODEC_MASK = 0x07
_TRANSACTIONAL = 0x10
_CONTROL = 0x20

#: A control record's key (version, type) and value (version, coordinator epoch).
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
_CONTROL_TYPES = {0: ABORT, 1: COMMIT}
_CONTROL_CODES = {ABORT: 0, COMMIT: 1}

#: Values of the one-byte zigzag varints 0x00 .. 0x7F.
_UNZIG = [(b >> 1) ^ -(b & 1) for b in range(0x80)]


# -- decode ---------------------------------------------------------------------------------


def decode_batches(data: bytes | bytearray | memoryview) -> list[RecordBatch]:
    """Decode concatenated v2 record batches (a Produce request's ``records``) into engine batches.

    Parameters
    ----------
    data
        The batches, back to back; empty bytes give no batch.

    Returns
    -------
    list[RecordBatch]
        One engine batch per wire batch, in order, with the wire's base offset, producer fields,
        per-record timestamps and ``size_bytes`` set to the batch's encoded (compressed) size.

    Raises
    ------
    UndecodableCompressionError
        A batch names a codec id Kafka does not define, or its compressed bytes do not inflate
        (a :class:`CorruptRecordError`, which Kafka answers UNKNOWN_SERVER_ERROR).
    CorruptRecordError
        A batch is truncated, has a magic other than 2, fails its CRC32C, or its records do not
        parse (bad varint, length, offset delta, header key, control record).
    UnsupportedCompressionError
        A batch is compressed and the codec library (cramjam) is not installed.
    """
    buf = data if isinstance(data, bytes) else bytes(data)
    view = memoryview(buf)
    batches = []
    pos = 0
    n = len(buf)
    while pos < n:
        batch, pos = _decode_batch(buf, view, pos)
        batches.append(batch)
    return batches


def first_codec(data: bytes | bytearray | memoryview) -> int | None:
    """Return the codec id (0 none .. 4 zstd) of the first batch in ``data``, None if too short to say."""
    if len(data) <= _CRC_FROM + 1:
        return None
    return data[_CRC_FROM + 1] & _CODEC_MASK  # the low byte of the big-endian attributes


def _decode_batch(buf: bytes, view: memoryview, pos: int) -> tuple[RecordBatch, int]:
    """Decode the batch at ``pos``; return it and the position just past it."""
    end = _frame_end(buf, pos)
    base_offset, _, leader_epoch, _, crc, attributes, last_delta, first_ts, _, pid, epoch, sequence, count = (
        _HEADER.unpack_from(buf, pos)
    )
    computed = crc32c(view[pos + _CRC_FROM : end])
    if computed != crc:
        _corrupt(f"record batch at byte {pos} fails its CRC32C check (stored {crc:#010x}, computed {computed:#010x})")
    if count <= 0 or last_delta != count - 1:
        _corrupt(f"record batch at byte {pos} has {count} records for a last offset delta of {last_delta}")
    records = _payload(buf, pos + _HEADER_SIZE, end, attributes & _CODEC_MASK, pos)
    try:
        deltas, keys, values, headers = _decode_records(records, count)
    except IndexError:
        msg = f"record batch at byte {pos} is truncated inside its records"
        raise CorruptRecordError(msg) from None
    except CorruptRecordError as e:
        msg = f"record batch at byte {pos}: {e}"
        raise CorruptRecordError(msg) from None
    batch = RecordBatch(
        base_offset=base_offset,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
        partition_leader_epoch=leader_epoch,
        is_transactional=bool(attributes & _TRANSACTIONAL),
        create_time=first_ts,
        keys=tuple(keys),
        values=tuple(values),
        headers=headers,
        timestamps=tuple([first_ts + d for d in deltas]),
        size_bytes=end - pos,
    )
    if attributes & _CONTROL:
        _make_control(batch, pos)
    return batch, end


def _frame_end(buf: bytes, pos: int) -> int:
    """Check the magic and declared length of the batch at ``pos``; return where it ends."""
    if len(buf) - pos < _PREFIX.size:
        _corrupt(f"record batch at byte {pos} is truncated: {len(buf) - pos} bytes, shorter than its header")
    _, length, _, magic = _PREFIX.unpack_from(buf, pos)
    if magic != _MAGIC:
        _corrupt(f"record batch at byte {pos} has magic {magic}; only magic 2 (Kafka 0.11+ batches) is supported")
    if length < _HEADER_SIZE - _LOG_OVERHEAD:
        _corrupt(f"record batch at byte {pos} declares {length} bytes, fewer than the v2 header")
    end = pos + _LOG_OVERHEAD + length
    if end > len(buf):
        _corrupt(f"record batch at byte {pos} is truncated: declares {end - pos} bytes, has {len(buf) - pos}")
    return end


def _payload(buf: bytes, start: int, end: int, codec: int, pos: int) -> bytes:
    """Return the records of a batch, inflated when compressed (:mod:`engine.wire.codecs`)."""
    if codec == 0:
        return buf[start:end]
    if codec not in codecs.CODEC_NAMES:
        msg = f"record batch at byte {pos} names compression codec {codec}, which Kafka does not define"
        raise UndecodableCompressionError(msg)
    try:
        return codecs.decompress(codec, buf[start:end])
    except codecs.CodecError as e:
        msg = f"record batch at byte {pos} has {e}"
        raise UndecodableCompressionError(msg) from None
    except codecs.CodecUnavailableError as e:
        raise UnsupportedCompressionError(str(e)) from None


def _decode_records(buf: bytes, count: int) -> tuple[list[int], list[Any], list[Any], tuple[Any, ...] | None]:
    """Decode ``count`` records filling ``buf`` exactly: timestamp deltas, keys, values, headers.

    The hot loop of the produce path: each varint is read inline when it fits one byte (a record
    length under 64, small deltas, short keys, null fields) and by :func:`_varint_slow` otherwise.
    A field that runs past ``buf`` surfaces as IndexError (on the next read) or as a record whose
    length does not match what it holds.

    Raises IndexError when ``buf`` ends inside a record, CorruptRecordError on a bad layout.
    """
    deltas: list[int] = []
    keys: list[Any] = []
    values: list[Any] = []
    headers: list[tuple[tuple[str, bytes | None], ...]] | None = None
    slow = _varint_slow
    unzig = _UNZIG
    pos = 0
    for i in range(count):
        b = buf[pos]  # record length
        if b < 0x80:
            size = unzig[b]
            pos += 1
        else:
            size, pos = slow(buf, pos)
        record_end = pos + size
        b = buf[pos + 1]  # timestamp delta, past the record's attributes (unused, always 0)
        if b < 0x80:
            ts_delta = unzig[b]
            pos += 2
        else:
            ts_delta, pos = slow(buf, pos + 1)
        b = buf[pos]  # offset delta
        if b < 0x80:
            offset_delta = unzig[b]
            pos += 1
        else:
            offset_delta, pos = slow(buf, pos)
        if offset_delta != i:
            _corrupt(f"record {i} has offset delta {offset_delta}")
        b = buf[pos]  # key length, then key
        if b < 0x80:
            n = unzig[b]
            pos += 1
        else:
            n, pos = slow(buf, pos)
        if n >= 0:
            key = buf[pos : pos + n]
            pos += n
        else:
            key = _null(n)
        b = buf[pos]  # value length, then value
        if b < 0x80:
            n = unzig[b]
            pos += 1
        else:
            n, pos = slow(buf, pos)
        if n >= 0:
            value = buf[pos : pos + n]
            pos += n
        else:
            value = _null(n)
        if buf[pos]:  # header count
            record_headers, pos = _headers(buf, pos)
            if headers is None:
                headers = [()] * i
            headers.append(record_headers)
        else:
            pos += 1
            if headers is not None:
                headers.append(())
        if pos != record_end:
            _corrupt(f"record {i} declares {size} bytes but holds {size + pos - record_end}")
        deltas.append(ts_delta)
        keys.append(key)
        values.append(value)
    if pos != len(buf):
        _corrupt(f"{len(buf) - pos} bytes follow the last of its {count} records")
    return deltas, keys, values, None if headers is None else tuple(headers)


def _null(n: int) -> None:
    """Return None for the null length -1; raise on any other negative length."""
    if n != -1:
        _corrupt(f"a record field has length {n}")


def _headers(buf: bytes, pos: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    """Decode a header count and the record headers at ``pos``, as (str key, bytes|None value) pairs."""
    n, pos = _varint(buf, pos)
    if n < 0:
        _corrupt(f"a record has a header count of {n}")
    pairs = []
    for _ in range(n):
        key, pos = _bytes(buf, pos)
        if key is None:
            _corrupt("a record header has a null key")
        try:
            name = key.decode()
        except UnicodeDecodeError:
            msg = f"a record header key is not UTF-8: {key[:32]!r}"
            raise CorruptRecordError(msg) from None
        value, pos = _bytes(buf, pos)
        pairs.append((name, value))
    return tuple(pairs), pos


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    """Read a varint length and that many bytes (None for length -1)."""
    b = buf[pos]
    if b < 0x80:  # one-byte length, the usual case
        n = (b >> 1) ^ -(b & 1)
        pos += 1
    else:
        n, pos = _varint_slow(buf, pos)
    if n < 0:
        if n == -1:
            return None, pos
        _corrupt(f"a record field has length {n}")
    end = pos + n
    if end > len(buf):
        raise IndexError(end)
    return buf[pos:end], end


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zigzag varint (or varlong) at ``pos``; return its value and the position past it."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    return _varint_slow(buf, pos)


def _varint_slow(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zigzag varint of two to ten bytes."""
    b = buf[pos + 1]
    if b < 0x80:  # two bytes: lengths up to 8 KiB
        z = (buf[pos] & 0x7F) | (b << 7)
        return (z >> 1) ^ -(z & 1), pos + 2
    result = 0
    for shift in range(0, 70, 7):
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
    _corrupt("a varint runs past 10 bytes")
    return 0, pos  # unreachable: _corrupt raises


def _make_control(batch: RecordBatch, pos: int) -> None:
    """Turn a decoded batch into an end-transaction marker, reading its control record."""
    key, value = batch.keys[0], batch.values[0]
    if len(batch.values) != 1 or key is None or len(key) < _CONTROL_KEY.size:
        _corrupt(f"control batch at byte {pos} does not hold one control record with a 4-byte key")
    version, code = _CONTROL_KEY.unpack_from(key)
    control_type = _CONTROL_TYPES.get(code)
    if version < 0 or control_type is None:
        _corrupt(f"control batch at byte {pos} has control record version {version}, type {code}; not COMMIT or ABORT")
    if value is None or len(value) < _CONTROL_VALUE.size:
        _corrupt(f"control batch at byte {pos} has an end-transaction marker value shorter than 6 bytes")
    batch.is_control = True
    batch.control_type = control_type
    batch.coordinator_epoch = _CONTROL_VALUE.unpack_from(value)[1]
    batch.keys = (None,)
    batch.values = (None,)


def _corrupt(msg: str) -> Any:
    """Raise CorruptRecordError with a one-line message."""
    raise CorruptRecordError(msg)


# -- encode ---------------------------------------------------------------------------------


def encode_batches(batches: Iterable[RecordBatch]) -> bytes:
    """Encode engine batches as concatenated, uncompressed v2 batches (a Fetch response's ``records``).

    Parameters
    ----------
    batches
        Engine batches, control batches included.

    Returns
    -------
    bytes
        The batches back to back, each with its CRC32C.
    """
    return b"".join([encode_batch(b) for b in batches])


def encode_batch(batch: RecordBatch) -> bytes:
    """Encode one engine batch as an uncompressed v2 batch.

    Keys, values and header values are written by :func:`_as_bytes` (``str`` as UTF-8, anything but
    bytes and None as its ``repr``); a control batch is written as Kafka writes an end-transaction
    marker: one record, key (version 0, type), value (version 0, coordinator epoch).
    """
    n = len(batch.values)
    timestamps = batch.timestamps or (batch.create_time,) * n
    first_ts = timestamps[0] if n else batch.create_time
    if batch.is_control:
        attributes = _CONTROL | _TRANSACTIONAL
        key = _CONTROL_KEY.pack(0, _CONTROL_CODES[batch.control_type])
        value = _CONTROL_VALUE.pack(0, batch.coordinator_epoch)
        timestamps = (first_ts,)
        records = _encode_records((key,), (value,), (None,), timestamps, first_ts)
        n = 1
    else:
        attributes = _TRANSACTIONAL if batch.is_transactional else 0
        records = _encode_records(batch.keys, batch.values, batch.headers or none_keys(n), timestamps, first_ts)
    tail = _TAIL.pack(
        attributes,
        n - 1,
        first_ts,
        max(timestamps) if n else first_ts,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        n,
    )
    crc = crc32c(records, crc32c(tail))
    head = _HEAD.pack(
        batch.base_offset, _HEADER_SIZE - _LOG_OVERHEAD + len(records), batch.partition_leader_epoch, _MAGIC, crc
    )
    return b"".join((head, tail, records))


def _encode_records(
    keys: Sequence[Any], values: Sequence[Any], headers: Sequence[Any], timestamps: Sequence[int], first_ts: int
) -> bytes:
    """Encode records: length, attributes, timestamp and offset deltas, key, value, headers.

    The hot loop of the fetch path: varints below :data:`_SMALL_LIMIT` come from a table.
    """
    parts: list[bytes] = []
    add = parts.append
    small = _SMALL
    for i, key, value, h, ts in zip(range(len(values)), keys, values, headers, timestamps, strict=True):
        if key is None:
            key_field = b"\x01"  # zigzag(-1): null
        else:
            key = key if type(key) is bytes else _as_bytes(key)
            n = len(key)
            key_field = (small[n] if n < _SMALL_LIMIT else _zigzag(n)) + key
        if value is None:
            value_field = b"\x01"
        else:
            value = value if type(value) is bytes else _as_bytes(value)
            n = len(value)
            value_field = (small[n] if n < _SMALL_LIMIT else _zigzag(n)) + value
        d = ts - first_ts
        ts_field = small[d] if 0 <= d < _SMALL_LIMIT else _zigzag(d)
        offset_field = small[i] if i < _SMALL_LIMIT else _zigzag(i)
        header_field = _encode_headers(h) if h else b"\x00"
        size = 1 + len(ts_field) + len(offset_field) + len(key_field) + len(value_field) + len(header_field)
        add(small[size] if size < _SMALL_LIMIT else _zigzag(size))
        add(b"\x00")  # record attributes
        add(ts_field)
        add(offset_field)
        add(key_field)
        add(value_field)
        add(header_field)
    return b"".join(parts)


def _encode_headers(headers: Any) -> bytes:
    """Encode record headers given as (key, value) pairs or a mapping: count, then each key and value."""
    pairs = list(headers.items() if isinstance(headers, Mapping) else headers)
    parts = [_zigzag(len(pairs))]
    for key, value in pairs:
        parts.append(_field(_as_bytes(key)))
        parts.append(_field(value))
    return b"".join(parts)


def _field(x: Any) -> bytes:
    """Encode a header key or value: varint length then bytes, or the null length."""
    if x is None:
        return b"\x01"  # zigzag(-1)
    data = _as_bytes(x)
    return _zigzag(len(data)) + data


def _as_bytes(x: Any) -> bytes:
    """Return the wire bytes of a key or value: bytes as is, str as UTF-8, anything else its repr."""
    t = type(x)
    if t is bytes:
        return x
    if t is str:
        return x.encode()
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    return repr(x).encode()


def _zigzag(n: int) -> bytes:
    """Encode a signed 64-bit int as a zigzag varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


#: Zigzag varints of 0 .. _SMALL_LIMIT - 1 (lengths, offset and timestamp deltas), built once.
_SMALL_LIMIT = 1024
_SMALL = [_zigzag(n) for n in range(_SMALL_LIMIT)]
