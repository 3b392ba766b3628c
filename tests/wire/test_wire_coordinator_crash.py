"""What a served cluster answers about a coordinator whose broker process crashed, as Kafka 4.4 does.

Goal: pin the answers that decide how a real client finds its way past a crashed transaction and
group coordinator (a report had ``send_offsets_to_transaction`` of librdkafka 2.16.1 block for good
after such a crash; a real KRaft cluster of Kafka 4.4 with ``kill -9`` blocks it the same way, see
docs/wire.md, "A crashed coordinator and librdkafka 2.16"). Until the controller fences the dead
broker (``broker.session.timeout.ms``), Metadata still lists it and FindCoordinator still names it,
because KRaft notices an uncontrolled crash only then; at the fence, both change together: the
broker leaves Metadata (``KRaftMetadataCache.getAliveBrokerNodes`` skips fenced brokers) and
FindCoordinator names the new leader of the coordinator's partition.

Method: one served cluster; a transactional id initialised with confluent-kafka so that its
``__transaction_state`` partition exists; the partition's leader crashed under ``server.locked()``;
Metadata and FindCoordinator asked on raw logged-in sockets (``raw_call``) of a live broker until
the fence.
"""

from __future__ import annotations

import time

import pytest
from kio.index import load_request_schema

from engine.coordinator_lookup import TRANSACTION_STATE_TOPIC, partition_for

pytestmark = pytest.mark.slow

KEY_TYPE_TRANSACTION = 1


def _answers(server, raw_call, tid: str, via: int) -> tuple[list[int], int]:
    """Return (broker ids in Metadata, the transaction coordinator FindCoordinator names), asked of ``via``."""
    metadata = raw_call(
        server,
        3,
        12,
        load_request_schema(3, 12)(
            topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
        ),
        broker=via,
    )
    found = raw_call(server, 10, 3, load_request_schema(10, 3)(key=tid, key_type=KEY_TYPE_TRANSACTION), broker=via)
    return sorted(b.node_id for b in metadata.brokers), found.node_id


def test_a_crashed_coordinator_is_named_until_fenced_then_leaves_metadata_as_its_partition_moves(
    served, ck, txn_producer, raw_call
) -> None:
    server = served([("payments", 3, 3), ("ledger", 3, 3)], seed=5)
    tid = "ledger-tx"
    txn_producer(ck(server), tid).close()
    with server.locked() as cluster:
        key = (TRANSACTION_STATE_TOPIC, partition_for(tid, cluster.config.transaction_state_log_num_partitions))
        victim = cluster.controller.partitions[key].leader
        session_ms = cluster.config.broker_session_timeout_ms + cluster.config.broker_heartbeat_interval_ms
        cluster.crash(victim)
    via = min(b for b in server.addresses if b != victim)
    crashed_at = time.monotonic()

    brokers, coordinator = _answers(server, raw_call, tid, via)
    assert victim in brokers, "Metadata dropped the crashed broker before the controller fenced it"
    assert coordinator == victim, "FindCoordinator moved before the controller fenced the crashed broker"

    deadline = crashed_at + session_ms / 1000 + 5
    while coordinator == victim and time.monotonic() < deadline:
        time.sleep(0.25)
        brokers, coordinator = _answers(server, raw_call, tid, via)
    assert coordinator not in (victim, -1), f"the coordinator never moved off the crashed broker {victim}"
    assert victim not in brokers, "Metadata still lists a fenced broker"
    with server.locked() as cluster:
        assert victim in cluster.controller.fenced
        assert cluster.controller.partitions[key].leader == coordinator
