"""Benchmark: events/s through order service -> relay -> cluster -> sink, against the same SQLite alone.

What runs (one sample = one fresh process; ``--repeat`` samples, default 3, best and median printed):

- **pipeline**: ``Cluster(seed=1, brokers=3, keep_trace=False)`` with topic ``orders`` (3
  partitions, RF=3); a :class:`~engine.db.database.DatabaseFolder` in a fresh temporary folder
  **on disk** (``--dir`` picks the parent; the script prints its file system and warns on tmpfs);
  an :class:`~engine.outbox.OrderService` (polling outbox, ``orders.sqlite``); a
  :class:`~engine.outbox.PollingRelay` on its own connection to that file (``client="relay"``),
  publishing with the idempotent producer (``acks=all``, ``linger.ms=0``, ``--relay-batch``
  events per step, default 100); an :class:`~engine.outbox.IdempotentSink`
  (``shipping.sqlite``) reading all 3 partitions with a read_committed consumer
  (``--sink-batch`` records per step, default 100). Per round: ``place_order`` ``--round``
  times (default 100, one transaction each), ``relay.step()`` while ``relay.pending()``, then
  ``sink.step()`` until every event placed so far is applied. The timed span is the rounds of
  ``--events`` events (default 5,000); set-up (cluster, topic, the producer id, the files and
  their schemas) is not timed.
- **SQLite alone**: exactly the statements the pipeline ran, replayed in the same order with the
  same parameters on fresh files of the same schema in a fresh folder beside the pipeline's, on
  three plain ``sqlite3`` connections opened as :class:`~engine.db.database.Database` opens them
  (``journal_mode=WAL``, ``synchronous=FULL``, ``isolation_level=None``), with no cluster and no
  engine objects. Every statement counts: the service's ``BEGIN IMMEDIATE`` / INSERT order /
  INSERT outbox / ``COMMIT``, the relay's ``pending()`` count and SELECT of unsent rows and its
  ``UPDATE sent_ms`` transaction (same batches), the sink's offset upsert, dedup SELECT, INSERT
  shipment and INSERT processed_messages in one transaction per sink step (same batches). Query
  results are fetched in full.

  The statements are recorded by a thin wrapper around each ``Database``'s connection that logs
  ``(connection, sql, params)`` at every ``execute`` and passes it on. (``set_trace_callback``
  gives the statements with values inlined, but with the outbox's capture trigger Python 3.11 /
  SQLite 3.40 report each ``INSERT INTO outbox`` once more per trigger program, so a literal
  replay would insert it three times; the wrapper also keeps the parameterised statements, so
  the replay reuses prepared statements just as the pipeline does.) After the replay, every table
  of the replayed files is compared with the pipeline's: they must be equal row for row.

**ratio** = pipeline seconds / SQLite-alone seconds (best of each). With ``synchronous=FULL`` in
WAL mode each ``COMMIT`` is an fsync of the WAL on disk, so the SQLite figure is the database's
own ceiling for this workload (about one fsync per order, plus one per relay and sink batch). A
ratio near 1 means the database sets the pace and the simulated Kafka (three brokers, replication,
the producer and consumer protocols, all in Python) adds little; the ratio minus 1 is the
simulation's share over the database's cost. On tmpfs fsync is free, so the ratio there shows the
simulation's cost against SQLite's CPU time alone.

Correctness (a mismatch is a bug, not a speed figure; the script prints a warning and exits
non-zero): every order committed has one shipment (orders == shipments, the same order ids), the
outbox holds no unsent row, and the replayed files hold the same rows as the pipeline's.

Figures only; no timing is asserted.

Usage::

    python bench/outbox.py                       # 5,000 events, 3 samples
    python bench/outbox.py --events 20000 --repeat 5
    python bench/outbox.py --quick               # smoke run: 300 events, 3 samples
    python bench/outbox.py --dir /var/tmp        # put the database files on another file system
    # one sample in this process, e.g. under a profiler:
    python -m cProfile -s cumtime bench/outbox.py --child --events 2000
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import BenchError, finish, machine_note, print_child_result, run_json_child  # noqa: E402 - after the path setup

sys.path.insert(0, str(ROOT))

TOPIC = "orders"
PARTITIONS = 3
BROKERS = 3
RF = 3
#: Sink steps in a row that may return nothing before a round gives up (a lost event, not a slow one).
IDLE_STEPS = 200
SERVICE_FILE, SINK_FILE = "orders", "shipping"
#: The replay's connections, in the pipeline's order: service, relay (second connection to the service file), sink.
CONNECTIONS = ("service", "relay", "sink")
TABLES = {
    SERVICE_FILE: ("orders", "outbox", "outbox_changes", "relay_position"),
    SINK_FILE: ("processed_messages", "shipments", "consumer_offsets"),
}


# ==========================================================================================
# recording the statements
# ==========================================================================================


class RecordingConnection:
    """A ``sqlite3.Connection`` stand-in that logs each ``execute`` as ``(connection, sql, params)``."""

    def __init__(self, conn: sqlite3.Connection, index: int, log: list[tuple[int, str, Any]]) -> None:
        self._real = conn
        self._index = index
        self._log = log

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        """Log the statement, then run it on the real connection."""
        self._log.append((self._index, sql, tuple(params)))
        return self._real.execute(sql, params)

    def __getattr__(self, name: str) -> Any:
        # Anything else (close, executescript, ...) would run unrecorded: refuse, so the replay stays exact.
        msg = f"the bench's recording connection has no {name!r}: the engine now calls sqlite3 another way"
        raise BenchError(msg)

    def close(self) -> None:
        """Close the real connection."""
        self._real.close()


def record(db: Any, index: int, log: list[tuple[int, str, Any]]) -> None:
    """Wrap ``db``'s open connection so every statement it runs from now on lands in ``log``."""
    conn = db._conn  # the bench reaches in on purpose: it must see every statement
    if not isinstance(conn, sqlite3.Connection):
        raise BenchError(f"{db.name} has no open sqlite3 connection to record (got {type(conn).__name__})")
    db._conn = RecordingConnection(conn, index, log)


