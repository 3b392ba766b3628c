"""Nodes of the simulated world and their life cycle: up, down (crashed), paused.

State table
-----------
==========  ==================  ======================================================
status      entered from        what the node does
==========  ==================  ======================================================
UP          (start), DOWN       handles messages and timers
            (restart), PAUSED
            (resume)
DOWN        UP, PAUSED (crash)  nothing: messages to it are dropped, its timers are void
PAUSED      UP (pause)          nothing *yet*: messages and timers queue up and run on
                                resume, with the world's time moved on (a zombie)
==========  ==================  ======================================================

Every crash starts a new *incarnation*. Timers belong to the incarnation that set them, so a
timer set before a crash never fires after the restart. Volatile state is whatever the subclass
keeps in attributes; :meth:`Node.on_crash` must drop it, and :meth:`Node.on_restart` rebuilds
it from the node's :class:`~engine.sim.disk.Disk`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.sim.disk import Disk
from engine.sim.scheduler import Timer

if TYPE_CHECKING:
    from engine.sim.network import Message
    from engine.sim.world import World


class NodeStatus(enum.Enum):
    """The life-cycle state of a node."""

    UP = "up"
    DOWN = "down"
    PAUSED = "paused"


class IllegalNodeTransitionError(RuntimeError):
    """A crash, restart, pause or resume that the node's current status does not allow."""


#: (operation, target) -> the statuses it may start from. Restart is only for a crashed node and
#: resume only for a paused one: restarting a paused node would skip both the crash (its volatile
#: state would survive) and the resume (its queued work would be stranded).
_VALID_PREVIOUS = {
    "crash": (NodeStatus.UP, NodeStatus.PAUSED),
    "restart": (NodeStatus.DOWN,),
    "pause": (NodeStatus.UP,),
    "resume": (NodeStatus.PAUSED,),
}


class Node:
    """A named participant: a broker, a client, a controller.

    Subclasses override :meth:`handle` (a delivered message), :meth:`on_crash` and
    :meth:`on_restart`. They set timers with :meth:`set_timer`, never on the scheduler directly,
    so that crashes and pauses apply to them.
    """

    def __init__(self, world: World, name: str) -> None:
        self.world = world
        self.name = name
        self.status = NodeStatus.UP
        self.incarnation = 0
        #: True while the node is down because its machine was lost (power): nothing answers for
        #: it, so peers learn nothing until their timeouts. A process crash (False) is answered by
        #: the operating system, which closes its connections.
        self.machine_lost = False
        self.disk = Disk(name)
        self._deferred: list[tuple[Callable[..., Any], tuple[Any, ...], Timer | None]] = []
        self._sched = world.scheduler
        world.add_node(self)

    # -- to override ------------------------------------------------------------------------

    def handle(self, message: Message) -> None:
        """Handle a delivered message."""

    def on_crash(self) -> None:
        """Drop volatile state (the default keeps nothing to drop)."""

    def on_restart(self) -> None:
        """Rebuild volatile state from the disk."""

    # -- timers -----------------------------------------------------------------------------

    def set_timer(self, delay_ms: int, callback: Callable[..., Any], *args: Any) -> Timer:
        """Run ``callback(*args)`` after ``delay_ms`` if this incarnation is still alive.

        Cancelling the returned timer also stops it when it came due during a pause and is
        waiting for the resume.
        """
        return self._sched.call_later_with_timer(delay_ms, self._fire, self.incarnation, callback, args)

    def call_after(self, delay_ms: int, callback: Callable[..., Any], *args: Any) -> None:
        """Like :meth:`set_timer` for a callback that is never cancelled: no handle, no :class:`Timer`."""
        sched = self._sched
        sched.call_at_fast(sched.now_ms + delay_ms, self._fire, self.incarnation, callback, args)

    def _fire(
        self,
        incarnation: int,
        callback: Callable[..., Any],
        args: tuple[Any, ...],
        timer: Timer | None = None,
    ) -> None:
        if incarnation != self.incarnation:
            return
        if timer is not None and timer.cancelled:
            return
        if self.status is NodeStatus.PAUSED:
            self._deferred.append((callback, args, timer))
            return
        callback(*args)

    # -- delivery (called by the network) ---------------------------------------------------

    def deliver(self, message: Message) -> bool:
        """Take a message from the network. Return False if the node is down (dropped)."""
        status = self.status
        if status is NodeStatus.UP:
            self.handle(message)
            return True
        if status is NodeStatus.PAUSED:
            self._deferred.append((self.handle, (message,), None))
            return True
        return False

    # -- life cycle (called by the world) ---------------------------------------------------
    #
    # The world drives these (``World.crash``/``restart``/``pause``/``resume``): it names the node,
    # traces the fault and does what reaches past the node (the disk's unflushed tail, peers'
    # connections). Each checks the state table first and raises IllegalNodeTransitionError.

    def check_transition(self, operation: str) -> None:
        """Raise :class:`IllegalNodeTransitionError` unless ``operation`` may start from the status now.

        ``operation`` is ``"crash"``, ``"restart"``, ``"pause"`` or ``"resume"``; the world asks
        before it traces a restart or a resume, so that one that cannot happen is not traced.
        """
        if self.status not in _VALID_PREVIOUS[operation]:
            allowed = " or ".join(s.value for s in _VALID_PREVIOUS[operation])
            msg = f"cannot {operation} {self.name}: it is {self.status.value}, {operation} needs {allowed}"
            raise IllegalNodeTransitionError(msg)

    def _transition_to(self, operation: str, target: NodeStatus) -> None:
        self.check_transition(operation)
        self.status = target

    def crash_process(self) -> None:
        """Go DOWN: a new incarnation (every timer set before is void), queued work and volatile state dropped."""
        self._transition_to("crash", NodeStatus.DOWN)
        self.incarnation += 1
        self._deferred.clear()
        self.on_crash()

    def restart_process(self) -> None:
        """Come back UP from DOWN and rebuild volatile state from the disk (:meth:`on_restart`)."""
        self._transition_to("restart", NodeStatus.UP)
        self.machine_lost = False
        self.on_restart()

    def pause_process(self) -> None:
        """Go PAUSED: messages and timers queue up until :meth:`resume_process`."""
        self._transition_to("pause", NodeStatus.PAUSED)

    def resume_process(self) -> None:
        """Come back UP from PAUSED; what queued up runs now, in the order it queued."""
        self._transition_to("resume", NodeStatus.UP)
        deferred, self._deferred = self._deferred, []
        incarnation = self.incarnation
        for callback, args, timer in deferred:
            # Run in the order they queued; each one at "now", as a woken zombie would.
            self.world.scheduler.call_soon(self._fire, incarnation, callback, args, timer)

    @property
    def is_up(self) -> bool:
        """Return True when the node handles messages and timers now."""
        return self.status is NodeStatus.UP

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.status.value}>"
