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

import contextlib
import dataclasses
from typing import TYPE_CHECKING, Any, NamedTuple

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
from engine.scenarios.harness import Run, Sleep, is_sentinel
from engine.sim.node import NodeStatus

if TYPE_CHECKING:
    from engine.scenarios.harness import Process

#: Errors that prove a send was not written.
DEFINITE = (
    OutOfOrderSequenceException,
    InvalidProducerEpochException,
    ProducerFencedException,
    TransactionAbortedException,
)


def _abort_after_error(producer: Any) -> bool:
    """Abort after an abortable error; return False when even the abort failed (outcome unknown)."""
    try:
        producer.abort_transaction()
    except (KafkaError, IllegalStateError):
        return False
    return True


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
    keys = run.topic_partitions()
    op = run.history.invoke(pid, "assign", (), run.now_ms, keys=keys)
    consumer.assign(keys)
    run.history.complete(op, "ok", (), run.now_ms)
    while not run.stopping:
        op = run.history.invoke(pid, "poll", (), run.now_ms)
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
            for _ in range(self.processes_per_producer):
                run.spawn(lambda r, pid, producer=producer: self._sender(r, pid, producer))
        for _ in range(self.readers):
            run.spawn(lambda r, pid: _reader(r, pid, isolation=self.reader_isolation))

    def _sender(self, run: Run, pid: int, producer: Any) -> Process:
        keys = run.topic_partitions()
        for seq in range(self.sends_per_process):
            if run.stopping:
                return
            topic, part = keys[run.rng.randrange(len(keys))]
            value = f"p{pid}-t0-s{seq}"
            op = run.history.invoke(pid, "send", (Send(topic, part, value),), run.now_ms)
            box: list[Any] = []
            try:
                producer.produce(
                    topic, value=value, partition=part, on_delivery=lambda e, m, box=box: box.append((e, m))
                )
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
            run.history.complete(
                op,
                kind,
                (Send(topic, part, value, offset),),
                run.now_ms,
                error=None if err is None else type(err).__name__,
            )
            yield Sleep(run.rng.randint(0, 5))


