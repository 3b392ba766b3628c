"""Conformance: the same client programs against Apache Kafka 4.4 and against ``eos serve``.

Role
----
Kafka itself is the oracle. :mod:`engine.conform.realtime_reference` runs a real KRaft cluster
(one JVM per node, killed and paused for real), :mod:`engine.conform.settings` holds the timeouts
both targets share, and the suite (:mod:`engine.conform.runner`) runs each case's client program
against each target, records what the program observed, judges both histories with ``eos check``
and compares them: same, same within bounds, or diverges.

Like :mod:`engine.record`, this package runs outside the deterministic simulation: real clients,
real processes, real time.
"""
