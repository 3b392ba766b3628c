"""The scenario language and the harness that runs it: cluster, clients, workload, faults, verdict.

A :class:`Spec` is frozen data: the cluster (brokers, Kafka-named broker config, topics), the
workload (a :class:`~engine.scenarios.workloads.Workload`), the fault plan (a function of the
seed's ``faults`` stream and the run), the two phase lengths, and what is allowed. Running it::

    result = run_spec(spec, seed=7)            # or with mutant="M10"
    result.ok, result.report, result.replay     # the verdict and the one command that replays it

Phases (house style R13): **safety** (faults on; the workload's processes run interleaved, one
step at a time in an order drawn from the ``workload`` stream), then **heal** (every fault ends),
then **liveness** (no faults; in-flight operations finish; the system must converge: ``liveness_ms``,
then up to :data:`LIVENESS_GRACE_MS` more while a workload process other than a service is still
working, since one request lost just before the heal may take a whole request timeout), then the
**final reads**: a read_committed reader reads every partition from the start, and a sentinel
record written after quiescence must be visible (a hanging transaction would hide it).

The verdict joins the black-box report of the client history (``engine.check``), the
scenario's own oracle (e.g. the copier's output == input) and, when available, the white-box
invariants over the final engine state. It is one of:

========  ======================================================================================
PASS      an ordinary scenario with nothing forbidden
CAUGHT    a positive control (``must_report``) that showed its own anomaly, and nothing else
          forbidden, whatever faults swarm drew: showing the anomaly is the catch
SKIP      a positive control that could not show its anomaly on this seed, with the reason: swarm
          did not draw its fault kind, or the workload says why (:meth:`Workload.cannot_show`)
FAIL      anything else: a forbidden anomaly or finding, or a control that missed its anomaly
          with no reason
========  ======================================================================================
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from engine.check.anomaly import Report
from engine.check.checker import check_history
from engine.check.history import HistoryRecorder, Poll, Send
from engine.cluster import Cluster
from engine.errors import IllegalStateError
from engine.scenarios.fault_plans import swarm as swarm_plan
from engine.scenarios.result import ScenarioResult, finding_kind
from engine.scenarios.result import replay_command as replay_command  # re-exported: the sweep imports it here
from engine.scenarios.supervisor import Await, Process, Sleep, poll_until_idle
from engine.sim.collector import hold_run_passes, release_run_passes
from engine.sim.faults import FaultPlan
from engine.sim.network import NetworkOptions
from engine.sim.rng import randbelow
from engine.sim.scheduler import SimulationStalled, StopRun
from engine.weakenings import CORRECT, Weakenings

if TYPE_CHECKING:
    from engine.scenarios.workloads import Workload

S = TypeVar("S")

#: Small internal topics keep simulated runs cheap; the coordinator mapping still uses Kafka's hash.
FAST_INTERNALS = (
    ("transaction.state.log.num.partitions", 5),
    ("offsets.topic.num.partitions", 5),
    ("transaction.abort.timed.out.transaction.cleanup.interval.ms", 1_000),
)

#: Broker config for scenarios with broker crashes: a crashed broker is fenced and dropped from ISRs
#: within about two seconds (the catalog's and the mirror scenarios' ``broker_config``).
FAST_FAILOVER = (
    ("min.insync.replicas", 2),
    ("broker.session.timeout.ms", 2_000),
    ("broker.heartbeat.interval.ms", 500),
    ("replica.lag.time.max.ms", 1_500),
)

#: How long the liveness phase may go on past ``liveness_ms`` while the workload still works:
#: Kafka's default ``request.timeout.ms``, the longest one lost request keeps a client waiting.
LIVENESS_GRACE_MS = 30_000

#: The timing of a consume-transform-produce loop's transactional producer (the copier's and the
#: invoicing loop's): short request timeouts so a request lost to a silent fault (a dropped message,
#: a partition, a paused broker) is retried in seconds, not after Kafka's 30 s; a crashed broker
#: needs no such help, since its connections close at once.
TXN_PRODUCER_TIMING = (
    ("linger.ms", 0),
    ("request.timeout.ms", 1_500),
    ("retry.backoff.ms", 20),
    ("transaction.timeout.ms", 10_000),
    ("delivery.timeout.ms", 30_000),
    ("max.block.ms", 20_000),
)


#: The timing of a relay's idempotent producer (the outbox's and the saga's relays, the dual write's
#: publisher): short request timeouts, as :data:`TXN_PRODUCER_TIMING`, and a 10 s delivery timeout.
RELAY_PRODUCER_TIMING = (
    ("enable.idempotence", True),
    ("acks", "all"),
    ("linger.ms", 0),
    ("request.timeout.ms", 1_500),
    ("retry.backoff.ms", 20),
    ("delivery.timeout.ms", 10_000),
    ("max.block.ms", 5_000),
)


def relay_producer_config(run: Run, client_id: str) -> dict[str, Any]:
    """Return a relay producer's config (:data:`RELAY_PRODUCER_TIMING`), with the mutant's overrides."""
    return run.producer_config({"client.id": client_id, **dict(RELAY_PRODUCER_TIMING)})


@dataclasses.dataclass(frozen=True)
class TopicSpec:
    """A topic of the scenario's cluster."""

    name: str
    partitions: int = 2
    replication_factor: int = 3
    config: tuple[tuple[str, Any], ...] = ()


