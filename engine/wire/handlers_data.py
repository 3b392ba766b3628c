"""The data path over the wire: Metadata, Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, CreateTopics.

Each handler turns one wire request into the engine's requests to the connection's broker, waits
for all their answers and replies once. A wire Produce is one engine ProduceRequest carrying every
batch of every partition, in order (the engine asks per partition only for consumer fetches).

Fetch waits as Kafka's ``DelayedFetch`` does, in two steps: every partition is read at once
(``max_wait_ms`` 0); if nothing was readable and the client allows a wait, every partition is asked
again with the client's ``max_wait``, parked in the broker's purgatory, and the reply goes out with
the first answer that carries data (the other partitions keep their first, empty answers) or once
all have answered. Fetch sessions (KIP-227) are not kept: the answer's session id is 0, which tells
the client to send full requests.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from engine.config import IsolationLevel
from engine.errors import ErrorCode, KafkaError
from engine.protocol import (
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
    ProducePartition,
    ProduceRequest,
)
from engine.wire import records
from engine.wire.handlers_consumer_group import topic_id, topic_names_by_id
from engine.wire.handlers_txn import PRODUCE_V2_FROM, transaction_version_of
from engine.wire.shape import millis

if TYPE_CHECKING:
    from engine.wire.frames import Request
    from engine.wire.gateway import WireConnection

Reply = Any

CLUSTER_ID = "eos-magics-simulated"


def _isolation(body: Any) -> IsolationLevel:
    """Return a request's ``isolation_level`` (Kafka's int on the wire: 1 read_committed, else 0)."""
    return (
        IsolationLevel.READ_COMMITTED if getattr(body, "isolation_level", 0) == 1 else IsolationLevel.READ_UNCOMMITTED
    )


# -- Metadata ---------------------------------------------------------------------------------


def metadata(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Answer Metadata from the broker's own metadata cache, with each broker's served address.

    Topics the broker does not know are auto-created first when the request allows it (v4+'s
    ``allow_auto_topic_creation``; true before v4, as Kafka reads them) and the cluster's
    ``auto.create.topics.enable`` is on (:func:`_auto_create`).
    """
    body = request.body
    names: tuple[str, ...] | None
    if body.topics is None or (request.api_version == 0 and not body.topics):
        names = None
    else:
        by_id = topic_names_by_id(conn)  # KIP-848 clients (librdkafka 2.16) ask by topic id
        names = tuple(
            n for t in body.topics if (n := t.name if t.name is not None else by_id.get(getattr(t, "topic_id", None)))
        )
    allow = bool(getattr(body, "allow_auto_topic_creation", True))

    def answered(resp: Any) -> None:
        if resp is None:
            conn.hang_up(f"{conn.broker} did not answer Metadata")
            return
        reply(describe_metadata(conn, resp, names, allow_auto_create=allow))

    conn.ask(MetadataRequest(names), answered)


def live_brokers(conn: WireConnection) -> tuple[int, ...]:
    """Return the brokers a Metadata answer lists: registered with the controller and not fenced.

    Kafka's ``KRaftMetadataCache.getAliveBrokerNodes`` lists every unfenced broker of the metadata
    image, whether the cluster has topics or not; a crashed broker stays listed until the controller
    fences it (``broker.session.timeout.ms`` without a heartbeat). The engine's brokers learn the
    live set only along with partition changes, so the answer takes it from the controller, whose
    registrations are the metadata image the brokers replay in KRaft.
    """
    return conn.service.cluster.controller.live_brokers()


def describe_metadata(
    conn: WireConnection, resp: Any, names: tuple[str, ...] | None, *, allow_auto_create: bool = False
) -> dict[str, Any]:
    """Return a wire Metadata answer for the engine's MetadataResponse."""
    service = conn.service
    live = live_brokers(conn)
    # A leader the answering broker still names is listed with it: in KRaft the fence and the
    # leader move are one metadata batch, so a broker's image never names an unlisted leader (the
    # engine's broker learns the move a message later than the controller makes it).
    named = {st.leader for st in resp.partitions if st.leader >= 0}
    brokers = [
        {"node_id": b, "host": host, "port": port, "rack": None}
        for b in sorted(set(live) | named)
        if (addr := service.addresses.get(b)) is not None
        for host, port in (addr,)
    ]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for st in resp.partitions:
        error = ErrorCode.NONE if st.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE
        by_topic.setdefault(st.topic, []).append(
            {
                "error_code": error,
                "partition_index": st.partition,
                "leader_id": st.leader,
                "leader_epoch": st.leader_epoch,
                "replica_nodes": st.replicas,
                "isr_nodes": st.isr,
                "offline_replicas": tuple(r for r in st.replicas if r not in live),
            }
        )
    topics = [
        {
            "error_code": ErrorCode.NONE,
            "name": name,
            "topic_id": topic_id(conn, name),
            "is_internal": name.startswith("__"),
            "partitions": parts,
        }
        for name, parts in sorted(by_topic.items())
    ]
    topics.extend(
        {"error_code": _unknown_topic(conn, name, allow_auto_create), "name": name, "partitions": []}
        for name in names or ()
        if name not in by_topic
    )
    # KRaft answers a random live broker (KRaftMetadataCache.getRandomAliveBrokerId); the lowest
    # live id keeps the answer deterministic. -1 only when no broker is live.
    controller = min(live) if live else -1
    return {
        "throttle_time": 0,
        "brokers": brokers,
        "cluster_id": CLUSTER_ID,
        "controller_id": controller,
        "topics": topics,
    }


