"""``TestingShell``: a real IPython shell for tests, which re-raises a cell's error instead of printing it.

>>> ip = testing_shell()
>>> ip.run_cell("%eos_cluster create --seed 1")   # raises EosUsageError, KafkaError ... as is
"""

from __future__ import annotations

from typing import Any

from IPython.core.interactiveshell import InteractiveShell

__all__ = ["TestingShell", "basic", "dispose", "drain", "run", "testing_shell", "txn_setup"]


class TestingShell(InteractiveShell):
    """An ``InteractiveShell`` without history whose ``run_cell`` raises what the cell raised."""

    def run_cell(self, raw_cell: str, *args: Any, **kwargs: Any) -> Any:
        result = super().run_cell(raw_cell, *args, **kwargs)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise error
        return result


def testing_shell(*, load: bool = True) -> TestingShell:
    """A fresh shell (not the global singleton) with ``eos_magics`` loaded."""
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    ip = TestingShell(config=config)
    if load:
        ip.run_line_magic("load_ext", "eos_magics")
    return ip


def dispose(shell: InteractiveShell) -> None:
    """Unload the extension and drop the shell's exit handler.

    Every ``InteractiveShell`` registers ``atexit_operations`` (a ``reset()`` with a full
    ``gc.collect()``): hundreds of test shells would spend a minute in them at interpreter exit.
    """
    import atexit

    shell.run_line_magic("unload_ext", "eos_magics")
    atexit.unregister(shell.atexit_operations)


def run(shell: InteractiveShell, cell: str) -> Any:
    """Run a cell as a user types it; return its value (with a ``TestingShell``, its error is raised)."""
    return shell.run_cell(cell).result


def drain(shell: InteractiveShell, consumer: str, rounds: int = 10) -> list[Any]:
    """Poll ``consumer`` with ``%eos_consume`` until a poll returns nothing; return the values read."""
    values: list[Any] = []
    for _ in range(rounds):
        got = run(shell, f"%eos_consume {consumer}").column("value")
        if not got:
            return values
        values += got
    return values


def basic(shell: InteractiveShell, seed: int = 42) -> Any:
    """Create a cluster with topics ``orders`` (2 partitions) and ``out``; return the cluster."""
    run(shell, f"%eos_cluster create --seed {seed}")
    run(shell, "%eos_topic create orders --partitions 2")
    run(shell, "%eos_topic create out")
    return shell.user_ns["cluster"]


def txn_setup(shell: InteractiveShell) -> Any:
    """:func:`basic`, a transactional producer ``t1`` (id ``app``), and consumers ``rc`` and ``ru`` of ``out:0``."""
    cluster = basic(shell)
    run(shell, "%eos_producer t1 -t app")
    run(shell, "%eos_consumer rc --assign out:0 --isolation read_committed")
    run(shell, "%eos_consumer ru --assign out:0 --isolation read_uncommitted")
    return cluster
