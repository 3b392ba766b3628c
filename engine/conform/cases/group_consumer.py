"""Consumer group cases of the consumer protocol (KIP-848, ``group.protocol=consumer``).

Role
----
The same client programs as :mod:`engine.conform.cases.group`, with confluent-kafka's KIP-848
consumer: the broker assigns (the ``uniform`` assignor by default), the member heartbeats
(ConsumerGroupHeartbeat) and reconciles, and the session timeout and heartbeat interval are
broker settings (``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``
in :data:`engine.conform.settings.BROKER_SETTINGS`), not the client's. Callbacks are observed as
confluent-kafka calls them: with the consumer protocol every assignment is incremental, so
``on_assign`` gets what was added and ``on_revoke`` what was taken away.

Invariants
----------
* A member that must crash runs in a child process (:class:`Child`) killed with SIGKILL: it
  neither leaves nor heartbeats again, as a crashed application; the broker fences it after the
  session timeout and its partitions move to the survivor.
* Member ids are random on Kafka: cases observe sizes, kinds and set relations, never which
  partition went to which member id.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine.conform.case import Bounds, Ctx, case
from engine.conform.cases.common import make_topic, poll_until
from engine.conform.cases.group import Member, owns_all

#: The client side of a KIP-848 member: no session.timeout.ms / heartbeat.interval.ms (refused
#: by confluent-kafka with ``group.protocol=consumer``: the broker owns them).
CONSUMER = {"group.protocol": "consumer", "enable.auto.commit": False, "auto.offset.reset": "earliest"}
#: Joins and reconciliations take a heartbeat or two (1 s each here) on both: within 2x and 1 s.
JOIN_BOUNDS = Bounds(2.0, 1.0)
#: A crashed member's partitions move one session timeout (6 s here) after its last heartbeat,
#: plus a heartbeat or two of the survivor: within 1.5x and 2 s, so a coordinator that never
#: expires sessions (or expires them at once) diverges.
CRASH_BOUNDS = Bounds(1.5, 2.0)


class ConsumerMember(Member):
    """:class:`~engine.conform.cases.group.Member` with the consumer protocol's client config."""

    BASE = CONSUMER


def _member(ctx: Ctx, group: str, topic: str, **config: Any) -> Member:
    return ConsumerMember(ctx, group, topic, **config)


def _two_members(
    ctx: Ctx, group: str, topic: str, first_config: Any = None, second_config: Any = None
) -> tuple[Member, Member, bool, float]:
    """Let one member own all four partitions, then add a second; return both, whether they share
    2 and 2, and the seconds from the second's start until then."""
    first = _member(ctx, group, topic, **(first_config or {}))
    poll_until(ctx, [first.consumer], lambda: first.owns() == [0, 1, 2, 3])
    start = ctx.seconds()
    second = _member(ctx, group, topic, **(second_config or {}))
    shared = poll_until(
        ctx,
        [first.consumer, second.consumer],
        lambda: owns_all([first, second], 4) and len(first.owns()) == 2,
    )
    return first, second, shared, ctx.seconds() - start


def _kinds(events: list[list[Any]]) -> list[list[Any]]:
    """Return ``events`` with each partition list replaced by its size (which ones is random)."""
    return [[kind, len(parts)] for kind, parts in events]


@case(
    "group.consumer.join",
    "groups",
    "KIP-848: one member (group.protocol=consumer) subscribes to 4 partitions: all four, one on_assign",
    bounds=JOIN_BOUNDS,
)
def join(ctx: Ctx) -> None:
    topic = make_topic(ctx, "j", 4)
    start = ctx.seconds()
    member = _member(ctx, ctx.name("g"), topic)
    ctx.observe("assigned", poll_until(ctx, [member.consumer], lambda: member.owns() == [0, 1, 2, 3]))
    ctx.timing("until-assigned", ctx.seconds() - start)
    poll_until(ctx, [member.consumer], lambda: False, 2)
    ctx.observe("events", member.events)


@case(
    "group.consumer.leave",
    "groups",
    "KIP-848: two members share 4 partitions 2 and 2; one closes: the other owns all four",
    bounds=JOIN_BOUNDS,
)
def leave(ctx: Ctx) -> None:
    topic = make_topic(ctx, "l", 4)
    first, second, shared, took = _two_members(ctx, ctx.name("g"), topic)
    ctx.observe("shared-2-and-2", shared)
    ctx.timing("until-shared", took)
    moved = second.owns()
    ctx.observe("first-revoked-what-second-got", [e for e in first.events if e[0] == "revoke"] == [["revoke", moved]])
    first_before = len(first.events)
    start = ctx.seconds()
    second.consumer.close()
    ctx.observe("all-four", poll_until(ctx, [first.consumer], lambda: first.owns() == [0, 1, 2, 3]))
    ctx.timing("until-all-four", ctx.seconds() - start)
    poll_until(ctx, [first.consumer], lambda: False, 2)
    ctx.observe("first-events", _kinds(first.events))
    ctx.observe("first-events-after-leave", [[k, p == moved] for k, p in first.events[first_before:]])
    ctx.observe("second-events", _kinds(second.events))
    ctx.observe("second-revoked-what-it-had", second.events[-1] == ["revoke", moved])


