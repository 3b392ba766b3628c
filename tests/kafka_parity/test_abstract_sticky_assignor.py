"""Kafka's ``AbstractStickyAssignorTest`` against the engine's cooperative-sticky assignor.

Goal: :mod:`engine.client.sticky_assignor` assigns as Kafka's ``CooperativeStickyAssignor`` (which
runs these tests through ``CooperativeStickyAssignorTest``): balanced, sticky to owned
partitions, claims resolved by generation, and no partition revoked and assigned in one round.
Method: each test follows the Kafka test of the same name (apache/kafka ``clients/src/test/java/
org/apache/kafka/clients/consumer/internals/AbstractStickyAssignorTest.java``, rack-less) with its
inputs and expected assignments; :func:`sticky_checks.settle` runs the follow-up rebalances as
``CooperativeStickyAssignorTest.verifyValidityAndBalance`` does. The randomised tests run on
fixed seeds.
"""

from __future__ import annotations

import random

from engine.client.sticky_assignor import DEFAULT_GENERATION, cooperative_sticky_assign, sticky_assign
from tests.kafka_parity.sticky_checks import fully_balanced, member, parts, settle

T, T1, T2, T3 = "topic", "topic1", "topic2", "topic3"
C1, C2, C3, C4 = "consumer1", "consumer2", "consumer3", "consumer4"


def _assign(subs: dict, ppt: dict) -> dict:
    return cooperative_sticky_assign(subs, ppt)


def test_one_consumer_no_topic() -> None:
    subs = {C1: member([])}
    assert _assign(subs, {}) == {C1: []}


def test_one_consumer_nonexistent_topic() -> None:
    subs = {C1: member([T])}
    assert _assign(subs, {T1: 1}) == {C1: []}


def test_one_consumer_one_topic() -> None:
    subs = {C1: member([T])}
    got = _assign(subs, {T: 3})
    assert got == {C1: parts((T, 0), (T, 1), (T, 2))}
    assert fully_balanced(settle(subs, got, {T: 3}))


def test_only_assigns_partitions_from_subscribed_topics() -> None:
    subs = {C1: member([T])}
    assert _assign(subs, {T: 3, "other": 3}) == {C1: parts((T, 0), (T, 1), (T, 2))}


def test_one_consumer_multiple_topics() -> None:
    subs = {C1: member([T1, T2])}
    assert _assign(subs, {T1: 1, T2: 2}) == {C1: parts((T1, 0), (T2, 0), (T2, 1))}


def test_two_consumers_one_topic_one_partition() -> None:
    subs = {C1: member([T]), C2: member([T])}
    assert _assign(subs, {T: 1}) == {C1: [(T, 0)], C2: []}


def test_two_consumers_one_topic_two_partitions() -> None:
    subs = {C1: member([T]), C2: member([T])}
    got = _assign(subs, {T: 2})
    assert got == {C1: [(T, 0)], C2: [(T, 1)]}
    assert fully_balanced(settle(subs, got, {T: 2}))


def test_multiple_consumers_mixed_topic_subscriptions() -> None:
    ppt = {T1: 3, T2: 2}
    subs = {C1: member([T1]), C2: member([T1, T2]), C3: member([T1])}
    got = _assign(subs, ppt)
    assert got == {C1: parts((T1, 0), (T1, 2)), C2: parts((T2, 0), (T2, 1)), C3: [(T1, 1)]}
    settle(subs, got, ppt)


def test_two_consumers_two_topics_six_partitions() -> None:
    ppt = {T1: 3, T2: 3}
    subs = {C1: member([T1, T2]), C2: member([T1, T2])}
    result = sticky_assign(subs, ppt)
    assert result.assignment == {C1: parts((T1, 0), (T1, 2), (T2, 1)), C2: parts((T1, 1), (T2, 0), (T2, 2))}
    assert result.transferring == {}


def test_consumer_owning_min_quota_expected_max_quota() -> None:
    ppt = {T1: 2, T2: 3}
    subs = {C1: member([T1, T2], [(T1, 0), (T2, 1)]), C2: member([T1, T2], [(T1, 1), (T2, 2)])}
    result = sticky_assign(subs, ppt)
    assert result.assignment == {C1: parts((T1, 0), (T2, 1), (T2, 0)), C2: parts((T1, 1), (T2, 2))}
    assert result.transferring == {}
    assert fully_balanced(settle(subs, _assign(subs, ppt), ppt))


