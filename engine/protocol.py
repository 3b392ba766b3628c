"""Requests and responses that cross the simulated network.

Every message is a slotted dataclass, frozen except the hot produce and fetch messages (see
``_hot``). Errors travel as an :class:`~engine.errors.ErrorCode` plus a message string in
responses; they become exceptions only at the client API (house style R8). Names follow
Kafka's RPC names (ProduceRequest, FetchRequest, ...), simplified: one partition per consumer
fetch request (a produce carries every partition the producer has a batch ready for on that
leader, and a follower's fetch every partition it follows there, :class:`ReplicaFetchRequest`),
and no API versions.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from engine.config import IsolationLevel
from engine.errors import ErrorCode

#: The messages of the produce and fetch path: slotted but not frozen, because a frozen
#: dataclass's ``__init__`` sets each field through ``object.__setattr__`` and costs about four
#: times as much (1.9 µs against 0.43 µs for six fields, measured). Nothing mutates them after
#: construction; treat them as immutable like the others.
_hot = dataclasses.dataclass(slots=True)

#: Detail keys of the hot messages' ``trace_fields`` (their ``trace_detail`` keys, made once).
_PRODUCE_KEYS = ("tp", "pid", "epoch", "seq", "n")
_PRODUCE_RESPONSE_KEYS = ("tp", "error", "offset")
_REPLICA_FETCH_KEYS = ("replica", "partitions")
_PARTITIONS_KEYS = ("partitions",)


def _pairs(fields: tuple[tuple[str, ...], tuple[Any, ...]]) -> tuple[tuple[str, Any], ...]:
    """Return ``trace_fields``' keys and values as the detail pairs of ``trace_detail``."""
    keys, values = fields
    return tuple(zip(keys, values, strict=True))


# -- produce -------------------------------------------------------------------------------


@_hot
class ProducePartition:
    """One batch for one partition inside a :class:`ProduceRequest`."""

    topic: str
    partition: int
    batch: Any


@_hot
class ProduceRequest:
    """Append batches to partitions the destination leads, as Kafka's ProduceRequest does.

    A producer sends one request per leader carrying at most one batch per partition (the wire
    gateway may pass several for one partition, in order). The broker answers once, after every
    partition has its answer (acks=all: below the HW).
    """

    partitions: tuple[ProducePartition, ...]
    acks: int
    timeout_ms: int
    transactional_id: str | None = None
    #: The client's transaction version, read from the request's version as Kafka does (Produce v12+
    #: is version 2: the leader adds the partition; older ones only verify it was added); 0 means
    #: the cluster's ``transaction.version``, which the engine's own producers follow.
    transaction_version: int = 0

    def trace_fields(self) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        """Return :meth:`trace_detail`'s keys and values apart (``Trace.emit_fields``; the hot path)."""
        parts = self.partitions
        if len(parts) == 1:
            p = parts[0]
            b = p.batch
            if not b.is_control:
                tp = f"{p.topic}-{p.partition}"
                return _PRODUCE_KEYS, (tp, b.producer_id, b.producer_epoch, b.base_sequence, b.count)
        detail = self.trace_detail()
        return tuple([k for k, _ in detail]), tuple([v for _, v in detail])

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns: one partition's as they are, several as parallel lists."""
        parts = self.partitions
        if len(parts) == 1:
            p = parts[0]
            return (("tp", f"{p.topic}-{p.partition}"), *p.batch.trace_detail())
        first = parts[0].batch
        return (
            ("tp", tuple([f"{p.topic}-{p.partition}" for p in parts])),
            ("pid", first.producer_id),
            ("epoch", first.producer_epoch),
            ("seq", tuple([p.batch.base_sequence for p in parts])),
            ("n", tuple([p.batch.count for p in parts])),
        )


@_hot
class PartitionProduceResponse:
    """The outcome of one partition's produce: the base offset given to the batch, or an error."""

    topic: str
    partition: int
    error: ErrorCode
    base_offset: int = -1
    log_append_time: int = -1
    error_message: str | None = None
    duplicate: bool = False


@_hot
class ProduceResponse:
    """One answer per partition of the request, in the request's order."""

    partitions: tuple[PartitionProduceResponse, ...]

    def trace_fields(self) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        """Return :meth:`trace_detail`'s keys and values apart (``Trace.emit_fields``; the hot path)."""
        parts = self.partitions
        if len(parts) == 1:
            p = parts[0]
            return _PRODUCE_RESPONSE_KEYS, (f"{p.topic}-{p.partition}", p.error.name, p.base_offset)
        return _PRODUCE_RESPONSE_KEYS, (
            tuple([f"{p.topic}-{p.partition}" for p in parts]),
            tuple([p.error.name for p in parts]),
            tuple([p.base_offset for p in parts]),
        )

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns: one partition's as they are, several as parallel lists."""
        return _pairs(self.trace_fields())


