"""The wire journal: every input of a served cluster with its simulated time; replay checks every byte.

A served cluster (``eos serve``) is built from a :class:`ServeSpec` (seed, brokers, configuration,
topics) and then changes only through timed inputs: a connection opened or refused, a frame, a
connection closed, a wire fault armed. :class:`WireJournal` writes those inputs and every output
(response frames, connections the server closed) as JSON Lines, one object per line, the first
line the spec. :func:`replay` builds the cluster again from the spec, feeds the inputs at their
recorded simulated times, and compares each output with the recorded one: the server side of a
session with real clients is reproducible, and a difference is named (which connection, which
response, at what time).

The file holds the SASL password (a client's login frame carries it), so it is written readable by
its owner only.

Faults
------
A fault made through the control channel (``eos fault``, :class:`~engine.serve.control_client.ControlClient`)
or :meth:`ServedCluster.fault <engine.serve.realtime_server.ServedCluster.fault>` is an input
(``fault``, the request as canonical JSON) and replays through :func:`engine.wire.control.apply`.
A change made to the cluster any other way (``with server.locked() as c: c.crash(1)``, a
notebook's ``%eos_fault``) is not: the service notices it at its next call and the journal notes
it (``untracked``, with the number of entries written before the change); replay checks what came
before and says the rest cannot be replayed. A notebook's served cluster has no spec at all
(``replayable: false``).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FORMAT = "eos-wire-journal"
VERSION = 1
#: Input entries, fed back on replay; every other kind is an output, compared.
INPUTS = ("open", "refused", "frame", "close", "wire-fault", "fault")
OUTPUTS = ("response", "hang-up")
#: A note: the cluster changed by a call the journal does not record (data: entries before it).
UNTRACKED = "untracked"
#: A served cluster's hop between two of its nodes, in simulated ms (the engine's simulations take
#: 1 ms). A served cluster's simulated time follows the wall clock, so a 1 ms hop would cost a real
#: millisecond on every replication round trip, coordinator write and marker; Kafka's own brokers on
#: one host hop over loopback in tens of microseconds, which the engine's whole milliseconds round
#: to 0 (docs/wire.md, "Where a transaction's time goes").
SERVED_LATENCY_MS = 0
#: The hop of a journal written before the spec named it.
_OLD_LATENCY_MS = 1


@dataclasses.dataclass(frozen=True)
class ServeSpec:
    """What a served cluster is built from."""

    seed: int = 0
    brokers: int = 3
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: (name, partitions, replication factor or None)
    topics: tuple[tuple[str, int, int | None], ...] = ()
    #: simulated ms a message takes between two nodes of the cluster (:data:`SERVED_LATENCY_MS`)
    latency_ms: int = SERVED_LATENCY_MS

    def build(self) -> Any:
        """Build the cluster and its topics (the same in every process for the same spec)."""
        from engine.cluster import Cluster
        from engine.sim.network import NetworkOptions

        network = NetworkOptions(self.latency_ms, self.latency_ms)
        cluster = Cluster(self.seed, self.brokers, dict(self.config) or None, network=network)
        for name, partitions, rf in self.topics:
            cluster.create_topic(name, partitions, rf)
        return cluster

    def to_json(self) -> dict[str, Any]:
        """Return the spec as JSON-ready data."""
        return {
            "seed": self.seed,
            "brokers": self.brokers,
            "config": self.config,
            "topics": [list(t) for t in self.topics],
            "latency_ms": self.latency_ms,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServeSpec:
        """Read a spec written by :meth:`to_json`."""
        topics = tuple((str(n), int(p), None if rf is None else int(rf)) for n, p, rf in data.get("topics", ()))
        latency_ms = int(data.get("latency_ms", _OLD_LATENCY_MS))
        return cls(int(data["seed"]), int(data["brokers"]), dict(data.get("config") or {}), topics, latency_ms)


@dataclasses.dataclass(frozen=True)
class Entry:
    """One journal line: at simulated ``t_ms``, ``kind`` on connection ``conn`` with ``data``."""

    t_ms: int
    kind: str
    conn: int
    data: bytes | int


class WireJournal:
    """Append-only journal of a served cluster (in memory, and to ``path`` line by line when given)."""

    def __init__(
        self,
        spec: ServeSpec | None,
        addresses: dict[int, tuple[str, int]],
        password: str | None,
        path: str | Path | None = None,
    ) -> None:
        self.spec = spec
        self.addresses = dict(addresses)
        self.password = password
        self.entries: list[Entry] = []
        #: (simulated ms when noticed, entries written before the change) once the cluster was
        #: changed by a call the journal does not record; None while every change is an input.
        self.untracked: tuple[int, int] | None = None
        self._file = None
        if path is not None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            self._file = os.fdopen(fd, "w", encoding="utf-8")
            self._file.write(json.dumps(self.header()) + "\n")

    def header(self) -> dict[str, Any]:
        """Return the first line: the format, the spec, the addresses and the password."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "replayable": self.spec is not None and self.untracked is None,
            "spec": self.spec.to_json() if self.spec is not None else None,
            "addresses": {str(b): [h, p] for b, (h, p) in sorted(self.addresses.items())},
            "password": self.password,
        }

    def record(self, t_ms: int, kind: str, conn: int, data: bytes | int) -> None:
        """Append one entry."""
        entry = Entry(t_ms, kind, conn, data)
        self.entries.append(entry)
        if self._file is not None:
            self._file.write(json.dumps(_entry_json(entry)) + "\n")

    def note_untracked(self, t_ms: int, entries_before: int) -> None:
        """Note that the cluster was changed by a call not in the journal, after ``entries_before`` entries."""
        self.untracked = (t_ms, entries_before)
        self.record(t_ms, UNTRACKED, -1, entries_before)
        self.flush()

    def flush(self) -> None:
        """Write what is buffered to the file."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None


def _entry_json(e: Entry) -> dict[str, Any]:
    data = e.data if isinstance(e.data, int) else base64.b64encode(e.data).decode()
    return {"t": e.t_ms, "e": e.kind, "c": e.conn, "d": data}


def read(path: str | Path) -> tuple[dict[str, Any], list[Entry]]:
    """Read a journal file: its header and entries (ValueError with one line when it is not one)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if not lines:
        msg = f"{path}: empty file, not a wire journal"
        raise ValueError(msg)
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        msg = f"{path}: not a wire journal (written by eos serve --journal)"
        raise ValueError(msg)
    return header, list(_entries(lines[1:], path))