@dataclasses.dataclass(frozen=True)
class Transactions(Workload):
    """Transactional processes: each op is one transaction of sends (and optional polls).

    Each process owns a transactional producer (``transactional.id`` = ``txn-<pid>``) and a
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
            run.spawn(lambda r, pid: _reader(r, pid))

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

    def _process(self, run: Run, pid: int) -> Process:
        txn_id = f"txn-{pid}"
        try:
            producer = self._new_producer(run, txn_id)
        except (KafkaError, IllegalStateError):
            return
        yield from self._txn_loop(run, pid, txn_id, producer)

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
        pid: int,
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
                sends.append(Send(topic, part, f"p{pid}-t{t}-s{s}"))
            if self.bad_send_p and run.rng.random() < self.bad_send_p:
                sends.insert(run.rng.randrange(len(sends) + 1), _bad_send(run, keys, f"p{pid}-t{t}-bad"))
            do_poll = run.rng.random() < self.poll_p
            abort = run.rng.random() < self.abort_p
            instance, invoke_ms = producer, run.now_ms
            op = run.history.invoke(pid, "txn", tuple(sends), run.now_ms)
            positions = {k: consumer.position([k])[0].offset for k in keys}
            reports: dict[str, Any] = {}
            polls: list[Poll] = []
            outcome, error = "ok", None
            try:
                producer.begin_transaction()
                for snd in sends:
                    producer.produce(
                        snd.topic,
                        value=snd.value,
                        partition=snd.partition,
                        on_delivery=lambda e, m, reports=reports: reports.__setitem__(m.value(), (e, m)),
                    )
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
                outcome = "fail" if _abort_after_error(producer) else "info"
                if outcome == "info":
                    producer = None
            done_sends = []
            for snd in sends:
                rep = reports.get(snd.value)
                off = rep[1].offset() if rep is not None and rep[0] is None and rep[1].offset() >= 0 else None
                done_sends.append(Send(snd.topic, snd.partition, snd.value, off if outcome == "ok" else None))
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


class _Instance(NamedTuple):
    """A producer instance of a transactional.id, as init_transactions() left it."""

    name: str
    producer_id: int
    epoch: int
    init_ms: int
    order: int

    def is_newer_than(self, other: _Instance) -> bool:
        """Return True when this instance fenced ``other`` (a higher epoch, or a later init on a new id)."""
        if self.name == other.name:
            return False
        if self.producer_id == other.producer_id:
            return self.epoch > other.epoch
        return self.order > other.order


@dataclasses.dataclass(frozen=True)
class ZombieAbortRace(Transactions):
    """A fenced instance's abort path races a new instance of its transactional.id (KIP-360).

    Process 0 starts the first instance of ``shared`` and opens a transaction with a good send
    and a record over ``max.request.size``. That failed send makes the abort bump the epoch, as
    Kafka's client does: ``EndTxn(ABORT)``, then ``InitProducerId`` naming the instance's producer
    id and epoch. The network holds that ``InitProducerId`` while process 1 starts a second
    instance (``init_transactions``), then lets it go. Kafka refuses it as fenced: its epoch is
    neither the current one nor the last one, so the first instance is a zombie and can never
    commit again. Mutant M18 bumps the epoch for it instead: the zombie comes back to life and
    the rightful instance is fenced.

    Both processes then run ordinary transactions (a fenced instance is replaced, as an
    application restart would). The judge reports ``zombie-commit`` for every transaction that
    an instance committed after a newer instance of the same transactional.id had finished
    ``init_transactions`` (newer: a higher epoch on the same producer id).
    """

    processes: int = 2
    shared_id: str = "shared"
    warmup_txns: int = 3
    second_start_delay_ms: int = 300

    def start(self, run: Run) -> None:
        """Spawn the racing instances and a reader."""
        run.extra["instances"] = []
        run.extra["instance_ops"] = []
        run.spawn(self._first)
        run.spawn(self._second)
        for _ in range(self.readers):
            run.spawn(lambda r, pid: _reader(r, pid))

    def _new_producer(self, run: Run, txn_id: str) -> Any:
        producer = super()._new_producer(run, txn_id)
        instances = run.extra["instances"]
        instances.append(
            _Instance(producer.name, producer.producer_id, producer.producer_epoch, run.now_ms, len(instances))
        )
        return producer

    def _txn_done(self, run: Run, producer: Any, invoke_ms: int, outcome: str, index: int) -> None:
        run.extra["instance_ops"].append((producer.name, invoke_ms, outcome, index))

    def _first(self, run: Run, pid: int) -> Process:
        try:
            producer = self._new_producer(run, self.shared_id)
        except (KafkaError, IllegalStateError):
            return
        consumer = self._consumer(run)
        producer = yield from self._txn_loop(
            run, pid, self.shared_id, producer, last_txn=self.warmup_txns, consumer=consumer
        )
        if producer is None:
            run.extra["race_held"] = True  # no producer left after the warm-up: no race on this seed
            return
        keys = run.topic_partitions()
        topic, part = keys[run.rng.randrange(len(keys))]
        good = Send(topic, part, f"p{pid}-race-s0")
        bad = Send(topic, part, f"p{pid}-race-too-large-" + "x" * BAD_SEND_MAX_REQUEST_SIZE)
        invoke_ms = run.now_ms
        op = run.history.invoke(pid, "txn", (good, bad), run.now_ms)
        outcome, error = "fail", None
        rule = None
        try:
            producer.begin_transaction()
            producer.produce(good.topic, value=good.value, partition=good.partition)
            # delivered first: by then the previous commit has written its markers (an EndTxn that
            # meets a PrepareCommit with the current epoch is fenced under version 2, as in Kafka)
            producer.flush()
            producer.produce(bad.topic, value=bad.value, partition=bad.partition)
            rule = run.cluster.add_rule("hold", body_type="InitProducerIdRequest", src=producer.name, count=1)
            with contextlib.suppress(TimeoutException):
                # EndTxn(ABORT) is answered; the epoch bump's InitProducerId stays on the wire
                producer.abort_transaction(timeout=0.3)
        except (KafkaError, IllegalStateError) as exc:
            outcome, error = "info", type(exc).__name__
            producer = None
        run.extra["race_held"] = True
        while producer is not None and "race_second_ready" not in run.extra and not run.stopping:
            yield Sleep(10)
        if rule is not None:
            run.cluster.release(rule)
        try:
            if producer is not None:
                producer.abort_transaction()  # the same call again: wait for the epoch bump's answer
        except (KafkaError, IllegalStateError) as exc:
            outcome, error = "info", type(exc).__name__
            producer = None
        done = run.history.complete(
            op, outcome, (Send(good.topic, good.partition, good.value, None),), run.now_ms, error=error
        )
        if producer is None:
            return  # fenced: the zombie learns it and exits
        self._txn_done(run, producer, invoke_ms, outcome, done.index)
        yield from self._txn_loop(run, pid, self.shared_id, producer, first_txn=self.warmup_txns, consumer=consumer)

    def _second(self, run: Run, pid: int) -> Process:
        while "race_held" not in run.extra and not run.stopping:
            yield Sleep(10)
        try:
            producer = self._new_producer(run, self.shared_id)
        except (KafkaError, IllegalStateError):
            run.extra["race_second_ready"] = True
            return
        run.extra["race_second_ready"] = True
        # the new instance takes a moment before its first transaction (it restores its state, say):
        # time in which a zombie that won its epoch back would commit
        yield Sleep(self.second_start_delay_ms)
        yield from self._txn_loop(run, pid, self.shared_id, producer)

    def judge(self, run: Run) -> list[str]:
        """Report transactions committed by an instance after a newer one finished init_transactions."""
        instances: list[_Instance] = run.extra.get("instances", [])
        by_name = {i.name: i for i in instances}
        out = []
        for name, invoke_ms, outcome, index in run.extra.get("instance_ops", []):
            mine = by_name.get(name)
            if outcome != "ok" or mine is None:
                continue
            newer = [o for o in instances if o.is_newer_than(mine) and o.init_ms <= invoke_ms]
            if newer:
                o = newer[0]
                out.append(
                    f"zombie-commit: op {index} of {name} (pid {mine.producer_id} epoch {mine.epoch}) began at "
                    f"{invoke_ms} ms and committed, but {o.name} (pid {o.producer_id} epoch {o.epoch}) had "
                    f"initialised at {o.init_ms} ms"
                )
        return out


#: How often a new transactional instance calls init_transactions() before the process gives up.
INIT_ATTEMPTS = 5
#: The ways a send is made to fail in :class:`Transactions` with ``bad_send_p`` (see its docstring).
BAD_SENDS = ("unknown-topic", "bad-partition", "too-large")
#: ``max.request.size`` for workloads with bad sends: a "too-large" value is longer.
BAD_SEND_MAX_REQUEST_SIZE = 64


def _resume_if_paused(run: Run, node: Any) -> None:
    if node.status is NodeStatus.PAUSED:
        run.world.resume(node.name)


def _bad_send(run: Run, keys: list[tuple[str, int]], value: str) -> Send:
    """Return a send that must fail for good, of a kind drawn from the run's stream."""
    kind = BAD_SENDS[run.rng.randrange(len(BAD_SENDS))]
    topic, part = keys[run.rng.randrange(len(keys))]
    if kind == "unknown-topic":
        return Send("no-such-topic", 0, f"{value}-unknown-topic")
    if kind == "bad-partition":
        return Send(topic, 99, f"{value}-bad-partition")
    return Send(topic, part, f"{value}-too-large-" + "x" * BAD_SEND_MAX_REQUEST_SIZE)


