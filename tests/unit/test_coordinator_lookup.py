"""The coordinator mapping matches Kafka's: ``Utils.abs(String.hashCode) % partitions``.

Expected values are computed by hand from Java's definition, ``s[0]*31^(n-1) + … + s[n-1]`` in
32-bit two's complement, and from Kafka's ``Utils.abs`` (``Integer.MIN_VALUE`` maps to 0).
"""

from __future__ import annotations

from engine.coordinator_lookup import java_abs, java_string_hash, partition_for


def test_java_string_hash_matches_hand_computed_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("ab") == 97 * 31 + 98  # 3105
    assert java_string_hash("tx") == 116 * 31 + 120  # 3716
    # "hello": ((((104*31+101)*31+108)*31+108)*31+111) = 99162322, no overflow yet
    assert java_string_hash("hello") == 99162322


def test_java_string_hash_wraps_at_32_bits_like_java() -> None:
    # 31^6 * 97 alone exceeds 2^31, so a 7-character string wraps; computed by hand mod 2^32.
    h = 0
    for ch in "payment":
        h = (31 * h + ord(ch)) % (1 << 32)
    expected = h - (1 << 32) if h >= 1 << 31 else h
    assert java_string_hash("payment") == expected
    assert java_string_hash("payment") == -786681338


def test_partition_for_uses_kafka_utils_abs_and_the_partition_count() -> None:
    assert partition_for("tx", 50) == 3716 % 50 == 16
    assert partition_for("hello", 50) == 99162322 % 50 == 22
    assert partition_for("payment", 50) == 786681338 % 50 == 38


def test_integer_min_value_hash_maps_to_partition_zero() -> None:
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE, whose Math.abs stays negative in Java;
    # Kafka's Utils.abs maps it to 0 so the partition is 0, not a negative number.
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert java_abs(-(1 << 31)) == 0
    assert partition_for("polygenelubricants", 50) == 0
