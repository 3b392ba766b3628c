"""A dead process closes its connections; a lost machine, a partition and a pause are silent.

Goal: the two ways a Kafka client learns that a broker is gone. When a broker *process* dies
(kill -9, an OOM, a crash), its operating system closes its sockets: every client with a request
in flight sees the disconnect at once, fails the request with a retriable ``NetworkException``,
refreshes metadata and backs off (``reconnect.backoff.ms``) until the controller has moved the
leadership. When the *machine* is lost (power, a cable) or the network is partitioned, nothing
tells the client: its request waits out ``request.timeout.ms``. Method: a transactional producer
commits while a read_committed consumer is reading the partition and the leader goes away; the
tests assert the simulated times at which the consumer sees the committed records, with Kafka's
default ``request.timeout.ms`` (30 s), and the trace events that explain them.
"""

from __future__ import annotations

from engine import Cluster, TopicPartition

REQUEST_TIMEOUT_MS = 30_000  # Kafka's default, which the consumer below keeps


def _commit_while_the_leader_goes(fault: str) -> tuple[Cluster, dict[str, int], list[bytes]]:
    """Commit two records while the partition's leader dies (``fault``); return the times the story needs."""
    c = Cluster(seed=42, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("orders", partitions=1, replication_factor=3)
    p = c.producer({"transactional.id": "orders-app"})
    p.init_transactions()
    rc = c.consumer({"isolation.level": "read_committed"})
    assert rc.config.request_timeout_ms == REQUEST_TIMEOUT_MS
    rc.assign([TopicPartition("orders", 0)])
    assert rc.consume(10, timeout=1.0) == []  # reading: its next fetch now waits on the leader
    p.begin_transaction()
    p.produce("orders", value=b"o-1", partition=0)
    p.produce("orders", value=b"o-2", partition=0)
    p.flush()
    leader = c.leader("orders")
    times = {"fault": c.now_ms}
    if fault == "crash":
        c.crash(leader)
    elif fault == "power":
        c.crash(leader, lose_unflushed_tail=True)
    else:
        c.isolate(leader)
    p.commit_transaction()
    times["committed"] = c.now_ms
    got: list[bytes] = []
    while not got and c.now_ms < times["fault"] + 120_000:
        got = [m.value() for m in rc.consume(10, timeout=0.5)]
    times["read"] = c.now_ms
    elections = [
        e.time_ms
        for e in c.world.trace.events
        if e.name == "election.clean" and e.get("tp") == "orders-0" and e.time_ms > times["fault"]
    ]
    times["elected"] = elections[0]
    return c, times, got


def test_after_a_leader_process_crash_a_read_committed_consumer_reads_the_commit_soon_after_the_election() -> None:
    c, t, got = _commit_while_the_leader_goes("crash")
    assert got == [b"o-1", b"o-2"]
    # The controller fences the dead broker after broker.session.timeout.ms (9 s) and elects;
    # the consumer, told of the disconnect at once, is reading from the new leader within seconds.
    assert t["elected"] - t["fault"] <= 9_000 + 2_000
    assert t["read"] - t["elected"] <= 3_000
    disconnects = [e for e in c.world.trace.events if e.name == "disconnect" and e.node == "consumer-1"]
    assert disconnects and disconnects[0].time_ms - t["fault"] <= 5  # one network hop after the crash


def test_after_the_leader_is_isolated_the_consumer_waits_out_its_request_timeout() -> None:
    c, t, got = _commit_while_the_leader_goes("isolate")
    assert got == [b"o-1", b"o-2"]
    assert t["read"] - t["elected"] > 10_000  # the new leader was there; the consumer did not know
    assert t["read"] - t["fault"] >= REQUEST_TIMEOUT_MS  # its fetch to the isolated leader timed out
    assert not [e for e in c.world.trace.events if e.name == "disconnect"]  # nobody was told


def test_a_lost_machine_is_silent_like_a_partition() -> None:
    c, t, got = _commit_while_the_leader_goes("power")
    assert got == [b"o-1", b"o-2"]
    assert t["read"] - t["fault"] >= REQUEST_TIMEOUT_MS
    assert not [e for e in c.world.trace.events if e.name in ("disconnect", "refused")]
