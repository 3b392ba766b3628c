"""eos-magics: IPython magics over the simulated Kafka cluster (``%load_ext eos_magics``).

>>> %load_ext eos_magics
>>> %eos_cluster create --brokers 3 --seed 42

``from eos_magics import Session`` gives the same things as plain Python calls. Loading the
extension imports only IPython's magic machinery and this package's parsers: the engine is
imported by the first magic that needs it, pandas only by ``to_pandas()``, Spark never here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Session", "load_ipython_extension", "unload_ipython_extension"]

_LOADED: dict[int, Any] = {}


def load_ipython_extension(ip: Any) -> None:
    """Register the ``%eos`` magics on a shell (``%load_ext eos_magics``); a second load does nothing."""
    if id(ip) in _LOADED:
        return
    from eos_magics.commands import FAMILIES
    from eos_magics.magics import EosMagics

    owner = EosMagics(ip)
    ip.register_magics(owner)
    for family in FAMILIES:
        ip.register_magics(family(ip, owner))
    if owner not in ip.configurables:  # Magics.__init__ already lists it (IPython >= 8)
        ip.configurables.append(owner)
    _LOADED[id(ip)] = owner


def unload_ipython_extension(ip: Any) -> None:
    """Remove the magics, forget every cluster and its variables (``%unload_ext eos_magics``)."""
    owner = _LOADED.pop(id(ip), None)
    if owner is None:
        return
    owner.session.close()
    from eos_magics.commands import FAMILIES

    names = {"line": set(), "cell": set()}
    for family in FAMILIES:
        for kind in names:
            names[kind].update(family.magics[kind])
    for kind, table in ip.magics_manager.magics.items():
        for name in names.get(kind, ()):
            table.pop(name, None)
    ip.configurables[:] = [c for c in ip.configurables if c is not owner]


def __getattr__(name: str) -> Any:
    if name == "Session":
        from eos_magics.session import Session

        return Session
    raise AttributeError(f"module 'eos_magics' has no attribute {name!r}")
