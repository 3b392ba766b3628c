"""Unit tests of ``engine.errors``: Kafka's codes, Java names, the client classification, messages.

The numbers and names below were checked by hand against Kafka's ``Errors.java`` (apache/kafka,
``clients/src/main/java/org/apache/kafka/common/protocol/Errors.java``); the classification against
``TransactionManager.maybeTransitionToErrorState`` and the coordinator response handlers.
"""

from __future__ import annotations

import copy
import pickle

import pytest

import engine.errors as errors
from engine.errors import (
    AuthorizationException,
    Classification,
    CommitFailedException,
    ConcurrentTransactionsException,
    ConfigError,
    ErrorCode,
    IllegalStateError,
    InvalidMetadataException,
    InvalidProducerEpochException,
    KafkaError,
    NotLeaderOrFollowerException,
    OutOfOrderSequenceException,
    ProducerFencedException,
    RetriableException,
    TimeoutException,
    TransactionAbortedException,
    UnknownProducerIdException,
    UnknownServerException,
    classify,
    exception_for,
)

# (code name, number, Java exception class) as in Errors.java.
HAND_CHECKED = [
    ("UNKNOWN_SERVER_ERROR", -1, "UnknownServerException"),
    ("NONE", 0, None),
    ("CORRUPT_MESSAGE", 2, "CorruptRecordException"),
    ("NOT_LEADER_OR_FOLLOWER", 6, "NotLeaderOrFollowerException"),
    ("REQUEST_TIMED_OUT", 7, "TimeoutException"),
    ("MESSAGE_TOO_LARGE", 10, "RecordTooLargeException"),
    ("NOT_COORDINATOR", 16, "NotCoordinatorException"),
    ("NOT_ENOUGH_REPLICAS", 19, "NotEnoughReplicasException"),
    ("ILLEGAL_GENERATION", 22, "IllegalGenerationException"),
    ("OUT_OF_ORDER_SEQUENCE_NUMBER", 45, "OutOfOrderSequenceException"),
    ("DUPLICATE_SEQUENCE_NUMBER", 46, "DuplicateSequenceException"),
    ("INVALID_PRODUCER_EPOCH", 47, "InvalidProducerEpochException"),
    ("INVALID_TXN_STATE", 48, "InvalidTxnStateException"),
    ("INVALID_PRODUCER_ID_MAPPING", 49, "InvalidPidMappingException"),
    ("CONCURRENT_TRANSACTIONS", 51, "ConcurrentTransactionsException"),
    ("UNKNOWN_PRODUCER_ID", 59, "UnknownProducerIdException"),
    ("FENCED_LEADER_EPOCH", 74, "FencedLeaderEpochException"),
    ("INVALID_RECORD", 87, "InvalidRecordException"),
    ("PRODUCER_FENCED", 90, "ProducerFencedException"),
    ("TRANSACTIONAL_ID_NOT_FOUND", 105, "TransactionalIdNotFoundException"),
    ("TRANSACTION_ABORTABLE", 120, "TransactionAbortableException"),
]

# Kafka's names that do not end in "Exception".
ODD_JAVA_NAMES = {"OffsetMetadataTooLarge", "InvalidRegularExpression"}


@pytest.mark.parametrize(("name", "number", "java"), HAND_CHECKED)
def test_codes_match_kafka(name: str, number: int, java: str | None) -> None:
    code = ErrorCode[name]
    assert int(code) == number
    assert ErrorCode(number) is code
    assert code.exception_name == java


def test_every_code_has_a_java_named_class_that_round_trips() -> None:
    for code in ErrorCode:
        if code is ErrorCode.NONE:
            assert code.exception_class is None
            continue
        cls = code.exception_class
        assert cls is not None, code
        assert cls.__name__ == code.exception_name
        assert cls.__name__.endswith("Exception") or cls.__name__ in ODD_JAVA_NAMES
        assert getattr(errors, cls.__name__) is cls
        assert cls.__name__ in errors.__all__
        assert issubclass(cls, KafkaError)
        error = exception_for(code)
        assert type(error) is cls
        assert error.code is code
        assert error.message == code.message
        assert code.message.strip()