# ==========================================================================================
# the pipeline
# ==========================================================================================


def run_pipeline(folder_path: Path, args: argparse.Namespace) -> tuple[dict[str, Any], list[tuple[int, str, Any]]]:
    """Run the pipeline over ``args.events`` events; return its figures and its statement log."""
    from engine import Cluster
    from engine.db.database import Database, DatabaseFolder
    from engine.outbox import IdempotentSink, OrderService, PollingRelay, Routes, schema
    from engine.outbox.sink import sink_database

    c = Cluster(seed=args.seed, brokers=BROKERS, keep_trace=False)
    c.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=RF)
    folder = DatabaseFolder(folder_path)
    routes = Routes({"order": TOPIC})
    service = OrderService(c.world, SERVICE_FILE, folder, routes, "polling")
    relay_db = Database(c.world, SERVICE_FILE, folder, schema.SERVICE, client="relay")
    producer = c.producer({"client.id": "relay", "acks": "all", "linger.ms": 0, "enable.idempotence": True})
    relay = PollingRelay(relay_db, producer, routes, {TOPIC: PARTITIONS}, batch=args.relay_batch)
    sink_db = sink_database(c.world, SINK_FILE, folder)
    consumer = c.consumer({"client.id": "sink", "isolation.level": "read_committed"})
    sink = IdempotentSink(sink_db, consumer, [(TOPIC, p) for p in range(PARTITIONS)])
    # The producer id and the partition counts first, so the timed span starts on a ready producer.
    c.run_until(lambda: producer.producer_id >= 0)
    log: list[tuple[int, str, Any]] = []
    for i, db in enumerate((service.db, relay_db, sink_db)):
        record(db, i, log)

    sched = c.world.scheduler
    events0, sim0 = sched.events_run, c.now_ms
    placed = relay_steps = sink_steps = 0
    stalled = False
    t0, cpu0 = time.perf_counter(), time.process_time()
    while placed < args.events and not stalled:
        for _ in range(min(args.round, args.events - placed)):
            service.place_order(f"order-{placed:07d}", f"customer-{placed % 10}", 100 + placed % 9_900)
            placed += 1
        while relay.pending():
            relay.step()
            relay_steps += 1
        idle = 0
        while sink.applied + sink.skipped < placed:
            n = sink.step(max_records=args.sink_batch)
            sink_steps += 1
            idle = 0 if n else idle + 1
            if idle >= IDLE_STEPS:
                stalled = True
                break
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    sim_ms = c.now_ms - sim0
    sim_events = sched.events_run - events0
    timed = len(log)

    orders = service.db.query("SELECT order_id FROM orders ORDER BY order_id")
    unsent = relay.pending()
    shipped = sink_db.query("SELECT order_id FROM shipments ORDER BY order_id")
    out = {
        "events": placed,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "sim_ms": sim_ms,
        "sim_events": sim_events,
        "orders": len(orders),
        "shipments": len(shipped),
        "same_ids": [r[0] for r in orders] == [r[0] for r in shipped],
        "unsent": unsent,
        "published": relay.published,
        "applied": sink.applied,
        "skipped": sink.skipped,
        "stalled": stalled,
        "relay_steps": relay_steps,
        "sink_steps": sink_steps,
        "commits": [service.db.commits, relay_db.commits, sink_db.commits],
    }
    del log[timed:]  # the replay is the timed span's statements only, not the reads above
    for db in (service.db, relay_db, sink_db):
        db.close()
    return out, log


