"""Kafka's error catalogue: wire error codes, their Java exception names, and the client's classification.

Role
----
This is the project's one error catalogue. Inside the simulation, errors cross the network as
:class:`ErrorCode` values (plain ints, exactly Kafka's codes from ``Errors.java``); a simulated broker
never raises to a client. Only at the client API is a code turned into an exception, with
:func:`exception_for`, and the exception classes carry Kafka's Java names
(``ProducerFencedException``, ``OutOfOrderSequenceException`` ...) so that what a student sees here is
what they will see in a real Kafka client.

Two families of exceptions are kept apart:

* **Operating errors** -- :class:`KafkaError` and its subclasses. Things a correct program meets at run
  time (a leader moved, the producer was fenced). There is one subclass per code, named as in Java,
  plus the intermediate Java classes ``RetriableException``, ``InvalidMetadataException`` and
  ``AuthorizationException`` so ``except RetriableException`` works as in Java, and two client-only
  exceptions without a wire code (:class:`TransactionAbortedException`, :class:`CommitFailedException`).
* **Programmer errors** -- :class:`IllegalStateError` (Java's ``IllegalStateException``: calling
  ``commit_transaction`` before ``begin_transaction``) and :class:`ConfigError` (Java's
  ``ConfigException``: a bad configuration at construction). They are not ``KafkaError``: no retry or
  abort fixes them, only changing the code does.

Timeouts: Kafka maps ``REQUEST_TIMED_OUT`` (7) to the general ``TimeoutException``, and the Java client
throws that same class for its own deadlines (``delivery.timeout.ms``, ``max.block.ms``). So does this
module: there is no separate timeout class; raise ``TimeoutException`` for client-side deadlines too.

Client classification (transactional producer)
----------------------------------------------
Each code's ``retriable`` / ``abortable`` / ``fatal`` flags say what a *transactional producer* does when
the code fails a ``send()``. They follow Kafka's client, ``TransactionManager`` in
``clients/.../producer/internals`` (apache/kafka trunk, October 2024), ``maybeTransitionToErrorState``
for the send path. The three classes are disjoint; ``NONE`` is in none of them.

=========  ===============================================  ==============================================
class      codes                                            what the client does, and why
=========  ===============================================  ==============================================
retriable  the Java class extends RetriableException:       Retried inside the client, after refreshing
           NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE,    metadata or the coordinator. The caller sees
           NOT_ENOUGH_REPLICAS(_AFTER_APPEND),              it only when delivery.timeout.ms runs out,
           REQUEST_TIMED_OUT, NETWORK_EXCEPTION,            and then it counts as abortable.
           NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
           COORDINATOR_LOAD_IN_PROGRESS,
           CONCURRENT_TRANSACTIONS, KAFKA_STORAGE_ERROR,
           CORRUPT_MESSAGE ...
fatal      PRODUCER_FENCED,                                 FATAL_ERROR: the producer is unusable; only
           TRANSACTIONAL_ID_AUTHORIZATION_FAILED,           close() is left. A fenced producer must never
           CLUSTER_AUTHORIZATION_FAILED,                    write again (it is a zombie); aborting cannot
           UNSUPPORTED_VERSION                              cure the others.
abortable  every other code, e.g.                           ABORTABLE_ERROR: abort_transaction(), then
           OUT_OF_ORDER_SEQUENCE_NUMBER,                    carry on. The client bumps the epoch (KIP-360)
           UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_EPOCH,     when needed, so sequences restart cleanly;
           INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE,  read_committed consumers see nothing of the
           TRANSACTION_ABORTABLE,                           aborted transaction.
           TOPIC_AUTHORIZATION_FAILED, MESSAGE_TOO_LARGE,
           INVALID_RECORD ...
=========  ===============================================  ==============================================

Responses to the *transaction coordinator's* RPCs (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, TxnOffsetCommit) are stricter; :func:`classify` with ``coordinator_rpc=True`` gives that view:

* ``INVALID_PRODUCER_EPOCH`` is fatal there, and the client surfaces it as ``ProducerFencedException``
  (an old-style coordinator's way of saying "fenced"); on the send path (KIP-588) it is only abortable.
* ``INVALID_TXN_STATE`` and ``UNSUPPORTED_FOR_MESSAGE_FORMAT`` are fatal.
* ``UNKNOWN_PRODUCER_ID`` and ``INVALID_PRODUCER_ID_MAPPING`` are abortable when the coordinator can
  bump the epoch, fatal otherwise (``abortableErrorIfPossible``).
* ``TRANSACTION_ABORTABLE``, ``TOPIC_``/``GROUP_AUTHORIZATION_FAILED``, ``FENCED_INSTANCE_ID``,
  ``OPERATION_NOT_ATTEMPTED``, and ``UNKNOWN_MEMBER_ID``/``ILLEGAL_GENERATION`` (which a TxnOffsetCommit
  reports as ``CommitFailedException``) are abortable.
* any other non-retriable code is fatal: Kafka's handlers end in "unexpected error" -> fatal.

Choices and simplifications, against Kafka's code:

* ``OutOfOrderSequenceException`` is **abortable**, as ``TransactionManager`` treats it. The
  ``KafkaProducer`` javadoc still lists it beside ``ProducerFencedException`` as "cannot recover"; that
  text predates KIP-360's epoch bump. An *idempotent* (non-transactional) producer has no abortable
  state at all: it bumps the epoch and retries on its own.
* ``InvalidProducerEpochException`` is abortable on the send path, fatal on coordinator RPCs (above).
* Not modelled: InitProducerId treats the two authorisation failures as abortable; the client sometimes
  retries ``UNKNOWN_PRODUCER_ID`` and ``OUT_OF_ORDER_SEQUENCE_NUMBER`` on the send path when the batch
  is not the next in line or the log start moved (``TransactionManager.canRetry``). Those decisions
  need per-partition state and belong to the simulated producer.

What this module does not do
----------------------------
* No wire encoding, retry loops, backoff or state machines: it only names and classifies.
* Not every code in ``Errors.java`` is here: SASL, ACL admin, delegation tokens, quotas, KRaft voters,
  broker registration, share groups, telemetry and tiered storage are left out; the simulation has none
  of them. Codes are Kafka's, verified against ``Errors.java`` at apache/kafka commit ``1eb76443``
  (October 2024, where the highest code is 128, ``INVALID_REGULAR_EXPRESSION``).
* An unknown integer code becomes ``UNKNOWN_SERVER_ERROR``, as the Java client does for codes it does
  not recognise.
* Default messages paraphrase Kafka's; they are not copied word for word.
"""

