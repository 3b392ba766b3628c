"""Mirroring a cluster into another (MirrorMaker 2, KIP-656): two clusters in one world.

The scenario's cluster (``run.cluster``) is the *source*; the workload builds the *target* beside
it (:meth:`Cluster.beside <engine.cluster.Cluster.beside>`, ``MirrorState.target``): one clock,
one seed, one trace. A transactional producer writes transactions of :data:`TXN_RECORDS` records
over the two partitions of ``src`` (values ``txn-<n>-<i>/5``), aborting some on purpose. A mirror
copies ``src`` partition ``p`` to the target's ``dst`` partition ``p``, value for value:

* :class:`AtLeastOnceMirror` (a source connector): a read_committed consumer of ``src`` whose
  offsets live in a group on the *source*, an idempotent producer on the target; each batch is
  produced and flushed, then its offsets are committed. A crash between the flush and the commit
  (``crash_p`` per batch) makes the next instance copy the batch again: duplicates on the target,
  by design.
* :class:`ExactlyOnceMirror` (KIP-656): a transactional producer on the target
  (``transactional.id = mirror-<slot>``) writes each poll's records (``batch`` = 3, fewer than a
  source transaction's 5) together with the source offsets, sent to a consumer group on the
  *target* (``send_offsets_to_transaction``); it crashes (``crash_p``) before or after sending the
  offsets, never after the commit. A new instance fences the old one
  (``init_transactions``), reads the offsets back from that group (``committed()`` of a target
  consumer) and seeks the source consumer (manual assignment) there: nothing lost, nothing twice.

A read_committed reader of ``dst`` polls while the mirror runs. Because target transactions are
cut by poll, not by source transaction, it sees *part* of a committed source transaction now and
then: the mirror copies records exactly once but not the source's atomicity. The judge reads
``dst`` at the end: ``mirror-lost`` (a committed source record missing), ``mirror-duplicate``
(copied twice), ``mirror-aborted-copied`` (a record of an aborted source transaction), and
``mirror-split-transaction`` (``MirrorState.split_transactions``: the source transactions
the reader saw only part of after some poll).

Simplified here, compared with MirrorMaker 2: one mirror task, no Connect framework (no worker,
no offsets/config/status topics); no remote-topic renaming (``src`` becomes ``dst``, partition
for partition); no offset translation, no checkpoints topic and no consumer-group sync (the
target's offsets are never translated for downstream consumers); no heartbeats topic; headers and
keys are not copied (values are). The KIP-656 variant keeps its source offsets in a consumer group
on the target (Kafka's design stores them in the Connect offsets topic of the target, written in
the same transaction), and the at-least-once variant keeps them in a group on the source.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.check.history import Poll, Send
from engine.client.message import TopicPartition
from engine.cluster import Cluster
from engine.errors import (
    IllegalStateError,
    KafkaError,
    OutOfOrderSequenceException,
    ProducerFencedException,
    TimeoutException,
)
from engine.scenarios.fault_plans import client_crashes, rolling_crashes
from engine.scenarios.harness import FAST_FAILOVER, FAST_INTERNALS, Process, Run, Sleep, Spec, TopicSpec, is_sentinel
from engine.scenarios.supervisor import read_until_idle
from engine.scenarios.workloads import Workload, abort_after_error, delivered_sends, produce_send

#: The source topic, the target topic, and their partition count (partition p is copied to p).
SRC, DST, PARTITIONS = "src", "dst", 2
#: Records per source transaction.
TXN_RECORDS = 5
#: The name of the target cluster (its region of the source's world).
TARGET = "target"
#: The group on the source (at-least-once) or on the target (KIP-656) that holds the mirror's offsets.
OFFSETS_GROUP = "mirror"
#: Idle polls (``run.stopping``) after which a mirror instance asks whether it has copied everything.
IDLE_POLLS_TO_STOP = 20

#: The mirror's source consumer: read_committed, Kafka's request.timeout.ms (a crashed broker's
#: fetch fails at once: its process closed the connection).
_CONSUMER = {"isolation.level": "read_committed", "fetch.max.wait.ms": 100}
_PRODUCER = {
    "linger.ms": 0,
    "request.timeout.ms": 1_500,
    "retry.backoff.ms": 20,
    "delivery.timeout.ms": 30_000,
    "max.block.ms": 20_000,
}


def txn_value(n: int, i: int) -> str:
    """Return record ``i`` of source transaction ``n``: ``txn-<n>-<i>/5``."""
    return f"txn-{n}-{i}/{TXN_RECORDS}"


def txn_of(value: Any) -> int | None:
    """Return the source transaction number of a :func:`txn_value`, None for anything else."""
    if not isinstance(value, str) or not value.startswith("txn-"):
        return None
    parts = value.split("-")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def split_transactions(polls: list[tuple[str, ...]], committed: set[str]) -> list[int]:
    """Return the committed source transactions a reader had seen only part of after some poll, sorted."""
    members: dict[int, int] = {}
    for v in committed:
        n = txn_of(v)
        if n is not None:
            members[n] = members.get(n, 0) + 1
    whole = {n for n, k in members.items() if k == TXN_RECORDS}
    seen: dict[int, set[str]] = {}
    split: set[int] = set()
    for poll in polls:
        touched = set()
        for v in poll:
            n = txn_of(v)
            if n in whole:
                seen.setdefault(n, set()).add(v)
                touched.add(n)
        split.update(n for n in touched if len(seen[n]) < TXN_RECORDS)
    return sorted(split)


def read_values(cluster: Cluster, topic: str, partitions: int, client_id: str) -> list[str]:
    """Read a topic from the start with read_committed until it is quiet; return the values (no sentinels)."""
    values: list[str] = []

    def keep(m: Any) -> None:
        if m.error() is None and not is_sentinel(m.value()):
            values.append(m.value())

    read_until_idle(cluster, [(topic, p) for p in range(partitions)], client_id, keep)
    return values


def build_target(run: Run) -> Cluster:
    """Return the target cluster, built beside the run's cluster (same broker config), with topic ``dst``."""
    config = dict(FAST_INTERNALS)
    config.update(dict(run.spec.broker_config))
    target = Cluster.beside(run.cluster, TARGET, brokers=run.spec.brokers, config=config)
    target.create_topic(DST, PARTITIONS, min(3, run.spec.brokers))
    return target