def _entries(lines: list[str], path: str | Path) -> Iterator[Entry]:
    for n, line in enumerate(lines, start=2):
        try:
            raw = json.loads(line)
            data = raw["d"] if isinstance(raw["d"], int) else base64.b64decode(raw["d"])
            yield Entry(int(raw["t"]), str(raw["e"]), int(raw["c"]), data)
        except (ValueError, KeyError, TypeError) as exc:
            msg = f"{path}:{n}: not a journal entry ({exc})"
            raise ValueError(msg) from None


@dataclasses.dataclass
class ReplayReport:
    """What a replay found: how many inputs and outputs, and the first difference (None: identical).

    ``untracked``: the journal notes a change it did not record, and nothing differed before it
    (``difference`` says where; the rest of the journal was not replayed).
    """

    inputs: int
    outputs: int
    difference: str | None
    untracked: bool = False

    @property
    def identical(self) -> bool:
        """Return True when every output was byte-identical."""
        return self.difference is None


def replay(path: str | Path) -> ReplayReport:
    """Rebuild the served cluster from the journal's spec, feed its inputs, compare every output.

    A divergence (a connection that opens with another id, outputs that differ) is reported as
    the first difference, never raised; ValueError only for a file that is no replayable journal.
    """
    from engine.wire.service import WireService

    header, entries = read(path)
    if not header.get("replayable"):
        msg = f"{path}: the journal of a cluster served from a notebook session cannot be replayed (no spec)"
        raise ValueError(msg)
    spec = ServeSpec.from_json(header["spec"])
    addresses = {int(b): (h, int(p)) for b, (h, p) in header["addresses"].items()}
    service = WireService(spec.build(), addresses, header["password"])
    got: list[Entry] = []
    service.on_write = lambda conn, data: got.append(Entry(service.cluster.world.now_ms, "response", conn, data))
    service.on_hang_up = lambda conn, reason: got.append(
        Entry(service.cluster.world.now_ms, "hang-up", conn, reason.encode())
    )
    inputs = 0
    for i, e in enumerate(entries):
        if e.kind == UNTRACKED:
            return _untracked(service, entries, i, got, inputs)
        if e.kind not in INPUTS:
            continue
        inputs += 1
        service.advance_to(e.t_ms)
        diverged = _apply(service, e)
        if diverged is not None:
            want = [w for w in entries[:i] if w.kind in OUTPUTS]
            before = _first_difference(want[: len(got)], got[: len(want)])
            return ReplayReport(inputs, len(want), before or f"input {inputs} at t={e.t_ms} ms: {diverged}")
    if entries:
        service.advance_to(entries[-1].t_ms)
    want = [e for e in entries if e.kind in OUTPUTS]
    return ReplayReport(inputs, len(want), _first_difference(want, got))


