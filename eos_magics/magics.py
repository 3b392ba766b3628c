"""``EosMagics``: the options of the ``%eos`` magics (``%config EosMagics``) and their one session.

Role
----
:class:`EosMagics` is the only ``Configurable``: its traits are the defaults a new cluster, topic or
consumer gets (``%config EosMagics.brokers = 5``, or ``c.EosMagics.brokers = 5`` in
``ipython_config.py``). It owns the :class:`~eos_magics.session.Session` that every magic family
(``eos_magics.commands.*``, one module per family) calls. It defines no magic itself.

Invariants
----------
* Changing a trait changes the session's defaults at once (``@observe``); a bad value is refused
  by ``@validate`` with a one-line error and the old value stays.
* The session's named objects are bound in the kernel's namespace (``shell.user_ns``).
"""

from __future__ import annotations

import logging
from typing import Any

from IPython.core.magic import Magics, magics_class
from traitlets import Int, TraitError, Unicode, observe, validate
from traitlets.config.configurable import Configurable

from eos_magics.session import Defaults, Session

__all__ = ["EosMagics", "FamilyMagics"]


@magics_class
class EosMagics(Magics, Configurable):
    """Defaults of the ``%eos`` magics; ``%config EosMagics`` lists them."""

    brokers = Int(3, help="Brokers of a new cluster (%eos_cluster create --brokers).").tag(config=True)
    seed = Int(42, help="Seed of a new cluster (%eos_cluster create --seed).").tag(config=True)
    replication_factor = Int(3, help="Replication factor of a new topic (capped at the broker count).").tag(config=True)
    min_insync_replicas = Int(2, help="min.insync.replicas of a new cluster (capped at the broker count).").tag(
        config=True
    )
    partitions = Int(1, help="Partitions of a new topic (%eos_topic create --partitions).").tag(config=True)
    isolation_level = Unicode("read_committed", help="isolation.level of a new consumer.").tag(config=True)

    def __init__(self, shell: Any) -> None:
        try:
            Configurable.__init__(self, config=shell.config)
        except TraitError as exc:
            # IPython keeps a value %config refused in shell.config; drop our section, not the load.
            bad = dict(shell.config.get("EosMagics", {}))
            del shell.config["EosMagics"]
            logging.getLogger("eos_magics").warning("EosMagics: ignoring %s (%s); defaults apply", bad, exc)
            Configurable.__init__(self, config=shell.config)
        Magics.__init__(self, shell=shell)
        self.session = Session(namespace=shell.user_ns, defaults=Defaults())
        self._push_defaults()

    @validate("brokers", "replication_factor", "min_insync_replicas", "partitions")
    def _at_least_one(self, proposal: dict[str, Any]) -> int:
        if proposal["value"] < 1:
            raise TraitError(f"EosMagics.{proposal['trait'].name} must be at least 1, got {proposal['value']}")
        return proposal["value"]

    @validate("isolation_level")
    def _isolation(self, proposal: dict[str, Any]) -> str:
        from engine.config import IsolationLevel

        if proposal["value"] not in tuple(IsolationLevel):
            raise TraitError(f"EosMagics.isolation_level must be one of {', '.join(tuple(IsolationLevel))}")
        return proposal["value"]

    @observe("brokers", "seed", "replication_factor", "min_insync_replicas", "partitions", "isolation_level")
    def _changed(self, change: dict[str, Any]) -> None:
        self._push_defaults()

    def _push_defaults(self) -> None:
        if not hasattr(self, "session"):
            return
        d = self.session.defaults
        d.brokers, d.seed, d.partitions = self.brokers, self.seed, self.partitions
        d.replication_factor, d.min_insync_replicas = self.replication_factor, self.min_insync_replicas
        d.isolation_level = self.isolation_level


class FamilyMagics(Magics):
    """Base of one magic family: it reaches the shared session through the ``EosMagics`` owner."""

    def __init__(self, shell: Any, owner: EosMagics) -> None:
        super().__init__(shell=shell)
        self.owner = owner

    @property
    def session(self) -> Session:
        return self.owner.session


def kafka_views() -> Any:
    """The view factories (:mod:`eos_magics.views.kafka`), imported when a magic first shows something."""
    from eos_magics.views import kafka

    return kafka