def test_max_quota_consumer_more_than_num_expected_max_capacity_members() -> None:
    ppt = {T1: 2, T2: 2}
    subs = {
        C1: member([T1, T2], [(T1, 0), (T2, 0)]),
        C2: member([T1, T2], [(T1, 1), (T2, 1)]),
        C3: member([T1, T2]),
    }
    # Kafka visits the members in Java HashMap order (consumer3, consumer2, consumer1 here), so
    # consumer2 keeps both and consumer1 gives up topic2-0; the engine visits them by member id:
    # the mirror image, consumer1 keeps both and consumer2 gives up topic2-1.
    assert sticky_assign(subs, ppt).transferring == {(T2, 1): C3}
    final = settle(subs, _assign(subs, ppt), ppt)
    assert final == {C1: parts((T1, 0), (T2, 0)), C2: [(T1, 1)], C3: [(T2, 1)]}
    assert fully_balanced(final)


def test_all_consumers_are_under_min_quota() -> None:
    ppt = {T1: 2, T2: 3}
    subs = {C1: member([T1, T2], [(T1, 0)]), C2: member([T1, T2], [(T1, 1)]), C3: member([T1, T2])}
    assert sticky_assign(subs, ppt).transferring == {}
    final = settle(subs, _assign(subs, ppt), ppt)
    assert final == {C1: parts((T1, 0), (T2, 1)), C2: parts((T1, 1), (T2, 2)), C3: [(T2, 0)]}


def test_add_remove_consumer_one_topic() -> None:
    ppt = {T: 3}
    subs = {C1: member([T], generation=DEFAULT_GENERATION)}
    got = _assign(subs, ppt)
    assert got == {C1: parts((T, 0), (T, 1), (T, 2))}
    subs = {C1: member([T], got[C1]), C2: member([T])}
    assert sticky_assign(subs, ppt).transferring == {(T, 2): C2}
    final = settle(subs, _assign(subs, ppt), ppt)
    assert final == {C1: parts((T, 0), (T, 1)), C2: [(T, 2)]}
    subs = {C2: member([T], final[C2])}
    assert sticky_assign(subs, ppt).transferring == {}
    assert _assign(subs, ppt) == {C2: parts((T, 0), (T, 1), (T, 2))}


def test_reassignment_after_one_consumer_leaves() -> None:
    ppt = {f"topic{i:02d}": i for i in range(1, 20)}
    subs = {f"consumer{i:02d}": member([f"topic{j:02d}" for j in range(1, i + 1)]) for i in range(1, 20)}
    got = settle(subs, _assign(subs, ppt), ppt)
    subs = {m: member(s.topics, got[m]) for m, s in subs.items() if m != "consumer10"}
    before = {tp: m for m, tps in got.items() for tp in tps}
    final = settle(subs, _assign(subs, ppt), ppt)
    moved = [tp for m, tps in final.items() for tp in tps if before[tp] not in (m, "consumer10")]
    assert len(moved) <= len(got["consumer10"]), "sticky: only the leaver's partitions (and a few) move"


def test_reassignment_after_one_consumer_added() -> None:
    ppt = {T: 20}
    subs = {f"consumer{i}": member([T]) for i in range(1, 10)}
    first = sticky_assign(subs, ppt)
    assert first.transferring == {}
    subs["consumer10"] = member([T])
    again = sticky_assign(subs, ppt)
    assert again.transferring == {}
    settle(subs, cooperative_sticky_assign(subs, ppt), ppt)


def test_same_subscriptions() -> None:
    ppt = {f"topic{i:02d}": i for i in range(1, 15)}
    subs = {f"consumer{i}": member(sorted(ppt)) for i in range(1, 9)}
    first = sticky_assign(subs, ppt)
    assert first.transferring == {}
    got = settle(subs, _assign(subs, ppt), ppt)
    subs = {m: member(s.topics, got[m]) for m, s in subs.items() if m != "consumer5"}
    assert sticky_assign(subs, ppt).transferring == {}
    settle(subs, _assign(subs, ppt), ppt)


def test_all_consumers_reach_expected_quota_and_are_considered_filled() -> None:
    ppt = {T: 4}
    subs = {C1: member([T], [(T, 0), (T, 1)]), C2: member([T], [(T, 2)]), C3: member([T])}
    result = sticky_assign(subs, ppt)
    assert result.assignment == {C1: parts((T, 0), (T, 1)), C2: [(T, 2)], C3: [(T, 3)]}
    assert result.transferring == {}
    assert fully_balanced(settle(subs, _assign(subs, ppt), ppt))


