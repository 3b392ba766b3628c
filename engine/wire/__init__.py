"""Kafka's wire protocol for a simulated cluster: real clients talk to the engine's brokers.

==============================  ==================================================================
module                          what it holds
==============================  ==================================================================
:mod:`engine.wire.frames`       request/response frames, the served API versions (kio's codec)
:mod:`engine.wire.shape`        one description of an answer shaped into any version's dataclass
:mod:`engine.wire.records`      record batch v2 bytes <-> the engine's RecordBatch (CRC32C, codecs)
:mod:`engine.wire.codecs`       gzip, snappy, lz4 and zstd through cramjam (imported on first use)
:mod:`engine.wire.consumer_protocol`  the consumer group protocol's subscription and assignment bytes
:mod:`engine.wire.gateway`      one client connection: a node of the world that asks the broker
:mod:`engine.wire.handlers_*`   per API: wire request -> engine requests -> one wire response
:mod:`engine.wire.service`      connections, the handler table, wire faults counted in requests
:mod:`engine.wire.journal`      the journal of timed inputs and outputs, and its byte-exact replay
==============================  ==================================================================

All of it is deterministic: no sockets, no wall clock (those are :mod:`engine.serve`'s).

Invariants
----------
* Importing the package never imports Hypothesis: kio (the codec) imports ``hypothesis.strategies``
  whenever it is installed, to register strategies for its types, and importing Hypothesis makes a
  ``.hypothesis/`` folder in the working directory (``eos serve`` left one). So kio is first
  imported here with Hypothesis hidden, unless Hypothesis is already imported (a test session
  that uses it: kio then registers its strategies as before).
"""

from __future__ import annotations

import sys


def _import_kio_without_hypothesis() -> None:
    """Import kio's phantom types with ``import hypothesis`` failing, unless Hypothesis is already loaded."""
    if "hypothesis" in sys.modules or "kio.static._phantom" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # makes 'import hypothesis...' raise ImportError
    try:
        import kio.static._phantom  # noqa: F401 - imported for its side effect: no hypothesis hook
    finally:
        del sys.modules["hypothesis"]


_import_kio_without_hypothesis()
