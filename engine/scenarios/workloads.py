"""Workloads: the client processes a scenario runs, each recording a Jepsen-style history.

Values are unique and self-describing: ``p<process>-t<txn>-s<seq>`` (producer process,
transaction number, sequence). A process is a generator that the harness advances one step at
a time; a step may block in a client call (``flush``, ``commit_transaction``), which runs the
simulation meanwhile.

Error classes for completions follow Jepsen's Kafka client (eos-checking §1.1): an error that
proves the write did not happen gives ``fail``; a timeout, a lost connection or
``NotLeaderOrFollowerException`` gives ``info`` (the write may have happened, KAFKA-13574).

The copier workloads (Kafka's TransactionalMessageCopier and a Streams-style aggregate) are in
``copier.py``; the KIP-360 zombie race is in ``zombie_race.py``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from engine.check.history import Poll, Send
from engine.client.message import OFFSET_BEGINNING, TopicPartition
from engine.errors import (
    IllegalStateError,
    InvalidProducerEpochException,
    KafkaError,
    OutOfOrderSequenceException,
    ProducerFencedException,
    TimeoutException,
    TransactionAbortedException,
)
from engine.scenarios.harness import TXN_PRODUCER_TIMING, Process, Run, Sleep, is_sentinel
from engine.scenarios.supervisor import ReportWaits, await_report
from engine.sim.rng import randbelow

#: How often a new transactional instance calls init_transactions() before the process gives up.
INIT_ATTEMPTS = 5
#: The ways a send is made to fail in :class:`Transactions` with ``bad_send_p`` (see its docstring).
BAD_SENDS = ("unknown-topic", "bad-partition", "too-large")
#: ``max.request.size`` for workloads with bad sends: a "too-large" value is longer.
BAD_SEND_MAX_REQUEST_SIZE = 64

#: Errors that prove a send was not written.
DEFINITE = (
    OutOfOrderSequenceException,
    InvalidProducerEpochException,
    ProducerFencedException,
    TransactionAbortedException,
)


def abort_after_error(producer: Any) -> bool:
    """Abort after an abortable error; return False when even the abort failed (outcome unknown)."""
    try:
        producer.abort_transaction()
    except (KafkaError, IllegalStateError):
        return False
    return True


def seed(run: Run, config: dict[str, Any], records: Iterable[tuple[str, str, int]]) -> list[tuple[str, int, int, str]]:
    """Produce ``records`` (topic, value, partition) with a plain producer of ``config`` and flush.

    Return the delivered ones as sorted ``(topic, partition, offset, value)``: a workload's input.
    """
    seeder = run.cluster.producer(config)
    inputs: list[tuple[str, int, int, str]] = []

    def seeded(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            inputs.append((msg.topic(), msg.partition(), msg.offset(), msg.value()))

    for topic, value, partition in records:
        seeder.produce(topic, value=value, partition=partition, on_delivery=seeded)
    seeder.flush()
    return sorted(inputs)


def loop_clients(run: Run, name: str, gen: int, group_id: str, consumer_config: dict[str, Any]) -> tuple[Any, Any]:
    """Return a consume-transform-produce loop's clients, neither yet assigned: generation ``gen`` of them.

    The producer is initialised with ``transactional.id`` ``name`` (:data:`TXN_PRODUCER_TIMING`); the
    consumer reads read_committed in the group ``group_id``, with ``consumer_config`` on top.
    """
    producer = run.cluster.producer(
        run.producer_config(
            {"transactional.id": name, "client.id": f"{name}-producer-{gen}", **dict(TXN_PRODUCER_TIMING)}
        )
    )
    producer.init_transactions()
    consumer = run.cluster.consumer(
        run.consumer_config(
            {
                "isolation.level": "read_committed",
                "group.id": group_id,
                "client.id": f"{name}-consumer-{gen}",
                **consumer_config,
            }
        )
    )
    return producer, consumer


def loop_instances(
    run: Run,
    proc: int,
    start: Callable[[int], tuple[Any, Any]],
    loop: Callable[[int, Any, Any], Process],
) -> Process:
    """Run instances of a consume-transform-produce loop until one returns ``"done"``.

    ``start(gen)`` makes generation ``gen``'s producer and consumer (an error there: wait, try the
    next generation); ``loop(proc, producer, consumer)`` runs them. An instance that stops without
    being done leaves the group and is replaced by a new one, a new process as in Jepsen.
    """
    gen = 0
    while True:
        try:
            producer, consumer = start(gen)
        except (KafkaError, IllegalStateError):
            yield Sleep(200)
            gen += 1
            continue
        result = yield from loop(proc, producer, consumer)
        if consumer.is_up:
            with contextlib.suppress(KafkaError, IllegalStateError):
                consumer.close()  # leave the group, as a restarting application's old instance would
        if result == "done":
            return
        gen += 1
        proc = run.new_process()


def produce_send(producer: Any, send: Send, reports: dict[str, Any]) -> None:
    """Produce ``send``; its delivery report lands in ``reports`` as ``(error, message)`` under its value."""
    producer.produce(
        send.topic,
        value=send.value,
        partition=send.partition,
        on_delivery=lambda e, m: reports.__setitem__(m.value(), (e, m)),
    )


def delivered_sends(sends: list[Send], reports: dict[str, Any], outcome: str) -> list[Send]:
    """Return ``sends`` with the offsets their delivery reports gave, when the transaction committed (``ok``)."""
    done = []
    for s in sends:
        rep = reports.get(s.value)
        off = rep[1].offset() if outcome == "ok" and rep is not None and rep[0] is None else None
        done.append(Send(s.topic, s.partition, s.value, off if off is not None and off >= 0 else None))
    return done


def completion_type(err: KafkaError | None) -> str:
    """Map a delivery error to ok / fail / info."""
    if err is None:
        return "ok"
    return "fail" if isinstance(err, DEFINITE) else "info"


def read_to_end(consumer: Any, keys: list[tuple[str, int]], *, timeout_ms: int = 60_000) -> list[Any]:
    """Read ``keys`` from the start to the end offsets they have now; return the records.

    The end is each partition's "latest" as ListOffsets answers it (the LSO for a read_committed
    consumer), asked first; then records are read until every position has reached it. This is
    how Kafka Streams restores a store from its changelog: an empty poll proves nothing (a leader
    may be moving, a fetch may be waiting on a crashed broker), only the position does. Raises
    ``TimeoutException`` when the end is not reached within ``timeout_ms`` of simulated time.
    """
    world = consumer.world
    deadline = world.now_ms + timeout_ms
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in keys])
    ends: dict[tuple[str, int], int] = {}
    for key in keys:
        while key not in ends:
            left = deadline - world.now_ms
            if left <= 0:
                raise TimeoutException(f"read_to_end: no end offset for {key[0]}-{key[1]} in {timeout_ms} ms")
            with contextlib.suppress(TimeoutException):
                ends[key] = consumer.get_watermark_offsets(TopicPartition(*key), timeout=min(left, 5_000) / 1000)[1]
    records: list[Any] = []
    while True:
        behind = [tp for tp in consumer.position(keys) if tp.offset < ends[(tp.topic, tp.partition)]]
        if not behind:
            return records
        if world.now_ms >= deadline:
            where = ", ".join(f"{tp.topic}-{tp.partition} at {tp.offset}" for tp in behind)
            raise TimeoutException(f"read_to_end: not at the end after {timeout_ms} ms ({where})")
        records.extend(m for m in consumer.consume(1_000, timeout=0.2) if m.error() is None)


class Workload:
    """Base class: ``start`` spawns processes, ``finish`` runs after liveness, ``judge`` adds findings."""

    def start(self, run: Run) -> None:
        """Spawn the workload's processes."""

    def finish(self, run: Run) -> None:
        """Let the processes end (called after the liveness phase)."""

    def judge(self, run: Run) -> list[str]:
        """Return scenario-specific findings (``kind: detail``); none by default."""
        return []

    def cannot_show(self, run: Run) -> str:
        """For a positive control's workload: why this run could not show its anomaly ("" if it could).

        Asked only when the anomaly did not show. A reason turns the run into SKIP with that
        reason; without one the control missed its anomaly, which is a FAIL.
        """
        return ""


