"""Kafka's default partitioner: murmur2 of the key bytes, or sticky partitions without a key.

``murmur2`` is Kafka's 32-bit MurmurHash2 variant (seed 0x9747b28c), so a keyed record lands
on the same partition number as it would with the Java client for the same partition count.
Records without a key stick to one partition until its batch fills (KIP-480), choosing the next
partition from the producer's own random stream.
"""

from __future__ import annotations

from typing import Any

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Return Kafka's murmur2 hash of ``data`` as a signed 32-bit integer."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    n4 = length // 4
    for i in range(n4):
        j = i * 4
        k = data[j] | (data[j + 1] << 8) | (data[j + 2] << 16) | (data[j + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length % 4
    tail = n4 * 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_bytes(key: Any) -> bytes:
    """Serialise a key the way a string or bytes serializer would."""
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode()
    return str(key).encode()


def partition_for_key(key: Any, num_partitions: int) -> int:
    """Return Kafka's partition for a key: ``toPositive(murmur2(key)) % num_partitions``."""
    return (murmur2(to_bytes(key)) & 0x7FFFFFFF) % num_partitions
