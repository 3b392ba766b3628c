"""The conformance cases, registered in the order the suite runs them (admin first: the empty cluster)."""

from engine.conform.cases import admin, produce, txn, compression, fetch, group, group_consumer, auth, clients, java, streams  # noqa: F401, I001