def _poll_op(run: Run, proc: int, consumer: Any, n: int) -> list[Any]:
    """Consume up to ``n`` source records and record the poll; raise what the consumer raises."""
    op = run.history.invoke(proc, "poll", (), run.now_ms)
    msgs = [m for m in consumer.consume(n, timeout=0.05) if m.error() is None and not is_sentinel(m.value())]
    run.history.complete(op, "ok", [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs], run.now_ms)
    return msgs


def _next_offsets(msgs: list[Any]) -> list[TopicPartition]:
    last: dict[int, int] = {}
    for m in msgs:
        last[m.partition()] = m.offset() + 1
    return [TopicPartition(SRC, p, o) for p, o in sorted(last.items())]


@dataclasses.dataclass
class MirrorState:
    """What a mirror run keeps: the target cluster, what the mirror and the target reader did, the judge's counts."""

    target: Cluster
    #: every value the source producer tried to write (committed or not)
    attempted: list[str] = dataclasses.field(default_factory=list)
    #: the target reader's polls (the values of each) and the times it polled
    reader_polls: list[tuple[str, ...]] = dataclasses.field(default_factory=list)
    reader_poll_times: list[int] = dataclasses.field(default_factory=list)
    #: (commit time, values) of every target transaction the exactly-once mirror committed
    commits: list[tuple[int, tuple[str, ...]]] = dataclasses.field(default_factory=list)
    #: mirror instances started (a crashed one is replaced), and whether one copied everything
    instances: int = 0
    done: bool = False
    #: the judge's counts: records on the target, copies past the first, the source transactions
    #: the reader saw only part of, and the committed source transactions
    copied: int = 0
    duplicates: int = 0
    split_transactions: list[int] = dataclasses.field(default_factory=list)
    committed_transactions: int = 0


