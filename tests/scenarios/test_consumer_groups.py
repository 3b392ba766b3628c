"""Consumer groups on ``__consumer_offsets``: membership, rebalances, committed offsets, KIP-447 fencing.

Goal: show that the classic group protocol behaves as Kafka's does where exactly-once depends on
it -- who owns which partition in which generation, what a group has committed, and when a
transactional offset commit becomes visible. Method: small clusters on fixed seeds; real
consumers (subscribe, commit, committed, group_metadata), real transactional producers, and a raw
client for hand-made TxnOffsetCommit / OffsetFetch / WriteTxnMarkers requests. Each test checks
the coordinator's frozen :class:`~engine.views.consumer_groups.GroupView`, the responses' error
codes and the trace. Test names read like rows of an error table.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine import Cluster
from engine.client.group_member import MemberState
from engine.client.message import TopicPartition
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for
from engine.errors import CommitFailedException, ErrorCode, UnknownMemberIdException
from engine.group.txn_offsets import UNSTABLE_OFFSET_RETRIED
from engine.protocol import (
    OffsetCommitRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
    WriteTxnMarkersRequest,
)
from tests.scenarios.conftest import RawClient, init_pid

GROUP = "g"
SESSION = {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000}


def _cluster(seed: int = 5, partitions: int = 4) -> Cluster:
    c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=partitions, replication_factor=3)
    return c


def _member(c: Cluster, name: str, **config: Any) -> Any:
    consumer = c.consumer({"group.id": GROUP, "client.id": name, **SESSION, **config})
    consumer.subscribe(["t"])
    return consumer


def _stable(c: Cluster, *consumers: Any, ms: int = 30_000) -> None:
    """Run until the group is Stable with exactly ``consumers`` as members, all in its generation."""
    end = c.now_ms + ms

    def done() -> bool:
        v = c.group_view(GROUP)
        return (
            v is not None
            and v.state == "Stable"
            and len(v.members) == len(consumers)
            and all(x.group.state is MemberState.STABLE and x.group.generation_id == v.generation for x in consumers)
        )

    c.run_until(lambda: done() or c.now_ms >= end)
    assert done(), f"group not stable: {c.group_view(GROUP)}"


def _coordinator(c: Cluster, group: str = GROUP) -> int:
    return c.leader(CONSUMER_OFFSETS_TOPIC, partition_for(group, 50))


def _produce(c: Cluster, per_partition: int, partitions: int = 4) -> None:
    p = c.producer({"linger.ms": 0})
    for i in range(per_partition):
        for part in range(partitions):
            p.produce("t", value=f"p{part}-{i}".encode(), partition=part)
    assert p.flush() == 0


def _drain(consumer: Any, timeout: float = 1.0) -> list[Any]:
    """Consume until a poll of ``timeout`` simulated seconds returns nothing."""
    out: list[Any] = []
    while got := consumer.consume(1_000, timeout=timeout):
        out.extend(got)
    return out


def _call(c: Cluster, client: RawClient, dst: int, body: Any) -> Any:
    box = client.call(f"broker-{dst}", body)
    c.run_until(lambda: bool(box))
    return box[0]


def _find_coordinator(c: Cluster, group: str = GROUP) -> int:
    """Make ``__consumer_offsets`` exist (first FindCoordinator) and return the group's coordinator."""
    consumer = c.consumer({"group.id": group})
    consumer.committed([("t", 0)], timeout=10)
    return _coordinator(c, group)


def _txn_commit(
    c: Cluster,
    client: RawClient,
    pid: int,
    offsets: tuple[tuple[str, int, int], ...],
    *,
    generation: int = -1,
    member: str = "",
) -> ErrorCode:
    req = TxnOffsetCommitRequest("tx", GROUP, pid, 0, generation, member, None, offsets)
    return _call(c, client, _coordinator(c), req).error


def _marker(c: Cluster, client: RawClient, pid: int, *, commit: bool) -> ErrorCode:
    """Write a marker to the group's partition exactly as the transaction coordinator does (WriteTxnMarkers)."""
    p = partition_for(GROUP, 50)
    req = WriteTxnMarkersRequest("tx", pid, 0, 0, commit, CONSUMER_OFFSETS_TOPIC, p)
    return _call(c, client, _coordinator(c), req).error


