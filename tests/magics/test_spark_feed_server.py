"""The kernel-side feed of the ``eos`` Spark source (``eos_magics.spark.feed``), over plain sockets, without Spark.

Goal: the feed answers ``latest`` with exactly the offsets a Kafka consumer may read up to (the
high watermark, or the last stable offset under read_committed), and ``read`` with exactly what
the engine's own consumer returns at that isolation level; a wrong token gets one refusal line
and touches nothing; a malformed request gets one clear error line and the server keeps
serving; ``stop()`` closes the port; and reading never changes the run (same fingerprint).

Method: real clusters from a seed (no mocks). Topic ``out`` has two partitions; an idempotent
producer writes plain records, a transactional producer commits one transaction and aborts a
second, and another leaves a third open, so the LSO sits below the HW. Requests go over raw
sockets where the bytes on the wire matter, and through :func:`~eos_magics.spark.feed.request`
elsewhere. A counting lock shows when the feed reads the cluster.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from engine import Cluster
from engine.weakenings import Weakenings
from eos_magics.spark.errors import SparkBridgeError
from eos_magics.spark.feed import ARROW_SCHEMA, MAX_REQUEST_BYTES, SPARK_SCHEMA, Feed, request
from widgets.live import LiveRun

TOPIC = "out"
RC = "read_committed"
RU = "read_uncommitted"


def populate(cluster: Cluster) -> None:
    """Plain records, a committed, an aborted and an open transaction, then plain records after them."""
    cluster.create_topic(TOPIC, partitions=2, replication_factor=3)
    plain = cluster.producer({"linger.ms": 0})
    for i in range(3):
        plain.produce(TOPIC, key=f"k{i}", value=f"plain-{i}", partition=i % 2)
    plain.flush()
    app = cluster.producer({"transactional.id": "app", "linger.ms": 0})
    app.init_transactions()
    app.begin_transaction()
    for i in range(4):
        app.produce(TOPIC, key=f"c{i}", value=f"committed-{i}", partition=i % 2)
    app.commit_transaction()
    app.begin_transaction()
    for i in range(4):
        app.produce(TOPIC, key=f"a{i}", value=f"aborted-{i}", partition=i % 2)
    app.flush()
    app.abort_transaction()
    other = cluster.producer({"transactional.id": "other", "linger.ms": 0})
    other.init_transactions()
    other.begin_transaction()
    for i in range(4):
        other.produce(TOPIC, value=f"open-{i}", partition=i % 2)
    other.flush()
    for i in range(2):
        plain.produce(TOPIC, value=f"after-{i}", partition=i % 2)
    plain.flush()
    cluster.run_for(300)


def build(seed: int = 7, **kwargs: Any) -> Cluster:
    cluster = Cluster(seed=seed, brokers=3, **kwargs)
    populate(cluster)
    return cluster


class CountingLock:
    """An RLock that counts how often it is entered (to see whether the feed read the cluster)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.entries = 0

    def __enter__(self) -> bool:
        self.entries += 1
        return self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)


@pytest.fixture(scope="module")
def cluster() -> Cluster:
    return build()


@pytest.fixture
def lock() -> CountingLock:
    return CountingLock()


@pytest.fixture
def feed(cluster: Cluster, lock: CountingLock) -> Iterator[Feed]:
    with Feed.start(cluster, lock=lock) as f:
        yield f


def exchange(port: int, payload: bytes, *, close_write: bool = False) -> list[bytes]:
    """Send raw bytes, read until the server closes; return the lines it sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(payload)
        if close_write:
            s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data.splitlines(keepends=True)


def line(**fields: Any) -> bytes:
    return (json.dumps(fields) + "\n").encode()


def drain(cluster: Cluster, isolation: str) -> list[tuple[int, int, Any, Any, int]]:
    """What the engine's consumer at ``isolation`` reads from the whole topic, in (partition, offset) order."""
    consumer = cluster.consumer({"isolation.level": isolation, "auto.offset.reset": "earliest"})
    consumer.assign([(TOPIC, 0), (TOPIC, 1)])
    out = []
    for _ in range(20):
        got = consumer.consume(100, timeout=0.5)
        if not got:
            break
        out += [(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1]) for m in got]
    consumer.close()
    return sorted(out)


def read_all(feed: Feed, isolation: str) -> list[tuple[int, int, Any, Any, int]]:
    """Read every partition's ``[0, latest)`` over the socket, as (partition, offset, key, value, ms)."""
    answer = request(feed.port, feed.token, "latest", topic=TOPIC, isolation=isolation)
    rows = []
    for p, end in answer["offsets"].items():
        table = request(
            feed.port, feed.token, "read", topic=TOPIC, partition=int(p), start=0, end=end, isolation=isolation
        )
        for r in table.to_pylist():
            rows.append((r["partition"], r["offset"], r["key"], r["value"], _ms(r["timestamp"])))
    return sorted(rows)