def test_import_by_name() -> None:
    from engine.errors import InvalidPidMappingException, TransactionAbortableException

    assert InvalidPidMappingException.code is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert TransactionAbortableException.code is ErrorCode.TRANSACTION_ABORTABLE


@pytest.mark.parametrize(
    ("name", "retriable"),
    [
        ("NOT_LEADER_OR_FOLLOWER", True),
        ("LEADER_NOT_AVAILABLE", True),
        ("REQUEST_TIMED_OUT", True),
        ("NETWORK_EXCEPTION", True),
        ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", True),
        ("CONCURRENT_TRANSACTIONS", True),
        ("COORDINATOR_LOAD_IN_PROGRESS", True),
        ("CORRUPT_MESSAGE", True),
        ("KAFKA_STORAGE_ERROR", True),
        ("OUT_OF_ORDER_SEQUENCE_NUMBER", False),
        ("INVALID_PRODUCER_EPOCH", False),
        ("PRODUCER_FENCED", False),
        ("UNKNOWN_PRODUCER_ID", False),
        ("MESSAGE_TOO_LARGE", False),
        ("NONE", False),
    ],
)
def test_retriable_flags(name: str, retriable: bool) -> None:
    code = ErrorCode[name]
    assert code.retriable is retriable
    if code is not ErrorCode.NONE:
        assert isinstance(exception_for(code), RetriableException) is retriable


def test_java_hierarchy_is_mirrored() -> None:
    assert issubclass(NotLeaderOrFollowerException, InvalidMetadataException)
    assert issubclass(InvalidMetadataException, RetriableException)
    assert issubclass(ConcurrentTransactionsException, RetriableException)
    assert issubclass(UnknownProducerIdException, OutOfOrderSequenceException)
    assert issubclass(errors.TransactionalIdAuthorizationException, AuthorizationException)
    assert issubclass(TimeoutException, RetriableException)


def test_send_path_classification() -> None:
    fatal = {code for code in ErrorCode if code.fatal}
    assert fatal == {
        ErrorCode.PRODUCER_FENCED,
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode.UNSUPPORTED_VERSION,
    }
    for name in [
        "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "UNKNOWN_PRODUCER_ID",
        "INVALID_PRODUCER_EPOCH",
        "INVALID_TXN_STATE",
        "TRANSACTION_ABORTABLE",
    ]:
        assert ErrorCode[name].abortable, name
    for code in ErrorCode:
        flags = (code.retriable, code.abortable, code.fatal)
        assert sum(flags) == (0 if code is ErrorCode.NONE else 1), code
        expected = Classification.NONE
        if code.retriable:
            expected = Classification.RETRIABLE
        elif code.abortable:
            expected = Classification.ABORTABLE
        elif code.fatal:
            expected = Classification.FATAL
        assert classify(code) is expected


def test_coordinator_rpc_classification() -> None:
    def on_rpc(name: str, **kwargs: bool) -> Classification:
        return classify(ErrorCode[name], coordinator_rpc=True, **kwargs)

    assert on_rpc("INVALID_PRODUCER_EPOCH") is Classification.FATAL
    assert on_rpc("PRODUCER_FENCED") is Classification.FATAL
    assert on_rpc("INVALID_TXN_STATE") is Classification.FATAL
    assert on_rpc("CONCURRENT_TRANSACTIONS") is Classification.RETRIABLE
    assert on_rpc("NOT_COORDINATOR") is Classification.RETRIABLE
    assert on_rpc("TRANSACTION_ABORTABLE") is Classification.ABORTABLE
    assert on_rpc("UNKNOWN_PRODUCER_ID") is Classification.ABORTABLE
    assert on_rpc("UNKNOWN_PRODUCER_ID", can_bump_epoch=False) is Classification.FATAL
    assert on_rpc("INVALID_PRODUCER_ID_MAPPING", can_bump_epoch=False) is Classification.FATAL
    assert on_rpc("INVALID_RECORD") is Classification.FATAL  # "unexpected error" branch
    assert on_rpc("NONE") is Classification.NONE


def test_exception_attributes_follow_the_code() -> None:
    fenced = exception_for(ErrorCode.PRODUCER_FENCED)
    assert isinstance(fenced, ProducerFencedException)
    assert (fenced.retriable, fenced.abortable, fenced.fatal) == (False, False, True)
    epoch = InvalidProducerEpochException()
    assert (epoch.retriable, epoch.abortable, epoch.fatal) == (False, True, False)


