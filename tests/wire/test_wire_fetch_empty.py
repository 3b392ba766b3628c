"""A Fetch of no partitions is answered at once, as Kafka's ``ReplicaManager.fetchMessages`` answers it.

Goal: the Java consumer's ``close()`` sends each broker a Fetch with no partitions (session epoch -1,
to end its fetch sessions) and waits for the answers within its close timeout. The served cluster
used to park such a fetch forever (nothing to wait on never finished), so every Java consumer's
close took its whole timeout (found by the conformance case ``java.rebalance``: 5.2 s where Kafka
4.4 took 0.2 s).

Method: Fetch v12 on a raw logged-in socket (``raw_call``) with no topics and a 5 s ``max_wait``.
"""

from __future__ import annotations

import datetime
import time

from kio.index import load_request_schema

from engine.errors import ErrorCode


def test_a_fetch_of_no_partitions_is_answered_at_once_with_no_session(served, raw_call) -> None:
    server = served([("t", 1, 3)])
    body = load_request_schema(1, 12)(
        max_wait=datetime.timedelta(milliseconds=5_000),
        min_bytes=1,
        session_id=0,
        session_epoch=-1,
        topics=(),
        forgotten_topics_data=(),
    )
    started = time.monotonic()
    answer = raw_call(server, 1, 12, body)
    assert time.monotonic() - started < 2.0  # not after max_wait
    assert answer.error_code == ErrorCode.NONE
    assert answer.session_id == 0
    assert list(answer.responses) == []
