"""One quiet SparkSession for notebooks, the ``eos-spark`` command and the tests.

Role
----
:func:`start` returns the process's Spark session, started once with the settings measured in
``design/jupyter-spark.md`` §1.3: ``local[2]`` unless told otherwise, no UI, no progress bars,
2 shuffle partitions, UTC, Arrow transfers on, the driver bound to 127.0.0.1, and the JVM's own
output (the incubator-module warning, log4j's banner, executor stack traces) sent to a log
file instead of the notebook cell. :func:`status` describes it and :func:`stop` stops it.

Where it runs
-------------
* ``master=None`` reads ``EOS_SPARK_MASTER`` and falls back to ``local[2]``.
* A master URL (``local[N]``, ``spark://host:port``, ``yarn``, ``k8s://...``) starts a classic
  session against it. The executors then need this project installed (``docs/spark.md``).
* ``sc://host:port`` connects to a Spark Connect server (needs ``pip install 'pyspark[connect]'``).

Memory
------
``spark.driver.memory`` is honoured only when the JVM first starts: a later session in the same
process reuses that JVM unless :func:`stop` ended it (it does, for a local master).
:func:`driver_memory` picks it: ``EOS_SPARK_DRIVER_MEMORY`` when set,
else a quarter of ``MEM_LIMIT`` (set by JupyterHub and mybinder.org) between 256m and 2g, else
512m, which fits mybinder.org's 2 GB pod beside the kernel. Asking for another size after the
JVM started gives a warning in :attr:`SparkStatus.notes`, not a silent no-op.

Spark's Kafka source
--------------------
``start(kafka=...)`` puts the jars of spark-sql-kafka-0-10 (:mod:`eos_magics.spark.kafka`, fetched
at set-up) in ``spark.jars``. Spark adds ``spark.jars`` to the driver's class path only when the
JVM launches, so: ``kafka=None`` (the default) adds them when they were fetched, ``kafka=True``
requires them (and relaunches a JVM left up without them, when no session runs), ``kafka=False``
leaves them out. A running session without them is never changed: asking it for ``kafka=True``
raises an error that says to stop it first.

Invariants
----------
* ``PYSPARK_PYTHON`` is this interpreter before the JVM starts, so Python workers import the
  same packages as the kernel (pyarrow, this project).
* The kernel's file descriptors 1 and 2 are restored as soon as the JVM is up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eos_magics.spark import kafka as spark_kafka
from eos_magics.spark.errors import SparkBridgeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER",
    "SparkStatus",
    "active",
    "driver_memory",
    "start",
    "status",
    "stop",
]

#: The master used when neither the caller nor ``EOS_SPARK_MASTER`` names one.
DEFAULT_MASTER = "local[2]"
#: Driver heap when nothing says otherwise: fits a 2 GB Binder pod with the kernel beside it.
DEFAULT_MEMORY = "512m"
_MEMORY = re.compile(r"^[1-9][0-9]*[kmgt]?$")
_MASTER = re.compile(r"^(local(\[([1-9][0-9]*|\*)\])?|spark://\S+|yarn|k8s://\S+|sc://\S+)$")
_CONF_DIR = Path(__file__).with_name("conf")


@dataclasses.dataclass(frozen=True, repr=False)
class SparkStatus:
    """What :func:`status` reports about the running session."""

    master: str
    version: str
    remote: bool
    driver_memory: str
    jvm_max_heap_mb: int | None
    started_s: float
    log_path: str
    notes: tuple[str, ...] = ()
    #: Whether the driver can load Spark's Kafka source (None over Spark Connect: the server decides).
    kafka_source: bool | None = None

    def __str__(self) -> str:
        heap = f", JVM heap {self.jvm_max_heap_mb} MB" if self.jvm_max_heap_mb is not None else ""
        kind = "Spark Connect" if self.remote else "classic"
        head = f"Spark {self.version} on {self.master} ({kind}), driver memory {self.driver_memory}{heap}"
        lines = [f"{head}, started in {self.started_s:.1f} s", f"JVM output: {self.log_path}"]
        if self.kafka_source is not None:
            from eos_magics.spark.kafka import CONNECTOR_VERSION, FETCH_HINT, available

            if self.kafka_source:
                lines.append(f"Kafka source: spark-sql-kafka-0-10 {CONNECTOR_VERSION}")
            else:
                fetch = "" if available() else f"fetch its jars ({FETCH_HINT}), then "
                lines.append(f"Kafka source: not on the class path; {fetch}stop and start with kafka=True (--kafka)")
        lines.extend(f"note: {n}" for n in self.notes)
        return "\n".join(lines)

    __repr__ = __str__


@dataclasses.dataclass
class _State:
    session: Any = None
    master: str = ""
    memory: str = ""
    started_s: float = 0.0
    first_memory: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)


_STATE = _State()


def driver_memory(env: Mapping[str, str] | None = None) -> str:
    """Return the driver memory to ask for (see the module docstring), e.g. ``"512m"``."""
    env = os.environ if env is None else env
    explicit = env.get("EOS_SPARK_DRIVER_MEMORY", "").strip().lower()
    if explicit:
        if not _MEMORY.match(explicit):
            raise SparkBridgeError(
                f"EOS_SPARK_DRIVER_MEMORY={explicit!r} is not a size; use a number with k, m, g or t, e.g. 512m"
            )
        return explicit
    limit = env.get("MEM_LIMIT", "").strip()
    if limit.isdigit() and int(limit) > 0:
        mb = int(limit) // (4 * 1024 * 1024)
        return f"{min(max(mb, 256), 2048)}m"
    return DEFAULT_MEMORY


def _resolve_master(master: str | None) -> str:
    chosen = (master or os.environ.get("EOS_SPARK_MASTER") or DEFAULT_MASTER).strip()
    if not _MASTER.match(chosen):
        raise SparkBridgeError(
            f"Spark master {chosen!r} is not one Spark knows; use local[2], local[*], spark://HOST:PORT, "
            "yarn, k8s://URL or sc://HOST:PORT (Spark Connect)"
        )
    return chosen


@contextlib.contextmanager
def _jvm_stdio_to(path: str) -> Iterator[None]:
    """Point fds 1 and 2 at ``path`` while the JVM spawns; it keeps them, the kernel gets its own back."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    finally:
        os.close(fd)
    try:
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for s in saved:
            os.close(s)


