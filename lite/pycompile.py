"""Add Pyodide's own bytecode to pure-Python wheels, so the browser imports them without compiling.

Runs inside Pyodide (Python 3.14, the site's own runtime) under Node.js, started by ``lite/pycompile.mjs``,
which mounts the host folders at ``/in`` and ``/out`` and calls :func:`main`. Each ``/in/NAME.whl`` is
written to ``/out/NAME.whl`` with, next to every module, ``__pycache__/MODULE.cpython-314.pyc``: an
unchecked hash-based pyc (PEP 552), valid whatever the installed file's mtime, never compared with the
source. The ``.py`` files stay (tracebacks and ``inspect`` read them); RECORD lists the new files with
their hashes. Entries are written in the input's order with a fixed timestamp: the same input gives the
same output, byte for byte.

Why: PyPI's wheels carry sources only, and CPython compiles each module on its first import. In the
browser that is the slowest part of ``%load_ext eos_magics`` and the first ``%eos_cluster create``
(Pyodide's own distribution ships its packages compiled for the same reason).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import marshal
import sys
import warnings
import zipfile
from pathlib import Path, PurePosixPath

EPOCH = (1980, 1, 1, 0, 0, 0)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _pyc(source: bytes, path: str) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes and the like: CPython warns once more on import
        code = compile(source, path, "exec", dont_inherit=True)
    flags = 0b01  # hash-based, not checked (PEP 552)
    header = importlib.util.MAGIC_NUMBER + flags.to_bytes(4, "little") + importlib.util.source_hash(source)
    return header + marshal.dumps(code)


def _entry(name: str, data: bytes) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name, EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info, data


def compile_wheel(src: Path, dst: Path) -> tuple[int, int]:
    """Write ``src`` with bytecode to ``dst``; return (modules compiled, modules that would not compile)."""
    tag = sys.implementation.cache_tag
    compiled = failed = 0
    entries: list[tuple[zipfile.ZipInfo, bytes]] = []
    record_name = None
    with zipfile.ZipFile(src) as whl:
        for info in whl.infolist():
            if info.is_dir():
                continue
            data = whl.read(info)
            top = info.filename.split("/", 1)[0]
            if top.endswith(".dist-info") and info.filename.endswith("/RECORD"):
                record_name = info.filename
                continue
            entries.append(_entry(info.filename, data))
            if not info.filename.endswith(".py") or top.endswith((".dist-info", ".data")):
                continue
            if {"tests", "test"} & set(info.filename.split("/")[1:-1]):
                continue  # a package's own test suite: never imported by a notebook, half the size
            path = PurePosixPath(info.filename)
            try:
                pyc = _pyc(data, info.filename)
            except SyntaxError:  # e.g. a template or a Python 2 file shipped as data: import never reaches it
                failed += 1
                continue
            entries.append(_entry(str(path.parent / "__pycache__" / f"{path.stem}.{tag}.pyc"), pyc))
            compiled += 1
    if record_name is None:
        raise ValueError(f"{src.name}: no .dist-info/RECORD")
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    for info, data in entries:
        writer.writerow([info.filename, _record_hash(data), len(data)])
    writer.writerow([record_name, "", ""])
    entries.append(_entry(record_name, rows.getvalue().encode()))
    with zipfile.ZipFile(dst, "w") as out:
        for info, data in entries:
            out.writestr(info, data)
    return compiled, failed


def main(in_dir: str = "/in", out_dir: str = "/out") -> str:
    lines = []
    for src in sorted(Path(in_dir).glob("*.whl")):
        compiled, failed = compile_wheel(src, Path(out_dir) / src.name)
        lines.append(f"  {src.name}: {compiled} modules compiled" + (f", {failed} left as source" if failed else ""))
    return "\n".join(lines)