def _ms(ts: Any) -> int:
    return int(ts.timestamp() * 1000)


def values(feed: Feed, isolation: str, partition: int = 0, start: int = 0, end: int | None = None) -> list[str]:
    if end is None:
        end = request(feed.port, feed.token, "latest", topic=TOPIC, isolation=isolation)["offsets"][str(partition)]
    table = request(
        feed.port, feed.token, "read", topic=TOPIC, partition=partition, start=start, end=end, isolation=isolation
    )
    return table.column("value").to_pylist()


# -- latest ---------------------------------------------------------------------------------------


def test_latest_is_the_high_watermark_uncommitted_and_the_last_stable_offset_committed(cluster: Cluster, feed: Feed):
    ru = request(feed.port, feed.token, "latest", topic=TOPIC, isolation=RU)
    rc = request(feed.port, feed.token, "latest", topic=TOPIC, isolation=RC)
    for p in (0, 1):
        view = cluster.describe_partition(TOPIC, p)
        assert ru["offsets"][str(p)] == view.high_watermark
        assert rc["offsets"][str(p)] == view.last_stable_offset
        assert view.last_stable_offset < view.high_watermark  # the open transaction holds the LSO back
    assert ru["unavailable"] == rc["unavailable"] == []


def test_latest_lists_a_partition_whose_leader_is_down_as_unavailable_until_a_new_one_serves():
    cluster = build(seed=3)
    with Feed.start(cluster) as feed:
        cluster.crash(cluster.leader(TOPIC, 0))
        offsets, unavailable = feed.latest(TOPIC, RU)
        assert unavailable == [0]
        assert sorted(offsets) == [1]
        [answer] = exchange(feed.port, line(token=feed.token, op="read", topic=TOPIC, partition=0, start=0, end=0))
        assert "has no leader serving now" in json.loads(answer)["error"]
        cluster.run_for(20_000)
        offsets, unavailable = feed.latest(TOPIC, RU)
        assert unavailable == []
        assert offsets[0] == cluster.describe_partition(TOPIC, 0).high_watermark


# -- read -----------------------------------------------------------------------------------------


def test_read_committed_gives_plain_and_committed_records_and_never_markers_aborted_or_open(feed: Feed):
    assert values(feed, RC, 0) == ["plain-0", "plain-2", "committed-0", "committed-2"]
    assert values(feed, RC, 1) == ["plain-1", "committed-1", "committed-3"]


def test_read_uncommitted_gives_aborted_and_open_records_too_but_no_markers(feed: Feed):
    assert values(feed, RU, 0) == [
        "plain-0",
        "plain-2",
        "committed-0",
        "committed-2",
        "aborted-0",
        "aborted-2",
        "open-0",
        "open-2",
        "after-0",
    ]


@pytest.mark.parametrize("isolation", [RC, RU])
def test_read_equals_what_the_engine_consumer_reads_at_the_same_isolation_level(isolation: str):
    cluster = build(seed=11)
    with Feed.start(cluster) as feed:
        served = read_all(feed, isolation)
    assert served == drain(cluster, isolation)
    assert served  # not two empty lists


def test_read_committed_split_at_any_offset_gives_the_same_records_as_one_read(feed: Feed):
    # A range that starts inside an aborted transaction must still drop it: the leader's aborted
    # index lists transactions that began before the range.
    end = request(feed.port, feed.token, "latest", topic=TOPIC, isolation=RC)["offsets"]["0"]
    whole = values(feed, RC, 0, 0, end)
    for k in range(end + 1):
        assert values(feed, RC, 0, 0, k) + values(feed, RC, 0, k, end) == whole, k
    ru_end = request(feed.port, feed.token, "latest", topic=TOPIC, isolation=RU)["offsets"]["0"]
    assert values(feed, RU, 0, 6, ru_end) == ["aborted-2", "open-0", "open-2", "after-0"]


