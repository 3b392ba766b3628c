"""The simulated world: time, scheduling, randomness, network, nodes, disks, faults and the trace.

Nothing in this package knows about Kafka (house style R2). The Kafka logic in the rest of
``engine`` runs *inside* this world: every timeout is a scheduled event, every message crosses
:class:`~engine.sim.network.Network`, every random choice draws from a named stream of
:class:`~engine.sim.rng.RngStreams`, and everything that happens is a
:class:`~engine.sim.trace.TraceEvent`.
"""

from engine.sim.disk import Disk, DurableList
from engine.sim.faults import FaultEntry, FaultInjector, FaultPlan, random_plan, swarm_kinds
from engine.sim.network import Message, MessageRule, Network, NetworkOptions
from engine.sim.node import IllegalNodeTransitionError, Node, NodeStatus
from engine.sim.observer import Observer, RecordingObserver
from engine.sim.rng import RngStreams, derive_seed
from engine.sim.scheduler import Scheduler, SimulationStalled, Timer
from engine.sim.sites import FaultSites, SiteOptions
from engine.sim.trace import Trace, TraceEvent
from engine.sim.world import World

__all__ = [
    "Disk",
    "DurableList",
    "FaultEntry",
    "FaultInjector",
    "FaultPlan",
    "FaultSites",
    "IllegalNodeTransitionError",
    "Message",
    "MessageRule",
    "Network",
    "NetworkOptions",
    "Node",
    "NodeStatus",
    "Observer",
    "RecordingObserver",
    "RngStreams",
    "Scheduler",
    "SimulationStalled",
    "SiteOptions",
    "Timer",
    "Trace",
    "TraceEvent",
    "World",
    "derive_seed",
    "random_plan",
    "swarm_kinds",
]