# -- fetch ---------------------------------------------------------------------------------


@_hot
class FetchRequest:
    """Read from one partition. ``replica_id`` ≥ 0 marks a follower, -1 a consumer."""

    topic: str
    partition: int
    fetch_offset: int
    replica_id: int = -1
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    max_bytes: int = 1 << 20
    max_wait_ms: int = 0
    last_fetched_epoch: int = -1
    current_leader_epoch: int = -1

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (
            ("tp", f"{self.topic}-{self.partition}"),
            ("offset", self.fetch_offset),
            ("replica", self.replica_id),
        )


@_hot
class FetchResponse:
    """Batches from ``fetch_offset`` on, with the partition's HW and LSO at fetch time."""

    topic: str
    partition: int
    error: ErrorCode
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = 0
    batches: tuple[Any, ...] = ()
    aborted_transactions: tuple[Any, ...] | None = None
    diverging_epoch: tuple[int, int] | None = None
    leader_epoch: int = -1
    error_message: str | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (
            ("tp", f"{self.topic}-{self.partition}"),
            ("error", self.error.name),
            ("batches", len(self.batches)),
            ("hw", self.high_watermark),
            ("lso", self.last_stable_offset),
        )


class ReplicaFetchPartition(NamedTuple):
    """One partition of a follower's fetch: where its log ends and which epoch it last fetched."""

    topic: str
    partition: int
    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int


class ReplicaFetchPartitionData(NamedTuple):
    """The leader's answer for one partition of a follower's fetch."""

    topic: str
    partition: int
    error: ErrorCode
    high_watermark: int = -1
    batches: tuple[Any, ...] = ()
    diverging_epoch: tuple[int, int] | None = None


@_hot
class ReplicaFetchRequest:
    """A follower's fetch from one leader, for every partition it follows there.

    Kafka sends one FetchRequest per (follower, leader) pair carrying all such partitions, kept
    cheap by fetch sessions (KIP-227); so does the engine, so that idle partitions cost one long
    poll per broker pair, not one per partition.
    """

    replica_id: int
    partitions: tuple[ReplicaFetchPartition, ...]
    max_wait_ms: int
    max_bytes: int

    def trace_fields(self) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        """Return :meth:`trace_detail`'s keys and values apart (``Trace.emit_fields``; the hot path)."""
        return _REPLICA_FETCH_KEYS, (self.replica_id, len(self.partitions))

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return _pairs(self.trace_fields())


@_hot
class ReplicaFetchResponse:
    """Per partition: batches past the follower's offset, the HW, or an error or divergence."""

    partitions: tuple[ReplicaFetchPartitionData, ...]

    def trace_fields(self) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        """Return :meth:`trace_detail`'s keys and values apart (``Trace.emit_fields``; the hot path)."""
        return _PARTITIONS_KEYS, (len(self.partitions),)

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return _pairs(self.trace_fields())


@dataclasses.dataclass(frozen=True, slots=True)
class ListOffsetsRequest:
    """Ask a leader for an offset: earliest (-2), latest (-1), max timestamp (-3) or by timestamp (>= 0), as Kafka."""

    topic: str
    partition: int
    timestamp: int
    isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED


@dataclasses.dataclass(frozen=True, slots=True)
class ListOffsetsResponse:
    """The offset asked for; a timestamp lookup also gives the found record's timestamp and leader epoch."""

    topic: str
    partition: int
    error: ErrorCode
    offset: int = -1
    timestamp: int = -1
    leader_epoch: int = -1


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochRequest:
    """Where a leader epoch ends on the partition's leader (a consumer's or follower's truncation check)."""

    topic: str
    partition: int
    leader_epoch: int
    current_leader_epoch: int = -1


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetForLeaderEpochResponse:
    """The largest epoch at most the one asked for, and its end offset; (-1, -1) when none."""

    topic: str
    partition: int
    error: ErrorCode
    leader_epoch: int = -1
    end_offset: int = -1


