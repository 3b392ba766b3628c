"""The world: one seed, one clock, one trace, one network, and the nodes that live in it.

A :class:`World` owns everything a run needs from the outside: the scheduler (time), the random
streams, the trace and observers, the network, the fault sites and the fault injector. The
Kafka logic builds nodes on top of it and never touches wall time, threads or global randomness.

Phases
------
A fault run has two phases (house style R13): ``safety`` (faults on), then :meth:`World.heal`
(every fault ends: partitions heal, held messages go, paused nodes resume, crashed nodes restart)
and ``liveness`` (no faults, a bounded time in which the system must converge).

Regions
-------
:meth:`World.region` makes a child world that shares its parent's scheduler (one clock, one
total order of events) but has its own node namespace, network, fault sites, fault injector and
observers: two Kafka clusters, each with its ``broker-1``, can live in one run. A region draws
from the parent's random streams under ``<region>/<name>`` (:class:`~engine.sim.rng.RegionStreams`)
and its trace emits every event into the parent's trace too, with the node name prefixed
(``target/broker-1``, :class:`~engine.sim.trace.RegionTrace`), so the root's fingerprint covers
every region, and a world without regions traces exactly what it did before. The root's
:meth:`~World.set_phase` and :meth:`~World.heal` reach its regions; a region's own ``heal`` heals
only the region. The scheduler's watch belongs to the root: observers with ``on_advance`` or
``after_step`` hooks can be attached to the root world only, and ``after_run_for`` hooks run for
the world whose :meth:`~World.run_for` was called.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from engine.sim import events
from engine.sim.collector import hold_run_passes, release_run_passes
from engine.sim.faults import FaultInjector, FaultPlan
from engine.sim.network import Network, NetworkOptions
from engine.sim.node import NodeStatus
from engine.sim.rng import RegionStreams, RngStreams
from engine.sim.scheduler import DEFAULT_MAX_EVENTS, Scheduler
from engine.sim.sites import FaultSites, SiteOptions
from engine.sim.trace import RegionTrace, Trace

if TYPE_CHECKING:
    from engine.sim.node import Node
    from engine.sim.observer import Observer


class _Watch:
    """The scheduler's :class:`~engine.sim.scheduler.Watch`: fans out to the observers' hooks."""

    __slots__ = ("_advance", "_stepped", "_world")

    def __init__(self, world: World, advance: list[Callable[..., None]], stepped: list[Callable[..., None]]) -> None:
        self._world = world
        self._advance = advance
        self._stepped = stepped

    def advance(self, from_ms: int, to_ms: int) -> None:
        for hook in self._advance:
            hook(self._world, from_ms, to_ms)

    def stepped(self, callback: Callable[..., Any]) -> None:
        for hook in self._stepped:
            hook(self._world, callback)


class World:
    """The simulated world of one run.

    Parameters
    ----------
    seed
        The run's only source of randomness.
    network
        The latency model.
    sites
        Whether named fault sites (BUGGIFY) are on, and their probabilities.
    keep_trace
        Keep every trace event in memory (default). Benchmarks turn it off.
    observers
        Observers attached before the first trace event (``run.start``), so they see it all.
    parent, name
        Set by :meth:`region` (use that): the parent world whose scheduler this one shares, and
        this region's name in it.
    """

    def __init__(
        self,
        seed: int,
        *,
        network: NetworkOptions | None = None,
        sites: SiteOptions | None = None,
        keep_trace: bool = True,
        observers: Iterable[Observer] = (),
        parent: World | None = None,
        name: str = "",
    ) -> None:
        self.seed = seed
        #: The world this one is a region of (None: a root world), its name there, and its own regions.
        self.parent = parent
        self.name = name
        self.regions: dict[str, World] = {}
        self.rng: RngStreams | RegionStreams
        if parent is None:
            self.scheduler = Scheduler()
            self.rng = RngStreams(seed)
            self.trace = Trace(self.scheduler, keep=keep_trace)
        else:
            self.scheduler = parent.scheduler
            self.rng = RegionStreams(parent.rng, name)
            self.trace = RegionTrace(parent.trace, name, self.scheduler, keep=keep_trace)
        for observer in observers:
            self.attach(observer)
        self.nodes: dict[str, Node] = {}
        self.network = Network(self, network or NetworkOptions())
        self.sites = FaultSites(self, sites or SiteOptions())
        self.faults = FaultInjector(self)
        self.phase = "safety" if parent is None else parent.phase
        self.trace.emit("world", "phase", events.RUN_START, ("seed", seed))

    # -- regions ------------------------------------------------------------------------------

    def region(
        self,
        name: str,
        *,
        network: NetworkOptions | None = None,
        sites: SiteOptions | None = None,
        observers: Iterable[Observer] = (),
    ) -> World:
        """Return a new region of this world: same clock and seed, its own nodes, network and faults.

        See the module docstring (Regions). ``name`` prefixes the region's node names in this
        world's trace and its stream names in this world's random streams.
        """
        if not isinstance(name, str):
            msg = f"a region name must be a str (e.g. 'target'), got {name!r}"
            raise TypeError(msg)
        if not name or "/" in name or name != name.strip():
            msg = f"a region name must be non-empty, without '/' or surrounding spaces, got {name!r}"
            raise ValueError(msg)
        if name in self.regions:
            msg = f"a region named {name!r} already exists"
            raise ValueError(msg)
        child = World(
            self.seed,
            network=network,
            sites=sites,
            keep_trace=self.trace.keep,
            observers=observers,
            parent=self,
            name=name,
        )
        self.regions[name] = child
        return child

    @property
    def root(self) -> World:
        """Return the root world (this one when it is not a region)."""
        world = self
        while world.parent is not None:
            world = world.parent
        return world

    # -- time -------------------------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        """Return the simulated time in milliseconds."""
        return self.scheduler.now_ms

    def step(self) -> bool:
        """Run one event; return False if nothing was pending."""
        return self.scheduler.step()

    def run_for(self, duration_ms: int, max_events: int = DEFAULT_MAX_EVENTS) -> int:
        """Run ``duration_ms`` of simulated time; return the number of events run."""
        held = hold_run_passes()
        try:
            ran = self.scheduler.run_for(duration_ms, max_events)
        finally:
            release_run_passes(held)
        for hook in self.trace.run_for_hooks:
            hook(self)
        return ran

    def run_until(
        self, predicate: Callable[[], bool], max_events: int = DEFAULT_MAX_EVENTS, deadline_ms: int | None = None
    ) -> int:
        """Run until ``predicate()``, or until simulated time reaches ``deadline_ms``.

        Raises ``SimulationStalled`` if the predicate cannot become true (no deadline and nothing
        pending, or the event budget spent).
        """
        held = hold_run_passes()
        try:
            return self.scheduler.run_until(predicate, max_events, deadline_ms)
        finally:
            release_run_passes(held)

    # -- nodes ------------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        """Register a node under its unique name (nodes call this themselves)."""
        if node.name in self.nodes:
            msg = f"a node named {node.name!r} already exists"
            raise ValueError(msg)
        self.nodes[node.name] = node

    def node(self, name: str) -> Node:
        """Return a node by name, with a short error naming the known ones."""
        try:
            return self.nodes[name]
        except KeyError:
            known = ", ".join(self.nodes) or "none"
            msg = f"no node named {name!r}; known nodes: {known}"
            raise KeyError(msg) from None

    def crash(self, name: str, *, lose_unflushed_tail: bool = False) -> None:
        """Crash a node: volatile state is lost, durable state kept (minus the unflushed tail if asked).

        Two faults, as Kafka's clients tell them apart. A *process* crash (kill -9, OOM; the
        default) keeps the page cache, and the operating system closes the process's sockets:
        every peer with a connection to it learns at once (:meth:`Network.close_connections`).
        A *machine* loss (``lose_unflushed_tail=True``: power, a pulled cable) loses the
        unflushed tail and is silent: peers learn only from their timeouts, as with ``isolate``.
        """
        node = self.node(name)
        node.crash_process()
        node.machine_lost = lose_unflushed_tail
        lost = node.disk.lose_unflushed() if lose_unflushed_tail else {}
        self.trace.emit(
            name,
            "fault",
            events.CRASH,
            ("lose_unflushed_tail", lose_unflushed_tail),
            ("lost", sorted(lost.items())),
        )
        if not lose_unflushed_tail:
            self.network.close_connections(name)

    def restart(self, name: str) -> None:
        """Restart a crashed node; it rebuilds volatile state from its disk."""
        node = self.node(name)
        node.check_transition("restart")  # traced only if it happens
        self.trace.emit(name, "fault", events.RESTART, ("incarnation", node.incarnation))
        node.restart_process()

    def pause(self, name: str) -> None:
        """Pause a node: it runs nothing until resumed, while time goes on for everyone else."""
        self.node(name).pause_process()
        self.trace.emit(name, "fault", events.PAUSE)

    def resume(self, name: str) -> None:
        """Resume a paused node; what queued up for it runs now."""
        node = self.node(name)
        node.check_transition("resume")  # traced only if it happens
        self.trace.emit(name, "fault", events.RESUME)
        node.resume_process()

    # -- faults and phases ------------------------------------------------------------------

    def schedule_faults(self, plan: FaultPlan) -> None:
        """Schedule a fault plan on this world."""
        self.faults.schedule(plan)

    def heal(self) -> None:
        """End every fault here and in every region: the network heals, paused nodes resume, crashed nodes restart."""
        self.set_phase("heal")
        self.end_faults()

    def end_faults(self) -> None:
        """End this world's faults, then its regions' (:meth:`heal` without entering a phase)."""
        self.faults.active = False
        self.network.heal()
        for name in list(self.nodes):
            node = self.nodes[name]
            if node.status is NodeStatus.PAUSED:
                self.resume(name)
            elif node.status is NodeStatus.DOWN:
                self.restart(name)
        for region in self.regions.values():
            region.end_faults()

    def set_phase(self, phase: str) -> None:
        """Enter a phase and tell the observers; the regions enter it too."""
        self.phase = phase
        self.trace.emit("world", "phase", events.phase_event(phase))
        for o in self.trace.observers:
            hook = getattr(o, "on_phase", None)
            if hook is not None:
                hook(self, phase)
        for region in self.regions.values():
            region.set_phase(phase)

    # -- observers and fingerprint ----------------------------------------------------------

    def attach(self, observer: Observer) -> None:
        """Attach an observer (it must not change the run); a region takes none that watches the scheduler."""
        if self.parent is not None and any(getattr(observer, h, None) for h in ("on_advance", "after_step")):
            msg = f"{observer!r} watches the scheduler (on_advance/after_step): attach it to the root world"
            raise ValueError(msg)
        self.trace.attach(observer)
        self._rewatch()

    def detach(self, observer: Observer) -> None:
        """Detach an observer attached earlier; the run goes on exactly as it would have."""
        self.trace.detach(observer)
        self._rewatch()

    def _rewatch(self) -> None:
        """Give the scheduler a watch when some observer has ``on_advance`` or ``after_step`` (root only)."""
        if self.parent is not None:
            return  # the scheduler is the root's: its watch is the root's observers'
        advance = [o.on_advance for o in self.trace.observers if getattr(o, "on_advance", None)]
        stepped = [o.after_step for o in self.trace.observers if getattr(o, "after_step", None)]
        self.scheduler.watch = _Watch(self, advance, stepped) if advance or stepped else None

    def fingerprint(self) -> str:
        """Return the run fingerprint: the trace hash plus a final draw over every stream.

        The final draw copies each stream's state (in creation order) and draws from the copy,
        so asking for the fingerprint twice gives the same answer and changes nothing. A region is
        part of its root's run: its fingerprint is the root's.
        """
        if self.parent is not None:
            return self.root.fingerprint()
        mix = random.Random(self.seed)
        for name in self.rng.names():
            if name.startswith("observer:"):
                continue
            probe = random.Random(0)
            probe.setstate(self.rng.stream(name).getstate())
            mix.seed(mix.getrandbits(64) ^ probe.getrandbits(64))
        return self.trace.fingerprint(mix.getrandbits(64))
