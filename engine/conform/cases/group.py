"""Consumer group cases (the classic protocol): join, share, leave, offsets, failover, static members."""

from __future__ import annotations

from typing import Any

from confluent_kafka import TopicPartition

from engine.conform.case import Bounds, Ctx, case
from engine.conform.cases.common import CALL_S, assignment_of, make_topic, poll_until, send

#: Group timings short enough for a test, the same on both targets.
MEMBER = {
    "session.timeout.ms": 6000,
    "heartbeat.interval.ms": 500,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
}
#: Group timings vary with heartbeats and the JVM: within 3x and 3 s of each other.
GROUP_BOUNDS = Bounds(3.0, 3.0)


class Member:
    """A subscribed consumer and the rebalance callbacks confluent-kafka called on it."""

    #: The client config every member of this kind starts from.
    BASE: dict[str, Any] = MEMBER

    def __init__(self, ctx: Ctx, group: str, topic: str, **config: Any) -> None:
        self.events: list[list[Any]] = []
        self.consumer = ctx.consumer(**{"group.id": group, **self.BASE, **config})
        self.consumer.subscribe(
            [topic],
            on_assign=lambda c, tps: self.events.append(["assign", sorted(tp.partition for tp in tps)]),
            on_revoke=lambda c, tps: self.events.append(["revoke", sorted(tp.partition for tp in tps)]),
            on_lost=lambda c, tps: self.events.append(["lost", sorted(tp.partition for tp in tps)]),
        )

    def owns(self) -> list[int]:
        return assignment_of(self.consumer)


def _one_then_another(ctx: Ctx, group: str, topic: str) -> tuple[Member, Member, bool, float]:
    """Let one member own all 4 partitions of ``topic``, then add a second; return both, whether the
    group became stable, and the seconds from the second's start until then.

    The first owns the group before the second joins, so "second" names the same member on every
    target (two JoinGroups sent at once reach the coordinator in either order).
    """
    first = Member(ctx, group, topic)
    poll_until(ctx, [first.consumer], lambda: owns_all([first], 4))
    start = ctx.seconds()
    second = Member(ctx, group, topic)
    stable = poll_until(ctx, [first.consumer, second.consumer], lambda: owns_all([first, second], 4))
    return first, second, stable, ctx.seconds() - start


def owns_all(members: list[Member], partitions: int) -> bool:
    owned = [p for m in members for p in m.owns()]
    return sorted(owned) == list(range(partitions)) and all(m.owns() for m in members)


@case(
    "group.join", "groups", "one member subscribes to 4 partitions: all four, and how long it took", bounds=GROUP_BOUNDS
)
def join(ctx: Ctx) -> None:
    topic = make_topic(ctx, "j", 4)
    start = ctx.seconds()
    member = Member(ctx, ctx.name("g"), topic)
    ctx.observe("stable", poll_until(ctx, [member.consumer], lambda: owns_all([member], 4)))
    ctx.timing("until-assigned", ctx.seconds() - start)
    ctx.observe("events", member.events)


@case(
    "group.second-member",
    "groups",
    "a second member joins: the range assignor splits 4 partitions 2 and 2",
    bounds=GROUP_BOUNDS,
)
def second_member(ctx: Ctx) -> None:
    topic = make_topic(ctx, "s", 4)
    first, second, stable, took = _one_then_another(ctx, ctx.name("g"), topic)
    ctx.observe("stable", stable)
    ctx.timing("until-stable", took)
    ctx.observe("sizes", sorted([len(first.owns()), len(second.owns())]))
    ctx.observe("ranges-contiguous", all(m.owns() in ([0, 1], [2, 3]) for m in (first, second)))
    ctx.observe("first-events", [e[0] for e in first.events])


@case("group.leave", "groups", "one of two members closes (LeaveGroup): the other owns all four", bounds=GROUP_BOUNDS)
def leave(ctx: Ctx) -> None:
    topic = make_topic(ctx, "l", 4)
    group = ctx.name("g")
    first, second, _stable_now, _took = _one_then_another(ctx, group, topic)
    start = ctx.seconds()
    second.consumer.close()
    ctx.observe("stable", poll_until(ctx, [first.consumer], lambda: first.owns() == [0, 1, 2, 3]))
    ctx.timing("until-all-four", ctx.seconds() - start)
    # Which half the second member had depends on the member ids (random UUIDs on Kafka): observe
    # that it was given two partitions and revoked exactly those when it left.
    kinds = [kind for kind, _parts in second.events]
    ctx.observe("second-events", kinds)
    ctx.observe("second-revoked-what-it-had", [len(second.events[0][1]), second.events[0][1] == second.events[-1][1]])


