"""A notebook's ``%eos_cluster`` session cluster is reachable from the drop-in, without ``use()``.

A real IPython shell loads ``eos_magics`` and creates two clusters with the magics; drop-in clients
then reach the session's current cluster by default and the other one by name (``eos://NAME``),
and records they write are visible to the magics' own clients.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import eos_magics.kafka as kafka
from eos_magics import _testing
from eos_magics._testing import run
from eos_magics.kafka import binding


@pytest.fixture
def shell() -> Iterator[Any]:
    """A real IPython shell with eos_magics loaded, and no cluster bound through use()."""
    before = binding.set_current(None)
    ip = _testing.testing_shell()
    yield ip
    _testing.dispose(ip)
    binding.set_current(before)


def test_session_clusters_are_current_and_named(shell: Any) -> None:
    run(shell, "%eos_cluster create --name first --brokers 3 --seed 1")
    run(shell, "%eos_cluster create --name second --brokers 3 --seed 2")
    first, second = shell.user_ns["first"], shell.user_ns["second"]
    first.create_topic("t")
    second.create_topic("t")
    p = kafka.Producer({"bootstrap.servers": "localhost:9092"})
    assert p.engine.world is second.world  # the session's current cluster (the last created)
    p.produce("t", b"to-second")
    p.flush()
    q = kafka.Producer({"bootstrap.servers": "eos://first"})
    q.produce("t", b"to-first")
    q.flush()
    assert first.describe_partition("t").high_watermark == 1
    assert second.describe_partition("t").high_watermark == 1
    run(shell, "%eos_cluster use --name first")
    assert kafka.current() is first
    shell.run_line_magic("unload_ext", "eos_magics")
    with pytest.raises(kafka.NoClusterError):
        kafka.Producer({})
    shell.run_line_magic("load_ext", "eos_magics")