def test_exception_for_puts_context_in_the_message() -> None:
    error = exception_for(45, topic="orders", partition=3, expected_sequence=7, got=9)
    assert isinstance(error, OutOfOrderSequenceException)
    assert error.context == {"topic": "orders", "partition": 3, "expected_sequence": 7, "got": 9}
    assert error.message.startswith(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER.message)
    assert "topic='orders'" in error.message
    assert "partition=3" in error.message
    assert "expected_sequence=7 got=9" in error.message
    assert str(error) == error.message


def test_exception_for_custom_message_and_unknown_codes() -> None:
    error = exception_for(ErrorCode.PRODUCER_FENCED, "fenced by epoch 4", transactional_id="app-1")
    assert error.message == "fenced by epoch 4 [transactional_id='app-1']"

    unknown = exception_for(9999, topic="t")
    assert type(unknown) is UnknownServerException
    assert unknown.context == {"unknown_code": 9999, "topic": "t"}
    assert ErrorCode.for_code(9999) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert ErrorCode.for_code(90) is ErrorCode.PRODUCER_FENCED

    with pytest.raises(ValueError, match="NONE"):
        exception_for(ErrorCode.NONE)


def test_render_traceback_is_one_short_line() -> None:
    error = exception_for(ErrorCode.NOT_LEADER_OR_FOLLOWER, "leader moved\nto broker 2", partition=0)
    lines = error._render_traceback_()
    assert isinstance(lines, list)
    assert len(lines) == 1
    assert "\n" not in lines[0]
    assert lines[0].startswith("NotLeaderOrFollowerException (NOT_LEADER_OR_FOLLOWER=6): leader moved to")
    assert len(lines[0]) < 200

    assert IllegalStateError("commit_transaction() before begin_transaction()")._render_traceback_() == [
        "IllegalStateError: commit_transaction() before begin_transaction()"
    ]
    assert TransactionAbortedException()._render_traceback_()[0].startswith("TransactionAbortedException: ")


def test_exceptions_survive_pickle_and_copy() -> None:
    error = exception_for(ErrorCode.UNKNOWN_PRODUCER_ID, producer_id=1000, partition=2)
    for clone in (pickle.loads(pickle.dumps(error)), copy.deepcopy(error)):
        assert type(clone) is UnknownProducerIdException
        assert clone.message == error.message
        assert clone.context == error.context
    config = ConfigError("acks", "maybe", "must be one of 'all', 0, 1.", fix="use acks='all'.")
    assert str(pickle.loads(pickle.dumps(config))) == str(config)


def test_config_error_message_names_key_value_and_fix() -> None:
    error = ConfigError(
        "transaction.timeout.ms",
        -5,
        "must be positive and at most the broker's transaction.max.timeout.ms.",
        fix="pass a value such as 60000.",
    )
    assert isinstance(error, ValueError)
    assert not isinstance(error, KafkaError)
    text = str(error)
    assert text == (
        "Invalid value -5 for configuration 'transaction.timeout.ms': must be positive and at most the "
        "broker's transaction.max.timeout.ms. Fix: pass a value such as 60000."
    )
    assert (error.key, error.value, error.fix) == (
        "transaction.timeout.ms",
        -5,
        "pass a value such as 60000.",
    )
    assert str(ConfigError("acks", 7, "must be one of 'all', 0, 1")).endswith("must be one of 'all', 0, 1")
    assert error._render_traceback_() == [f"ConfigError: {text}"]


def test_programmer_errors_are_not_operating_errors() -> None:
    assert issubclass(IllegalStateError, RuntimeError)
    assert not issubclass(IllegalStateError, KafkaError)
    assert issubclass(ConfigError, ValueError)


def test_client_side_exceptions_have_no_code() -> None:
    assert TransactionAbortedException.code is None
    assert CommitFailedException.code is None
    assert CommitFailedException().abortable
    assert not TransactionAbortedException().abortable
    assert None not in {code.exception_class for code in ErrorCode if code is not ErrorCode.NONE}