# ==========================================================================================
# the same statements, SQLite alone
# ==========================================================================================


def open_like_database(path: Path, schema_sql: str) -> sqlite3.Connection:
    """Open ``path`` as ``engine.db.database.Database._open`` does."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.executescript(schema_sql)
    return conn


def run_replay(folder: Path, log: list[tuple[int, str, Any]]) -> tuple[float, float]:
    """Replay ``log`` on fresh files in ``folder``; return the wall and CPU seconds of the replay."""
    from engine.outbox import schema

    folder.mkdir(parents=True, exist_ok=True)
    service_path, sink_path = folder / f"{SERVICE_FILE}.sqlite", folder / f"{SINK_FILE}.sqlite"
    conns = [
        open_like_database(service_path, schema.SERVICE),
        open_like_database(service_path, schema.SERVICE),
        open_like_database(sink_path, schema.SINK),
    ]
    execs = [conn.execute for conn in conns]
    t0, cpu0 = time.perf_counter(), time.process_time()
    for index, sql, params in log:
        execs[index](sql, params).fetchall()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    for conn in conns:
        conn.close()
    return seconds, cpu


def tables_digest(folder: Path) -> dict[str, str]:
    """Return a digest of every table's rows (rowid order) in the two files of ``folder``."""
    out = {}
    for name, tables in TABLES.items():
        conn = sqlite3.connect(folder / f"{name}.sqlite")
        try:
            for table in tables:
                h = hashlib.sha256()
                for row in conn.execute(f"SELECT * FROM {table} ORDER BY rowid"):
                    h.update(repr(row).encode())
                out[f"{name}.{table}"] = h.hexdigest()
        finally:
            conn.close()
    return out


# ==========================================================================================
# one sample
# ==========================================================================================


def fs_type(path: Path) -> str:
    """Return the file system type of ``path`` (the longest mount point above it in /proc/mounts)."""
    best, kind = "", "?"
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    mount = parts[1]
                    under = str(path).startswith(mount.rstrip("/") + "/") or str(path) == mount
                    if under and len(mount) > len(best):
                        best, kind = mount, parts[2]
    except OSError:
        pass
    return kind


def run_sample(args: argparse.Namespace) -> dict[str, Any]:
    """One sample in this process: the pipeline, then the replay of its statements on fresh files."""
    with tempfile.TemporaryDirectory(prefix="eos-bench-outbox-", dir=args.dir) as tmp:
        base = Path(tmp).resolve()
        out, log = run_pipeline(base / "pipeline", args)
        out["sqlite_seconds"], out["sqlite_cpu_seconds"] = run_replay(base / "replay", log)
        out["replay_statements"] = len(log)
        want, got = tables_digest(base / "pipeline"), tables_digest(base / "replay")
        out["replay_differs"] = sorted(k for k in want if want[k] != got[k])
        out["log_digest"] = hashlib.sha256(repr(log).encode()).hexdigest()[:16]
        out["folder_fs"] = fs_type(base)
        out["folder"] = str(base.parent)
    return out


# ==========================================================================================
# driver
# ==========================================================================================


def problems_of(r: dict[str, Any], events: int) -> list[str]:
    """Return what is wrong with a sample (empty when every order became exactly one shipment)."""
    bad = []
    if r["stalled"]:
        bad.append(f"the sink stopped receiving after {r['applied'] + r['skipped']:,} of {r['events']:,} events")
    if r["events"] != events or r["orders"] != events:
        bad.append(f"{r['orders']:,} orders committed, {events:,} placed")
    if r["shipments"] != r["orders"] or not r["same_ids"]:
        bad.append(
            f"shipments != orders: {r['shipments']:,} shipments for {r['orders']:,} orders"
            f"{'' if r['same_ids'] else ' (the order ids differ)'}"
        )
    if r["unsent"]:
        bad.append(f"{r['unsent']:,} outbox rows still unsent")
    if r["replay_differs"]:
        bad.append(f"the SQLite-alone replay left different rows in {', '.join(r['replay_differs'])}")
    return bad


