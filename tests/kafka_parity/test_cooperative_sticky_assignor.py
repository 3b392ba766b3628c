"""Kafka's ``CooperativeStickyAssignorTest`` against :func:`engine.client.sticky_assignor.cooperative_sticky_assign`.

Goal: a partition that changes owners is left out of the round that takes it from its owner
(KIP-429), and claims of two members in one generation are invalidated. Method: each test follows
the Kafka test of the same name (apache/kafka ``clients/src/test/java/org/apache/kafka/clients/
consumer/CooperativeStickyAssignorTest.java``, rack-less). The user-data tests
(``testEncodeAndDecodeGeneration``, ``testMemberData*``) are about the Java serialisation of the
generation and do not apply: the engine's subscriptions carry the generation as a field
(ConsumerProtocolSubscription v2).
"""

from __future__ import annotations

from engine.client.sticky_assignor import cooperative_sticky_assign, sticky_assign
from tests.kafka_parity.sticky_checks import fully_balanced, member, settle

T, T1 = "topic", "topic1"
C1, C2, C3 = "consumer1", "consumer2", "consumer3"


def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_equal_partitions_per_consumer() -> (  # noqa: E501
    None
):
    ppt = {T: 3}
    subs = {C1: member([T], [(T, 0), (T, 1)]), C2: member([T], [(T, 0), (T, 2)]), C3: member([T])}
    got = cooperative_sticky_assign(subs, ppt)
    assert got[C1] == [(T, 1)]
    assert got[C2] == [(T, 2)]
    assert got[C3] == []  # topic-0 is still owned: both must revoke it first
    assert fully_balanced(settle(subs, got, ppt))


def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_unequal_partitions_per_consumer() -> (  # noqa: E501
    None
):
    ppt = {T: 4}
    subs = {C1: member([T], [(T, 0), (T, 1)]), C2: member([T], [(T, 0), (T, 2)]), C3: member([T])}
    got = cooperative_sticky_assign(subs, ppt)
    assert got[C1] == [(T, 1), (T, 3)]
    assert got[C2] == [(T, 2)]
    assert got[C3] == []
    assert fully_balanced(settle(subs, got, ppt))


def test_assignor_with_old_version_subscriptions() -> None:
    # v1 subscriptions: owned partitions but no generation (DEFAULT_GENERATION).
    ppt = {T1: 3}
    subs = {C1: member([T1], [(T1, 0)], -1), C2: member([T1], [(T1, 1)], -1), C3: member([T1])}
    got = cooperative_sticky_assign(subs, ppt)
    assert got == {C1: [(T1, 0)], C2: [(T1, 1)], C3: [(T1, 2)]}
    assert fully_balanced(settle(subs, got, ppt))


def test_uniform_subscription_transfer_ownership_list_is_right() -> None:
    ppt = {T1: 4}
    subs = {"c0": member([T1], [(T1, 0), (T1, 1)]), "c1": member([T1], [(T1, 2), (T1, 3)])}
    # Without racks nothing moves; Kafka's test moves two partitions to match racks (not modelled).
    assert len(sticky_assign(subs, ppt).transferring) == 0