def reader_process(run: Run, proc: int, *, isolation: str = "read_committed", pause_ms: int = 50) -> Process:
    """A process that polls every key and records each poll."""
    consumer = run.cluster.consumer(run.consumer_config({"isolation.level": isolation}))
    keys = run.topic_partitions()
    op = run.history.invoke(proc, "assign", (), run.now_ms, keys=keys)
    consumer.assign(keys)
    run.history.complete(op, "ok", (), run.now_ms)
    while not run.stopping:
        op = run.history.invoke(proc, "poll", (), run.now_ms)
        msgs = consumer.consume(200, timeout=0.05)
        polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs if not is_sentinel(m.value())]
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
            waits = ReportWaits(run, producer)
            for _ in range(self.processes_per_producer):
                run.spawn(lambda r, proc, producer=producer, waits=waits: self._sender(r, proc, producer, waits))
        for _ in range(self.readers):
            run.spawn(lambda r, proc: reader_process(r, proc, isolation=self.reader_isolation))

    def _sender(self, run: Run, proc: int, producer: Any, waits: ReportWaits) -> Process:
        """Send ``sends_per_process`` values one at a time, each to a key drawn uniformly; pause 0-5 ms between.

        After each send the process waits for its delivery report: ``waits`` wakes it when the
        report is queued (:func:`~engine.scenarios.supervisor.await_report`).
        """
        keys = run.topic_partitions()
        rng = run.rng
        for seq in range(self.sends_per_process):
            if run.stopping:
                return
            topic, part = keys[randbelow(rng, len(keys))]  # rng.randrange(len(keys)), one call cheaper
            value = f"p{proc}-t0-s{seq}"
            op = run.history.invoke(proc, "send", (Send(topic, part, value),), run.now_ms)
            box: list[Any] = []

            def on_delivery(e: Any, m: Any, box: list[Any] = box) -> None:
                box.append((e, m))

            waits.expect(on_delivery, proc)
            try:
                producer.produce(topic, value=value, partition=part, on_delivery=on_delivery)
            except (KafkaError, IllegalStateError) as exc:
                waits.forget(on_delivery)
                run.history.complete(op, "fail", None, run.now_ms, error=type(exc).__name__)
                return
            if not (yield from await_report(producer, box)):
                run.history.complete(op, "info", None, run.now_ms, error="client crashed")
                return
            err, msg = box[0]
            kind = completion_type(err)
            offset = msg.offset() if err is None and msg.offset() >= 0 else None
            run.history.complete(
                op,
                kind,
                (Send(topic, part, value, offset),),
                run.now_ms,
                error=None if err is None else type(err).__name__,
            )
            yield Sleep(randbelow(rng, 6))  # rng.randint(0, 5)


