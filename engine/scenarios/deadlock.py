"""Request-reply inside a Kafka transaction: the deadlock, diagnosed, and the pattern that works.

:class:`RequestReply` runs two processes over the topics ``requests`` and ``replies`` (one
partition each). The *requester* owns a transactional producer and a read_committed consumer of
``replies``; the *responder* reads ``requests`` with a read_committed consumer and answers each
request with an idempotent producer.

With ``commit_first=False`` the requester produces its request inside a transaction and waits for
the reply before committing. The responder cannot see the request (it sits above the LSO until
the transaction ends), so no reply comes. After ``reply_timeout_ms`` (but no later than
``diagnose_margin_ms`` before the transaction can time out: under faults the request itself may
be delivered seconds late) the workload asks
:func:`engine.check.deadlock.explain_stall` why, keeps its one-line diagnosis in ``DeadlockState.deadlock``
and, once ``transaction.timeout.ms`` has passed, calls ``commit_transaction()`` as the requester
would after giving up: it raises the error the coordinator's timeout abort left
(``ProducerFencedException``: the abort bumped the epoch). The judge reports
``request-reply-deadlock: <headline> Who waits for whom: … Fix: … Outcome: <what happened>``
(one line; the labels let a reader, and the notebook's HTML, set its parts out). With
``commit_first=True`` the requester commits the request (a transaction that fails under faults is
tried again by a new instance, as an application would), then waits for the reply outside any
transaction for as long as the run lasts: the reply arrives, and ``request-reply-timeout`` says
when it did not.

The control cannot show the deadlock (a SKIP that says why, :meth:`RequestReply.cannot_show`) when
the request was never written, when the cluster could not be asked, or when the transaction was
already ending by the time the requester asked (the request delivered too late to wait at all).

The requester's transaction is recorded as a ``txn`` op (``fail`` once the coordinator aborted it),
the responder's polls and replies as ``poll``/``send`` ops, so the black-box checker judges the
run too: the aborted request must never be read read_committed.

:data:`DEADLOCK_SPECS` holds both as scenarios. This module does not import the catalog (the
catalog imports it).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from engine.check.deadlock import TimeoutAbort, explain_stall, timeout_abort
from engine.check.history import Poll, Send
from engine.coordinator.txn_state import TransactionState
from engine.errors import IllegalStateError, KafkaError
from engine.scenarios.harness import FAST_FAILOVER, Process, Run, Sleep, Spec, TopicSpec, is_sentinel
from engine.scenarios.supervisor import ReportWaits, await_report
from engine.scenarios.workloads import Workload
from engine.views.transactions import describe_transaction_row

REQUESTS = "requests"
REPLIES = "replies"
#: How long the processes sleep between polls: a round trip takes tens of simulated ms.
POLL_PAUSE_MS = 20


def _delivered(run: Run, proc: int, producer: Any, topic: str, value: str) -> Process:
    """Produce one record and wait for its delivery report (woken when it is queued); return ``(error, message)``."""
    box: list[Any] = []

    def on_delivery(e: Any, m: Any) -> None:
        box.append((e, m))

    ReportWaits(run, producer).expect(on_delivery, proc)
    producer.produce(topic, value=value, partition=0, on_delivery=on_delivery)
    if not (yield from await_report(producer, box)):
        return (KafkaError("the producer crashed before the delivery report"), None)
    return box[0]


def _begin_with(run: Run, proc: int, producer: Any, request: str) -> Process:
    """Begin a transaction and write ``request`` in it; return its offset, or raise the delivery error."""
    producer.begin_transaction()
    err, msg = yield from _delivered(run, proc, producer, REQUESTS, request)
    if err is not None:
        raise err
    return msg.offset()


def _assigned(run: Run, proc: int, consumer: Any, topic: str) -> None:
    """Assign partition 0 of ``topic`` to a consumer and record the assign op."""
    op = run.history.invoke(proc, "assign", (), run.now_ms, keys=[(topic, 0)])
    consumer.assign([(topic, 0)])
    run.history.complete(op, "ok", (), run.now_ms)


def _poll(run: Run, proc: int, consumer: Any) -> list[Any]:
    """Poll once, recorded as a poll op; return the messages (sentinels left out)."""
    op = run.history.invoke(proc, "poll", (), run.now_ms)
    msgs = [m for m in consumer.consume(10, timeout=0.01) if m.error() is None and not is_sentinel(m.value())]
    run.history.complete(op, "ok", [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs], run.now_ms)
    return msgs


@dataclasses.dataclass
class DeadlockState:
    """What a request-reply run keeps: the request, the reply, the diagnosis, the coordinator's abort."""

    #: (topic, partition, offset, value) of the request once it was written
    request: tuple[str, int, int, str] | None = None
    #: failed transactions before the request was committed (the working pattern)
    request_attempts: int = 0
    #: the reply and its round trip in ms
    reply: tuple[str, int] | None = None
    #: (offset, value) of every request the responder read
    responder_seen: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    requester_done: bool = False
    #: "Name: message" of the requester's commit that failed
    requester_error: str | None = None
    #: the coordinator's abort of the transaction on its timeout, from ``__transaction_state``
    timeout_abort: TimeoutAbort | None = None
    #: simulated ms when the request's delivery report came (the deadlock control)
    request_delivered_ms: int | None = None
    #: the one-line diagnosis of the stall, or why the cluster could not be asked
    deadlock: str | None = None
    diagnosis_error: str | None = None
    #: (ms, state) of the requester's transaction when the diagnosis found no open one to explain
    no_open_transaction: tuple[int, str] | None = None
    #: what happened to the deadlocked transaction and its request (the verdict's)
    deadlock_outcome: str | None = None