# Kafka's Java names are kept as they are, including the two without an Error/Exception-style suffix
# that ruff's N818 would want (OffsetMetadataTooLarge here; InvalidRegularExpression in Kafka).
# ruff: noqa: N818

from __future__ import annotations

import enum
from typing import Any, ClassVar

__all__ = [
    "AuthorizationException",
    "BrokerNotAvailableException",
    "Classification",
    "ClusterAuthorizationException",
    "CommitFailedException",
    "ConcurrentTransactionsException",
    "ConfigError",
    "CoordinatorLoadInProgressException",
    "CoordinatorNotAvailableException",
    "CorruptRecordException",
    "DatabaseUnavailableError",
    "DuplicateSequenceException",
    "ErrorCode",
    "FencedInstanceIdException",
    "FencedLeaderEpochException",
    "FencedMemberEpochException",
    "GroupAuthorizationException",
    "GroupIdNotFoundException",
    "GroupMaxSizeReachedException",
    "GroupNotEmptyException",
    "IllegalGenerationException",
    "IllegalSaslStateException",
    "IllegalStateError",
    "InconsistentGroupProtocolException",
    "InvalidCommitOffsetSizeException",
    "InvalidConfigurationException",
    "InvalidEventError",
    "InvalidFetchSizeException",
    "InvalidGroupIdException",
    "InvalidMetadataException",
    "InvalidPartitionsException",
    "InvalidPidMappingException",
    "InvalidProducerEpochException",
    "InvalidRecordException",
    "InvalidRegularExpression",
    "InvalidReplicaAssignmentException",
    "InvalidReplicationFactorException",
    "InvalidRequestException",
    "InvalidRequiredAcksException",
    "InvalidSessionTimeoutException",
    "InvalidTimestampException",
    "InvalidTopicException",
    "InvalidTxnStateException",
    "InvalidTxnTimeoutException",
    "KafkaError",
    "KafkaStorageException",
    "LeaderNotAvailableException",
    "MemberIdRequiredException",
    "NetworkException",
    "NotControllerException",
    "NotCoordinatorException",
    "NotEnoughReplicasAfterAppendException",
    "NotEnoughReplicasException",
    "NotLeaderOrFollowerException",
    "OffsetMetadataTooLarge",
    "OffsetNotAvailableException",
    "OffsetOutOfRangeException",
    "OperationNotAttemptedException",
    "OutOfOrderSequenceException",
    "ProducerFencedException",
    "PurgedException",
    "RebalanceInProgressException",
    "RecordBatchTooLargeException",
    "RecordTooLargeException",
    "ReplicaNotAvailableException",
    "RetriableException",
    "SaslAuthenticationException",
    "StaleBrokerEpochException",
    "StaleMemberEpochException",
    "TimeoutException",
    "TopicAuthorizationException",
    "TopicExistsException",
    "TransactionAbortableException",
    "TransactionAbortedException",
    "TransactionCoordinatorFencedException",
    "TransactionalIdAuthorizationException",
    "TransactionalIdNotFoundException",
    "UnknownLeaderEpochException",
    "UnknownMemberIdException",
    "UnknownProducerIdException",
    "UnknownServerException",
    "UnknownTopicOrPartitionException",
    "UnreleasedInstanceIdException",
    "UnstableOffsetCommitException",
    "UnsupportedAssignorException",
    "UnsupportedCompressionTypeException",
    "UnsupportedForMessageFormatException",
    "UnsupportedSaslMechanismException",
    "UnsupportedVersionException",
    "classify",
    "exception_for",
]


