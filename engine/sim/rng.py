"""Random streams: one seed per run, one independent stream per named component.

Invariant: a stream depends only on ``(seed, name)``. Adding draws in one component leaves
every other component's stream unchanged, so a new fault site or a new workload step does not
reshuffle the rest of a run (house style R12). The derivation uses BLAKE2b, never Python's
``hash``, which is salted per process for ``str``.

Observers and widgets get their own streams (``observer:<name>``); the simulation never reads
those.
"""

from __future__ import annotations

import hashlib
import random


def derive_seed(seed: int, name: str) -> int:
    """Return a 64-bit seed derived from ``(seed, name)`` with a stable hash."""
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class RngStreams:
    """Hand out one :class:`random.Random` per component name, derived from the run seed."""

    __slots__ = ("_streams", "seed")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._streams: dict[str, random.Random] = {}

    def stream(self, name: str) -> random.Random:
        """Return the stream for ``name``, creating it on first use."""
        rng = self._streams.get(name)
        if rng is None:
            rng = random.Random(derive_seed(self.seed, name))
            self._streams[name] = rng
        return rng

    def observer_stream(self, name: str) -> random.Random:
        """Return a stream for an observer; it is never shared with the simulation."""
        return self.stream(f"observer:{name}")

    def names(self) -> list[str]:
        """Return the names of the streams drawn so far, in creation order."""
        return list(self._streams)


class RegionStreams:
    """A region's streams (:meth:`engine.sim.world.World.region`): the parent's, named ``<region>/<name>``.

    Every draw of a region is a draw of its root world's :class:`RngStreams`, so the root's
    fingerprint covers it, and a region's streams never shift the parent's.
    """

    __slots__ = ("_parent", "_prefix", "seed")

    def __init__(self, parent: RngStreams | RegionStreams, region: str) -> None:
        self._parent = parent
        self._prefix = f"{region}/"
        self.seed = parent.seed

    def stream(self, name: str) -> random.Random:
        """Return the parent's stream ``<region>/<name>``, creating it on first use."""
        return self._parent.stream(self._prefix + name)

    def observer_stream(self, name: str) -> random.Random:
        """Return a stream for an observer of the region; it is never shared with the simulation."""
        return self._parent.observer_stream(self._prefix + name)

    def names(self) -> list[str]:
        """Return the region's stream names drawn so far (without the prefix), in creation order."""
        n = len(self._prefix)
        return [s[n:] for s in self._parent.names() if s.startswith(self._prefix)]


def randbelow(rng: random.Random, n: int) -> int:
    """Return ``rng.randrange(n)`` (``n >= 1``) with one Python call instead of three.

    It is CPython's own draw (``Random._randbelow_with_getrandbits``, under ``randrange``,
    ``randint`` and ``choice``): ``n.bit_length()`` bits from the stream, again while the value is
    not below ``n``. Same stream, same values: ``randbelow(rng, 6)`` is ``rng.randint(0, 5)`` and
    ``seq[randbelow(rng, len(seq))]`` is ``rng.choice(seq)``, so a run is the same with either.
    """
    k = n.bit_length()
    r = rng.getrandbits(k)
    while r >= n:
        r = rng.getrandbits(k)
    return r
