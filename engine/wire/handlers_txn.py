"""Transactions over the wire: InitProducerId, FindCoordinator, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, TxnOffsetCommit, and the admin reads of ``kafka-transactions.sh`` (ListTransactions,
DescribeTransactions, DescribeProducers).

The writes go to the connection's broker as the engine's own requests, so the transaction
coordinator that fences zombies, times transactions out and writes markers is the one the
notebooks show. The three admin reads go there too, as Kafka's ``KafkaApis`` hands them on:
ListTransactions to the broker's transaction coordinator, which lists the ids of the
``__transaction_state`` partitions it leads (a client asks every broker and unions the answers);
DescribeTransactions to the same coordinator, which answers NOT_COORDINATOR for an id another
broker coordinates; DescribeProducers to the broker's replica manager. A broker that does not
answer (cut off from the connection) reads as REQUEST_TIMED_OUT.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.coordinator_lookup import KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION
from engine.errors import ErrorCode
from engine.protocol import (
    ActiveProducer,
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    TxnOffsetCommitRequest,
)
from engine.wire.shape import answer_error, every_partition, millis

if TYPE_CHECKING:
    from engine.wire.frames import Request
    from engine.wire.gateway import WireConnection

Reply = Any


def _fenced_as_known(code: ErrorCode, request: Request, first_version: int) -> ErrorCode:
    """PRODUCER_FENCED as a request version before ``first_version`` knows it: INVALID_PRODUCER_EPOCH.

    KIP-588 (Kafka 2.7) added PRODUCER_FENCED in InitProducerId v4, AddPartitionsToTxn v2,
    AddOffsetsToTxn v2 and EndTxn v2; ``KafkaApis`` answers the older versions INVALID_PRODUCER_EPOCH
    instead, which their clients handle as a fence (aiokafka, kafka-python send these versions).
    """
    if code == ErrorCode.PRODUCER_FENCED and request.api_version < first_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


def _single(conn: WireConnection, body: Any, reply: Reply, request: Request, fenced_from: int, **extra: Any) -> None:
    """Send one engine request and reply with its error code (and ``extra`` fields from the answer)."""

    def answered(a: Any) -> None:
        code = _fenced_as_known(answer_error(a), request, fenced_from)
        out: dict[str, Any] = {"throttle_time": 0, "error_code": code}
        for wire_name, attr in extra.items():
            out[wire_name] = getattr(a, attr, -1) if a is not None else -1
        reply(out)

    conn.ask(body, answered)


def find_coordinator(conn: WireConnection, request: Request, reply: Reply) -> None:
    """The coordinator of a group (key type 0) or transactional id (1), with its served address."""
    body = request.body
    key_type = getattr(body, "key_type", KEY_TYPE_GROUP)

    def answered(a: Any) -> None:
        code = answer_error(a)
        addr = conn.service.addresses.get(a.node_id) if a is not None and code == ErrorCode.NONE else None
        if addr is None:
            code = code if code != ErrorCode.NONE else ErrorCode.COORDINATOR_NOT_AVAILABLE
            reply({"throttle_time": 0, "error_code": code, "node_id": -1, "host": "", "port": -1})
            return
        reply({"throttle_time": 0, "error_code": code, "node_id": a.node_id, "host": addr[0], "port": addr[1]})

    conn.ask(FindCoordinatorRequest(body.key, key_type), answered)


def init_producer_id(conn: WireConnection, request: Request, reply: Reply) -> None:
    """A producer id and epoch (KIP-360: v3+ may name the id and epoch it had, to bump it)."""
    body = request.body
    engine_request = InitProducerIdRequest(
        body.transactional_id,
        millis(body.transaction_timeout),
        getattr(body, "producer_id", -1),
        getattr(body, "producer_epoch", -1),
    )
    _single(conn, engine_request, reply, request, 4, producer_id="producer_id", producer_epoch="producer_epoch")


def add_partitions_to_txn(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Add partitions to the producer's transaction; every partition gets the coordinator's answer."""
    body = request.body
    topics = body.v3_and_below_topics
    partitions = tuple((t.name, p) for t in topics for p in t.partitions)
    engine_request = AddPartitionsToTxnRequest(
        body.v3_and_below_transactional_id,
        body.v3_and_below_producer_id,
        body.v3_and_below_producer_epoch,
        partitions,
    )

    def answered(a: Any) -> None:
        code = _fenced_as_known(answer_error(a), request, 2)
        reply(
            {
                "throttle_time": 0,
                "results_by_topic_v3_and_below": [
                    {
                        "name": t.name,
                        "results_by_partition": [
                            {"partition_index": p, "partition_error_code": code} for p in t.partitions
                        ],
                    }
                    for t in topics
                ],
            }
        )

    conn.ask(engine_request, answered)