def _unknown_topic(conn: WireConnection, name: str, allow_auto_create: bool) -> ErrorCode:
    """Return the error for a topic the answering broker does not know, auto-creating it if allowed.

    As Kafka 4's ``KafkaApis.getTopicMetadata`` and ``AutoTopicCreationManager`` do: an illegal name
    is INVALID_TOPIC_EXCEPTION; any other unknown topic is UNKNOWN_TOPIC_OR_PARTITION, also the
    first answer after the broker asked the controller to create it (KRaft sends the creation and
    answers at once; the client asks again and finds the topic once its broker has the leaders).
    A topic is created with ``num.partitions`` and ``default.replication.factor`` when the request
    allows it and ``auto.create.topics.enable`` is on; internal topics are left to their
    coordinators, and a name the controller would refuse (a '.'/'_' collision) creates nothing.
    """
    from engine.views import lookup

    if lookup.topic_name_problem(name) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    cluster = conn.service.cluster
    config = cluster.config
    if allow_auto_create and config.auto_create_topics_enable and name not in cluster.topics:
        # Kafka's controller may refuse it (an internal name, a collision): then it stays unknown.
        with contextlib.suppress(KafkaError):
            cluster.add_topic(name, config.num_partitions)
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- Produce ----------------------------------------------------------------------------------