@dataclasses.dataclass(frozen=True)
class Copier(Workload):
    """Kafka's TransactionalMessageCopier: read ``in``, write each record to ``out`` with its lineage.

    Input is seeded first by an idempotent producer. Each copier owns a transactional producer
    (``transactional.id = copier-<slot>``) and a read_committed consumer in group ``copiers``:
    with ``group_mode`` all copiers ``subscribe`` (rebalances move partitions), otherwise copier
    ``i`` is assigned input partition ``i``. A transaction consumes up to ``txn_size`` records,
    writes ``<topic>:<partition>:<offset>`` to ``out`` (partition = input offset mod the output
    partitions), sends the consumer offsets to the transaction and commits; with ``abort_p`` it
    aborts on purpose and seeks back to the committed offsets. With ``crash_p`` a copier
    crashes at a random step and a new instance (new producer, new consumer) takes over.

    Workload flags: ``offsets-outside-txn`` commits the consumer offsets after the transaction
    (M12), ``no-rewind`` keeps the position after an abort (M13). ``pause_slot`` pauses that
    copier mid-transaction for ``pause_ms`` (a zombie through a rebalance, group mode).
    """

    records_per_partition: int = 120
    input_partitions: int = 2
    output_partitions: int = 3
    copiers: int = 2
    txn_size: int = 10
    abort_p: float = 0.0
    crash_p: float = 0.02
    group_mode: bool = False
    pause_slot: int = -1
    pause_ms: int = 0

    def start(self, run: Run) -> None:
        """Seed the input, then spawn the copiers and a concurrent read_committed reader of the output."""
        seeder = run.cluster.producer({"linger.ms": 0, "client.id": "seeder"})
        inputs: list[tuple[str, int, int, str]] = []

        def seeded(err: KafkaError | None, msg: Any) -> None:
            if err is None:
                inputs.append((msg.topic(), msg.partition(), msg.offset(), msg.value()))

        for p in range(self.input_partitions):
            for i in range(self.records_per_partition):
                seeder.produce("in", value=f"in-{p}-{i}", partition=p, on_delivery=seeded)
        seeder.flush()
        run.extra["copier_inputs"] = sorted(inputs)
        for slot in range(self.copiers):
            run.spawn(lambda r, pid, slot=slot: self._copier(r, pid, slot))
        run.extra["copier_reader"] = run.spawn(self._concurrent_reader)

    def _concurrent_reader(self, run: Run, pid: int) -> Process:
        """Kafka's test also reads the output *while* copying: it must never see a duplicate."""
        consumer = run.cluster.consumer({"isolation.level": "read_committed", "client.id": "copier-concurrent-reader"})
        keys = [("out", p) for p in range(self.output_partitions)]
        consumer.assign(keys)
        op = run.history.invoke(pid, "assign", (), run.now_ms, keys=keys)
        run.history.complete(op, "ok", (), run.now_ms)
        seen: list[tuple[str, int, int, str]] = []
        run.extra["copier_concurrent"] = seen
        while not run.stopping:
            op = run.history.invoke(pid, "poll", (), run.now_ms)
            msgs = consumer.consume(500, timeout=0.05)
            polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs]
            seen.extend((m.topic(), m.partition(), m.offset(), m.value()) for m in msgs)
            run.history.complete(op, "ok", polls, run.now_ms)
            yield Sleep(50)

    def _clients(self, run: Run, slot: int, gen: int) -> tuple[Any, Any]:
        producer = run.cluster.producer(
            run.producer_config(
                {
                    "transactional.id": f"copier-{slot}",
                    "client.id": f"copier-{slot}-producer-{gen}",
                    "linger.ms": 0,
                    "request.timeout.ms": 1_500,
                    "retry.backoff.ms": 20,
                    "transaction.timeout.ms": 10_000,
                    "delivery.timeout.ms": 30_000,
                    "max.block.ms": 20_000,
                }
            )
        )
        producer.init_transactions()
        consumer = run.cluster.consumer(
            run.consumer_config(
                {
                    "isolation.level": "read_committed",
                    "group.id": "copiers",
                    "client.id": f"copier-{slot}-consumer-{gen}",
                    "session.timeout.ms": 6_000,
                    "heartbeat.interval.ms": 1_000,
                }
            )
        )
        if self.group_mode:
            consumer.subscribe(["in"])
        else:
            consumer.assign([TopicPartition("in", slot)])
        return producer, consumer

    def _outputs(self, run: Run, slot: int, msgs: list[Any], attempt: str) -> list[Send]:
        """The records a transaction writes for ``msgs``: one copy each, with its lineage."""
        return [
            Send("out", m.offset() % self.output_partitions, f"{m.topic()}:{m.partition()}:{m.offset()}:{attempt}")
            for m in msgs
        ]

    def _restore(self, run: Run, slot: int) -> None:
        """Rebuild processing state when a copier instance starts (a copier keeps none)."""

    def _settled(self, run: Run, slot: int, outcome: str) -> None:
        """Learn a transaction's outcome (a copier keeps no state to update)."""

    def _done(self, run: Run, consumer: Any) -> bool:
        ends = dict.fromkeys(range(self.input_partitions), self.records_per_partition)
        committed = consumer.committed([TopicPartition("in", p) for p in range(self.input_partitions)])
        return all(tp.offset >= ends[tp.partition] for tp in committed)

    def _copier(self, run: Run, pid: int, slot: int) -> Process:
        gen = 0
        while True:
            try:
                producer, consumer = self._clients(run, slot, gen)
            except (KafkaError, IllegalStateError):
                yield Sleep(200)
                gen += 1
                continue
            self._restore(run, slot)
            result = yield from self._copy_loop(run, pid, slot, producer, consumer)
            if consumer.is_up:
                with contextlib.suppress(KafkaError, IllegalStateError):
                    consumer.close()  # leave the group, as a restarting application's old instance would
            if result == "done":
                return
            gen += 1
            pid = run.next_process  # a restarted copier is a new process, as in Jepsen
            run.next_process += 1

    def _copy_loop(self, run: Run, pid: int, slot: int, producer: Any, consumer: Any) -> Process:
        idle = 0
        while True:
            try:
                msgs = consumer.consume(self.txn_size, timeout=0.05)
            except (KafkaError, IllegalStateError):
                return "restart"
            msgs = [m for m in msgs if m.error() is None]
            # The group generation the records were read in: what the offsets must be fenced by (KIP-447).
            meta = consumer.group_metadata() if msgs else None
            if not msgs:
                idle += 1
                if run.stopping and idle > 20:
                    return "done"
                if idle % 10 == 0:
                    try:
                        if self._done(run, consumer):
                            return "done"
                    except (KafkaError, IllegalStateError):
                        return "restart"
                yield Sleep(20)
                continue
            idle = 0
            polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs]
            # Values stay unique per attempt (the checker's assumption); the lineage is the prefix.
            attempt = f"p{pid}-n{len(run.history)}"
            sends = self._outputs(run, slot, msgs, attempt)
            op = run.history.invoke(pid, "txn", tuple(sends), run.now_ms)
            last: dict[int, int] = {}
            for m in msgs:
                last[m.partition()] = m.offset() + 1
            offsets = [TopicPartition("in", p, o) for p, o in sorted(last.items())]
            reports: dict[str, Any] = {}
            abort = run.rng.random() < self.abort_p
            outcome, error = "ok", None
            try:
                producer.begin_transaction()
                for s in sends:
                    producer.produce(
                        "out",
                        value=s.value,
                        partition=s.partition,
                        on_delivery=lambda e, m, reports=reports: reports.__setitem__(m.value(), (e, m)),
                    )
                if run.rng.random() < self.crash_p:
                    raise _Crash
                if slot == self.pause_slot and self.pause_ms and not run.extra.get("paused"):
                    run.extra["paused"] = True
                    run.world.pause(producer.name)
                    run.world.pause(consumer.name)
                    # a heal in between may have resumed them already: resume only what is still paused
                    for node in (producer, consumer):
                        run.world.scheduler.call_later(self.pause_ms, _resume_if_paused, run, node)
                    yield Sleep(self.pause_ms + 1)
                if not run.flag("offsets-outside-txn"):
                    producer.send_offsets_to_transaction(offsets, meta)
                if abort:
                    producer.abort_transaction()
                    outcome = "fail"
                else:
                    producer.commit_transaction()
                    if run.flag("offsets-outside-txn"):
                        if run.rng.random() < 0.3:
                            raise _Crash  # the window M12 leaves open: outputs committed, offsets not
                        consumer.commit(offsets=offsets)
            except _Crash:
                run.world.crash(producer.name)
                run.world.crash(consumer.name)
                run.history.complete(op, "info" if outcome == "ok" else "fail", None, run.now_ms, error="crash")
                return "restart"
            except (KafkaError, IllegalStateError) as exc:
                error = type(exc).__name__
                outcome = "fail" if _abort_after_error(producer) else "info"
            done = []
            for s in sends:
                rep = reports.get(s.value)
                off = rep[1].offset() if outcome == "ok" and rep is not None and rep[0] is None else None
                done.append(Send(s.topic, s.partition, s.value, off if off is not None and off >= 0 else None))
            run.history.complete(op, outcome, (*done, *(polls if outcome == "ok" else ())), run.now_ms, error=error)
            self._settled(run, slot, outcome)
            if outcome == "info":
                return "restart"
            if outcome == "fail" and not run.flag("no-rewind"):
                try:
                    for tp in consumer.committed([TopicPartition("in", p) for p in sorted(last)]):
                        consumer.seek(TopicPartition("in", tp.partition, max(tp.offset, 0)))
                except (KafkaError, IllegalStateError):
                    return "restart"
            yield

    def judge(self, run: Run) -> list[str]:
        """Kafka's copier oracle on the final committed output (X1, X2)."""
        from engine.check.copier import check_copier

        reader = run.cluster.consumer({"isolation.level": "read_committed", "client.id": "copier-judge"})
        reader.assign([("out", p) for p in range(self.output_partitions)])
        outputs = []
        while True:
            msgs = reader.consume(2_000, timeout=1.0)
            if not msgs:
                break
            for m in msgs:
                v = m.value()
                if isinstance(v, str) and v.count(":") == 3:
                    t, p, o, _attempt = v.split(":")
                    outputs.append((m.topic(), m.partition(), m.offset(), t, int(p), int(o)))
        anomalies = check_copier(run.extra.get("copier_inputs", []), outputs, check_order=not self.group_mode)
        # The concurrent reader saw a prefix: it may miss records, never see one twice or out of order.
        concurrent = [(t, p, o, *_lineage(v)) for t, p, o, v in run.extra.get("copier_concurrent", []) if _lineage(v)]
        inputs = run.extra.get("copier_inputs", [])
        seen_inputs = {(st, sp, so) for _t, _p, _o, st, sp, so in concurrent}
        prefix = [r for r in inputs if (r[0], r[1], r[2]) in seen_inputs]
        early = check_copier(prefix, concurrent, check_order=not self.group_mode)
        anomalies += [a for a in early if a.kind != "copier-lost"]
        run.extra["copier_outputs"] = outputs
        return [f"{a.kind}: {a.message}" for a in anomalies] + self._group_offsets_match(run, outputs)

    def _group_offsets_match(self, run: Run, outputs: list[tuple]) -> list[str]:
        """L11: at quiescence each input partition's committed offset is its last copied offset + 1."""
        view = run.cluster.group_view("copiers")
        findings = []
        for p in range(self.input_partitions):
            copied = [so for _t, _p, _o, st, sp, so in outputs if (st, sp) == ("in", p)]
            expected = max(copied) + 1 if copied else None
            committed = view.committed_offset("in", p) if view is not None else None
            if committed != expected:
                findings.append(
                    f"L11-group-offset: group 'copiers' committed {committed} for in-{p}, but its last copied input "
                    f"offset + 1 is {expected}"
                )
        return findings


