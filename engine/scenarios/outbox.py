"""Outbox pipelines as scenarios: order service -> relay -> Kafka -> idempotent database sink.

:class:`OutboxPipeline` runs four kinds of process in one simulated world, each at simulated
instants: the order service (writes orders and their events to its SQLite file, now and then
refusing a malformed order and crashing mid-transaction), the relay (a polling relay or a log
tailer, crashing at its named crash points), the sink (the idempotent consumer, crashing before
and after its database commit) and, from the fault plan, broker crashes and lost acks.

The verdict joins the EOS checks of the client history (the relay's sends and the sink's polls;
the topic is at-least-once by design, so a re-sent event is an allowed duplicate there) with the
database checker (:mod:`engine.check.effects`): every committed order has exactly one shipment,
every shipment has a committed order.

The contrasts are the same pipeline with one piece taken away, each a positive control that
passes only when the database checker catches its anomaly: the dual write (commit, then publish:
``effect-lost``; publish, then roll back: ``effect-phantom``) and the sink without deduplication
(``effect-duplicate``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from engine.check.effects import check_effects, summary
from engine.db.database import Database, DatabaseFolder, read_only
from engine.errors import IllegalStateError, InvalidEventError, KafkaError
from engine.outbox import relay as relays
from engine.outbox import schema
from engine.outbox import service as services
from engine.outbox import sink as sinks
from engine.outbox.event import Routes
from engine.scenarios.fault_plans import crashes_and_lost_acks
from engine.scenarios.harness import FAST_FAILOVER, Process, Run, Sleep, Spec, TopicSpec, relay_producer_config
from engine.scenarios.supervisor import Crashes, counter, relay_crashes, supervise, supervise_consumer
from engine.scenarios.workloads import Workload

__all__ = ["MODES", "OUTBOX_SPECS", "OutboxPipeline", "OutboxState"]

#: How the events leave the service: through the outbox (two relays) or by a dual write (the contrasts).
MODES = ("polling", "log-tailing", "dual-write: commit then publish", "dual-write: publish then roll back")
TOPIC = "orders"
ROUTES = {"order": TOPIC}
#: Malformed orders the service must refuse (each an InvalidEventError, nothing written).
BAD_ORDERS = ("unknown-aggregate", "negative-amount", "payload-not-json", "empty-customer")


@dataclasses.dataclass
class OutboxState:
    """What an outbox run keeps: its databases (the files live as long as the result keeps them), its counts."""

    folder: DatabaseFolder
    service: services.OrderService
    sink_db: Database
    #: orders the service placed, and those it refused (order id, how it was malformed, the error)
    placed: list[str] = dataclasses.field(default_factory=list)
    rejected: list[tuple[str, str | None, str]] = dataclasses.field(default_factory=list)
    service_crashes: int = 0
    relay_crashes: int = 0
    sink_crashes: int = 0
    #: redeliveries the sink's processed-messages table dropped
    duplicates_dropped: int = 0
    service_done: bool = False
    #: the relay saw the outbox empty after the service ended (a dual write has no relay: done at once)
    relay_done: bool = False
    #: event ids the relays recorded as sends (a re-send is recorded once)
    recorded: set[str] = dataclasses.field(default_factory=set)
    #: the verdict's counts: committed orders, shipments, and the database checker's anomalies by kind
    committed_orders: int = 0
    shipments: int = 0
    effects: dict[str, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class OutboxPipeline(Workload):
    """Order service -> outbox -> relay -> ``orders`` topic -> idempotent sink, with crashes everywhere."""

    mode: str = "polling"
    orders: int = 60
    dedup: bool = True
    bad_p: float = 0.1
    service_crash_p: float = 0.05
    relay_crash_p: float = 0.1
    relay_crash_points: tuple[str, ...] = relays.CRASH_POINTS
    sink_crash_p: float = 0.1
    relay_batch: int = 20
    poll_ms: int = 40

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown outbox pipeline mode {self.mode!r}; use one of {', '.join(MODES)}")

    # -- set up ---------------------------------------------------------------------------------

    @property
    def dual_write(self) -> bool:
        """Return True for the contrasts that publish from the service directly."""
        return self.mode.startswith("dual-write")

    def start(self, run: Run) -> None:
        """Open the databases in a fresh folder and spawn the service, the relay and the sink."""
        folder = DatabaseFolder()
        outbox_mode = "log-tailing" if self.mode == "log-tailing" else "polling"
        service = services.OrderService(run.world, "orders", folder, Routes(ROUTES), outbox_mode)
        sink_db = sinks.sink_database(run.world, "shipping", folder)
        state = OutboxState(folder, service, sink_db, relay_done=self.dual_write)
        run.state = state
        run.spawn(lambda r, proc: self._service(r, proc, service, state))
        if not self.dual_write:
            run.spawn(lambda r, proc: self._relay(r, proc, folder, state))
        run.spawn(lambda r, proc: self._sink(r, proc, sink_db, state))

    def _partitions(self, run: Run) -> dict[str, int]:
        return {TOPIC: run.cluster.topics[TOPIC]}

    # -- the service ----------------------------------------------------------------------------

    def _service(self, run: Run, proc: int, service: services.OrderService, state: OutboxState) -> Process:
        rng = run.rng
        producer = None
        gen = 0
        for i in range(self.orders):
            order_id = f"order-{i:04d}"
            customer, amount = f"customer-{rng.randint(1, 9)}", rng.randint(100, 9_900)
            bad = rng.choice(BAD_ORDERS) if rng.random() < self.bad_p else None
            crash = rng.random() < self.service_crash_p
            while not service.db.is_up:
                yield Sleep(20)
            try:
                if self.dual_write:
                    if producer is None:
                        producer = run.cluster.producer(relay_producer_config(run, f"orders-publisher-{gen}"))
                    publish_first = self.mode.endswith("roll back")
                    point = services.DUAL_WRITE_CRASH_POINTS[1 if publish_first else 0] if crash else None
                    service.place_order_dual_write(
                        producer, order_id, customer, amount, publish_first=publish_first, crash_at=point
                    )
                else:
                    point = rng.choice(services.CRASH_POINTS) if crash else None
                    service.place_order(order_id, crash_at=point, **_order_args(bad, customer, amount))
                state.placed.append(order_id)
            except InvalidEventError as exc:
                state.rejected.append((order_id, bad, str(exc)))
            except services.ServiceCrashed:
                state.service_crashes += 1
                if producer is not None and producer.is_up:
                    run.world.crash(producer.name)
                producer = None
                gen += 1
                yield Sleep(rng.randint(50, 200))
                run.restart_if_down(service.db)
            except (KafkaError, IllegalStateError):
                producer = (
                    None  # a dual write whose publish failed: that order's event is lost, as the pattern loses it
                )
                gen += 1
            yield Sleep(rng.randint(5, 30))
        state.service_done = True

    # -- the relay ------------------------------------------------------------------------------

    def _relay(self, run: Run, proc: int, folder: DatabaseFolder, state: OutboxState) -> Process:
        db = Database(run.world, "orders", folder, schema.SERVICE, client="relay")
        cls = relays.LogTailer if self.mode == "log-tailing" else relays.PollingRelay

        def make(gen: int, proc: int) -> relays.PollingRelay:
            producer = run.cluster.producer(relay_producer_config(run, f"relay-{gen}"))
            history = (run.history, proc, state.recorded)
            return cls(db, producer, Routes(ROUTES), self._partitions(run), batch=self.relay_batch, history=history)

        def done(relay: relays.PollingRelay, idle: int) -> bool:
            return idle > 0 and run.stopping and state.service_done and relay.pending() == 0

        crashes = relay_crashes(run, db, state, self.relay_crash_points, self.relay_crash_p)
        yield from supervise(run, proc, make, crashes, restart=db, poll_ms=self.poll_ms, done=done)
        state.relay_done = True

    # -- the sink -------------------------------------------------------------------------------

    def _sink(self, run: Run, proc: int, db: Database, state: OutboxState) -> Process:
        parts = [(TOPIC, p) for p in range(run.cluster.topics[TOPIC])]

        def make(gen: int, proc: int) -> sinks.IdempotentSink:
            config = {"isolation.level": "read_committed", "client.id": f"sink-{gen}"}
            consumer = run.cluster.consumer(run.consumer_config(config))
            return sinks.IdempotentSink(db, consumer, parts, dedup=self.dedup, history=(run.history, proc))

        def done(_sink: sinks.IdempotentSink, idle: int) -> bool:
            return run.stopping and state.service_done and state.relay_done and idle > 10

        crashes = Crashes(sinks.SinkCrashed, sinks.CRASH_POINTS, self.sink_crash_p, counter(state, "sink_crashes"))
        yield from supervise_consumer(run, proc, make, crashes, db=db, state=state, poll_ms=self.poll_ms, done=done)

    # -- the verdict ----------------------------------------------------------------------------

    def judge(self, run: Run) -> list[str]:
        """The database checker: every committed order has exactly one shipment, and no shipment more."""
        state = run.state_of(OutboxState)
        committed = _read(state.service.db.path, "SELECT order_id FROM orders ORDER BY order_id")
        shipped = _read(state.sink_db.path, "SELECT order_id FROM shipments ORDER BY shipment_id")
        anomalies = check_effects(committed, shipped, row="order", effect="shipment")
        state.committed_orders = len(committed)
        state.shipments = len(shipped)
        state.effects = summary(anomalies)
        return [f"{a.kind}: {a.message}" for a in anomalies]


def _order_args(bad: str | None, customer: str, amount: int) -> dict[str, Any]:
    """Return ``place_order``'s arguments for a well-formed order, or one malformed in the way ``bad`` names."""
    args: dict[str, Any] = {"customer": customer, "amount": amount}
    if bad == "unknown-aggregate":
        args["aggregate_type"] = "invoice"
    elif bad == "negative-amount":
        args["amount"] = -amount
    elif bad == "payload-not-json":
        args["extra"] = {"tags": {"a set", "is not JSON"}}
    elif bad == "empty-customer":
        args["customer"] = ""
    return args


