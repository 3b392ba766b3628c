"""A catalogue of minimal hand-made histories: one or more per anomaly kind, and clean ones.

Role
----
Before a checker's verdict is trusted it must fire on the smallest history showing its anomaly
and stay silent on a clean one (``eos-checking.md`` §5.6). :data:`EXAMPLES` holds those
histories, each with the exact set of kinds :func:`~engine.check.checker.check_history` reports
on it when nothing is allowed. The unit tests read them, the Spark checker is compared with the
Python one on them, and a notebook can show them.

A small serial DSL builds them: :func:`op` describes one operation (invoked, then completed at
once), :func:`send` and :func:`poll` its micro-ops, and :func:`serial_history` records the ops
one after the other. Topic ``"t"`` and partition 0 are the defaults.

Invariants
----------
* :data:`EXAMPLES` is built once, at import, in a fixed order; names are unique and start with
  the anomaly kind they show (``"clean: ..."`` for the ones that show none).
* ``expected_kinds`` is sorted and is exactly what the checkers report with ``allowed=()``.
* Every history kind the checkers can report has at least one example (:data:`KINDS_SHOWN`).

What it does not do
-------------------
It checks nothing itself; the copier and sentinel oracles (other inputs than a history) have no
examples here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.check.history import History, HistoryRecorder, Key, Op, Poll, Send

__all__ = [
    "EXAMPLES",
    "KINDS_SHOWN",
    "Example",
    "OpSpec",
    "op",
    "poll",
    "send",
    "serial_history",
]

#: The history anomaly kinds; every one has at least one example.
KINDS_SHOWN: tuple[str, ...] = (
    "inconsistent-offsets",
    "duplicate",
    "lost-write",
    "unseen",
    "G1a",
    "precommitted-read",
    "poll-skip",
    "nonmonotonic-poll",
    "int-poll-skip",
    "int-nonmonotonic-poll",
    "nonmonotonic-send",
    "int-nonmonotonic-send",
    "int-send-skip",
    "G0",
    "G1c-wr",
    "G1c-ww",
)


@dataclass(frozen=True, slots=True)
class Example:
    """One hand-made history and the anomaly kinds it shows.

    Attributes
    ----------
    name : str
        ``"<kind>: <what happens>"``, or ``"clean: <what happens>"``.
    history : History
        The history itself.
    expected_kinds : tuple of str
        Sorted kinds :func:`~engine.check.checker.check_history` reports with ``allowed=()``.
    note : str
        One or two sentences on what the history shows.
    """

    name: str
    history: History
    expected_kinds: tuple[str, ...]
    note: str


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One operation of a serial history, as :func:`op` describes it."""

    process: int
    f: str
    type: str
    mops: tuple[Send | Poll, ...]
    keys: tuple[Key, ...] = ()
    rebalance_keys: tuple[Key, ...] = ()
    error: str | None = None


def send(value: str, offset: int | None = None, partition: int = 0, topic: str = "t") -> Send:
    """Return a send of ``value``, acknowledged at ``offset`` (None: not acknowledged)."""
    return Send(topic, partition, value, offset)


def poll(offset: int, value: str, partition: int = 0, topic: str = "t") -> Poll:
    """Return a poll that found ``value`` at ``offset``."""
    return Poll(topic, partition, offset, value)


def op(
    process: int,
    f: str,
    type_: str,
    *mops: Send | Poll,
    keys: Iterable[Key] = (),
    rebalance: Iterable[Key] = (),
    error: str | None = None,
) -> OpSpec:
    """Describe one operation; ``type_`` is its completion (``ok``, ``fail``, ``info``) or ``invoke``.

    An ``invoke`` op is left in flight: it never completes. The invocation announces the sends of
    ``mops`` without offsets; the completion carries ``mops`` as given.
    """
    return OpSpec(process, f, type_, tuple(mops), tuple(keys), tuple(rebalance), error)