@dataclasses.dataclass(frozen=True)
class RequestReply(Workload):
    """One request, one reply; the requester waits for the reply inside its transaction or after it."""

    #: the requester's ``transactional.id``
    transactional_id: str = "orders-svc"
    #: the requester's ``transaction.timeout.ms``: small, so a deadlock ends in simulated seconds
    transaction_timeout_ms: int = 5_000
    #: how long the requester waits for its reply before asking why (many round trips); never
    #: past ``diagnose_margin_ms`` before its transaction's timeout (see :meth:`_diagnose_at`)
    reply_timeout_ms: int = 3_000
    #: the requester asks why at the latest this long before ``transaction.timeout.ms`` runs out
    #: from its ``begin_transaction()``: after it the coordinator may be aborting, and there is
    #: no open transaction left to diagnose
    diagnose_margin_ms: int = 500
    #: after the transaction timeout, how much longer the requester waits before its next call
    #: (the coordinator looks for timed-out transactions every cleanup interval)
    give_up_after_timeout_ms: int = 2_000
    #: the working pattern: commit the request, then wait for the reply outside the transaction
    commit_first: bool = False

    def start(self, run: Run) -> None:
        """Spawn the requester and the responder."""
        run.state = DeadlockState()
        run.spawn(self._requester)
        run.spawn(self._responder)

    def _responder(self, run: Run, proc: int) -> Process:
        consumer = run.cluster.consumer(
            run.consumer_config({"isolation.level": "read_committed", "client.id": "responder"})
        )
        producer = run.cluster.producer(run.producer_config({"linger.ms": 0, "client.id": "responder-producer"}))
        _assigned(run, proc, consumer, REQUESTS)
        state = run.state_of(DeadlockState)
        while not (run.stopping and state.requester_done):
            for m in _poll(run, proc, consumer):
                state.responder_seen.append((m.offset(), m.value()))
                reply = f"reply-to-{m.value()}"
                op = run.history.invoke(proc, "send", (Send(REPLIES, 0, reply),), run.now_ms)
                err, msg = yield from _delivered(run, proc, producer, REPLIES, reply)
                offset = msg.offset() if err is None else None
                kind = "ok" if err is None else "info"
                error = None if err is None else type(err).__name__
                run.history.complete(op, kind, (Send(REPLIES, 0, reply, offset),), run.now_ms, error=error)
            yield Sleep(POLL_PAUSE_MS)

    def _producer(self, run: Run, client_id: str) -> Any:
        """Return a requester instance: the transactional producer (``init_transactions`` not called yet)."""
        return run.cluster.producer(
            run.producer_config(
                {
                    "transactional.id": self.transactional_id,
                    "client.id": client_id,
                    "linger.ms": 0,
                    "transaction.timeout.ms": self.transaction_timeout_ms,
                }
            )
        )

    def _requester(self, run: Run, proc: int) -> Process:
        producer = self._producer(run, "requester")
        consumer = run.cluster.consumer(
            run.consumer_config({"isolation.level": "read_committed", "client.id": "requester-replies"})
        )
        # The reply polls happen while the transaction op is in flight: a process has one op at a
        # time, so the requester's consumer records its ops as a process of its own.
        reader = run.next_process
        run.next_process += 1
        try:
            producer.init_transactions()
            _assigned(run, reader, consumer, REPLIES)
            if self.commit_first:
                yield from self._request_committed_first(run, proc, reader, producer, consumer)
            else:
                yield from self._request(run, proc, reader, producer, consumer)
        finally:
            run.state_of(DeadlockState).requester_done = True

    def _request_committed_first(self, run: Run, proc: int, reader: int, producer: Any, consumer: Any) -> Process:
        """Commit the request, trying again after a failed transaction; then wait for its reply, unbounded."""
        state = run.state_of(DeadlockState)
        attempt = 0
        while state.request is None:
            request = f"p{proc}-t{attempt}-request"
            op = run.history.invoke(proc, "txn", (Send(REQUESTS, 0, request),), run.now_ms)
            try:
                offset = yield from _begin_with(run, proc, producer, request)
                producer.commit_transaction()
            except (KafkaError, IllegalStateError) as exc:
                run.history.complete(op, "info", None, run.now_ms, error=type(exc).__name__)
                attempt += 1
                state.request_attempts = attempt
                yield Sleep(200)
                producer = self._producer(run, f"requester-{attempt}")
                with contextlib.suppress(KafkaError, IllegalStateError):
                    producer.init_transactions()  # fences the failed instance and ends what it left open
                continue
            run.history.complete(op, "ok", (Send(REQUESTS, 0, request, offset),), run.now_ms)
            state.request = (REQUESTS, 0, offset, request)
        sent_ms = run.now_ms
        reply = yield from self._await_reply(run, reader, consumer, None)
        state.reply = (reply, run.now_ms - sent_ms)

    def _request(self, run: Run, proc: int, reader: int, producer: Any, consumer: Any) -> Process:
        """The deadlock: the request inside the transaction, the wait for its reply, the diagnosis, the commit."""
        state = run.state_of(DeadlockState)
        request = f"p{proc}-t0-request"
        op = run.history.invoke(proc, "txn", (Send(REQUESTS, 0, request),), run.now_ms)
        begun_ms = run.now_ms
        try:
            offset = yield from _begin_with(run, proc, producer, request)
            state.request = (REQUESTS, 0, offset, request)
        except (KafkaError, IllegalStateError) as exc:
            run.history.complete(op, "info", None, run.now_ms, error=type(exc).__name__)
            return
        sent_ms = state.request_delivered_ms = run.now_ms
        reply = yield from self._await_reply(run, reader, consumer, self._diagnose_at(begun_ms, sent_ms))
        if reply is not None:
            state.reply = (reply, run.now_ms - sent_ms)
        txn_start = None
        if reply is None:
            txn_start = self._diagnose(run, offset)
            # Nothing a requester does can help now: it waits on, as an application blocked on the
            # reply would, until the coordinator's timeout has surely fired, then makes its next call.
            give_up = sent_ms + self.transaction_timeout_ms + self.give_up_after_timeout_ms
            yield from self._await_reply(run, reader, consumer, give_up)
        self._commit(run, op, producer, Send(REQUESTS, 0, request, offset), txn_start)

    def _diagnose_at(self, begun_ms: int, sent_ms: int) -> int:
        """Return when the requester asks why no reply came: ``reply_timeout_ms`` after the request
        was delivered, but no later than ``diagnose_margin_ms`` before the transaction can time out.

        Under faults the request's delivery may take seconds (a partitioned leader, retries): then
        a full reply timeout would end after the coordinator's timeout abort, when the transaction
        is no longer Ongoing and the stall it caused is over (swarm seeds 94072 and 94095 delivered
        the request 2.8 s and 4.3 s after ``begin_transaction()``, and asked at 6.0 s and 7.5 s).
        """
        return min(sent_ms + self.reply_timeout_ms, begun_ms + self.transaction_timeout_ms - self.diagnose_margin_ms)

    def _commit(self, run: Run, op: Any, producer: Any, request: Send, txn_start: int | None) -> None:
        """Commit the request's transaction and complete its op: ``fail`` once the coordinator aborted it."""
        kind, error = "info", None
        try:
            producer.commit_transaction()
            kind = "ok"
        except (KafkaError, IllegalStateError) as exc:
            error = type(exc).__name__
            run.state_of(DeadlockState).requester_error = f"{error}: {exc}"
        abort = None
        if txn_start is not None:
            abort = timeout_abort(run.cluster, self.transactional_id, txn_start_ms=txn_start)
            run.state_of(DeadlockState).timeout_abort = abort
        if kind != "ok" and abort is not None:
            kind = "fail"  # __transaction_state shows the abort: the request was never committed
        done = request if kind == "ok" else request._replace(offset=None)
        run.history.complete(op, kind, (done,), run.now_ms, error=error)

    def _await_reply(self, run: Run, proc: int, consumer: Any, until_ms: int | None) -> Process:
        """Poll ``replies`` until a reply or ``until_ms`` (None: as long as the run lasts); return it or None."""
        while until_ms is None or run.now_ms < until_ms:
            msgs = _poll(run, proc, consumer)
            if msgs:
                return msgs[0].value()
            yield Sleep(POLL_PAUSE_MS)
        return None

    def _diagnose(self, run: Run, offset: int) -> int | None:
        """Ask the diagnosis why no reply came; keep its answer; return the transaction's start."""
        try:
            why = explain_stall(
                run.cluster,
                transactional_id=self.transactional_id,
                request_topic=REQUESTS,
                partition=0,
                request_offset=offset,
                responder_isolation="read_committed",
            )
            row = describe_transaction_row(run.cluster, self.transactional_id)
        except (KafkaError, ValueError) as exc:
            run.state_of(DeadlockState).diagnosis_error = f"{type(exc).__name__}: {exc}"
            return None
        state = run.state_of(DeadlockState)
        if why is not None:
            state.deadlock = why
        elif row.state != TransactionState.ONGOING.display_name:
            state.no_open_transaction = (run.now_ms, row.state)
        return row.start_time_ms

    def judge(self, run: Run) -> list[str]:
        """Report the diagnosed deadlock with its outcome, or a request that got no reply."""
        state = run.state_of(DeadlockState)
        why = state.deadlock
        if why is not None:
            state.deadlock_outcome = outcome = self._outcome(state)
            return [f"request-reply-deadlock: {why.removeprefix('deadlock: ')} Outcome: {outcome}"]
        if state.reply is not None or not self.commit_first:
            return []  # the deadlock control without a diagnosis: cannot_show says why, or it missed
        request = state.request
        if request is None:
            attempts = state.request_attempts
            return [f"request-reply-timeout: the request was never committed ({attempts} failed transaction(s))"]
        return [f"request-reply-timeout: no reply to the committed request {request} by the end of the run"]

    def cannot_show(self, run: Run) -> str:
        """Why the deadlock could not be shown: the request never written, or no diagnosis possible then."""
        state = run.state_of(DeadlockState)
        if state.request is None:
            return "the request was never written (the requester's transaction failed before it), so nothing waited"
        error = state.diagnosis_error
        if error:
            return f"when the reply was late the cluster could not be asked why ({error})"
        ended = state.no_open_transaction
        if ended is not None:
            at, txn_state = ended
            return (
                f"the requester's transaction was already {txn_state} when it asked why at {at} ms (its request "
                f"was delivered at {state.request_delivered_ms} ms, late under faults), so no open transaction "
                "held the request any more"
            )
        return ""

    def _outcome(self, state: DeadlockState) -> str:
        """Return what happened to the deadlocked transaction and its request."""
        abort = state.timeout_abort
        parts = [abort.describe() if abort is not None else "no timeout abort was found in __transaction_state"]
        error = state.requester_error  # "Name: message"; the name says enough here
        parts.append(
            f"the requester's next call, commit_transaction(), raised {error.split(':', 1)[0]}"
            if error
            else "the requester's commit_transaction() raised nothing"
        )
        if state.request is None:
            raise IllegalStateError("a diagnosed deadlock has its request written")
        _topic, _partition, offset, _value = state.request
        seen = [o for o, _v in state.responder_seen if o == offset]
        where = f"the request at {REQUESTS}-0 offset {offset}"
        if seen:
            parts.append(f"the responder saw {where} {len(seen)} time(s)")
        else:
            fate = "aborted" if abort is not None else "not committed"
            parts.append(f"{where} is {fate} and the responder never saw it")
        return "; ".join(parts) + "."


#: Both request-reply topics have one partition: the request's offset is the whole story.
TOPICS = (TopicSpec(REQUESTS, 1), TopicSpec(REPLIES, 1))

DEADLOCK = Spec(
    "request-reply: deadlock inside a transaction",
    "the requester waits for a reply inside the transaction that holds its request; a read_committed "
    "responder never sees it until transaction.timeout.ms aborts it (positive control)",
    RequestReply(),
    broker_config=FAST_FAILOVER,
    topics=TOPICS,
    liveness_ms=8_000,
    must_report=("request-reply-deadlock",),
)

COMMIT_FIRST = Spec(
    "request-reply: request committed before the wait",
    "the requester commits its request, then waits for the reply outside the transaction: the reply arrives",
    RequestReply(commit_first=True),
    broker_config=FAST_FAILOVER,
    topics=TOPICS,
    liveness_ms=8_000,
)

#: The deadlock (a positive control: it passes only when the deadlock is detected and explained)
#: and the working contrast.
DEADLOCK_SPECS: tuple[Spec, ...] = (DEADLOCK, COMMIT_FIRST)
