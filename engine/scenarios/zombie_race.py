"""The KIP-360 zombie race: a fenced instance's epoch bump against a new instance of its id.

:class:`ZombieAbortRace` is a :class:`~engine.scenarios.workloads.Transactions` workload whose
first process holds the epoch-bumping ``InitProducerId`` of a failed transaction on the wire
while a second instance of the same ``transactional.id`` starts, then lets it go. Its judge
reports every commit by an instance that a newer instance had already fenced.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, NamedTuple

from engine.check.history import Send
from engine.errors import IllegalStateError, KafkaError, TimeoutException
from engine.scenarios.harness import Process, Run, Sleep
from engine.scenarios.workloads import BAD_SEND_MAX_REQUEST_SIZE, Transactions, reader_process


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


@dataclasses.dataclass
class RaceState:
    """What a zombie race keeps: every instance of the shared ``transactional.id``, and its transactions."""

    instances: list[_Instance] = dataclasses.field(default_factory=list)
    #: (instance name, invoked at ms, outcome, history index) of every transaction
    instance_ops: list[tuple[str, int, str, int]] = dataclasses.field(default_factory=list)
    #: the first instance's race transaction holds its epoch bump on the wire
    held: bool = False
    #: the second instance finished ``init_transactions``
    second_ready: bool = False


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
        run.state = RaceState()
        run.spawn(self._first)
        run.spawn(self._second)
        for _ in range(self.readers):
            run.spawn(lambda r, proc: reader_process(r, proc))

    def _new_producer(self, run: Run, txn_id: str) -> Any:
        producer = super()._new_producer(run, txn_id)
        instances = run.state_of(RaceState).instances
        instances.append(
            _Instance(producer.name, producer.producer_id, producer.producer_epoch, run.now_ms, len(instances))
        )
        return producer

    def _txn_done(self, run: Run, producer: Any, invoke_ms: int, outcome: str, index: int) -> None:
        run.state_of(RaceState).instance_ops.append((producer.name, invoke_ms, outcome, index))

    def _first(self, run: Run, proc: int) -> Process:
        try:
            producer = self._new_producer(run, self.shared_id)
        except (KafkaError, IllegalStateError):
            return
        consumer = self._consumer(run)
        producer = yield from self._txn_loop(
            run, proc, self.shared_id, producer, last_txn=self.warmup_txns, consumer=consumer
        )
        if producer is None:
            run.state_of(RaceState).held = True  # no producer left after the warm-up: no race on this seed
            return
        keys = run.topic_partitions()
        topic, part = keys[run.rng.randrange(len(keys))]
        good = Send(topic, part, f"p{proc}-race-s0")
        bad = Send(topic, part, f"p{proc}-race-too-large-" + "x" * BAD_SEND_MAX_REQUEST_SIZE)
        invoke_ms = run.now_ms
        op = run.history.invoke(proc, "txn", (good, bad), run.now_ms)
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
        state = run.state_of(RaceState)
        state.held = True
        while producer is not None and not state.second_ready and not run.stopping:
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
        yield from self._txn_loop(run, proc, self.shared_id, producer, first_txn=self.warmup_txns, consumer=consumer)

    def _second(self, run: Run, proc: int) -> Process:
        state = run.state_of(RaceState)
        while not state.held and not run.stopping:
            yield Sleep(10)
        try:
            producer = self._new_producer(run, self.shared_id)
        except (KafkaError, IllegalStateError):
            state.second_ready = True
            return
        state.second_ready = True
        # the new instance takes a moment before its first transaction (it restores its state, say):
        # time in which a zombie that won its epoch back would commit
        yield Sleep(self.second_start_delay_ms)
        yield from self._txn_loop(run, proc, self.shared_id, producer)

    def judge(self, run: Run) -> list[str]:
        """Report transactions committed by an instance after a newer one finished init_transactions."""
        state = run.state_of(RaceState)
        instances = state.instances
        by_name = {i.name: i for i in instances}
        out = []
        for name, invoke_ms, outcome, index in state.instance_ops:
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