def _untracked(service: Any, entries: list[Entry], i: int, got: list[Entry], inputs: int) -> ReplayReport:
    """Compare what came before an ``untracked`` note; report the note as the first difference."""
    note = entries[i]
    before = int(note.data)
    trusted = entries[:before]
    if trusted:
        service.advance_to(trusted[-1].t_ms)
    want = [e for e in trusted if e.kind in OUTPUTS]
    difference = _first_difference(want, got)
    if difference is not None:
        return ReplayReport(inputs, len(want), difference)
    since = trusted[-1].t_ms if trusted else 0
    why = (
        f"between t={since} and t={note.t_ms} ms the cluster was changed by a call the journal did not record "
        "(a change under server.locked() or from a notebook; make faults with 'eos fault' or server.fault() "
        f"to journal them): not replayable past that point; the {len(want)} outputs before it are identical"
    )
    return ReplayReport(inputs, len(want), why, untracked=True)


def _apply(service: Any, e: Entry) -> str | None:
    """Feed one input; return how the replay diverged from the journal here (None: it did not)."""
    from engine.wire import control

    if e.kind in ("open", "refused"):
        conn = service.connect(int(e.data))
        if e.kind == "open" and conn != e.conn:
            return f"replay opened connection {conn} where the journal has {e.conn}"
        if e.kind == "refused" and conn is not None:
            return f"replay accepted connection {conn} to broker {e.data} where the journal has it refused"
    elif e.kind == "frame":
        service.receive(e.conn, bytes(e.data))  # type: ignore[arg-type]
    elif e.kind == "close":
        service.disconnect(e.conn)
    elif e.kind == "wire-fault":
        action, api, nth = bytes(e.data).decode().split()  # type: ignore[arg-type]
        service.add_wire_fault(action, api, int(nth))
    elif e.kind == "fault":
        try:
            service.control(control.parse(bytes(e.data)))  # type: ignore[arg-type]
        except control.ControlError as exc:
            return f"the fault {bytes(e.data).decode()} was refused on replay: {exc}"  # type: ignore[arg-type]
    return None


def _first_difference(want: list[Entry], got: list[Entry]) -> str | None:
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w != g:
            return (
                f"output {i + 1}: recorded {w.kind} on connection {w.conn} at t={w.t_ms} ms "
                f"({_size(w)}), replay gave {g.kind} on connection {g.conn} at t={g.t_ms} ms ({_size(g)})"
            )
    if len(want) != len(got):
        return f"the journal has {len(want)} outputs, the replay gave {len(got)}"
    return None


def _size(e: Entry) -> str:
    return f"{len(e.data)} bytes" if isinstance(e.data, bytes) else str(e.data)
