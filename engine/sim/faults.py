"""Fault plans: faults as frozen, printable data, and the injector that applies them.

A :class:`FaultPlan` is a tuple of :class:`FaultEntry` ``(at_ms, kind, params)``. A seed expands
into one with :func:`random_plan`; a test writes one by hand; a failing plan can be shrunk by
deleting entries, because the plan alone (with the seed) replays the run.

Kinds and their parameters
--------------------------
=====================  =========================================================
kind                   params
=====================  =========================================================
``crash``              ``node``, ``lose_unflushed_tail`` (bool, default False)
``restart``            ``node``
``pause``              ``node`` (the node becomes a zombie until ``resume``)
``resume``             ``node``
``partition``          ``a``, ``b`` (tuples of node names), both directions
``partition_one_way``  ``a``, ``b``: only messages from ``a`` to ``b`` are lost
``isolate``            ``node``: cut from every other node
``heal``               (none): remove every partition
``clog`` / ``unclog``  ``a``, ``b``: queue messages, then release them in order
``drop``               message rule fields: ``src``, ``dst``, ``kind``, ``body_type``,
                       ``skip``, ``count``
``delay``              the same, plus ``delay_ms``
``hold``               the same; ``release`` with ``rule`` (the n-th rule of the plan)
``duplicate``          the same as ``drop``
``release``            ``rule`` (1-based index of the plan's message rules) or none: all.
                       Releasing one rule's messages also removes that rule, so a
                       hold ends as a partition does at ``heal``.
=====================  =========================================================

:func:`random_plan` generates every kind that starts a fault (``crash``, ``pause``,
``isolate``, ``partition``, ``partition_one_way``, ``clog``, ``drop``, ``delay``, ``hold``,
``duplicate``) and adds the matching end itself (``restart``, ``resume``, ``heal``,
``unclog``, ``release``).

A plan is drawn before the run, so it cannot know a node's state when an entry comes due: a
node step that state forbids (resume a node that is up, restart one the world already healed,
pause one that crashed on its own) is skipped and traced as ``fault.skipped`` with the reason,
never raised. Called directly, :meth:`~engine.sim.world.World.resume` and the others still raise
:class:`~engine.sim.node.IllegalNodeTransitionError`.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from engine.sim import events
from engine.sim.network import MessageRule

if TYPE_CHECKING:
    from engine.sim.world import World

NODE_KINDS = ("crash", "restart", "pause", "resume", "isolate")
LINK_KINDS = ("partition", "partition_one_way", "clog", "unclog")
MESSAGE_KINDS = ("drop", "delay", "hold", "duplicate")
ALL_KINDS = (*NODE_KINDS, *LINK_KINDS, *MESSAGE_KINDS, "heal", "release")
#: The kinds that end a fault another entry started.
END_KINDS = ("restart", "resume", "heal", "unclog", "release")
#: The kinds :func:`random_plan` can start; each one's end is added by the plan itself.
RANDOM_KINDS = ("crash", "pause", "isolate", "partition", "partition_one_way", "clog", *MESSAGE_KINDS)
#: The default mix of :func:`random_plan` (hold is left out: a held message waits for the end
#: of the window, which mostly measures timeouts).
DEFAULT_RANDOM_KINDS = (
    "crash",
    "pause",
    "partition",
    "partition_one_way",
    "clog",
    "drop",
    "delay",
    "duplicate",
)


@dataclasses.dataclass(frozen=True, slots=True)
class FaultEntry:
    """One fault at one simulated time; ``params`` is a sorted tuple of ``(name, value)``."""

    at_ms: int
    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ALL_KINDS:
            msg = f"unknown fault kind {self.kind!r}; use one of {', '.join(ALL_KINDS)}"
            raise ValueError(msg)

    @classmethod
    def of(cls, at_ms: int, kind: str, /, **params: Any) -> FaultEntry:
        """Build an entry from keyword parameters (lists become tuples, keys are sorted).

        ``at_ms`` and ``kind`` are positional-only so that a message rule's own ``kind``
        (``request``, ``response``, ``oneway``) can be passed as a parameter.
        """
        norm = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
        return cls(at_ms, kind, norm)

    def param(self, name: str, default: Any = None) -> Any:
        """Return one parameter."""
        return dict(self.params).get(name, default)

    def __str__(self) -> str:
        args = " ".join(f"{k}={_show(v)}" for k, v in self.params)
        return f"{self.at_ms:>8} {self.kind:<18} {args}".rstrip()


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return ",".join(str(x) for x in v)
    return str(v)


@dataclasses.dataclass(frozen=True, slots=True)
class FaultPlan:
    """An ordered, frozen list of faults; printing it gives one line per fault."""

    entries: tuple[FaultEntry, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(sorted(self.entries, key=lambda e: e.at_ms)))

    def __str__(self) -> str:
        if not self.entries:
            return "(no faults)"
        return "\n".join(str(e) for e in self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def kinds(self) -> list[str]:
        """Return the distinct kinds in the plan, sorted."""
        return sorted({e.kind for e in self.entries})

    def started_kinds(self) -> frozenset[str]:
        """Return the kinds of fault the plan starts, each named with its true flags.

        A crash that loses the unflushed tail is ``crash+lose_unflushed_tail``: a power loss is
        not the same fault as a crash. Ends (``restart``, ``heal`` ...) are left out.
        """
        return frozenset(
            "+".join([e.kind, *sorted(k for k, v in e.params if v is True)])
            for e in self.entries
            if e.kind not in END_KINDS
        )

    def without(self, index: int) -> FaultPlan:
        """Return the plan minus one entry (used when shrinking a failing plan)."""
        return FaultPlan(self.entries[:index] + self.entries[index + 1 :])


class FaultInjector:
    """Schedule a plan's entries on a world and apply each at its time."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.applied: list[FaultEntry] = []
        self._plan_rules: list[int] = []
        #: False once the world healed: the rest of the plan belongs to the ended safety phase.
        self.active = True

    def _apply_node_fault(self, entry: FaultEntry) -> None:
        """Crash, restart, pause or resume a node; a plan entry the node's state forbids is skipped."""
        from engine.sim.node import IllegalNodeTransitionError

        w, p, kind = self.world, entry.param, entry.kind
        try:
            if kind == "crash":
                w.crash(p("node"), lose_unflushed_tail=bool(p("lose_unflushed_tail", False)))
            elif kind == "restart":
                w.restart(p("node"))
            elif kind == "pause":
                w.pause(p("node"))
            else:
                w.resume(p("node"))
        except (IllegalNodeTransitionError, KeyError) as exc:
            # A random plan may crash a node that is already down (a client that crashed on its
            # own, or a broker a previous entry took down): the entry is moot, and traced as such.
            w.trace.emit(p("node") or "-", "fault", events.FAULT_SKIPPED, ("kind", kind), ("why", str(exc)))

    def schedule(self, plan: FaultPlan) -> None:
        """Schedule every entry of ``plan``."""
        for entry in plan.entries:
            self.world.scheduler.call_at(entry.at_ms, self.apply, entry)

    def apply(self, entry: FaultEntry) -> None:
        """Apply one entry now (nothing once the world has healed)."""
        if not self.active:
            return
        w, p = self.world, entry.param
        self.applied.append(entry)
        kind = entry.kind
        if kind in ("crash", "restart", "pause", "resume"):
            self._apply_node_fault(entry)
        elif kind == "isolate":
            w.network.isolate(p("node"))
        elif kind == "partition":
            w.network.partition(p("a"), p("b"))
        elif kind == "partition_one_way":
            w.network.partition(p("a"), p("b"), one_way=True)
        elif kind == "heal":
            w.network.heal_partitions()
        elif kind == "clog":
            w.network.clog(p("a"), p("b"))
        elif kind == "unclog":
            w.network.unclog(p("a"), p("b"))
        elif kind in MESSAGE_KINDS:
            fields = {
                k: v for k, v in entry.params if k in {"src", "dst", "kind", "body_type", "skip", "count", "delay_ms"}
            }
            self._plan_rules.append(w.network.add_rule(MessageRule(action=kind, **fields)))
        elif kind == "release":
            n = p("rule")
            if n is None:
                w.network.release()
            else:
                rule_id = self._plan_rules[n - 1]
                w.network.remove_rule(rule_id)
                w.network.release(rule_id=rule_id)