def serial_history(*ops: OpSpec) -> History:
    """Record ``ops`` one after the other: each invoked at an even time and completed 1 ms later.

    An op whose type is ``invoke`` is only invoked (it never completes); its process must not
    run another op afterwards.

    Raises
    ------
    ValueError
        If an op is not an :class:`OpSpec` or the recorder refuses it (see
        :class:`~engine.check.history.HistoryRecorder`).
    """
    rec = HistoryRecorder()
    t = 0
    for spec in ops:
        if not isinstance(spec, OpSpec):
            raise ValueError(f"serial_history takes op(...) descriptions, not {type(spec).__name__}")
        announced = [m._replace(offset=None) for m in spec.mops if type(m) is Send]
        inv = rec.invoke(spec.process, spec.f, announced, t, keys=spec.keys)
        if spec.type != "invoke":
            rec.complete(inv, spec.type, spec.mops, t + 1, error=spec.error, rebalance_keys=spec.rebalance_keys)
        t += 2
    return rec.history()


def _raw(*records: tuple[Any, ...]) -> History:
    """Build a history from plain :class:`Op` field tuples, for shapes the serial DSL cannot make."""
    return History(Op(*r) for r in records)


def _catalogue() -> dict[str, Example]:
    """Return every example, in catalogue order (clean ones first, then by checklist id)."""
    h = serial_history
    x = "x"
    y = "y"
    rows: list[tuple[str, History, tuple[str, ...], str]] = [
        ("clean: empty history", h(), (), "Nothing happened, so nothing can be wrong."),
        (
            "clean: sends, polls, a committed and an aborted transaction",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1)),
                op(1, "txn", "ok", send("c", 2), send("d", 3)),  # marker at 4
                op(2, "poll", "ok", poll(0, "a"), poll(1, "b")),
                op(2, "poll", "ok", poll(2, "c"), poll(3, "d")),
                op(1, "txn", "fail", send("x", 5), error="aborted"),  # marker at 6, never read
                op(0, "send", "ok", send("e", 7)),
                op(2, "poll", "ok", poll(7, "e")),
            ),
            (),
            "The aborted value and the control records take offsets 4 to 6; reading 3 then 7 skips no value.",
        ),
        (
            "clean: reads across control-record offsets",
            h(
                op(0, "txn", "ok", send("a", 0)),  # marker at 1
                op(0, "txn", "ok", send("b", 2)),  # marker at 3
                op(1, "poll", "ok", poll(0, "a"), poll(2, "b")),
            ),
            (),
            "Offsets 1 and 3 hold commit markers, not values: the dense index of 0 and 2 is adjacent.",
        ),
        (
            "clean: an info send never read",
            h(
                op(0, "send", "info", send("a"), error="timeout"),
                op(0, "send", "ok", send("b", 1)),
                op(1, "poll", "ok", poll(1, "b")),
            ),
            (),
            "A send with an unknown outcome may never have happened: it is neither lost nor unseen.",
        ),
        (
            "clean: an info transaction proven committed and read in full",
            h(
                op(0, "txn", "info", send("a"), send("b"), error="timeout"),
                op(1, "send", "ok", send("c", 5)),
                op(2, "poll", "ok", poll(3, "b"), poll(5, "c")),
                op(3, "poll", "ok", poll(2, "a")),
            ),
            (),
            "An ok read of 'b' proves the info transaction committed; all its sends were read.",
        ),
        (
            "clean: a failed op's read of an aborted value",
            h(
                op(0, "txn", "fail", send("a", 0), error="aborted"),
                op(1, "poll", "fail", poll(0, "a"), error="rebalance"),
            ),
            (),
            "Only ok ops count as readers, so a failed poll that saw an aborted value is no G1a.",
        ),
        (
            "clean: no poll-skip across an assign",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
                op(1, "poll", "ok", poll(0, "a")),
                op(1, "assign", "ok", keys=[("u", 0)]),
                op(1, "assign", "ok", keys=[("t", 0)]),
                op(1, "poll", "ok", poll(2, "c")),
                op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
            ),
            (),
            "Assigning away from t/0 forgets the position there; the fresh assignment may start anywhere.",
        ),
        (
            "clean: no poll-skip across a crash",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
                op(1, "poll", "ok", poll(0, "a")),
                op(1, "crash", "info"),
                op(1, "poll", "ok", poll(2, "c")),
                op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
            ),
            (),
            "A crashed client comes back as a new consumer: its positions are forgotten.",
        ),
        (
            "clean: a failed poll does not move the position",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1)),
                op(1, "poll", "ok", poll(0, "a")),
                op(1, "txn", "fail", poll(1, "b"), error="aborted"),  # client rewinds to offset 1
                op(1, "poll", "ok", poll(1, "b")),
            ),
            (),
            "After an aborted transaction the client rewinds; reading 'b' again is its next ok poll.",
        ),
        (
            "clean: keys in the rebalance log are exempt from the int-poll checks",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
                op(1, "poll", "ok", poll(0, "a"), poll(2, "c"), poll(0, "a"), rebalance=[("t", 0)]),
                op(2, "poll", "ok", poll(1, "b")),
            ),
            (),
            "t/0 changed hands while the poll ran, so its jump and its rewind inside the op are legal.",
        ),
        (
            "clean: keys interleaved inside one poll",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1), send("x", 0, topic="u"), send("y", 1, topic="u")),
                op(1, "poll", "ok", poll(0, "a"), poll(0, "x", topic="u"), poll(1, "b"), poll(1, "y", topic="u")),
            ),
            (),
            "Each key is followed on its own: t/0 reads 0, 1 and u/0 reads 0, 1.",
        ),
        (
            "clean: dependencies flow one way",
            h(
                op(0, "txn", "ok", send("a", 0, topic=x)),
                op(1, "txn", "ok", poll(0, "a", topic=x), send("b", 0, topic=y)),
                op(2, "txn", "ok", poll(0, "b", topic=y), send("c", 1, topic=x)),
                op(3, "poll", "ok", poll(0, "a", topic=x), poll(1, "c", topic=x)),
            ),
            (),
            "Every ww and wr edge points from an earlier op to a later one: no cycle.",
        ),
        (
            "clean: reads across a long run of aborted offsets",
            h(
                op(0, "send", "ok", send("a", 0)),
                op(1, "txn", "fail", *[send(f"x{i}", 1 + i) for i in range(20)], error="aborted"),
                op(0, "send", "ok", send("b", 22)),
                op(2, "poll", "ok", poll(0, "a"), poll(22, "b")),
            ),
            (),
            "Twenty aborted values and two markers lie between 'a' and 'b'; none is known to be readable.",
        ),
        (
            "clean: a crash forgets the producer's last send",
            h(
                op(0, "send", "ok", send("b", 1)),
                op(0, "crash", "info"),
                op(0, "send", "ok", send("a", 0)),
                op(1, "poll", "ok", poll(0, "a"), poll(1, "b")),
            ),
            (),
            "After a crash the process is a new producer, so its next send may land anywhere.",
        ),
        # -- C1 --------------------------------------------------------------------------------
        (
            "inconsistent-offsets: one offset holds two values",
            h(
                op(0, "send", "ok", send("a", 0)),
                op(1, "send", "ok", send("b", 0)),
                op(2, "poll", "ok", poll(0, "a")),
                op(3, "poll", "ok", poll(0, "b")),
            ),
            ("inconsistent-offsets",),
            "Two acknowledged sends and two reads place 'a' and 'b' at offset 0 of t/0.",
        ),
        (
            "inconsistent-offsets: diverged replicas seen by a failed poll",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
                op(1, "poll", "fail", poll(0, "a"), poll(1, "z"), error="rebalance"),
                op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
            ),
            ("inconsistent-offsets",),
            "A failed poll's records count as sightings too: it saw 'z' where the log holds 'b'.",
        ),
        # -- C2 --------------------------------------------------------------------------------
        (
            "duplicate: one value at two offsets",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1)),
                op(1, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "a")),
            ),
            ("duplicate",),
            "'a' was written once and read at offsets 0 and 2.",
        ),
        (
            "duplicate: acknowledged at one offset, read at another",
            h(
                op(0, "send", "ok", send("a", 0)),
                op(1, "poll", "ok", poll(1, "a")),
            ),
            ("duplicate",),
            "The acknowledgement and the read disagree on where 'a' is.",
        ),
        (
            "duplicate: a copy adds no ww cycle",
            h(
                op(0, "send", "ok", send("a", 0)),
                op(1, "send", "ok", send("b", 1)),
                op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "a")),
            ),
            ("duplicate",),
            "The copy of 'a' at offset 2 is a duplicate; it does not put 'a' after 'b' in the version order.",
        ),
        # -- C3 / C4 ---------------------------------------------------------------------------
        (
            "lost-write: reads went past an acknowledged value",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1)),
                op(1, "poll", "ok", poll(1, "b")),
            ),
            ("lost-write",),
            "'a' was acknowledged at offset 0, and an ok read reached offset 1 without it.",
        ),
        (
            "lost-write: a proven info op's unread send below the read bound",
            h(
                op(0, "send", "info", send("a", 0), send("b", 1), error="timeout"),
                op(1, "poll", "ok", poll(1, "b")),
            ),
            ("lost-write",),
            "Reading 'b' proves the info op committed, so 'a' at offset 0 should have been read.",
        ),
        (
            "unseen: an acknowledged value beyond every read",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1)),
                op(1, "poll", "ok", poll(0, "a")),
            ),
            ("unseen",),
            "'b' lies past the last ok read: lost or merely late, the history cannot tell.",
        ),
        (
            "unseen: acknowledged without an offset and never read",
            h(op(0, "send", "ok", send("a"))),
            ("unseen",),
            "An ok send whose offset nobody learnt and nobody read.",
        ),
        (
            "unseen: a proven info transaction misses a send",
            h(
                op(0, "txn", "info", send("a", topic=x), send("b", topic=y), error="timeout"),
                op(1, "poll", "ok", poll(0, "a", topic=x)),
            ),
            ("unseen",),
            "An ok read of 'a' proves the transaction committed, so 'b' on y/0 must become visible.",
        ),
        (
            "unseen: an op left in flight is proven by a read",
            h(
                op(0, "send", "invoke", send("a"), send("b")),
                op(1, "poll", "ok", poll(0, "a")),
            ),
            ("unseen",),
            "An invocation without a completion counts as info; reading 'a' proves it, and 'b' is missing.",
        ),
        (
            "unseen: an empty info completion takes its invocation's sends",
            _raw(
                (0, 0, "invoke", "send", 0, (Send("t", 0, "a"), Send("t", 0, "b"))),
                (1, 0, "info", "send", 1, (), (), (), "timeout"),
                (2, 1, "invoke", "poll", 2),
                (3, 1, "ok", "poll", 3, (Poll("t", 0, 1, "b"),)),
            ),
            ("unseen",),
            "The completion learnt nothing, so it stands for the sends it announced; 'b' proves them.",
        ),
        # -- C5 / C6 ---------------------------------------------------------------------------
        (
            "G1a: an ok poll reads an aborted transaction's value",
            h(
                op(0, "txn", "fail", send("a", 0), error="aborted"),
                op(1, "poll", "ok", poll(0, "a")),
            ),
            ("G1a",),
            "read_committed must never return a value whose transaction aborted.",
        ),
        (
            "precommitted-read: a transaction polls its own send",
            h(op(0, "txn", "ok", send("a", 0), poll(0, "a"))),
            ("precommitted-read",),
            "Kafka hides a transaction's writes from every reader, its own consumer included, until commit.",
        ),
        # -- C7 - C10 --------------------------------------------------------------------------
        (
            "poll-skip: the next poll jumps over a known value",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
                op(1, "poll", "ok", poll(0, "a")),
                op(1, "poll", "ok", poll(2, "c")),
                op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
            ),
            ("poll-skip",),
            "Process 1 read 'a', then 'c': it never saw 'b', which another reader found at offset 1.",
        ),
        (
            "nonmonotonic-poll: the next poll re-reads",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1)),
                op(1, "poll", "ok", poll(0, "a"), poll(1, "b")),
                op(1, "poll", "ok", poll(1, "b")),
            ),
            ("nonmonotonic-poll",),
            "Process 1's position went from offset 1 back to offset 1.",
        ),
        (
            "int-poll-skip: one poll jumps over a known value",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1), send("c", 2)),
                op(1, "poll", "ok", poll(0, "a"), poll(2, "c")),
                op(2, "poll", "ok", poll(1, "b")),
            ),
            ("int-poll-skip",),
            "Inside one poll the consumer went from offset 0 to offset 2 past 'b'.",
        ),
        (
            "int-poll-skip: a long gap hides a known value",
            h(
                op(0, "send", "ok", send("a", 0), send("m", 15), send("b", 30)),
                op(1, "poll", "ok", poll(0, "a"), poll(30, "b")),
                op(2, "poll", "ok", poll(15, "m")),
            ),
            ("int-poll-skip",),
            "Most of offsets 1 to 29 hold nothing known, but 'm' at 15 does.",
        ),
        (
            "int-nonmonotonic-poll: one poll goes backwards",
            h(
                op(0, "send", "ok", send("a", 0), send("b", 1)),
                op(1, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(0, "a")),
            ),
            ("int-nonmonotonic-poll",),
            "Inside one poll the consumer went from offset 1 back to offset 0.",
        ),
        # -- C11, C12, C14 (sends) -------------------------------------------------------------
        (
            "nonmonotonic-send: the next send lands earlier",
            h(
                op(0, "send", "ok", send("b", 1)),
                op(0, "send", "ok", send("a", 0)),
                op(1, "poll", "ok", poll(0, "a"), poll(1, "b")),
            ),
            ("nonmonotonic-send",),
            "Process 0's second send landed before its first.",
        ),
        (
            "nonmonotonic-send: the position comes from a read when the ack had none",
            h(
                op(0, "send", "ok", send("b")),
                op(0, "send", "ok", send("a")),
                op(1, "poll", "ok", poll(0, "a"), poll(1, "b")),
            ),
            ("nonmonotonic-send",),
            "Neither ack carried an offset; the reads place 'a' before 'b'.",
        ),
        (
            "int-nonmonotonic-send: a later send in one op lands earlier",
            h(
                op(0, "send", "ok", send("a", 1), send("b", 0)),
                op(1, "poll", "ok", poll(0, "b"), poll(1, "a")),
            ),
            ("int-nonmonotonic-send",),
            "One op sent 'a' then 'b', and 'b' landed first.",
        ),
        (
            "int-send-skip: another producer lands between two sends",
            h(
                op(0, "txn", "ok", send("a", 0), send("c", 2)),
                op(1, "txn", "ok", send("b", 1)),
                op(2, "poll", "ok", poll(0, "a"), poll(1, "b"), poll(2, "c")),
            ),
            ("G0", "int-send-skip"),
            (
                "Allowed under EOS: Kafka transactions give no write isolation. The writers alternate on t/0 "
                "(op 1, op 3, op 1), which is also a write-write cycle."
            ),
        ),
        # -- C13 / C14 (cycles) ----------------------------------------------------------------
        (
            "G0: two transactions interleave writes on two keys",
            h(
                op(0, "txn", "ok", send("a", 0, topic=x), send("d", 1, topic=y)),
                op(1, "txn", "ok", send("b", 1, topic=x), send("c", 0, topic=y)),
                op(2, "poll", "ok", poll(0, "a", topic=x), poll(1, "b", topic=x)),
                op(3, "poll", "ok", poll(0, "c", topic=y), poll(1, "d", topic=y)),
            ),
            ("G0",),
            "Op 1 wrote first on x/0, op 3 first on y/0: a write-write cycle, allowed under EOS.",
        ),
        (
            "G1c-wr: two transactions read each other's writes",
            h(
                op(0, "txn", "ok", send("a", 0, topic=x), poll(0, "b", topic=y)),
                op(1, "txn", "ok", send("b", 0, topic=y), poll(0, "a", topic=x)),
            ),
            ("G1c-wr",),
            "Circular information flow: each transaction saw the other's committed write.",
        ),
        (
            "G1c-wr: found among many forward edges",
            h(
                *[op(0, "txn", "ok", send(f"c{i}", i, topic="chain")) for i in range(30)],
                op(1, "txn", "ok", send("a", 0, topic=x), poll(0, "b", topic=y)),
                op(2, "txn", "ok", send("b", 0, topic=y), poll(0, "a", topic=x)),
                op(3, "poll", "ok", *[poll(i, f"c{i}", topic="chain") for i in range(30)]),
            ),
            ("G1c-wr",),
            "A long acyclic chain of transactions, and one pair that reads each other's writes.",
        ),
        (
            "G1c-ww: a cycle needs a write-write edge",
            h(
                op(0, "txn", "ok", send("a", 0, topic=x), poll(0, "c", topic=y)),
                op(1, "txn", "ok", send("b", 1, topic=x), send("c", 0, topic=y)),
                op(2, "poll", "ok", poll(0, "a", topic=x), poll(1, "b", topic=x)),
            ),
            ("G1c-ww",),
            "Op 1 read op 3's write, and op 3 wrote after op 1 on x/0: allowed under EOS.",
        ),
    ]
    out: dict[str, Example] = {}
    for name, history, kinds, note in rows:
        if name in out:
            raise ValueError(f"two examples are named {name!r}")
        out[name] = Example(name, history, tuple(sorted(kinds)), note)
    return out


#: Every example by name, in catalogue order.
EXAMPLES: dict[str, Example] = _catalogue()