# -- metadata and control ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionState:
    """What the controller decided for one partition: leader, epochs, ISR and replicas."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class MetadataRequest:
    """Ask for brokers and partition leaders."""

    topics: tuple[str, ...] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class MetadataResponse:
    """The brokers that are up and every partition's state (as the answering broker knows it)."""

    brokers: tuple[int, ...]
    partitions: tuple[PartitionState, ...]
    controller_id: int = -1


@dataclasses.dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    """The controller tells a broker the state of partitions it hosts (KRaft: a metadata delta)."""

    controller_epoch: int
    states: tuple[PartitionState, ...]
    live_brokers: tuple[int, ...]
    #: Deleted topics as (name, how many times that name was deleted), applied before ``states``:
    #: the broker drops their partitions and any files older than that deletion (KRaft's
    #: RemoveTopicRecord; the count stands in for topic ids, so a recreated name starts empty).
    deleted: tuple[tuple[str, int], ...] = ()

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return tuple(
            (f"{s.topic}-{s.partition}", f"leader={s.leader}/e{s.leader_epoch}/isr={list(s.isr)}")
            for s in self.states[:4]
        ) + tuple(("deleted", name) for name, _n in self.deleted)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerHeartbeatRequest:
    """A broker tells the controller it is alive."""

    broker_id: int
    incarnation: int


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerHeartbeatResponse:
    """The controller acknowledges a heartbeat."""

    error: ErrorCode = ErrorCode.NONE


@dataclasses.dataclass(frozen=True, slots=True)
class AlterPartitionRequest:
    """A leader asks the controller to change a partition's ISR (shrink or expand)."""

    broker_id: int
    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    """The controller's answer: the new state, or an error (stale epoch)."""

    error: ErrorCode
    state: PartitionState | None = None


# -- producer ids ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class InitProducerIdRequest:
    """Get a producer id and epoch; with a transactional id it goes to that id's coordinator."""

    transactional_id: str | None = None
    transaction_timeout_ms: int = -1
    producer_id: int = -1
    producer_epoch: int = -1

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("txn_id", self.transactional_id), ("pid", self.producer_id), ("epoch", self.producer_epoch))


@dataclasses.dataclass(frozen=True, slots=True)
class InitProducerIdResponse:
    """A producer id and epoch, or an error."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1
    error_message: str | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("error", self.error.name), ("pid", self.producer_id), ("epoch", self.producer_epoch))


# -- coordinators ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class FindCoordinatorRequest:
    """Which broker coordinates this group (key_type 0) or transactional id (key_type 1)?"""

    key: str
    key_type: int

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("key", self.key), ("type", self.key_type))


@dataclasses.dataclass(frozen=True, slots=True)
class FindCoordinatorResponse:
    """The coordinator's broker id, or an error (COORDINATOR_NOT_AVAILABLE while it is being set up)."""

    error: ErrorCode
    node_id: int = -1


@dataclasses.dataclass(frozen=True, slots=True)
class CreateTopicsRequest:
    """A broker asks the controller to create an internal topic on first use."""

    topic: str
    partitions: int
    replication_factor: int


@dataclasses.dataclass(frozen=True, slots=True)
class CreateTopicRequest:
    """A client's CreateTopics for one topic, forwarded by a broker to the controller (KIP-590).

    ``partitions`` and ``replication_factor`` are as asked, ``None`` for the default; ``assignments``
    (one replica list per partition) set both when given. ``timeout_ms`` is the request's: the
    broker answers ``REQUEST_TIMED_OUT`` when the controller has not answered by then.
    """

    name: str
    partitions: int
    replication_factor: int | None
    config: tuple[tuple[str, Any], ...] | None
    assignments: tuple[tuple[int, ...], ...] | None
    validate_only: bool
    timeout_ms: int = 30_000


