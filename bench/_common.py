"""Helpers the bench scripts share: fail loudly, peak memory, the machine note, fresh-process children.

Each bench script runs its variants in fresh interpreters (``run_json_child``) so memory and GC
state of one variant never leak into the next; a child prints one JSON line as its last line.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class BenchError(RuntimeError):
    """The simulated run did not deliver what was sent, or a child failed."""


def check(cond: bool, what: str) -> None:
    """Fail loudly."""
    if not cond:
        raise BenchError(what)


def peak_rss_bytes() -> int:
    """Return the process's peak RSS so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def machine_note() -> str:
    """Return the load average and the engine's git state (others may be editing it)."""
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, cwd=ROOT, check=False, timeout=10
        ).stdout.strip()

    try:
        head, dirty = git("rev-parse", "--short", "HEAD"), git("status", "--porcelain", "engine").splitlines()
    except (OSError, subprocess.SubprocessError):
        head, dirty = "?", []
    return f"{os.cpu_count()} CPUs, load {load}; git {head or '?'}, {len(dirty)} uncommitted file(s) under engine/"


def run_json_child(cmd: list[str], *, timeout: float, what: str) -> Any:
    """Run ``cmd`` in a fresh interpreter; return the JSON of its last stdout line.

    Raises BenchError with the end of its stderr when it exits non-zero.
    """
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, cwd=ROOT)
    if proc.returncode != 0:
        msg = f"{what} exited {proc.returncode}:\n{proc.stderr.strip()[-3000:]}"
        raise BenchError(msg)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def print_child_result(result: dict[str, Any], *, as_json: bool) -> None:
    """Print a child's result: one JSON line for the parent, or readable key/value lines."""
    if as_json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>14}: {v}")


def finish(failures: list[str], passed: str = "", *, heading: str = "FAILED:") -> int:
    """End a bench: print the failures under ``heading`` to stderr and return 1, else print ``passed`` and return 0."""
    if failures:
        print(f"\n{heading}", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        return 1
    if passed:
        print(passed)
    return 0
