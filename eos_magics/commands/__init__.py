"""The magic families, one module each; ``FAMILIES`` is what ``%load_ext eos_magics`` registers.

=============  ===========================================================================
module         magics
=============  ===========================================================================
cluster        ``%eos_cluster`` (create, describe, reset, delete, use, list), ``%eos_topic``
clients        ``%eos_producer``, ``%eos_consumer``, ``%eos_produce``, ``%eos_consume``
txn            ``%%eos_txn`` (a cell in one transaction), ``%eos_txn`` (init, begin, commit, abort)
faults         ``%eos_fault`` (crash, restart, pause, resume, isolate, cut, heal, drop, delay,
               hold, duplicate, release)
clock          ``%eos_time`` (run, step, until, now)
inspect        ``%eos_dump_log``, ``%eos_producer_state``, ``%eos_transactions``,
               ``%eos_consumer_groups``
check          ``%eos_check``
catalog        ``%eos_scenario`` (list, run, sweep, mutants)
dashboard      ``%eos_dashboard`` (the live dashboard: play, step, faults, scrub back, fork)
spark          ``%eos_spark`` (start, status, stop, views, check, stream, kafka, sweep)
db             ``%eos_db`` (tables, sql, check): the service databases of the last scenario run
serve          ``%eos_serve`` (start, stop, config): the cluster on 127.0.0.1 for real Kafka clients
=============  ===========================================================================
"""

from __future__ import annotations

from eos_magics.commands.catalog import CatalogMagics
from eos_magics.commands.check import CheckMagics
from eos_magics.commands.clients import ClientMagics
from eos_magics.commands.clock import ClockMagics
from eos_magics.commands.cluster import ClusterMagics
from eos_magics.commands.dashboard import DashboardMagics
from eos_magics.commands.db import DbMagics
from eos_magics.commands.faults import FaultMagics
from eos_magics.commands.inspect import InspectMagics
from eos_magics.commands.serve import ServeMagics
from eos_magics.commands.spark import SparkMagics
from eos_magics.commands.txn import TxnMagics

FAMILIES = (
    ClusterMagics,
    ClientMagics,
    TxnMagics,
    FaultMagics,
    ClockMagics,
    InspectMagics,
    CheckMagics,
    CatalogMagics,
    DashboardMagics,
    SparkMagics,
    DbMagics,
    ServeMagics,
)

__all__ = ["FAMILIES"]
