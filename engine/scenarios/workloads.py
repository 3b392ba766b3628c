"""Workloads: the client processes a scenario runs, each recording a Jepsen-style history.

Values are unique and self-describing: ``p<process>-t<txn>-s<seq>`` (producer process,
transaction number, sequence). A process is a generator that the harness advances one step at
a time; a step may block in a client call (``flush``, ``commit_transaction``), which runs the
simulation meanwhile.

Error classes for completions follow Jepsen's Kafka client (eos-checking §1.1): an error that
proves the write did not happen gives ``fail``; a timeout, a lost connection or
``NotLeaderOrFollowerException`` gives ``info`` (the write may have happened, KAFKA-13574).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.check.history import Poll, Send
from engine.client.message import TopicPartition
from engine.errors import (
    IllegalStateError,
    InvalidProducerEpochException,
    KafkaError,
    OutOfOrderSequenceException,
    ProducerFencedException,
    TimeoutException,
    TransactionAbortedException,
)
from engine.scenarios.harness import Run, Sleep

if TYPE_CHECKING:
    from engine.scenarios.harness import Process

#: Errors that prove a send was not written.
DEFINITE = (OutOfOrderSequenceException, InvalidProducerEpochException, ProducerFencedException,
            TransactionAbortedException)


def completion_type(err: KafkaError | None) -> str:
    """Map a delivery error to ok / fail / info."""
    if err is None:
        return "ok"
    return "fail" if isinstance(err, DEFINITE) else "info"


class Workload:
    """Base class: ``start`` spawns processes, ``finish`` runs after liveness, ``judge`` adds findings."""

    def start(self, run: Run) -> None:
        """Spawn the workload's processes."""

    def finish(self, run: Run) -> None:
        """Let the processes end (called after the liveness phase)."""

    def judge(self, run: Run) -> list[str]:
        """Return scenario-specific findings (``kind: detail``); none by default."""
        return []


def _reader(run: Run, pid: int, *, isolation: str = "read_committed", pause_ms: int = 50) -> Process:
    """A process that polls every key and records each poll."""
    consumer = run.cluster.consumer(run.consumer_config({"isolation.level": isolation}))
    keys = run.keys()
    op = run.history.invoke(pid, "assign", (), run.now_ms, keys=keys)
    consumer.assign(keys)
    run.history.complete(op, "ok", (), run.now_ms)
    while not run.stopping:
        op = run.history.invoke(pid, "poll", (), run.now_ms)
        msgs = consumer.consume(200, timeout=0.05)
        polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs
                 if isinstance(m.value(), str) and not m.value().startswith("sentinel-")]
        run.history.complete(op, "ok", polls, run.now_ms)
        yield Sleep(pause_ms)


@dataclasses.dataclass(frozen=True)
class IdempotentSends(Workload):
    """Producers send unique values, one send op at a time per process; readers poll.

    ``processes_per_producer`` processes share one producer, so up to that many batches of one
    producer are in flight at once (the dedup window's reason to exist).
    """

    producers: int = 1
    processes_per_producer: int = 4
    sends_per_process: int = 40
    readers: int = 1
    producer_config: tuple[tuple[str, Any], ...] = ()
    reader_isolation: str = "read_committed"

    def start(self, run: Run) -> None:
        """Create the producers and spawn senders and readers."""
        for _ in range(self.producers):
            base = {"linger.ms": 0, "request.timeout.ms": 1_500, "retry.backoff.ms": 20, "delivery.timeout.ms": 30_000}
            base.update(dict(self.producer_config))
            producer = run.cluster.producer(run.producer_config(base))
            for _ in range(self.processes_per_producer):
                run.spawn(lambda r, pid, producer=producer: self._sender(r, pid, producer))
        for _ in range(self.readers):
            run.spawn(lambda r, pid: _reader(r, pid, isolation=self.reader_isolation))

    def _sender(self, run: Run, pid: int, producer: Any) -> Process:
        keys = run.keys()
        for seq in range(self.sends_per_process):
            if run.stopping:
                return
            topic, part = keys[run.rng.randrange(len(keys))]
            value = f"p{pid}-t0-s{seq}"
            op = run.history.invoke(pid, "send", (Send(topic, part, value),), run.now_ms)
            box: list[Any] = []
            try:
                producer.produce(topic, value=value, partition=part, on_delivery=lambda e, m: box.append((e, m)))
            except (KafkaError, IllegalStateError) as exc:
                run.history.complete(op, "fail", None, run.now_ms, error=type(exc).__name__)
                return
            while not box:
                producer.poll(0)
                if not producer.is_up:
                    run.history.complete(op, "info", None, run.now_ms, error="client crashed")
                    return
                yield Sleep(1)
            err, msg = box[0]
            kind = completion_type(err)
            offset = msg.offset() if err is None and msg.offset() >= 0 else None
            run.history.complete(op, kind, (Send(topic, part, value, offset),), run.now_ms,
                                 error=None if err is None else type(err).__name__)
            yield Sleep(run.rng.randint(0, 5))


