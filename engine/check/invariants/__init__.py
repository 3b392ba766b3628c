"""White-box invariants L1 to L14 over broker state (``eos-checking.md`` §5.3).

Role
----
The twin of the black-box history checkers: instead of what clients saw, these read what the
brokers hold at the end of a run (every replica's log, offsets, producer tables, aborted
indexes, ``__transaction_state``) through a frozen :class:`~engine.check.ground_truth.GroundTruth`,
plus, for L7, the offsets a :class:`~engine.check.timeline.PartitionTimeline` recorded as the
run went. :func:`check_invariants` runs every check that applies.

>>> from engine import Cluster
>>> c = Cluster(seed=1, brokers=3)
>>> c.create_topic("t", partitions=1, replication_factor=3)
>>> p = c.producer({"acks": "all"})
>>> p.produce("t", value=b"v")
>>> p.flush()
0
>>> check_invariants(c)
[]

Invariants
----------
* Checkers never assert and never mutate: each returns ``list[Anomaly]`` (house style R14),
  with kinds named ``L<n>-<what>`` (:data:`KINDS`), sorted deterministically.
* Each checker reads only the ground truth (and timeline samples), so a test can corrupt a copy.

What it does not do
-------------------
L11 (group offsets equal the last committed input + 1) is checked by the copier workload
(``engine/scenarios/workloads.py``), which knows the lineage of every output (see ``docs/invariants.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from engine.check.anomaly import _sort_key
from engine.check.ground_truth import GroundTruth, export_ground_truth
from engine.check.invariants.aborted_index import L9_INDEX, check_aborted_index
from engine.check.invariants.durability import L12_LOST, check_acked_present
from engine.check.invariants.idempotence import L2_DUPLICATE, L2_GAP, L3_EPOCH, check_epochs, check_sequences
from engine.check.invariants.liveness import L14_LSO, L14_NO_LEADER, check_liveness
from engine.check.invariants.offsets import (
    L7_HW,
    L7_LSO,
    L7_ORDER,
    L8_BEYOND_LSO,
    check_offsets_monotonic,
    check_read_committed_fetches,
)
from engine.check.invariants.producer_state import L13_PRODUCER_STATE, check_producer_state
from engine.check.invariants.replicas import L1_DIVERGENCE, L1_OFFSETS, check_replica_agreement
from engine.check.invariants.transactions import (
    L4_DATA_AFTER_MARKER,
    L4_DUPLICATE_MARKER,
    L4_MARKER_EPOCH,
    L4_NON_TXN_IN_TXN,
    L5_HANGING,
    L5_LSO,
    L6_ATOMICITY,
    L6_INCOMPLETE,
    check_atomicity,
    check_markers,
    check_no_hanging,
)
from engine.check.invariants.txn_state import L10_EPOCH, L10_TRANSITION, check_txn_state

if TYPE_CHECKING:
    from engine.check.anomaly import Anomaly
    from engine.check.timeline import PartitionTimeline, TimelineSample
    from engine.cluster import Cluster

__all__ = [
    "KINDS",
    "check_aborted_index",
    "check_acked_present",
    "check_atomicity",
    "check_epochs",
    "check_ground_truth",
    "check_invariants",
    "check_liveness",
    "check_markers",
    "check_no_hanging",
    "check_offsets_monotonic",
    "check_producer_state",
    "check_read_committed_fetches",
    "check_replica_agreement",
    "check_sequences",
    "check_txn_state",
]

#: Every white-box anomaly kind, with its invariant id and a one-line meaning.
KINDS: dict[str, tuple[str, str]] = {
    L1_DIVERGENCE: ("L1", "a replica differs from the leader below the final high watermark"),
    L1_OFFSETS: ("L1", "a replica's batches overlap (an offset held twice) or leave a hole"),
    L2_GAP: ("L2", "a producer epoch's sequences are not contiguous in offset order"),
    L2_DUPLICATE: ("L2", "a (producer id, epoch, sequence) is in the log twice"),
    L3_EPOCH: ("L3", "a producer's epoch went down in offset order (zombie write accepted)"),
    L4_MARKER_EPOCH: ("L4", "a marker with an epoch below its transaction's data ended it"),
    L4_DATA_AFTER_MARKER: ("L4", "data of an ended (older-epoch) transaction after its marker"),
    L4_DUPLICATE_MARKER: ("L4", "more markers for one transaction in a partition than decided"),
    L4_NON_TXN_IN_TXN: ("L4", "a non-transactional batch inside the producer's open transaction"),
    L5_HANGING: ("L5", "transactional data with no marker at the end (hanging transaction)"),
    L5_LSO: ("L5", "a leader's LSO is below its HW at the end"),
    L6_ATOMICITY: ("L6", "markers of one transaction disagree with each other or the coordinator"),
    L6_INCOMPLETE: ("L6", "a coordinator decision never reached COMPLETE_*"),
    L7_HW: ("L7", "a leader's HW decreased within one leader epoch"),
    L7_LSO: ("L7", "a leader's LSO decreased within one leader epoch"),
    L7_ORDER: ("L7", "a leader had LSO > HW or HW > LEO"),
    L8_BEYOND_LSO: ("L8", "a read_committed fetch returned batches at or past the LSO"),
    L9_INDEX: ("L9", "an aborted-transaction index differs from the non-empty aborted transactions of its log"),
    L10_EPOCH: ("L10", "a transactional id's producer epoch went down in __transaction_state"),
    L10_TRANSITION: ("L10", "an illegal transaction state transition in __transaction_state"),
    L12_LOST: ("L12", "an acknowledged value is missing from the final leader log"),
    L13_PRODUCER_STATE: ("L13", "a leader's producer table differs from one rebuilt from its log"),
    L14_NO_LEADER: ("L14", "a partition has no live leader at the end"),
    L14_LSO: ("L14", "a partition's LSO never caught up with its HW"),
}


def check_ground_truth(
    gt: GroundTruth,
    samples: Iterable[TimelineSample] | None = None,
    *,
    acked_values: Mapping[tuple[str, int], Iterable[Any]] | None = None,
    at_least_once: bool = False,
) -> list[Anomaly]:
    """Run every invariant that applies to ``gt`` (and ``samples``); return the anomalies, sorted.

    ``at_least_once`` skips L2 and L3 (idempotence and fencing are not promised there). L7
    runs only with ``samples``, L12 only with ``acked_values``.
    """
    found: list[Anomaly] = []
    found += check_replica_agreement(gt)
    if not at_least_once:
        found += check_sequences(gt)
        found += check_epochs(gt)
    found += check_markers(gt)
    found += check_no_hanging(gt)
    found += check_atomicity(gt)
    if samples is not None:
        found += check_offsets_monotonic(samples)
    found += check_read_committed_fetches(gt)
    found += check_aborted_index(gt)
    found += check_txn_state(gt)
    if acked_values is not None:
        found += check_acked_present(gt, acked_values)
    found += check_producer_state(gt)
    found += check_liveness(gt)
    return sorted(found, key=_sort_key)


def check_invariants(
    cluster: Cluster,
    timeline: PartitionTimeline | None = None,
    *,
    acked_values: Mapping[tuple[str, int], Iterable[Any]] | None = None,
    at_least_once: bool = False,
) -> list[Anomaly]:
    """Export the cluster's ground truth and run every invariant that applies (see :func:`check_ground_truth`)."""
    return check_ground_truth(
        export_ground_truth(cluster),
        timeline.samples if timeline is not None else None,
        acked_values=acked_values,
        at_least_once=at_least_once,
    )
