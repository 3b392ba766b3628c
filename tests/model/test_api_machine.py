"""A stateful property test of the public API: no call, valid or not, breaks a cluster or a history.

Goal (the error-paths issue): whatever a user types, the answer is a named, documented error or
the right result, and the cluster keeps working. Method: a Hypothesis ``RuleBasedStateMachine``
drives one cluster through random *valid* calls (idempotent sends, transactions that commit or
abort, some with a send that must fail, polls, faults, time passing) and random *invalid* ones
(bad produce arguments, bad topic names and partition counts, unknown nodes and topics, misuse
of the transaction API). It records a client history as the workloads do.

* Every exception raised is a ``TypeError``/``ValueError`` or a class defined in ``engine``
  (the error catalogue's Kafka-named errors, ``IllegalStateError``, ``ConfigError``, the world's
  named errors), with a one-line message; never an internal ``AttributeError``, ``KeyError``,
  ``IndexError`` or ``AssertionError``.
* At the end (``teardown``), after every fault is healed, a fresh producer and a fresh
  read_committed consumer still work, and the recorded history checks clean under EOS.

Runs are derandomized, so CI sees the same examples every time; ``API_MACHINE_EXAMPLES`` raises
the count for a longer local search.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from engine import Cluster
from engine.check import HistoryRecorder, Poll, Send, check_history
from engine.client.message import TopicPartition
from engine.errors import KafkaError

pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("API_MACHINE_EXAMPLES", "60"))
STEPS = int(os.environ.get("API_MACHINE_STEPS", "30"))
#: how many steps the machine ran in this process (read by a person after a long local run)
STEPS_RUN = [0]

#: Builtin exception classes a public entry point may raise for bad arguments.
ARGUMENT_ERRORS = (TypeError, ValueError)
#: Internal errors that must never escape a public call.
INTERNAL = (AttributeError, KeyError, IndexError, AssertionError, ZeroDivisionError, RecursionError)

PARTITIONS = 2
BROKERS = (1, 2, 3)

BAD_VALUES = st.sampled_from([42, 3.5, {"a": 1}, ["x"], object(), True])
BAD_PARTITIONS = st.sampled_from([-2, -100, "0", 1.5, None])
BAD_TOPICS = st.sampled_from([None, 3, "", "a b", "x" * 300, ".", "..", "__transaction_state", "bad/name"])
BAD_NODES = st.sampled_from([0, 4, 99, -1, "broker-9", "nobody", None, 2.5])


class ApiMachine(RuleBasedStateMachine):
    """One cluster, one idempotent producer, one transactional producer, one reader."""

    def __init__(self) -> None:
        super().__init__()
        self.errors_seen: list[str] = []
        self.counter = 0
        self.history = HistoryRecorder()

    # -- set-up -------------------------------------------------------------------------------

    @initialize(seed=st.integers(0, 2**16))
    def start(self, seed: int) -> None:
        self.c = Cluster(seed=seed, brokers=3, config={"min.insync.replicas": 2})
        self.c.create_topic("t", partitions=PARTITIONS, replication_factor=3)
        self.p = self.c.producer({"linger.ms": 0, "request.timeout.ms": 1_000, "delivery.timeout.ms": 5_000})
        self.tp = self._new_txn_producer()
        self.reader = self.c.consumer({"isolation.level": "read_committed"})
        self._record(2, "assign", keys=[("t", i) for i in range(PARTITIONS)])
        self.reader.assign([("t", i) for i in range(PARTITIONS)])
        self.crashed: set[int] = set()
        self.paused: set[int] = set()

    def _new_txn_producer(self) -> Any:
        tp = self.c.producer(
            {
                "transactional.id": "machine",
                "linger.ms": 0,
                "request.timeout.ms": 1_000,
                "delivery.timeout.ms": 5_000,
                "max.block.ms": 3_000,
                "transaction.timeout.ms": 10_000,
            }
        )
        self._call(tp.init_transactions)
        return tp

    # -- helpers ------------------------------------------------------------------------------

    def _value(self, tag: str) -> str:
        self.counter += 1
        return f"{tag}-{self.counter}"

    def _record(self, process: int, f: str, mops: tuple = (), *, keys: Any = None) -> None:
        op = self.history.invoke(process, f, (), self.c.now_ms, keys=keys or ())
        self.history.complete(op, "ok", mops, self.c.now_ms)

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, BaseException | None]:
        """Call a public entry point; an exception must be a named, documented one."""
        try:
            return fn(*args, **kwargs), None
        except INTERNAL as exc:  # pragma: no cover - the property's failure
            raise AssertionError(f"internal error escaped from {fn}: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            named = type(exc).__module__.startswith("engine") or type(exc) in ARGUMENT_ERRORS
            assert named, f"{fn} raised an undocumented {type(exc).__module__}.{type(exc).__name__}: {exc}"
            text = str(exc)
            assert text and "\n" not in text.strip(), f"{type(exc).__name__} without a one-line message: {text!r}"
            self.errors_seen.append(type(exc).__name__)
            return None, exc

    def _expect_rejected(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        _, exc = self._call(fn, *args, **kwargs)
        assert exc is not None, f"{fn} accepted bad input {args} {kwargs}"

    # -- valid calls --------------------------------------------------------------------------

    @rule(partition=st.sampled_from([0, 1]), key=st.sampled_from([None, "k1", b"k2"]))
    def send(self, partition: int, key: Any) -> None:
        value = self._value("s")
        box: list[Any] = []
        op = self.history.invoke(0, "send", (Send("t", partition, value),), self.c.now_ms)
        _, exc = self._call(
            self.p.produce, "t", value=value, key=key, partition=partition, on_delivery=lambda e, m: box.append((e, m))
        )
        if exc is None:
            self._call(self.p.flush, 10)
        if not box:
            self.history.complete(op, "fail" if exc is not None else "info", None, self.c.now_ms)
            return
        err, msg = box[0]
        if err is None:
            sent = Send(msg.topic(), msg.partition(), value, msg.offset() if msg.offset() >= 0 else None)
            self.history.complete(op, "ok", (sent,), self.c.now_ms)
        else:
            self.history.complete(op, "info", (Send(msg.topic(), msg.partition(), value),), self.c.now_ms)

    @rule(
        n=st.integers(1, 3),
        bad=st.sampled_from([None, "missing-topic", "bad-partition", "too-large"]),
        end=st.booleans(),
    )
    def transaction(self, n: int, bad: str | None, end: bool) -> None:
        tp = self.tp
        sends = [Send("t", i % PARTITIONS, self._value("x")) for i in range(n)]
        op = self.history.invoke(1, "txn", tuple(sends), self.c.now_ms)
        outcome = "info"
        _, exc = self._call(tp.begin_transaction)
        if exc is None:
            for s in sends:
                self._call(tp.produce, s.topic, value=s.value, partition=s.partition)
            if bad == "missing-topic":
                self._call(tp.produce, "missing", value="never")
            elif bad == "bad-partition":
                self._call(tp.produce, "t", value="never", partition=50)
            elif bad == "too-large":
                self._call(tp.produce, "t", value="x" * 2_000_000, partition=0)
            _, exc = self._call(tp.commit_transaction if end else tp.abort_transaction)
            if exc is None:
                outcome = "ok" if end else "fail"
            elif isinstance(exc, KafkaError) and not exc.fatal:
                _, exc2 = self._call(tp.abort_transaction)
                outcome = "fail" if exc2 is None else "info"
            assert not (bad and end and outcome == "ok"), "a transaction with a failed send committed"
        self.history.complete(op, outcome, None if outcome != "ok" else tuple(sends), self.c.now_ms)
        if outcome == "info":
            self.tp = self._new_txn_producer()  # an application restart: fences the old instance

    @rule()
    def poll(self) -> None:
        op = self.history.invoke(2, "poll", (), self.c.now_ms)
        msgs, _ = self._call(self.reader.consume, 100, 0.2)
        polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in (msgs or []) if m.error() is None]
        self.history.complete(op, "ok", polls, self.c.now_ms)

    @rule(ms=st.integers(1, 3_000))
    def advance(self, ms: int) -> None:
        self.c.run_for(ms)

    @rule(broker=st.sampled_from(BROKERS), kind=st.sampled_from(["crash", "restart", "pause", "resume"]))
    def fault(self, broker: int, kind: str) -> None:
        if kind == "crash" and len(self.crashed | self.paused) >= 1:
            return  # keep a majority up so the run can make progress
        _, exc = self._call(getattr(self.c, kind), broker)
        if exc is None:
            {"crash": self.crashed.add, "restart": self.crashed.discard}.get(kind, lambda b: None)(broker)
            {"pause": self.paused.add, "resume": self.paused.discard}.get(kind, lambda b: None)(broker)

    @rule()
    def heal(self) -> None:
        self._heal()

    # -- invalid calls ------------------------------------------------------------------------

    @rule(value=BAD_VALUES)
    def produce_a_bad_value(self, value: Any) -> None:
        self._expect_rejected(self.p.produce, "t", value=value)

    @rule(partition=BAD_PARTITIONS)
    def produce_to_a_bad_partition(self, partition: Any) -> None:
        self._expect_rejected(self.p.produce, "t", value=b"v", partition=partition)

    @rule(topic=BAD_TOPICS)
    def create_a_bad_topic(self, topic: Any) -> None:
        self._expect_rejected(self.c.create_topic, topic, 1)

    @rule(partitions=st.sampled_from([0, -1, "2", None]))
    def create_a_topic_with_bad_partitions(self, partitions: Any) -> None:
        self._expect_rejected(self.c.create_topic, self._value("topic"), partitions)

    @rule(node=BAD_NODES, kind=st.sampled_from(["crash", "restart", "pause", "resume", "isolate"]))
    def fault_an_unknown_node(self, node: Any, kind: str) -> None:
        self._expect_rejected(getattr(self.c, kind), node)

    @rule(
        view=st.sampled_from(["describe_partition", "producer_state", "dump_log", "dump_txn_index", "leader"]),
        where=st.sampled_from([("nope", 0), ("t", 7), ("t", -1)]),
    )
    def look_at_something_that_does_not_exist(self, view: str, where: tuple[str, int]) -> None:
        self._expect_rejected(getattr(self.c, view), *where)

    @rule()
    def describe_an_unknown_transactional_id(self) -> None:
        self._expect_rejected(self.c.transactions().describe, "no-such-id")

    @rule(arg=st.sampled_from([None, "t", [("t",)], [("t", "0")], [(3, 0)], [("t", -1)], [TopicPartition("t", 0)], 5]))
    def assign_garbage(self, arg: Any) -> None:
        c = self.c.consumer()
        _, exc = self._call(c.assign, arg)
        if isinstance(arg, list) and arg and isinstance(arg[0], TopicPartition):
            assert exc is None  # a valid assignment
        else:
            assert exc is not None, f"assign accepted {arg!r}"
        c.close()

    @rule(
        call=st.sampled_from(["begin_twice", "commit_outside", "abort_outside", "offsets_tuples", "plain_init"]),
    )
    def misuse_transactions(self, call: str) -> None:
        tp = self.tp
        if call == "begin_twice":
            if self._call(tp.begin_transaction)[1] is None:
                self._expect_rejected(tp.begin_transaction)
                self._call(tp.abort_transaction)
        elif call == "commit_outside":
            self._expect_rejected(tp.commit_transaction)
        elif call == "abort_outside":
            self._expect_rejected(tp.abort_transaction)
        elif call == "offsets_tuples":
            self._expect_rejected(tp.send_offsets_to_transaction, [("t", 0, 1)], "group")
        else:
            self._expect_rejected(self.p.init_transactions)

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def offsets_are_ordered_on_every_leader(self) -> None:
        """LSO <= HW <= LEO wherever a partition has a leader, whatever was called before."""
        if not hasattr(self, "c"):
            return
        STEPS_RUN[0] += 1
        for i in range(PARTITIONS):
            view, exc = self._call(self.c.describe_partition, "t", i)
            if exc is None:
                assert view.last_stable_offset <= view.high_watermark <= view.log_end_offset, str(view)

    def _heal(self) -> None:
        for b in sorted(self.crashed):
            self._call(self.c.restart, b)
        for b in sorted(self.paused):
            self._call(self.c.resume, b)
        self.crashed.clear()
        self.paused.clear()
        self.c.heal()

    def teardown(self) -> None:
        if not hasattr(self, "c"):
            return
        self._heal()
        self.c.run_for(5_000)
        fresh = self.c.producer({"linger.ms": 0})
        value = self._value("final")
        fresh.produce("t", value=value, partition=0)
        assert fresh.flush(30) == 0, "a fresh producer could not deliver after the run"
        reader = self.c.consumer({"isolation.level": "read_committed"})
        reader.assign([TopicPartition("t", i, 0) for i in range(PARTITIONS)])
        self._record(9, "assign", keys=[("t", i) for i in range(PARTITIONS)])
        seen: list[Any] = []
        for _ in range(20):
            msgs = reader.consume(1000, timeout=1.0)
            if not msgs:
                break
            polls = tuple(Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs)
            self._record(9, "poll", polls)
            seen.extend(m.value() for m in msgs)
        assert value in seen, "a fresh read_committed consumer did not read the fresh record"
        report = check_history(self.history.history())
        assert report.ok, f"the recorded history has anomalies: {[str(a) for a in report.forbidden][:3]}"


ApiMachine.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
test_public_api_survives_any_sequence_of_calls = ApiMachine.TestCase
