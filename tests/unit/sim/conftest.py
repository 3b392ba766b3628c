"""Small real nodes for the unit tests of ``engine.sim``: a key-value server, a client, a recorder.

They are in-memory collaborators, not mocks (house style R20): the server keeps volatile state in
attributes and a durable log on its :class:`~engine.sim.disk.Disk`, answers every ``Put`` with an
``Ack`` response, and rebuilds its state from the log on restart. Tests get the classes through
the ``sim`` fixture so that no test module imports this file by name.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import pytest

from engine.sim import DurableList, Message, NetworkOptions, Node, World


@dataclasses.dataclass(frozen=True)
class Put:
    key: str
    value: int


@dataclasses.dataclass(frozen=True)
class Ack:
    key: str
    value: int


class KvServer(Node):
    """Apply ``Put`` to a volatile dict and a durable log; answer with ``Ack``."""

    def __init__(self, world: World, name: str) -> None:
        super().__init__(world, name)
        self.log: DurableList = self.disk.open("log", DurableList)
        self.state: dict[str, int] = {}
        self.handled: list[Put] = []

    def handle(self, message: Message) -> None:
        body = message.body
        if isinstance(body, Put):
            self.state[body.key] = body.value
            self.log.append((body.key, body.value))
            self.handled.append(body)
            self.world.network.send(
                self.name, message.src, Ack(body.key, body.value), "response", message.correlation_id
            )

    def on_crash(self) -> None:
        self.state = {}
        self.handled = []

    def on_restart(self) -> None:
        self.state = dict(self.log.items)


class KvClient(Node):
    """Send ``Put`` requests and keep every response it receives."""

    def __init__(self, world: World, name: str) -> None:
        super().__init__(world, name)
        self.next_correlation_id = 0
        self.received: list[Message] = []

    def put(self, server: str, key: str, value: int) -> Message:
        self.next_correlation_id += 1
        return self.world.network.send(self.name, server, Put(key, value), "request", self.next_correlation_id)

    def handle(self, message: Message) -> None:
        self.received.append(message)


class Recorder(Node):
    """Keep ``(time_ms, src, body)`` of every delivered message, and the timers that fired."""

    def __init__(self, world: World, name: str) -> None:
        super().__init__(world, name)
        self.got: list[tuple[int, str, Any]] = []
        self.fired: list[tuple[int, Any]] = []

    def handle(self, message: Message) -> None:
        self.got.append((self.world.now_ms, message.src, message.body))

    def tick(self, label: Any) -> None:
        self.fired.append((self.world.now_ms, label))

    def bodies(self) -> list[Any]:
        return [b for _t, _s, b in self.got]


@pytest.fixture
def sim() -> types.SimpleNamespace:
    """The helper classes, by name."""
    return types.SimpleNamespace(Put=Put, Ack=Ack, KvServer=KvServer, KvClient=KvClient, Recorder=Recorder)


@pytest.fixture
def kv() -> types.SimpleNamespace:
    """A world (seed 1, 1 ms latency) with client ``c1`` and servers ``s1``, ``s2``."""
    world = World(1, network=NetworkOptions(1, 1))
    return types.SimpleNamespace(
        world=world,
        net=world.network,
        c1=KvClient(world, "c1"),
        s1=KvServer(world, "s1"),
        s2=KvServer(world, "s2"),
    )