@case("group.commit-and-resume", "groups", "committed offsets: committed() reads them, a new member resumes there")
def commit_and_resume(ctx: Ctx) -> None:
    topic = make_topic(ctx, "o")
    send(ctx.producer(**{"enable.idempotence": True}), topic, [f"v-{i}" for i in range(10)])
    group = ctx.name("g")
    member = Member(ctx, group, topic)
    taken: list[int] = []
    poll_until(ctx, [], lambda: _take(member, taken, 6))
    ctx.attempt("commit", member.consumer.commit, offsets=[TopicPartition(topic, 0, 6)], asynchronous=False)
    ctx.observe("committed", [tp.offset for tp in member.consumer.committed([TopicPartition(topic, 0)], CALL_S)])
    member.consumer.close()
    successor = Member(ctx, group, topic)
    rest: list[int] = []
    poll_until(ctx, [], lambda: _take(successor, rest, 4))
    ctx.observe("taken", taken[:6])
    ctx.observe("successor-took", rest)


def _take(member: Member, into: list[int], count: int) -> bool:
    for m in member.consumer.consume(count, 0.2):
        if m.error() is None and len(into) < count:
            into.append(m.offset())
    return len(into) >= count


@case("group.committed-unknown", "groups", "committed() for a group that never committed: OFFSET_INVALID (-1001)")
def committed_unknown(ctx: Ctx) -> None:
    topic = make_topic(ctx, "u")
    consumer = ctx.consumer(**{"group.id": ctx.name("never")})
    ctx.observe("committed", [tp.offset for tp in consumer.committed([TopicPartition(topic, 0)], CALL_S)])


@case(
    "group.failover-after-leave",
    "groups",
    "the only member leaves, the coordinator dies: a new member is assigned after the election, not a session later",
    faults=True,
    bounds=Bounds(3.0, 5.0),
)
def failover_after_leave(ctx: Ctx) -> None:
    topic = make_topic(ctx, "fl", 2)
    group = ctx.name("g")
    first = Member(ctx, group, topic, **{"session.timeout.ms": 30_000})
    poll_until(ctx, [first.consumer], lambda: owns_all([first], 2))
    first.consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    first.consumer.close()
    ctx.fault(f"kill coordinator group {group}")
    start = ctx.seconds()
    second = Member(ctx, group, topic)
    ctx.observe("stable", poll_until(ctx, [second.consumer], lambda: owns_all([second], 2), seconds=90))
    ctx.timing("until-assigned", ctx.seconds() - start)
    ctx.observe("committed", [tp.offset for tp in second.consumer.committed([TopicPartition(topic, 0)], CALL_S)])


@case(
    "group.member-through-failover",
    "groups",
    "a live member's coordinator dies: it keeps its partitions on the new coordinator and can commit",
    faults=True,
    bounds=Bounds(3.0, 5.0),
)
def member_through_failover(ctx: Ctx) -> None:
    topic = make_topic(ctx, "mf", 2)
    send(ctx.producer(**{"enable.idempotence": True}), topic, ["v-0", "v-1"])
    group = ctx.name("g")
    member = Member(ctx, group, topic)
    poll_until(ctx, [member.consumer], lambda: owns_all([member], 2))
    ctx.fault(f"kill coordinator group {group}")
    start = ctx.seconds()

    def committed() -> bool:
        member.consumer.poll(0.2)
        try:
            member.consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        except Exception:
            return False
        return True

    ctx.observe("commit-on-new-coordinator", ctx.wait_until(committed, 60, 0.2))
    ctx.timing("until-commit", ctx.seconds() - start)
    ctx.observe("owns", member.owns())
    ctx.observe("events", member.events)
    ctx.observe("committed", [tp.offset for tp in member.consumer.committed([TopicPartition(topic, 0)], CALL_S)])


@case(
    "group.static-rejoin",
    "groups",
    "a static member (group.instance.id) restarts within its session: same partitions, the other member undisturbed",
    bounds=GROUP_BOUNDS,
)
def static_rejoin(ctx: Ctx) -> None:
    topic = make_topic(ctx, "st", 4)
    group = ctx.name("g")
    a = Member(ctx, group, topic, **{"group.instance.id": "a", "session.timeout.ms": 20_000})
    b = Member(ctx, group, topic, **{"group.instance.id": "b", "session.timeout.ms": 20_000})
    ctx.observe("stable", poll_until(ctx, [a.consumer, b.consumer], lambda: owns_all([a, b], 4)))
    before = a.owns()
    b_events = len(b.events)
    a.consumer.close()
    start = ctx.seconds()
    again = Member(ctx, group, topic, **{"group.instance.id": "a", "session.timeout.ms": 20_000})
    ctx.observe("rejoined", poll_until(ctx, [again.consumer, b.consumer], lambda: again.owns() == before, 30))
    ctx.timing("until-rejoined", ctx.seconds() - start)
    poll_until(ctx, [again.consumer, b.consumer], lambda: False, 2)
    ctx.observe("other-member-events-after", b.events[b_events:])


