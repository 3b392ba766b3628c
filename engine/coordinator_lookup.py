"""Which partition of an internal topic owns a transactional id or a consumer group.

Kafka maps a key to ``Utils.abs(key.hashCode()) % partitions`` where ``hashCode`` is Java's
``String.hashCode`` (``s[0]*31^(n-1) + … + s[n-1]`` in 32-bit arithmetic over UTF-16 code
units) and ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0. Using the same function makes the
simulated coordinator of ``"my-txn"`` the same partition number as on a real cluster.
"""

from __future__ import annotations

import functools

TRANSACTION_STATE_TOPIC = "__transaction_state"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

#: FindCoordinator key types, as in Kafka's protocol.
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


def java_string_hash(s: str) -> int:
    """Return Java's ``String.hashCode`` of ``s`` as a signed 32-bit integer."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        unit = (data[i] << 8) | data[i + 1]
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def java_abs(n: int) -> int:
    """Return Kafka's ``Utils.abs``: ``Integer.MIN_VALUE`` maps to 0, everything else to ``|n|``."""
    return 0 if n == -(1 << 31) else abs(n)


@functools.lru_cache(maxsize=4096)
def partition_for(key: str, partitions: int) -> int:
    """Return the internal-topic partition that owns ``key``."""
    return java_abs(java_string_hash(key)) % partitions