@dataclasses.dataclass(frozen=True)
class Mirror(Workload):
    """The common part: the source producer, the mirror's restarts, the target reader and the judge.

    ``transactions`` source transactions (``abort_p`` aborted on purpose), a mirror copying
    ``batch`` records per poll and crashing with ``crash_p`` per batch (its next instance has new
    clients and a new process number), and a read_committed reader of ``dst`` polling every
    ``reader_pause_ms``.
    """

    transactions: int = 16
    abort_p: float = 0.25
    batch: int = 3
    crash_p: float = 0.05
    reader_pause_ms: int = 5
    #: report the reader's partial source transactions as a finding (the KIP-656 positive control)
    report_splits: bool = False
    #: duplicates on the target are allowed (at-least-once by design): counted, not reported
    duplicates_allowed: bool = False

    def start(self, run: Run) -> None:
        """Build the target cluster, then spawn the source producer, the mirror and the target reader."""
        run.state = MirrorState(build_target(run))
        run.spawn(self._source_producer)
        run.spawn(self._mirror)
        run.spawn(self._target_reader)

    # -- the source -------------------------------------------------------------------------------

    def _source_producer(self, run: Run, proc: int) -> Process:
        """Transactions of 5 records over both partitions of ``src``; a new instance after any failure."""
        producer = None
        for n in range(self.transactions):
            if run.stopping:
                return
            if producer is None or not producer.is_up:
                try:
                    # a short transaction timeout: an instance that crashed mid-transaction after the
                    # safety phase is never replaced, and only the coordinator can end what it left open
                    producer = run.cluster.producer(
                        run.producer_config(
                            {**_PRODUCER, "transactional.id": "src-producer", "transaction.timeout.ms": 10_000}
                        )
                    )
                    producer.init_transactions()
                except (KafkaError, IllegalStateError):
                    producer = None
                    yield Sleep(200)
                    continue
            yield Sleep(run.rng.randint(10, 120))
            sends = [Send(SRC, (n + i) % PARTITIONS, txn_value(n, i)) for i in range(TXN_RECORDS)]
            run.state_of(MirrorState).attempted.extend(s.value for s in sends)
            abort = run.rng.random() < self.abort_p
            op = run.history.invoke(proc, "txn", tuple(sends), run.now_ms)
            reports: dict[str, Any] = {}
            outcome, error = "ok", None
            try:
                producer.begin_transaction()
                for s in sends:
                    produce_send(producer, s, reports)
                    yield
                if abort:
                    producer.abort_transaction()
                    outcome = "fail"
                else:
                    producer.commit_transaction()
            except (ProducerFencedException, OutOfOrderSequenceException, TimeoutException) as exc:
                outcome, error, producer = ("fail" if abort else "info"), type(exc).__name__, None
            except (KafkaError, IllegalStateError) as exc:
                error = type(exc).__name__
                outcome = "fail" if abort_after_error(producer) else "info"
                producer = producer if outcome == "fail" else None
            run.history.complete(op, outcome, tuple(delivered_sends(sends, reports, outcome)), run.now_ms, error=error)

    # -- the mirror ------------------------------------------------------------------------------

    def _mirror(self, run: Run, proc: int) -> Process:
        """Run mirror instances until one has copied everything; a crashed one is replaced."""
        state = run.state_of(MirrorState)
        gen = 0
        while True:
            state.instances += 1
            try:
                result = yield from self._instance(run, proc, gen)
            except (KafkaError, IllegalStateError):
                result = "restart"
            if result == "done":
                state.done = True
                return
            gen += 1
            proc = run.new_process()  # a restarted mirror is a new process, as in Jepsen
            yield Sleep(50)

    def _instance(self, run: Run, proc: int, gen: int) -> Process:
        """One mirror instance (a generator): return ``"done"`` when all is copied, ``"restart"`` after a crash."""
        msg = f"{type(self).__name__} must define _instance(), the mirror's copy loop"
        raise NotImplementedError(msg)

    def _copied_all(self, run: Run, consumer: Any, ends: Any) -> bool:
        """Return True when the mirror's source positions reached each partition's high watermark.

        A read_committed consumer stops at the LSO: behind an open source transaction it polls
        nothing, which does not mean it is done. Done is when nothing undecided is left: every
        position at the log's end (``ends``: a read_uncommitted consumer, whose "latest" is the HW).
        """
        try:
            for tp in consumer.position([(SRC, p) for p in range(PARTITIONS)]):
                if tp.offset < ends.get_watermark_offsets(TopicPartition(SRC, tp.partition), timeout=2)[1]:
                    return False
        except KafkaError:
            return False
        return True

    def _next_batch(self, run: Run, proc: int, consumer: Any, ends: Any) -> Process:
        """Poll until a batch of source records comes (return it) or, stopping, all is copied (return [])."""
        idle = 0
        while not (msgs := _poll_op(run, proc, consumer, self.batch)):
            idle += 1
            if run.stopping and idle > IDLE_POLLS_TO_STOP and self._copied_all(run, consumer, ends):
                return []
            yield Sleep(20)
        return msgs

    def _end_reader(self, run: Run, gen: int) -> Any:
        """Return a read_uncommitted source consumer that only asks for end offsets (see :meth:`_copied_all`)."""
        return run.cluster.consumer({"client.id": f"mirror-ends-{gen}"})

    def _crash(self, run: Run, *nodes: tuple[Cluster, Any]) -> None:
        """Crash the instance's clients (each in its own cluster) where they are still up."""
        for cluster, node in nodes:
            if node.is_up:
                cluster.crash(node.name)

    # -- the target reader -------------------------------------------------------------------------

    def _target_reader(self, run: Run, proc: int) -> Process:
        """Poll ``dst`` read_committed while the mirror runs; keep each poll's values."""
        state = run.state_of(MirrorState)
        consumer = state.target.consumer({"isolation.level": "read_committed", "client.id": "target-reader"})
        consumer.assign([(DST, p) for p in range(PARTITIONS)])
        polls, times = state.reader_polls, state.reader_poll_times
        while True:
            done = state.done
            times.append(run.now_ms)
            msgs = consumer.consume(500, timeout=0.01)
            if msgs:
                polls.append(tuple(m.value() for m in msgs if m.error() is None))
            if done and not msgs:
                return
            yield Sleep(self.reader_pause_ms)

    # -- the judge ---------------------------------------------------------------------------------

    def judge(self, run: Run) -> list[str]:
        """Compare ``dst`` with the committed ``src``: lost, duplicated, aborted-copied, split transactions."""
        state = run.state_of(MirrorState)
        committed = set(read_values(run.cluster, SRC, PARTITIONS, "mirror-judge-source"))
        copied = read_values(state.target, DST, PARTITIONS, "mirror-judge-target")
        attempted = set(state.attempted)
        counts: dict[str, int] = {}
        for v in copied:
            counts[v] = counts.get(v, 0) + 1
        lost = sorted(committed - set(counts))
        duplicated = sorted(v for v, k in counts.items() if k > 1)
        aborted = sorted(v for v in counts if v in attempted and v not in committed)
        split = split_transactions(state.reader_polls, committed)
        state.copied = len(copied)
        state.duplicates = sum(k - 1 for k in counts.values())
        state.split_transactions = split
        state.committed_transactions = len({n for n in map(txn_of, committed) if n is not None})
        findings = []
        if lost:
            findings.append(f"mirror-lost: {len(lost)} committed source records missing on the target, e.g. {lost[:3]}")
        if duplicated and not self.duplicates_allowed:
            findings.append(f"mirror-duplicate: {len(duplicated)} records copied more than once, e.g. {duplicated[:3]}")
        if aborted:
            findings.append(
                f"mirror-aborted-copied: {len(aborted)} records of aborted transactions, e.g. {aborted[:3]}"
            )
        if split and self.report_splits and not findings:
            # A positive control shows its point on an exact copy only: with copy findings it fails on them.
            findings.append(
                f"mirror-split-transaction: the target reader saw part of source transactions {split[:10]}"
                f"{' ...' if len(split) > 10 else ''} ({len(split)} in all)"
            )
        return findings

    def cannot_show(self, run: Run) -> str:
        """Why no split could be seen: no committed source transaction, or no reader poll while one was half copied."""
        if not self.report_splits:
            return ""
        state = run.state_of(MirrorState)
        committed = state.committed_transactions
        if not committed:
            return "no source transaction was committed (each failed under the faults), so none could be split"
        # When did the target commit each part of a source transaction? A split is visible only to
        # a poll between the commit of its first part and that of its last.
        parts: dict[int, list[int]] = {}
        for at_ms, values in state.commits:
            for n in {txn_of(v) for v in values} - {None}:
                parts.setdefault(n, []).append(at_ms)  # type: ignore[arg-type]
        windows = [(min(ts), max(ts)) for ts in parts.values() if min(ts) < max(ts)]
        polls = state.reader_poll_times
        if not any(a <= t < b for t in polls for a, b in windows):
            return (
                f"the target reader polled at no moment when one of the {committed} committed source "
                "transaction(s) was partly copied (other processes' calls held it back)"
            )
        return ""


