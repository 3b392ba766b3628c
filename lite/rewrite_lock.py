"""Write the JupyterLite site's pyodide-lock.json: exactly the wheels the site ships, with their own hashes.

The npm package ``pyodide`` holds the runtime and Pyodide's ``pyodide-lock.json`` but none of the wheels
that lock names (those live on a CDN). This script keeps the lock's ``info`` (ABI, platform, Python) and
replaces its ``packages`` with one entry per wheel given: the file name next to the lock, the sha256 of
that file (PyPI's wheels differ from Pyodide's rebuilds, so the old hashes would be refused), the
importable top-level names, and ``depends`` from the wheel's own ``Requires-Dist`` evaluated for Pyodide
(emscripten, the lock's Python). A requirement that is neither shipped nor listed in ``--absent`` fails
the build: an import would fail in the browser instead. Packages the site does not ship are dropped, so
nothing in the lock points at a file that is not there (no CDN fallback, no 404 at run time).

Run by scripts/build-lite.sh in the build venv (it needs ``packaging``)::

    python lite/rewrite_lock.py --in-lock pyodide/pyodide-lock.json --out-dir SITE_SRC/static/pyodide \
        --absent lite/absent.txt --preload lite/jupyter-lite.json WHEEL_OR_DIR...
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"


def say(*lines: str, stream: Any = None) -> None:
    """Write lines to stdout (or ``stream``): the build's log."""
    (stream or sys.stdout).write("".join(f"{line}\n" for line in lines))


def pyodide_environment(python: str) -> dict[str, str]:
    """PEP 508 marker values inside Pyodide (``python`` is the lock's ``info.python``, e.g. ``3.14.2``)."""
    env = default_environment()
    env.update(
        {
            "implementation_name": "cpython",
            "implementation_version": python,
            "os_name": "posix",
            "platform_machine": "wasm32",
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": "Emscripten",
            "platform_version": "",
            "python_full_version": python,
            "python_version": ".".join(python.split(".")[:2]),
            "sys_platform": "emscripten",
        }
    )
    return env


def read_absent(path: Path | None) -> dict[str, str]:
    """``name  # reason`` lines -> {canonical name: reason}."""
    absent: dict[str, str] = {}
    if path is None:
        return absent
    for raw in path.read_text().splitlines():
        line, _, reason = raw.partition("#")
        if line.strip():
            absent[canonicalize_name(line.strip())] = reason.strip()
    return absent


def read_preload(path: Path | None) -> list[str]:
    """The ``loadPyodideOptions.packages`` of the kernel's settings in a jupyter-lite.json."""
    if path is None:
        return []
    config = json.loads(path.read_text())["jupyter-config-data"]
    settings = config.get("litePluginSettings", {}).get(KERNEL_PLUGIN, {})
    return list(settings.get("loadPyodideOptions", {}).get("packages", []))


def top_level_imports(whl: zipfile.ZipFile, dist_info: str) -> list[str]:
    """Importable top-level names: top_level.txt if the wheel has one, else the RECORD's first path parts."""
    names = set()
    try:
        names = {n.strip() for n in whl.read(f"{dist_info}/top_level.txt").decode().splitlines() if n.strip()}
    except KeyError:
        for member in whl.namelist():
            first = member.split("/", 1)[0]
            if first.endswith((".dist-info", ".data")) or first.startswith("_"):
                continue
            if "/" in member or member.endswith(".py"):
                names.add(first.removesuffix(".py"))
    return sorted(n.replace("/", ".") for n in names if not n.startswith("_") or n == "_")


class Wheel:
    def __init__(self, path: Path) -> None:
        self.path = path
        name, version, _, tags = parse_wheel_filename(path.name)
        if not any(t.abi == "none" and t.platform == "any" for t in tags):
            sys.exit(f"rewrite_lock: {path.name} is not a pure-Python wheel (py3-none-any)")
        self.key = canonicalize_name(name)
        self.version = str(version)
        with zipfile.ZipFile(path) as whl:
            dist_info = next(n.split("/", 1)[0] for n in whl.namelist() if n.split("/", 1)[0].endswith(".dist-info"))
            self.metadata = Parser().parsestr(whl.read(f"{dist_info}/METADATA").decode())
            self.imports = top_level_imports(whl, dist_info)
        self.name = self.metadata["Name"]
        self.sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        self.requires = [Requirement(r) for r in self.metadata.get_all("Requires-Dist") or []]


