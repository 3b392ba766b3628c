"""Every view factory in one namespace: what the magics call (``eos_magics.magics.kafka_views()``).

Role
----
Gathers the factories of :mod:`~eos_magics.views.logs` (logs and cluster shape),
:mod:`~eos_magics.views.admin` (``kafka-transactions.sh``, ``kafka-consumer-groups.sh``) and
:mod:`~eos_magics.views.results` (client records, checks, runs), so a caller needs one import.
Each returns a :class:`~eos_magics.views.base.View` or :class:`~eos_magics.views.base.TableView`
whose text is the real tool's (or the ``eos`` command's) output.

Invariants
----------
Importing it imports the engine's views, not pandas and not the scenario catalog (those load
on first use). It defines nothing of its own.
"""

from __future__ import annotations

from eos_magics.views.admin import consumer_groups, transactions
from eos_magics.views.base import TableView, View
from eos_magics.views.logs import (
    brokers,
    cluster_summary,
    clusters,
    dump_log,
    partition,
    producer_state,
    topics,
    transaction_state,
    txn_index,
)
from eos_magics.views.results import (
    check_report,
    deliveries,
    messages,
    mutants,
    scenario_result,
    scenarios,
    sweep,
)

__all__ = [
    "TableView",
    "View",
    "brokers",
    "check_report",
    "cluster_summary",
    "clusters",
    "consumer_groups",
    "deliveries",
    "dump_log",
    "messages",
    "mutants",
    "partition",
    "producer_state",
    "scenario_result",
    "scenarios",
    "sweep",
    "topics",
    "transaction_state",
    "transactions",
    "txn_index",
]
