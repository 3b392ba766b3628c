"""Which simulated cluster a drop-in client talks to: ``bootstrap.servers`` and the current cluster.

A client's ``bootstrap.servers`` picks its cluster when it names one: ``eos://NAME``, or a bare
``NAME`` that is registered here (:func:`use`) or is a cluster of the notebook's ``%eos_cluster``
session. Anything else (``localhost:9092``, a real broker list, nothing) means the *current*
cluster: the one :func:`use` or an active :func:`eos_magics.kafka.patch` set, else the notebook
session's current cluster. With none of these, :func:`resolve` raises :class:`NoClusterError`
saying how to bind one.

The session is read, never changed: ``eos_magics`` keeps the loaded extension's session in
``eos_magics._LOADED``, and this module looks there only when the extension is loaded.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine import Cluster

__all__ = ["NoClusterError", "current", "register", "registered", "resolve", "set_current", "unregister", "use"]

_SCHEME = "eos://"
_registry: dict[str, Cluster] = {}
_current: list[Cluster | None] = [None]


class NoClusterError(RuntimeError):
    """A drop-in client was created but no simulated cluster is bound (or the named one is unknown)."""

    def _render_traceback_(self) -> list[str]:
        """Show one line in IPython."""
        return [f"NoClusterError: {self}"]


def _check_cluster(cluster: Any) -> Cluster:
    from engine import Cluster

    if not isinstance(cluster, Cluster):
        raise TypeError(f"expected an engine.Cluster (e.g. engine.Cluster(seed=1, brokers=3)), got {cluster!r}")
    return cluster


def register(name: str, cluster: Cluster) -> None:
    """Let ``bootstrap.servers`` name ``cluster`` as ``name`` or ``eos://name``."""
    if not isinstance(name, str) or not name or "," in name:
        raise ValueError(f"a cluster name must be a non-empty str without commas, got {name!r}")
    _registry[name] = _check_cluster(cluster)


def unregister(name: str) -> Cluster | None:
    """Forget the cluster registered as ``name`` (unbinding it if current); return it, or None."""
    cluster = _registry.pop(name, None)
    if cluster is not None and _current[0] is cluster and cluster not in _registry.values():
        _current[0] = None
    return cluster


def registered() -> dict[str, Cluster]:
    """Return the registered clusters by name (a copy)."""
    return dict(_registry)


def use(cluster: Cluster, name: str | None = None) -> Cluster:
    """Make ``cluster`` the current one for new drop-in clients, and register it (as ``name``, default its name).

    Returns the cluster, so ``cluster = eos_magics.kafka.use(engine.Cluster(seed=1))`` works.
    """
    _check_cluster(cluster)
    register(cluster.name if name is None else name, cluster)
    _current[0] = cluster
    return cluster


def set_current(cluster: Cluster | None) -> Cluster | None:
    """Set the current cluster (None: unbind) without registering it; return the previous one."""
    previous = _current[0]
    _current[0] = None if cluster is None else _check_cluster(cluster)
    return previous


def _session() -> Any:
    package = sys.modules.get("eos_magics")
    loaded = getattr(package, "_LOADED", None)
    if not loaded:
        return None
    owner = next(reversed(loaded.values()))
    return getattr(owner, "session", None)


def current() -> Cluster | None:
    """Return the current cluster: the one bound here, else the notebook session's current one, else None."""
    if _current[0] is not None:
        return _current[0]
    session = _session()
    if session is not None and session.current is not None:
        return session.entries[session.current].cluster
    return None


def _named(name: str) -> Cluster | None:
    if name in _registry:
        return _registry[name]
    session = _session()
    if session is not None and name in session.entries:
        return session.entries[name].cluster
    return None


def resolve(bootstrap: str | None) -> Cluster:
    """Return the cluster a client with this ``bootstrap.servers`` talks to (see the module docstring)."""
    text = (bootstrap or "").strip()
    if text.startswith(_SCHEME):
        name = text[len(_SCHEME) :]
        found = _named(name)
        if found is None:
            known = ", ".join(sorted(_registry)) or "none"
            msg = f"bootstrap.servers {text!r} names no simulated cluster (registered: {known}); use(cluster, {name!r})"
            raise NoClusterError(msg)
        return found
    if text:
        found = _named(text)
        if found is not None:
            return found
    cluster = current()
    if cluster is None:
        msg = (
            "no simulated Kafka cluster is bound: call eos_magics.kafka.use(cluster), wrap the code in "
            "eos_magics.kafka.patch(cluster), run %eos_cluster create, or set bootstrap.servers to 'eos://NAME'"
        )
        raise NoClusterError(msg)
    return cluster
