"""Consume-transform-produce workloads: Kafka's copier and a Streams-style aggregate.

:class:`Copier` paraphrases Kafka's TransactionalMessageCopier (the system test
``TransactionsTest``): copiers read ``in`` and write each record's lineage to ``out`` in
transactions that also commit the consumer offsets. :class:`Aggregator` keeps a running sum
per input partition instead (EosTestDriver's oracle). Both judge the committed output at the
end of the run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.check.copier import check_copier
from engine.check.history import Poll, Send
from engine.client.message import TopicPartition
from engine.errors import IllegalStateError, KafkaError, TimeoutException
from engine.scenarios.harness import Process, Run, Sleep
from engine.scenarios.supervisor import read_until_idle
from engine.scenarios.workloads import (
    Workload,
    abort_after_error,
    delivered_sends,
    loop_clients,
    loop_instances,
    produce_send,
    read_to_end,
    seed,
)
from engine.sim.node import NodeStatus

#: The copiers' consumer group.
COPIER_GROUP = "copiers"


def _resume_if_paused(run: Run, node: Any) -> None:
    if node.status is NodeStatus.PAUSED:
        run.world.resume(node.name)


@dataclasses.dataclass
class CopierState:
    """What a copier run keeps: its input, what the concurrent reader saw, the committed output it was judged on."""

    #: the seeded input, (topic, partition, offset, value), sorted
    inputs: list[tuple[str, int, int, str]]
    #: what the concurrent read_committed reader of ``out`` saw while the copiers ran
    concurrent: list[tuple[str, int, int, str]] = dataclasses.field(default_factory=list)
    #: the committed output at quiescence, (topic, partition, offset, source topic, partition, offset)
    outputs: list[tuple[str, int, int, str, int, int]] = dataclasses.field(default_factory=list)
    #: the paused copier has been paused (once a run)
    paused: bool = False
    #: the aggregator's running sums per copier slot, per input partition: (sum, last offset); and
    #: the sums of each slot's transaction in flight, kept when it commits
    sums: dict[int, dict[int, tuple[int, int]]] = dataclasses.field(default_factory=dict)
    pending: dict[int, dict[int, tuple[int, int]]] = dataclasses.field(default_factory=dict)


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
    copier mid-transaction for ``pause_ms`` (a zombie through a rebalance, group mode); the group
    waits for it up to ``session_timeout_ms`` (its consumers' ``session.timeout.ms``).
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
    session_timeout_ms: int = 6_000
    group_config: tuple[tuple[str, Any], ...] = ()
    static_members: bool = False

    def start(self, run: Run) -> None:
        """Seed the input, then spawn the copiers and a concurrent read_committed reader of the output."""
        records = [
            ("in", f"in-{p}-{i}", p) for p in range(self.input_partitions) for i in range(self.records_per_partition)
        ]
        run.state = CopierState(seed(run, {"linger.ms": 0, "client.id": "seeder"}, records))
        for slot in range(self.copiers):
            run.spawn(lambda r, proc, slot=slot: self._copier(r, proc, slot))
        run.spawn(self._concurrent_reader)

    def _concurrent_reader(self, run: Run, proc: int) -> Process:
        """Kafka's test also reads the output *while* copying: it must never see a duplicate."""
        consumer = run.cluster.consumer({"isolation.level": "read_committed", "client.id": "copier-concurrent-reader"})
        keys = [("out", p) for p in range(self.output_partitions)]
        consumer.assign(keys)
        op = run.history.invoke(proc, "assign", (), run.now_ms, keys=keys)
        run.history.complete(op, "ok", (), run.now_ms)
        seen = run.state_of(CopierState).concurrent
        while not run.stopping:
            op = run.history.invoke(proc, "poll", (), run.now_ms)
            msgs = consumer.consume(500, timeout=0.05)
            polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs]
            seen.extend((m.topic(), m.partition(), m.offset(), m.value()) for m in msgs)
            run.history.complete(op, "ok", polls, run.now_ms)
            yield Sleep(50)

    def _clients(self, run: Run, slot: int, gen: int) -> tuple[Any, Any]:
        group: dict[str, Any] = dict(self.group_config)
        timing: dict[str, Any] = {}
        if group.get("group.protocol") != "consumer":
            timing = {"session.timeout.ms": self.session_timeout_ms, "heartbeat.interval.ms": 1_000}
        if self.static_members:
            group["group.instance.id"] = f"copier-{slot}"
        producer, consumer = loop_clients(run, f"copier-{slot}", gen, COPIER_GROUP, {**timing, **group})
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

    def _start(self, run: Run, slot: int, gen: int) -> tuple[Any, Any]:
        producer, consumer = self._clients(run, slot, gen)
        try:
            self._restore(run, slot)
        except KafkaError:  # the output could not be read to its end: this instance cannot start
            run.world.crash(producer.name)
            run.world.crash(consumer.name)
            raise
        return producer, consumer

    def _copier(self, run: Run, proc: int, slot: int) -> Process:
        yield from loop_instances(
            run,
            proc,
            lambda gen: self._start(run, slot, gen),
            lambda proc, producer, consumer: self._copy_loop(run, proc, slot, producer, consumer),
        )

    def _copy_loop(self, run: Run, proc: int, slot: int, producer: Any, consumer: Any) -> Process:
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
                # Idle is no sign of being done: a member waiting out a rebalance (another member
                # paused, its session not yet expired) gets nothing either. Kafka's copier stops
                # when no input remains; here, when the group's committed offsets cover the input.
                idle += 1
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
            attempt = f"p{proc}-n{len(run.history)}"
            sends = self._outputs(run, slot, msgs, attempt)
            op = run.history.invoke(proc, "txn", tuple(sends), run.now_ms)
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
                    produce_send(producer, s, reports)
                if run.rng.random() < self.crash_p:
                    raise _Crash
                if slot == self.pause_slot and self.pause_ms and not run.state_of(CopierState).paused:
                    run.state_of(CopierState).paused = True
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
                if self.group_mode:
                    # The process died with its consumer: the heal restarts the node, never this
                    # process, so the dead consumer must not rejoin the group and hold partitions
                    # nobody reads (a closed consumer does not rejoin when restarted).
                    consumer.close()
                run.history.complete(op, "info" if outcome == "ok" else "fail", None, run.now_ms, error="crash")
                return "restart"
            except (KafkaError, IllegalStateError) as exc:
                error = type(exc).__name__
                outcome = "fail" if abort_after_error(producer) else "info"
            done = delivered_sends(sends, reports, outcome)
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
        outputs = []

        def output(m: Any) -> None:
            v = m.value()
            if isinstance(v, str) and v.count(":") == 3:
                t, p, o, _attempt = v.split(":")
                outputs.append((m.topic(), m.partition(), m.offset(), t, int(p), int(o)))

        keys = [("out", p) for p in range(self.output_partitions)]
        read_until_idle(run.cluster, keys, "copier-judge", output, timeout_s=1.0, idle_polls=1, close=False)
        state = run.state_of(CopierState)
        anomalies = check_copier(state.inputs, outputs, check_order=not self.group_mode)
        # The concurrent reader saw a prefix: it may miss records, never see one twice or out of order.
        concurrent = [(t, p, o, *_lineage(v)) for t, p, o, v in state.concurrent if _lineage(v)]
        inputs = state.inputs
        seen_inputs = {(st, sp, so) for _t, _p, _o, st, sp, so in concurrent}
        prefix = [r for r in inputs if (r[0], r[1], r[2]) in seen_inputs]
        early = check_copier(prefix, concurrent, check_order=not self.group_mode)
        anomalies += [a for a in early if a.kind != "copier-lost"]
        state.outputs = outputs
        return [f"{a.kind}: {a.message}" for a in anomalies] + self._group_offsets_match(run, outputs)

    def _group_offsets_match(self, run: Run, outputs: list[tuple]) -> list[str]:
        """L11: at quiescence each input partition's committed offset is its last copied offset + 1."""
        view = run.cluster.group_view(COPIER_GROUP)
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
        state = run.state_of(CopierState).sums.setdefault(slot, {})
        pending: dict[int, tuple[int, int]] = {}
        for m in msgs:
            total, _last = pending.get(m.partition(), state.get(m.partition(), (0, -1)))
            pending[m.partition()] = (total + int(str(m.value()).rsplit("-", 1)[1]), m.offset())
        run.state_of(CopierState).pending[slot] = pending
        return [
            Send("out", p % self.output_partitions, f"sum:{p}:{total}:{last}:{attempt}")
            for p, (total, last) in sorted(pending.items())
        ]

    def _settled(self, run: Run, slot: int, outcome: str) -> None:
        state = run.state_of(CopierState)
        pending = state.pending.pop(slot, {})
        if outcome == "ok":
            state.sums.setdefault(slot, {}).update(pending)

    def _restore(self, run: Run, slot: int) -> None:
        run.state_of(CopierState).sums[slot] = _last_sums(run, self.output_partitions)

    def judge(self, run: Run) -> list[str]:
        """X3: the committed sums equal those recomputed from the committed input prefix."""
        try:
            sums = _last_sums(run, self.output_partitions)
        except TimeoutException as exc:
            return [f"aggregate-unread: the committed output could not be read to its end at quiescence: {exc}"]
        view = run.cluster.group_view(COPIER_GROUP)
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
    """Read the committed aggregate outputs to their end; return the last (sum, last offset) per input partition.

    Raises ``TimeoutException`` when the output cannot be read to its end offsets (a store restored
    from part of its changelog would start from wrong sums, as Kafka Streams never does).
    """
    reader = run.cluster.consumer({"isolation.level": "read_committed"})
    sums: dict[int, tuple[int, int]] = {}
    try:
        for m in read_to_end(reader, [("out", p) for p in range(output_partitions)]):
            v = m.value()
            if isinstance(v, str) and v.startswith("sum:"):
                _tag, p, total, last, _attempt = v.split(":")
                sums[int(p)] = (int(total), int(last))
    finally:
        reader.close()
    return sums


def _lineage(value: Any) -> tuple[str, int, int] | None:
    if isinstance(value, str) and value.count(":") == 3:
        t, p, o, _attempt = value.split(":")
        return (t, int(p), int(o))
    return None


class _Crash(Exception):  # noqa: N818 - a control-flow signal inside the copier, never escapes
    """The copier process dies here (a hard client crash)."""