def add_offsets_to_txn(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Add the group's offsets partition to the transaction."""
    b = request.body
    body = AddOffsetsToTxnRequest(b.transactional_id, b.producer_id, b.producer_epoch, b.group_id)
    _single(conn, body, reply, request, 2)


#: The first versions that are transaction version 2 (KIP-890 part 2): EndTxn, TxnOffsetCommit, Produce.
END_TXN_V2_FROM = 5
TXN_OFFSET_COMMIT_V2_FROM = 5
PRODUCE_V2_FROM = 12


def transaction_version_of(request: Request, first_v2: int) -> int:
    """The client's transaction version, read from the request's version as Kafka reads it (1 or 2)."""
    return 2 if request.api_version >= first_v2 else 1


def end_txn(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Commit or abort the transaction; v5+ is transaction version 2 and answers the next producer id and epoch.

    ``KafkaApis.handleEndTxnRequest`` reads the client's transaction version from the request
    (``EndTxnRequest.isTransactionV2Enabled``: version 5 and later): under version 2 the coordinator
    bumps the epoch on every end (a new producer id when it is exhausted) and v5's answer carries
    both; v0-4 are version 1 and keep the epoch.
    """
    b = request.body
    version = transaction_version_of(request, END_TXN_V2_FROM)
    body = EndTxnRequest(b.transactional_id, b.producer_id, b.producer_epoch, b.committed, version)
    _single(conn, body, reply, request, 2, producer_id="producer_id", producer_epoch="producer_epoch")


def txn_offset_commit(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Write the group's offsets as part of the transaction (the group coordinator holds them pending).

    v5+ is transaction version 2: the client sends no AddOffsetsToTxn, and the group coordinator's
    broker adds the group's offsets partition to the transaction first (Kafka's
    ``GroupCoordinatorService.commitTransactionalOffsets`` verifying through
    ``AddPartitionsToTxnManager`` with ``addPartition``, per
    ``txnOffsetCommitRequestVersionToTransactionSupportedOperation``); here it is the engine's
    AddOffsetsToTxn, whose failure answers every partition (PRODUCER_FENCED as
    INVALID_PRODUCER_EPOCH, as the partition leader answers a fenced verification).
    """
    b = request.body
    if transaction_version_of(request, TXN_OFFSET_COMMIT_V2_FROM) < 2:
        _txn_offset_commit(conn, request, reply)
        return

    def refuse(code: ErrorCode) -> None:
        if code == ErrorCode.PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        reply({"throttle_time": 0, "topics": every_partition(b.topics, code)})

    def added(a: Any) -> None:
        code = answer_error(a)
        if code == ErrorCode.NONE:
            _txn_offset_commit(conn, request, reply)
        else:
            refuse(code)

    def found(a: Any) -> None:
        code = answer_error(a)
        if code != ErrorCode.NONE:
            refuse(code)
            return
        add = AddOffsetsToTxnRequest(b.transactional_id, b.producer_id, b.producer_epoch, b.group_id)
        conn.request(f"broker-{a.node_id}", add, conn.guarded(added), timeout_ms=10_000)

    conn.ask(FindCoordinatorRequest(b.transactional_id, KEY_TYPE_TRANSACTION), found)


def _txn_offset_commit(conn: WireConnection, request: Request, reply: Reply) -> None:
    b = request.body
    offsets = tuple((t.name, p.partition_index, p.committed_offset) for t in b.topics for p in t.partitions)
    engine_request = TxnOffsetCommitRequest(
        b.transactional_id,
        b.group_id,
        b.producer_id,
        b.producer_epoch,
        getattr(b, "generation_id", -1),
        getattr(b, "member_id", ""),
        getattr(b, "group_instance_id", None),
        offsets,
    )

    def answered(a: Any) -> None:
        reply({"throttle_time": 0, "topics": every_partition(b.topics, answer_error(a))})

    conn.ask(engine_request, answered)


# -- admin reads ------------------------------------------------------------------------------


def list_transactions(conn: WireConnection, request: Request, reply: Reply) -> None:
    """The transactions the connected broker's coordinator holds, filtered by state and producer id.

    Kafka's ``TransactionCoordinator.handleListTransactions``: the ids of the
    ``__transaction_state`` partitions this broker leads, COORDINATOR_LOAD_IN_PROGRESS while one
    of them loads, unknown state filters named back.
    """
    b = request.body
    ask = ListTransactionsRequest(tuple(b.state_filters), tuple(b.producer_id_filters))

    def answered(a: Any) -> None:
        code = answer_error(a)
        listed = a.transactions if code is ErrorCode.NONE else ()
        reply(
            {
                "throttle_time": 0,
                "error_code": code,
                "unknown_state_filters": list(a.unknown_state_filters) if code is ErrorCode.NONE else [],
                "transaction_states": [
                    {"transactional_id": t.transactional_id, "producer_id": t.producer_id, "transaction_state": t.state}
                    for t in listed
                ],
            }
        )

    conn.ask(ask, answered)


def describe_transactions(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Each named transaction's state, epoch, timeout and partitions, as the connected broker's coordinator holds it.

    Kafka's ``TransactionCoordinator.handleDescribeTransactions``: NOT_COORDINATOR for an id
    another broker coordinates (the client looks its coordinator up with FindCoordinator),
    COORDINATOR_LOAD_IN_PROGRESS while loading, TRANSACTIONAL_ID_NOT_FOUND for an unknown id.
    """
    ids = tuple(request.body.transactional_ids)

    def answered(a: Any) -> None:
        if a is None:
            states = [_described_error(tid, ErrorCode.REQUEST_TIMED_OUT) for tid in ids]
        else:
            states = [_described(d) for d in a.transactions]
        reply({"throttle_time": 0, "transaction_states": states})

    conn.ask(DescribeTransactionsRequest(ids), answered)


def _described_error(transactional_id: str, code: ErrorCode) -> dict[str, Any]:
    """One id's answer with an error: the other fields at their schema defaults (as Kafka leaves them)."""
    return {
        "error_code": code,
        "transactional_id": transactional_id,
        "transaction_state": "",
        "transaction_timeout": 0,
        "transaction_start_time": 0,
        "producer_id": -1,
        "producer_epoch": -1,
        "topics": [],
    }


def _described(d: Any) -> dict[str, Any]:
    if d.error is not ErrorCode.NONE:
        return _described_error(d.transactional_id, d.error)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in d.partitions:
        by_topic.setdefault(topic, []).append(partition)
    return {
        "error_code": ErrorCode.NONE,
        "transactional_id": d.transactional_id,
        "transaction_state": d.state,
        "transaction_timeout": d.timeout_ms,
        "transaction_start_time": d.start_ms,
        "producer_id": d.producer_id,
        "producer_epoch": d.producer_epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in sorted(by_topic.items())],
    }


def describe_producers(conn: WireConnection, request: Request, reply: Reply) -> None:
    """Each partition's active producers, asked of the connected broker (``ReplicaManager.activeProducerState``).

    Kafka's admin client sends DescribeProducers to the partition's leader (or ``--broker-id``'s
    broker); the broker answers from its replica, leader or follower, and a partition it does not
    host is ``NOT_LEADER_OR_FOLLOWER``. No answer (the broker cut off) is ``REQUEST_TIMED_OUT``.
    """
    asked = [(t.name, p) for t in request.body.topics for p in t.partition_indexes]
    answers: dict[tuple[str, int], Any] = {}
    left = [len(asked)]

    def done() -> None:
        topics = []
        for t in request.body.topics:
            parts = []
            for p in t.partition_indexes:
                a = answers[(t.name, p)]
                code = answer_error(a)
                parts.append(
                    {
                        "partition_index": p,
                        "error_code": code,
                        "error_message": None,
                        "active_producers": [] if code is not ErrorCode.NONE else [_active(x) for x in a.producers],
                    }
                )
            topics.append({"name": t.name, "partitions": parts})
        reply({"throttle_time": 0, "topics": topics})

    if not asked:
        done()
    for topic, partition in asked:

        def answered(a: Any, key: tuple[str, int] = (topic, partition)) -> None:
            answers[key] = a
            left[0] -= 1
            if not left[0]:
                done()

        conn.ask(DescribeProducersRequest(topic, partition), answered)


def _active(x: ActiveProducer) -> dict[str, Any]:
    return {
        "producer_id": x.producer_id,
        "producer_epoch": x.producer_epoch,
        "last_sequence": x.last_sequence,
        "last_timestamp": x.last_timestamp,
        "coordinator_epoch": x.coordinator_epoch,
        "current_txn_start_offset": -1 if x.current_txn_start_offset is None else x.current_txn_start_offset,
    }