@dataclasses.dataclass(frozen=True)
class Aggregator(Copier):
    """A Streams-style stateful EOS app: a running sum of the input values per input partition (X3).

    Input record ``in-<p>-<i>`` contributes ``i``. Each transaction writes, per input partition it
    read, ``sum:<p>:<running sum>:<last offset>:<attempt>`` to ``out`` together with the input
    offsets. A restarted instance restores its sums from the last committed output (its
    changelog). Judge (EosTestDriver's oracle): for every input partition, the last committed sum
    equals the sum recomputed from the committed input prefix (the group's committed offset).
    """

    def _outputs(self, run: Run, slot: int, msgs: list[Any], attempt: str) -> list[Send]:
        state = run.extra.setdefault("agg_state", {}).setdefault(slot, {})
        pending: dict[int, tuple[int, int]] = {}
        for m in msgs:
            total, _last = pending.get(m.partition(), state.get(m.partition(), (0, -1)))
            pending[m.partition()] = (total + int(str(m.value()).rsplit("-", 1)[1]), m.offset())
        run.extra.setdefault("agg_pending", {})[slot] = pending
        return [
            Send("out", p % self.output_partitions, f"sum:{p}:{total}:{last}:{attempt}")
            for p, (total, last) in sorted(pending.items())
        ]

    def _settled(self, run: Run, slot: int, outcome: str) -> None:
        pending = run.extra.get("agg_pending", {}).pop(slot, {})
        if outcome == "ok":
            run.extra.setdefault("agg_state", {}).setdefault(slot, {}).update(pending)

    def _restore(self, run: Run, slot: int) -> None:
        run.extra.setdefault("agg_state", {})[slot] = _last_sums(run, self.output_partitions)

    def judge(self, run: Run) -> list[str]:
        """X3: the committed sums equal those recomputed from the committed input prefix."""
        sums = _last_sums(run, self.output_partitions)
        view = run.cluster.group_view("copiers")
        findings = []
        for p in range(self.input_partitions):
            committed = view.committed_offset("in", p) if view is not None else None
            expected = (sum(range(committed)), committed - 1) if committed else (0, -1)
            if sums.get(p, (0, -1)) != expected:
                findings.append(
                    f"aggregate-mismatch: in-{p}: the committed output says (sum, last offset) = "
                    f"{sums.get(p, (0, -1))}, the committed input prefix up to offset {committed} gives {expected}"
                )
        return findings


def _last_sums(run: Run, output_partitions: int) -> dict[int, tuple[int, int]]:
    """Read the committed aggregate outputs; return the last (sum, last offset) per input partition."""
    reader = run.cluster.consumer({"isolation.level": "read_committed"})
    reader.assign([("out", p) for p in range(output_partitions)])
    sums: dict[int, tuple[int, int]] = {}
    idle = 0
    while idle < 2:
        msgs = reader.consume(2_000, timeout=0.2)
        idle = 0 if msgs else idle + 1
        for m in msgs:
            v = m.value()
            if isinstance(v, str) and v.startswith("sum:"):
                _tag, p, total, last, _attempt = v.split(":")
                sums[int(p)] = (int(total), int(last))
    reader.close()
    return sums


def _lineage(value: Any) -> tuple[str, int, int] | None:
    if isinstance(value, str) and value.count(":") == 3:
        t, p, o, _attempt = value.split(":")
        return (t, int(p), int(o))
    return None


class _Crash(Exception):  # noqa: N818 - a control-flow signal inside the copier, never escapes
    """The copier process dies here (a hard client crash)."""