@dataclasses.dataclass(frozen=True, slots=True)
class CreateTopicResponse:
    """The controller's answer: the topic's partition count and replication factor, or why not."""

    error: ErrorCode
    error_message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    #: the created topic's configs as DescribeConfigs lists them (CreateTopics v5+), else empty
    configs: tuple[dict[str, Any], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class DescribeProducersRequest:
    """The active producers of a partition replica (KIP-664), asked of a broker hosting it."""

    topic: str
    partition: int


class ActiveProducer(NamedTuple):
    """One producer of a :class:`DescribeProducersResponse` (``coordinator_epoch`` -1: no marker yet)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int | None


@dataclasses.dataclass(frozen=True, slots=True)
class DescribeProducersResponse:
    """A replica's producer-state table by producer id, or why not (``NOT_LEADER_OR_FOLLOWER`` ...)."""

    topic: str
    partition: int
    error: ErrorCode
    producers: tuple[ActiveProducer, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class ListTransactionsRequest:
    """The transactions one broker's coordinator holds (KIP-664), filtered as asked.

    Empty filters keep everything; ``duration_filter_ms`` -1 keeps every start (else ``now -
    start > MS``, KIP-994). Each broker answers for the ``__transaction_state`` partitions it
    leads, so an admin client asks every broker and unions the answers.
    """

    state_filters: tuple[str, ...] = ()
    producer_id_filters: tuple[int, ...] = ()
    duration_filter_ms: int = -1


class ListedTransaction(NamedTuple):
    """One transaction of a :class:`ListTransactionsResponse` (``state``: Kafka's state name)."""

    transactional_id: str
    producer_id: int
    state: str


@dataclasses.dataclass(frozen=True, slots=True)
class ListTransactionsResponse:
    """A coordinator's transactions by id, or why not (``COORDINATOR_LOAD_IN_PROGRESS``)."""

    error: ErrorCode
    unknown_state_filters: tuple[str, ...] = ()
    transactions: tuple[ListedTransaction, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class DescribeTransactionsRequest:
    """The state of each transactional id (KIP-664), asked of the ids' coordinator."""

    transactional_ids: tuple[str, ...]


class DescribedTransaction(NamedTuple):
    """One id of a :class:`DescribeTransactionsResponse`; the fields after ``error`` are set only with NONE.

    ``error``: ``NOT_COORDINATOR`` (another broker coordinates the id), ``COORDINATOR_LOAD_IN_PROGRESS``,
    ``TRANSACTIONAL_ID_NOT_FOUND`` or ``INVALID_REQUEST`` (an empty id). ``start_ms`` is -1 when no
    transaction was ever started.
    """

    transactional_id: str
    error: ErrorCode
    state: str = ""
    producer_id: int = -1
    producer_epoch: int = -1
    timeout_ms: int = -1
    start_ms: int = -1
    partitions: tuple[tuple[str, int], ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class DescribeTransactionsResponse:
    """The coordinator's answer for each id asked, in the order asked."""

    transactions: tuple[DescribedTransaction, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class TxnOffsetCommitRequest:
    """Offsets committed inside a transaction; they become visible with the COMMIT marker (KIP-98, KIP-447)."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str | None
    offsets: tuple[tuple[str, int, int], ...]  # (topic, partition, offset)

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("group", self.group_id), ("pid", self.producer_id), ("gen", self.generation_id))


@dataclasses.dataclass(frozen=True, slots=True)
class TxnOffsetCommitResponse:
    """Per-partition results of a TxnOffsetCommit."""

    error: ErrorCode
    error_message: str | None = None


# -- transactions ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class AddPartitionsToTxnRequest:
    """Add partitions to a transaction. ``from_broker``: a partition leader verifying a produce (KIP-890)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: tuple[tuple[str, int], ...]
    from_broker: bool = False
    #: A partition leader verifying a produce of transaction version 1: the partitions must already be
    #: in the transaction (TRANSACTION_ABORTABLE otherwise); nothing is added
    #: (Kafka's ``TransactionCoordinator.handleVerifyPartitionsInTransaction``).
    verify_only: bool = False

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        tps = [f"{t}-{p}" for t, p in self.partitions]
        return (
            ("txn_id", self.transactional_id),
            ("pid", self.producer_id),
            ("epoch", self.producer_epoch),
            ("tps", tps),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class AddPartitionsToTxnResponse:
    """The outcome of adding partitions."""

    error: ErrorCode
    error_message: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class AddOffsetsToTxnRequest:
    """Add a group's ``__consumer_offsets`` partition to a transaction."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


@dataclasses.dataclass(frozen=True, slots=True)
class AddOffsetsToTxnResponse:
    """The outcome of AddOffsetsToTxn."""

    error: ErrorCode
    error_message: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class EndTxnRequest:
    """Commit (``committed=True``) or abort the producer's transaction.

    ``transaction_version``: the client's transaction version, which Kafka reads from the request's
    version (EndTxn v5+ is KIP-890's version 2, older ones version 1); 0 means the cluster's
    ``transaction.version``, which the engine's own producers follow.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    transaction_version: int = 0

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (
            ("txn_id", self.transactional_id),
            ("pid", self.producer_id),
            ("epoch", self.producer_epoch),
            ("result", "COMMIT" if self.committed else "ABORT"),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class EndTxnResponse:
    """The outcome; under transaction version 2 it carries the bumped epoch for the next transaction."""

    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1
    error_message: str | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("error", self.error.name), ("epoch", self.producer_epoch))


@dataclasses.dataclass(frozen=True, slots=True)
class WriteTxnMarkersRequest:
    """The coordinator asks a partition leader to append a COMMIT or ABORT marker."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    committed: bool
    topic: str
    partition: int

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (
            ("tp", f"{self.topic}-{self.partition}"),
            ("pid", self.producer_id),
            ("epoch", self.producer_epoch),
            ("marker", "COMMIT" if self.committed else "ABORT"),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class WriteTxnMarkersResponse:
    """The outcome of writing one marker."""

    error: ErrorCode
    topic: str = ""
    partition: int = -1
    error_message: str | None = None


# -- consumer groups (classic protocol; KIP-848 below) ---------------------------------------
# One error per request: Kafka answers group RPCs per partition or per member, but the simulated
# coordinator always gives every partition of a request the same answer (OffsetFetch excepted).


@dataclasses.dataclass(frozen=True, slots=True)
class Subscription:
    """One JoinGroup protocol's metadata: Kafka's ``ConsumerProtocolSubscription``, read.

    The coordinator treats it as opaque, as Kafka's broker treats the bytes: it stores it, hands it
    to the leader and compares it to see whether a member's subscription changed. ``owned`` (v1+)
    and ``generation`` (v2+) are what a cooperative assignor (KIP-429) reads; ``raw`` is the exact
    payload a wire client sent (None for an engine client), which the leader gets back unchanged.
    """

    topics: tuple[str, ...]
    #: The (topic, partition) pairs the member owned when it joined (ownedPartitions, v1+).
    owned: tuple[tuple[str, int], ...] = ()
    #: The generation of ``owned`` (v2+); -1 when unknown.
    generation: int = -1
    user_data: bytes | None = None
    #: The client's ``client.rack`` (v3+).
    rack: str | None = None
    raw: bytes | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Assignment:
    """One member's share of a SyncGroup: Kafka's ``ConsumerProtocolAssignment``, read.

    ``partitions`` are sorted; ``raw`` is the exact payload the leader sent for the member (None
    when an engine client leads), which the member gets back unchanged.
    """

    partitions: tuple[tuple[str, int], ...] = ()
    user_data: bytes | None = None
    raw: bytes | None = None


#: The share of a member the leader assigned nothing.
NO_ASSIGNMENT = Assignment()


@dataclasses.dataclass(frozen=True, slots=True)
class JoinGroupRequest:
    """Join (or rejoin) a group. ``protocols`` are ``(assignor name, subscription)`` pairs, preferred first."""

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[tuple[str, Subscription], ...]
    client_id: str = ""
    reason: str | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("group", self.group_id), ("member", self.member_id or "-"))


@dataclasses.dataclass(frozen=True, slots=True)
class JoinGroupMember:
    """One member as the group leader sees it in a JoinGroup response (its metadata for the selected protocol)."""

    member_id: str
    group_instance_id: str | None
    subscription: Subscription


@dataclasses.dataclass(frozen=True, slots=True)
class JoinGroupResponse:
    """The new generation; only the leader gets ``members`` (it computes the assignment)."""

    error: ErrorCode
    generation_id: int = -1
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()
    error_message: str | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("error", self.error.name), ("gen", self.generation_id), ("member", self.member_id or "-"))


@dataclasses.dataclass(frozen=True, slots=True)
class SyncGroupRequest:
    """Every member sends one after JoinGroup; the leader's carries the assignment of all members."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    assignments: tuple[tuple[str, Assignment], ...] = ()

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("group", self.group_id), ("gen", self.generation_id), ("member", self.member_id))


@dataclasses.dataclass(frozen=True, slots=True)
class SyncGroupResponse:
    """The member's share for this generation."""

    error: ErrorCode
    assignment: Assignment = NO_ASSIGNMENT
    error_message: str | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("error", self.error.name), ("tps", [f"{t}-{p}" for t, p in self.assignment.partitions]))


@dataclasses.dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """A member says it is alive in ``generation_id``."""

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("group", self.group_id), ("gen", self.generation_id), ("member", self.member_id))


@dataclasses.dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    """NONE, or REBALANCE_IN_PROGRESS (rejoin), ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID ..."""

    error: ErrorCode

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("error", self.error.name),)


@dataclasses.dataclass(frozen=True, slots=True)
class LeaveGroupRequest:
    """A member leaves (``close()``, ``unsubscribe()``): the group rebalances at once."""

    group_id: str
    member_id: str
    reason: str | None = None
    #: KIP-345: a static member's instance id (v3+); with ``member_id`` "" it names the member.
    group_instance_id: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LeaveGroupResponse:
    """The outcome of a LeaveGroup."""

    error: ErrorCode


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    """Commit offsets; ``generation_id`` -1 with an empty member id is a commit outside group management.

    ``api_version`` is the wire request's OffsetCommit version (None: the engine's own clients,
    which speak the newest): a KIP-848 member must commit with v9+ (``ConsumerGroup.validateOffsetCommit``).
    """

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    offsets: tuple[tuple[str, int, int], ...]  # (topic, partition, offset)
    api_version: int | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (
            ("group", self.group_id),
            ("gen", self.generation_id),
            ("offsets", [f"{t}-{p}@{o}" for t, p, o in self.offsets]),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    """The outcome of an OffsetCommit (the same for every partition of the request)."""

    error: ErrorCode
    error_message: str | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("error", self.error.name),)


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    """Read committed offsets (``partitions`` None: all of the group's). ``require_stable``: KIP-447."""

    group_id: str
    partitions: tuple[tuple[str, int], ...] | None = None
    require_stable: bool = False

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("group", self.group_id), ("stable", self.require_stable))


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetFetchPartition:
    """One partition's committed offset (-1: none), or its error (UNSTABLE_OFFSET_COMMIT)."""

    topic: str
    partition: int
    offset: int
    error: ErrorCode = ErrorCode.NONE


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    """A top-level error (coordinator errors) or one entry per partition."""

    error: ErrorCode
    partitions: tuple[OffsetFetchPartition, ...] = ()

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (
            ("error", self.error.name),
            (
                "offsets",
                [
                    f"{p.topic}-{p.partition}@{p.offset if p.error is ErrorCode.NONE else p.error.name}"
                    for p in self.partitions
                ],
            ),
        )


# -- consumer groups (KIP-848 consumer protocol) -----------------------------------------------
# Kafka's ConsumerGroupHeartbeat (API key 68) and ConsumerGroupDescribe (69), by topic name rather
# than topic id (the wire maps ids). ``None`` in a heartbeat field means "unchanged since the last
# heartbeat", as in Kafka's schema.


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    """A KIP-848 member's heartbeat: join (epoch 0), keep alive and reconcile, or leave (-1; static: -2).

    ``subscribed_topic_names``, ``topic_partitions`` (the partitions the member owns),
    ``server_assignor``, ``instance_id``, ``rack_id`` and ``subscribed_topic_regex`` are ``None``
    when unchanged since the member's last heartbeat; ``rebalance_timeout_ms`` is -1 then.
    """

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[tuple[str, int], ...] | None = None
    subscribed_topic_regex: str | None = None
    client_id: str = ""
    client_host: str = ""

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        owned = None if self.topic_partitions is None else [f"{t}-{p}" for t, p in self.topic_partitions]
        return (
            ("group", self.group_id),
            ("member", self.member_id or "-"),
            ("epoch", self.member_epoch),
            ("owned", owned),
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    """The member's id and epoch, and its assignment when it changed (``None``: unchanged)."""

    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: tuple[tuple[str, int], ...] | None = None

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        tps = None if self.assignment is None else [f"{t}-{p}" for t, p in self.assignment]
        return (("error", self.error.name), ("epoch", self.member_epoch), ("assignment", tps))


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeRequest:
    """Describe KIP-848 groups, as ``kafka-consumer-groups.sh --describe`` does."""

    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("groups", list(self.group_ids)),)


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeMember:
    """One member of a described group: its epoch, subscription, assignment and target assignment."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: tuple[tuple[str, int], ...]
    target_assignment: tuple[tuple[str, int], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeGroup:
    """One described group; ``error`` GROUP_ID_NOT_FOUND when there is no consumer group of that id."""

    error: ErrorCode
    group_id: str
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[ConsumerGroupDescribeMember, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeResponse:
    """One entry per requested group, in request order."""

    groups: tuple[ConsumerGroupDescribeGroup, ...]

    def trace_detail(self) -> tuple[tuple[str, Any], ...]:
        """Return short-log columns."""
        return (("groups", [f"{g.group_id}:{g.group_state or g.error.name}" for g in self.groups]),)