def _log_path() -> str:
    return os.environ.get("EOS_SPARK_LOG") or os.path.join(tempfile.gettempdir(), f"eos-spark-{os.getuid()}.log")


def active() -> SparkSession | None:
    """Return the session :func:`start` made, or None when none is running."""
    s = _STATE.session
    if s is None:
        return None
    if not _STATE.master.startswith("sc://"):
        jsc = s.sparkContext._jsc  # the only way to see whether the context is stopped
        if jsc is None or jsc.sc().isStopped():
            _STATE.session = None
            return None
    return s


def start(
    master: str | None = None,
    *,
    memory: str | None = None,
    app_name: str = "eos-magics",
    config: Mapping[str, str] | None = None,
    kafka: bool | None = None,
) -> SparkSession:
    """Return the running session, or start one (quiet, ``local[2]`` by default).

    Parameters
    ----------
    master : str, optional
        ``local[N]``, ``spark://HOST:PORT``, ``yarn``, ``k8s://URL`` or ``sc://HOST:PORT``;
        default ``EOS_SPARK_MASTER`` or ``local[2]``. Asking for another master while a session
        runs is an error: stop it first.
    memory : str, optional
        Driver memory such as ``512m`` (default :func:`driver_memory`).
    config : mapping, optional
        Extra Spark settings, applied last.
    kafka : bool, optional
        Spark's Kafka source's jars in ``spark.jars``: None (default) when fetched, True required,
        False never (see the module docstring).

    Raises
    ------
    SparkBridgeError
        For a master or memory Spark cannot use, another master while one runs, or ``kafka=True``
        without the jars or with a session running without them.
    """
    chosen = _resolve_master(master)
    mem = (memory or driver_memory()).strip().lower()
    if not _MEMORY.match(mem):
        raise SparkBridgeError(f"driver memory {memory!r} is not a size; use a number with k, m, g or t, e.g. 512m")
    running = active()
    if running is not None:
        if master is not None and chosen != _STATE.master:
            raise SparkBridgeError(
                f"Spark already runs on {_STATE.master}; stop it first (%eos_spark stop) to use {chosen}"
            )
        if kafka:
            spark_kafka.require(running)
        return running
    if chosen.startswith("sc://"):
        session = _start_connect(chosen, app_name, config)
        _STATE.notes = []
    else:
        session = _start_classic(chosen, mem, app_name, _with_kafka_jars(config, kafka))
    _STATE.session = session
    _STATE.master = chosen
    _STATE.memory = mem
    return session


def _with_kafka_jars(config: Mapping[str, str] | None, kafka: bool | None) -> dict[str, str]:
    """Return ``config`` with the Kafka source's jars added to ``spark.jars`` as ``kafka`` asks."""
    out = dict(config or {})
    if kafka is False or (kafka is None and not spark_kafka.available()):
        return out
    paths = spark_kafka.jars()  # kafka=True without the jars: the error says how to fetch them
    if kafka and not _jvm_loads_kafka():
        _end_jvm()  # a JVM left up (keep_jvm) without them cannot gain them: launch a fresh one
    out["spark.jars"] = ",".join([j for j in out.get("spark.jars", "").split(",") if j] + list(paths))
    return out