@dataclasses.dataclass(frozen=True)
class AtLeastOnceMirror(Mirror):
    """A source connector: read_committed source consumer (offsets in a source group), idempotent target producer.

    Each batch is produced, flushed, then its offsets committed to group ``mirror`` on the source;
    a crash in between (``crash_p``) copies the batch again: duplicates are allowed by design and
    counted in ``MirrorState.duplicates``; lost and aborted-copied records still fail.
    """

    batch: int = 4
    crash_p: float = 0.1
    duplicates_allowed: bool = True

    def _instance(self, run: Run, proc: int, gen: int) -> Process:
        target = run.state_of(MirrorState).target
        producer = target.producer({**_PRODUCER, "client.id": f"mirror-producer-{gen}"})
        consumer = run.cluster.consumer(
            run.consumer_config({**_CONSUMER, "group.id": OFFSETS_GROUP, "client.id": f"mirror-consumer-{gen}"})
        )
        keys = [(SRC, p) for p in range(PARTITIONS)]
        op = run.history.invoke(proc, "assign", (), run.now_ms, keys=keys)
        consumer.assign(keys)
        run.history.complete(op, "ok", (), run.now_ms)
        ends = self._end_reader(run, gen)
        while msgs := (yield from self._next_batch(run, proc, consumer, ends)):
            errors: list[Any] = []
            for m in msgs:
                producer.produce(
                    DST,
                    value=m.value(),
                    partition=m.partition(),
                    on_delivery=lambda e, _m, errors=errors: errors.append(e),
                )
            producer.flush(timeout=30)
            if any(e is not None for e in errors) or len(errors) < len(msgs):
                self._crash(run, (run.cluster, consumer), (target, producer))
                return "restart"
            if run.rng.random() < self.crash_p:
                self._crash(run, (run.cluster, consumer), (target, producer))
                return "restart"  # flushed, offsets not committed: the next instance copies the batch again
            consumer.commit(offsets=_next_offsets(msgs))
            yield
        return "done"


