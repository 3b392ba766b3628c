"""Kafka's request and response frames: header, body, and the versions this server speaks.

A frame on the wire is ``int32 size`` followed by ``size`` bytes; the transport (``engine.serve``)
cuts the stream into frames, this module reads one. The request header is v1 (non-flexible
requests) or v2 (flexible ones, with tagged fields); the response header is v0, or v1 for flexible
responses, except ApiVersions, whose response header is always v0 so that a client can read it
before it knows anything (KIP-511). Bodies are read and written by kio, generated from Kafka's
message definitions; nothing here lays out a message by hand.

:data:`SERVED` is the exact table the server advertises in ApiVersions: each API key with the range
of versions every handler serves. A request outside it is a protocol error: Kafka closes the
connection (``InvalidRequestException``), and so does the gateway; an ApiVersions request newer than
served gets KIP-511's fallback answer instead (UNSUPPORTED_VERSION, written as v0, listing what is
served), so that a newer client can retry with a version both know.
"""

from __future__ import annotations

import io
import struct
from typing import Any, NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

API_VERSIONS = 18
SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

#: API key -> (name, min version, max version) served. The ranges serve confluent-kafka 2.16 (librdkafka),
#: kafka-python 3.0 and aiokafka 0.14 (measured: ../shared/design/reach.md §1). Produce starts at 3, the
#: first version kio (Kafka 4's definitions) has; Fetch stops at 12 (13+ names topics by id), Produce
#: at 12 (13 names topics by id). The Java client (kafka-clients 4.4) speaks transaction version 2
#: (KIP-890): Produce v12, EndTxn v5 and TxnOffsetCommit v5 are version 2 when it asks for them, the
#: older versions version 1 (handlers_txn, handlers_data).
SERVED: dict[int, tuple[str, int, int]] = {
    0: ("Produce", 3, 12),
    1: ("Fetch", 4, 12),
    2: ("ListOffsets", 1, 7),
    3: ("Metadata", 0, 12),
    8: ("OffsetCommit", 2, 9),
    9: ("OffsetFetch", 1, 7),
    10: ("FindCoordinator", 0, 3),
    11: ("JoinGroup", 4, 5),
    12: ("Heartbeat", 0, 3),
    13: ("LeaveGroup", 0, 3),
    14: ("SyncGroup", 0, 3),
    17: ("SaslHandshake", 0, 1),
    18: ("ApiVersions", 0, 3),
    19: ("CreateTopics", 2, 5),
    20: ("DeleteTopics", 1, 6),
    22: ("InitProducerId", 0, 5),
    23: ("OffsetForLeaderEpoch", 2, 3),
    24: ("AddPartitionsToTxn", 0, 3),
    25: ("AddOffsetsToTxn", 0, 4),
    26: ("EndTxn", 0, 5),
    28: ("TxnOffsetCommit", 0, 5),
    32: ("DescribeConfigs", 1, 4),
    36: ("SaslAuthenticate", 0, 2),
    44: ("IncrementalAlterConfigs", 0, 1),
    60: ("DescribeCluster", 0, 2),
    61: ("DescribeProducers", 0, 0),
    65: ("DescribeTransactions", 0, 0),
    66: ("ListTransactions", 0, 0),
    68: ("ConsumerGroupHeartbeat", 0, 1),
    69: ("ConsumerGroupDescribe", 0, 1),
}

_HEAD = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")


class ProtocolError(ValueError):
    """A frame this server cannot serve: the connection is closed, as Kafka closes it."""


class Request(NamedTuple):
    """One decoded request frame."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any


class Peek(NamedTuple):
    """The first fields of a request header, readable from any frame of at least 8 bytes."""

    api_key: int
    api_version: int
    correlation_id: int


def peek(frame: bytes) -> Peek:
    """Return the API key, version and correlation id of a frame (ProtocolError if shorter than 8 bytes)."""
    if len(frame) < _HEAD.size:
        msg = f"a request frame needs at least {_HEAD.size} bytes of header, got {len(frame)}"
        raise ProtocolError(msg)
    return Peek(*_HEAD.unpack_from(frame))


def api_name(api_key: int) -> str:
    """Return an API key's name (``Produce``) or ``api-key-N`` for one not served."""
    entry = SERVED.get(api_key)
    return entry[0] if entry else f"api-key-{api_key}"


def is_served(api_key: int, api_version: int) -> bool:
    """Return True when this server speaks ``api_version`` of ``api_key``."""
    entry = SERVED.get(api_key)
    return entry is not None and entry[1] <= api_version <= entry[2]


def decode_request(frame: bytes) -> Request:
    """Decode one request frame (without its size prefix).

    Raises
    ------
    ProtocolError
        For an API key or version not in :data:`SERVED`, or bytes that do not decode as the request.
    """
    head = peek(frame)
    if not is_served(head.api_key, head.api_version):
        msg = f"{api_name(head.api_key)} v{head.api_version} is not served"
        raise ProtocolError(msg)
    schema = load_request_schema(head.api_key, head.api_version)
    view = memoryview(frame)
    try:
        header, offset = entity_reader(schema.__header_schema__)(view, 0)
        # Bytes after the body are left unread, as Kafka's generated readers leave them: librdkafka's
        # AdminClient sends Metadata v12 with three of them, and real brokers answer it.
        body, _size = entity_reader(schema)(view, offset)
    except Exception as exc:  # kio raises several types for bad bytes (struct, unicode, its own)
        msg = f"{api_name(head.api_key)} v{head.api_version} does not decode: {type(exc).__name__}: {exc}"
        raise ProtocolError(msg) from None
    return Request(head.api_key, head.api_version, head.correlation_id, header.client_id, body)


def response_class(api_key: int, api_version: int) -> type:
    """Return kio's response dataclass for an API key and version."""
    return load_response_schema(api_key, api_version)


def encode_response(correlation_id: int, response: Any) -> bytes:
    """Return the size-prefixed frame of ``response`` (a kio response entity) for ``correlation_id``."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    header = response.__header_schema__
    buf.write(struct.pack(">i", correlation_id))
    if header.__flexible__:
        buf.write(b"\0")  # no tagged fields in the header
    entity_writer(type(response))(buf, response)
    data = buf.getbuffer()
    _SIZE.pack_into(data, 0, len(data) - 4)
    return bytes(data)
