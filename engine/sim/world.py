"""The world: one seed, one clock, one trace, one network, and the nodes that live in it.

A :class:`World` owns everything a run needs from the outside: the scheduler (time), the random
streams, the trace and observers, the network, the fault sites and the fault injector. The
Kafka logic builds nodes on top of it and never touches wall time, threads or global randomness.

Phases
------
A fault run has two phases (house style R13): ``safety`` (faults on), then :meth:`World.heal`
(every fault ends: partitions heal, held messages go, paused nodes resume, crashed nodes restart)
and ``liveness`` (no faults, a bounded time in which the system must converge).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from engine.sim import events
from engine.sim.faults import FaultInjector, FaultPlan
from engine.sim.network import Network, NetworkOptions
from engine.sim.node import NodeStatus
from engine.sim.rng import RngStreams
from engine.sim.scheduler import DEFAULT_MAX_EVENTS, Scheduler
from engine.sim.sites import FaultSites, SiteOptions
from engine.sim.trace import Trace

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
    """

    def __init__(
        self,
        seed: int,
        *,
        network: NetworkOptions | None = None,
        sites: SiteOptions | None = None,
        keep_trace: bool = True,
        observers: Iterable[Observer] = (),
    ) -> None:
        self.seed = seed
        self.scheduler = Scheduler()
        self.rng = RngStreams(seed)
        self.trace = Trace(self.scheduler, keep=keep_trace)
        for observer in observers:
            self.trace.attach(observer)
        self._rewatch()
        self.nodes: dict[str, Node] = {}
        self.network = Network(self, network or NetworkOptions())
        self.sites = FaultSites(self, sites or SiteOptions())
        self.faults = FaultInjector(self)
        self.phase = "safety"
        self.trace.emit("world", "phase", events.RUN_START, ("seed", seed))

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
        ran = self.scheduler.run_for(duration_ms, max_events)
        for hook in self.trace.run_for_hooks:
            hook(self)
        return ran

    def run_until(self, predicate: Callable[[], bool], max_events: int = DEFAULT_MAX_EVENTS) -> int:
        """Run until ``predicate()``; raise ``SimulationStalled`` if it cannot happen."""
        return self.scheduler.run_until(predicate, max_events)

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
        """Crash a node: volatile state is lost, durable state kept (minus the unflushed tail if asked)."""
        node = self.node(name)
        node._crash()
        lost = node.disk.lose_unflushed() if lose_unflushed_tail else {}
        self.trace.emit(
            name,
            "fault",
            events.CRASH,
            ("lose_unflushed_tail", lose_unflushed_tail),
            ("lost", sorted(lost.items())),
        )

    def restart(self, name: str) -> None:
        """Restart a crashed node; it rebuilds volatile state from its disk."""
        node = self.node(name)
        node._check_transition("restart")  # traced only if it happens
        self.trace.emit(name, "fault", events.RESTART, ("incarnation", node.incarnation))
        node._restart()

    def pause(self, name: str) -> None:
        """Pause a node: it runs nothing until resumed, while time goes on for everyone else."""
        self.node(name)._pause()
        self.trace.emit(name, "fault", events.PAUSE)

    def resume(self, name: str) -> None:
        """Resume a paused node; what queued up for it runs now."""
        node = self.node(name)
        node._check_transition("resume")  # traced only if it happens
        self.trace.emit(name, "fault", events.RESUME)
        node._resume()

    # -- faults and phases ------------------------------------------------------------------

    def schedule_faults(self, plan: FaultPlan) -> None:
        """Schedule a fault plan on this world."""
        self.faults.schedule(plan)

    def heal(self) -> None:
        """End every fault: the network heals, paused nodes resume, crashed nodes restart."""
        self.set_phase("heal")
        self.faults.active = False
        self.network.heal()
        for name in list(self.nodes):
            node = self.nodes[name]
            if node.status is NodeStatus.PAUSED:
                self.resume(name)
            elif node.status is NodeStatus.DOWN:
                self.restart(name)

    def set_phase(self, phase: str) -> None:
        """Enter a phase and tell the observers."""
        self.phase = phase
        self.trace.emit("world", "phase", events.phase_event(phase))
        for o in self.trace.observers:
            hook = getattr(o, "on_phase", None)
            if hook is not None:
                hook(self, phase)

    # -- observers and fingerprint ----------------------------------------------------------

    def attach(self, observer: Observer) -> None:
        """Attach an observer (it must not change the run)."""
        self.trace.attach(observer)
        self._rewatch()

    def detach(self, observer: Observer) -> None:
        """Detach an observer attached earlier; the run goes on exactly as it would have."""
        self.trace.detach(observer)
        self._rewatch()

    def _rewatch(self) -> None:
        """Give the scheduler a watch when some observer has ``on_advance`` or ``after_step``."""
        advance = [o.on_advance for o in self.trace.observers if getattr(o, "on_advance", None)]
        stepped = [o.after_step for o in self.trace.observers if getattr(o, "after_step", None)]
        self.scheduler.watch = _Watch(self, advance, stepped) if advance or stepped else None

    def fingerprint(self) -> str:
        """Return the run fingerprint: the trace hash plus a final draw over every stream.

        The final draw copies each stream's state (in creation order) and draws from the copy,
        so asking for the fingerprint twice gives the same answer and changes nothing.
        """
        mix = random.Random(self.seed)
        for name in self.rng.names():
            if name.startswith("observer:"):
                continue
            probe = random.Random(0)
            probe.setstate(self.rng.stream(name).getstate())
            mix.seed(mix.getrandbits(64) ^ probe.getrandbits(64))
        return self.trace.fingerprint(mix.getrandbits(64))
