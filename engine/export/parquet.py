"""An export on disk: one Parquet file per table and run, and a manifest that names the schema version.

Role
----
:func:`write_parquet` writes a :class:`~engine.export.run.RunExport` under a directory, and
:func:`read_tables` reads its tables back (:func:`engine.export.run.read_export` makes them a
``RunExport`` again; this module never imports ``run``, which imports it). The layout (``docs/export-schema.md``)::

    DIR/eos-export.json              the manifest: schema_version, tables, runs
    DIR/<table>/<run_id>.parquet     one file per table and run, also when it has no rows

so ``spark.read.parquet(DIR + "/records")`` or ``pd.read_parquet(DIR + "/records")`` reads one
table of every run. Writing into a directory that already holds an export adds the new runs.
:func:`inspect_export` checks a directory (manifest, files, each file's schema) without reading
any row, for readers that load the rows themselves (Spark).

Invariants
----------
* The manifest is written last, and each file goes to a temporary name first and is then
  renamed, so a reader sees either the old export or the new one, not half a file.
* A directory of another schema version is never written to, and never read as this one.
* A run id already in the directory is refused unless ``overwrite=True``.
* Every failure is one :class:`~engine.export.schema.ExportError` line that says what to do;
  pyarrow's own errors never reach the caller.

What it does not do
-------------------
No partitioned dataset discovery (hive-style ``key=value`` folders) and no compaction: a table
of N runs is N files.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.export.common import RunId
from engine.export.schema import REEXPORT_HINT, SCHEMA_VERSION, TABLES, ExportError, validate

if TYPE_CHECKING:
    from engine.export.run import RunExport

__all__ = ["MANIFEST", "ExportDir", "check_target", "inspect_export", "read_tables", "write_parquet"]

#: The manifest's file name inside an export directory.
MANIFEST = "eos-export.json"
#: The manifest's ``format`` field, which tells an eos export from any other JSON file.
FORMAT = "eos-export"


@dataclasses.dataclass(frozen=True)
class ExportDir:
    """What :func:`inspect_export` found: the runs and, per table asked for, its files in run order."""

    path: Path
    schema_version: int
    runs: tuple[RunId, ...]
    files: dict[str, tuple[Path, ...]]
    #: run id -> table -> rows, as the manifest records them
    rows: dict[str, dict[str, int]]


# -- writing ---------------------------------------------------------------------------------


def write_parquet(export: RunExport, directory: str | Path, *, overwrite: bool = False) -> Path:
    """Write every table of every run of ``export`` under ``directory``; return the directory.

    Parameters
    ----------
    export
        The tables, from :func:`~engine.export.run.export_run` and friends.
    directory
        A new or empty directory, or one that holds an export of this schema version (the runs
        are added to it).
    overwrite
        Replace a run whose id the directory already holds (else that is an error).

    Raises
    ------
    ExportError
        For a path that is a file, a non-empty directory that is no export, an export of another
        version, a run id already there, or a write that failed.
    """
    if not callable(getattr(export, "select", None)):
        raise ExportError(f"write_parquet takes a RunExport, not {type(export).__name__}")
    root = _path(directory)
    manifest = check_target(root, export.run_ids, overwrite=overwrite)
    old_runs = _manifest_runs(manifest, root) if manifest is not None else []
    rows = dict(manifest.get("rows", {})) if manifest is not None else {}
    try:
        for run in export.runs:
            one = export.select(run.run_id)
            for name, table in one.tables.items():
                _write_table(table, root / name / f"{run.run_id}.parquet")
            rows[run.run_id] = one.row_counts()
        new_ids = set(export.run_ids)
        runs = [r for r in old_runs if r.run_id not in new_ids] + list(export.runs)
        _write_manifest(root, runs, {r.run_id: rows[r.run_id] for r in runs if r.run_id in rows})
    except OSError as exc:
        raise ExportError(f"cannot write the export to {root}: {exc.strerror or exc}") from None
    return root


def check_target(
    directory: str | Path, run_ids: Iterable[str] = (), *, overwrite: bool = False
) -> dict[str, Any] | None:
    """Check that runs ``run_ids`` may be written under ``directory``, before any work is done.

    Returns the manifest already there (None for a new or empty directory).

    Raises
    ------
    ExportError
        As :func:`write_parquet` would.
    """
    root = _path(directory)
    manifest = _existing_manifest(root)
    old_ids = {r.run_id for r in _manifest_runs(manifest, root)} if manifest is not None else set()
    clash = [r for r in run_ids if r in old_ids]
    if clash and not overwrite:
        raise ExportError(
            f"{root} already holds run {clash[0]}; pass overwrite=True (eos export --overwrite) to replace it, "
            "or choose another --out"
        )
    return manifest


def _path(directory: str | Path) -> Path:
    if not isinstance(directory, str | os.PathLike) or not str(directory):
        raise ExportError(f"the export directory must be a path, not {directory!r}")
    return Path(directory)


def _existing_manifest(root: Path) -> dict[str, Any] | None:
    """Return the manifest of the export in ``root``, None for a new or empty directory; refuse anything else."""
    if root.exists() and not root.is_dir():
        raise ExportError(f"{root} is a file; give a directory for the export (eos export ... --out DIR)")
    if not root.exists():
        return None
    if not (root / MANIFEST).exists():
        if any(root.iterdir()):
            raise ExportError(f"{root} is not empty and holds no {MANIFEST}; choose a new or empty directory")
        return None
    manifest = _load_manifest(root)
    _check_version(manifest, root)
    return manifest


def _write_table(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _write_manifest(root: Path, runs: list[RunId], rows: dict[str, dict[str, int]]) -> None:
    body = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "tables": list(TABLES),
        "runs": [{"run_id": r.run_id, "scenario": r.scenario, "seed": r.seed} for r in runs],
        "rows": rows,
    }
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(body, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, root / MANIFEST)


# -- reading ---------------------------------------------------------------------------------


def _load_manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc).split(":", 1)[0]
        raise ExportError(f"{path} cannot be read ({reason}); {REEXPORT_HINT}") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise ExportError(f"{path} is not an eos export manifest; {REEXPORT_HINT}")
    return body


def _check_version(manifest: dict[str, Any], root: Path) -> None:
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ExportError(
            f"{root} holds export schema version {version}, this eos uses version {SCHEMA_VERSION}; "
            f"{REEXPORT_HINT.replace('DIR', 'NEW_DIR')}"
        )


def _manifest_runs(manifest: dict[str, Any], root: Path) -> list[RunId]:
    raw = manifest.get("runs")
    try:
        runs = [RunId(r["run_id"], r["scenario"], r["seed"]) for r in raw]  # type: ignore[union-attr]
    except (TypeError, KeyError, ValueError):
        raise ExportError(f"{root / MANIFEST} has a damaged run list; {REEXPORT_HINT}") from None
    return runs


def inspect_export(directory: str | Path, tables: Iterable[str] | None = None) -> ExportDir:
    """Check an export directory without reading its rows: manifest, version, every file and its schema.

    Parameters
    ----------
    directory
        A directory written by :func:`write_parquet` (or ``eos export``).
    tables
        The tables to check (default: all).

    Raises
    ------
    ExportError
        For a missing directory, no manifest, another schema version, a missing table or file,
        a file that is not Parquet, or a file whose schema differs from this version's.
    """
    root = _path(directory)
    if not root.exists():
        raise ExportError(
            f"{root} does not exist; write an export there first: eos export SCENARIO --seed N --out {root}"
        )
    if not root.is_dir():
        raise ExportError(f"{root} is a file, not an export directory; give the directory eos export wrote")
    if not (root / MANIFEST).exists():
        raise ExportError(f"{root} has no {MANIFEST}, so it is no eos export; {REEXPORT_HINT}")
    manifest = _load_manifest(root)
    _check_version(manifest, root)
    runs = _manifest_runs(manifest, root)
    names = _table_names(tables)
    files: dict[str, tuple[Path, ...]] = {}
    for name in names:
        if not (root / name).is_dir():
            raise ExportError(f"{root} has no table {name} (no {root / name} directory); {REEXPORT_HINT}")
        paths = []
        for run in runs:
            path = root / name / f"{run.run_id}.parquet"
            _check_file(name, path)
            paths.append(path)
        files[name] = tuple(paths)
    rows = manifest.get("rows") if isinstance(manifest.get("rows"), dict) else {}
    return ExportDir(root, SCHEMA_VERSION, tuple(runs), files, rows)


def _table_names(tables: Iterable[str] | None) -> list[str]:
    if tables is None:
        return list(TABLES)
    if isinstance(tables, str):
        tables = [tables]
    names = list(tables)
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        raise ExportError(f"no table named {unknown[0]!r}; the tables are: {', '.join(TABLES)}")
    return [n for n in TABLES if n in names]


def _check_file(name: str, path: Path) -> None:
    if not path.is_file():
        raise ExportError(f"table {name} has no file for run {path.stem} ({path} is missing); {REEXPORT_HINT}")
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError):
        raise ExportError(f"{path} is not a readable Parquet file; {REEXPORT_HINT}") from None
    validate(name, schema, where=str(path))


def read_tables(directory: str | Path, tables: Iterable[str] | None = None) -> tuple[dict[str, pa.Table], list[RunId]]:
    """Read an export directory back: every table (all runs concatenated) and the runs, in the manifest's order.

    :func:`engine.export.run.read_export` wraps them in a :class:`~engine.export.run.RunExport`.

    Parameters
    ----------
    directory
        A directory written by :func:`write_parquet` (or ``eos export``).
    tables
        Read only these tables (default: all); the others come back empty, with their schema.

    Raises
    ------
    ExportError
        See :func:`inspect_export`.
    """
    found = inspect_export(directory, tables)
    out: dict[str, pa.Table] = {}
    for name, schema in TABLES.items():
        paths = found.files.get(name)
        if not paths:
            out[name] = schema.empty_table()
            continue
        try:
            parts = [pq.read_table(p, schema=schema) for p in paths]
        except (pa.ArrowException, OSError):
            raise ExportError(f"table {name} under {found.path} cannot be read; {REEXPORT_HINT}") from None
        out[name] = pa.concat_tables(parts)
    return out, list(found.runs)