def _fetch(c: Cluster, client: RawClient, *, stable: bool) -> dict[tuple[str, int], Any]:
    resp = _call(c, client, _coordinator(c), OffsetFetchRequest(GROUP, (("t", 0), ("t", 1)), require_stable=stable))
    assert resp.error is ErrorCode.NONE
    return {
        (x.topic, x.partition): (x.error.name if x.error is not ErrorCode.NONE else x.offset) for x in resp.partitions
    }


# -- membership and rebalances ------------------------------------------------------------------


def test_two_members_split_four_partitions_by_the_range_assignor() -> None:
    c = _cluster()
    a, b = _member(c, "a"), _member(c, "b")
    _stable(c, a, b)
    v = c.group_view(GROUP)
    # Member ids start with the client id, so "a-…" sorts first and takes the first range.
    assert [tp.key() for tp in a.assignment()] == [("t", 0), ("t", 1)]
    assert [tp.key() for tp in b.assignment()] == [("t", 2), ("t", 3)]
    assert v.assignment == {a.group.member_id: (("t", 0), ("t", 1)), b.group.member_id: (("t", 2), ("t", 3))}
    assert v.protocol == "range"
    assert v.leader == a.group.member_id
    # MEMBER_ID_REQUIRED is the normal first answer (KIP-394), not an error.
    assert c.world.trace.select(name="group.join.error") == []


def test_third_member_joining_rebalances_the_group_and_bumps_the_generation() -> None:
    c = _cluster()
    a, b = _member(c, "a"), _member(c, "b")
    _stable(c, a, b)
    before = c.group_view(GROUP).generation
    x = _member(c, "c")
    _stable(c, a, b, x)
    v = c.group_view(GROUP)
    assert v.generation > before
    assert {len(m.assignment) for m in v.members} == {1, 2}  # 4 partitions, 3 members: 2, 1, 1
    assert sorted(tp.key() for cons in (a, b, x) for tp in cons.assignment()) == [("t", p) for p in range(4)]
    reasons = [e.get("reason") for e in c.world.trace.select(name="group.rebalance")]
    assert any(r.startswith("new member c-") for r in reasons)
    # The old members learnt of the rebalance from a heartbeat and rejoined.
    assert any(e.get("reason") == "heartbeat: REBALANCE_IN_PROGRESS" for e in c.world.trace.select(name="group.rejoin"))


def test_member_leaving_on_close_hands_its_partitions_over_at_once() -> None:
    c = _cluster()
    a, b = _member(c, "a"), _member(c, "b")
    _stable(c, a, b)
    b.close()
    _stable(c, a, ms=5_000)  # well before any session timeout
    assert [tp.key() for tp in a.assignment()] == [("t", p) for p in range(4)]
    assert c.world.trace.select(name="group.member.left")
    assert not c.world.trace.select(name="group.member.expired")


def test_paused_member_is_evicted_after_session_timeout_and_its_partitions_move() -> None:
    c = _cluster()
    a, b = _member(c, "a"), _member(c, "b")
    _stable(c, a, b)
    old = b.group_metadata()
    c.pause("b")
    c.run_for(15_000)  # session.timeout.ms = 10 s without a heartbeat
    v = c.group_view(GROUP)
    assert [m.member_id for m in v.members] == [a.group.member_id]
    assert [tp.key() for tp in a.assignment()] == [("t", p) for p in range(4)]
    assert v.generation > old.generation_id
    [expired] = c.world.trace.select(name="group.member.expired")
    assert expired.get("member") == old.member_id
    # Resumed, the zombie still believes in its old generation: this is what KIP-447 fences.
    c.resume("b")
    assert b.group_metadata() == old
    assert [tp.key() for tp in b.assignment()] == [("t", 2), ("t", 3)]