def random_plan(
    rng: random.Random,
    nodes: Sequence[str],
    *,
    duration_ms: int,
    kinds: Iterable[str] = DEFAULT_RANDOM_KINDS,
    mean_interval_ms: int = 500,
    outage_ms_max: int = 1_000,
    start_ms: int = 0,
) -> FaultPlan:
    """Expand randomness into a plan within ``[start_ms, start_ms + duration_ms)``.

    Every disruptive fault is paired with its end (crash → restart, pause → resume, partition →
    heal, clog → unclog) before the window closes, so the plan is self-healing; the world's
    :meth:`~engine.sim.world.World.heal` ends whatever remains (message rules whose ``count`` was
    not used up, for example).

    Raises
    ------
    ValueError
        When ``kinds`` names a kind that does not start a fault (see :data:`RANDOM_KINDS`).
    """
    kinds = sorted(set(kinds))
    unknown = [k for k in kinds if k not in RANDOM_KINDS]
    if unknown:
        msg = f"random_plan cannot start {', '.join(unknown)}; use kinds from {', '.join(RANDOM_KINDS)}"
        raise ValueError(msg)
    if not kinds or not nodes:
        return FaultPlan()
    nodes = sorted(nodes)
    entries: list[FaultEntry] = []
    t = start_ms
    end = start_ms + duration_ms
    busy_until: dict[str, int] = {}
    message_rules = 0
    while True:
        t += 1 + int(rng.expovariate(1.0 / mean_interval_ms))
        if t >= end:
            break
        kind = rng.choice(kinds)
        until = min(end - 1, t + rng.randint(1, outage_ms_max))
        node = rng.choice(nodes)
        if kind in ("crash", "pause"):
            if busy_until.get(node, -1) >= t:
                continue
            busy_until[node] = until
            entries.append(FaultEntry.of(t, kind, node=node))
            entries.append(FaultEntry.of(until, "restart" if kind == "crash" else "resume", node=node))
        elif kind == "isolate":
            entries.append(FaultEntry.of(t, kind, node=node))
            entries.append(FaultEntry.of(until, "heal"))
        elif kind in ("partition", "partition_one_way", "clog"):
            k = rng.randint(1, max(1, len(nodes) // 2))
            a = sorted(rng.sample(nodes, k))
            b = [n for n in nodes if n not in a]
            if not b:
                continue
            entries.append(FaultEntry.of(t, kind, a=a, b=b))
            entries.append(
                FaultEntry.of(
                    until,
                    "unclog" if kind == "clog" else "heal",
                    **({"a": a, "b": b} if kind == "clog" else {}),
                )
            )
        else:  # a message rule
            src, dst = rng.sample(nodes, 2) if len(nodes) > 1 else (nodes[0], nodes[0])
            params: dict[str, Any] = {"src": src, "dst": dst, "count": rng.randint(1, 3)}
            if kind == "delay":
                params["delay_ms"] = rng.randint(1, outage_ms_max)
            entries.append(FaultEntry.of(t, kind, **params))
            # Entries start at strictly increasing times, so the n-th rule generated is the
            # n-th rule the injector installs, which is what ``release rule=n`` names.
            message_rules += 1
            if kind == "hold":
                entries.append(FaultEntry.of(until, "release", rule=message_rules))
    return FaultPlan(tuple(entries))


def swarm_kinds(rng: random.Random, kinds: Sequence[str]) -> list[str]:
    """Pick a random non-empty subset of fault kinds for one seed (swarm testing)."""
    kinds = sorted(kinds)
    chosen = [k for k in kinds if rng.random() < 0.5]
    return chosen or [rng.choice(kinds)]
