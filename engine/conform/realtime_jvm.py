"""The Java programs of ``jvm/``: where their jars are and the command that runs one.

    cmd = java_command("eosmagics.jvm.Version")      # ["java", "-cp", ".../eos-jvm.jar:.../libs/*", ...]

Role
----
``bash scripts/build-jvm.sh`` (run by ``scripts/setup.sh``) builds ``jvm/`` with Maven into
``jvm/target/eos-jvm.jar`` and copies its dependencies (kafka-clients and Kafka Streams 4.4.0) to
``jvm/target/libs``. Tests and conformance cases start those programs with :func:`java_command`;
nothing is downloaded or compiled at test time.

Invariants
----------
* :func:`jvm_problem` says in one line what to run when Java or the built jar is missing, and is
  ``None`` otherwise; :func:`java_command` raises :class:`JvmUnavailableError` with that line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["JvmUnavailableError", "java_command", "jvm_problem", "jvm_target"]


class JvmUnavailableError(RuntimeError):
    """Java or the built ``jvm/`` jar is missing; the message says what to run."""


def jvm_target() -> Path:
    """Return ``jvm/target`` of the checkout this package runs from."""
    return Path(__file__).resolve().parents[2] / "jvm" / "target"


def jvm_problem() -> str | None:
    """Return why the Java programs cannot run here, in one line, or ``None`` when they can."""
    if shutil.which("java") is None:
        return "Java 17 not found (apt-get install openjdk-17-jdk-headless maven), then: bash scripts/build-jvm.sh"
    target = jvm_target()
    if not (target / "eos-jvm.jar").is_file() or not (target / "libs").is_dir():
        return f"the Java programs are not built ({target}/eos-jvm.jar missing): bash scripts/build-jvm.sh"
    return None


def java_command(main_class: str, *args: str, heap_mb: int = 256) -> list[str]:
    """Return the command line that runs ``main_class`` of ``jvm/`` with ``args``."""
    problem = jvm_problem()
    if problem is not None:
        raise JvmUnavailableError(problem)
    target = jvm_target()
    classpath = f"{target / 'eos-jvm.jar'}:{target / 'libs'}/*"
    return [
        "java",
        f"-Xmx{heap_mb}m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-cp",
        classpath,
        main_class,
        *args,
    ]
