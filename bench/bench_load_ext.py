"""Benchmark T9: the cost of ``%load_ext eos_magics``, against importing ipywidgets + anywidget.

Every sample runs in a fresh interpreter (``python -c CODE``, warm page cache), and the cases take
turns, so a drift of the machine hits all of them alike. Each child times its own span with
``time.perf_counter`` (the "in-process" column) and prints one JSON line; the parent also times the
whole child process (the "process wall" column, interpreter start-up included). The cases:

* ``python -c pass``: the interpreter alone (wall only).
* (a) ``import ipywidgets, anywidget`` in a bare interpreter: the brief's baseline.
* (a') the same import after ``import ipykernel.ipkernel`` and ``InteractiveShell.instance()``: what
  the widget libraries add inside a running kernel, T9's baseline (performance.md §A).
* (b) ``InteractiveShell.instance()``, then only ``run_line_magic("load_ext", "eos_magics")`` timed.
* (b') the same after ``import ipykernel.ipkernel``: what ``%load_ext`` adds in a running kernel, the
  T9 figure.
* (c) ``import eos_magics`` alone.

T9's targets: (b') ≤ 2 × (a') + 50 ms, and ≤ 200 ms warm, with no pandas, pyarrow, pyspark or
JVM at load. The script lists which heavy modules are in ``sys.modules`` after (b) and (c); none of
pyspark, pandas, pyarrow, networkx, ipywidgets, anywidget is needed at load. If ``%load_ext`` fails
(eos_magics not written yet, or broken), it prints the error line and goes on. Figures only;
nothing is asserted.

Usage::

    python bench/bench_load_ext.py            # 7 runs of each case
    python bench/bench_load_ext.py --runs 15
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import BenchError, machine_note  # noqa: E402 - after the path setup

#: T9's absolute target for ``%load_ext eos_magics`` in a running kernel, warm (ms).
TARGET_MS = 200.0
#: Modules that loading the extension should not need.
HEAVY = ("pyspark", "pandas", "pyarrow", "networkx", "numpy", "ipywidgets", "anywidget", "engine")

_REPORT = f"""
import json, sys
heavy = [m for m in {HEAVY!r} if m in sys.modules]
print(json.dumps({{"ms": ms, "error": error, "heavy": heavy}}))
"""

_SHELL = """
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
"""

_LOAD_EXT = """
import contextlib, io, time
error = None
said = io.StringIO()
t0 = time.perf_counter()
try:
    with contextlib.redirect_stdout(said):
        ip.run_line_magic("load_ext", "eos_magics")
except BaseException as exc:
    error = f"{type(exc).__name__}: {exc}".splitlines()[0]
ms = (time.perf_counter() - t0) * 1000
if error is None and "eos_magics" not in ip.extension_manager.loaded:
    # IPython prints instead of raising, e.g. "The eos_magics module is not an IPython extension."
    error = "not loaded: " + (said.getvalue().strip().splitlines() or ["(nothing said)"])[0]
"""

_IMPORT_WIDGETS = """
import time
error = None
t0 = time.perf_counter()
import ipywidgets, anywidget
ms = (time.perf_counter() - t0) * 1000
"""

_IMPORT_EOS = """
import time
error = None
t0 = time.perf_counter()
try:
    import eos_magics
except BaseException as exc:
    error = f"{type(exc).__name__}: {exc}".splitlines()[0]
ms = (time.perf_counter() - t0) * 1000
"""

_KERNEL = "import ipykernel.ipkernel\n"

#: case key -> (label, child code or None for ``python -c pass``)
CASES: dict[str, tuple[str, str | None]] = {
    "pass": ("python -c pass", None),
    "a": ("(a)  import ipywidgets, anywidget", _IMPORT_WIDGETS + _REPORT),
    "a2": ("(a') ipywidgets+anywidget after ipykernel+shell", _KERNEL + _SHELL + _IMPORT_WIDGETS + _REPORT),
    "b": ("(b)  %load_ext eos_magics after shell", _SHELL + _LOAD_EXT + _REPORT),
    "b2": ("(b') %load_ext eos_magics after ipykernel+shell", _KERNEL + _SHELL + _LOAD_EXT + _REPORT),
    "c": ("(c)  import eos_magics", _IMPORT_EOS + _REPORT),
}


def run_child(code: str | None) -> tuple[float, dict[str, Any]]:
    """Run one child; return its process wall time (ms) and its JSON (empty for ``pass``)."""
    cmd = [sys.executable, "-c", code or "pass"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
    wall = (time.perf_counter() - t0) * 1000
    if proc.returncode != 0:
        msg = f"child exited {proc.returncode}:\n{proc.stderr.strip()[-3000:]}"
        raise BenchError(msg)
    if code is None:
        return wall, {}
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def _fmt(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):7.1f} / {min(values):7.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", "-n", type=int, default=7, help="fresh processes per case (default 7)")
    args = parser.parse_args(argv)

    walls: dict[str, list[float]] = {k: [] for k in CASES}
    spans: dict[str, list[float]] = {k: [] for k in CASES}
    errors: dict[str, str] = {}
    heavy: dict[str, list[str]] = {}
    run_child(CASES["b"][1])  # warm the page cache and the bytecode caches once, untimed
    for _ in range(args.runs):
        for key, (_label, code) in CASES.items():
            wall, out = run_child(code)
            walls[key].append(wall)
            if out.get("error"):
                errors[key] = out["error"]
            elif out:
                spans[key].append(out["ms"])
            if out:
                heavy[key] = out["heavy"]

    print(f"T9: %load_ext eos_magics; {args.runs} fresh processes per case, warm; {machine_note()}")
    print(f"python {sys.version.split()[0]} ({sys.executable})")
    print()
    print(f"{'case':<50} {'in-process ms med / min':>24} {'process wall ms med / min':>26}")
    for key, (label, _code) in CASES.items():
        span = "(failed)" if key in errors else ("-" if key == "pass" else _fmt(spans[key]))
        print(f"{label:<50} {span:>24} {_fmt(walls[key]):>26}")
    for key, err in errors.items():
        print(f"{CASES[key][0].strip()}: FAILED: {err}")
    print()
    after = {"b": "%load_ext (after shell)", "b2": "%load_ext (after ipykernel+shell)", "c": "import eos_magics"}
    for key, what in after.items():
        if key in heavy:
            print(f"heavy modules in sys.modules after {what}: {', '.join(heavy[key]) or 'none'}")
    if spans["b2"] and spans["a2"]:
        load, base = statistics.median(spans["b2"]), statistics.median(spans["a2"])
        budget = 2 * base + 50
        print()
        print(
            f"T9: %load_ext in a kernel {load:.1f} ms (median); ratio to ipywidgets+anywidget after ipykernel "
            f"{load / base:.2f}x (target <= 2x + 50 ms = {budget:.1f} ms: {'met' if load <= budget else 'NOT met'}); "
            f"{load / TARGET_MS:.2f} of the {TARGET_MS:.0f} ms target ({'met' if load <= TARGET_MS else 'NOT met'})"
        )
    if spans["b"] and spans["a"]:
        print(
            f"    without ipykernel first: {statistics.median(spans['b']):.1f} ms, "
            f"{statistics.median(spans['b']) / statistics.median(spans['a']):.2f}x a bare "
            "'import ipywidgets, anywidget'"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
