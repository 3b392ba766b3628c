"""The fault vocabulary of the conformance suite: one small language both targets carry out.

Role
----
A case program says what to break in words, ``"kill leader orders 0"``, and each target carries it
out its own way: a real ``SIGKILL`` of a Kafka 4.4 broker's JVM, the engine's process crash on
``eos serve`` (through its control channel), the user's own command for any other cluster.
:func:`parse_fault` reads the words into a :class:`Fault`; the target resolves its
:class:`Selector` to a broker id at the moment the fault happens, so "the leader of orders-0"
means the leader *then*, on that target.

Grammar::

    ACTION BROKER
    ACTION   = kill | pause | resume | restart
    BROKER   = N                                  (a broker id, 1..brokers)
             | leader TOPIC PARTITION             (the partition's leader now)
             | coordinator group GROUP_ID         (the group's coordinator now)
             | coordinator transaction TXN_ID     (the transactional id's coordinator now)

Invariants
----------
* ``kill`` is a crash: the process dies at once and its sockets close (SIGKILL on Kafka).
  ``pause`` stops it silently (SIGSTOP): connections stay open and nothing answers.
  ``resume`` undoes a pause, ``restart`` starts a killed broker again on the same log.
* Parsing never touches a target; a bad fault raises :class:`ValueError` with the grammar.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ACTIONS", "Fault", "Selector", "parse_fault"]

#: The actions, in the order they are documented.
ACTIONS = ("kill", "pause", "resume", "restart")

GRAMMAR = (
    "a fault reads 'ACTION BROKER': ACTION is kill, pause, resume or restart; BROKER is a broker id, "
    "'leader TOPIC PARTITION', 'coordinator group GROUP' or 'coordinator transaction TXN_ID'"
)


@dataclass(frozen=True)
class Selector:
    """Which broker a fault names: a fixed id, or a role resolved when the fault happens.

    ``kind`` is ``"broker"`` (``broker`` set), ``"leader"`` (``topic`` and ``partition``),
    ``"group"`` or ``"transaction"`` (``key``: the group id or the transactional id).
    """

    kind: str
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    key: str | None = None

    def __str__(self) -> str:
        if self.kind == "broker":
            return str(self.broker)
        if self.kind == "leader":
            return f"leader {self.topic} {self.partition}"
        return f"coordinator {self.kind} {self.key}"


@dataclass(frozen=True)
class Fault:
    """One fault: an action on the broker a selector names."""

    action: str
    target: Selector

    def __str__(self) -> str:
        return f"{self.action} {self.target}"


def parse_fault(text: str) -> Fault:
    """Read ``text`` in the grammar of the module docstring.

    Raises
    ------
    ValueError
        If ``text`` is not in the grammar; the message gives the grammar.

    Examples
    --------
    >>> str(parse_fault("kill leader orders 0"))
    'kill leader orders 0'
    >>> parse_fault("restart 2").target.broker
    2
    """
    words = text.split()
    if len(words) < 2 or words[0] not in ACTIONS:
        raise ValueError(f"{text!r}: {GRAMMAR}")
    action, rest = words[0], words[1:]
    if len(rest) == 1 and rest[0].isdigit():
        return Fault(action, Selector("broker", broker=int(rest[0])))
    if len(rest) == 3 and rest[0] == "leader" and rest[2].isdigit():
        return Fault(action, Selector("leader", topic=rest[1], partition=int(rest[2])))
    if len(rest) == 3 and rest[0] == "coordinator" and rest[1] in ("group", "transaction"):
        return Fault(action, Selector(rest[1], key=rest[2]))
    raise ValueError(f"{text!r}: {GRAMMAR}")
