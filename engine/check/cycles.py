"""C13/C14: dependency cycles between operations (``G0``, ``G1c-wr``, ``G1c-ww``).

Role
----
Builds the dependency graph of ``eos-checking.md`` §1.2 over *operations* (never records):

* **ww**: for consecutive values v1, v2 in a key's version order, the writer of v1 -> the
  writer of v2 (when they differ);
* **wr**: the writer of v -> every other ``ok`` op that read v.

Then it looks for cycles: strongly connected components with networkx, then one shortest cycle
per component, classified by edge labels:

* ``G1c-wr`` - a cycle of wr edges only: circular information flow, **forbidden** at
  read_committed (Jepsen's ``G1c`` hunted with ``--no-ww-deps``);
* ``G0`` - a cycle of ww edges only: **allowed**, Kafka transactions give no write isolation;
* ``G1c-ww`` - a cycle that needs both kinds: **allowed** (G0-style interleavings make these
  routine).

Each component is searched in its wr-only subgraph and its ww-only subgraph; only when neither
holds a cycle is a mixed cycle reported.

Why the graph stays small
-------------------------
Only writers have outgoing edges, so an op that only reads is a sink and can never be on a
cycle: wr edges are added only towards readers that also wrote (``Analysis.mixed_ok``). Before
networkx sees the graph, nodes without an incoming or an outgoing edge are trimmed repeatedly,
so an acyclic history hands networkx an empty graph.

Most often no graph is built at all: when every edge points from an earlier op to a later one
there is no cycle. For ww edges that is shown per key from the send summaries, one step per
committed op (:func:`_forward_by_spans`); only the keys that shortcut cannot vouch for have
their version order mapped to writers.

Invariants
----------
Deterministic: components are visited in order of their smallest op index and successors in
index order.

What it does not do
-------------------
No rw (anti-dependency) edges, hence no G-single/G2 (the Jepsen Kafka workload leaves them out
too), no ``-process`` / ``-realtime`` variants, and no intermediate-read (G1b) check.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from itertools import groupby, pairwise

import networkx as nx

from engine.check.analysis import Analysis, KeyState, as_analysis, send_summary
from engine.check.anomaly import Anomaly
from engine.check.history import History, Key, Op

__all__ = ["check_cycles", "dependency_edges"]

#: How many edges of a cycle its message spells out; the op list in the anomaly is complete.
_SHOWN_STEPS = 8

#: (from op, to op) -> {"ww" | "wr": the first key (in key order) that produced the edge}
Edges = dict[tuple[int, int], dict[str, Key]]


def dependency_edges(history: Analysis | History | Iterable[Op]) -> Edges:
    """Return the ww and wr edges between operations that can lie on a cycle."""
    a = as_analysis(history)
    edges: Edges = {}
    for key in a.sorted_keys():
        ks = a.keys[key]
        if len(ks.writer) < 2:
            continue
        for pair in sorted(_ww_pairs(ks)):
            edges.setdefault(pair, {}).setdefault("ww", key)
    for idx, polls in a.mixed_ok:
        for t, p, _o, v in polls:
            ks = a.keys[(t, p)]
            w = ks.writer.get(v)
            if w is not None and w != idx:
                labels = edges.setdefault((w, idx), {})
                if "wr" not in labels or (t, p) < labels["wr"]:
                    labels["wr"] = (t, p)
    return edges


def _ww_pairs(ks: KeyState) -> set[tuple[int, int]]:
    """The ww edges of one key: (writer, next writer) along its version order."""
    writer = ks.writer
    values: Iterable[str]
    if ks.dup_offsets:
        # A duplicate copy is already reported as such; placing it again in the version
        # order would only add a spurious ww edge back to the original writer.
        first = {v: min(offs) for v, offs in ks.dup_offsets.items()}
        offsets = [o for o in ks.sorted_offsets if first.get(ks.offsets[o], o) == o]
        values = map(ks.offsets.__getitem__, offsets)
    else:
        values = ks.values_in_order()
    # Map the version order to writers in C, collapse runs of one writer, then pair
    # neighbouring runs: one Python step per run, not per record.
    runs = [w for w, _ in groupby(map(writer.get, values))]
    return {p for p in pairwise(runs) if p[0] is not None and p[1] is not None}


def _forward_by_spans(a: Analysis) -> set[Key]:
    """Return keys whose ww edges all point forward (to a later op), shown from the send summaries alone.

    Take a key without duplicates, and the span (first to last offset) of each committed op's
    sends to it, when those sends landed at consecutive offsets. Every value of the version
    order with a writer sits inside its writer's span: without duplicates it has one offset,
    the one its writer's send was acknowledged at or located by. So if each op's span starts
    after the previous op's span ended, ops taken in increasing index, then a value's writer is
    an earlier op than the writer of any later value: every ww edge of the key points forward.
    This costs a step per committed op instead of a lookup per value; a key where the spans
    do not line up that way is left to :func:`_ww_pairs`.
    """
    ends: dict[Key, list[int]] = {}  # key -> [end of the last span, its op index]
    unproven: set[Key] = set()
    proven = a.proven
    for idx, _process, typ, summary, sends in a.send_ops:
        if typ == "crash" or (typ == "info" and idx not in proven):
            continue
        if summary is None:
            summary = send_summary(a, sends or (), KeyState.locate)
        firsts, gaps = summary
        if gaps:
            unproven.update(gaps[0::5])
        it = iter(firsts)
        for key, o, _v, last in zip(it, it, it, it, strict=True):
            held = ends.get(key)
            if held is None:
                ends[key] = [last, idx]
            elif o > held[0] and idx > held[1]:
                held[0] = last
                held[1] = idx
            else:
                unproven.add(key)
    keys = a.keys
    return {key for key in ends if key not in unproven and not keys[key].dup_offsets}


def _all_forward(a: Analysis) -> bool:
    """True when every dependency edge points from an earlier op to a later one (no cycle possible)."""
    forward = _forward_by_spans(a)
    for key in a.sorted_keys():
        ks = a.keys[key]
        if key in forward or len(ks.writer) < 2:
            continue
        if any(u > v for u, v in _ww_pairs(ks)):
            return False
    for idx, polls in a.mixed_ok:
        for t, p, _o, v in polls:
            w = a.keys[(t, p)].writer.get(v)
            if w is not None and w > idx:
                return False
    return True


def _trim(edges: Edges) -> Edges:
    """Drop, repeatedly, every node with no incoming or no outgoing edge (it is on no cycle)."""
    succ: dict[int, set[int]] = {}
    pred: dict[int, set[int]] = {}
    for u, v in edges:
        succ.setdefault(u, set()).add(v)
        pred.setdefault(v, set()).add(u)
        succ.setdefault(v, set())
        pred.setdefault(u, set())
    queue = deque(sorted(n for n in succ if not succ[n] or not pred[n]))
    removed: set[int] = set()
    while queue:
        n = queue.popleft()
        if n in removed:
            continue
        removed.add(n)
        for m in succ.pop(n):
            pred[m].discard(n)
            if not pred[m] and m not in removed:
                queue.append(m)
        for m in pred.pop(n):
            succ[m].discard(n)
            if not succ[m] and m not in removed:
                queue.append(m)
    return {e: labels for e, labels in edges.items() if e[0] not in removed and e[1] not in removed}


def _shortest_cycle(graph: nx.DiGraph, start: int) -> list[int] | None:
    """Return a shortest cycle through ``start`` as a node list (BFS), or None."""
    parent: dict[int, int] = {start: start}
    queue = deque([start])
    while queue:
        n = queue.popleft()
        for m in sorted(graph.successors(n)):
            if m == start:
                path = [n]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1]
            if m not in parent:
                parent[m] = n
                queue.append(m)
    return None


def _components(graph: nx.DiGraph) -> list[list[int]]:
    """Non-trivial strongly connected components, each sorted, ordered by smallest op index."""
    comps = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    return sorted(comps, key=lambda c: c[0])


def _cycles_in(graph: nx.DiGraph) -> list[list[int]]:
    """One shortest cycle per non-trivial strongly connected component of ``graph``."""
    found = []
    for comp in _components(graph):
        cycle = _shortest_cycle(graph.subgraph(comp), comp[0])
        if cycle is not None:
            found.append(cycle)
    return found


def _anomaly(kind: str, cycle: list[int], edges: Edges, label_order: tuple[str, ...]) -> Anomaly:
    steps = []
    keys = []
    for u, v in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
        labels = edges[(u, v)]
        label = next(lb for lb in label_order if lb in labels)
        key = labels[label]
        keys.append(key)
        steps.append(f"op {u} -{label}({key[0]}/{key[1]})->")
    if len(steps) > _SHOWN_STEPS:
        steps = [*steps[: _SHOWN_STEPS - 1], f"... ({len(steps) - _SHOWN_STEPS} more) ...", steps[-1]]
    text = " ".join(steps) + f" op {cycle[0]}"
    distinct = sorted(set(keys))
    return Anomaly(
        kind,
        distinct[0] if len(distinct) == 1 else None,
        (),
        (),
        tuple(cycle),
        f"{kind} cycle of {len(cycle)} ops: {text}",
    )


def check_cycles(history: Analysis | History | Iterable[Op]) -> list[Anomaly]:
    """Return ``G1c-wr``, ``G0`` and ``G1c-ww`` cycles (at most one of each per component)."""
    a = as_analysis(history)
    if _all_forward(a):
        # Every edge points forward in history order, so the graph is acyclic: the common case
        # for a healthy run, decided without building any graph.
        return []
    return cycles_of_edges(dependency_edges(a))


def cycles_of_edges(edges: Edges) -> list[Anomaly]:
    """Return the cycles of a dependency graph: ``G1c-wr``, ``G0`` and ``G1c-ww``, at most one of each per component.

    ``edges`` is what :func:`dependency_edges` returns, or the same edges computed elsewhere
    (the Spark checks compute them in Spark and search them here, so both report alike).
    """
    edges = _trim(edges)
    if not edges:
        return []
    full = nx.DiGraph()
    full.add_edges_from(sorted(edges))
    out: list[Anomaly] = []
    for comp in _components(full):
        members = set(comp)
        inside = {e: lb for e, lb in edges.items() if e[0] in members and e[1] in members}
        wr = nx.DiGraph(sorted(e for e, lb in inside.items() if "wr" in lb))
        ww = nx.DiGraph(sorted(e for e, lb in inside.items() if "ww" in lb))
        wr_cycles = _cycles_in(wr)
        ww_cycles = _cycles_in(ww)
        out.extend(_anomaly("G1c-wr", c, inside, ("wr",)) for c in wr_cycles)
        out.extend(_anomaly("G0", c, inside, ("ww",)) for c in ww_cycles)
        if not wr_cycles and not ww_cycles:
            cycle = _shortest_cycle(full.subgraph(comp), comp[0])
            if cycle is not None:
                out.append(_anomaly("G1c-ww", cycle, inside, ("ww", "wr")))
    return out
