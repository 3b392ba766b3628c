"""How a recorded client's outcomes become ok / fail / info, and the recorder's own guarantees.

Goal: every mapping the recorder decides is pinned down: delivery errors (only those that prove
the record was not written give ``fail``: a wrong ``fail`` is a false ``G1a``), transaction ends
(commit ok, abort fail, fatal info, abortable or retriable left open), a ``produce()`` that
raises, and the recorder's promises (never raising into the application, a valid history at
any moment, the JSON Lines file). Method: the pure mappings directly; real confluent-kafka
producers with no broker to reach (a refused port) for the purge, timeout and full-queue paths;
a small stand-in producer where only a broker could make the error (a fatal commit), since the
mock cluster's error injection is not reachable from Python.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from engine.check import load_jsonl
from engine.check.history import Send
from engine.record import Recorder, RecordingProducer, recording
from engine.record.books import ConsumerBook
from engine.record.confluent import RecordingConsumer, delivery_outcome, error_name, transaction_outcome

#: A port nothing listens on: the client never reaches a broker.
NOWHERE = {"bootstrap.servers": "127.0.0.1:1", "socket.timeout.ms": 1_000}


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (KafkaError._MSG_TIMED_OUT, "info"),
        (KafkaError._TIMED_OUT, "info"),
        (KafkaError._TRANSPORT, "info"),
        (KafkaError._PURGE_INFLIGHT, "info"),
        (KafkaError.NOT_LEADER_FOR_PARTITION, "info"),
        (KafkaError._FENCED, "info"),
        (KafkaError._PURGE_QUEUE, "fail"),
        (KafkaError.MSG_SIZE_TOO_LARGE, "fail"),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, "fail"),
        (KafkaError._UNKNOWN_PARTITION, "fail"),
        (KafkaError.INVALID_PRODUCER_EPOCH, "fail"),
        (KafkaError.PRODUCER_FENCED, "fail"),
        (KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "fail"),
    ],
)
def test_a_delivery_error_fails_the_send_only_when_it_proves_the_record_unwritten(code, outcome):
    assert delivery_outcome(KafkaError(code)) == outcome


def test_a_delivery_without_error_is_ok():
    assert delivery_outcome(None) == "ok"


def test_a_fatal_commit_error_makes_the_transaction_unknown_and_any_other_leaves_it_open():
    assert transaction_outcome(KafkaError(KafkaError._FENCED, "fenced", fatal=True)) == "info"
    assert transaction_outcome(KafkaError(KafkaError._TIMED_OUT, "slow", retriable=True)) is None
    assert transaction_outcome(KafkaError(KafkaError._STATE, "abort now", txn_requires_abort=True)) is None


def test_errors_are_recorded_by_their_code_name_or_type():
    assert error_name(KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT))) == "_MSG_TIMED_OUT"
    assert error_name(KafkaError(KafkaError._PURGE_QUEUE)) == "_PURGE_QUEUE"
    assert error_name(BufferError("full")) == "BufferError"


def _completions(rec: Recorder) -> list[tuple[str, str, tuple[Any, ...], str | None]]:
    return [(op.type, op.f, op.mops, op.error) for op in rec.history() if op.type != "invoke"]


def test_a_record_purged_from_the_queue_fails_and_the_application_still_gets_its_report():
    rec = Recorder()
    reports: list[str] = []
    producer = RecordingProducer(NOWHERE, rec)
    producer.produce("t", b"v", partition=0, on_delivery=lambda err, msg: reports.append(err.name()))
    producer.purge(in_queue=True, in_flight=True)
    producer.poll(0)
    assert reports == ["_PURGE_QUEUE"]
    assert _completions(rec) == [("fail", "send", (Send("t", 0, "v", None),), "_PURGE_QUEUE")]


def test_a_record_that_timed_out_is_unknown_not_failed():
    rec = Recorder()
    producer = RecordingProducer({**NOWHERE, "message.timeout.ms": 50}, rec)
    producer.produce("t", "v", partition=0)
    assert producer.flush(5) == 0
    assert _completions(rec) == [("info", "send", (Send("t", 0, "v", None),), "_MSG_TIMED_OUT")]


def test_a_produce_that_raises_fails_its_send_and_raises_unchanged():
    rec = Recorder()
    producer = RecordingProducer({**NOWHERE, "queue.buffering.max.messages": 1}, rec)
    producer.produce("t", b"first", partition=0)
    with pytest.raises(BufferError):
        producer.produce("t", b"second", partition=0)
    assert _completions(rec) == [("fail", "send", (Send("t", 0, "second", None),), "BufferError")]
    producer.purge()
    assert producer.flush(5) == 0
    assert _completions(rec)[1] == ("fail", "send", (Send("t", 0, "first", None),), "_PURGE_QUEUE")


class _TxnProducer:
    """Stands in for a transactional librdkafka producer: commits and aborts raise what it is given."""

    def __init__(self) -> None:
        self.raises: list[KafkaException] = []
        self.reports: list[Any] = []

    def begin_transaction(self) -> None:
        pass

    def produce(self, topic: str, **kwargs: Any) -> None:
        self.reports.append(kwargs["on_delivery"])

    def commit_transaction(self, *args: Any) -> None:
        if self.raises:
            raise self.raises.pop(0)

    abort_transaction = commit_transaction


def _txn_types(rec: Recorder) -> list[tuple[str, str | None]]:
    return [(op.type, op.error) for op in rec.history() if op.f == "txn"]


def test_a_retriable_commit_leaves_the_transaction_open_until_the_retry_commits():
    rec = Recorder()
    stub = _TxnProducer()
    producer = RecordingProducer.wrap(stub, rec)
    producer.begin_transaction()
    producer.produce("t", b"v", partition=0)
    stub.raises.append(KafkaException(KafkaError(KafkaError._TIMED_OUT, "slow", retriable=True)))
    with pytest.raises(KafkaException):
        producer.commit_transaction(1)
    assert _txn_types(rec) == [("invoke", None)]
    producer.commit_transaction(1)
    assert _txn_types(rec) == [("invoke", None), ("ok", None)]


def test_an_abortable_commit_error_then_an_abort_fails_the_transaction():
    rec = Recorder()
    stub = _TxnProducer()
    producer = RecordingProducer.wrap(stub, rec)
    producer.begin_transaction()
    producer.produce("t", b"v", partition=0)
    stub.raises.append(KafkaException(KafkaError(KafkaError._STATE, "abort", txn_requires_abort=True)))
    with pytest.raises(KafkaException):
        producer.commit_transaction()
    producer.abort_transaction()
    assert _txn_types(rec) == [("invoke", None), ("fail", "aborted")]


def test_a_fatal_commit_error_makes_the_transaction_info():
    rec = Recorder()
    stub = _TxnProducer()
    producer = RecordingProducer.wrap(stub, rec)
    producer.begin_transaction()
    producer.produce("t", b"v", partition=0)
    stub.raises.append(KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True)))
    with pytest.raises(KafkaException):
        producer.commit_transaction()
    assert _txn_types(rec) == [("invoke", None), ("info", "_FENCED")]
    # the records of a transaction join its op: no send op of their own
    assert [op.f for op in rec.history()] == ["txn", "txn"]


class _BrokenMessage:
    def error(self) -> None:
        raise RuntimeError("not a message")


class _OddConsumer:
    """A consumer whose message the recorder cannot read."""

    def assignment(self) -> list[Any]:
        return []

    def poll(self, timeout: float) -> _BrokenMessage:
        return _BrokenMessage()


def test_the_recorder_never_raises_into_the_application():
    rec = Recorder()
    consumer = RecordingConsumer.wrap(_OddConsumer(), rec)
    msg = consumer.poll(0.1)
    assert isinstance(msg, _BrokenMessage)
    assert len(rec.faults) == 1 and "RuntimeError: not a message" in rec.faults[0]


def test_an_assignment_that_restarts_a_key_forgets_its_position_first():
    rec = Recorder()
    book = ConsumerBook(rec, [("t", 0)])
    book.assigned([("t", 0), ("t", 1)], restarted=[("t", 0), ("t", 1)])
    assert [op.keys for op in rec.history() if op.type == "ok"] == [(("t", 0),), (), (("t", 0), ("t", 1))]


def test_the_history_is_valid_while_operations_are_in_flight_and_written_on_exit(tmp_path):
    path = tmp_path / "h.jsonl"
    with Recorder(path) as rec:
        producer = RecordingProducer(NOWHERE, rec)
        producer.produce("t", b"v", partition=0)
        assert [(op.type, op.f) for op in rec.history()] == [("invoke", "send")]
    assert [(op.type, op.f, op.mops) for op in load_jsonl(path)] == [("invoke", "send", (Send("t", 0, "v"),))]
    producer.purge()
    producer.poll(0)
    with pytest.raises(ValueError, match="needs a path"):
        Recorder().write()


def test_recording_wraps_existing_clients_and_refuses_anything_else():
    rec = Recorder()
    producer = Producer(NOWHERE)
    wrapped = recording(producer, rec)
    assert isinstance(wrapped, RecordingProducer)
    assert wrapped.producer is producer
    assert wrapped.cluster_id == producer.cluster_id  # everything not recorded passes through
    with pytest.raises(TypeError, match="confluent-kafka or kafka-python"):
        recording(object(), rec)
