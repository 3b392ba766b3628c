"""Durable storage of one node, with an optional unflushed tail.

A node's durable state lives in *files* opened on its :class:`Disk`. A file is any object; the
disk hands back the same object across crashes and restarts, which is what makes it durable.
Volatile state is everything else the node holds, and a crash throws it away.

The unflushed tail models the OS page cache: a process crash (SIGKILL) keeps it, a power loss
does not. ``World.crash(name, lose_unflushed_tail=True)`` models the latter: every file that
defines ``lose_unflushed()`` is cut back to what was last flushed. Kafka itself does not fsync on
every write; it relies on replication, so a correlated power loss of all replicas can lose
acknowledged writes (eos-checking S20, the positive control of the lost-write checker).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Disk:
    """The named durable files of one node."""

    __slots__ = ("_files", "flushes", "node")

    def __init__(self, node: str) -> None:
        self.node = node
        self._files: dict[str, Any] = {}
        self.flushes = 0

    def open(self, name: str, factory: Callable[[], Any]) -> Any:
        """Return the file ``name``, creating it with ``factory()`` on first use."""
        f = self._files.get(name)
        if f is None:
            f = factory()
            self._files[name] = f
        return f

    def get(self, name: str) -> Any | None:
        """Return the file ``name`` or None."""
        return self._files.get(name)

    def remove(self, name: str) -> None:
        """Delete the file ``name`` (no-op when there is none): a deleted topic's log."""
        self._files.pop(name, None)

    def names(self) -> list[str]:
        """Return the names of the files, in creation order."""
        return list(self._files)

    def flush(self) -> None:
        """Make every file's tail durable (files that define ``flush()``)."""
        self.flushes += 1
        for f in self._files.values():
            flush = getattr(f, "flush", None)
            if flush is not None:
                flush()

    def lose_unflushed(self) -> dict[str, int]:
        """Cut every file back to its last flush; return what each file lost (in its own units)."""
        lost: dict[str, int] = {}
        for name, f in self._files.items():
            cut = getattr(f, "lose_unflushed", None)
            if cut is not None:
                n = cut()
                if n:
                    lost[name] = n
        return lost


class DurableList:
    """A list-shaped durable file with a flush mark; the simplest file a node can keep."""

    __slots__ = ("flushed", "items")

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.flushed = 0

    def append(self, item: Any) -> None:
        """Append an item to the unflushed tail."""
        self.items.append(item)

    def flush(self) -> None:
        """Make every item durable."""
        self.flushed = len(self.items)

    def lose_unflushed(self) -> int:
        """Drop the unflushed tail; return how many items were lost."""
        lost = len(self.items) - self.flushed
        del self.items[self.flushed :]
        return lost
