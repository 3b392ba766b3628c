"""Unit tests of ``engine.rpc``: what a requester learns when its peer's process dies, and reconnect backoff.

Method: two real :class:`~engine.rpc.RpcNode` s on a world with a fixed 2 ms latency: a server
that answers ``Ping`` only when told to (so requests stay in flight), and a client that keeps
every answer with the ``no_answer`` code it came with. Each test crashes, pauses or cuts the
server and checks when the client's callbacks ran, why, and when its next request left.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from engine.errors import ErrorCode
from engine.rpc import RpcNode
from engine.sim import NetworkOptions, World


@dataclasses.dataclass(frozen=True)
class Ping:
    n: int


class Server(RpcNode):
    def __init__(self, world: World, name: str = "server") -> None:
        super().__init__(world, name)
        self.answer = True
        self.handlers[Ping] = self._ping

    def _ping(self, message: Any) -> None:
        if self.answer:
            self.respond(message, ("pong", message.body.n))


class Client(RpcNode):
    def __init__(self, world: World, name: str = "client") -> None:
        super().__init__(world, name, reconnect_backoff_ms=50, reconnect_backoff_max_ms=300)
        self.answers: list[tuple[int, int, Any]] = []  # (time, n, answer or the no_answer code)

    def ping(self, n: int, timeout_ms: int = 30_000) -> int:
        def done(resp: Any) -> None:
            self.answers.append((self.world.now_ms, n, resp if resp is not None else self.no_answer))

        return self.request("server", Ping(n), done, timeout_ms=timeout_ms)


def _pair(seed: int = 1) -> tuple[World, Server, Client]:
    world = World(seed, network=NetworkOptions(2, 2))
    return world, Server(world), Client(world)


def test_a_process_crash_fails_every_request_in_flight_one_hop_later_with_network_exception() -> None:
    world, server, client = _pair()
    server.answer = False
    client.ping(1)
    client.ping(2)
    world.run_for(10)
    world.crash("server")
    world.run_for(10)
    assert client.answers == [(12, 1, ErrorCode.NETWORK_EXCEPTION), (12, 2, ErrorCode.NETWORK_EXCEPTION)]
    assert [(e.time_ms, e.node, e.get("from")) for e in world.trace.select(name="disconnect")] == [
        (12, "client", "server")
    ]


def test_a_lost_machine_fails_nothing_until_the_request_times_out() -> None:
    world, server, client = _pair()
    server.answer = False
    client.ping(1, timeout_ms=1_000)
    world.run_for(10)
    world.crash("server", lose_unflushed_tail=True)
    client.ping(2, timeout_ms=1_000)  # a new connection attempt is not refused either
    world.run_for(2_000)
    assert client.answers == [(1_000, 1, ErrorCode.REQUEST_TIMED_OUT), (1_010, 2, ErrorCode.REQUEST_TIMED_OUT)]
    assert not world.trace.select(name="disconnect") and not world.trace.select(name="refused")


def test_a_paused_peer_is_silent_and_a_paused_requester_learns_of_a_crash_when_it_resumes() -> None:
    world, server, client = _pair()
    server.answer = False
    client.ping(1)
    world.run_for(10)
    world.pause("client")
    world.crash("server")
    world.run_for(100)
    assert client.answers == []
    world.resume("client")
    world.run_for(1)
    assert client.answers == [(110, 1, ErrorCode.NETWORK_EXCEPTION)]


def test_refused_connections_back_off_exponentially_to_the_maximum_and_an_answer_resets_it() -> None:
    world, _server, client = _pair()
    world.crash("server")
    sent: list[int] = []
    for n in range(6):
        client.ping(n)
        before = len(client.answers)
        world.run_until(lambda before=before: len(client.answers) > before)
        sent.append(client.answers[-1][0])
    # refused one round trip after each send; each next send waits 50, 100, 200, 300, 300 ms more
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    assert gaps == [50 + 4, 100 + 4, 200 + 4, 300 + 4, 300 + 4]
    world.restart("server")
    client.ping(99)
    world.run_for(1_000)
    assert client.answers[-1][1:] == (99, ("pong", 99))
    client.ping(100)
    world.run_for(4)
    assert client.answers[-1][1:] == (100, ("pong", 100))  # no backoff any more


def test_a_request_held_by_the_backoff_times_out_if_its_timeout_ends_first() -> None:
    world, _server, client = _pair()
    world.crash("server")
    client.ping(1)
    world.run_for(10)
    client.ping(2, timeout_ms=20)  # the backoff holds it for about 50 ms
    world.run_for(100)
    assert client.answers[1] == (30, 2, ErrorCode.REQUEST_TIMED_OUT)
    assert len([e for e in world.trace.select(name="request") if e.kind == "send"]) == 1


# -- deadlines: one check per node, armed at the earliest ---------------------------------------------


def test_each_request_times_out_at_its_own_deadline_whatever_order_they_were_sent_in() -> None:
    world, server, client = _pair()
    server.answer = False
    client.ping(1, timeout_ms=300)
    client.ping(2, timeout_ms=100)  # sent later, due earlier
    client.ping(3, timeout_ms=200)
    world.run_for(1_000)
    assert client.answers == [
        (100, 2, ErrorCode.REQUEST_TIMED_OUT),
        (200, 3, ErrorCode.REQUEST_TIMED_OUT),
        (300, 1, ErrorCode.REQUEST_TIMED_OUT),
    ]


def test_a_request_sent_from_a_timeout_callback_does_not_delay_an_earlier_deadline() -> None:
    world, server, client = _pair()
    server.answer = False

    def retry(resp: Any) -> None:
        client.answers.append((world.now_ms, 1, client.no_answer))
        client.ping(9, timeout_ms=10_000)  # armed far later than the deadline still pending

    client.request("server", Ping(1), retry, timeout_ms=100)
    client.ping(2, timeout_ms=250)
    world.run_for(1_000)
    assert client.answers[:2] == [(100, 1, ErrorCode.REQUEST_TIMED_OUT), (250, 2, ErrorCode.REQUEST_TIMED_OUT)]


def test_an_answered_request_never_times_out_and_an_unanswered_one_does_at_its_deadline() -> None:
    world, server, client = _pair()
    client.ping(1, timeout_ms=100)
    world.run_for(1_000)
    assert client.answers == [(4, 1, ("pong", 1))]
    server.answer = False
    client.ping(2, timeout_ms=100)  # sent at 1,000
    world.run_for(1_000)
    assert client.answers[1:] == [(1_100, 2, ErrorCode.REQUEST_TIMED_OUT)]