class ErrorCode(enum.IntEnum):
    """A Kafka wire error code (``Errors.java``), with its Java exception name and default message.

    ``int(code)`` is Kafka's number; the name is Kafka's enum constant. ``retriable``, ``abortable`` and
    ``fatal`` come from the exception class (see the module docstring); ``NONE`` has no class.
    """

    _exception_name: str | None
    _default_message: str

    def __new__(cls, value: int, exception_name: str | None, message: str) -> ErrorCode:
        member = int.__new__(cls, value)
        member._value_ = value
        return member

    def __init__(self, value: int, exception_name: str | None, message: str) -> None:
        self._exception_name = exception_name
        self._default_message = message

    UNKNOWN_SERVER_ERROR = (
        -1,
        "UnknownServerException",
        "The broker hit an unexpected error while handling the request.",
    )
    NONE = (0, None, "")
    OFFSET_OUT_OF_RANGE = (
        1,
        "OffsetOutOfRangeException",
        "The requested offset lies outside the range of offsets the broker holds for the partition.",
    )
    CORRUPT_MESSAGE = (
        2,
        "CorruptRecordException",
        "The record batch is corrupt: bad CRC, invalid size, a null key on a compacted topic, or similar.",
    )
    UNKNOWN_TOPIC_OR_PARTITION = (
        3,
        "UnknownTopicOrPartitionException",
        "This broker does not host the requested topic-partition.",
    )
    INVALID_FETCH_SIZE = (4, "InvalidFetchSizeException", "The requested fetch size is not valid.")
    LEADER_NOT_AVAILABLE = (
        5,
        "LeaderNotAvailableException",
        "The partition has no leader at the moment; a leader election is under way.",
    )
    NOT_LEADER_OR_FOLLOWER = (
        6,
        "NotLeaderOrFollowerException",
        "This broker is not the partition's leader (leader-only requests) or not a replica of it at all.",
    )
    REQUEST_TIMED_OUT = (7, "TimeoutException", "The request timed out.")
    BROKER_NOT_AVAILABLE = (8, "BrokerNotAvailableException", "The broker is not available.")
    REPLICA_NOT_AVAILABLE = (
        9,
        "ReplicaNotAvailableException",
        "The replica for the requested topic-partition is not available.",
    )
    MESSAGE_TOO_LARGE = (
        10,
        "RecordTooLargeException",
        "The request carried a message larger than the broker's maximum accepted message size.",
    )
    OFFSET_METADATA_TOO_LARGE = (
        12,
        "OffsetMetadataTooLarge",
        "The metadata string attached to the committed offset is too large.",
    )
    NETWORK_EXCEPTION = (
        13,
        "NetworkException",
        "The connection to the broker was lost before a response arrived.",
    )
    COORDINATOR_LOAD_IN_PROGRESS = (
        14,
        "CoordinatorLoadInProgressException",
        "The coordinator is still loading its state and cannot serve the request yet.",
    )
    COORDINATOR_NOT_AVAILABLE = (15, "CoordinatorNotAvailableException", "The coordinator is not available.")
    NOT_COORDINATOR = (
        16,
        "NotCoordinatorException",
        "This broker is not the coordinator for the group or transactional id.",
    )
    INVALID_TOPIC_EXCEPTION = (17, "InvalidTopicException", "The request tried to act on an invalid topic.")
    RECORD_LIST_TOO_LARGE = (
        18,
        "RecordBatchTooLargeException",
        "The record batch is larger than the segment size configured on the broker.",
    )
    NOT_ENOUGH_REPLICAS = (
        19,
        "NotEnoughReplicasException",
        "The write was rejected: fewer replicas are in sync than min.insync.replicas requires.",
    )
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (
        20,
        "NotEnoughReplicasAfterAppendException",
        "The write reached the leader's log, but fewer replicas than required are in sync.",
    )
    INVALID_REQUIRED_ACKS = (
        21,
        "InvalidRequiredAcksException",
        "The produce request asked for an unsupported acks value.",
    )
    ILLEGAL_GENERATION = (
        22,
        "IllegalGenerationException",
        "The member's generation id is not the group's current generation.",
    )
    INCONSISTENT_GROUP_PROTOCOL = (
        23,
        "InconsistentGroupProtocolException",
        "The member's protocols do not match the group's, or its protocol type or list is empty.",
    )
    INVALID_GROUP_ID = (24, "InvalidGroupIdException", "The configured group id is not valid.")
    UNKNOWN_MEMBER_ID = (25, "UnknownMemberIdException", "The coordinator does not know this member.")
    INVALID_SESSION_TIMEOUT = (
        26,
        "InvalidSessionTimeoutException",
        "The session timeout is outside the range the broker allows.",
    )
    REBALANCE_IN_PROGRESS = (
        27,
        "RebalanceInProgressException",
        "The group is rebalancing; the member has to rejoin.",
    )
    INVALID_COMMIT_OFFSET_SIZE = (
        28,
        "InvalidCommitOffsetSizeException",
        "The size of the offset data being committed is not valid.",
    )
    TOPIC_AUTHORIZATION_FAILED = (29, "TopicAuthorizationException", "Not authorised to access the topic.")
    GROUP_AUTHORIZATION_FAILED = (30, "GroupAuthorizationException", "Not authorised to access the group.")
    CLUSTER_AUTHORIZATION_FAILED = (
        31,
        "ClusterAuthorizationException",
        "Not authorised for this cluster-level operation.",
    )
    INVALID_TIMESTAMP = (
        32,
        "InvalidTimestampException",
        "The message timestamp is outside the accepted range.",
    )
    UNSUPPORTED_SASL_MECHANISM = (
        33,
        "UnsupportedSaslMechanismException",
        "The broker does not support the requested SASL mechanism.",
    )
    ILLEGAL_SASL_STATE = (
        34,
        "IllegalSaslStateException",
        "The request is not valid given the current SASL state.",
    )
    UNSUPPORTED_VERSION = (
        35,
        "UnsupportedVersionException",
        "The broker does not support this version of the API.",
    )
    TOPIC_ALREADY_EXISTS = (36, "TopicExistsException", "The topic already exists.")
    INVALID_PARTITIONS = (37, "InvalidPartitionsException", "The number of partitions is below 1.")
    INVALID_REPLICATION_FACTOR = (
        38,
        "InvalidReplicationFactorException",
        "The replication factor is below 1 or above the number of available brokers.",
    )
    INVALID_REPLICA_ASSIGNMENT = (39, "InvalidReplicaAssignmentException", "Replica assignment is invalid.")
    INVALID_CONFIG = (40, "InvalidConfigurationException", "The configuration is not valid.")
    NOT_CONTROLLER = (41, "NotControllerException", "This broker is not the cluster's current controller.")
    INVALID_REQUEST = (
        42,
        "InvalidRequestException",
        "The request is malformed or was sent to an incompatible broker; the broker log has details.",
    )
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (
        43,
        "UnsupportedForMessageFormatException",
        "The broker's message format version does not support the request.",
    )
    OUT_OF_ORDER_SEQUENCE_NUMBER = (
        45,
        "OutOfOrderSequenceException",
        "The batch's sequence number does not follow the last one the broker accepted from this producer.",
    )
    DUPLICATE_SEQUENCE_NUMBER = (
        46,
        "DuplicateSequenceException",
        "The broker has already accepted a batch with this sequence number.",
    )
    INVALID_PRODUCER_EPOCH = (
        47,
        "InvalidProducerEpochException",
        "The producer wrote with an epoch older than the current one.",
    )
    INVALID_TXN_STATE = (
        48,
        "InvalidTxnStateException",
        "The operation is not valid in the transaction's current state.",
    )
    INVALID_PRODUCER_ID_MAPPING = (
        49,
        "InvalidPidMappingException",
        "The producer id is not the one currently assigned to this transactional id.",
    )
    INVALID_TRANSACTION_TIMEOUT = (
        50,
        "InvalidTxnTimeoutException",
        "The transaction timeout is larger than the broker's transaction.max.timeout.ms.",
    )
    CONCURRENT_TRANSACTIONS = (
        51,
        "ConcurrentTransactionsException",
        "Another operation on this transaction is still in progress.",
    )
    TRANSACTION_COORDINATOR_FENCED = (
        52,
        "TransactionCoordinatorFencedException",
        "The transaction coordinator sending the marker is no longer the coordinator for this producer.",
    )
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (
        53,
        "TransactionalIdAuthorizationException",
        "Not authorised to use this transactional id.",
    )
    OPERATION_NOT_ATTEMPTED = (
        55,
        "OperationNotAttemptedException",
        "The broker skipped this operation because another one in the same batched request failed.",
    )
    KAFKA_STORAGE_ERROR = (
        56,
        "KafkaStorageException",
        "The broker hit a disk error on the log directory holding the partition.",
    )
    SASL_AUTHENTICATION_FAILED = (
        58,
        "SaslAuthenticationException",
        "SASL authentication failed.",
    )
    UNKNOWN_PRODUCER_ID = (
        59,
        "UnknownProducerIdException",
        "The broker holds no state for this producer id, e.g. because retention removed all its records.",
    )
    NON_EMPTY_GROUP = (68, "GroupNotEmptyException", "The group still has members.")
    GROUP_ID_NOT_FOUND = (69, "GroupIdNotFoundException", "The group id does not exist.")
    FENCED_LEADER_EPOCH = (
        74,
        "FencedLeaderEpochException",
        "The leader epoch in the request is older than the broker's.",
    )
    UNSUPPORTED_COMPRESSION_TYPE = (
        76,
        "UnsupportedCompressionTypeException",
        "The requesting client does not support the compression type of the given partition.",
    )
    UNKNOWN_LEADER_EPOCH = (
        75,
        "UnknownLeaderEpochException",
        "The leader epoch in the request is newer than the broker's.",
    )
    STALE_BROKER_EPOCH = (77, "StaleBrokerEpochException", "The broker epoch has changed.")
    OFFSET_NOT_AVAILABLE = (
        78,
        "OffsetNotAvailableException",
        "The new leader's high watermark has not caught up yet, so offsets could go backwards.",
    )
    MEMBER_ID_REQUIRED = (
        79,
        "MemberIdRequiredException",
        "The member needs a member id before it can enter the group.",
    )
    GROUP_MAX_SIZE_REACHED = (81, "GroupMaxSizeReachedException", "The group has reached its maximum size.")
    FENCED_INSTANCE_ID = (
        82,
        "FencedInstanceIdException",
        "Another member registered with the same group.instance.id, fencing this static member.",
    )
    INVALID_RECORD = (87, "InvalidRecordException", "The broker's validation rejected the record.")
    UNSTABLE_OFFSET_COMMIT = (
        88,
        "UnstableOffsetCommitException",
        "Transactional offset commits for the partition are still pending.",
    )
    PRODUCER_FENCED = (
        90,
        "ProducerFencedException",
        "A newer producer with the same transactional id has fenced this one.",
    )
    TRANSACTIONAL_ID_NOT_FOUND = (
        105,
        "TransactionalIdNotFoundException",
        "The transactional id is not known.",
    )
    FENCED_MEMBER_EPOCH = (
        110,
        "FencedMemberEpochException",
        "The coordinator fenced the member's epoch; it must give up its partitions and rejoin.",
    )
    UNRELEASED_INSTANCE_ID = (
        111,
        "UnreleasedInstanceIdException",
        "Another group member still holds this instance id and must leave first.",
    )
    UNSUPPORTED_ASSIGNOR = (
        112,
        "UnsupportedAssignorException",
        "The consumer group does not support the assignor or its version range.",
    )
    STALE_MEMBER_EPOCH = (
        113,
        "StaleMemberEpochException",
        "The member epoch is stale; retry once the heartbeat has returned the current epoch.",
    )
    TRANSACTION_ABORTABLE = (
        120,
        "TransactionAbortableException",
        "The broker hit a transaction error; abort the transaction to keep using this transactional id.",
    )
    INVALID_REGULAR_EXPRESSION = (128, "InvalidRegularExpression", "The regular expression is not valid.")

    @property
    def exception_name(self) -> str | None:
        """The Java exception class name, as in ``Errors.java``; ``None`` for ``NONE``."""
        return self._exception_name

    @property
    def message(self) -> str:
        """Kafka's default message for the code, paraphrased; empty for ``NONE``."""
        return self._default_message

    @property
    def exception_class(self) -> type[KafkaError] | None:
        """The :class:`KafkaError` subclass for the code; ``None`` for ``NONE``."""
        return _CLASS_BY_CODE.get(self)

    @property
    def retriable(self) -> bool:
        """True if the Java class extends ``RetriableException``: the client retries it by itself."""
        cls = self.exception_class
        return cls is not None and cls.retriable

    @property
    def abortable(self) -> bool:
        """True if failing a transactional ``send()`` with it moves the producer to ABORTABLE_ERROR."""
        cls = self.exception_class
        return cls is not None and cls.abortable

    @property
    def fatal(self) -> bool:
        """True if failing a transactional ``send()`` with it moves the producer to FATAL_ERROR."""
        cls = self.exception_class
        return cls is not None and cls.fatal

    @classmethod
    def for_code(cls, code: int) -> ErrorCode:
        """The member for an integer code; an unknown code maps to ``UNKNOWN_SERVER_ERROR``, as in Java."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


class Classification(enum.Enum):
    """How a transactional producer handles an error code (see the module docstring's table)."""

    NONE = "none"
    RETRIABLE = "retriable"
    ABORTABLE = "abortable"
    FATAL = "fatal"


# TransactionManager.maybeTransitionToErrorState: the only errors a send() turns into FATAL_ERROR.
_FATAL_ON_SEND = frozenset(
    {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
    }
)
# The transaction-coordinator handlers (InitProducerId ... TxnOffsetCommit): abortable outcomes.
_ABORTABLE_ON_COORDINATOR_RPC = frozenset(
    {
        ErrorCode.TRANSACTION_ABORTABLE,
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        ErrorCode.GROUP_AUTHORIZATION_FAILED,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.OPERATION_NOT_ATTEMPTED,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.ILLEGAL_GENERATION,
    }
)
# abortableErrorIfPossible: abortable if the coordinator can bump the epoch, else fatal.
_ABORTABLE_IF_EPOCH_BUMP = frozenset({ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.INVALID_PRODUCER_ID_MAPPING})


def classify(code: ErrorCode | int, *, coordinator_rpc: bool = False, can_bump_epoch: bool = True) -> Classification:
    """Classify ``code`` for a transactional producer.

    With ``coordinator_rpc=False`` (a ``send()``/produce response) this equals the code's ``retriable``
    / ``abortable`` / ``fatal`` flags. With ``coordinator_rpc=True`` it follows the transaction
    coordinator handlers, which turn unexpected codes fatal. ``can_bump_epoch`` is False when the
    coordinator is too old to bump the producer epoch (only matters for coordinator RPCs).
    """
    code = ErrorCode.for_code(code)
    if code is ErrorCode.NONE:
        return Classification.NONE
    if code.retriable:
        return Classification.RETRIABLE
    if not coordinator_rpc:
        return Classification.FATAL if code in _FATAL_ON_SEND else Classification.ABORTABLE
    if code in _ABORTABLE_ON_COORDINATOR_RPC:
        return Classification.ABORTABLE
    if code in _ABORTABLE_IF_EPOCH_BUMP and can_bump_epoch:
        return Classification.ABORTABLE
    return Classification.FATAL


# ---------------------------------------------------------------------------------------------------
# Exceptions
# ---------------------------------------------------------------------------------------------------

_CLASS_BY_CODE: dict[ErrorCode, type[KafkaError]] = {}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _with_context(message: str, context: dict[str, Any]) -> str:
    if not context:
        return message
    pairs = " ".join(f"{key}={value!r}" for key, value in context.items())
    return f"{message} [{pairs}]"


class _ShortTraceback:
    """Mixin: IPython calls ``_render_traceback_`` and shows its lines instead of a full traceback."""

    def _render_traceback_(self) -> list[str]:
        return [_one_line(f"{type(self).__name__}: {self}")]


class KafkaError(_ShortTraceback, Exception):
    """Base of every operating error (Java's ``KafkaException``/``ApiException``).

    ``code`` is the wire code (``None`` only for client-side exceptions that never cross the wire);
    ``retriable``, ``abortable`` and ``fatal`` are the client classification of the module docstring.
    ``message`` is the full text (default message or the one given, plus ``[key=value ...]`` context);
    ``context`` keeps the keyword arguments, e.g. ``topic``, ``partition``, ``producer_id``.
    """

    code: ClassVar[ErrorCode | None] = None
    retriable: ClassVar[bool] = False
    abortable: ClassVar[bool] = False
    fatal: ClassVar[bool] = False
    default_message: ClassVar[str] = "A Kafka error occurred."

    message: str
    context: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if code is None:
            return
        if code in _CLASS_BY_CODE:
            raise TypeError(f"{code.name} already maps to {_CLASS_BY_CODE[code].__name__}, not {cls.__name__}")
        if cls.__name__ != code.exception_name:
            raise TypeError(f"{code.name} is {code.exception_name} in Kafka, not {cls.__name__}")
        _CLASS_BY_CODE[code] = cls
        cls.default_message = code.message
        cls.fatal = code in _FATAL_ON_SEND
        cls.abortable = not cls.retriable and not cls.fatal

    def __init__(self, message: str | None = None, **context: Any) -> None:
        self._base_message = message if message is not None else self.default_message
        self.context = dict(context)
        self.message = _with_context(self._base_message, self.context)
        super().__init__(self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._base_message, self.context))

    @property
    def base_message(self) -> str:
        """Return the message without its ``[key=value ...]`` context."""
        return self._base_message

    def _render_traceback_(self) -> list[str]:
        label = (
            type(self).__name__ if self.code is None else f"{type(self).__name__} ({self.code.name}={int(self.code)})"
        )
        return [_one_line(f"{label}: {self.message}")]