@dataclasses.dataclass(frozen=True)
class Spec:
    """One scenario, as data."""

    name: str
    description: str
    workload: Workload
    faults: Callable[[random.Random, Run], FaultPlan] | None = None
    brokers: int = 3
    broker_config: tuple[tuple[str, Any], ...] = (("min.insync.replicas", 2),)
    topics: tuple[TopicSpec, ...] = (TopicSpec("t"),)
    safety_ms: int = 5_000
    liveness_ms: int = 15_000
    allowed: str = "eos"
    #: a positive control (such as S20) must report at least one of these anomaly kinds
    must_report: tuple[str, ...] = ()
    #: mutants this scenario is built to catch, with the check that should catch each (``a|b``: either
    #: kind, for a defect that shows as one or the other depending on the run; see :func:`is_caught`)
    catches: tuple[tuple[str, str], ...] = ()
    latency_ms: tuple[int, int] = (1, 3)


@dataclasses.dataclass(frozen=True)
class Mutant:
    """A weakened configuration: engine weakenings, broker/producer/consumer config, workload flags."""

    id: str
    name: str
    removes: str
    weakenings: Weakenings = CORRECT
    broker_config: tuple[tuple[str, Any], ...] = ()
    producer_config: tuple[tuple[str, Any], ...] = ()
    consumer_config: tuple[tuple[str, Any], ...] = ()
    workload_flags: tuple[str, ...] = ()


