"""Unit tests of ``engine.sim.events`` and ``engine.trace_events``: the catalogues of trace event names, and their use.

Goal: every trace event the engine emits is named in one of two catalogues, with the kinds it may
have: the world's own events in :mod:`engine.sim.events` (emitted only by ``engine/sim/``, which
knows nothing about Kafka) and Kafka's in :mod:`engine.trace_events`, which re-exports the world's
names so that a reader of the trace (checkers, views, widgets) can rely on that one module.
Nothing in either catalogue is dead. Method: like ``tests/test_tidy.py``, the engine's
source is parsed with :mod:`ast` and every emit is inspected: ``trace.emit(node, kind, name,
...)`` (and the network's bound ``_emit``), and the helpers that forward a name to it (the group
coordinator's ``trace``, ``_count_and_trace``, the group member's ``_trace``). Each must name its
event by a reference into the catalogue (``events.NAME``, ``events.phase_event(...)``, or, in the
network, the message-kind variable); literal kinds must be ones the catalogue allows for that
name; every catalogued name must be emitted somewhere. Coverage marks (``trace.mark(node,
label)``) carry free-text labels and are not checked. Last, real runs (catalog scenarios and a
small hand-built cluster) must emit only catalogued ``(name, kind)`` pairs, marks excepted.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine import Cluster
from engine import trace_events as events
from engine.scenarios.registry import get_scenario
from engine.sim import events as world_events
from engine.sim.network import MessageRule
from engine.sim.trace import SYMBOLS

ROOT = Path(__file__).resolve().parents[3]
ENGINE = ROOT / "engine"


#: Methods that emit a trace event -> the index of the name argument.
EMITTERS = {"emit": 2, "_emit": 2, "emit_fields": 2, "_emit_fields": 2}

#: Helpers that take the event name first and emit it with a fixed kind -> that kind.
FORWARDERS = {"trace": "state", "_trace": "state", "_count_and_trace": "state"}

#: The network names sends, deliveries and drops after the message's kind, held in these expressions.
NETWORK = "engine/sim/network.py"
MESSAGE_KIND_VARIABLES = {"kind", "m.kind"}
MESSAGE_EVENT_KINDS = frozenset({"send", "deliver", "drop"})

#: Every catalogued constant, the world's and Kafka's: NAME -> value.
CONSTANTS = {k: v for k, v in vars(events).items() if k.isupper() and isinstance(v, str)}
#: The world's constants alone: the only names ``engine/sim/`` may emit.
WORLD_CONSTANTS = {k: v for k, v in vars(world_events).items() if k.isupper() and isinstance(v, str)}
SIM = "engine/sim/"


@dataclass(frozen=True)
class Site:
    """One emit (or forwarding helper call) in the engine."""

    path: str
    line: int
    kind: str | None  #: the literal kind, None when it is not a literal
    names: tuple[str, ...]  #: the catalogued names it refers to (several for ``a if c else b``)
    how: str  #: "ref", "phase", "message", "forwarded" or "offender"
    source: str  #: the name argument, as written


def engine_files() -> list[Path]:
    return sorted(p for p in ENGINE.rglob("*.py") if "__pycache__" not in p.parts)


def _classify(node: ast.expr, rel: str, params: set[str], in_forwarder: bool) -> tuple[str, tuple[str, ...]]:
    """Return how a name argument names its event, and the catalogued names it refers to."""
    if isinstance(node, ast.IfExp):
        a, b = _classify(node.body, rel, params, in_forwarder), _classify(node.orelse, rel, params, in_forwarder)
        return (a[0], a[1] + b[1]) if a[0] == b[0] == "ref" else ("offender", ())
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "events":
        catalogue = WORLD_CONSTANTS if rel.startswith(SIM) else CONSTANTS
        return ("ref", (catalogue[node.attr],)) if node.attr in catalogue else ("offender", ())
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and (node.func.value.id, node.func.attr) == ("events", "phase_event")
    ):
        return "phase", ()
    if isinstance(node, ast.Name) and in_forwarder and node.id in params:
        return "forwarded", ()
    if rel == NETWORK and ast.unparse(node) in MESSAGE_KIND_VARIABLES:
        return "message", ()
    return "offender", ()


def scan_source(source: str, rel: str) -> list[Site]:
    """Return every emit and forwarding-helper call of one file."""
    sites: list[Site] = []

    def visit(node: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr = node.func.attr
            index = EMITTERS.get(attr, 0 if attr in FORWARDERS else None)
            if index is not None and len(node.args) > index:
                if attr in EMITTERS:
                    kind_node = node.args[1]
                    kind = kind_node.value if isinstance(kind_node, ast.Constant) else None
                else:
                    kind = FORWARDERS[attr]
                params = {a.arg for a in function.args.args} if function is not None else set()
                in_forwarder = function is not None and function.name in FORWARDERS
                how, names = _classify(node.args[index], rel, params, in_forwarder)
                sites.append(Site(rel, node.lineno, kind, names, how, ast.unparse(node.args[index])))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(source), None)
    return sites


@pytest.fixture(scope="module")
def sites() -> list[Site]:
    found = [
        site
        for path in engine_files()
        for site in scan_source(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    ]
    assert len(found) > 50, "the scan found too few emits: has the emit API changed?"
    return found


# -- the catalogue itself --------------------------------------------------------------------------


def test_every_constant_is_in_kind_and_every_kind_is_a_trace_symbol() -> None:
    assert set(CONSTANTS.values()) == set(events.KIND)
    assert set(WORLD_CONSTANTS.values()) == set(world_events.KIND)
    assert events.KIND == {**world_events.KIND, **events.KAFKA_KIND}
    assert not set(world_events.KIND) & set(events.KAFKA_KIND), "a name is catalogued twice"
    assert len(set(CONSTANTS.values())) == len(CONSTANTS), "two constants share a name"
    for name, kinds in events.KIND.items():
        assert kinds, name
        assert kinds <= set(SYMBOLS), f"{name}: kinds {sorted(kinds - set(SYMBOLS))} are not trace kinds"


def test_constant_names_follow_their_values() -> None:
    """``TXN_STATE_WRITE = "txn_state.write"``; only the message kinds carry a ``MESSAGE_`` prefix."""
    for constant, value in CONSTANTS.items():
        expected = value.upper().replace(".", "_")
        if value in events.MESSAGE_KINDS:
            expected = f"MESSAGE_{expected}"
        assert constant == expected, f"{constant} = {value!r}: call it {expected}"


@pytest.mark.parametrize(
    ("module", "kinds"), [(world_events, world_events.KIND), (events, events.KAFKA_KIND)], ids=["world", "kafka"]
)
def test_the_docstring_tables_list_every_name_with_its_kinds(module: object, kinds: dict[str, frozenset[str]]) -> None:
    rows = re.findall(r"^``([^`]+)``\s{2,}(\w+)\s{2,}", module.__doc__ or "", flags=re.MULTILINE)
    documented: dict[str, set[str]] = {}
    for name, kind in rows:
        documented.setdefault(name, set()).add(kind)
    assert documented == {name: set(k) for name, k in kinds.items()}


def test_phase_event_names_each_phase_and_refuses_others() -> None:
    assert [events.phase_event(p) for p in events.PHASES] == [
        events.PHASE_SAFETY,
        events.PHASE_HEAL,
        events.PHASE_LIVENESS,
        events.PHASE_END,
    ]
    with pytest.raises(ValueError, match="unknown phase 'recovery'"):
        events.phase_event("recovery")


def test_message_kinds_are_the_networks() -> None:
    assert events.MESSAGE_KINDS == MessageRule.KINDS
    assert all(events.KIND[k] == MESSAGE_EVENT_KINDS for k in events.MESSAGE_KINDS)


# -- the engine's emits ------------------------------------------------------------------------------


def test_every_emit_names_its_event_through_the_catalogue(sites: list[Site]) -> None:
    offenders = [f"{s.path}:{s.line}: name {s.source}" for s in sites if s.how == "offender"]
    assert not offenders, (
        "emit names must be references into engine.trace_events (engine.sim.events inside engine/sim/):\n"
        + "\n".join(offenders)
    )


def test_literal_kinds_are_ones_the_catalogue_allows(sites: list[Site]) -> None:
    problems = []
    for s in sites:
        if s.kind is None:
            problems.append(f"{s.path}:{s.line}: the kind is not a literal")
        elif s.kind not in SYMBOLS:
            problems.append(f"{s.path}:{s.line}: kind {s.kind!r} is not a trace kind")
        elif s.how == "message" and s.kind not in MESSAGE_EVENT_KINDS:
            problems.append(f"{s.path}:{s.line}: a message kind names a {s.kind!r} event")
        elif s.how == "phase" and s.kind != "phase":
            problems.append(f"{s.path}:{s.line}: a phase event of kind {s.kind!r}")
        else:
            problems += [
                f"{s.path}:{s.line}: {name!r} is catalogued as {sorted(events.KIND[name])}, emitted as {s.kind!r}"
                for name in s.names
                if s.kind not in events.KIND[name]
            ]
    assert not problems, "\n".join(problems)


def test_only_the_forwarding_helpers_pass_a_name_through(sites: list[Site]) -> None:
    forwarded = {(s.path, s.kind) for s in sites if s.how == "forwarded"}
    assert forwarded == {("engine/group/coordinator.py", "state"), ("engine/client/group_member.py", "state")}


def test_the_world_emits_exactly_the_worlds_names(sites: list[Site]) -> None:
    in_sim = {name for s in sites if s.path.startswith(SIM) for name in s.names}
    assert in_sim == set(world_events.KIND) - set(world_events.MESSAGE_KINDS) - {
        world_events.phase_event(p) for p in world_events.PHASES
    }


def test_every_catalogued_name_is_emitted_somewhere(sites: list[Site]) -> None:
    alive = {name for s in sites for name in s.names}
    if {s.kind for s in sites if s.how == "message"} == MESSAGE_EVENT_KINDS:
        alive |= set(events.MESSAGE_KINDS)
    if any(s.how == "phase" for s in sites):
        alive |= {events.phase_event(p) for p in events.PHASES}
    dead = sorted(set(events.KIND) - alive)
    assert not dead, f"catalogued but never emitted in engine/: {dead}"


def test_every_phase_the_engine_enters_is_catalogued() -> None:
    entered = {
        node.args[0].value
        for path in engine_files()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "set_phase"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }
    assert entered, "no set_phase call found"
    assert entered <= set(events.PHASES), sorted(entered - set(events.PHASES))


# -- the checker on small sources -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "rel", "how"),
    [
        ('w.trace.emit(n, "state", events.TXN_STATE_WRITE)', "engine/x.py", "ref"),
        ('w.trace.emit(n, "state", events.PRODUCE_DONE if ok else events.PRODUCE_FAILED)', "engine/x.py", "ref"),
        ('w.trace.emit("world", "phase", events.phase_event(p))', "engine/x.py", "phase"),
        ('self._emit(src, "send", kind)', NETWORK, "message"),
        ('self.c.trace(events.GROUP_EMPTY, ("group", g))', "engine/x.py", "ref"),
        ('def trace(self, name):\n    w.trace.emit(n, "state", name)', "engine/x.py", "forwarded"),
        ('w.trace.emit(n, "state", "txn_state.write")', "engine/x.py", "offender"),
        ('w.trace.emit(n, "state", events.NO_SUCH_EVENT)', "engine/x.py", "offender"),
        ('w.trace.emit(n, "state", "not.catalogued")', "engine/sim/world.py", "offender"),
        ('w.trace.emit(n, "state", events.TXN_STATE_WRITE)', "engine/sim/world.py", "offender"),
        ('self._emit(src, "send", kind)', "engine/x.py", "offender"),
        ('def emit_it(name):\n    w.trace.emit(n, "state", name)', "engine/x.py", "offender"),
        ('self.c.trace(f"group.{what}")', "engine/x.py", "offender"),
    ],
)
def test_the_scan_classifies_each_form_of_name(source: str, rel: str, how: str) -> None:
    (site,) = scan_source(source, rel)
    assert site.how == how


# -- real runs ----------------------------------------------------------------------------------------


def uncatalogued(trace_events: list) -> list[str]:
    return sorted(
        {f"{e.kind} {e.name}" for e in trace_events if e.kind != "mark" and e.kind not in events.KIND.get(e.name, ())}
    )


@pytest.mark.parametrize(
    ("scenario", "swarm"),
    [("demo", False), ("copier: group mode rebalance", False), ("coordinator: failover", False), ("swarm: soak", True)],
)
def test_a_scenario_run_emits_only_catalogued_events(scenario: str, swarm: bool) -> None:
    result = get_scenario(scenario)(7, **({"swarm": True} if swarm else {}))
    trace = result.cluster.world.trace
    assert len(trace.events) > 100
    assert uncatalogued(trace.events) == []


def test_a_transactional_round_trip_emits_only_catalogued_events() -> None:
    c = Cluster(seed=7, brokers=3, config={"min.insync.replicas": 2})
    c.create_topic("t", partitions=2, replication_factor=3)
    p = c.producer({"transactional.id": "tx", "linger.ms": 0})
    p.init_transactions()
    p.begin_transaction()
    p.produce("t", value=b"c0", partition=0)
    p.produce("t", value=b"c1", partition=1)
    p.commit_transaction()
    p.begin_transaction()
    p.produce("t", value=b"a0", partition=0)
    p.flush()
    p.abort_transaction()
    consumer = c.consumer({"group.id": "g", "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.subscribe(["t"])
    read = []
    for _ in range(20):
        read += [m.value() for m in consumer.consume(10, timeout=0.5) if m.error() is None]
    consumer.commit(asynchronous=False)
    consumer.close()
    c.run_for(1_000)
    assert sorted(read) == [b"c0", b"c1"]
    names = {e.name for e in c.world.trace.events}
    assert {events.TXN_COMMIT, events.TXN_ABORT, events.MARKER_APPEND, events.GROUP_STABLE} <= names
    assert uncatalogued(c.world.trace.events) == []