def test_resumed_zombie_commit_fails_with_commit_failed_then_it_rejoins() -> None:
    c = _cluster()
    _produce(c, 2)
    a, b = _member(c, "a"), _member(c, "b")
    _stable(c, a, b)
    c.pause("b")
    c.run_for(15_000)
    c.resume("b")
    with pytest.raises(CommitFailedException) as exc:
        b.commit(offsets=[TopicPartition("t", 2, 1)])  # a partition it no longer owns
    assert "UNKNOWN_MEMBER_ID" in str(exc.value)
    _stable(c, a, b)
    assert sorted(t.key() for t in a.assignment() + b.assignment()) == [("t", p) for p in range(4)]


def test_offset_commit_with_a_stale_generation_is_rejected_illegal_generation() -> None:
    c = _cluster()
    a, b = _member(c, "a"), _member(c, "b")
    _stable(c, a, b)
    gen = a.group.generation_id
    client = RawClient(c.world)
    stale = OffsetCommitRequest(GROUP, gen - 1, a.group.member_id, None, (("t", 0, 1),))
    assert _call(c, client, _coordinator(c), stale).error is ErrorCode.ILLEGAL_GENERATION
    stranger = OffsetCommitRequest(GROUP, gen, "nobody", None, (("t", 0, 1),))
    assert _call(c, client, _coordinator(c), stranger).error is ErrorCode.UNKNOWN_MEMBER_ID
    outsider = OffsetCommitRequest(GROUP, -1, "", None, (("t", 0, 1),))  # a non-empty group takes members only
    assert _call(c, client, _coordinator(c), outsider).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert c.group_view(GROUP).committed == ()


# -- committed offsets ----------------------------------------------------------------------------


def test_commit_then_fetch_round_trip_survives_a_crash_of_the_coordinator() -> None:
    c = _cluster()
    _produce(c, 5)
    a = _member(c, "a")
    _stable(c, a)
    assert len(_drain(a)) == 20
    committed = a.commit()
    assert {(t.topic, t.partition, t.offset) for t in committed} == {("t", p, 5) for p in range(4)}
    old = _coordinator(c)
    c.crash(old)
    c.run_until(lambda: _coordinator(c) not in (old, -1))
    new = _coordinator(c)
    got = a.committed([("t", p) for p in range(4)], timeout=30)
    assert [t.offset for t in got] == [5, 5, 5, 5]
    [load] = [e for e in c.world.trace.select(name="group.load.done") if e.node == f"broker-{new}"]
    assert load.get("groups") == [GROUP]
    # A new member of the group starts where the group left off, not at auto.offset.reset.
    a.close()
    fresh = _member(c, "z")
    _stable(c, fresh)
    assert _drain(fresh) == []
    assert fresh.position([("t", 0)])[0].offset == 5


def test_offset_fetch_during_coordinator_load_answers_load_in_progress() -> None:
    c = _cluster()
    old = _find_coordinator(c)
    client = RawClient(c.world)
    c.crash(old)
    c.run_until(lambda: _coordinator(c) not in (old, -1))
    # Asked the moment the new leader is elected: the load takes LOAD_DELAY_MS (5 ms).
    resp = _call(c, client, _coordinator(c), OffsetFetchRequest(GROUP, (("t", 0),)))
    assert resp.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_request_to_a_broker_that_does_not_lead_the_group_partition_gets_not_coordinator() -> None:
    c = _cluster()
    coordinator = _find_coordinator(c)
    other = next(b for b in sorted(c.brokers) if b != coordinator)
    client = RawClient(c.world)
    resp = _call(c, client, other, OffsetFetchRequest(GROUP, (("t", 0),)))
    assert resp.error is ErrorCode.NOT_COORDINATOR


# -- transactional offsets (KIP-98, KIP-447) ------------------------------------------------------