def _stale(second_generation: int) -> None:
    ppt = {T: 3, T2: 3}
    claim = [(T, 0), (T, 2), (T2, 1)]
    subs = {C1: member([T, T2], claim, 10), C2: member([T, T2], claim, second_generation)}
    result = sticky_assign(subs, ppt)
    assert result.assignment == {C1: parts(*claim), C2: parts((T, 1), (T2, 0), (T2, 2))}
    assert result.transferring == {}
    assert fully_balanced(settle(subs, _assign(subs, ppt), ppt))


def test_owned_partitions_are_invalidated_for_consumer_with_stale_generation() -> None:
    _stale(9)


def test_owned_partitions_are_invalidated_for_consumer_with_no_generation() -> None:
    _stale(DEFAULT_GENERATION)


def test_partitions_transferring_ownership_include_the_partition_claimed_by_multiple_consumers_in_same_generation() -> (
    None
):
    ppt = {T: 3}
    subs = {C1: member([T], [(T, 0), (T, 1)]), C2: member([T], [(T, 0), (T, 2)]), C3: member([T])}
    assert sticky_assign(subs, ppt).transferring == {(T, 0): C3}
    final = settle(subs, _assign(subs, ppt), ppt)
    assert final == {C1: [(T, 1)], C2: [(T, 2)], C3: [(T, 0)]}


def test_ensure_partitions_assigned_to_highest_generation() -> None:
    ppt = {T: 3, T2: 3, T3: 3}
    topics = [T, T2, T3]
    subs = {
        C1: member(topics, [(T, 0), (T2, 0), (T3, 0)], 10),
        C2: member(topics, [(T, 1), (T2, 1), (T3, 1)], 9),
        C3: member(topics, [(T2, 1), (T3, 0), (T3, 2)], 8),
    }
    result = sticky_assign(subs, ppt)
    assert result.assignment == {
        C1: parts((T, 0), (T2, 0), (T3, 0)),
        C2: parts((T, 1), (T2, 1), (T3, 1)),
        C3: parts((T, 2), (T2, 2), (T3, 2)),
    }
    assert result.transferring == {}


def test_no_reassignment_on_current_members() -> None:
    ppt = {T: 3, T1: 3, T2: 3, T3: 3}
    topics = [T, T2, T3, T1]
    subs = {
        C1: member(topics, [], DEFAULT_GENERATION),
        C2: member(topics, [(T, 0), (T2, 0), (T1, 0)], 9),
        C3: member(topics, [(T3, 2), (T2, 2), (T1, 1)], 8),
        C4: member(topics, [(T3, 1), (T, 1), (T, 2)], 7),
    }
    result = sticky_assign(subs, ppt)
    assert result.assignment[C1] == parts((T1, 2), (T2, 1), (T3, 0))
    assert result.transferring == {}


def test_owned_partitions_are_invalidated_for_consumer_with_multiple_generation() -> None:
    ppt = {T: 3, T2: 3}
    subs = {
        C1: member([T, T2], [(T, 0), (T2, 1), (T, 1)], 10),
        C2: member([T, T2], [(T, 0), (T2, 1), (T2, 2)], 8),
    }
    result = sticky_assign(subs, ppt)
    assert result.assignment == {C1: parts((T, 0), (T2, 1), (T, 1)), C2: parts((T, 2), (T2, 2), (T2, 0))}
    assert result.transferring == {}


def test_reassignment_with_random_subscriptions_and_changes() -> None:
    rng = random.Random(429)
    for _round in range(20):
        topics = [f"topic{i:02d}" for i in range(rng.randrange(10, 20))]
        ppt = {t: i + 1 for i, t in enumerate(topics)}
        ids = [f"consumer{i:02d}" for i in range(rng.randrange(20, 40))]
        subs = {m: member(sorted(rng.sample(topics, rng.randrange(1, len(topics) + 1)))) for m in ids}
        got = settle(subs, _assign(subs, ppt), ppt)
        subs = {m: member(sorted(rng.sample(topics, rng.randrange(1, len(topics) + 1))), got[m]) for m in ids}
        settle(subs, _assign(subs, ppt), ppt)