def test_read_has_the_documented_columns_and_the_records_producer_fields(cluster: Cluster, feed: Feed):
    table = request(feed.port, feed.token, "read", topic=TOPIC, partition=0, start=0, end=4, isolation=RC)
    assert table.schema == ARROW_SCHEMA
    rows = table.to_pylist()
    assert [r["offset"] for r in rows] == [0, 1, 2, 3]
    assert {r["topic"] for r in rows} == {TOPIC}
    assert {r["partition"] for r in rows} == {0}
    assert [r["key"] for r in rows] == ["k0", "k2", "c0", "c2"]
    assert [r["is_transactional"] for r in rows] == [False, False, True, True]
    batches = cluster.brokers[cluster.leader(TOPIC, 0)].replicas[(TOPIC, 0)].log.batches
    assert [(r["producer_id"], r["producer_epoch"]) for r in rows[2:]] == [
        (batches[1].producer_id, batches[1].producer_epoch)
    ] * 2
    assert rows[0]["producer_id"] == batches[0].producer_id >= 0
    assert _ms(rows[2]["timestamp"]) == batches[1].create_time
    assert str(rows[2]["timestamp"].tzinfo) == "UTC"


def test_a_weakened_broker_is_served_as_weakened_m11_shows_aborted_records_at_read_committed():
    cluster = build(seed=7, weakenings=Weakenings(send_aborted_transactions=False))
    with Feed.start(cluster) as feed:
        served = read_all(feed, RC)
        assert "aborted-0" in {v for _, _, _, v, _ in served}
    assert served == drain(cluster, RC)


def test_schema_answers_the_spark_schema_and_the_arrow_columns(feed: Feed):
    answer = request(feed.port, feed.token, "schema")
    assert answer["schema"] == SPARK_SCHEMA
    assert [name for name, _ in answer["columns"]] == ARROW_SCHEMA.names


# -- the token --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"token": "not-the-token"},
        {},
        {"token": None},
        {"token": 12345},
        {"token": "é" * 32},
    ],
    ids=["wrong", "missing", "null", "number", "non-ascii"],
)
def test_a_bad_token_gets_one_refusal_line_and_the_cluster_is_not_read(feed: Feed, lock: CountingLock, fields):
    for op in ("latest", "read", "schema"):
        answer = exchange(feed.port, line(**fields, op=op, topic=TOPIC, partition=0, start=0, end=4))
        assert answer == [b'{"error": "refused: bad token"}\n']
    assert lock.entries == 0
    with pytest.raises(SparkBridgeError, match="refused the token"):
        request(feed.port, "not-the-token", "latest", topic=TOPIC)
    assert lock.entries == 0
    request(feed.port, feed.token, "latest", topic=TOPIC)  # the right token still works
    assert lock.entries == 1


def test_the_token_is_random_and_stays_out_of_the_repr(cluster: Cluster):
    with Feed.start(cluster) as a, Feed.start(cluster) as b:
        assert a.token != b.token
        assert len(a.token) >= 32
        assert a.port != b.port
        assert a.token not in repr(a)
        assert repr(a) == f"<Feed 127.0.0.1:{a.port} running>"


# -- malformed requests -----------------------------------------------------------------------------


def bad_requests(token: str) -> list[tuple[bytes, str]]:
    ok = {"token": token, "topic": TOPIC}
    read = {**ok, "op": "read", "partition": 0, "isolation": RC}
    return [
        (b"this is not json\n", "not a JSON object"),
        (b"[1, 2, 3]\n", "not a JSON object"),
        (line(**ok, op="drop-table"), "unknown op 'drop-table'; use one of latest, read, schema"),
        (line(**ok), "unknown op None"),
        (line(token=token, op="latest", topic="nope"), "no topic 'nope' in the cluster; topics: out"),
        (line(token=token, op="latest", topic=7), "topic must be a topic name"),
        (line(**ok, op="latest", isolation="rc"), "isolation must be read_committed or read_uncommitted"),
        (line(**read, start=0, end=99), "offsets out of range: [0, 99) of out-0; read_committed may read [0, 8) now"),
        (line(**read, start=5, end=4), "offsets out of range: [5, 4)"),
        (line(**read, start=-1, end=4), "offsets out of range: [-1, 4)"),
        (line(**{**read, "partition": 2}, start=0, end=1), "topic 'out' has partitions 0-1, not 2"),
        (line(**{**read, "partition": True}, start=0, end=1), "partition must be an integer, not True"),
        (line(**read, start="0", end=1), "start must be an integer, not '0'"),
        (line(**read, start=0), "end must be an integer, not None"),
        (
            b'{"token": "' + b"x" * MAX_REQUEST_BYTES + b'"}\n',
            f"request too long: one JSON line of at most {MAX_REQUEST_BYTES} bytes",
        ),
    ]