class Run:
    """Everything one run of a spec has: the cluster, the history, the processes, the mutant."""

    def __init__(self, spec: Spec, seed: int, mutant: Mutant | None, observers: Iterable[Any] = ()) -> None:
        self.spec = spec
        self.seed = seed
        self.mutant = mutant
        config = dict(FAST_INTERNALS)
        config.update(dict(spec.broker_config))
        if mutant is not None:
            config.update(dict(mutant.broker_config))
        self.cluster = Cluster(
            seed=seed,
            brokers=spec.brokers,
            config=config,
            network=NetworkOptions(*spec.latency_ms),
            weakenings=mutant.weakenings if mutant is not None else CORRECT,
            observers=observers,
        )
        for t in spec.topics:
            self.cluster.create_topic(t.name, t.partitions, t.replication_factor, dict(t.config))
        self.world = self.cluster.world
        from engine.check.timeline import PartitionTimeline

        self.timeline = PartitionTimeline.attach(self.cluster)
        from engine.check.group_owners import GroupOwnership

        #: L15: one owner per partition in each KIP-848 group, checked at every reconciliation
        self.group_owners = GroupOwnership.attach(self.cluster)
        self.rng = self.world.rng.stream("workload")
        self.fault_rng = self.world.rng.stream("faults")
        self.history = HistoryRecorder()
        self.processes: dict[int, Process] = {}
        self.wake_at: dict[int, int] = {}
        #: processes that yielded :class:`Await` and were not woken yet (:meth:`wake`)
        self.awaiting: set[int] = set()
        #: True while the driver's own ``run_for`` runs the events (a wake may stop it then)
        self._driving = False
        #: a stop event is queued (:meth:`_stop_driving`): one is enough for any number of wakes
        self._stop_queued = False
        #: processes that serve for ever (a relay, a consumer loop): they do not keep liveness going
        self.services: set[int] = set()
        self.next_process = 0
        self.stopping = False
        self.notes: list[str] = []
        #: the workload's own state (a dataclass it declares, set by its ``start``); the result keeps it
        self.state: object = None

    # -- helpers for workloads -----------------------------------------------------------------

    @property
    def now_ms(self) -> int:
        """Return the simulated time."""
        return self.world.now_ms

    def flag(self, name: str) -> bool:
        """Return True when the mutant sets a workload flag (e.g. ``no-rewind``)."""
        return self.mutant is not None and name in self.mutant.workload_flags

    def producer_config(self, base: dict[str, Any]) -> dict[str, Any]:
        """Return a producer config with the mutant's overrides applied."""
        out = dict(base)
        if self.mutant is not None:
            out.update(dict(self.mutant.producer_config))
        return out

    def consumer_config(self, base: dict[str, Any]) -> dict[str, Any]:
        """Return a consumer config with the mutant's overrides applied."""
        out = dict(base)
        if self.mutant is not None:
            out.update(dict(self.mutant.consumer_config))
        return out

    def spawn(self, make: Callable[[Run, int], Process], *, service: bool = False) -> int:
        """Start a process (a generator); return its process number.

        ``service``: the process serves for ever (a relay, a consumer loop) and never returns, so
        the liveness phase does not wait for it (see :data:`LIVENESS_GRACE_MS`).
        """
        proc = self.next_process
        self.next_process += 1
        self.processes[proc] = make(self, proc)
        self.wake_at[proc] = self.now_ms
        if service:
            self.services.add(proc)
        return proc

    @property
    def working(self) -> bool:
        """Return True while a process other than a service has not returned."""
        return any(p not in self.services for p in self.processes)

    def new_process(self) -> int:
        """Return a fresh process number: a restarted client instance is a new process, as in Jepsen."""
        proc = self.next_process
        self.next_process += 1
        return proc

    def state_of(self, kind: type[S]) -> S:
        """Return the workload's state, a ``kind`` (the dataclass its ``start`` set as :attr:`state`)."""
        if not isinstance(self.state, kind):
            raise IllegalStateError(f"the run's workload state is a {type(self.state).__name__}, not a {kind.__name__}")
        return self.state

    def restart_if_down(self, node: Any) -> None:
        """Restart a crashed node, unless it is up already (the heal restarts every crashed node)."""
        if not node.is_up:
            self.world.restart(node.name)

    def wake(self, proc: int) -> None:
        """Make a process that yielded :class:`Await` due now (its delivery report was queued).

        Called from inside the simulation (a producer handling a response). When the driver's own
        ``run_for`` is running the events, a stop event is queued at the current time: it runs
        after the event that woke the process and ends that ``run_for`` there
        (:class:`~engine.sim.scheduler.StopRun`), so the process runs at the moment of its wake,
        not at the end of the driver's time window. A process that is not awaiting is left alone.
        """
        if proc not in self.awaiting:
            return
        self.awaiting.discard(proc)
        sched = self.world.scheduler
        self.wake_at[proc] = sched.now_ms
        if self._driving and not self._stop_queued:
            self._stop_queued = True
            sched.call_soon(self._stop_driving)

    def _stop_driving(self) -> None:
        """The stop event: end the driver's ``run_for`` (raise ``StopRun``) if it is the one running."""
        self._stop_queued = False
        if self._driving:
            raise StopRun

    def _run_driving(self, duration_ms: int) -> None:
        """The driver's ``world.run_for``: a :meth:`wake` while it runs may end it early."""
        self._driving = True
        try:
            self.world.run_for(duration_ms)
        finally:
            self._driving = False

    def topic_partitions(self) -> list[tuple[str, int]]:
        """Return every (topic, partition) of the scenario's topics."""
        return [(t.name, p) for t in self.spec.topics for p in range(t.partitions)]

    # -- the driver ------------------------------------------------------------------------------

    def drive(self, until_ms: int, *, max_steps: int = 200_000, while_working: bool = False) -> None:
        """Run the processes, one step at a time in a random order, until ``until_ms``.

        Each step runs one process drawn uniformly from those due (their wake time has come), in
        process-number order, then lets 0, 1 or 2 ms of simulated time pass (drawn uniformly);
        when none is due, time moves to the next wake. Both draws come from the ``workload``
        stream and are ``rng.choice`` and ``rng.randint(0, 2)``'s own values
        (:func:`~engine.sim.rng.randbelow`). :attr:`wake_at` is in process-number order already (:meth:`spawn`
        only adds higher numbers), so the due processes need no sort. A process that yields
        :class:`Await` sleeps up to its ``ms`` and is due as soon as :meth:`wake` wakes it: the
        driver's time window ends at the wake (both ``run_for`` calls below may end early).

        ``while_working``: stop as soon as only services are left (:attr:`working` is False).
        """
        steps = 0
        sched = self.world.scheduler
        run_for = self._run_driving
        processes, wake_at = self.processes, self.wake_at
        rng = self.rng
        awaiting = self.awaiting
        while sched.now_ms < until_ms and processes and steps < max_steps:
            if while_working and not self.working:
                return
            steps += 1
            now = sched.now_ms
            ready = [p for p, at in wake_at.items() if at <= now]
            if not ready:
                nxt = min(wake_at.values())
                run_for(max(1, min(nxt, until_ms) - now))
                continue
            proc = ready[randbelow(rng, len(ready))]  # rng.choice(ready)
            awaiting.discard(proc)
            try:
                out = next(processes[proc])
            except StopIteration:
                del processes[proc]
                del wake_at[proc]
                continue
            if isinstance(out, (Sleep, Await)):
                wake_at[proc] = sched.now_ms + out.ms
                if type(out) is Await:
                    awaiting.add(proc)
            else:
                wake_at[proc] = sched.now_ms
            run_for(randbelow(rng, 3))  # rng.randint(0, 2)
        if self.now_ms < until_ms:
            self.world.run_for(until_ms - self.now_ms)


