"""The Binder configuration (``binder/``) agrees with ``pyproject.toml`` and with repo2docker's rules.

Goal: the files repo2docker reads build an image that can import and run eos-magics. When
``binder/`` exists, repo2docker ignores the root ``pyproject.toml``, so the Python version, the
dependencies and the install of the package itself must all be spelled out there (binder/README.md).
Method: read the files and compare them with ``pyproject.toml`` using ``packaging``; no network,
no install (``scripts/binder-check.sh`` builds the real environment).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _requirement_lines() -> list[str]:
    lines = (BINDER / "requirements.txt").read_text().splitlines()
    return [s for s in (line.split("#", 1)[0].strip() for line in lines) if s]


def _pins() -> dict[str, Requirement]:
    return {canonicalize_name(r.name): r for r in map(Requirement, _requirement_lines())}


def _runtime_dependencies() -> dict[str, Requirement]:
    return {canonicalize_name(r.name): r for r in map(Requirement, _pyproject()["project"]["dependencies"])}


def test_runtime_txt_names_a_python_that_pyproject_accepts():
    text = (BINDER / "runtime.txt").read_text().strip()
    m = re.fullmatch(r"python-(\d+)\.(\d+)", text)
    assert m, f"binder/runtime.txt must read like 'python-3.12', not {text!r}"
    version = Version(f"{m[1]}.{m[2]}")
    assert version >= Version("3.11"), "pyspark 4.3 needs Python >= 3.11 (repo2docker's default is 3.10)"
    assert _pyproject()["project"]["requires-python"]
    assert Requirement(f"python{_pyproject()['project']['requires-python']}").specifier.contains(version)


def test_requirements_are_third_party_only():
    for line in _requirement_lines():
        assert not line.startswith(("-e", ".", "/", "-r", "-c")), (
            f"binder/requirements.txt: {line!r}: a local or nested reference moves the install after the repo copy, "
            "so every commit rebuilds every dependency; install the package in binder/postBuild instead"
        )


def test_every_requirement_is_pinned_exactly():
    for name, req in _pins().items():
        specs = list(req.specifier)
        assert len(specs) == 1, f"{name}: pin it with a single '=='"
        assert specs[0].operator == "==", f"{name}: pin it with '==', not {specs[0]}"
        assert "*" not in specs[0].version, f"{name}: pin an exact version, not {specs[0]}"


def test_requirements_cover_every_runtime_dependency_of_pyproject():
    missing = sorted(set(_runtime_dependencies()) - set(_pins()))
    assert not missing, f"binder/requirements.txt lacks pyproject dependencies: {missing}"


@pytest.mark.parametrize("name", sorted(_runtime_dependencies()))
def test_each_pin_satisfies_pyprojects_range(name):
    pin = _pins().get(name)
    if pin is None:
        pytest.skip(f"{name} is not pinned (the coverage test fails for it)")
    (spec,) = pin.specifier
    wanted = _runtime_dependencies()[name].specifier
    assert wanted.contains(spec.version, prereleases=True), f"{name}=={spec.version} is outside pyproject's {wanted}"


def test_post_build_is_executable_strict_bash_that_installs_the_package_without_deps():
    path = BINDER / "postBuild"
    text = path.read_text()
    assert os.access(path, os.X_OK), "repo2docker runs binder/postBuild directly: chmod +x binder/postBuild"
    assert text.startswith("#!/bin/bash\n")
    assert re.search(r"^set -[a-z]*e[a-z]*( |$)", text, re.M), "postBuild needs set -e, or its failures are ignored"
    assert re.search(r"^pip install .*--no-deps .*\.$", text, re.M)


def test_apt_txt_installs_a_java_runtime_for_pyspark():
    packages = [s for s in ((BINDER / "apt.txt").read_text().splitlines()) if s.strip() and not s.startswith("#")]
    assert any(re.fullmatch(r"openjdk-(17|21)-jre(-headless)?", p.strip()) for p in packages), packages


def test_the_image_fetches_spark_s_kafka_source_and_start_tells_the_kernel_where():
    # Notebook 05's section 6 reads a topic with Spark's Kafka source: its jars come from Maven at
    # build time (maven in apt.txt, postBuild runs the fetch script), and binder/start names their
    # folder, since the installed package cannot find the repository's .cache by itself.
    packages = [s.strip() for s in (BINDER / "apt.txt").read_text().splitlines() if s.strip() and not s.startswith("#")]
    assert "maven" in packages, packages
    assert re.search(r"^bash scripts/fetch-spark-kafka\.sh$", (BINDER / "postBuild").read_text(), re.M)
    start = BINDER / "start"
    assert os.access(start, os.X_OK), "repo2docker runs binder/start directly: chmod +x binder/start"
    text = start.read_text()
    assert "EOS_SPARK_KAFKA_JARS" in text and "spark-kafka-4.2.0" in text
    assert text.rstrip().endswith('exec "$@"'), 'repo2docker\'s start hook must end with exec "$@"'
    from eos_magics.spark import kafka

    assert kafka.JARS_ENV == "EOS_SPARK_KAFKA_JARS"
    assert f"spark-kafka-{kafka.CONNECTOR_VERSION}" in text


def _imported_modules(notebook: Path) -> set[str]:
    import json

    cells = json.loads(notebook.read_text())["cells"]
    found: set[str] = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            m = re.match(r"\s*(?:from|import)\s+([A-Za-z_]\w*)", line)
            if m:
                found.add(m[1])
    return found


def test_binder_installs_what_every_notebook_imports():
    """Every third-party module a notebook imports (its own cells or a file it writes) is pinned here.

    Notebook 07 writes a confluent-kafka application and runs it; Binder's image lacked the
    package, so 07 failed at the app's start (issue 42, item 10).
    """
    import sys

    extras = {
        canonicalize_name(r.name): r for r in map(Requirement, _pyproject()["project"]["optional-dependencies"]["test"])
    }
    modules = {"confluent_kafka": "confluent-kafka", "pandas": "pandas", "pyspark": "pyspark"}
    ours = {"engine", "eos_magics", "widgets"}
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for module in sorted(_imported_modules(notebook) - ours - set(sys.stdlib_module_names)):
            dist = canonicalize_name(modules.get(module, module))
            assert dist in _pins(), f"{notebook.name} imports {module}: binder/requirements.txt must install {dist}"
            if dist in extras:
                assert _pins()[dist].specifier == extras[dist].specifier, (
                    f"{dist}: binder pins {_pins()[dist].specifier}, pyproject's test extras {extras[dist].specifier}"
                )
