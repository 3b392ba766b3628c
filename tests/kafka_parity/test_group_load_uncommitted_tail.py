"""A new group coordinator answers nothing from a loaded tail above its high watermark.

Goal: a leader elected for a ``__consumer_offsets`` partition may hold group records the old
coordinator wrote but never committed (one ISR member was down, still in the ISR). Kafka 4.x
loads the log to its end (``CoordinatorLoaderImpl.load``) but holds every answer until the high
watermark passes the last written offset (``CoordinatorRuntime.CoordinatorWriteEvent``,
``deferredEventQueue``), so no client learns a generation that a later leader, elected from the
member that missed it, never knew. Found by seed 740195 of 'copier: static members restart'
(``--swarm``): a static member got generation 3 from such a tail, the next coordinator loaded
generation 2, rebalanced to a *different* generation 3, and the stale member's transaction passed
KIP-447 fencing: an input copied twice.
Method: a three-broker cluster on a fixed seed; two static members (engine client nodes sending raw
JoinGroup/SyncGroup) reach generation 1; the follower that would be elected second is crashed
(it stays in the ISR within ``broker.session.timeout.ms``); a third member's join makes
generation 2, whose record the coordinator appends but cannot commit; the coordinator crashes and
the other follower, which replicated that record, takes over. The engine answers
COORDINATOR_LOAD_IN_PROGRESS (retriable) until the tail is committed, where Kafka delays the
answer instead; once the lagging follower is fenced out of the ISR the tail is committed and
generation 2 is served.
"""

from __future__ import annotations

from typing import Any

from engine import Cluster
from engine.coordinator_lookup import CONSUMER_OFFSETS_TOPIC, KEY_TYPE_GROUP, partition_for
from engine.errors import ErrorCode
from engine.protocol import Assignment, FindCoordinatorRequest, JoinGroupRequest, Subscription, SyncGroupRequest

GROUP = "copiers"
SESSION_MS = 30_000


def _join(node: Any, member_id: str) -> JoinGroupRequest:
    sub = Subscription(("t",))
    return JoinGroupRequest(
        GROUP, SESSION_MS, SESSION_MS, member_id, node.name, "consumer", (("range", sub),), client_id=node.name
    )


def _ask(c: Cluster, to: str, asks: list[tuple[Any, Any]], *, until: int | None = None) -> dict[int, Any]:
    """Send each ``(node, request)`` to ``to``; run until all are answered (or for ``until`` ms)."""
    answers: dict[int, Any] = {}
    for i, (node, body) in enumerate(asks):
        node.request(to, body, lambda r, i=i: answers.__setitem__(i, r), 60_000)
    if until is None:
        c.run_until(lambda: len(answers) == len(asks))
    else:
        c.run_for(until)
    return answers


def test_no_answer_from_a_loaded_uncommitted_group_record() -> None:
    c = Cluster(seed=5, brokers=3, config={"min.insync.replicas": 2, "group.initial.rebalance.delay.ms": 0})
    c.create_topic("t", partitions=3, replication_factor=3)
    a, b, d = (c.consumer({"client.id": n}) for n in ("a", "b", "d"))
    found: list[Any] = []
    while not found or found[-1].error is not ErrorCode.NONE:
        asked = len(found)
        a.request("broker-1", FindCoordinatorRequest(GROUP, KEY_TYPE_GROUP), found.append, 10_000)
        c.run_until(lambda asked=asked: len(found) > asked)
        c.run_for(100)
    p = partition_for(GROUP, 50)
    state = c.controller.partitions[(CONSUMER_OFFSETS_TOPIC, p)]
    old = state.leader
    heir, lagging = (r for r in state.replicas if r != old)  # the heir is elected first (assignment order)
    coordinator = f"broker-{old}"

    # generation 1: a and b, committed on every replica
    j = _ask(c, coordinator, [(a, _join(a, "")), (b, _join(b, ""))])
    assert [r.generation_id for r in j.values()] == [1, 1]
    leader = next(r for r in j.values() if r.member_id == r.leader)
    members = [r.member_id for r in j.values()]
    shares = tuple((m, Assignment((("t", i),))) for i, m in enumerate(members))
    syncs = [
        (n, SyncGroupRequest(GROUP, 1, r.member_id, n.name, shares if r is leader else ()))
        for n, r in zip((a, b), j.values(), strict=True)
    ]
    assert [r.error for r in _ask(c, coordinator, syncs).values()] == [ErrorCode.NONE] * 2
    c.run_for(200)

    # the lagging follower goes down (still in the ISR); d joins: generation 2 is written, not committed
    c.crash(lagging)
    answers: dict[int, Any] = {}
    for i, (node, mid) in ((2, (d, "")), (0, (a, members[0])), (1, (b, members[1]))):
        node.request(coordinator, _join(node, mid), lambda r, i=i: answers.__setitem__(i, r), 60_000)
        c.run_for(20)  # d's join (the first) starts the rebalance; a and b rejoin into it
    c.run_until(lambda: len(answers) == 3)
    j2 = answers
    assert {r.generation_id for r in j2.values()} == {2}, {i: (r.error, r.generation_id) for i, r in j2.items()}
    leader2 = next(r for r in j2.values() if r.member_id == r.leader)
    members2 = [r.member_id for r in j2.values()]
    shares2 = tuple((m, Assignment((("t", i),))) for i, m in enumerate(members2))
    (i_lead,) = (i for i, r in j2.items() if r is leader2)
    node_lead = (a, b, d)[i_lead]
    unanswered = _ask(
        c, coordinator, [(node_lead, SyncGroupRequest(GROUP, 2, leader2.member_id, node_lead.name, shares2))], until=300
    )
    assert unanswered == {}, "the generation-2 record cannot be committed while an ISR member is down"
    tail = c.describe_partition(CONSUMER_OFFSETS_TOPIC, p)
    assert tail.high_watermark < tail.log_end_offset and lagging in tail.isr

    # the coordinator crashes and restarts at once (its new registration moves leadership away
    # before the lagging follower's session expires); the heir, holding the record, takes over
    c.crash(old)
    c.run_for(50)
    c.restart(old)
    c.run_until(lambda: c.leader(CONSUMER_OFFSETS_TOPIC, p) == heir)
    c.run_for(100)
    (i_other,) = (i for i, r in j2.items() if r is not leader2 and r.member_id in members)
    node = (a, b, d)[i_other]
    answer = _ask(c, f"broker-{heir}", [(node, SyncGroupRequest(GROUP, 2, j2[i_other].member_id, node.name, ()))])[0]
    assert answer.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, (
        f"generation 2 was never committed, yet the new coordinator answered {answer.error.name}"
        f" with {answer.assignment}"
    )

    # once the lagging follower is fenced and leaves the ISR, the tail is committed and served
    c.run_until(lambda: _committed(c, p))
    again = _ask(c, f"broker-{heir}", [(node, SyncGroupRequest(GROUP, 2, j2[i_other].member_id, node.name, ()))])[0]
    assert (again.error, again.assignment) == (ErrorCode.NONE, dict(shares2)[j2[i_other].member_id])


def _committed(c: Cluster, p: int) -> bool:
    v = c.describe_partition(CONSUMER_OFFSETS_TOPIC, p)
    return v.high_watermark == v.log_end_offset