@dataclasses.dataclass(frozen=True)
class Transactions(Workload):
    """Transactional processes: each op is one transaction of sends (and optional polls).

    Each process owns a transactional producer (``transactional.id`` = ``txn-<pid>``) and a
    read_committed consumer over every key. With probability ``abort_p`` the process aborts on
    purpose; after any abort it rewinds its consumer to where the transaction's polls began
    (the workload flag ``no-rewind`` removes that, mutant M13).
    """

    processes: int = 2
    txns_per_process: int = 20
    sends_per_txn: tuple[int, int] = (1, 4)
    poll_p: float = 0.3
    abort_p: float = 0.1
    readers: int = 1
    producer_config: tuple[tuple[str, Any], ...] = ()
    transaction_timeout_ms: int = 10_000

    def start(self, run: Run) -> None:
        """Spawn the transactional processes and readers."""
        for _ in range(self.processes):
            run.spawn(self._process)
        for _ in range(self.readers):
            run.spawn(lambda r, pid: _reader(r, pid))

    def _new_producer(self, run: Run, txn_id: str) -> Any:
        base = {"transactional.id": txn_id, "linger.ms": 0, "request.timeout.ms": 1_500, "retry.backoff.ms": 20,
                "transaction.timeout.ms": self.transaction_timeout_ms, "delivery.timeout.ms": 30_000,
                "max.block.ms": 20_000}
        base.update(dict(self.producer_config))
        producer = run.cluster.producer(run.producer_config(base))
        producer.init_transactions()
        return producer

    def _process(self, run: Run, pid: int) -> Process:
        txn_id = f"txn-{pid}"
        try:
            producer = self._new_producer(run, txn_id)
        except KafkaError:
            return
        consumer = run.cluster.consumer(run.consumer_config({"isolation.level": "read_committed"}))
        keys = run.keys()
        consumer.assign(keys)
        for t in range(self.txns_per_process):
            if run.stopping:
                return
            yield Sleep(run.rng.randint(0, 10))
            n = run.rng.randint(*self.sends_per_txn)
            sends = []
            for s in range(n):
                topic, part = keys[run.rng.randrange(len(keys))]
                sends.append(Send(topic, part, f"p{pid}-t{t}-s{s}"))
            do_poll = run.rng.random() < self.poll_p
            abort = run.rng.random() < self.abort_p
            op = run.history.invoke(pid, "txn", tuple(sends), run.now_ms)
            positions = {k: consumer.position([k])[0].offset for k in keys}
            reports: dict[str, Any] = {}
            polls: list[Poll] = []
            outcome, error = "ok", None
            try:
                producer.begin_transaction()
                for snd in sends:
                    producer.produce(snd.topic, value=snd.value, partition=snd.partition,
                                     on_delivery=lambda e, m: reports.__setitem__(m.value(), (e, m)))
                    yield
                if do_poll:
                    for m in consumer.consume(50, timeout=0.02):
                        if isinstance(m.value(), str) and not m.value().startswith("sentinel-"):
                            polls.append(Poll(m.topic(), m.partition(), m.offset(), m.value()))
                if abort:
                    producer.abort_transaction()
                    outcome = "fail"
                else:
                    producer.commit_transaction()
            except (ProducerFencedException, OutOfOrderSequenceException) as exc:
                outcome, error = ("info" if not abort else "fail"), type(exc).__name__
                producer = None
            except TimeoutException as exc:
                outcome, error = "info", type(exc).__name__
                producer = None
            except (KafkaError, IllegalStateError) as exc:
                error = type(exc).__name__
                try:
                    producer.abort_transaction()
                    outcome = "fail"
                except (KafkaError, IllegalStateError):
                    outcome = "info"
                    producer = None
            done_sends = []
            for snd in sends:
                rep = reports.get(snd.value)
                off = rep[1].offset() if rep is not None and rep[0] is None and rep[1].offset() >= 0 else None
                done_sends.append(Send(snd.topic, snd.partition, snd.value, off if outcome == "ok" else None))
            run.history.complete(op, outcome, (*done_sends, *polls), run.now_ms, error=error)
            if outcome != "ok" and not run.flag("no-rewind"):
                for k, pos in positions.items():
                    if pos >= 0:
                        consumer.seek(TopicPartition(k[0], k[1], pos))
            if producer is None:
                # The producer is unusable (fenced, or its outcome unknown): a new instance takes
                # the same transactional id, as an application restart would.
                try:
                    producer = self._new_producer(run, txn_id)
                except KafkaError:
                    return
