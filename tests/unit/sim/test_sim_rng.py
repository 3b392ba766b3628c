"""Unit tests of ``engine.sim.rng``: one independent, stable stream per ``(seed, name)``.

The streams must not depend on Python's salted ``hash`` nor on the order in which components
draw; the tests compare sequences drawn in different interleavings.
"""

from __future__ import annotations

import hashlib

from engine.sim import RngStreams, derive_seed


def draws(rng, n: int = 5) -> list[int]:
    return [rng.getrandbits(32) for _ in range(n)]


def test_derive_seed_is_blake2b_of_seed_and_name() -> None:
    expected = int.from_bytes(hashlib.blake2b(b"7:network", digest_size=8).digest(), "big")
    assert derive_seed(7, "network") == expected


def test_same_seed_and_name_give_the_same_stream() -> None:
    assert draws(RngStreams(7).stream("network")) == draws(RngStreams(7).stream("network"))


def test_different_names_or_seeds_give_different_streams() -> None:
    a = draws(RngStreams(7).stream("network"))
    assert a != draws(RngStreams(7).stream("disk"))
    assert a != draws(RngStreams(8).stream("network"))


def test_drawing_from_one_stream_leaves_another_unchanged() -> None:
    quiet = RngStreams(3)
    quiet_disk = draws(quiet.stream("disk"))
    busy = RngStreams(3)
    busy.stream("network").random()
    draws(busy.stream("network"), 100)
    assert draws(busy.stream("disk")) == quiet_disk


def test_stream_is_created_once_and_names_keep_creation_order() -> None:
    r = RngStreams(1)
    assert r.stream("b") is r.stream("b")
    r.stream("a")
    obs = r.observer_stream("dash")
    assert r.names() == ["b", "a", "observer:dash"]
    assert draws(obs) != draws(RngStreams(1).stream("dash"))
