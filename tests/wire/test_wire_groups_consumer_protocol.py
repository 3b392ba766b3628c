"""Real confluent-kafka consumers with ``group.protocol=consumer`` (KIP-848) on ``eos serve``.

Goal: librdkafka 2.16's consumer-protocol client works against the engine's coordinator over
ConsumerGroupHeartbeat (API key 68): two members share a four-partition topic two and two, and
when one closes the other is assigned all four; the rebalance callbacks are recorded as
confluent-kafka calls them (incremental under KIP-848: ``on_assign`` gets only the added
partitions, ``on_revoke`` only the removed ones). ConsumerGroupDescribe (69) is checked with a raw
call. Method: a served three-broker cluster; consumers poll in this thread.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer
from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest

from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, partition_for
from engine.wire import frames


class _Member:
    """A consumer that records its callbacks: ``("assign"|"revoke"|"lost", [partitions])``."""

    def __init__(self, conf: dict[str, Any], name: str) -> None:
        self.name = name
        self.calls: list[tuple[str, list[int]]] = []
        self.owned: set[int] = set()
        self.consumer = Consumer({**conf, "client.id": name})
        self.consumer.subscribe(["t"], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lost)

    def _assign(self, _c: Any, ps: list[Any]) -> None:
        got = sorted(p.partition for p in ps)
        self.calls.append(("assign", got))
        self.owned |= set(got)

    def _revoke(self, _c: Any, ps: list[Any]) -> None:
        got = sorted(p.partition for p in ps)
        self.calls.append(("revoke", got))
        self.owned -= set(got)

    def _lost(self, _c: Any, ps: list[Any]) -> None:
        got = sorted(p.partition for p in ps)
        self.calls.append(("lost", got))
        self.owned -= set(got)


def _poll_until(members: list[_Member], done: Any, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not done() and time.monotonic() < end:
        for m in members:
            m.consumer.poll(0.05)


def test_two_members_share_four_partitions_and_the_survivor_owns_all_four(served, ck, raw_call) -> None:
    server = served([("t", 4, 3)])
    conf = {**ck(server), "group.id": "g848", "group.protocol": "consumer", "auto.offset.reset": "earliest"}
    a = _Member(conf, "a")
    _poll_until([a], lambda: a.owned == {0, 1, 2, 3}, 30)
    assert a.owned == {0, 1, 2, 3}, a.calls
    b = _Member(conf, "b")
    _poll_until([a, b], lambda: len(a.owned) == 2 and len(b.owned) == 2, 30)
    assert len(a.owned) == 2 and len(b.owned) == 2 and not a.owned & b.owned, (a.calls, b.calls)
    # incremental callbacks: a gave up exactly the two partitions b then received
    assert a.calls[0] == ("assign", [0, 1, 2, 3])
    # librdkafka then calls on_assign with no partitions: the incremental assign of that epoch
    assert a.calls[1:] == [("revoke", sorted(b.owned)), ("assign", [])]
    assert b.calls == [("assign", sorted(b.owned))]

    with server.locked() as cluster:
        coordinator = cluster.leader(CONSUMER_OFFSETS_TOPIC, partition_for("g848", 50))
    describe = ConsumerGroupDescribeRequest(group_ids=("g848",), include_authorized_operations=False)
    resp = raw_call(server, 69, 0, describe, broker=coordinator)
    (g,) = resp.groups
    assert (g.error_code.value, g.group_state, g.assignor_name) == (0, "Stable", "uniform")
    assert sorted(len(m.assignment.topic_partitions[0].partitions) for m in g.members) == [2, 2]

    moved = sorted(b.owned)
    b.consumer.close()
    _poll_until([a], lambda: a.owned == {0, 1, 2, 3}, 30)
    assert a.owned == {0, 1, 2, 3}, a.calls
    assert a.calls[-1] == ("assign", moved), a.calls
    assert b.calls[-1] == ("revoke", moved), b.calls  # close() revoked what it owned
    a.consumer.close()


def test_consumer_group_heartbeat_is_advertised() -> None:
    assert frames.SERVED[68] == ("ConsumerGroupHeartbeat", 0, 1)
    assert frames.SERVED[69] == ("ConsumerGroupDescribe", 0, 1)
