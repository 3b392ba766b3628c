"""The import graph has no circle through a function-local import.

An import written inside a function is sometimes the way a circle between two modules is hidden: each
imports the other, one of them late. lint-imports sees every import but not where it stands, so this
test reads the three packages' sources itself: every ``import`` and ``from ... import`` is an edge
from its module to the module it loads (``from p import m`` loads ``p.m`` when that is a module; an
import of a module's own package is no edge, since the package is loaded first), and
an edge is *local* when it stands inside a function. Imports under ``if TYPE_CHECKING:`` never run
and are left out. A local edge ``a -> b`` closes a circle when ``b`` reaches ``a`` again; each such
circle is named with its path, so the failure says which import to move or which module to split.

A function-local import that closes no circle is allowed: it defers a heavy or optional module
(pandas, pyspark, a CLI command) until it is needed.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "eos_magics", "widgets")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Return each import that runs, with True when it stands inside a function."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def walk(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    walk(other, local)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append((child, local))
            walk(child, local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    walk(tree, False)
    return found


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    # ``from p import m`` loads the module p.m when there is one, else takes a name from p itself.
    names = [f"{source}.{alias.name}" for alias in node.names]
    targets = [name for name in names if name in known]
    if len(targets) < len(names) and source in known:
        targets.append(source)
    return targets


def import_graph() -> dict[str, dict[str, bool]]:
    """Return ``{module: {imported module: True when only ever imported inside a function}}``."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, dict[str, bool]] = {}
    for module, path in modules.items():
        edges: dict[str, bool] = {}
        tree = ast.parse(path.read_text(), str(path))
        for node, local in _imports(tree):
            for target in _targets(node, module, path.name == "__init__.py", known):
                if not (module + ".").startswith(target + "."):  # a package is loaded before its modules
                    edges[target] = edges.get(target, True) and local
        graph[module] = edges
    return graph


def _path(graph: dict[str, dict[str, bool]], start: str, goal: str) -> list[str] | None:
    """Return the shortest import path from ``start`` to ``goal``, or None."""
    before: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        here = queue.popleft()
        if here == goal:
            path = [here]
            while before[path[-1]] is not None:
                path.append(before[path[-1]])  # type: ignore[arg-type]
            return path[::-1]
        for there in sorted(graph.get(here, {})):
            if there not in before:
                before[there] = here
                queue.append(there)
    return None


def local_circles(graph: dict[str, dict[str, bool]]) -> list[str]:
    """Return each circle closed by a function-local import, as ``a -(local)-> b -> ... -> a``."""
    circles = []
    for module in sorted(graph):
        for target, local in sorted(graph[module].items()):
            if not local:
                continue
            back = _path(graph, target, module)
            if back is not None:
                circles.append(f"{module} -(local)-> " + " -> ".join(back))
    return circles


def test_the_scanner_sees_a_circle_through_a_local_import() -> None:
    graph = {"a": {"b": False}, "b": {"c": False}, "c": {"a": True}, "d": {"a": True}}
    assert local_circles(graph) == ["c -(local)-> a -> b -> c"]


def test_the_scanner_reads_local_and_type_checking_imports() -> None:
    tree = ast.parse(
        "import engine\nif TYPE_CHECKING:\n    import widgets\ndef f():\n    from engine import sim\n"
        "class K:\n    def g(self):\n        import eos_magics\n"
    )
    seen = [(ast.unparse(node), local) for node, local in _imports(tree)]
    assert seen == [("import engine", False), ("from engine import sim", True), ("import eos_magics", True)]


def test_no_circle_runs_through_a_function_local_import() -> None:
    graph = import_graph()
    assert len(graph) > 200, "the scan found too few modules to mean anything"
    circles = local_circles(graph)
    assert not circles, f"{len(circles)} circles close through a function-local import:\n" + "\n".join(circles)


def _all_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Return every import, those under ``if TYPE_CHECKING:`` included: a type named is a dependency too."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def dependency_graph() -> dict[str, set[str]]:
    """Return ``{module: modules it imports}``, counting imports for types only as well."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        graph[module] = {
            target
            for node in _all_imports(tree)
            for target in _targets(node, module, path.name == "__init__.py", known)
            if not (module + ".").startswith(target + ".")
        }
    return graph


def circles_among(graph: dict[str, set[str]], members: set[str]) -> list[list[str]]:
    """Return each group of ``members`` that import one another in a circle (Tarjan's components, sorted)."""
    sub = {m: sorted(t for t in graph.get(m, ()) if t in members) for m in sorted(members)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for there in sub[node]:
            if there not in index:
                visit(there)
                low[node] = min(low[node], low[there])
            elif there in on_stack:
                low[node] = min(low[node], index[there])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sub:
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_circle_finder_names_each_circle() -> None:
    graph = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "d": {"e"}, "e": {"d"}}
    assert circles_among(graph, {"a", "b", "c", "d", "e"}) == [["a", "b"], ["d", "e"]]
    assert circles_among(graph, {"a", "c", "d"}) == []


#: Rooms cut from one owner must not import their owner back, not even for a type: each is handed
#: what it needs. Each entry is a set of modules that may not form a circle among themselves.
ROOMS = {
    "the client package": lambda name: name.startswith("engine.client."),
    "the broker package": lambda name: name.startswith("engine.broker."),
    "the cluster, its admin and its views": lambda name: (
        name in {"engine.cluster", "engine.admin"} or name.startswith("engine.views.")
    ),
}


def test_no_room_imports_its_owner_back() -> None:
    graph = dependency_graph()
    failures = []
    for room, member in ROOMS.items():
        circles = circles_among(graph, {name for name in graph if member(name)})
        failures += [f"{room}: " + " <-> ".join(circle) for circle in circles]
    assert not failures, "modules that import one another in a circle:\n" + "\n".join(failures)
