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
``on_offsets(replica)``
    a partition replica's offsets may have moved: its log end (an append or a truncation), its
    high watermark, its last stable offset (a transaction began or ended) or its leader epoch
    (it became leader). Called at the moment of the change, so no value is missed; the replica
    is the engine's own object, to be read and never changed. Not a method of :class:`Observer`
    on purpose: the hook costs something on the produce path only while someone defines it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.sim.trace import TraceEvent
    from engine.sim.world import World


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
