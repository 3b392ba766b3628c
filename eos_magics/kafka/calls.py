"""What every drop-in client call shares: the constructor's config argument, stubs, closed clients.

The engine's clients raise the engine's exceptions (:mod:`engine.errors`); a drop-in method calls
the engine inside ``try`` and turns those into ``KafkaException`` (:func:`~.errors.kafka_exception`).
``try`` costs nothing when nothing is raised, so the hot paths (``produce``, ``poll``) stay thin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from engine.errors import IllegalStateError
from eos_magics.kafka.errors import EngineKafkaError
from eos_magics.kafka.unsupported import NOT_SUPPORTED, not_simulated

__all__ = ["ENGINE_ERRORS", "ClosedOnExit", "add_stubs", "config_arg", "unique_client_id"]

#: The engine exceptions a drop-in call converts (TypeError/ValueError for bad arguments pass through).
ENGINE_ERRORS = (EngineKafkaError, IllegalStateError)


def config_arg(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Return the config dict of ``Client(conf, **more)`` or ``Client(**conf)``, as confluent-kafka reads it."""
    if len(args) > 1:
        raise TypeError("expected tuple containing single dict")
    if not args:
        if not kwargs:
            raise TypeError("expected configuration dict")
        return {}
    if not isinstance(args[0], dict):
        raise TypeError("expected configuration dict")
    return args[0]


def unique_client_id(cluster: Any, engine_config: dict[str, Any], default: str | None = None) -> None:
    """Make ``client.id`` a node name the cluster does not have yet (``app``, ``app-2`` ...), in place.

    confluent-kafka lets many clients share a ``client.id``; the engine names a node after it, and
    node names are unique. None and no ``default``: the engine numbers the client itself.
    """
    base = engine_config.get("client.id") or default
    if not base:
        return
    nodes = cluster.world.nodes
    name, n = str(base), 1
    while name in nodes:
        n += 1
        name = f"{base}-{n}"
    engine_config["client.id"] = name


def _stub(what: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        not_simulated(what)

    method.__name__ = what.rsplit(".", 1)[1]
    method.__doc__ = f"Not simulated: {NOT_SUPPORTED[what]} (raises NotSimulatedError)."
    return method


def add_stubs(cls: type, class_name: str) -> None:
    """Give ``cls`` a method for each ``class_name.method`` of NOT_SUPPORTED that raises NotSimulatedError."""
    prefix = f"{class_name}."
    for what in NOT_SUPPORTED:
        if what.startswith(prefix) and not hasattr(cls, what[len(prefix) :]):
            setattr(cls, what[len(prefix) :], _stub(what))


class ClosedOnExit:
    """A client that ``with client:`` gives back and closes on the way out, as confluent-kafka's do."""

    def close(self) -> object:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