def test_a_malformed_request_gets_one_clear_error_line_and_the_server_keeps_serving(feed: Feed):
    for payload, expected in bad_requests(feed.token):
        answer = exchange(feed.port, payload)
        assert len(answer) == 1, payload
        error = json.loads(answer[0])["error"]
        assert expected in error, (payload, error)
        assert "Traceback" not in error
    # An unfinished line (the client stops writing without a newline) is refused too.
    [answer] = exchange(feed.port, b'{"op": "latest"', close_write=True)
    assert json.loads(answer)["error"].startswith("incomplete request")
    assert values(feed, RC, 1) == ["plain-1", "committed-1", "committed-3"]


def test_request_says_what_went_wrong_in_one_line(feed: Feed):
    with pytest.raises(SparkBridgeError, match=r"answered: no topic 'nope' in the cluster"):
        request(feed.port, feed.token, "latest", topic="nope", isolation=RC)


# -- lifecycle --------------------------------------------------------------------------------------


def test_stop_closes_the_port_refuses_later_connections_and_can_be_called_twice(cluster: Cluster):
    feed = Feed.start(cluster)
    port = feed.port
    assert feed.running
    request(port, feed.token, "schema")
    feed.stop()
    feed.stop()
    assert not feed.running
    assert repr(feed) == f"<Feed 127.0.0.1:{port} stopped>"
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    with pytest.raises(SparkBridgeError, match=r"no eos feed on 127\.0\.0\.1:.*Feed\.start"):
        request(port, feed.token, "schema")
    with pytest.raises(SparkBridgeError, match="this feed is stopped"):
        feed.options(TOPIC)


def test_the_context_manager_stops_the_feed(cluster: Cluster):
    with Feed.start(cluster) as feed:
        port = feed.port
    assert not feed.running
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_reading_leaves_the_run_unchanged_same_fingerprint_as_an_unread_twin():
    read, twin = build(seed=21), build(seed=21)
    before = read.fingerprint()
    events = len(read.world.trace.events)
    now = read.now_ms
    with Feed.start(read) as feed:
        for isolation in (RC, RU):
            read_all(feed, isolation)
            feed.latest(TOPIC, isolation)
        for payload, _ in bad_requests(feed.token):
            exchange(feed.port, payload)
        request(feed.port, feed.token, "schema")
    assert read.fingerprint() == before == twin.fingerprint()
    assert len(read.world.trace.events) == events
    assert read.now_ms == now
    assert len(read.producers) == len(twin.producers)
    assert len(read.consumers) == len(twin.consumers)


# -- start and options ------------------------------------------------------------------------------


def test_a_live_run_feed_reads_under_the_runs_lock():
    run = LiveRun.start(seed=5, brokers=3)
    populate(run.cluster)
    with Feed.start(run) as feed:
        assert feed.lock is run.lock
        answers: list[Any] = []
        with run.lock:  # as the pacer or a cell driving the engine would
            t = threading.Thread(target=lambda: answers.append(feed.latest(TOPIC, RC)))
            t.start()
            t.join(timeout=0.3)
            assert t.is_alive()  # the feed waits for the lock
            assert answers == []
        t.join(timeout=10)
        assert answers == [({0: 8, 1: 7}, [])]
        assert answers[0][0][0] == run.cluster.describe_partition(TOPIC, 0).last_stable_offset


def test_start_refuses_what_it_cannot_serve(cluster: Cluster):
    with pytest.raises(SparkBridgeError, match=r"serves an engine Cluster or a widgets\.live\.LiveRun, not str"):
        Feed.start("cluster")
    with pytest.raises(SparkBridgeError, match=r"lock must be a lock such as threading\.RLock"):
        Feed.start(cluster, lock=object())
    run = LiveRun.start(seed=1, brokers=1)
    with pytest.raises(SparkBridgeError, match="a LiveRun brings its own lock"):
        Feed.start(run, lock=threading.RLock())


def test_options_name_the_port_token_topic_and_isolation_and_check_them(feed: Feed):
    assert feed.options(TOPIC) == {
        "port": str(feed.port),
        "token": feed.token,
        "topic": TOPIC,
        "isolation.level": RC,
    }
    assert feed.options(TOPIC, RU)["isolation.level"] == RU
    with pytest.raises(SparkBridgeError, match="no topic 'nope' in the cluster; topics: out"):
        feed.options("nope")
    with pytest.raises(SparkBridgeError, match="isolation must be read_committed or read_uncommitted, not 'snapshot'"):
        feed.options(TOPIC, "snapshot")


def test_kernel_side_read_checks_its_range_like_the_server(feed: Feed):
    assert feed.read(TOPIC, 1, 0, 3, RC).column("value").to_pylist() == ["plain-1", "committed-1", "committed-3"]
    with pytest.raises(SparkBridgeError, match=r"offsets out of range: \[0, 99\) of out-1"):
        feed.read(TOPIC, 1, 0, 99, RC)