def collect(paths: list[Path]) -> dict[str, Wheel]:
    wheels: dict[str, Wheel] = {}
    for p in paths:
        for f in sorted(p.glob("*.whl")) if p.is_dir() else [p]:
            w = Wheel(f)
            if w.key in wheels:
                if wheels[w.key].path.name != f.name:
                    sys.exit(f"rewrite_lock: two wheels for {w.key}: {wheels[w.key].path} and {f}")
                continue
            wheels[w.key] = w
    return wheels


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheels", nargs="+", type=Path, help="wheels, or folders of wheels, to ship")
    ap.add_argument("--in-lock", type=Path, required=True, help="pyodide-lock.json of the npm package")
    ap.add_argument("--out-dir", type=Path, required=True, help="the site's pyodide folder: lock and wheels go here")
    ap.add_argument("--absent", type=Path, help="requirements left out on purpose (lite/absent.txt)")
    ap.add_argument("--preload", type=Path, help="jupyter-lite.json whose preloaded packages must be in the lock")
    args = ap.parse_args(argv)

    base = json.loads(args.in_lock.read_text())
    env = pyodide_environment(base["info"]["python"])
    absent = read_absent(args.absent)
    wheels = collect(args.wheels)

    problems: list[str] = []
    left_out: dict[str, set[str]] = {}
    packages: dict[str, dict] = {}
    for key, w in sorted(wheels.items()):
        depends = set()
        for req in w.requires:
            if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
                continue
            dep = canonicalize_name(req.name)
            if dep in wheels:
                if not req.specifier.contains(wheels[dep].version, prereleases=True) and dep not in absent:
                    # the kernel's shims (ipykernel 6.9.2, widgetsnbextension 4.0.999) stand in on purpose
                    say(f"rewrite_lock: note: {key} asks {req}, the site ships {dep} {wheels[dep].version}")
                depends.add(dep)
            elif dep in absent:
                left_out.setdefault(dep, set()).add(key)
            else:
                problems.append(f"{key} {w.version} requires {req} (not shipped; add its wheel or list it in --absent)")
        packages[key] = {
            "name": w.name,
            "version": w.version,
            "file_name": w.path.name,
            "install_dir": "site",
            "sha256": w.sha256,
            "package_type": "package",
            "imports": w.imports,
            "depends": sorted(depends),
            "unvendored_tests": False,
        }
    problems += [
        f"preloaded package {name!r} ({args.preload}) is not in the lock"
        for name in read_preload(args.preload)
        if canonicalize_name(name) not in packages
    ]
    if problems:
        say("rewrite_lock: the lock would not load in the browser:", *(f"  {p}" for p in problems), stream=sys.stderr)
        return 1

    args.out_dir.mkdir(parents=True, exist_ok=True)
    for stale in args.out_dir.glob("*.whl"):
        if stale.name not in {w.path.name for w in wheels.values()}:
            stale.unlink()
    for w in wheels.values():
        target = args.out_dir / w.path.name
        if target.resolve() != w.path.resolve():
            shutil.copyfile(w.path, target)
    lock = {"info": base["info"], "packages": packages}
    (args.out_dir / "pyodide-lock.json").write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")

    total = sum(w.path.stat().st_size for w in wheels.values())
    say(f"rewrite_lock: {len(packages)} packages, {total / 1e6:.1f} MB of wheels, Python {base['info']['python']}")
    for key, w in sorted(wheels.items()):
        size, depends = w.path.stat().st_size / 1e3, ", ".join(packages[key]["depends"])
        say(f"  {key:<26} {w.version:<10} {size:>7.0f} kB  {depends}")
    for dep, by in sorted(left_out.items()):
        say(f"  left out: {dep:<16} (required by {', '.join(sorted(by))}): {absent[dep]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
