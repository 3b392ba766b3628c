"""The connection's own requests: ApiVersions (with KIP-511's fallback) and SASL/PLAIN.

None of these reach a broker: Kafka's ``SocketServer`` and ``SaslServerAuthenticator`` answer them
before a request is handed to ``KafkaApis``. SASL/PLAIN's token is ``authzid NUL user NUL
password`` (RFC 4616); a wrong one is answered ``SASL_AUTHENTICATION_FAILED`` and the connection is
closed, as Kafka does. The server names one user, ``eos``, and a password of its own.

SaslHandshake v0 (KIP-43, still served by Kafka 4.4, sent by librdkafka 2.0 and old kafka-python)
has no SaslAuthenticate: the next frame on the connection is the bare token, size-prefixed with no
request header, and the answer to a good one is an empty size-prefixed frame; a bad one closes the
connection without an answer (``SaslServerAuthenticator.handleSaslToken`` without Kafka headers).
:func:`raw_token` judges that frame; the gateway hands it over instead of decoding a request.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Any

from kio.schema.api_versions.v0.response import ApiVersion as ApiKeyV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode as KioErrorCode

from engine.errors import ErrorCode
from engine.wire import frames

if TYPE_CHECKING:
    from engine.wire.frames import Request
    from engine.wire.gateway import WireConnection

Reply = Any

#: The one SASL user a served cluster knows.
SASL_USER = "eos"
MECHANISMS = ("PLAIN",)


def api_keys() -> list[dict[str, int]]:
    """Return the served API keys and versions, as ApiVersions lists them."""
    return [
        {"api_key": k, "min_version": lo, "max_version": hi} for k, (_name, lo, hi) in sorted(frames.SERVED.items())
    ]


#: The finalized features' epoch a served cluster answers (it never changes them).
FEATURES_EPOCH = 1


def finalized_features(transaction_version: int) -> list[dict[str, Any]]:
    """Return the finalized features ApiVersions v3 lists: those of Kafka 4.4 the engine serves.

    Kafka 4.4 (measured, a fresh KRaft cluster) finalizes ``group.version`` 1 (KIP-848's
    ConsumerGroupHeartbeat, served), ``transaction.version`` 2 (KIP-890, served: EndTxn v5,
    Produce v12, TxnOffsetCommit v5), ``streams.version`` 1, ``share.version`` 2,
    ``eligible.leader.replicas.version`` 1 and ``metadata.version``; the last four name protocols
    the engine does not serve and are left out. ``transaction.version`` follows the cluster's
    setting (1 or 2): the Java client speaks version 2 only where it is finalized at 2
    (``TransactionManager.isTransactionV2Enabled``). Supported features are not listed: ApiVersions
    v3 leaves out every feature whose range starts at 0 (KIP-1022), which leaves Kafka only
    ``metadata.version``.
    """
    features = [("group.version", 1), ("transaction.version", transaction_version)]
    return [{"name": n, "min_version_level": v, "max_version_level": v} for n, v in features if v > 0]


def api_versions(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Answer ApiVersions with exactly what is served (and, from v3, the finalized features)."""
    reply(
        {
            "error_code": ErrorCode.NONE,
            "api_keys": api_keys(),
            "throttle_time": 0,
            "finalized_features_epoch": FEATURES_EPOCH,
            "finalized_features": finalized_features(conn.service.cluster.config.transaction_version),
        }
    )


def api_versions_fallback(correlation_id: int) -> bytes:
    """KIP-511: an ApiVersions version newer than served is answered in v0's form with UNSUPPORTED_VERSION."""
    lo, hi = frames.SERVED[frames.API_VERSIONS][1:]
    response = ApiVersionsResponseV0(
        error_code=KioErrorCode(int(ErrorCode.UNSUPPORTED_VERSION)),
        api_keys=(ApiKeyV0(api_key=frames.API_VERSIONS, min_version=lo, max_version=hi),),
    )
    return frames.encode_response(correlation_id, response)


#: What a good token gets after SaslHandshake v0: PLAIN's empty challenge as a size-prefixed frame.
RAW_TOKEN_ACCEPTED = b"\0\0\0\0"


def sasl_handshake(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Accept the PLAIN mechanism; refuse any other with the mechanisms this server has, and close.

    After v0, the connection expects the bare token next (:func:`raw_token`).
    """
    mechanism = request.body.mechanism
    if mechanism not in MECHANISMS:
        reply({"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": MECHANISMS})
        conn.close_when_answered(f"unsupported SASL mechanism {mechanism!r}")
        return
    conn.mechanism = mechanism
    conn.raw_sasl_token = request.api_version == 0
    reply({"error_code": ErrorCode.NONE, "mechanisms": MECHANISMS})


def _plain_ok(conn: WireConnection, token: bytes) -> bool:
    """Return True when a PLAIN token names the server's user and password."""
    expected = conn.service.password
    if expected is None:
        return False
    parts = token.split(b"\0")
    user, password = (parts[1], parts[2]) if len(parts) == 3 else (b"", b"")
    return bool(hmac.compare_digest(user, SASL_USER.encode()) & hmac.compare_digest(password, expected.encode()))


def raw_token(conn: WireConnection, frame: bytes) -> bytes | None:
    """Judge the bare PLAIN token that follows SaslHandshake v0: the frame to answer, or None to close."""
    conn.raw_sasl_token = False
    if not _plain_ok(conn, frame):
        return None
    conn.authenticated = True
    return RAW_TOKEN_ACCEPTED


def sasl_authenticate(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Check a PLAIN token against the server's user and password."""
    expected = conn.service.password
    if conn.mechanism is None or expected is None:
        reply({"error_code": ErrorCode.ILLEGAL_SASL_STATE, "error_message": "SaslHandshake PLAIN first"})
        conn.close_when_answered("SaslAuthenticate before SaslHandshake")
        return
    if not _plain_ok(conn, bytes(request.body.auth_bytes)):
        reply(
            {
                "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
                "error_message": "Authentication failed: Invalid username or password",
            }
        )
        conn.close_when_answered("SASL authentication failed")
        return
    conn.authenticated = True
    reply({"error_code": ErrorCode.NONE, "auth_bytes": b"", "session_lifetime": 0})
