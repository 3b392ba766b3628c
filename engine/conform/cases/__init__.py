"""The conformance cases, registered in the order the suite runs them (admin first: the empty cluster)."""

from engine.conform.cases import admin, produce, txn, compression, fetch, group, group_consumer  # noqa: F401, I001
from engine.conform.cases import auth, clients, java, streams  # noqa: F401