def _rebuild(cls: type[KafkaError], message: str, context: dict[str, Any]) -> KafkaError:
    return cls(message, **context)


class RetriableException(KafkaError):
    """Java's ``RetriableException``: the client may retry the operation and succeed."""

    retriable = True


class InvalidMetadataException(RetriableException):
    """Java's ``InvalidMetadataException``: the client's metadata is stale; refresh it, then retry."""


class AuthorizationException(KafkaError):
    """Java's ``AuthorizationException``: the principal lacks a permission."""


# One class per code, named as in Errors.java, with Java's parent class where it is one of the above
# (KafkaError otherwise): a table, one row a code, as Errors.java is one enum.


def _code_class(code: ErrorCode, parent: type[KafkaError] = KafkaError) -> type[KafkaError]:
    """The exception class of ``code``: named ``code.exception_name``, documented ``CODE`` (number).

    :meth:`KafkaError.__init_subclass__` registers it and takes its message and flags from the code;
    :func:`_check_registry` checks that the module name it is bound to is its own.
    """
    doc = f"``{code.name}`` ({int(code)})."
    return type(str(code.exception_name), (parent,), {"__module__": __name__, "__doc__": doc, "code": code})


UnknownServerException = _code_class(ErrorCode.UNKNOWN_SERVER_ERROR)
OffsetOutOfRangeException = _code_class(ErrorCode.OFFSET_OUT_OF_RANGE)
CorruptRecordException = _code_class(ErrorCode.CORRUPT_MESSAGE, RetriableException)
UnknownTopicOrPartitionException = _code_class(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, InvalidMetadataException)
InvalidFetchSizeException = _code_class(ErrorCode.INVALID_FETCH_SIZE)
LeaderNotAvailableException = _code_class(ErrorCode.LEADER_NOT_AVAILABLE, InvalidMetadataException)
NotLeaderOrFollowerException = _code_class(ErrorCode.NOT_LEADER_OR_FOLLOWER, InvalidMetadataException)
TimeoutException = _code_class(ErrorCode.REQUEST_TIMED_OUT, RetriableException)
BrokerNotAvailableException = _code_class(ErrorCode.BROKER_NOT_AVAILABLE)
ReplicaNotAvailableException = _code_class(ErrorCode.REPLICA_NOT_AVAILABLE, InvalidMetadataException)
RecordTooLargeException = _code_class(ErrorCode.MESSAGE_TOO_LARGE)
OffsetMetadataTooLarge = _code_class(ErrorCode.OFFSET_METADATA_TOO_LARGE)
NetworkException = _code_class(ErrorCode.NETWORK_EXCEPTION, InvalidMetadataException)
CoordinatorLoadInProgressException = _code_class(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, RetriableException)
CoordinatorNotAvailableException = _code_class(ErrorCode.COORDINATOR_NOT_AVAILABLE, RetriableException)
NotCoordinatorException = _code_class(ErrorCode.NOT_COORDINATOR, RetriableException)
InvalidTopicException = _code_class(ErrorCode.INVALID_TOPIC_EXCEPTION)
RecordBatchTooLargeException = _code_class(ErrorCode.RECORD_LIST_TOO_LARGE)
NotEnoughReplicasException = _code_class(ErrorCode.NOT_ENOUGH_REPLICAS, RetriableException)
NotEnoughReplicasAfterAppendException = _code_class(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, RetriableException)
InvalidRequiredAcksException = _code_class(ErrorCode.INVALID_REQUIRED_ACKS)
IllegalGenerationException = _code_class(ErrorCode.ILLEGAL_GENERATION)
InconsistentGroupProtocolException = _code_class(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
InvalidGroupIdException = _code_class(ErrorCode.INVALID_GROUP_ID)
UnknownMemberIdException = _code_class(ErrorCode.UNKNOWN_MEMBER_ID)
InvalidSessionTimeoutException = _code_class(ErrorCode.INVALID_SESSION_TIMEOUT)
RebalanceInProgressException = _code_class(ErrorCode.REBALANCE_IN_PROGRESS)
InvalidCommitOffsetSizeException = _code_class(ErrorCode.INVALID_COMMIT_OFFSET_SIZE)
TopicAuthorizationException = _code_class(ErrorCode.TOPIC_AUTHORIZATION_FAILED, AuthorizationException)
GroupAuthorizationException = _code_class(ErrorCode.GROUP_AUTHORIZATION_FAILED, AuthorizationException)
ClusterAuthorizationException = _code_class(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, AuthorizationException)
InvalidTimestampException = _code_class(ErrorCode.INVALID_TIMESTAMP)
UnsupportedSaslMechanismException = _code_class(ErrorCode.UNSUPPORTED_SASL_MECHANISM)
IllegalSaslStateException = _code_class(ErrorCode.ILLEGAL_SASL_STATE)
UnsupportedVersionException = _code_class(ErrorCode.UNSUPPORTED_VERSION)
TopicExistsException = _code_class(ErrorCode.TOPIC_ALREADY_EXISTS)
InvalidPartitionsException = _code_class(ErrorCode.INVALID_PARTITIONS)
InvalidReplicationFactorException = _code_class(ErrorCode.INVALID_REPLICATION_FACTOR)
InvalidReplicaAssignmentException = _code_class(ErrorCode.INVALID_REPLICA_ASSIGNMENT)
InvalidConfigurationException = _code_class(ErrorCode.INVALID_CONFIG)
NotControllerException = _code_class(ErrorCode.NOT_CONTROLLER, RetriableException)
InvalidRequestException = _code_class(ErrorCode.INVALID_REQUEST)
UnsupportedForMessageFormatException = _code_class(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT)
OutOfOrderSequenceException = _code_class(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
DuplicateSequenceException = _code_class(ErrorCode.DUPLICATE_SEQUENCE_NUMBER)
InvalidProducerEpochException = _code_class(ErrorCode.INVALID_PRODUCER_EPOCH)
InvalidTxnStateException = _code_class(ErrorCode.INVALID_TXN_STATE)
InvalidPidMappingException = _code_class(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
InvalidTxnTimeoutException = _code_class(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
ConcurrentTransactionsException = _code_class(ErrorCode.CONCURRENT_TRANSACTIONS, RetriableException)
TransactionCoordinatorFencedException = _code_class(ErrorCode.TRANSACTION_COORDINATOR_FENCED)
TransactionalIdAuthorizationException = _code_class(
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, AuthorizationException
)
OperationNotAttemptedException = _code_class(ErrorCode.OPERATION_NOT_ATTEMPTED)
KafkaStorageException = _code_class(ErrorCode.KAFKA_STORAGE_ERROR, InvalidMetadataException)
SaslAuthenticationException = _code_class(ErrorCode.SASL_AUTHENTICATION_FAILED)
UnknownProducerIdException = _code_class(ErrorCode.UNKNOWN_PRODUCER_ID, OutOfOrderSequenceException)
GroupNotEmptyException = _code_class(ErrorCode.NON_EMPTY_GROUP)
GroupIdNotFoundException = _code_class(ErrorCode.GROUP_ID_NOT_FOUND)
FencedLeaderEpochException = _code_class(ErrorCode.FENCED_LEADER_EPOCH, InvalidMetadataException)
UnknownLeaderEpochException = _code_class(ErrorCode.UNKNOWN_LEADER_EPOCH, RetriableException)
StaleBrokerEpochException = _code_class(ErrorCode.STALE_BROKER_EPOCH)
OffsetNotAvailableException = _code_class(ErrorCode.OFFSET_NOT_AVAILABLE, RetriableException)
MemberIdRequiredException = _code_class(ErrorCode.MEMBER_ID_REQUIRED)
GroupMaxSizeReachedException = _code_class(ErrorCode.GROUP_MAX_SIZE_REACHED)
FencedInstanceIdException = _code_class(ErrorCode.FENCED_INSTANCE_ID)
UnsupportedCompressionTypeException = _code_class(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
InvalidRecordException = _code_class(ErrorCode.INVALID_RECORD)
UnstableOffsetCommitException = _code_class(ErrorCode.UNSTABLE_OFFSET_COMMIT, RetriableException)
ProducerFencedException = _code_class(ErrorCode.PRODUCER_FENCED)
TransactionalIdNotFoundException = _code_class(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
FencedMemberEpochException = _code_class(ErrorCode.FENCED_MEMBER_EPOCH)
UnreleasedInstanceIdException = _code_class(ErrorCode.UNRELEASED_INSTANCE_ID)
UnsupportedAssignorException = _code_class(ErrorCode.UNSUPPORTED_ASSIGNOR)
StaleMemberEpochException = _code_class(ErrorCode.STALE_MEMBER_EPOCH)
TransactionAbortableException = _code_class(ErrorCode.TRANSACTION_ABORTABLE)
InvalidRegularExpression = _code_class(ErrorCode.INVALID_REGULAR_EXPRESSION)


# Client-side exceptions: in Kafka's client, but never sent as a code.


class TransactionAbortedException(KafkaError):
    """A batch failed because its transaction was aborted before the batch was sent (client-side only)."""

    default_message = "The batch was failed because its transaction was aborted."


class PurgedException(KafkaError):
    """A record was dropped by ``Producer.purge()`` before it was delivered (client-side only).

    confluent-kafka reports these as ``_PURGE_QUEUE`` (never sent: definitely not written) and
    ``_PURGE_INFLIGHT`` (sent, unanswered: it may still be written); the latter carries
    ``in_flight=True`` in its context. In a transaction it is abortable, as every failed send is.
    """

    abortable = True
    default_message = "The record was purged before it was delivered."


class CommitFailedException(KafkaError):
    """An offset commit failed because the group rebalanced away from this member (client-side only).

    A transactional producer reports a TxnOffsetCommit's ``UNKNOWN_MEMBER_ID``/``ILLEGAL_GENERATION``
    this way, and it is abortable.
    """

    abortable = True
    default_message = "The offset commit failed: the group rebalanced and the partitions went to another member."


# ---------------------------------------------------------------------------------------------------
# Programmer errors
# ---------------------------------------------------------------------------------------------------


class IllegalStateError(_ShortTraceback, RuntimeError):
    """A client method was called in a state where it is not allowed (Java's ``IllegalStateException``).

    E.g. ``commit_transaction()`` before ``begin_transaction()``. A bug in the calling code, not an
    operating error: never retried or aborted away.
    """


class ConfigError(_ShortTraceback, ValueError):
    """A configuration value is invalid (Java's ``ConfigException``), raised at construction.

    The message names the key, the value given, what is wrong, and, if given, how to fix it::

        Invalid value 'maybe' for configuration 'acks': must be one of 'all', 0, 1. Fix: use acks='all'.
    """

    def __init__(self, key: str, value: Any, reason: str, *, fix: str | None = None) -> None:
        self.key = key
        self.value = value
        self.reason = reason
        self.fix = fix
        text = f"Invalid value {value!r} for configuration {key!r}: {reason}"
        if fix:
            text = f"{text.rstrip('.')}. Fix: {fix}"
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_config_error, (self.key, self.value, self.reason, self.fix))


def _rebuild_config_error(key: str, value: Any, reason: str, fix: str | None) -> ConfigError:
    return ConfigError(key, value, reason, fix=fix)


# ---------------------------------------------------------------------------------------------------
# Application errors: the services around Kafka (the outbox, database sinks)
# ---------------------------------------------------------------------------------------------------


class InvalidEventError(_ShortTraceback, ValueError):
    """A service refused an event before anything was written: a malformed payload or an unknown type.

    Raised by :mod:`engine.outbox.service` inside the database transaction that would have written
    the business row and the outbox row, so the transaction rolls back and neither row exists.
    """


class DatabaseUnavailableError(_ShortTraceback, RuntimeError):
    """A database call reached a service database whose node is down (crashed and not restarted)."""


# ---------------------------------------------------------------------------------------------------
# Building exceptions from codes
# ---------------------------------------------------------------------------------------------------


def exception_for(code: ErrorCode | int, message: str | None = None, **context: Any) -> KafkaError:
    """The exception for a wire code, ready to raise: ``raise exception_for(resp.error, topic=t)``.

    ``message`` replaces the code's default message; ``context`` (``topic=``, ``partition=`` ...) is
    kept on the exception and appended to the message as ``[key=value ...]``. An unknown integer code
    gives ``UnknownServerException`` with ``unknown_code`` in the context. ``NONE`` is success, not an
    error, and raises ``ValueError``.
    """
    error = ErrorCode.for_code(code)
    if error is ErrorCode.UNKNOWN_SERVER_ERROR and int(code) != ErrorCode.UNKNOWN_SERVER_ERROR:
        context = {"unknown_code": int(code), **context}
    if error is ErrorCode.NONE:
        raise ValueError("ErrorCode.NONE means success; check the code before calling exception_for()")
    return _CLASS_BY_CODE[error](message, **context)


def _check_registry() -> None:
    """Import-time check: every code but NONE has exactly its Java-named class, and nothing else does."""
    missing = [code.name for code in ErrorCode if code is not ErrorCode.NONE and code not in _CLASS_BY_CODE]
    if missing:
        raise ImportError(f"error codes without an exception class: {missing}")
    for code, cls in _CLASS_BY_CODE.items():
        if globals().get(cls.__name__) is not cls or cls.__name__ not in __all__:
            raise ImportError(f"{cls.__name__} ({code.name}) is not exported from {__name__}")
        if cls.fatal + cls.abortable + cls.retriable != 1:
            raise ImportError(f"{cls.__name__} must be exactly one of retriable/abortable/fatal")


_check_registry()
