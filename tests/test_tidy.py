"""Tidy: ban the calls that would make the engine depend on wall time, threads or global randomness.

Goal (house style R10-R12, R20): every run of ``engine/`` must be a pure function of its seed. The
checker parses each ``.py`` file under ``engine/`` with :mod:`ast` (so comments, docstrings and
strings never trip it), resolves import aliases (``import time as t``, ``from random import
choice``), and reports each banned use with the replacement to use instead, in the style of
TigerBeetle's ``tidy.zig`` ("X is banned, use Y").

Method: one test scans the tree and lists every violation; a parametrized self-test proves the
checker catches each banned pattern, and a second one that it lets the allowed ones through.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "engine"

SIMULATED_TIME = "use world.now_ms (simulated time); timeouts are scheduled events (node.set_timer)"
NAMED_STREAM = "use a named stream: world.rng.stream('<component>')"
SINGLE_THREAD = "the engine is single-threaded: schedule work with world.scheduler or node.set_timer"

#: Qualified name -> the replacement to name in the failure message.
BANNED_NAMES: dict[str, str] = {
    **{
        f"time.{f}": SIMULATED_TIME
        for f in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "sleep")
    },
    **{f"datetime.datetime.{f}": SIMULATED_TIME for f in ("now", "utcnow", "today")},
    "datetime.date.today": SIMULATED_TIME,
    "uuid.uuid1": "use a counter, or world.rng.stream(name).getrandbits(128) for a random id",
    "uuid.uuid4": "use a counter, or world.rng.stream(name).getrandbits(128) for a random id",
    "os.urandom": NAMED_STREAM,
    "random.SystemRandom": NAMED_STREAM,
}

#: Modules whose mere import is banned -> the replacement.
BANNED_MODULES: dict[str, str] = {
    "threading": SINGLE_THREAD,
    "asyncio": SINGLE_THREAD,
    "secrets": NAMED_STREAM,
}

#: The real-time edge of a served cluster (engine/serve, outside the deterministic core): the one
#: module with sockets, an asyncio loop, a thread and a random password, and the one module that
#: reads the wall clock. File -> the problems allowed there (by the start of their message).
EDGE_ALLOWED: dict[str, tuple[str, ...]] = {
    "engine/serve/realtime_server.py": ("import asyncio", "import threading", "import secrets"),
    "engine/serve/realtime_clock.py": ("time.monotonic",),
    # the control channel's socket side (faults from outside), on the server's loop
    "engine/serve/realtime_control.py": ("import asyncio",),
    # records real Kafka clients in real time: ms since start, one lock for the clients' threads
    "engine/record/realtime.py": ("time.monotonic", "import threading"),
    # the conformance suite's case programs wait and time real clients against real brokers
    "engine/conform/realtime_wait.py": ("time.monotonic", "time.sleep", "time.time"),
    # runs real Kafka JVMs: waits for them in real time, a random SASL password and cluster id
    "engine/conform/realtime_reference.py": (
        "time.monotonic",
        "time.sleep",
        "import secrets",
        "uuid.uuid4",
        "import threading",
    ),
    # the Java client driver's JVM: a thread reads its answers
    "engine/conform/realtime_java_client.py": ("import threading",),
    # the Kafka Streams app's process: input lines trickle in from a thread while a fault waits
    "engine/conform/realtime_streams.py": ("import threading",),
}

#: Files (relative to the repository root) where ``print`` is the point: the command line.
PRINT_ALLOWED = ("engine/cli.py", "engine/commands/*.py", "engine/check/cli.py")


class _Checker(ast.NodeVisitor):
    def __init__(self, allow_print: bool) -> None:
        self.allow_print = allow_print
        self.aliases: dict[str, str] = {}
        self.problems: list[tuple[int, str]] = []

    # -- imports ---------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._check_module(node, module)
        for alias in node.names:
            qualified = f"{module}.{alias.name}"
            self._check_module(node, qualified)
            self.aliases[alias.asname or alias.name] = qualified
            # Importing a banned name is already a use of it.
            self._check_name(node, qualified)

    def _check_module(self, node: ast.AST, module: str) -> None:
        top = module.split(".")[0]
        if top in BANNED_MODULES and module == top:
            self._report(node, f"import {top} is banned in engine/: {BANNED_MODULES[top]}")

    # -- uses ------------------------------------------------------------------------------

    def _qualify(self, node: ast.AST) -> str | None:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        parts.append(self.aliases[node.id])
        return ".".join(reversed(parts))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        qualified = self._qualify(node)
        if qualified is not None:
            self._check_name(node, qualified)
            return  # the inner parts of the chain are not uses of their own
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        qualified = self.aliases.get(node.id)
        if qualified is not None and "." in qualified:
            self._check_name(node, qualified)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "print" and not self.allow_print:
            self._report(
                node,
                "print is banned in engine/: emit a trace event (world.trace.emit) or return the text; "
                "only the CLI modules print",
            )
        qualified = (
            self._qualify(func) if isinstance(func, ast.Attribute) else self.aliases.get(getattr(func, "id", ""), None)
        )
        if qualified == "random.Random" and not node.args and not node.keywords:
            self._report(
                node,
                "random.Random() without a seed is banned in engine/: "
                "use world.rng.stream(name) or random.Random(derive_seed(seed, name))",
            )
        self.generic_visit(node)

    def _check_name(self, node: ast.AST, qualified: str) -> None:
        if qualified in BANNED_NAMES:
            self._report(node, f"{qualified} is banned in engine/: {BANNED_NAMES[qualified]}")
            return
        module, _, rest = qualified.partition(".")
        if module == "random" and rest and rest.split(".")[0] not in ("Random", "SystemRandom"):
            self._report(
                node,
                f"module-level {qualified} is banned in engine/ (a hidden global stream): {NAMED_STREAM}",
            )

    def _report(self, node: ast.AST, message: str) -> None:
        self.problems.append((getattr(node, "lineno", 0), message))


def check_source(source: str, *, allow_print: bool = False) -> list[tuple[int, str]]:
    """Return ``(line, message)`` for every banned use in ``source``."""
    checker = _Checker(allow_print)
    checker.visit(ast.parse(source))
    return sorted(set(checker.problems))


def print_allowed(path: Path) -> bool:
    rel = path.relative_to(ROOT)
    return any(rel.match(pattern) for pattern in PRINT_ALLOWED)


def engine_files() -> list[Path]:
    return sorted(p for p in ENGINE.rglob("*.py") if "__pycache__" not in p.parts)


def test_engine_uses_no_wall_clock_threads_global_randomness_or_print() -> None:
    files = engine_files()
    assert files, "no engine files found"
    problems = [
        f"{path.relative_to(ROOT)}:{line}: {message}"
        for path in files
        for line, message in check_source(path.read_text(encoding="utf-8"), allow_print=print_allowed(path))
        if not message.startswith(EDGE_ALLOWED.get(str(path.relative_to(ROOT)), ()) or ("\0",))
    ]
    assert not problems, "banned calls in engine/:\n" + "\n".join(problems)


def test_print_is_allowed_only_in_the_cli_modules() -> None:
    assert print_allowed(ROOT / "engine/cli.py")
    assert print_allowed(ROOT / "engine/commands/run.py")
    assert print_allowed(ROOT / "engine/check/cli.py")
    assert not print_allowed(ROOT / "engine/sim/world.py")
    assert not print_allowed(ROOT / "engine/check/duplicates.py")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import time\ntime.time()", "time.time is banned in engine/: use world.now_ms (simulated time)"),
        ("import time\nx = time.monotonic", "time.monotonic is banned"),
        ("import time as t\nt.perf_counter()", "time.perf_counter is banned"),
        ("from time import monotonic\nmonotonic()", "time.monotonic is banned"),
        ("from time import perf_counter as pc\n", "time.perf_counter is banned"),
        ("import datetime\ndatetime.datetime.now()", "datetime.datetime.now is banned"),
        ("from datetime import datetime\ndatetime.utcnow()", "datetime.datetime.utcnow is banned"),
        ("from datetime import date\ndate.today()", "datetime.date.today is banned"),
        ("import random\nrandom.random()", "module-level random.random is banned"),
        ("import random\nrandom.randint(1, 2)", "module-level random.randint is banned"),
        ("import random\nrandom.choice([1])", "module-level random.choice is banned"),
        ("import random\nrandom.shuffle(x)", "module-level random.shuffle is banned"),
        ("import random\nrandom.seed(3)", "module-level random.seed is banned"),
        ("from random import choice\nchoice([1])", "module-level random.choice is banned"),
        ("import random as r\nr.sample(x, 2)", "module-level random.sample is banned"),
        ("import random\nrandom.Random()", "random.Random() without a seed is banned"),
        ("from random import Random\nRandom()", "random.Random() without a seed is banned"),
        ("import random\nrandom.SystemRandom(1)", "random.SystemRandom is banned"),
        ("import threading", "import threading is banned in engine/: the engine is single-threaded"),
        ("from threading import Lock", "import threading is banned"),
        ("import asyncio", "import asyncio is banned"),
        ("import uuid\nuuid.uuid4()", "uuid.uuid4 is banned"),
        ("from uuid import uuid1", "uuid.uuid1 is banned"),
        ("import os\nos.urandom(8)", "os.urandom is banned"),
        ("import secrets", "import secrets is banned"),
        ("print('hello')", "print is banned in engine/: emit a trace event"),
    ],
)
def test_the_checker_catches_each_banned_pattern(source: str, expected: str) -> None:
    problems = check_source(source)
    assert any(expected in message for _line, message in problems), problems


@pytest.mark.parametrize(
    "source",
    [
        '"""time.time() and random.random() in a docstring are fine."""',
        "# print('in a comment')\nx = 'random.choice in a string'",
        "import random\nrng = random.Random(42)\nrng.random()\nrng.shuffle(x)",
        "import random\nrandom.Random(seed_for('network'))",
        "import random\ndef f(rng: random.Random) -> random.Random:\n    return rng",
        "from random import Random\nRandom(x=1)",
        "import time as t\nt.struct_time",
        "import datetime\ndatetime.timedelta(seconds=1)",
        "def f(world):\n    return world.now_ms",
        "import uuid\nuuid.UUID(int=5)",
        "import os\nos.path.join('a', 'b')",
        "class T:\n    def time(self): ...\nT().time()",
    ],
)
def test_the_checker_lets_allowed_code_through(source: str) -> None:
    assert check_source(source) == []


def test_print_passes_where_it_is_allowed() -> None:
    assert check_source("print('x')", allow_print=True) == []