def test_txn_offset_commit_stays_pending_and_unstable_until_its_commit_marker() -> None:
    c = _cluster()
    _find_coordinator(c)
    client = RawClient(c.world)
    pid, _ = init_pid(c, client)
    assert _txn_commit(c, client, pid, (("t", 0, 7), ("t", 1, 3))) is ErrorCode.NONE
    v = c.group_view(GROUP)
    assert v.pending_transactional == ((pid, "t", 0, 7), (pid, "t", 1, 3))
    assert v.committed == ()
    assert _fetch(c, client, stable=True) == {("t", 0): "UNSTABLE_OFFSET_COMMIT", ("t", 1): "UNSTABLE_OFFSET_COMMIT"}
    assert _fetch(c, client, stable=False) == {("t", 0): -1, ("t", 1): -1}
    assert _marker(c, client, pid, commit=True) is ErrorCode.NONE
    v = c.group_view(GROUP)
    assert v.pending_transactional == ()
    assert v.committed == (("t", 0, 7), ("t", 1, 3))
    assert _fetch(c, client, stable=True) == {("t", 0): 7, ("t", 1): 3}


def test_txn_offset_commit_is_discarded_by_its_abort_marker() -> None:
    c = _cluster()
    _find_coordinator(c)
    client = RawClient(c.world)
    pid, _ = init_pid(c, client)
    plain = OffsetCommitRequest(GROUP, -1, "", None, (("t", 0, 2),))
    assert _call(c, client, _coordinator(c), plain).error is ErrorCode.NONE
    assert _txn_commit(c, client, pid, (("t", 0, 9),)) is ErrorCode.NONE
    assert _marker(c, client, pid, commit=False) is ErrorCode.NONE
    v = c.group_view(GROUP)
    assert v.pending_transactional == ()
    assert v.committed == (("t", 0, 2),)  # the plain commit from before the transaction stands
    assert _fetch(c, client, stable=True)[("t", 0)] == 2


def test_pending_and_committed_txn_offsets_are_replayed_from_the_log_after_failover() -> None:
    c = _cluster()
    _find_coordinator(c)
    client = RawClient(c.world)
    done, _ = init_pid(c, client)
    open_, _ = init_pid(c, client)
    assert _txn_commit(c, client, done, (("t", 0, 4),)) is ErrorCode.NONE
    assert _marker(c, client, done, commit=True) is ErrorCode.NONE
    assert _txn_commit(c, client, open_, (("t", 1, 6),)) is ErrorCode.NONE
    old = _coordinator(c)
    c.crash(old)
    c.run_until(lambda: _coordinator(c) not in (old, -1))
    c.run_for(50)  # the load
    v = c.group_view(GROUP)
    assert v.coordinator != old
    assert v.committed == (("t", 0, 4),)
    assert v.pending_transactional == ((open_, "t", 1, 6),)
    assert _fetch(c, client, stable=True)[("t", 1)] == "UNSTABLE_OFFSET_COMMIT"
    assert _marker(c, client, open_, commit=True) is ErrorCode.NONE  # the new coordinator settles it
    assert c.group_view(GROUP).committed == (("t", 0, 4), ("t", 1, 6))


def test_txn_offset_commit_with_a_stale_generation_is_rejected_illegal_generation_kip447() -> None:
    c = _cluster()
    a = _member(c, "a")
    _stable(c, a)
    md = a.group_metadata()
    client = RawClient(c.world)
    pid, _ = init_pid(c, client)
    offsets = (("t", 0, 1),)
    stale = _txn_commit(c, client, pid, offsets, generation=md.generation_id - 1, member=md.member_id)
    assert stale is ErrorCode.ILLEGAL_GENERATION
    assert (
        _txn_commit(c, client, pid, offsets, generation=md.generation_id, member="zombie")
        is ErrorCode.UNKNOWN_MEMBER_ID
    )
    # generation -1 with no member id is the pre-KIP-447 form (group id only): accepted.
    assert _txn_commit(c, client, pid, offsets) is ErrorCode.NONE
    assert _txn_commit(c, client, pid, offsets, generation=md.generation_id, member=md.member_id) is ErrorCode.NONE


