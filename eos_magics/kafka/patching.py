"""``patch()``: make ``confluent_kafka`` mean the drop-in, for a block or a function, and undo it exactly.

While a patch is active (``with patch(cluster):`` or ``@patch(cluster)``):

* ``sys.modules["confluent_kafka"]`` is :mod:`eos_magics.kafka` and
  ``sys.modules["confluent_kafka.admin"]`` is :mod:`eos_magics.kafka.admin`, so ``import
  confluent_kafka``, ``from confluent_kafka import Producer`` and ``import confluent_kafka.admin``
  give the drop-in, whether confluent-kafka is installed or not;
* modules imported *before* the patch see the drop-in too: every module in ``sys.modules``
  whose global names hold the real ``confluent_kafka`` or ``confluent_kafka.admin`` module, or one of
  their classes or functions the drop-in has (``Producer``, ``KafkaException`` ...), has that name
  pointed at the drop-in's; each change is remembered;
* with a ``cluster``, it is the current cluster (:func:`eos_magics.kafka.use` without registering).

On exit, also when the body raised, everything is put back: the ``sys.modules`` entries as they
were (absent ones removed) and each swapped global, unless the body rebound it meanwhile. Patches
nest: an inner one only changes the current cluster, the outermost one swaps and restores.

What it does not reach: objects made before the patch (a real ``Producer`` instance stays
real), references held inside classes, closures or containers rather than module globals,
``confluent_kafka``'s own submodules (``confluent_kafka.serialization`` ...), and coroutine
functions used as decorated functions.
"""

from __future__ import annotations

import contextlib
import sys
import types
from typing import TYPE_CHECKING, Any

from eos_magics.kafka import binding

if TYPE_CHECKING:
    from engine import Cluster

__all__ = ["patch"]

_MODULES = ("confluent_kafka", "confluent_kafka.admin")
_SKIP_PREFIXES = ("confluent_kafka", "eos_magics.kafka")
_SWAPPABLE = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)
_ABSENT = object()  # a module name not in sys.modules (None there means "import fails")
_depth = [0]
#: The outermost patch's saved state: sys.modules entries, and (module, name, old, new) swaps.
_saved: list[dict[str, Any]] = []
_swaps: list[tuple[types.ModuleType, str, Any, Any]] = []


def _fakes() -> dict[str, types.ModuleType]:
    import eos_magics.kafka
    import eos_magics.kafka.admin

    return {"confluent_kafka": eos_magics.kafka, "confluent_kafka.admin": eos_magics.kafka.admin}


def _replacements(real: dict[str, Any], fakes: dict[str, types.ModuleType]) -> dict[int, tuple[Any, Any]]:
    """Return ``id(real object) -> (real, fake)`` for the real modules and their names the fakes have."""
    out: dict[int, tuple[Any, Any]] = {}
    for modname, fake in fakes.items():
        module = real.get(modname)
        if not isinstance(module, types.ModuleType) or module is fake:
            continue
        out[id(module)] = (module, fake)
        for name in getattr(fake, "__all__", ()):
            obj = module.__dict__.get(name)
            if obj is not None and isinstance(obj, _SWAPPABLE):
                out[id(obj)] = (obj, getattr(fake, name))
    return out


def _swap_globals(table: dict[int, tuple[Any, Any]]) -> None:
    for modname, module in list(sys.modules.items()):
        if module is None or modname.startswith(_SKIP_PREFIXES) or not isinstance(module, types.ModuleType):
            continue
        try:
            namespace = module.__dict__
        except AttributeError:  # pragma: no cover - exotic module objects
            continue
        hits = [(name, value) for name, value in list(namespace.items()) if id(value) in table]
        for name, value in hits:
            real, fake = table[id(value)]
            if value is real:
                namespace[name] = fake
                _swaps.append((module, name, real, fake))


def _enter() -> None:
    fakes = _fakes()
    saved = {name: sys.modules.get(name, _ABSENT) for name in _MODULES}
    _saved.append(saved)
    table = _replacements(saved, fakes)
    sys.modules.update(fakes)
    if table:
        _swap_globals(table)


def _exit() -> None:
    saved = _saved.pop()
    fakes = _fakes()
    while _swaps:
        module, name, real, fake = _swaps.pop()
        if module.__dict__.get(name) is fake:
            module.__dict__[name] = real
    for name, old in saved.items():
        if sys.modules.get(name) is not fakes[name]:
            continue  # replaced inside the body: leave what the body put there
        if old is _ABSENT:
            del sys.modules[name]
        else:
            sys.modules[name] = old


class _Patch(contextlib.ContextDecorator):
    """The object :func:`patch` returns: a context manager and a decorator (a fresh entry each use)."""

    def __init__(self, cluster: Cluster | None) -> None:
        self.cluster = cluster
        self._previous: list[Cluster | None] = []

    def __enter__(self) -> Cluster | None:
        self._previous.append(binding.set_current(self.cluster) if self.cluster is not None else None)
        if _depth[0] == 0:
            try:
                _enter()
            except BaseException:
                self._restore_current()
                raise
        _depth[0] += 1
        return binding.current()

    def __exit__(self, *exc: object) -> None:
        _depth[0] -= 1
        try:
            if _depth[0] == 0:
                _exit()
        finally:
            self._restore_current()

    def _restore_current(self) -> None:
        previous = self._previous.pop()
        if self.cluster is not None:
            binding.set_current(previous)


def patch(cluster: Cluster | None = None) -> _Patch:
    """Make ``confluent_kafka`` the drop-in while active; with ``cluster``, make it current too.

    Use as ``with patch(cluster):`` or ``@patch(cluster)`` (see the module docstring). Returns the
    context manager; ``with patch(cluster) as c`` binds the current cluster (or None).
    """
    if cluster is not None:
        from engine import Cluster

        if not isinstance(cluster, Cluster):
            raise TypeError(f"patch() takes an engine.Cluster or None, got {cluster!r}")
    return _Patch(cluster)