def _read(path: Path, sql: str) -> list[Any]:
    """Read one column from a database file, read-only (the verdict never writes)."""
    with read_only(path) as conn:
        return [r[0] for r in conn.execute(sql)]


def _specs() -> tuple[Any, ...]:
    topics = (TopicSpec(TOPIC, 3),)
    common: dict[str, Any] = {
        "topics": topics,
        "broker_config": FAST_FAILOVER,
        "safety_ms": 5_000,
        "liveness_ms": 15_000,
        "allowed": "at-least-once",
    }
    return (
        Spec(
            "outbox: polling relay",
            "orders and their events in one SQLite transaction; a polling relay publishes, an idempotent "
            "sink applies each once; service, relay, sink and broker crashes",
            OutboxPipeline("polling"),
            crashes_and_lost_acks,
            **common,
        ),
        Spec(
            "outbox: log tailing",
            "the outbox row is inserted and deleted at once; a log tailer publishes from the trigger-fed "
            "change log (Debezium's way); the same crashes",
            OutboxPipeline("log-tailing"),
            crashes_and_lost_acks,
            **common,
        ),
        Spec(
            "outbox contrast: dual write, commit then publish",
            "no outbox: the service commits the order, then publishes; a crash between loses the event "
            "(positive control: effect-lost)",
            OutboxPipeline("dual-write: commit then publish", service_crash_p=0.15, bad_p=0.0),
            None,
            must_report=("effect-lost",),
            **common,
        ),
        Spec(
            "outbox contrast: dual write, publish then roll back",
            "no outbox: the service publishes, then its database transaction rolls back; the event is a "
            "phantom (positive control: effect-phantom)",
            OutboxPipeline("dual-write: publish then roll back", service_crash_p=0.15, bad_p=0.0),
            None,
            must_report=("effect-phantom",),
            **common,
        ),
        Spec(
            "outbox contrast: sink without deduplication",
            "the polling relay re-sends after a crash between ack and mark; a sink without the "
            "processed-messages table applies the copies (positive control: effect-duplicate)",
            OutboxPipeline("polling", dedup=False, relay_crash_p=0.3, relay_crash_points=("after-ack",)),
            None,
            must_report=("effect-duplicate",),
            **common,
        ),
    )


#: The outbox scenarios and their contrasts, in the catalog's order.
OUTBOX_SPECS = _specs()