def _jvm_loads_kafka() -> bool:
    """Return True when no JVM is up yet, or the one that is up can load the Kafka source."""
    from pyspark import SparkContext

    jvm = SparkContext._jvm
    return jvm is None or bool(jvm.org.apache.spark.util.Utils.classIsLoadable(spark_kafka.PROVIDER))


def _start_connect(url: str, app_name: str, config: Mapping[str, str] | None) -> SparkSession:
    from pyspark.sql import SparkSession

    t0 = time.perf_counter()
    try:
        builder = SparkSession.builder.remote(url).appName(app_name)
        for k, v in (config or {}).items():
            builder = builder.config(k, v)
        session = builder.getOrCreate()
    except ImportError as exc:
        raise SparkBridgeError(
            f"Spark Connect needs its client packages ({exc.name or exc}); pip install 'pyspark[connect]'"
        ) from None
    except Exception as exc:  # a refused connection must read as one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkBridgeError(f"cannot reach the Spark Connect server at {url}: {first[:200]}") from None
    _STATE.started_s = time.perf_counter() - t0
    return session


def _start_classic(master: str, mem: str, app_name: str, config: Mapping[str, str] | None) -> SparkSession:
    # The workers' Python: the one named in the config (a packed environment on a real cluster),
    # else this interpreter, so that workers import what the kernel imports. A classic driver
    # reads it from the environment only.
    os.environ["PYSPARK_PYTHON"] = (config or {}).get("spark.pyspark.python") or sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_CONF_DIR", str(_CONF_DIR))
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.memory": mem,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": f"-Dlog4j.configurationFile=file:{_CONF_DIR / 'log4j2.properties'}",
    }
    if master.startswith("local"):
        # Two tasks per job suit a notebook on local[2]; a real cluster keeps its own core count,
        # which a sweep reads as defaultParallelism to size its partitions.
        settings["spark.default.parallelism"] = "2"
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    settings.update(config or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    notes: list[str] = []
    if _STATE.first_memory is not None and _STATE.first_memory != mem:
        notes.append(
            f"driver memory stays {_STATE.first_memory}: the JVM started with it and Spark cannot change it; "
            "restart the kernel to use another size"
        )
    t0 = time.perf_counter()
    try:
        with _jvm_stdio_to(_log_path()):
            session = builder.getOrCreate()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkBridgeError(
            f"Spark did not start on {master}: {first[:200]} (Java 17 must be on PATH; see {_log_path()})"
        ) from None
    session.sparkContext.setLogLevel("ERROR")
    _STATE.started_s = time.perf_counter() - t0
    if _STATE.first_memory is None:
        _STATE.first_memory = mem
    _STATE.notes = notes
    return session


def status() -> SparkStatus | None:
    """Describe the running session, or return None when none runs."""
    s = active()
    if s is None:
        return None
    remote = _STATE.master.startswith("sc://")
    heap: int | None = None
    if not remote:
        heap = int(s.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()) // (1024 * 1024)
    return SparkStatus(
        master=_STATE.master,
        version=s.version,
        remote=remote,
        driver_memory=_STATE.first_memory or _STATE.memory,
        jvm_max_heap_mb=heap,
        started_s=_STATE.started_s,
        log_path="(remote)" if remote else _log_path(),
        notes=tuple(_STATE.notes),
        kafka_source=None if remote else spark_kafka.session_has_kafka(s),
    )


def stop(*, keep_jvm: bool = False) -> bool:
    """Stop the session and its JVM; return False when none was running.

    ``SparkSession.stop()`` alone leaves the JVM (about 1 GB) alive until the kernel dies, since
    PySpark keeps its gateway for the next session. A local JVM is ended here too: the gateway is
    shut and its process, which exits when its stdin closes, is waited for; the next ``start``
    launches a fresh one, so its driver memory can change. ``keep_jvm`` leaves it up for the next
    session of this process (the test suite's modules share one JVM so).
    """
    s = active()
    if s is None:
        return False
    s.stop()
    _STATE.session = None
    if not keep_jvm and not _STATE.master.startswith("sc://"):
        _end_jvm()
    return True


def _end_jvm() -> None:
    """Shut PySpark's gateway and wait for the JVM process to exit (a remote session has none here)."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if proc is not None:
        with contextlib.suppress(Exception):
            proc.stdin.close()  # PythonGatewayServer exits on EOF of its stdin
        try:
            proc.wait(timeout=20)
        except Exception:
            proc.kill()
    SparkContext._gateway = None
    SparkContext._jvm = None
    _STATE.first_memory = None