def produce(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Append each partition's batches through the broker's produce path.

    A partition whose records do not decode is refused and nothing of it is appended:
    CORRUPT_MESSAGE for a malformed batch, UNKNOWN_SERVER_ERROR for compressed bytes that do not
    inflate or a codec id Kafka lacks (what Kafka 4.4 answers, see ``records``), and
    UNSUPPORTED_COMPRESSION_TYPE for zstd below Produce v7 (``ProduceRequest.validateRecords``) or
    a codec whose library is missing. An ``acks=0`` produce gets no answer; when a partition is
    refused here, the connection is closed instead, as ``KafkaApis.handleProduceRequest`` does so
    that the producer learns of it (the engine's broker answers nothing to ``acks=0``, so its own
    append errors are not seen here).
    """
    body = request.body
    timeout_ms = millis(body.timeout)
    sends: list[ProducePartition] = []
    slots: list[tuple[str, int, int]] = []  # (topic, partition, number of its batches)
    refused: dict[tuple[str, int], tuple[ErrorCode, str]] = {}
    for topic in body.topic_data:
        for part in topic.partition_data:
            data = bytes(part.records or b"")
            error = _undecodable(data, request.api_version)
            batches: list[Any] = []
            if error is None:
                try:
                    batches = records.decode_batches(data)
                except records.UnsupportedCompressionError as exc:
                    error = (ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, str(exc))
                except records.UndecodableCompressionError as exc:
                    error = (ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
                except records.CorruptRecordError as exc:
                    error = (ErrorCode.CORRUPT_MESSAGE, str(exc))
            if error is None and not batches:
                error = (ErrorCode.CORRUPT_MESSAGE, "no record batch in the request")
            if error is not None:
                refused[(topic.name, part.index)] = error
                slots.append((topic.name, part.index, 0))
                continue
            sends.extend(ProducePartition(topic.name, part.index, batch) for batch in batches)
            slots.append((topic.name, part.index, len(batches)))

    txn_version = transaction_version_of(request, PRODUCE_V2_FROM)
    appends = [ProduceRequest(tuple(sends), body.acks, timeout_ms, body.transactional_id, txn_version)] if sends else []
    if body.acks == 0:  # the broker answers nothing: neither does this connection
        conn.gather(appends, lambda _answers: None)
        reply(None)
        if refused:
            failed = ", ".join(f"{t}-{p}: {refused[(t, p)][0].name}" for t, p in sorted(refused))
            conn.close_when_answered(f"acks=0 produce refused ({failed})")
        return

    def answered(responses: list[Any]) -> None:
        answers = list(responses[0].partitions) if responses and responses[0] is not None else [None] * len(sends)
        topics: dict[str, list[dict[str, Any]]] = {}
        i = 0
        for name, index, n in slots:
            mine, i = answers[i : i + n], i + n
            row = _produce_partition(index, mine, refused.get((name, index)))
            if row["error_code"] == ErrorCode.TRANSACTION_ABORTABLE and request.api_version < _ABORTABLE_FROM_VERSION:
                row["error_code"] = ErrorCode.INVALID_TXN_STATE
            topics.setdefault(name, []).append(row)
        reply(
            {
                "responses": [{"name": n, "partition_responses": p} for n, p in topics.items()],
                "throttle_time": 0,
            }
        )

    conn.gather(appends, answered)


#: The first Produce version whose clients know TRANSACTION_ABORTABLE (KIP-890); older ones get
#: INVALID_TXN_STATE (``AddPartitionsToTxnManager``: ``genericErrorSupported`` from v11).
_ABORTABLE_FROM_VERSION = 11
#: The first Produce version that may carry zstd batches (KIP-110).
_ZSTD_FROM_VERSION = 7


def _undecodable(data: bytes, version: int) -> tuple[ErrorCode, str] | None:
    """Refuse zstd below Produce v7 before decoding, as ``ProduceRequest.validateRecords`` does."""
    if version < _ZSTD_FROM_VERSION and records.first_codec(data) == 4:
        return (
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"Produce requests with version {version} are not allowed to use ZStandard compression",
        )
    return None


def _produce_partition(index: int, answers: list[Any], refused: tuple[ErrorCode, str] | None) -> dict[str, Any]:
    if refused is not None:
        return {"index": index, "error_code": refused[0], "base_offset": -1, "error_message": refused[1]}
    first = answers[0]
    if first is None:
        return {"index": index, "error_code": ErrorCode.REQUEST_TIMED_OUT, "base_offset": -1}
    bad = next((a for a in answers if a is None or a.error != ErrorCode.NONE), None)
    if bad is not None and bad is not first:
        first = bad
    return {
        "index": index,
        "error_code": ErrorCode.REQUEST_TIMED_OUT if first is None else first.error,
        "base_offset": first.base_offset,
        "log_append_time": -1,
        "log_start_offset": 0,
        "error_message": first.error_message,
    }


# -- Fetch ------------------------------------------------------------------------------------


def fetch(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Read each partition; wait in purgatory (step two) only when nothing was readable at once."""
    body = request.body
    isolation = _isolation(body)
    wanted = [(t.topic, p) for t in body.topics for p in t.partitions]
    max_wait = millis(body.max_wait)

    def ask(wait_ms: int) -> list[FetchRequest]:
        return [
            FetchRequest(
                topic,
                p.partition,
                p.fetch_offset,
                isolation_level=isolation,
                max_bytes=p.partition_max_bytes,
                max_wait_ms=wait_ms,
                current_leader_epoch=getattr(p, "current_leader_epoch", -1),
            )
            for topic, p in wanted
        ]

    def first_step(answers: list[Any]) -> None:
        # A fetch of no partitions wants no data, and Kafka's ReplicaManager.fetchMessages answers it at
        # once: the Java consumer's close sends one per broker to end its fetch sessions, and waits for it.
        if not wanted or max_wait <= 0 or any(a is None or a.batches or a.error != ErrorCode.NONE for a in answers):
            reply(_fetch_answer(answers, wanted))
            return
        _wait_for_data(conn, ask(max_wait), answers, lambda final: reply(_fetch_answer(final, wanted)))

    conn.gather(ask(0), first_step)


def _wait_for_data(conn: WireConnection, bodies: list[FetchRequest], first: list[Any], done: Any) -> None:
    """Send parked fetches; finish with the first answer that has data, or when all have answered."""
    answers = list(first)
    state = {"left": len(bodies), "done": False}
    ids: list[int] = []

    def one(i: int, answer: Any) -> None:
        if state["done"]:
            return
        state["left"] -= 1
        if answer is not None:
            answers[i] = answer
        if (answer is not None and answer.batches) or state["left"] == 0:
            state["done"] = True
            for msg_id in ids:
                conn.cancel_request(msg_id)
            done(answers)

    for i, b in enumerate(bodies):
        ids.append(conn.request(conn.broker, b, conn.guarded(lambda answer, i=i: one(i, answer))))


def _fetch_answer(answers: list[Any], wanted: list[tuple[str, Any]]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, p), a in zip(wanted, answers, strict=True):
        topics.setdefault(topic, []).append(_fetch_partition(p.partition, a))
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "session_id": 0,
        "responses": [{"topic": t, "partitions": parts} for t, parts in topics.items()],
    }


