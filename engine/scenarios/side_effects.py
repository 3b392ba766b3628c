"""Side effects in a transactional loop: Kafka's output is exactly once, an e-mail sent from inside it is not.

:class:`InvoiceLoop` is a consume-transform-produce loop in the manner of Kafka's
TransactionalMessageCopier: one loop per ``orders`` partition (``transactional.id =
invoicer-<slot>``) reads the seeded orders read_committed and, per transaction, writes one
invoice record per order to ``invoices`` (same partition) and commits the consumer offsets in
the transaction. Loops abort on purpose (``abort_p``) and crash (``crash_p``); a new instance
(new producer with the same transactional.id, new consumer, new process number) fences the old
one and re-reads from the committed offsets. Kafka's output stays exactly once.

The e-mail provider is a :class:`~engine.db.database.Database` node (``db-email``): sending an
e-mail is inserting a ``sent_emails`` row, which no Kafka abort can take back.

``mode="inside"`` (the contrast) sends the invoice e-mail from inside the open transaction:
each aborted or crashed attempt has already sent its e-mails, so the retry sends them again
(``effect-duplicate``). ``mode="from-output"`` (the pattern that works) only produces
invoices; :class:`EmailSender`, an idempotent consumer of the committed ``invoices``, sends
each e-mail in one SQLite transaction with its dedup memory and its offsets, and crashes before
and after that commit.

The verdict: Kafka's copier oracle over the committed invoices (``copier-*``), and the database
checker (:func:`~engine.check.effects.check_effects`) over committed invoices vs e-mails
(every committed invoice has exactly one e-mail, and every e-mail names a committed invoice).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from engine.check.copier import check_copier
from engine.check.effects import check_effects, summary
from engine.check.history import Poll, Send
from engine.check.messages import effect_phantom_attempts
from engine.client.message import TopicPartition
from engine.db.database import Database, DatabaseFolder, read_only
from engine.errors import IllegalStateError, KafkaError
from engine.scenarios.fault_plans import late_crashes_and_lost_acks
from engine.scenarios.harness import FAST_FAILOVER, Process, Run, Sleep, Spec, TopicSpec
from engine.scenarios.supervisor import Crashes, counter, read_until_idle, supervise_consumer
from engine.scenarios.workloads import (
    Workload,
    abort_after_error,
    delivered_sends,
    loop_clients,
    loop_instances,
    produce_send,
    seed,
)

__all__ = [
    "EMAIL_SCHEMA",
    "MODES",
    "SIDE_EFFECT_SPECS",
    "EmailSender",
    "InvoiceLoop",
    "InvoiceState",
    "SenderCrashed",
    "send_email",
]

#: Where the e-mail is sent: inside the Kafka transaction (the contrast) or from its committed output.
MODES = ("inside", "from-output")
ORDERS, INVOICES = "orders", "invoices"
#: The e-mail sender's crash points: its database transaction rolled back, or committed.
SENDER_CRASH_POINTS = ("before-commit", "after-commit")

EMAIL_SCHEMA = """
CREATE TABLE IF NOT EXISTS sent_emails (
    email_id  INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id  TEXT NOT NULL,
    invoice   TEXT NOT NULL,
    sent_ms   INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS processed_messages (
    invoice_id    TEXT PRIMARY KEY,
    topic         TEXT NOT NULL,
    partition     INTEGER NOT NULL,
    "offset"      INTEGER NOT NULL,
    processed_ms  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS consumer_offsets (
    topic        TEXT NOT NULL,
    partition    INTEGER NOT NULL,
    next_offset  INTEGER NOT NULL,
    PRIMARY KEY (topic, partition)
);
"""


def send_email(txn: Any, order_id: str, invoice: str, now_ms: int) -> None:
    """Send the invoice e-mail of ``order_id``: one ``sent_emails`` row (an e-mail, once sent, stays sent)."""
    txn.execute("INSERT INTO sent_emails (order_id, invoice, sent_ms) VALUES (?, ?, ?)", (order_id, invoice, now_ms))


def _invoice(value: Any) -> tuple[str, int, int] | None:
    """Parse ``invoice:<order_id>:<partition>:<offset>:<attempt>``; return (order id, partition, offset)."""
    if isinstance(value, str) and value.startswith("invoice:") and value.count(":") == 4:
        _tag, order_id, p, o, _attempt = value.split(":")
        return order_id, int(p), int(o)
    return None


class SenderCrashed(Exception):  # noqa: N818 - it says what happened
    """The e-mail sender died at a named crash point; restart its database node and start a new sender."""


class EmailSender:
    """Read committed invoices and send each invoice's e-mail once, in the e-mail provider's database.

    One SQLite transaction per batch skips an invoice id already in ``processed_messages``,
    otherwise sends the e-mail and records the id, and stores the next offset per partition in
    ``consumer_offsets``; a new sender seeks to the stored offsets (Kafka's are never read).
    """

    def __init__(
        self, db: Database, consumer: Any, partitions: list[tuple[str, int]], history: tuple[Any, int]
    ) -> None:
        self.db = db
        self.consumer = consumer
        self.history = history
        self.sent = 0
        self.skipped = 0
        stored = {(t, p): o for t, p, o in db.query("SELECT topic, partition, next_offset FROM consumer_offsets")}
        parts = sorted(partitions)
        consumer.assign([TopicPartition(t, p, stored.get((t, p), 0)) for t, p in parts])
        recorder, proc = history
        op = recorder.invoke(proc, "assign", (), db.world.now_ms, keys=parts)
        recorder.complete(op, "ok", (), db.world.now_ms)

    def _crash(self, where: str) -> None:
        for node in (self.consumer, self.db):
            if node.is_up:
                self.db.world.crash(node.name)
        raise SenderCrashed(f"e-mail sender crashed {where}")

    def step(self, crash_at: str | None = None, max_records: int = 50) -> int:
        """Read one batch and send its e-mails in one transaction; return how many records were read."""
        recorder, proc = self.history
        op = recorder.invoke(proc, "poll", (), self.db.world.now_ms)
        msgs = [m for m in self.consumer.consume(max_records, timeout=0.05) if m.error() is None]
        recorder.complete(
            op, "ok", [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs], self.db.world.now_ms
        )
        if not msgs:
            return 0
        with self.db.transaction("send-emails") as txn:
            for m in msgs:
                self._apply(txn, m)
            if crash_at == "before-commit":
                self._crash("before its database commit")
        if crash_at == "after-commit":
            self._crash("after its database commit")
        return len(msgs)

    def _apply(self, txn: Any, m: Any) -> None:
        now = self.db.world.now_ms
        txn.execute(
            "INSERT INTO consumer_offsets (topic, partition, next_offset) VALUES (?, ?, ?)"
            " ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset",
            (m.topic(), m.partition(), m.offset() + 1),
        )
        parsed = _invoice(m.value())
        if parsed is None:  # not an invoice (the harness's sentinel records)
            return
        invoice_id = f"invoice-{parsed[0]}"
        if txn.query("SELECT 1 FROM processed_messages WHERE invoice_id = ?", (invoice_id,)):
            self.skipped += 1
            return
        send_email(txn, parsed[0], m.value(), now)
        txn.execute(
            'INSERT INTO processed_messages (invoice_id, topic, partition, "offset", processed_ms)'
            " VALUES (?, ?, ?, ?, ?)",
            (invoice_id, m.topic(), m.partition(), m.offset(), now),
        )
        self.sent += 1


class _Crash(Exception):  # noqa: N818 - a control-flow signal inside the loop, never escapes
    """The invoicing loop dies here (a hard client crash)."""


@dataclasses.dataclass
class InvoiceState:
    """What an invoicing run keeps: the e-mail provider's database, the seeded orders, its counts."""

    mode: str
    db: Database
    #: the seeded orders, (topic, partition, offset, value), sorted
    inputs: list[tuple[str, int, int, str]]
    aborts: int = 0
    crashes: int = 0
    sender_crashes: int = 0
    #: e-mails the sender's processed-messages table kept from being sent again
    duplicates_dropped: int = 0
    #: invoicing loops that saw their partition's input committed, and when the last one did
    loops_done: int = 0
    loops_done_ms: int | None = None
    #: the verdict's counts: committed invoices, e-mails sent, e-mails past one per order, anomalies by kind
    invoices_committed: int = 0
    emails_sent: int = 0
    duplicates: int = 0
    effects: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def orders(self) -> int:
        """Return how many orders were seeded."""
        return len(self.inputs)


@dataclasses.dataclass(frozen=True)
class InvoiceLoop(Workload):
    """Orders -> transactional invoicing loop -> ``invoices``; the invoice e-mail sent inside it or from its output."""

    mode: str = "from-output"
    orders_per_partition: int = 40
    partitions: int = 2
    txn_size: int = 5
    abort_p: float = 0.3
    crash_p: float = 0.05
    sender_crash_p: float = 0.1
    poll_ms: int = 40

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown side-effect mode {self.mode!r}; use one of {', '.join(MODES)}")

    def start(self, run: Run) -> None:
        """Seed the orders, open the e-mail provider's database, spawn the loops (and the sender)."""
        config = {"linger.ms": 5, "client.id": "orders-seeder", "request.timeout.ms": 1_500}
        orders = [
            (ORDERS, f"order-{p}-{i:03d}", p) for p in range(self.partitions) for i in range(self.orders_per_partition)
        ]
        inputs = seed(run, config, orders)
        db = Database(run.world, "email", DatabaseFolder(), EMAIL_SCHEMA)
        state = InvoiceState(self.mode, db, inputs)
        run.state = state
        for slot in range(self.partitions):
            run.spawn(lambda r, proc, slot=slot: self._loop(r, proc, slot, db, state))
        if self.mode == "from-output":
            run.spawn(lambda r, proc: self._sender(r, proc, db, state))

    # -- the transactional loop -------------------------------------------------------------------

    def _clients(self, run: Run, slot: int, gen: int) -> tuple[Any, Any]:
        producer, consumer = loop_clients(run, f"invoicer-{slot}", gen, "invoicers", {})
        consumer.assign([TopicPartition(ORDERS, slot)])
        return producer, consumer

    def _loop(self, run: Run, proc: int, slot: int, db: Database, state: InvoiceState) -> Process:
        yield from loop_instances(
            run,
            proc,
            lambda gen: self._clients(run, slot, gen),
            lambda proc, producer, consumer: self._transactions(run, proc, slot, producer, consumer, db, state),
        )
        state.loops_done += 1
        state.loops_done_ms = run.now_ms

    def _done(self, consumer: Any, slot: int) -> bool:
        (tp,) = consumer.committed([TopicPartition(ORDERS, slot)])
        return tp.offset >= self.orders_per_partition

    def _transactions(
        self, run: Run, proc: int, slot: int, producer: Any, consumer: Any, db: Database, state: InvoiceState
    ) -> Process:
        idle = 0
        while True:
            try:
                msgs = [m for m in consumer.consume(self.txn_size, timeout=0.05) if m.error() is None]
                if not msgs and (idle := idle + 1) % 10 == 0 and self._done(consumer, slot):
                    return "done"
            except (KafkaError, IllegalStateError):
                return "restart"
            if not msgs:
                yield Sleep(20)
                continue
            idle = 0
            outcome = self._one_transaction(run, proc, slot, producer, consumer, msgs, db, state)
            if outcome == "info":
                return "restart"
            if outcome == "fail":
                try:  # rewind to the committed offset: the aborted orders are invoiced again
                    (tp,) = consumer.committed([TopicPartition(ORDERS, slot)])
                    consumer.seek(TopicPartition(ORDERS, slot, max(tp.offset, 0)))
                except (KafkaError, IllegalStateError):
                    return "restart"
            yield

    def _one_transaction(
        self,
        run: Run,
        proc: int,
        slot: int,
        producer: Any,
        consumer: Any,
        msgs: list[Any],
        db: Database,
        state: InvoiceState,
    ) -> str:
        """Invoice ``msgs`` in one transaction (e-mailing each one first, inside it, in the contrast)."""
        meta = consumer.group_metadata()
        polls = [Poll(m.topic(), m.partition(), m.offset(), m.value()) for m in msgs]
        attempt = f"p{proc}-n{len(run.history)}"  # values stay unique per attempt (the checker's assumption)
        sends = [Send(INVOICES, slot, f"invoice:{m.value()}:{m.partition()}:{m.offset()}:{attempt}") for m in msgs]
        op = run.history.invoke(proc, "txn", tuple(sends), run.now_ms)
        offsets = [TopicPartition(ORDERS, slot, msgs[-1].offset() + 1)]
        reports: dict[str, Any] = {}
        abort = run.rng.random() < self.abort_p
        outcome, error = "ok", None
        try:
            producer.begin_transaction()
            for m, s in zip(msgs, sends, strict=True):
                if self.mode == "inside":
                    with db.transaction("send-email") as txn:
                        send_email(txn, m.value(), s.value, run.now_ms)
                produce_send(producer, s, reports)
            if run.rng.random() < self.crash_p:
                raise _Crash
            producer.send_offsets_to_transaction(offsets, meta)
            if abort:
                producer.abort_transaction()
                outcome = "fail"
            else:
                producer.commit_transaction()
        except _Crash:
            state.crashes += 1
            run.world.crash(producer.name)
            run.world.crash(consumer.name)
            run.history.complete(op, "info", None, run.now_ms, error="crash")
            return "info"
        except (KafkaError, IllegalStateError) as exc:
            error = type(exc).__name__
            outcome = "fail" if abort_after_error(producer) else "info"
        state.aborts += outcome == "fail"
        done = delivered_sends(sends, reports, outcome)
        run.history.complete(op, outcome, (*done, *(polls if outcome == "ok" else ())), run.now_ms, error=error)
        return outcome

    # -- the idempotent e-mail sender ---------------------------------------------------------------

    def _sender(self, run: Run, proc: int, db: Database, state: InvoiceState) -> Process:
        parts = [(INVOICES, p) for p in range(self.partitions)]

        def make(gen: int, proc: int) -> EmailSender:
            config = {"isolation.level": "read_committed", "client.id": f"email-sender-{gen}"}
            return EmailSender(db, run.cluster.consumer(run.consumer_config(config)), parts, (run.history, proc))

        def done(_sender: EmailSender, idle: int) -> bool:
            return run.stopping and state.loops_done == self.partitions and idle > 20

        crashes = Crashes(SenderCrashed, SENDER_CRASH_POINTS, self.sender_crash_p, counter(state, "sender_crashes"))
        yield from supervise_consumer(run, proc, make, crashes, db=db, state=state, poll_ms=self.poll_ms, done=done)

    # -- the verdict ------------------------------------------------------------------------------

    def judge(self, run: Run) -> list[str]:
        """Kafka's copier oracle over the committed invoices, then every committed invoice has exactly one e-mail."""
        state = run.state_of(InvoiceState)
        db = state.db
        invoices = _committed_invoices(run, self.partitions)
        outputs = [(t, p, o, ORDERS, sp, so) for t, p, o, (_order, sp, so), _v in invoices]
        findings = [f"{a.kind}: {a.message}" for a in check_copier(state.inputs, outputs, check_order=True)]
        committed_values = {v for *_rest, v in invoices}
        committed_orders = sorted({order for _t, _p, _o, (order, _sp, _so), _v in invoices})
        with read_only(db.path) as conn:
            emails = conn.execute("SELECT order_id, invoice FROM sent_emails ORDER BY email_id").fetchall()
        anomalies = check_effects(committed_orders, [o for o, _i in emails], row="order", effect="e-mail")
        findings += [f"{a.kind}: {a.message}" for a in anomalies]
        aborted = sorted(i for _o, i in emails if i not in committed_values)
        if aborted:
            findings.append(f"effect-phantom: {effect_phantom_attempts(aborted)}")
        per_order = Counter(o for o, _i in emails)
        state.invoices_committed = len(invoices)
        state.emails_sent = len(emails)
        state.duplicates = sum(n - 1 for n in per_order.values() if n > 1)
        state.effects = summary(anomalies)
        return findings


def _committed_invoices(run: Run, partitions: int) -> list[tuple[str, int, int, tuple[str, int, int], str]]:
    """Read ``invoices`` read_committed from the start; return (topic, partition, offset, lineage, value)."""
    out = []

    def invoice(m: Any) -> None:
        parsed = _invoice(m.value())
        if parsed is not None:
            out.append((m.topic(), m.partition(), m.offset(), parsed, m.value()))

    read_until_idle(run.cluster, [(INVOICES, p) for p in range(partitions)], "invoices-judge", invoice)
    return out


def _specs() -> tuple[Spec, ...]:
    common: dict[str, Any] = {
        "topics": (TopicSpec(ORDERS, 2), TopicSpec(INVOICES, 2)),
        "broker_config": FAST_FAILOVER,
        "safety_ms": 6_000,
        "liveness_ms": 30_000,
        "allowed": "eos",
    }
    return (
        Spec(
            "side effects: e-mail inside the transaction",
            "a transactional loop sends each invoice e-mail, then produces the invoice; aborts and crashes retry "
            "the transaction: the invoices are exactly once, the e-mails repeat and name aborted invoices "
            "(positive control: effect-duplicate, effect-phantom)",
            InvoiceLoop("inside", abort_p=0.3, crash_p=0.1),
            None,
            must_report=("effect-duplicate", "effect-phantom"),
            **common,
        ),
        Spec(
            "side effects: e-mail from the committed output",
            "the transactional loop only produces invoices; an idempotent sender reads them read_committed and "
            "sends each e-mail once, with its dedup memory and offsets in one SQLite transaction; loop, sender "
            "and broker crashes",
            InvoiceLoop("from-output", abort_p=0.3, crash_p=0.05, sender_crash_p=0.1),
            late_crashes_and_lost_acks,
            **common,
        ),
    )


#: The side-effect scenario and its contrast, in the catalog's order.
SIDE_EFFECT_SPECS = _specs()
