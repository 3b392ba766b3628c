"""Black-box exactly-once checkers over client histories (Jepsen's Kafka anomaly set).

Role
----
The judge of a run: given only a client history (each op's invocation and completion, sends
with offsets, polls with offsets and values), report ``inconsistent-offsets``, ``duplicate``,
``lost-write``, ``unseen``, ``G1a``, ``precommitted-read``, the poll and send ordering anomalies
and dependency cycles, as defined in ``eos-checking.md`` §1.2. The Kafka system-test oracles
(copier, sentinel probe) sit beside them. ``eos check HISTORY.jsonl`` runs them from a file.

Invariants
----------
Checkers never mutate what they read and never assert: each returns ``list[Anomaly]`` and the
caller decides (house style R14). Results are deterministic.

What it does not do
-------------------
No white-box invariants over broker state (``eos-checking.md`` §5.3); those read the trace.
"""

from engine.check.aborted_reads import check_aborted_reads, check_precommitted_reads
from engine.check.analysis import Analysis, analyse
from engine.check.anomaly import ALLOWED_BY_MODE, KINDS, MODES, Anomaly, Report
from engine.check.checker import check_history
from engine.check.client_history import ClientHistory
from engine.check.copier import InputRecord, OutputRecord, check_copier
from engine.check.cycles import check_cycles
from engine.check.duplicates import check_duplicates
from engine.check.history import (
    History,
    HistoryFormatError,
    HistoryRecorder,
    Op,
    Poll,
    Send,
)
from engine.check.jsonl import load_jsonl, save_jsonl
from engine.check.lost_writes import check_lost_writes
from engine.check.offsets import check_inconsistent_offsets
from engine.check.polls import check_polls
from engine.check.sends import check_sends
from engine.check.sentinel import check_sentinels

__all__ = [
    "ALLOWED_BY_MODE",
    "KINDS",
    "MODES",
    "Analysis",
    "Anomaly",
    "ClientHistory",
    "History",
    "HistoryFormatError",
    "HistoryRecorder",
    "InputRecord",
    "Op",
    "OutputRecord",
    "Poll",
    "Report",
    "Send",
    "analyse",
    "check_aborted_reads",
    "check_copier",
    "check_cycles",
    "check_duplicates",
    "check_history",
    "check_inconsistent_offsets",
    "check_lost_writes",
    "check_polls",
    "check_precommitted_reads",
    "check_sends",
    "check_sentinels",
    "load_jsonl",
    "save_jsonl",
]
