"""Kafka's KIP-848 ``ConsumerGroup`` offset rules: ``ConsumerGroupTest`` on the engine.

Goal: an OffsetCommit from a consumer-protocol member is checked as Kafka 4.4's
``ConsumerGroup.validateOffsetCommit`` checks it: below v9 (which carries no member epoch) it is
UNSUPPORTED_VERSION, from v9 the member epoch must be the member's (STALE_MEMBER_EPOCH), and an
unknown member is UNKNOWN_MEMBER_ID. librdkafka 2.16.1 and the Java client 4.4 commit with v9, so
they never meet the refusal. Method: the raw heartbeating client of
``test_group_metadata_manager`` joins a member, then sends hand-made OffsetCommits (apache/kafka
``group-coordinator/src/test/java/org/apache/kafka/coordinator/group/modern/consumer/ConsumerGroupTest.java``).
"""

from __future__ import annotations

from typing import Any

from engine.errors import ErrorCode
from engine.protocol import OffsetCommitRequest
from tests.kafka_parity.test_group_metadata_manager_consumer import GROUP, Raw, cluster, coordinator


def _commit(raw: Raw, member_id: str, epoch: int, api_version: int | None) -> Any:
    box: list[Any] = []
    body = OffsetCommitRequest(GROUP, epoch, member_id, None, (("t", 0, 5),), api_version)
    raw.request(f"broker-{coordinator(raw.c)}", body, box.append, timeout_ms=5_000)
    raw.c.run_until(lambda: bool(box))
    return box[0].error


def test_validate_offset_commit() -> None:
    """``testValidateOffsetCommit``: v8 from a member is UNSUPPORTED_VERSION; v9 with its epoch
    commits, with another epoch is STALE_MEMBER_EPOCH; an unknown member is UNKNOWN_MEMBER_ID."""
    c = cluster()
    raw = Raw(c)
    a = raw.join()
    assert _commit(raw, a.member_id, a.member_epoch, 8) is ErrorCode.UNSUPPORTED_VERSION
    assert _commit(raw, a.member_id, a.member_epoch, 9) is ErrorCode.NONE
    assert _commit(raw, a.member_id, a.member_epoch, None) is ErrorCode.NONE
    assert _commit(raw, a.member_id, a.member_epoch + 1, 9) is ErrorCode.STALE_MEMBER_EPOCH
    assert _commit(raw, "nobody", a.member_epoch, 8) is ErrorCode.UNKNOWN_MEMBER_ID


def test_validate_offset_commit_outside_the_group() -> None:
    """``testValidateOffsetCommit`` (epoch -1): a commit outside group management to a group with no
    members is taken whatever its version (the admin client, a consumer with assign())."""
    c = cluster()
    raw = Raw(c)
    a = raw.join()
    raw.heartbeat(a.member_id, -1)
    assert _commit(raw, "", -1, 2) is ErrorCode.NONE