def is_caught(check: str, kinds: Iterable[str]) -> bool:
    """Return True when ``kinds`` hold the check a mutant must be caught by (``a|b``: either one)."""
    found = set(kinds)
    return any(k in found for k in check.split("|"))


def is_sentinel(value: object) -> bool:
    """Return True for the records :func:`final_reads` writes after quiescence (not workload data)."""
    return isinstance(value, str) and value.startswith("sentinel-")


def final_reads(run: Run, *, sentinel: bool = True) -> None:
    """Read every partition from the start with read_committed, recorded as poll ops (Jepsen final polls)."""
    c = run.cluster
    if sentinel:
        # X4: a record written after quiescence must become visible, or a transaction hangs.
        p = c.producer({"linger.ms": 0, "client.id": "sentinel-producer"})
        for topic, part in run.topic_partitions():
            p.produce(topic, value=f"sentinel-{topic}-{part}", partition=part)
        p.flush(timeout=30)
    reader = c.consumer(run.consumer_config({"isolation.level": "read_committed", "client.id": "final-reader"}))
    reader.assign(run.topic_partitions())
    proc = 10_000 + run.next_process
    run.next_process += 1
    op = run.history.invoke(proc, "assign", (), run.now_ms, keys=run.topic_partitions())
    run.history.complete(op, "ok", (), run.now_ms)
    seen_sentinels: set[str] = set()

    def poll() -> list[Any]:  # one poll op per poll, as Jepsen's final polls
        op = run.history.invoke(proc, "poll", (), run.now_ms)
        msgs = reader.consume(1000, timeout=1.0)
        polls = []
        for m in msgs:
            v = m.value()
            if is_sentinel(v):
                seen_sentinels.add(v)
                continue
            polls.append(Poll(m.topic(), m.partition(), m.offset(), v))
        run.history.complete(op, "ok", polls, run.now_ms)
        return msgs

    poll_until_idle(poll, idle_polls=3)
    if sentinel:
        missing = [f"sentinel-{t}-{p}" for t, p in run.topic_partitions() if f"sentinel-{t}-{p}" not in seen_sentinels]
        if missing:
            run.notes.append(f"hanging-transaction: sentinel never visible on {', '.join(missing)}")


