"""The observer protocol: optional hooks that watch a run without changing it.

Modelled on trio's ``Instrument``: a plain class defines only the hooks it wants. The world
calls them with immutable trace events and its own read-only views. An observer must never
mutate the engine nor draw from the simulation's random streams; it may draw from its own
stream, ``world.rng.observer_stream(name)``. A test attaches an observer that records
everything and checks that the run's fingerprint is unchanged.

Hooks
-----
``on_event(event)``
    every :class:`~engine.sim.trace.TraceEvent`, in order.
``on_phase(world, phase)``
    the run moved to a phase: ``"safety"``, ``"heal"``, ``"liveness"``, ``"end"``.
``after_run_for(world)``
    a ``World.run_for`` call returned; a natural point to take a frozen snapshot.
``on_advance(world, from_ms, to_ms)``
    simulated time is about to move from ``from_ms`` to ``to_ms``: whoever moves it (``run_for``,
    ``run_until``, ``step``, or a client call that waits, such as ``flush``, ``poll`` or
    ``commit_transaction``), and before anything due at ``to_ms`` runs, so the world is still
    as ``from_ms`` left it. Not called when nothing moves the clock.
``after_step(world, callback)``
    one scheduled event ran; ``callback`` is what ran (a node's bound method names its node
    through ``callback.__self__``). Every change to the engine's state happens inside an event
    or inside an application call between events, so this is where a recorder sees a state
    that is final for the events just emitted.
``on_offsets(replica)``
    a partition replica's offsets may have moved: its log end (an append or a truncation), its
    high watermark, its last stable offset (a transaction began or ended) or its leader epoch
    (it became leader). Called at the moment of the change, so no value is missed; the replica
    is the engine's own object, to be read and never changed.

``on_cluster(cluster)``
    given to ``Cluster(observers=[...])``: the cluster is built (brokers, controller, no client
    yet) and its startup is about to run; an observer that reads the cluster binds to it here.

``on_advance``, ``after_step`` and ``on_offsets`` are not methods of :class:`Observer` on
purpose: each costs something on the hot path, paid only while an attached observer defines it
(with neither of the first two, the scheduler runs its unobserved loop).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.sim.trace import TraceEvent
    from engine.sim.world import World


#: Every hook an observer may define (the world looks them up by name).
OBSERVER_HOOKS = ("on_event", "on_phase", "after_run_for", "on_advance", "after_step", "on_offsets", "on_cluster")


class Observer:
    """Base class with every hook a no-op; subclass and override what you need.

    Subclassing is optional: the world looks hooks up by name with ``getattr``.
    """

    def on_event(self, event: TraceEvent) -> None:
        """Receive one trace event."""

    def on_phase(self, world: World, phase: str) -> None:
        """Learn that the run entered ``phase``."""

    def after_run_for(self, world: World) -> None:
        """Learn that a ``run_for`` call returned."""


class RecordingObserver(Observer):
    """Keep every event and phase it sees; used by tests and as an example."""

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        self.phases: list[str] = []

    def on_event(self, event: TraceEvent) -> None:
        """Keep the event."""
        self.events.append(event)

    def on_phase(self, world: World, phase: str) -> None:
        """Keep the phase name."""
        self.phases.append(phase)
