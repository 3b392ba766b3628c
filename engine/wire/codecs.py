"""Kafka's record-batch compression codecs (gzip, snappy, lz4, zstd), through the cramjam library.

A v2 batch names its codec in the low three bits of its attributes (Kafka's ``CompressionType``:
0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd) and, when compressed, carries its records as one
compressed stream after the 61-byte header. :func:`decompress` inflates that stream for
``records.decode_batches``; :func:`compress` writes one as Kafka's Java client does (tests use it).

Role
----
The only place that knows a codec's byte format. The codec library, cramjam, is imported on first
use, so ``import engine.wire`` works without it (the JupyterLite build has no native wheels);
a batch that needs it where it is missing is refused as the broker cannot decode it.

Invariants
----------
- Formats, as Kafka 4.4 reads them (``org.apache.kafka.common.compress.*Compression``):
  gzip is RFC 1952 (Java's ``GZIPInputStream``; several members are read one after another);
  lz4 is the LZ4 frame format (``Lz4BlockInputStream``, with KIP-57's correct header checksum),
  independent blocks only: Kafka refuses a frame whose FLG byte says the blocks are linked
  (``Lz4BlockInputStream.FLG.validate``: "Dependent block stream is unsupported"), so this does too;
  zstd is a zstd frame (``ZstdInputStreamNoFinalizer``); snappy is snappy-java's stream
  (``SnappyInputStream``): the xerial framing, a 16-byte header (``\\x82SNAPPY\\x00``, version,
  compatible version) then blocks of a 4-byte big-endian length and a raw snappy block, or, when
  the header is absent, one raw snappy block (librdkafka and kafka-python may write either,
  kafka-python's ``codec.snappy_decode`` reads both the same way).
- Bytes that do not inflate (Kafka 4.4 answers these UNKNOWN_SERVER_ERROR: its codec streams throw
  a plain ``KafkaException``, which ``ReplicaManager.appendToLocalLog`` does not map) raise
  :class:`CodecError`; a codec the library is missing for raises
  :class:`CodecUnavailableError`. Never a partial result.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["CODEC_NAMES", "CodecError", "CodecUnavailableError", "compress", "decompress"]

#: Kafka's codec ids (``CompressionType.id``) and names.
CODEC_NAMES = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

#: An LZ4 frame's FLG byte follows the 4-byte magic; its bit 5 says the blocks are independent.
_LZ4_FLG = 4
_LZ4_BLOCK_INDEPENDENT = 0x20
#: snappy-java's stream header: magic, then version and minimum compatible version (both 1).
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = struct.Struct(">i")
#: snappy-java's default block size (``SnappyOutputStream``), which Kafka's producer uses.
_XERIAL_BLOCK_SIZE = 32 * 1024


class CodecError(ValueError):
    """Compressed bytes that do not inflate under the codec their batch names."""


class CodecUnavailableError(ValueError):
    """The codec library (cramjam) is not installed here, so the codec cannot be read or written."""


def decompress(codec: int, data: bytes) -> bytes:
    """Inflate a batch's compressed records.

    Parameters
    ----------
    codec
        Kafka's codec id, 1 to 4.
    data
        The compressed stream (the bytes after a batch's header).

    Returns
    -------
    bytes
        The records, uncompressed.

    Raises
    ------
    CodecError
        ``data`` is not a well-formed stream of that codec.
    CodecUnavailableError
        cramjam is not installed.
    """
    name = CODEC_NAMES[codec]
    cramjam = _cramjam(name)
    try:
        if codec == 2:
            return _snappy_decode(cramjam, data)
        if codec == 3 and len(data) > _LZ4_FLG and not data[_LZ4_FLG] & _LZ4_BLOCK_INDEPENDENT:
            msg = "a lz4 payload with dependent (linked) blocks, which Kafka does not read"
            raise CodecError(msg)
        return bytes(getattr(cramjam, name).decompress(data))
    except CodecError:
        raise
    except Exception as e:  # cramjam raises its own DecompressionError (and ValueError on bad args)
        msg = f"a {name} payload that does not inflate: {_first_line(e)}"
        raise CodecError(msg) from None


def compress(codec: int, data: bytes) -> bytes:
    """Compress records as Kafka's Java producer does (snappy with the xerial framing).

    Parameters
    ----------
    codec
        Kafka's codec id, 1 to 4.
    data
        The records, uncompressed.

    Returns
    -------
    bytes
        The compressed stream.
    """
    name = CODEC_NAMES[codec]
    cramjam = _cramjam(name)
    if codec == 3:  # independent blocks, no content checksum: as Kafka's Lz4BlockOutputStream writes
        compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec != 2:
        return bytes(getattr(cramjam, name).compress(data))
    blocks = [_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1)]
    for i in range(0, len(data), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + _XERIAL_BLOCK_SIZE]))
        blocks.append(_XERIAL_BLOCK.pack(len(block)) + block)
    return b"".join(blocks)


def _snappy_decode(cramjam: Any, data: bytes) -> bytes:
    """Read snappy-java's stream: xerial blocks after the header, else one raw snappy block."""
    if not data.startswith(_XERIAL_MAGIC) or len(data) < _XERIAL_HEADER.size:
        return bytes(cramjam.snappy.decompress_raw(data))
    out = []
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        if len(data) - pos < _XERIAL_BLOCK.size:
            msg = f"a snappy payload whose xerial block length at byte {pos} is truncated"
            raise CodecError(msg)
        (size,) = _XERIAL_BLOCK.unpack_from(data, pos)
        pos += _XERIAL_BLOCK.size
        if size < 0 or pos + size > len(data):
            msg = f"a snappy payload whose xerial block at byte {pos} declares {size} bytes, {len(data) - pos} left"
            raise CodecError(msg)
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos : pos + size])))
        pos += size
    return b"".join(out)


def _cramjam(name: str) -> Any:
    """Import cramjam on first use; without it, the codec is unavailable."""
    try:
        import cramjam  # optional native wheel, imported only where a codec is used
    except ImportError:
        msg = f"the {name} codec needs the cramjam package, which is not installed here"
        raise CodecUnavailableError(msg) from None
    return cramjam


def _first_line(e: BaseException) -> str:
    """The first line of an exception's message (cramjam's can run long)."""
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:200]