#: White-box kinds a correct cluster may show: a marker retried after a lost answer is written twice.
ALLOWED_INVARIANT_KINDS = frozenset({"L4-duplicate-marker"})


def white_box(run: Run, history: Any) -> list[str]:
    """Run the white-box invariants L1–L14 over the final engine state, and L15 as the run went; return findings."""
    from engine.check.invariants import check_invariants

    acked: dict[tuple[str, int], set[Any]] = {}
    for op in history:
        if op.type == "ok" and op.f in ("send", "txn"):
            for m in op.mops:
                if isinstance(m, Send) and m.offset is not None:
                    acked.setdefault((m.topic, m.partition), set()).add(m.value)
    at_least_once = run.spec.allowed == "at-least-once" or run.flag("no-idempotence")
    found = check_invariants(run.cluster, run.timeline, acked_values=acked, at_least_once=at_least_once)
    found += run.group_owners.anomalies
    return [f"{a.kind}: {a.message}" for a in found if a.kind not in ALLOWED_INVARIANT_KINDS]


def run_spec(
    spec: Spec,
    seed: int,
    *,
    mutant: Mutant | None = None,
    plan: FaultPlan | None = None,
    swarm: bool = False,
    observers: Iterable[Any] = (),
) -> ScenarioResult:
    """Run a scenario on one seed through its phases and judge it.

    ``plan`` replaces the fault plan the seed would expand into (used to replay or shrink a
    failing plan); ``swarm`` replaces it with a swarm plan (a random subset of fault kinds);
    ``observers`` watch the run from its first event (they change nothing in it).

    A positive control is CAUGHT when its anomaly shows, drawn or not. When it does not show, the
    run is SKIP if it could not have shown (swarm did not draw its fault kinds, or
    :meth:`Workload.cannot_show` gives a reason) and nothing else is wrong; FAIL otherwise.
    """
    held = hold_run_passes()  # the whole run: safety, heal, liveness, the checkers (engine.sim.collector)
    try:
        return _run_spec(spec, seed, mutant, plan, swarm, observers)
    finally:
        release_run_passes(held)


def _run_spec(
    spec: Spec, seed: int, mutant: Mutant | None, plan: FaultPlan | None, swarm: bool, observers: Iterable[Any]
) -> ScenarioResult:
    """:func:`run_spec`'s run and judgement."""
    run = Run(spec, seed, mutant, observers)
    plan = _choose_plan(run, plan, swarm) or FaultPlan()
    run.cluster.schedule_faults(plan)
    _drive_phases(run)
    history = run.history.history()
    expected = spec.must_report
    report, findings, missing, evidence = _judge(run, history, expected)
    skipped = ""
    if missing and report.ok and not findings:
        skipped = _why_not_shown(run, spec, seed, mutant, plan, swarm)
        if skipped:
            missing = []
    summary = {"history_ops": len(history), "simulated_ms": run.cluster.now_ms, "fault_plan": f"{len(plan)} entries"}
    return ScenarioResult(
        spec.name,
        seed,
        run.cluster,
        report,
        findings,
        missing,
        summary,
        spec=spec,
        mutant=mutant.id if mutant else None,
        plan=plan,
        state=run.state,
        swarm=swarm,
        expected=expected,
        skipped=skipped,
        history=history,
        timeline=run.timeline,
        evidence=evidence,
        history_size=len(history),
    )


def _choose_plan(run: Run, plan: FaultPlan | None, swarm: bool) -> FaultPlan | None:
    """Return the plan to inject: the one given, else a swarm plan, else the scenario's own."""
    if plan is None and swarm:
        plan = swarm_plan(run.fault_rng, run)
    if plan is None and run.spec.faults is not None:
        plan = run.spec.faults(run.fault_rng, run)
    return plan