def _fetch_partition(partition: int, a: Any) -> dict[str, Any]:
    if a is None:
        return {
            "partition_index": partition,
            "error_code": ErrorCode.NOT_LEADER_OR_FOLLOWER,
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "preferred_read_replica": -1,
            "records": b"",
        }
    aborted = None
    if a.aborted_transactions is not None:
        aborted = [{"producer_id": t.producer_id, "first_offset": t.first_offset} for t in a.aborted_transactions]
    out: dict[str, Any] = {
        "partition_index": partition,
        "error_code": a.error,
        "high_watermark": a.high_watermark,
        "last_stable_offset": a.last_stable_offset,
        "log_start_offset": a.log_start_offset,
        "aborted_transactions": aborted,
        "preferred_read_replica": -1,
        "records": records.encode_batches(a.batches) if a.batches else b"",
    }
    if a.diverging_epoch is not None:
        out["diverging_epoch"] = {"epoch": a.diverging_epoch[0], "end_offset": a.diverging_epoch[1]}
    return out


# -- ListOffsets ------------------------------------------------------------------------------


def list_offsets(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Earliest (-2), latest (-1; the LSO for read_committed), by timestamp (>= 0) and max timestamp (-3, v7).

    A timestamp lookup answers the first record whose timestamp is >= the target, with that
    record's timestamp and leader epoch, or -1/-1 when none lies below the HW (the LSO for
    read_committed), as Kafka's ``ReplicaManager.fetchOffset``. A special timestamp the request's
    version does not carry (-3 before v7; -4 and -5 need v8 and v9, not served) is
    UNSUPPORTED_VERSION, as Kafka's ``isListOffsetsTimestampUnsupported`` answers it.
    """
    body = request.body
    isolation = _isolation(body)
    wanted = [(t.name, p) for t in body.topics for p in t.partitions]
    sends = [ListOffsetsRequest(name, p.partition_index, p.timestamp, isolation) for name, p in wanted]
    unsupported = {
        i for i, (_n, p) in enumerate(wanted) if p.timestamp < -3 or (p.timestamp == -3 and request.api_version < 7)
    }

    def answered(answers: list[Any]) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for i, ((name, p), a) in enumerate(zip(wanted, answers, strict=True)):
            if i in unsupported:
                entry = {
                    "partition_index": p.partition_index,
                    "error_code": ErrorCode.UNSUPPORTED_VERSION,
                    "timestamp": -1,
                    "offset": -1,
                }
            elif a is None:
                entry = {"partition_index": p.partition_index, "error_code": ErrorCode.REQUEST_TIMED_OUT, "offset": -1}
            else:
                entry = {
                    "partition_index": p.partition_index,
                    "error_code": a.error,
                    "timestamp": a.timestamp,
                    "offset": a.offset,
                    "leader_epoch": a.leader_epoch,
                }
            topics.setdefault(name, []).append(entry)
        reply({"throttle_time": 0, "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()]})

    conn.gather(
        [s for i, s in enumerate(sends) if i not in unsupported], _fill_skipped(answered, unsupported, len(sends))
    )


def _fill_skipped(callback: Any, skipped: set[int], n: int) -> Any:
    """Wrap ``callback`` so it gets ``n`` answers, None at the indexes that were not sent."""

    def wrapped(answers: list[Any]) -> None:
        it = iter(answers)
        callback([None if i in skipped else next(it) for i in range(n)])

    return wrapped


# -- OffsetForLeaderEpoch ---------------------------------------------------------------------


def offset_for_leader_epoch(conn: WireConnection, request: Request, reply: Reply) -> None:
    """The end offset of a leader epoch on the partition's leader (a consumer's truncation check)."""
    wanted = [(t.topic, p) for t in request.body.topics for p in t.partitions]
    sends = [
        OffsetForLeaderEpochRequest(topic, p.partition, p.leader_epoch, p.current_leader_epoch) for topic, p in wanted
    ]

    def answered(answers: list[Any]) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), a in zip(wanted, answers, strict=True):
            if a is None:
                entry = {
                    "error_code": ErrorCode.REQUEST_TIMED_OUT,
                    "partition": p.partition,
                    "leader_epoch": -1,
                    "end_offset": -1,
                }
            else:
                entry = {
                    "error_code": a.error,
                    "partition": p.partition,
                    "leader_epoch": a.leader_epoch,
                    "end_offset": a.end_offset,
                }
            topics.setdefault(topic, []).append(entry)
        reply({"throttle_time": 0, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})

    conn.gather(sends, answered)
