"""The maps stay true: every module has its row, every row its module, every test folder its line.

``docs/engine.md`` names every module of ``engine``, ``eos_magics`` and ``widgets`` as a
backquoted path in a row of its tables; ``docs/scenarios.md`` names every module of
``engine/scenarios``; ``tests/README.md`` names every folder of ``tests``. A module added without a
row, or a row left behind by a module that moved, fails here with its path.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules(*packages: str) -> set[str]:
    return {p.relative_to(ROOT).as_posix() for pkg in packages for p in (ROOT / pkg).rglob("*.py")}


def _named(doc: str, prefix: str) -> set[str]:
    text = (ROOT / doc).read_text()
    return set(re.findall(rf"`({prefix}[^`\s]*\.py)`", text))


def test_docs_engine_md_has_a_row_for_every_module_and_no_row_for_a_module_gone() -> None:
    modules = _modules("engine", "eos_magics", "widgets")
    named = _named("docs/engine.md", "(?:engine|eos_magics|widgets)/")
    assert not sorted(modules - named), f"modules with no row in docs/engine.md: {sorted(modules - named)}"
    assert not sorted(named - modules), f"rows for modules gone: {sorted(named - modules)}"


def test_docs_scenarios_md_names_every_scenario_module() -> None:
    modules = _modules("engine/scenarios")
    named = _named("docs/scenarios.md", "engine/scenarios/")
    assert modules <= named, f"scenario modules docs/scenarios.md does not name: {sorted(modules - named)}"
    assert named <= modules, f"docs/scenarios.md names modules that do not exist: {sorted(named - modules)}"


def test_tests_readme_names_every_test_folder() -> None:
    text = (ROOT / "tests" / "README.md").read_text()
    folders = sorted(p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
    missing = [f for f in folders if f"{f}/" not in text]
    assert not missing, f"test folders tests/README.md does not name: {missing}"