def fault_plan(spec: Spec, seed: int, *, mutant: Mutant | None = None, swarm: bool = False) -> FaultPlan:
    """Return the fault plan a run would inject, without running it (e.g. to shrink a run that raised)."""
    return _choose_plan(Run(spec, seed, mutant), None, swarm) or FaultPlan()


def _why_not_shown(run: Run, spec: Spec, seed: int, mutant: Mutant | None, plan: FaultPlan, swarm: bool) -> str:
    """Return why a positive control could not show its anomaly on this run, or "" (then it missed it).

    The workload's own reason comes first (it knows what the anomaly needed); then a fault kind swarm
    did not draw.
    """
    reason = spec.workload.cannot_show(run)
    if reason:
        return f"n/a: {reason}"
    undrawn = _undrawn_control_kinds(spec, seed, mutant, plan) if swarm else []
    if undrawn:
        return f"n/a: positive control's fault kind ({', '.join(undrawn)}) was not drawn by swarm"
    return ""


def _undrawn_control_kinds(spec: Spec, seed: int, mutant: Mutant | None, plan: FaultPlan) -> list[str]:
    """Return the fault kinds a positive control's own plan starts that ``plan`` does not."""
    if spec.faults is None:
        return []
    own = fault_plan(spec, seed, mutant=mutant)
    return sorted(own.started_kinds() - plan.started_kinds())


def _drive_phases(run: Run) -> None:
    """Run safety, heal, liveness and the final reads; a stalled simulation becomes a note."""
    spec = run.spec
    spec.workload.start(run)
    try:
        run.world.set_phase("safety")
        run.drive(run.now_ms + spec.safety_ms)
        run.stopping = True
        run.world.heal()
        run.world.set_phase("liveness")
        run.drive(run.now_ms + spec.liveness_ms)
        if run.working:
            run.drive(run.now_ms + LIVENESS_GRACE_MS, while_working=True)
        spec.workload.finish(run)
        final_reads(run)
    except SimulationStalled as exc:
        run.notes.append(f"stalled: {exc}")


def _judge(run: Run, history: Any, expected: tuple[str, ...]) -> tuple[Report, list[str], list[str], list[str]]:
    """Return (report, findings, missing, evidence); ``expected`` anomaly kinds are the point, not a failure."""
    spec = run.spec
    strict = check_history(history, allowed=spec.allowed)
    findings = list(run.notes) + spec.workload.judge(run) + white_box(run, history)
    if not expected:
        return strict, findings, [], []
    found_kinds = {a.kind for a in strict.forbidden} | {finding_kind(f) for f in findings}
    missing = [] if found_kinds & set(expected) else ["|".join(expected)]
    # A positive control: the expected anomaly is the point of the scenario, not a failure.
    report = Report.classify(strict.anomalies, strict.allowed_kinds | frozenset(expected), strict.stats)
    evidence = [f for f in findings if finding_kind(f) in expected]
    findings = [f for f in findings if finding_kind(f) not in expected]
    return report, findings, missing, evidence


def _fails(spec: Spec, seed: int, mutant: Mutant | None, plan: FaultPlan) -> bool:
    """Return True when the run with ``plan`` fails or raises (an internal error fails too)."""
    try:
        return not run_spec(spec, seed, mutant=mutant, plan=plan).ok
    except Exception:  # shrinking a run that raised keeps the entries that make it raise
        return True


def shrink(spec: Spec, seed: int, plan: FaultPlan, *, mutant: Mutant | None = None, max_runs: int = 200) -> FaultPlan:
    """Delete fault-plan entries while the run still fails (or raises); return the smallest such plan."""
    current = plan
    runs = 0
    changed = True
    while changed and runs < max_runs:
        changed = False
        for i in range(len(current.entries)):
            candidate = current.without(i)
            runs += 1
            if _fails(spec, seed, mutant, candidate):
                current = candidate
                changed = True
                break
    return current