def main(argv: list[str] | None = None) -> int:
    """Parse the options; run ``--repeat`` samples in fresh processes (or one here, with --child)."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--events", type=int, default=5_000, help="orders placed per sample (default 5,000)")
    ap.add_argument("--quick", action="store_true", help="smoke size: 300 events")
    ap.add_argument("--round", type=int, default=100, help="orders placed per round (default 100)")
    ap.add_argument("--relay-batch", type=int, default=100, help="events per relay step (default 100)")
    ap.add_argument("--sink-batch", type=int, default=100, help="records per sink step (default 100)")
    ap.add_argument("--repeat", type=int, default=3, help="samples, each in a fresh process (default 3)")
    ap.add_argument("--dir", default=None, help="parent of the temporary database folders (default: the system's)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per sample (default 1800)")
    ap.add_argument("--child", action="store_true", help="run one sample in this process")
    ap.add_argument("--json", action="store_true", help="with --child: print the figures as one JSON line")
    args = ap.parse_args(argv)
    if args.quick:
        args.events = 300
    for name in ("events", "round", "relay_batch", "sink_batch", "repeat"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.child:
        r = run_sample(args)
        print_child_result(r, as_json=args.json)
        return 0

    print(
        f"outbox: {BROKERS} brokers, topic {TOPIC!r} {PARTITIONS} partitions RF={RF}; {args.events:,} orders in rounds "
        f"of {args.round}; polling relay batch {args.relay_batch} (idempotent producer, acks=all, linger.ms=0); "
        f"sink batch {args.sink_batch} (read_committed); SQLite journal_mode=WAL, synchronous=FULL; "
        f"{args.repeat} samples, one fresh process each; GC on"
    )
    print(machine_note())
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--json",
        "--events",
        str(args.events),
        "--round",
        str(args.round),
        "--relay-batch",
        str(args.relay_batch),
        "--sink-batch",
        str(args.sink_batch),
        "--seed",
        str(args.seed),
        *(["--dir", args.dir] if args.dir else []),
    ]
    samples: list[dict[str, Any]] = []
    failures: list[str] = []
    for i in range(args.repeat):
        try:
            samples.append(run_json_child(cmd, timeout=args.timeout, what=f"sample {i + 1}"))
        except (BenchError, subprocess.TimeoutExpired) as exc:
            failures.append(f"sample {i + 1}: {exc}")
    for i, r in enumerate(samples):
        failures += [f"sample {i + 1}: {p}" for p in problems_of(r, args.events)]
    if samples:
        print_table(samples)
    if len({r["log_digest"] for r in samples}) > 1:
        print("note: the samples ran different statements (the simulation was not deterministic across processes)")
    if failures:
        return finish(failures, heading="WARNING: correctness failure (a bug, not a speed figure):")
    r = samples[0]
    print(
        f"\ncorrectness: orders {r['orders']:,} == shipments {r['shipments']:,} (same order ids), no unsent outbox "
        f"row, {r['skipped']} duplicates dropped; the replayed files hold the same rows as the pipeline's, "
        f"in every sample."
    )
    return 0


def print_table(samples: list[dict[str, Any]]) -> None:
    """Print the best (min) and median of each figure, and the per-sample details."""
    r = samples[0]
    folder_note = f"database folders under {r['folder']} ({r['folder_fs']})"
    if r["folder_fs"] in ("tmpfs", "ramfs"):
        folder_note += ": WARNING, not on disk (fsync is free there); pass --dir on a disk"
    print(folder_note)
    pipe = [s["seconds"] for s in samples]
    alone = [s["sqlite_seconds"] for s in samples]
    n = r["events"]
    head = (
        f"{'':<7} {'events':>7} {'pipeline s':>10} {'pipeline ev/s':>13} {'SQLite s':>9} {'SQLite ev/s':>11} "
        f"{'ratio':>6} {'sim ms':>8} {'sim events':>10}"
    )
    print()
    print(head)
    print("-" * len(head))
    for label, fn in (("best", min), ("median", statistics.median)):
        p, s = fn(pipe), fn(alone)
        print(
            f"{label:<7} {n:>7,} {p:>10.3f} {n / p:>13,.0f} {s:>9.3f} {n / s:>11,.0f} {p / s:>6.2f} "
            f"{r['sim_ms']:>8,} {r['sim_events']:>10,}"
        )
    print(
        "\nratio = pipeline s / SQLite s: 1.0 would mean the database alone sets the pace; the excess is the "
        "simulated Kafka (and the engine's Python around the statements)."
    )
    print(
        f"per sample: pipeline {', '.join(f'{x:.3f}' for x in pipe)} s; SQLite alone "
        f"{', '.join(f'{x:.3f}' for x in alone)} s"
    )
    pcpu, scpu = min(x["cpu_seconds"] for x in samples), min(x["sqlite_cpu_seconds"] for x in samples)
    print(
        f"CPU seconds in the timed spans (best): pipeline {pcpu:.3f}, SQLite alone {scpu:.3f} "
        f"(ratio {pcpu / scpu:.2f}); the rest of the wall time is waiting, mostly on fsync"
    )
    commits = r["commits"]
    print(
        f"statements replayed: {r['replay_statements']:,} ({r['replay_statements'] / n:.1f} per event); commits: "
        f"service {commits[0]:,}, relay {commits[1]:,}, sink {commits[2]:,}; relay steps {r['relay_steps']:,}, "
        f"sink steps {r['sink_steps']:,}; published {r['published']:,}, applied {r['applied']:,}"
    )


if __name__ == "__main__":
    sys.exit(main())