@dataclasses.dataclass(frozen=True)
class ExactlyOnceMirror(Mirror):
    """KIP-656: a transactional target producer writes each poll's records with the source offsets (target group).

    On (re)start the instance calls ``init_transactions`` (fencing and aborting its predecessor),
    reads the source offsets from group ``mirror`` on the target and seeks its source consumer
    there. One target transaction per poll of ``batch`` records, so target transactions cut source
    transactions: a positive control for ``mirror-split-transaction``.
    """

    crash_p: float = 0.1
    report_splits: bool = True

    def _instance(self, run: Run, proc: int, gen: int) -> Process:
        target = run.state_of(MirrorState).target
        producer = target.producer(
            {
                **_PRODUCER,
                "transactional.id": "mirror-0",
                "client.id": f"mirror-producer-{gen}",
                "transaction.timeout.ms": 10_000,
            }
        )
        offsets_reader = target.consumer({"group.id": OFFSETS_GROUP, "client.id": f"mirror-offsets-{gen}"})
        consumer = run.cluster.consumer(run.consumer_config({**_CONSUMER, "client.id": f"mirror-consumer-{gen}"}))
        clients = ((target, producer), (target, offsets_reader), (run.cluster, consumer))
        try:
            producer.init_transactions()  # fences the previous instance first: its offsets are then final
            keys = [TopicPartition(SRC, p) for p in range(PARTITIONS)]
            start = {tp.partition: max(tp.offset, 0) for tp in offsets_reader.committed(keys)}
        except (KafkaError, IllegalStateError):
            self._crash(run, *clients)
            return "restart"
        op = run.history.invoke(proc, "assign", (), run.now_ms, keys=[(SRC, p) for p in range(PARTITIONS)])
        consumer.assign([TopicPartition(SRC, p, start[p]) for p in range(PARTITIONS)])
        run.history.complete(op, "ok", (), run.now_ms)
        meta = offsets_reader.group_metadata()
        ends = self._end_reader(run, gen)
        while msgs := (yield from self._next_batch(run, proc, consumer, ends)):
            try:
                producer.begin_transaction()
                for m in msgs:
                    producer.produce(DST, value=m.value(), partition=m.partition())
                yield
                crash = run.rng.random() < self.crash_p
                if crash and run.rng.random() < 0.5:
                    self._crash(run, *clients)  # mid-transaction: the next instance's init aborts it
                    return "restart"
                producer.send_offsets_to_transaction(_next_offsets(msgs), meta)
                if crash:
                    self._crash(run, *clients)  # the offsets are pending in the target group: aborted too
                    return "restart"
                producer.commit_transaction()
                run.state_of(MirrorState).commits.append((run.now_ms, tuple(m.value() for m in msgs)))
            except (KafkaError, IllegalStateError):
                self._crash(run, *clients)
                return "restart"
            yield
        return "done"


MIRROR_SPECS = (
    Spec(
        "mirror: at-least-once (source connector)",
        "a source-connector mirror (offsets committed on the source after the flush) copies transactional "
        "records to a second cluster; a crash between flush and commit copies a batch twice: duplicates are "
        "allowed by design (MirrorState.duplicates), lost or aborted records are not",
        AtLeastOnceMirror(),
        rolling_crashes,
        broker_config=FAST_FAILOVER,
        topics=(TopicSpec(SRC, PARTITIONS),),
        liveness_ms=10_000,
    ),
    Spec(
        "mirror: exactly-once copy (KIP-656)",
        "a transactional mirror (source offsets in a group on the target, in the same transaction) copies "
        "every committed record exactly once, but 3-record target transactions cut 5-record source ones: a "
        "read_committed reader of the target sees part of a source transaction (a positive control; it "
        "passes only when the copy is exact and the split is seen)",
        ExactlyOnceMirror(),
        client_crashes,
        broker_config=FAST_FAILOVER,
        topics=(TopicSpec(SRC, PARTITIONS),),
        liveness_ms=10_000,
        must_report=("mirror-split-transaction",),
    ),
)
