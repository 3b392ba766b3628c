"""A conformance case: one client program, what it observed, and the context it runs in.

Role
----
A case is a function ``program(ctx)`` written as users write Kafka code (confluent-kafka, or
kafka-python/aiokafka where they differ), registered with :func:`case`. It never asserts: it
*observes*. :class:`Ctx` gives it the target's client config, recording clients (so ``eos check``
judges its history), names of its own, the fault vocabulary of :mod:`engine.conform.vocabulary`,
and three ways to note what it saw:

* :meth:`Ctx.observe` ``(key, value)``: a value both targets must give exactly (return values,
  error names, records read with their offsets, committed offsets, assignments, descriptions);
* :meth:`Ctx.attempt` ``(key, call)``: runs a call and observes ``"ok"`` or the Kafka error's name;
* :meth:`Ctx.timing` ``(key, seconds)``: a duration both targets must give within the case's
  bounds (:class:`Bounds`), since wall-clock timing is never exact.

Invariants
----------
* Names a case makes (:meth:`Ctx.name`) carry a tag of the run, so cases never see each other's
  topics and a second run against the same cluster starts clean; observed values never contain
  the tag (observe the short name, :meth:`Ctx.short`).
* Every client a case makes is closed when the case ends, whatever happened.
* An exception that escapes the program is an observation too (``"raised"``): a client program
  that crashes on one target and not on the other diverges.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.conform import realtime_wait
from engine.conform.vocabulary import Fault, parse_fault
from engine.record.recorder import Recorder

__all__ = ["CASES", "Bounds", "Case", "Ctx", "Observation", "Target", "case"]


@dataclass(frozen=True)
class Bounds:
    """How far two timings may differ and still be "same within bounds".

    Two durations ``a`` and ``b`` (seconds) agree when each is at most ``factor`` times the other
    plus ``slack_s``: the slack absorbs scheduling noise on short waits, the factor the JVM's and
    the simulation's different speeds on long ones.
    """

    factor: float = 2.0
    slack_s: float = 1.0

    def agree(self, a: float, b: float) -> bool:
        """Return whether ``a`` and ``b`` are within these bounds of each other."""
        return a <= self.factor * b + self.slack_s and b <= self.factor * a + self.slack_s

    def __str__(self) -> str:
        return f"x{self.factor:g} +{self.slack_s:g}s"


@dataclass(frozen=True)
class Case:
    """A registered case: its name, area, what it shows, and its program."""

    name: str
    area: str
    title: str
    program: Callable[[Ctx], None]
    faults: bool = False
    bounds: Bounds = Bounds()
    brokers: int = 3
    #: Client libraries the program needs beyond confluent-kafka (``"kafka-python"``, ``"aiokafka"``).
    needs: tuple[str, ...] = ()


#: Every case, in registration order (the order the suite runs them).
CASES: dict[str, Case] = {}


def case(
    name: str,
    area: str,
    title: str,
    *,
    faults: bool = False,
    bounds: Bounds = Bounds(),
    needs: tuple[str, ...] = (),
) -> Callable[[Callable[[Ctx], None]], Callable[[Ctx], None]]:
    """Register ``program`` as the case ``name`` (a decorator)."""

    def register(program: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
        if name in CASES:
            raise ValueError(f"conformance case {name!r} is registered twice")
        CASES[name] = Case(name, area, title, program, faults=faults, bounds=bounds, needs=needs)
        return program

    return register


class Target(Protocol):
    """What a case needs of a cluster: its client configs and the fault vocabulary."""

    name: str
    brokers: tuple[int, ...]
    can_fault: bool
    features: frozenset[str]

    def client_config(self) -> dict[str, Any]:
        """The confluent-kafka config that reaches the cluster (security settings included)."""
        ...

    def kafka_python_config(self) -> dict[str, Any]:
        """The same as kafka-python / aiokafka keyword arguments."""
        ...

    def carry_out(self, fault: Fault) -> int:
        """Carry ``fault`` out now; return the id of the broker it hit."""
        ...


@dataclass
class Observation:
    """What one case's program observed on one target."""

    values: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)
    verdict: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-able dict."""
        return {
            "values": self.values,
            "timings": self.timings,
            "faults": self.faults,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 2),
        }


def _plain(value: Any) -> Any:
    """Return ``value`` as plain JSON data (tuples become lists), so both sides compare alike."""
    return json.loads(json.dumps(value, default=str))


class Ctx:
    """What a case program runs with; see the module docstring.

    Parameters
    ----------
    target
        The cluster the program runs against.
    case_name
        The case's name (names the program makes start with it).
    tag
        A tag of this run, added to every name so runs never collide.
    """

    def __init__(self, target: Target, case_name: str, tag: str) -> None:
        self.target = target
        self.case_name = case_name
        self.tag = tag
        self.recorder = Recorder()
        self.observation = Observation()
        self._clients: list[Any] = []
        self._held: list[Any] = []
        self._admin: Any = None
        self._stopwatch = realtime_wait.Stopwatch()

    # -- names ------------------------------------------------------------------------------------

    def name(self, short: str) -> str:
        """Return the run-unique name for ``short`` (a topic, a group id, a transactional id)."""
        return f"{self.case_name}-{short}-{self.tag}".replace(".", "-")

    def short(self, name: str) -> str:
        """Return the short name :meth:`name` made ``name`` from (for observations)."""
        prefix, suffix = f"{self.case_name}-".replace(".", "-"), f"-{self.tag}"
        if name.startswith(prefix) and name.endswith(suffix):
            return name[len(prefix) : -len(suffix)]
        return name

    # -- clients ----------------------------------------------------------------------------------

    def config(self, **extra: Any) -> dict[str, Any]:
        """Return the target's confluent-kafka config with ``extra`` (Kafka's own key names).

        librdkafka's own log is off (``log_level`` 0): what a case needs it observes.
        """
        return {**self.target.client_config(), "log_level": 0, **extra}

    def producer(self, **config: Any) -> Any:
        """Return a recording confluent-kafka producer with ``config`` (closed when the case ends)."""
        from engine.record.confluent import RecordingProducer

        return self.keep(RecordingProducer(self.config(**config), self.recorder))

    def consumer(self, *, recorded: bool = True, **config: Any) -> Any:
        """Return a confluent-kafka consumer with ``config`` (closed when the case ends).

        ``recorded`` (default) puts its polls in the history ``eos check`` judges; a read_uncommitted
        reader is left out (``recorded=False``), since reading aborted records is its right, not a G1a.
        """
        from confluent_kafka import Consumer

        from engine.record.confluent import RecordingConsumer

        if not recorded:
            return self.keep(Consumer(self.config(**config)))
        return self.keep(RecordingConsumer(self.config(**config), self.recorder))

    def admin(self, **config: Any) -> Any:
        """Return a confluent-kafka ``AdminClient`` for the target (one per case unless ``config`` is given).

        The client is kept until the case ends: librdkafka fails a future whose handle is gone (``_DESTROY``).
        """
        from confluent_kafka.admin import AdminClient

        if config:
            return self._hold(AdminClient(self.config(**config)))
        if self._admin is None:
            self._admin = self._hold(AdminClient(self.config()))
        return self._admin

    def _hold(self, client: Any) -> Any:
        self._held.append(client)
        return client

    def keep(self, client: Any) -> Any:
        """Close ``client`` (anything with ``close()``) when the case ends; return it."""
        self._clients.append(client)
        return client

    def close_clients(self) -> None:
        """Close every client the program made (newest first); a failure to close is ignored."""
        while self._clients:
            client = self._clients.pop()
            with contextlib.suppress(Exception):
                client.close()

    # -- observing --------------------------------------------------------------------------------

    def observe(self, key: str, value: Any) -> Any:
        """Note ``value`` under ``key``: both targets must observe it exactly. Returns ``value``."""
        if key in self.observation.values:
            raise ValueError(f"case {self.case_name}: observation {key!r} made twice")
        self.observation.values[key] = _plain(value)
        return value

    def attempt(self, key: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run ``call(*args, **kwargs)``; observe ``"ok"`` or the error's name under ``key``; return its result."""
        from engine.record.confluent import error_name

        try:
            result = call(*args, **kwargs)
        except Exception as exc:
            self.observe(key, error_name(exc))
            return None
        self.observe(key, "ok")
        return result

    def timing(self, key: str, seconds: float) -> float:
        """Note a duration: both targets must give it within the case's bounds. Returns ``seconds``."""
        self.observation.timings[key] = round(seconds, 3)
        return seconds

    # -- time and faults --------------------------------------------------------------------------

    def seconds(self) -> float:
        """Return the seconds since the case started (real time)."""
        return self._stopwatch.seconds()

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of real time."""
        realtime_wait.sleep(seconds)

    def wait_until(self, done: Callable[[], bool], timeout_s: float, step_s: float = 0.1) -> bool:
        """Wait until ``done()`` is true; False after ``timeout_s``."""
        return realtime_wait.wait_until(done, timeout_s, step_s)

    def fault(self, text: str) -> int:
        """Carry out the fault ``text`` (:mod:`engine.conform.vocabulary`); return the broker it hit."""
        fault = parse_fault(text)
        broker = self.target.carry_out(fault)
        self.observation.faults.append(f"{fault.action} {broker} ({self._shorten(str(fault.target))})")
        return broker

    def _shorten(self, text: str) -> str:
        return " ".join(self.short(word) for word in text.split())
