"""Named fault sites in logic code (FoundationDB's BUGGIFY).

Logic code asks ``world.sites.fire("coordinator.after_prepare_commit_logged", node)`` at a
dangerous branch. In a run with sites switched on, each site is *enabled* once per run with
probability ``p_enable`` and then *fires* with probability ``p_fire`` each time it is asked. Each
site draws from its own stream ``site:<name>``, so adding a site never shifts another site's
decisions. Every decision is traced: the enable decision once, then every ask of an enabled site.

Tests force a site with :meth:`FaultSites.force` (fire on the next ``times`` asks), which needs no
randomness at all.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from engine.sim import events

if TYPE_CHECKING:
    from engine.sim.world import World


@dataclasses.dataclass(frozen=True, slots=True)
class SiteOptions:
    """Whether fault sites are on in this run, and their two probabilities."""

    enabled: bool = False
    p_enable: float = 0.25
    p_fire: float = 0.05


class FaultSites:
    """The fault sites of one run."""

    def __init__(self, world: World, options: SiteOptions) -> None:
        self.world = world
        self.options = options
        self._enabled: dict[str, bool] = {}
        self._forced: dict[str, int] = {}
        self.fired: dict[str, int] = {}

    def force(self, name: str, times: int = 1) -> None:
        """Make site ``name`` fire on its next ``times`` asks, whatever the options say."""
        self._forced[name] = self._forced.get(name, 0) + times

    def fire(self, name: str, node: str = "-") -> bool:
        """Return True when the site fires now (see the module docstring)."""
        forced = self._forced.get(name, 0)
        if forced:
            self._forced[name] = forced - 1
            return self._fired(name, node, "forced")
        if not self.options.enabled:
            return False
        enabled = self._enabled.get(name)
        rng = self.world.rng.stream(f"site:{name}")
        if enabled is None:
            enabled = rng.random() < self.options.p_enable
            self._enabled[name] = enabled
            self.world.trace.emit(node, "site", events.SITE_ENABLE, ("site", name), ("enabled", enabled))
        if not enabled:
            return False
        if rng.random() < self.options.p_fire:
            return self._fired(name, node, "drawn")
        self.world.trace.emit(node, "site", events.SITE_PASS, ("site", name))
        return False

    def _fired(self, name: str, node: str, why: str) -> bool:
        self.fired[name] = self.fired.get(name, 0) + 1
        self.world.trace.emit(node, "site", events.SITE_FIRE, ("site", name), ("why", why))
        return True
