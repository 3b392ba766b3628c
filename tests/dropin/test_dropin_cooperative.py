"""Consumer groups through the drop-in as confluent-kafka runs them: cooperative-sticky, roundrobin, static members.

Goal: a confluent-kafka program using ``partition.assignment.strategy`` or ``group.instance.id``
runs unchanged on the simulation and sees the rebalance callbacks confluent-kafka 2.16.1 calls
on Kafka 4.4. Method: the expected sequences were recorded by running the same program with real
confluent-kafka against a Kafka 4.4 cluster (``engine.conform.realtime_reference.KafkaReference``):
which half a member keeps depends on member ids (random UUIDs on Kafka), so the sequences are
compared with the halves named ``X`` (the half that moves) and ``Y`` (the half that stays).
"""

from __future__ import annotations

from typing import Any

import pytest

import eos_magics.kafka as kafka
from eos_magics.kafka import Consumer, KafkaError, KafkaException

ALL = [0, 1, 2, 3]
GROUP_SETTINGS = {
    "bootstrap.servers": "localhost:9092",
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 500,
    "auto.offset.reset": "earliest",
}


@pytest.fixture
def topic(cluster: Any) -> str:
    cluster.create_topic("four", partitions=4)
    return "four"


def owns(c: Consumer) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


class Member:
    """A subscribed drop-in consumer recording each callback with the assignment it saw then (as the reference did)."""

    def __init__(self, topic: str, group: str = "g", explicit: bool = False, **config: Any) -> None:
        self.events: list[list[Any]] = []
        self.c = Consumer({**GROUP_SETTINGS, "group.id": group, **config})

        def record(kind: str, incremental: str | None) -> Any:
            def cb(c: Consumer, tps: list[Any]) -> None:
                self.events.append([kind, sorted(tp.partition for tp in tps), owns(c)])
                if explicit and incremental is not None:
                    getattr(c, incremental)(tps)

            return cb

        self.c.subscribe(
            [topic],
            on_assign=record("assign", "incremental_assign"),
            on_revoke=record("revoke", "incremental_unassign"),
            on_lost=record("lost", None),
        )


def poll_until(members: list[Member], cond: Any, rounds: int = 300) -> None:
    for _ in range(rounds):
        for m in members:
            m.c.poll(0.1)
        if cond():
            return
    raise AssertionError(f"not reached: {[owns(m.c) for m in members]}")


@pytest.mark.parametrize("explicit", [False, True], ids=["consumer-applies", "callback-applies"])
def test_two_cooperative_members_share_four_partitions_then_one_owns_all(topic: str, explicit: bool) -> None:
    a = Member(topic, explicit=explicit, **{"partition.assignment.strategy": "cooperative-sticky"})
    poll_until([a], lambda: owns(a.c) == ALL)
    b = Member(topic, explicit=explicit, **{"partition.assignment.strategy": "cooperative-sticky"})
    poll_until([a, b], lambda: len(owns(a.c)) == 2 and len(owns(b.c)) == 2)
    for _ in range(10):
        a.c.poll(0.1)
        b.c.poll(0.1)
    x, y = owns(b.c), owns(a.c)
    b.c.close()
    poll_until([a], lambda: owns(a.c) == ALL)
    for _ in range(10):
        a.c.poll(0.1)
    a.c.close()
    # confluent-kafka 2.16.1 on Kafka 4.4, the same program (callback, partitions, assignment() inside it):
    assert a.events == [
        ["assign", ALL, []],
        ["revoke", x, ALL],  # only the half that moves, while a still has all four
        ["assign", [], y],  # the rebalance's own round: nothing new
        ["assign", [], y],  # the follow-up rebalance a's rejoin started: b gets x there
        ["assign", x, y],  # b left: x comes back
        ["revoke", ALL, ALL],  # close()
    ]
    assert b.events == [["assign", [], []], ["assign", x, []], ["revoke", x, x]]


def test_a_member_joining_a_group_of_one_revokes_exactly_the_two_partitions_that_move(topic: str) -> None:
    coop = {"partition.assignment.strategy": "cooperative-sticky"}
    a = Member(topic, **coop)
    poll_until([a], lambda: owns(a.c) == ALL)
    b = Member(topic, **coop)
    poll_until([a, b], lambda: len(owns(b.c)) == 2)
    revoked = [p for kind, ps, _ in a.events if kind == "revoke" for p in ps]
    assert revoked == owns(b.c) and sorted(revoked + owns(a.c)) == ALL
    assert a.c.memberid() != b.c.memberid()


def test_static_member_restart_keeps_its_partitions_and_close_sends_no_leave(cluster: Any, topic: str) -> None:
    coop = {"partition.assignment.strategy": "cooperative-sticky"}
    a = Member(topic, **coop, **{"group.instance.id": "a"})
    b = Member(topic, **coop, **{"group.instance.id": "b"})
    poll_until([a, b], lambda: len(owns(a.c)) == 2 and len(owns(b.c)) == 2)
    kept = owns(b.c)
    b.c.close()
    view = cluster.group_view("g")
    assert len(view.members) == 2, "a static member's close() sends no LeaveGroup (KIP-345)"
    again = Member(topic, **coop, **{"group.instance.id": "b"})
    poll_until([a, again], lambda: owns(again.c) == kept)
    assert owns(a.c) != kept and not [e for e in a.events if e[0] == "revoke"]


def test_roundrobin_deals_the_partitions_in_turn(topic: str) -> None:
    rr = {"partition.assignment.strategy": "roundrobin"}
    a, b = Member(topic, **rr), Member(topic, **rr)
    poll_until([a, b], lambda: len(owns(a.c)) == 2 and len(owns(b.c)) == 2)
    assert sorted([owns(a.c), owns(b.c)]) == [[0, 2], [1, 3]]


@pytest.mark.parametrize("value", ["range,cooperative-sticky", "cooperative-sticky,roundrobin"])
def test_mixing_eager_and_cooperative_assignors_is_refused_as_librdkafka_refuses_it(cluster: Any, value: str) -> None:
    with pytest.raises(KafkaException) as info:
        Consumer({"group.id": "g", "partition.assignment.strategy": value})
    err = info.value.args[0]
    assert err.code() == KafkaError._INVALID_ARG
    assert err.str() == (
        f"Failed to create consumer: All partition.assignment.strategy ({value}) assignors must have the same "
        "protocol type, online migration between assignors with different protocol types is not supported"
    )


def test_unknown_assignor_is_refused_and_an_empty_value_is_librdkafkas_default(cluster: Any) -> None:
    with pytest.raises(KafkaException, match=r"Unsupported partition\.assignment\.strategy: sticky"):
        Consumer({"group.id": "g", "partition.assignment.strategy": "sticky"})
    c = Consumer({"group.id": "g", "partition.assignment.strategy": ""})
    assert c.engine.config.partition_assignment_strategy == "range,roundrobin"
    assert kafka.Consumer({"group.id": "g", "partition.assignment.strategy": "range, roundrobin"}).engine
