"""A run as versioned Arrow tables: build them, write and read them as Parquet (``docs/export-schema.md``).

::

    from engine.export import export_run, read_export
    export = export_run(run_spec(BY_NAME["copier: random aborts"], 7))
    export.write_parquet("out/")
    read_export("out/").to_pandas("records")

Role
----
The package's public names, re-exported from its modules: :mod:`~engine.export.run` (the
builders and :class:`RunExport`), :mod:`~engine.export.parquet` (the directory layout),
:mod:`~engine.export.schema` (the versioned schema). The modules that build rows
(:mod:`~engine.export.history`, :mod:`~engine.export.logs`, :mod:`~engine.export.events`) are
imported from where they are.

Invariants
----------
Names are loaded on first use (PEP 562), so importing one module of the package (say
``engine.export.common``) does not import pyarrow's Parquet support or the scenario catalog.

What it does not do
-------------------
No Spark: ``eos_magics.spark.views`` registers these tables as Spark views.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "SCHEMA_VERSION",
    "TABLES",
    "ExportError",
    "RunExport",
    "RunId",
    "export_cluster",
    "export_history",
    "export_run",
    "export_runs",
    "inspect_export",
    "read_export",
    "run_id_for",
    "validate",
    "write_parquet",
]

_WHERE = {
    "SCHEMA_VERSION": "schema",
    "TABLES": "schema",
    "ExportError": "schema",
    "validate": "schema",
    "RunId": "common",
    "RunExport": "run",
    "export_cluster": "run",
    "export_history": "run",
    "export_run": "run",
    "export_runs": "run",
    "run_id_for": "run",
    "inspect_export": "parquet",
    "read_export": "run",
    "write_parquet": "parquet",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.export' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"engine.export.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