@dataclasses.dataclass(frozen=True)
class Transactions(Workload):
    """Transactional processes: each op is one transaction of sends (and optional polls).

    Each process owns a transactional producer (``transactional.id`` = ``txn-<process>``) and a
    read_committed consumer over every key. With probability ``abort_p`` the process aborts on
    purpose; after any abort it rewinds its consumer to where the transaction's polls began
    (the workload flag ``no-rewind`` removes that, mutant M13).

    With ``bad_send_p`` a transaction also carries one send that must fail (a topic that does
    not exist, a partition number past the topic's count, or a record over ``max.request.size``)
    among its good sends. The transaction then cannot commit: the producer raises the send's
    error, the process aborts, and none of the transaction's records may ever be read (mutant
    M17 commits anyway).
    """

    processes: int = 2
    txns_per_process: int = 20
    sends_per_txn: tuple[int, int] = (1, 4)
    poll_p: float = 0.3
    abort_p: float = 0.1
    readers: int = 1
    producer_config: tuple[tuple[str, Any], ...] = ()
    transaction_timeout_ms: int = 10_000
    bad_send_p: float = 0.0

    def start(self, run: Run) -> None:
        """Spawn the transactional processes and readers."""
        for _ in range(self.processes):
            run.spawn(self._process)
        for _ in range(self.readers):
            run.spawn(lambda r, proc: reader_process(r, proc))

    def _new_producer(self, run: Run, txn_id: str) -> Any:
        base = {
            "transactional.id": txn_id,
            "linger.ms": 0,
            "request.timeout.ms": 1_500,
            "retry.backoff.ms": 20,
            "transaction.timeout.ms": self.transaction_timeout_ms,
            "delivery.timeout.ms": 30_000,
            "max.block.ms": 20_000,
        }
        base.update(dict(self.producer_config))
        producer = run.cluster.producer(run.producer_config(base))
        for _ in range(INIT_ATTEMPTS - 1):
            try:
                producer.init_transactions()
                return producer
            except TimeoutException:
                # the coordinator may still be finishing the last instance's transaction (its markers
                # wait for a partition to recover): a timed-out init_transactions() may be called
                # again, and an application restarting after a crash keeps calling it
                continue
        producer.init_transactions()
        return producer

    def _process(self, run: Run, proc: int) -> Process:
        txn_id = f"txn-{proc}"
        try:
            producer = self._new_producer(run, txn_id)
        except (KafkaError, IllegalStateError):
            return
        yield from self._txn_loop(run, proc, txn_id, producer)

    def _consumer(self, run: Run) -> Any:
        """Return a read_committed consumer assigned every partition (a process's input)."""
        consumer = run.cluster.consumer(run.consumer_config({"isolation.level": "read_committed"}))
        consumer.assign(run.topic_partitions())
        return consumer

    def _txn_done(self, run: Run, producer: Any, invoke_ms: int, outcome: str, index: int) -> None:
        """Called after each transaction op completes (a hook for workloads that judge instances)."""

    def _txn_loop(
        self,
        run: Run,
        proc: int,
        txn_id: str,
        producer: Any,
        *,
        first_txn: int = 0,
        last_txn: int | None = None,
        consumer: Any = None,
    ) -> Process:
        """Run transactions ``first_txn`` to ``last_txn`` (default: all), replacing an unusable producer.

        Return the producer in use at the end (``None`` when the run stopped or no new one started).
        """
        if consumer is None:
            consumer = self._consumer(run)
        keys = run.topic_partitions()
        for t in range(first_txn, self.txns_per_process if last_txn is None else last_txn):
            if run.stopping:
                return None
            yield Sleep(run.rng.randint(0, 10))
            n = run.rng.randint(*self.sends_per_txn)
            sends = []
            for s in range(n):
                topic, part = keys[run.rng.randrange(len(keys))]
                sends.append(Send(topic, part, f"p{proc}-t{t}-s{s}"))
            if self.bad_send_p and run.rng.random() < self.bad_send_p:
                sends.insert(run.rng.randrange(len(sends) + 1), _bad_send(run, keys, f"p{proc}-t{t}-bad"))
            do_poll = run.rng.random() < self.poll_p
            abort = run.rng.random() < self.abort_p
            instance, invoke_ms = producer, run.now_ms
            op = run.history.invoke(proc, "txn", tuple(sends), run.now_ms)
            positions = {k: consumer.position([k])[0].offset for k in keys}
            reports: dict[str, Any] = {}
            polls: list[Poll] = []
            outcome, error = "ok", None
            try:
                producer.begin_transaction()
                for snd in sends:
                    produce_send(producer, snd, reports)
                    yield
                if do_poll:
                    polls.extend(
                        Poll(m.topic(), m.partition(), m.offset(), m.value())
                        for m in consumer.consume(50, timeout=0.02)
                        if not is_sentinel(m.value())
                    )
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
                outcome = "fail" if abort_after_error(producer) else "info"
                if outcome == "info":
                    producer = None
            done_sends = delivered_sends(sends, reports, outcome)
            done = run.history.complete(op, outcome, (*done_sends, *polls), run.now_ms, error=error)
            self._txn_done(run, instance, invoke_ms, outcome, done.index)
            if outcome != "ok" and not run.flag("no-rewind"):
                for k, pos in positions.items():
                    if pos >= 0:
                        consumer.seek(TopicPartition(k[0], k[1], pos))
            if producer is None:
                # The producer is unusable (fenced, or its outcome unknown): a new instance takes
                # the same transactional id, as an application restart would.
                try:
                    producer = self._new_producer(run, txn_id)
                except (KafkaError, IllegalStateError):
                    return None
        return producer


def _bad_send(run: Run, keys: list[tuple[str, int]], value: str) -> Send:
    """Return a send that must fail for good, of a kind drawn from the run's stream."""
    kind = BAD_SENDS[run.rng.randrange(len(BAD_SENDS))]
    topic, part = keys[run.rng.randrange(len(keys))]
    if kind == "unknown-topic":
        return Send("no-such-topic", 0, f"{value}-unknown-topic")
    if kind == "bad-partition":
        return Send(topic, 99, f"{value}-bad-partition")
    return Send(topic, part, f"{value}-too-large-" + "x" * BAD_SEND_MAX_REQUEST_SIZE)
