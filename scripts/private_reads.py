"""Count reads of another object's private attributes: ``other._name`` where ``other`` is not ``self``.

A room that is handed what it needs never reaches into its owner's fields. This counts, per package,
each ``x._name`` in the source whose ``x`` is not ``self`` or ``cls`` and not a class defined in the
same module (a class's own private helper, named through the class, is the class talking to itself).
Left out: ``super()._name`` (a class's own inherited helper), dunder names, enum members'
``_value_``-style names, upper-case constants (librdkafka's local error codes, ``KafkaError._TIMED_OUT``,
are public), and namedtuple's public API (``_asdict``, ``_replace``, ``_fields``, ``_make``), whose
leading underscore only avoids field names.

    python scripts/private_reads.py            # per package, then the total
    python scripts/private_reads.py --list     # every read, as path:line: expression
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "eos_magics", "widgets")
NAMEDTUPLE_API = {"_asdict", "_replace", "_fields", "_make", "_field_defaults"}
OWN = {"self", "cls"}


def _is_private(name: str) -> bool:
    if name.startswith("__") and name.endswith("__"):
        return False
    if name.startswith("_") and name.endswith("_") and not name.startswith("__"):
        return False  # enum's sunder names
    if name.lstrip("_").isupper():
        return False  # a public constant such as KafkaError._PARTITION_EOF
    return name.startswith("_") and name not in NAMEDTUPLE_API


def private_reads(path: Path) -> list[tuple[int, str]]:
    """Return ``(line, expression)`` for each read of another object's private attribute in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in OWN | classes:
            continue
        if isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "super":
            continue
        found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def main(argv: list[str]) -> int:
    listing = "--list" in argv
    total = 0
    for package in PACKAGES:
        count = 0
        for path in sorted((ROOT / package).rglob("*.py")):
            for line, expression in private_reads(path):
                count += 1
                if listing:
                    sys.stdout.write(f"{path.relative_to(ROOT)}:{line}: {expression}\n")
        total += count
        if not listing:
            sys.stdout.write(f"{package:12} {count}\n")
    if not listing:
        sys.stdout.write(f"{'total':12} {total}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
