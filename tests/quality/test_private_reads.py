"""No module reads another object's private attributes (``scripts/private_reads.py``, docs/engine.md).

A room is handed what it needs; it does not reach into its owner's fields. The only reads left are
PySpark's py4j handles, PySpark's one way to the JVM.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("private_reads", ROOT / "scripts" / "private_reads.py")
assert _spec is not None and _spec.loader is not None
private_reads = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(private_reads)

#: PySpark keeps its JVM behind these; there is no public way to them.
PY4J = {"_jvm", "_jsc", "_gateway", "_jdf"}


def test_the_counter_sees_a_read_and_lets_own_names_constants_and_namedtuples_through(tmp_path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "class K:\n"
        "    def f(self, producer, row, err):\n"
        "        a = self._mine\n"
        "        b = K._helper\n"
        "        c = err._TIMED_OUT\n"
        "        d = row._asdict()\n"
        "        e = super()._base\n"
        "        return producer._queues\n"
    )
    assert private_reads.private_reads(source) == [(8, "producer._queues")]


def test_no_module_reads_another_objects_private_attributes() -> None:
    found = []
    for package in private_reads.PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, expression in private_reads.private_reads(path):
                if expression.rsplit(".", 1)[1] not in PY4J:
                    found.append(f"{path.relative_to(ROOT)}:{line}: {expression}")
    assert not found, "hand the room what it needs instead of reading these:\n" + "\n".join(found)