def test_zombie_copier_is_fenced_by_kip447_after_its_partitions_moved() -> None:
    c = _cluster()
    _produce(c, 3)
    a, b = _member(c, "a", **{"isolation.level": "read_committed"}), _member(c, "b")
    _stable(c, a, b)
    _drain(a)
    producer = c.producer({"transactional.id": "copier-a", "linger.ms": 0})
    producer.init_transactions()
    zombie_md = a.group_metadata()
    c.pause("a")
    c.run_for(15_000)  # a is evicted; b owns everything in a new generation
    c.resume("a")
    producer.begin_transaction()
    # Kafka's client reports this as CommitFailedException; the simulated producer raises the code's own class.
    with pytest.raises((CommitFailedException, UnknownMemberIdException)):
        producer.send_offsets_to_transaction(a.position(a.assignment()), zombie_md)
    assert c.world.trace.marks["producer: stale group generation rejected (KIP-447)"] == 1
    producer.abort_transaction()
    assert c.group_view(GROUP).committed == ()


def test_send_offsets_to_transaction_commits_the_group_offsets_with_the_transaction() -> None:
    c = _cluster()
    _produce(c, 3)
    a = _member(c, "a", **{"isolation.level": "read_committed"})
    _stable(c, a)
    assert len(_drain(a)) == 12
    producer = c.producer({"transactional.id": "copier", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    producer.send_offsets_to_transaction(a.position(a.assignment()), a.group_metadata())
    assert c.group_view(GROUP).pending_transactional != ()
    producer.commit_transaction()
    c.run_for(100)
    v = c.group_view(GROUP)
    assert v.pending_transactional == ()
    assert v.committed == tuple(("t", p, 3) for p in range(4))
    assert [t.offset for t in a.committed([("t", p) for p in range(4)])] == [3, 3, 3, 3]


def test_a_read_committed_consumer_waits_for_offsets_pending_in_a_transaction_kip447() -> None:
    c = _cluster()
    _produce(c, 3)
    producer = c.producer({"transactional.id": "copier", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("t", 0, 2)], GROUP)  # the transaction stays open
    waiting = c.consumer({"group.id": GROUP, "isolation.level": "read_committed"})
    waiting.assign([("t", 0)])
    assert waiting.poll(2.0) is None  # OffsetFetch(require_stable) answers UNSTABLE_OFFSET_COMMIT, retried
    assert c.world.trace.marks[UNSTABLE_OFFSET_RETRIED] >= 1
    assert waiting.position([("t", 0)])[0].offset < 0
    # read_uncommitted does not wait: no committed offset yet, so auto.offset.reset (earliest) applies.
    eager = c.consumer({"group.id": GROUP})
    eager.assign([("t", 0)])
    assert eager.poll(2.0).offset() == 0
    producer.commit_transaction()
    first = waiting.poll(5.0)
    assert first is not None
    assert first.offset() == 2  # the offset the transaction committed


# -- kafka-consumer-groups.sh --describe ----------------------------------------------------------


def test_describe_prints_the_tool_columns_plus_lso_and_lag_to_lso_which_is_zero_under_an_open_txn() -> None:
    c = _cluster(partitions=1)
    producer = c.producer({"transactional.id": "tx", "linger.ms": 0})
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(3):
        producer.produce("t", value=f"c{i}".encode(), partition=0)
    producer.commit_transaction()  # offsets 0-2 data, 3 COMMIT marker
    producer.begin_transaction()
    producer.produce("t", value=b"open-1", partition=0)
    producer.produce("t", value=b"open-2", partition=0)
    producer.flush()  # offsets 4-5, transaction still open: HW 6, LSO 4
    consumer = c.consumer({"group.id": GROUP, "client.id": "reader", "isolation.level": "read_committed", **SESSION})
    consumer.subscribe(["t"])
    assert [m.value() for m in _drain(consumer, timeout=3)] == [b"c0", b"c1", b"c2"]
    consumer.commit()  # the position: past the COMMIT marker, at the open transaction
    text = c.describe_group(GROUP)
    lines = text.split("\n")
    assert lines[0] == "" and text.endswith("\n")
    header, row = lines[1], lines[2]
    assert header.split() == [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "LSO",
        "LAG-TO-LSO",
    ]
    member = consumer.group.member_id
    assert header.startswith("GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG ")
    assert row.split() == [GROUP, "t", "0", "4", "6", "2", member, "/reader", "reader", "4", "0"]
    # Widths: GROUP/TOPIC 15, PARTITION 10, offsets 15, CONSUMER-ID as wide as the member id.
    assert row.index(member) == header.index("CONSUMER-ID") == 16 + 16 + 11 + 16 * 3
    assert header.index("HOST") == header.index("CONSUMER-ID") + len(member) + 1


def test_describe_shows_dash_for_a_partition_without_a_committed_offset_and_for_an_ownerless_one() -> None:
    c = _cluster(partitions=2)
    client = RawClient(c.world)
    _find_coordinator(c)
    plain = OffsetCommitRequest(GROUP, -1, "", None, (("t", 1, 0),))
    assert _call(c, client, _coordinator(c), plain).error is ErrorCode.NONE
    text = c.describe_group(GROUP)
    assert text.startswith(f"\nConsumer group '{GROUP}' has no active members.\n")
    rows = [line.split() for line in text.split("\n")[4:] if line]
    assert rows == [[GROUP, "t", "1", "0", "0", "0", "-", "-", "-", "0", "0"]]
    assert c.describe_group("nope") == (
        "\nError: Executing consumer group command failed due to "
        "org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.\n"
    )


def test_describe_members_and_state_variants() -> None:
    c = _cluster()
    a, b = _member(c, "a"), _member(c, "b")
    _stable(c, a, b)
    members = c.describe_group(GROUP, members=True, verbose=True).split("\n")
    assert members[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "CURRENT-EPOCH",
        "CURRENT-ASSIGNMENT",
        "TARGET-EPOCH",
        "TARGET-ASSIGNMENT",
    ]
    assert members[2].split() == [GROUP, a.group.member_id, "/a", "a", "2", "-", "t:0,1", "-", "-"]
    state = c.describe_group(GROUP, state=True).split("\n")
    coordinator = _coordinator(c)
    assert state[1].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    assert state[2] == (
        f"{GROUP:<15} {f'broker-{coordinator}:9092  ({coordinator})':<25} {'range':<20} {'Stable':<20} 2"
    )


# -- client behaviours ----------------------------------------------------------------------------


def test_auto_commit_commits_consumed_positions_every_interval_when_enabled() -> None:
    c = _cluster()
    _produce(c, 2)
    a = _member(c, "a", **{"enable.auto.commit": True, "auto.commit.interval.ms": 1_000})
    _stable(c, a)
    assert len(_drain(a)) == 8
    c.run_for(2_000)
    assert c.group_view(GROUP).committed == tuple(("t", p, 2) for p in range(4))


def test_auto_commit_is_off_by_default_so_nothing_is_committed_without_commit() -> None:
    c = _cluster()
    _produce(c, 2)
    a = _member(c, "a")
    _stable(c, a)
    assert len(_drain(a)) == 8
    c.run_for(10_000)
    assert c.group_view(GROUP).committed == ()


def test_restarted_consumer_rejoins_as_a_new_member_and_resumes_from_the_committed_offsets() -> None:
    c = _cluster()
    _produce(c, 3)
    a = _member(c, "a")
    _stable(c, a)
    _drain(a)
    a.commit(offsets=[TopicPartition("t", p, 1) for p in range(4)])
    old_member = a.group.member_id
    c.crash("a")
    c.restart("a")
    _stable(c, a)
    assert a.group.member_id != old_member
    assert [m.offset() for m in _drain(a) if m.partition() == 0] == [1, 2]


def test_assign_with_a_group_id_starts_from_the_committed_offset_and_commits_outside_the_group_protocol() -> None:
    c = _cluster()
    _produce(c, 3)
    first = c.consumer({"group.id": GROUP})
    first.assign([("t", 0)])
    assert len(_drain(first)) == 3
    first.commit(offsets=[TopicPartition("t", 0, 2)])  # generation -1: the group stays Empty
    assert c.group_view(GROUP).state == "Empty"
    second = c.consumer({"group.id": GROUP})
    second.assign([("t", 0)])
    assert [m.offset() for m in _drain(second)] == [2]
