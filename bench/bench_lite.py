"""Benchmark: the tour in the JupyterLite site (Pyodide, in chromium) against CPython, and the site's size.

The site is ``build/lite/site`` (``bash scripts/build-lite.sh``), served from a thread on 127.0.0.1 and
opened in headless Debian chromium with every other host unreachable (``lite/drive.py``). Each round
opens the tour in a fresh page and Pyodide kernel, Run All, and reads the kernel's time on the cells:
per cell, from ``execute_input`` to ``execute_reply`` as the page receives them, summed; then it runs the
same notebook in a fresh CPython kernel with nbclient, timed the same way per cell (``on_cell_execute`` to
``on_cell_executed``). The rounds alternate the two, so a drift of the machine hits both alike. Printed:
per side the median and min of the cells' time, Run All's wall time and, for the browser, the time from
opening the page to an idle kernel (loading Pyodide and the wheels, which CPython's kernel does not do);
the ratio of the medians (target ≤ 3×); the site's size on disk (target ≤ 120 MB), split into Pyodide,
the wheels, and the rest (JupyterLab's app and extensions); and what the first page load fetched.

It also checks what it measured: every cluster's fingerprint is the same in both, no cell raised but
those tagged ``raises-exception``, every cell ran, and no request left 127.0.0.1; it exits non-zero
otherwise (after printing the figures it has). Timing is never asserted.

Usage::

    python bench/bench_lite.py              # 3 rounds
    python bench/bench_lite.py --runs 5 --notebook 03-transactional-messaging.ipynb
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from _common import BenchError, machine_note  # noqa: E402 - after the path setup

TARGET_RATIO = 3.0
TARGET_MB = 120.0
FINGERPRINTS = (
    "import json, eos_magics\n"
    "_s = eos_magics._LOADED[id(get_ipython())].session\n"
    "print(json.dumps({n: e.cluster.fingerprint() for n, e in sorted(_s.entries.items())}))"
)


def _drive() -> ModuleType:
    spec = importlib.util.spec_from_file_location("eos_lite_drive", ROOT / "lite" / "drive.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _mb(n: float) -> str:
    return f"{n / 1e6:6.1f} MB"


def site_sizes(site: Path) -> dict[str, int]:
    """Bytes on disk: Pyodide's runtime, the wheels, the rest."""
    pyodide = site / "static" / "pyodide"
    sizes = {"pyodide runtime": 0, "wheels": 0, "app and extensions": 0}
    for f in site.rglob("*"):
        if not f.is_file():
            continue
        if f.parent == pyodide:
            sizes["wheels" if f.suffix == ".whl" else "pyodide runtime"] += f.stat().st_size
        else:
            sizes["app and extensions"] += f.stat().st_size
    return sizes


def fetched_bytes(site: Path, paths: list[str]) -> int:
    """The size of the site's files behind the URL paths a page asked for (each file once)."""
    total = 0
    for p in set(paths):
        f = site / p.lstrip("/")
        if f.is_dir():
            f = f / "index.html"
        if f.is_file():
            total += f.stat().st_size
    return total


def _fingerprints(run) -> str:
    lines = [line for line in run.code_output.splitlines() if line.startswith("{")]
    return lines[-1] if lines else f"(none: {run.code_output.strip()[:200]!r})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="rounds, each a fresh page and a fresh CPython kernel")
    ap.add_argument("--notebook", default="00-tour.ipynb")
    ap.add_argument("--site", type=Path, default=ROOT / "build" / "lite" / "site")
    args = ap.parse_args(argv)
    drive = _drive()
    if not (args.site / "jupyter-lite.json").is_file():
        print(f"no site at {args.site}: run bash scripts/build-lite.sh", file=sys.stderr)
        return 2

    print(f"bench_lite: {args.notebook}, {args.runs} round(s); {machine_note()}")
    sizes = site_sizes(args.site)
    total = sum(sizes.values())
    print(f"  site {args.site}: {_mb(total)} on disk (target <= {TARGET_MB:.0f} MB: {total / 1e6 / TARGET_MB:.2f})")
    for name, n in sizes.items():
        print(f"    {name:<20} {_mb(n)}")

    browser_runs, cpython_runs, problems = [], [], []
    with drive.serve(args.site) as url, drive.chromium() as browser:
        for i in range(args.runs):
            run = drive.run_in_site(browser, url, args.notebook, code=FINGERPRINTS)
            base = drive.run_in_cpython(ROOT / "notebooks" / args.notebook, code=FINGERPRINTS)
            browser_runs.append(run)
            cpython_runs.append(base)
            print(
                f"  round {i + 1}: pyodide {run.seconds:6.2f} s (wall {run.wall_seconds:5.2f} s, kernel ready in"
                f" {run.kernel_seconds:4.1f} s), cpython {base.seconds:5.2f} s (wall {base.wall_seconds:5.2f} s):"
                f" {run.seconds / base.seconds:4.1f}x"
            )
            if run.external_requests:
                problems.append(f"round {i + 1}: requests outside 127.0.0.1: {run.external_requests[:5]}")
            if run.unexpected_errors() or run.not_run():
                problems.append(f"round {i + 1}: the notebook failed in the browser:\n{run.summary()}")
            if base.unexpected_errors():
                problems.append(f"round {i + 1}: the notebook failed in CPython:\n{base.summary()}")
            if _fingerprints(run) != _fingerprints(base):
                problems.append(f"round {i + 1}: fingerprints {_fingerprints(run)} != CPython's {_fingerprints(base)}")

    def stat(runs, attr):
        values = [getattr(r, attr) for r in runs]
        return statistics.median(values), min(values)

    (p_med, p_min), (c_med, c_min) = stat(browser_runs, "seconds"), stat(cpython_runs, "seconds")
    ratio = p_med / c_med
    print(f"  cells, in the kernel:  pyodide median {p_med:.2f} s (min {p_min:.2f}),", end="")
    print(f" cpython {c_med:.2f} s (min {c_min:.2f})")
    print(f"  ratio of the medians: {ratio:.2f}x (target <= {TARGET_RATIO:.0f}x: {ratio / TARGET_RATIO:.2f})")
    pw_med, _ = stat(browser_runs, "wall_seconds")
    cw_med, _ = stat(cpython_runs, "wall_seconds")
    print(f"  Run All, wall:         pyodide median {pw_med:.2f} s, cpython {cw_med:.2f} s: {pw_med / cw_med:.2f}x")
    k_med, k_min = stat(browser_runs, "kernel_seconds")
    print(f"  page open to an idle Pyodide kernel: median {k_med:.1f} s (min {k_min:.1f})")
    first = browser_runs[0]
    print(f"  the first load fetched {_mb(fetched_bytes(args.site, first.local_paths))} of the site's files")
    print(f"  fingerprints: {_fingerprints(first)}")
    if problems:
        print("bench_lite: FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"bench_lite: {exc}", file=sys.stderr)
        sys.exit(1)