class Child:
    """A KIP-848 member in a child process: it writes each callback as a JSON line to a file.

    :meth:`kill` sends SIGKILL: the member leaves no LeaveGroup and sends no heartbeat again.
    """

    _PROGRAM = """
import json, sys
from confluent_kafka import Consumer
config, topic, out = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
def note(kind):
    def call(consumer, tps):
        with open(out, "a") as f:
            f.write(json.dumps([kind, sorted(tp.partition for tp in tps)]) + "\\n")
    return call
c = Consumer(config)
c.subscribe([topic], on_assign=note("assign"), on_revoke=note("revoke"), on_lost=note("lost"))
while True:
    c.poll(0.1)
"""

    def __init__(self, ctx: Ctx, group: str, topic: str) -> None:
        handle, name = tempfile.mkstemp(prefix="eos-conform-child-", suffix=".jsonl")
        os.close(handle)
        self.path = Path(name)
        config = ctx.config(**{"group.id": group, **CONSUMER})
        self.process = subprocess.Popen(
            [sys.executable, "-c", self._PROGRAM, json.dumps(config), topic, str(self.path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        ctx.keep(self)

    @property
    def events(self) -> list[list[Any]]:
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.endswith("]")]

    def owns(self) -> list[int]:
        owned: set[int] = set()
        for kind, parts in self.events:
            owned = owned | set(parts) if kind == "assign" else owned - set(parts)
        return sorted(owned)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def close(self) -> None:
        if self.process.poll() is None:
            self.kill()
        self.path.unlink(missing_ok=True)


@case(
    "group.consumer.member-crash",
    "groups",
    "KIP-848: of two members one is SIGKILLed: after the broker's session timeout the survivor gets "
    "its two partitions, its own never revoked",
    bounds=CRASH_BOUNDS,
)
def member_crash(ctx: Ctx) -> None:
    topic = make_topic(ctx, "c", 4)
    group = ctx.name("g")
    survivor = _member(ctx, group, topic)
    poll_until(ctx, [survivor.consumer], lambda: survivor.owns() == [0, 1, 2, 3])
    child = Child(ctx, group, topic)
    shared = poll_until(
        ctx,
        [survivor.consumer],
        lambda: len(survivor.owns()) == 2 and sorted(survivor.owns() + child.owns()) == [0, 1, 2, 3],
    )
    ctx.observe("shared-2-and-2", shared)
    kept, lost = survivor.owns(), child.owns()
    before = len(survivor.events)
    child.kill()
    start = ctx.seconds()
    ctx.observe("all-four", poll_until(ctx, [survivor.consumer], lambda: survivor.owns() == [0, 1, 2, 3], 60))
    ctx.timing("until-all-four", ctx.seconds() - start)
    poll_until(ctx, [survivor.consumer], lambda: False, 2)
    after = survivor.events[before:]
    ctx.observe("survivor-events-after-crash", [[k, p == lost] for k, p in after])
    ctx.observe("survivor-kept-never-revoked", not any(k != "assign" and set(p) & set(kept) for k, p in after))
    ctx.observe("crashed-events", _kinds(child.events))


@case(
    "group.consumer.static-rejoin",
    "groups",
    "KIP-848: a static member (group.instance.id) restarts within the session: same partitions, "
    "the other member undisturbed",
    bounds=JOIN_BOUNDS,
)
def static_rejoin(ctx: Ctx) -> None:
    topic = make_topic(ctx, "st", 4)
    group = ctx.name("g")
    a, b, shared, _took = _two_members(ctx, group, topic, {"group.instance.id": "a"}, {"group.instance.id": "b"})
    ctx.observe("shared-2-and-2", shared)
    before, b_events = a.owns(), len(b.events)
    a.consumer.close()
    start = ctx.seconds()
    again = _member(ctx, group, topic, **{"group.instance.id": "a"})
    ctx.observe("rejoined", poll_until(ctx, [again.consumer, b.consumer], lambda: again.owns() == before, 30))
    ctx.timing("until-rejoined", ctx.seconds() - start)
    poll_until(ctx, [again.consumer, b.consumer], lambda: False, 2)
    ctx.observe("other-member-events-after", b.events[b_events:])
    ctx.observe("rejoined-events", _kinds(again.events))