@case(
    "group.static-fenced",
    "groups",
    "two live members with one group.instance.id: the older one is fenced (FENCED_INSTANCE_ID)",
)
def static_fenced(ctx: Ctx) -> None:
    topic = make_topic(ctx, "sf", 2)
    group = ctx.name("g")
    old = Member(ctx, group, topic, **{"group.instance.id": "same"})
    poll_until(ctx, [old.consumer], lambda: owns_all([old], 2))
    new = Member(ctx, group, topic, **{"group.instance.id": "same"})
    errors: set[str] = set()

    def fenced() -> bool:
        for consumer in (old.consumer, new.consumer):
            try:
                m = consumer.poll(0.1)
            except Exception as exc:
                errors.add(_name(exc))
                continue
            if m is not None and m.error() is not None:
                errors.add(str(m.error().name()))
        return bool(errors) and bool(new.owns())

    ctx.observe("fenced", poll_until(ctx, [], fenced, 30))
    ctx.observe("errors", sorted(errors))
    ctx.observe("new-owns", new.owns())


def _name(exc: Exception) -> str:
    from engine.record.confluent import error_name

    return error_name(exc)


#: KIP-429's incremental rebalancing, as librdkafka runs it with this assignor.
COOPERATIVE = {"partition.assignment.strategy": "cooperative-sticky"}


@case(
    "group.cooperative",
    "groups",
    "cooperative-sticky: a second member joins, the first revokes exactly the two partitions that move; "
    "then it leaves and the first is incrementally assigned them back",
    bounds=GROUP_BOUNDS,
)
def cooperative(ctx: Ctx) -> None:
    topic = make_topic(ctx, "co", 4)
    group = ctx.name("g")
    first = Member(ctx, group, topic, **COOPERATIVE)
    poll_until(ctx, [first.consumer], lambda: owns_all([first], 4))
    start = ctx.seconds()
    second = Member(ctx, group, topic, **COOPERATIVE)
    ctx.observe("shared", poll_until(ctx, [first.consumer, second.consumer], lambda: owns_all([first, second], 4)))
    ctx.timing("until-shared", ctx.seconds() - start)
    # The second member owns its two when its SyncGroup answer of the follow-up round lands; the first
    # member's answer of that round (an empty incremental assign) may land a moment later, on Kafka as
    # here. Let the round finish before reading the events, so none falls to either side by timing.
    poll_until(ctx, [first.consumer, second.consumer], lambda: False, 2)
    # Which two move depends on the member ids (random UUIDs on Kafka): observe how many, and that
    # the second member was given exactly what the first revoked (incremental: nothing else moved).
    revoked = sorted(p for kind, parts in first.events if kind == "revoke" for p in parts)
    added = sorted(p for kind, parts in second.events if kind == "assign" for p in parts)
    ctx.observe("first-revoked-count", len(revoked))
    ctx.observe("second-assigned-what-first-revoked", added == revoked)
    ctx.observe("first-kept-the-rest", first.owns() == sorted(set(range(4)) - set(revoked)))
    ctx.observe("first-events-when-shared", _shape(first.events, revoked))
    ctx.observe("second-events-when-shared", _shape(_settled(second.events), revoked))
    before = len(first.events)
    start = ctx.seconds()
    second.consumer.close()
    ctx.observe("first-owns-all", poll_until(ctx, [first.consumer], lambda: first.owns() == [0, 1, 2, 3]))
    ctx.timing("until-all-four", ctx.seconds() - start)
    poll_until(ctx, [first.consumer], lambda: False, 2)
    ctx.observe("first-events-after-leave", _shape(first.events[before:], revoked))
    ctx.observe("second-events", _shape(_settled(second.events), revoked))


def _settled(events: list[list[Any]]) -> list[list[Any]]:
    """Return the events without empty assignments: what the joining member sees of a race between clients.

    The first round gives the joining member nothing. Whether its ``on_assign([])`` is called depends on
    whether its SyncGroup reaches the coordinator before the leader, answered already, rejoins to give up
    what moves: after the rejoin the group is preparing the next round, and Kafka answers the late
    SyncGroup with REBALANCE_IN_PROGRESS (``GroupMetadataManager.classicGroupSyncToClassicGroup``), as
    ``eos serve`` does; librdkafka then rejoins without calling ``on_assign``. Both orders happen on a
    loaded machine, and neither says anything about the broker, so only the assignments that give
    partitions are compared.
    """
    return [e for e in events if e[0] != "assign" or e[1]]


def _shape(events: list[list[Any]], moved: list[int]) -> list[list[Any]]:
    """Return rebalance events with partitions named by whether they moved (``moved``) or stayed."""
    return [[kind, sorted("moved" if p in moved else "stayed" for p in parts)] for kind, parts in events]
