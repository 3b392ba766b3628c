"""The reference cluster: real Apache Kafka 4.4.0 (KRaft) on 127.0.0.1, one JVM per node.

    with KafkaReference(brokers=3) as ref:
        producer = confluent_kafka.Producer(ref.client_config())
        ref.kill(2)        # SIGKILL: a crash, sockets closed by the kernel
        ref.restart(2)     # the same ports and log dir; returns once it is registered again

Role
----
Kafka itself is the conformance suite's oracle. :class:`KafkaReference` runs one controller
(``process.roles=controller``, node id :data:`CONTROLLER_ID`, a static single-voter quorum) and
N brokers (``process.roles=broker``, node ids 1..N like ``eos serve``), each its own
``java ... kafka.Kafka server.properties`` process, so a crash is a real SIGKILL and a pause a real
SIGSTOP. Clients reach the brokers as they reach ``eos serve``: a SASL_PLAINTEXT listener with
SASL/PLAIN user ``eos`` and a random password (:func:`engine.wire.client_config.confluent_config`);
brokers talk to each other and to the controller over PLAINTEXT listeners of their own. Every
node gets :data:`engine.conform.settings.BROKER_SETTINGS`.

The jars come from ``bash scripts/fetch-kafka.sh`` (Maven, ``reference/pom.xml``) into
``.cache/kafka-4.4.0/libs``. Storage is formatted with Kafka's own tool
(``kafka.tools.StorageTool format``, what ``bin/kafka-storage.sh`` runs), one JVM per node, in
parallel.

Invariants
----------
* Binds 127.0.0.1 only; ports are free ones picked at :meth:`KafkaReference.start` and kept for
  the cluster's life, so a restarted node is found where it was.
* No JVM outlives the cluster: :meth:`~KafkaReference.stop` (also on exceptions in the ``with``
  block, and at interpreter exit) sends SIGTERM, then SIGKILL to what is left; each JVM also gets
  SIGKILL from the kernel if the thread that started it dies (``PR_SET_PDEATHSIG``), so start a
  cluster from a thread that lives as long as it.
* :meth:`~KafkaReference.start` and :meth:`~KafkaReference.restart` return only once the brokers
  are registered and answer Metadata, within ``timeout_s``; otherwise they raise
  :class:`ReferenceClusterError` with the tail of the failing node's log.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path
from typing import Any

from engine.conform.settings import kafka_settings
from engine.wire.client_config import confluent_config, kafka_python_config
from engine.wire.handlers_session import SASL_USER

KIND = "kafka-4.4.0"
#: The controller's node id, apart from the brokers' 1..N.
CONTROLLER_ID = 100
#: Where ``scripts/fetch-kafka.sh`` puts the jars, from the repository root.
LIBS = Path(".cache") / "kafka-4.4.0" / "libs"
#: JVM flags that start a node faster on a small machine (measured; docs/conformance.md): one GC
#: thread, the client compiler only (C2's compile threads compete with Kafka's own for the cores),
#: no perf-data file.
FAST_JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
#: Settings Kafka 4.4 reads in the controller role only (a broker warns that it will ignore them in 5.0).
CONTROLLER_ONLY = frozenset({"num.partitions", "default.replication.factor"})
#: How many lines of a node's log an error shows.
LOG_TAIL_LINES = 25

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.state.name = state.change.logger
logger.state.level = warn
logger.request.name = kafka.request.logger
logger.request.level = warn
"""


class ReferenceClusterError(RuntimeError):
    """The reference cluster could not start, or a node did not come back."""


def find_libs(libs: str | Path | None = None) -> Path:
    """Return the folder of Kafka jars (default ``.cache/kafka-4.4.0/libs`` in the repository)."""
    path = Path(libs) if libs is not None else Path(__file__).resolve().parents[2] / LIBS
    if not (path / "kafka_2.13-4.4.0.jar").is_file():
        msg = f"Kafka 4.4.0 jars not found in {path}: run 'bash scripts/fetch-kafka.sh' (needs Java 17 and Maven)"
        raise ReferenceClusterError(msg)
    return path


def random_cluster_id() -> str:
    """Return a cluster id as ``kafka-storage.sh random-uuid`` does (``Uuid.randomUuid``).

    Kafka's ``Uuid.toString`` is the 16 bytes in URL-safe base64 without padding; ``randomUuid``
    draws again when the string would start with ``-`` (it would read as a command-line flag).
    """
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _free_ports(n: int) -> list[int]:
    """Return ``n`` distinct ports free on 127.0.0.1 now (the OS picks them)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _properties(values: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


class _Node:
    """One JVM: its node id, config file, log file and process."""

    def __init__(self, node_id: int, home: Path) -> None:
        self.node_id = node_id
        self.home = home
        self.config = home / "server.properties"
        self.log = home / "server.log"
        self.data = home / "data"
        self.proc: subprocess.Popen[bytes] | None = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


_LIVE: weakref.WeakSet[KafkaReference] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:  # pragma: no cover - interpreter exit
    for ref in list(_LIVE):
        ref.stop()


class KafkaReference:
    """A real Kafka 4.4.0 cluster: one controller and ``brokers`` brokers, each a JVM.

    Parameters
    ----------
    brokers
        How many brokers (node ids 1..brokers).
    workdir
        Where config files, logs and data go (default: a new temporary folder, removed by
        :meth:`stop`; a folder named here is kept).
    settings
        Broker settings over :data:`engine.conform.settings.BROKER_SETTINGS` (Kafka names).
    auth
        SASL/PLAIN with user ``eos`` and a random password on the client listener (default), or
        PLAINTEXT.
    heap_mb
        Each JVM's ``-Xmx``.
    libs
        The folder of jars (default ``.cache/kafka-4.4.0/libs``).
    java
        The ``java`` to run (default: the one on ``PATH``).
    jvm_flags
        Extra JVM flags (default :data:`FAST_JVM_FLAGS`).
    timeout_s
        How long :meth:`start` and :meth:`restart` wait for the brokers.
    cds
        Share one class-data archive (AppCDS, JDK 13+) of Kafka's classes between the JVMs: the
        first cluster's broker 1 writes it at its clean exit next to the jars, later JVMs map it
        instead of loading and verifying the classes again (a third faster to start, and less
        memory per JVM). A stale archive (another JDK or jars) is ignored by the JVM.
    """

    def __init__(
        self,
        brokers: int = 3,
        workdir: str | Path | None = None,
        settings: dict[str, Any] | None = None,
        auth: bool = True,
        heap_mb: int = 512,
        libs: str | Path | None = None,
        *,
        java: str = "java",
        jvm_flags: tuple[str, ...] = FAST_JVM_FLAGS,
        timeout_s: float = 90.0,
        cds: bool = True,
    ) -> None:
        if not isinstance(brokers, int) or brokers < 1:
            msg = f"brokers must be a positive int, got {brokers!r}"
            raise ValueError(msg)
        self.libs = find_libs(libs)
        if shutil.which(java) is None:
            msg = f"'{java}' not found: the Kafka reference cluster needs Java 17 (e.g. openjdk-17-jre-headless)"
            raise ReferenceClusterError(msg)
        self.brokers = brokers
        self.settings = kafka_settings(settings)
        self.password = secrets.token_urlsafe(18) if auth else None
        self.heap_mb = heap_mb
        self.java = java
        self.jvm_flags = tuple(jvm_flags)
        self.timeout_s = timeout_s
        self.archive = self._archive_path() if cds else None
        self._dumping: Path | None = None
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else None
        self.cluster_id = random_cluster_id()
        self.nodes: dict[int, _Node] = {}
        self.ports: dict[int, int] = {}
        self.internal_ports: dict[int, int] = {}
        self.controller_port = 0
        #: Seconds the last start() took in all, and formatting alone.
        self.start_s: float | None = None
        self.format_s: float | None = None

    # -- life cycle -------------------------------------------------------------------------------

    def start(self) -> KafkaReference:
        """Format storage, start the controller and the brokers; return once all brokers answer."""
        t0 = time.monotonic()
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="eos-kafka-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        ports = _free_ports(2 * self.brokers + 1)
        self.controller_port = ports[0]
        ids = list(range(1, self.brokers + 1))
        self.ports = dict(zip(ids, ports[1 : self.brokers + 1], strict=True))
        self.internal_ports = dict(zip(ids, ports[self.brokers + 1 :], strict=True))
        (self.workdir / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")
        for node_id in [CONTROLLER_ID, *ids]:
            node = _Node(node_id, self.workdir / f"node-{node_id}")
            node.home.mkdir(parents=True, exist_ok=True)
            node.config.write_text(_properties(self._node_config(node)), encoding="utf-8")
            os.chmod(node.config, 0o600)  # it holds the password
            self.nodes[node_id] = node
        _LIVE.add(self)
        try:
            self._format()
            self.format_s = time.monotonic() - t0
            for node in self.nodes.values():
                self._launch(node)
            self._wait_for(set(ids), t0 + self.timeout_s)
        except BaseException:
            self.stop()
            raise
        self.start_s = time.monotonic() - t0
        return self

    def _node_config(self, node: _Node) -> dict[str, str]:
        quorum = f"{CONTROLLER_ID}@127.0.0.1:{self.controller_port}"
        common = {
            "node.id": str(node.node_id),
            "log.dirs": str(node.data),
            "controller.quorum.voters": quorum,
            "controller.listener.names": "CONTROLLER",
        }
        if node.node_id == CONTROLLER_ID:
            return {
                **common,
                "process.roles": "controller",
                "listeners": f"CONTROLLER://127.0.0.1:{self.controller_port}",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
                **self.settings,
            }
        port, internal = self.ports[node.node_id], self.internal_ports[node.node_id]
        client_protocol = "SASL_PLAINTEXT" if self.password is not None else "PLAINTEXT"
        config = {
            **common,
            "process.roles": "broker",
            "listeners": f"CLIENT://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal}",
            "advertised.listeners": f"CLIENT://127.0.0.1:{port},INTERNAL://127.0.0.1:{internal}",
            "listener.security.protocol.map": f"CLIENT:{client_protocol},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        }
        if self.password is not None:
            config["listener.name.client.sasl.enabled.mechanisms"] = "PLAIN"
            config["listener.name.client.plain.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="{SASL_USER}" password="{self.password}" user_{SASL_USER}="{self.password}";'
            )
        return {**config, **{k: v for k, v in self.settings.items() if k not in CONTROLLER_ONLY}}

    def _archive_path(self) -> Path:
        """Return where the class-data archive for this JDK, these jars and these flags lives."""
        java = Path(shutil.which(self.java) or self.java).resolve()
        key = "\n".join([str(java), *self.jvm_flags, *sorted(p.name for p in self.libs.glob("*.jar"))])
        return self.libs.parent / f"kafka-{hashlib.sha256(key.encode()).hexdigest()[:12]}.jsa"

    def _cds_flags(self, node: _Node | None) -> list[str]:
        """Use the archive when there is one; else let broker 1 write it when it exits cleanly."""
        if self.archive is None:
            return []
        if self.archive.is_file():
            return [f"-XX:SharedArchiveFile={self.archive}"]
        if node is not None and node.node_id == 1 and self._dumping is None and os.access(self.archive.parent, os.W_OK):
            self._dumping = self.archive.with_name(f"{self.archive.name}.{os.getpid()}.tmp")
            return [f"-XX:ArchiveClassesAtExit={self._dumping}"]
        return []

    def _keep_archive(self) -> None:
        """Move the archive broker 1 wrote into place (atomically; a concurrent writer's is as good)."""
        tmp, self._dumping = self._dumping, None
        if tmp is not None and self.archive is not None:
            with contextlib.suppress(OSError):
                if tmp.stat().st_size > 0:
                    tmp.replace(self.archive)
            with contextlib.suppress(OSError):
                tmp.unlink()

    def _java(self, main: str, *args: str, node: _Node | None = None) -> list[str]:
        assert self.workdir is not None
        return [
            self.java,
            f"-Xmx{self.heap_mb}m",
            *self.jvm_flags,
            *self._cds_flags(node),
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp",
            str(self.libs / "*"),
            main,
            *args,
        ]

    def _format(self) -> None:
        """Run Kafka's StorageTool for every node, in parallel (``kafka-storage.sh format``)."""
        procs = {}
        for node in self.nodes.values():
            cmd = self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(node.config))
            with node.log.open("ab") as log:
                procs[node.node_id] = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent
                )
        failed = []
        for node_id, proc in procs.items():
            try:
                rc = proc.wait(self.timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
            if rc != 0:
                failed.append(node_id)
        if failed:
            node = self.nodes[failed[0]]
            msg = f"formatting node {node.node_id}'s storage failed; the end of {node.log}:\n{node.tail()}"
            raise ReferenceClusterError(msg)

    def _launch(self, node: _Node) -> None:
        with node.log.open("ab") as log:
            node.proc = subprocess.Popen(
                self._java("kafka.Kafka", str(node.config), node=node),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop the nodes in order
                preexec_fn=_die_with_parent,
            )

    def _wait_for(self, broker_ids: set[int], deadline: float) -> None:
        """Return once every broker in ``broker_ids`` is in a Metadata answer; raise at ``deadline``."""
        from confluent_kafka.admin import AdminClient

        admin = None
        seen: set[int] = set()
        while True:
            for node in self.nodes.values():
                if node.proc is not None and node.proc.poll() is not None:
                    msg = (
                        f"Kafka node {node.node_id} exited with status {node.proc.returncode} while starting; "
                        f"the end of {node.log}:\n{node.tail()}"
                    )
                    raise ReferenceClusterError(msg)
            if admin is None and self._accepting(min(broker_ids)):
                admin = AdminClient({**self.client_config(), "log_level": 0})
            if admin is not None:
                with contextlib.suppress(Exception):  # not up yet: KafkaException, timeouts
                    seen = set(admin.list_topics(timeout=1).brokers)
                if broker_ids <= seen:
                    return
            if time.monotonic() > deadline:
                missing = sorted(broker_ids - seen)
                node = self.nodes[missing[0]]
                msg = (
                    f"Kafka brokers {missing} not registered after {self.timeout_s:.0f} s; "
                    f"the end of {node.log}:\n{node.tail()}"
                )
                raise ReferenceClusterError(msg)
            time.sleep(0.1)

    def _accepting(self, broker_id: int) -> bool:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.ports[broker_id]), 0.2):
            return True
        return False

    def stop(self) -> None:
        """Stop every node: SIGTERM (brokers first, then the controller), SIGKILL what is left."""
        brokers = [n for i, n in self.nodes.items() if i != CONTROLLER_ID]
        controller = [n for i, n in self.nodes.items() if i == CONTROLLER_ID]
        # broker 1 writing the class-data archive at exit takes a few seconds more
        for group, grace in ((brokers, 30.0 if self._dumping else 15.0), (controller, 5.0)):
            live = [n for n in group if n.alive()]
            for node in live:
                assert node.proc is not None
                with contextlib.suppress(ProcessLookupError):
                    node.proc.send_signal(signal.SIGCONT)  # a paused JVM cannot act on SIGTERM
                    node.proc.terminate()
            deadline = time.monotonic() + grace
            for node in live:
                assert node.proc is not None
                try:
                    node.proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    node.proc.kill()
                    node.proc.wait()
        _LIVE.discard(self)
        self._keep_archive()
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> KafkaReference:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- faults -----------------------------------------------------------------------------------

    def _node(self, node_id: int) -> _Node:
        node = self.nodes.get(node_id)
        if node is None:
            msg = f"no node {node_id!r}: brokers are 1..{self.brokers}, the controller is {CONTROLLER_ID}"
            raise ValueError(msg)
        return node

    def _signal(self, node_id: int, sig: signal.Signals) -> None:
        node = self._node(node_id)
        if not node.alive():
            msg = f"node {node_id} is not running (killed or stopped); restart({node_id}) starts it again"
            raise ReferenceClusterError(msg)
        assert node.proc is not None
        node.proc.send_signal(sig)

    def kill(self, node_id: int) -> None:
        """Crash node ``node_id`` (SIGKILL): the kernel closes its sockets, nothing is flushed."""
        self._signal(node_id, signal.SIGKILL)
        node = self.nodes[node_id]
        assert node.proc is not None
        node.proc.wait()

    def pause(self, node_id: int) -> None:
        """Freeze node ``node_id`` (SIGSTOP): its sockets stay open and silent; returns once it is stopped."""
        self._signal(node_id, signal.SIGSTOP)
        self._wait_state(node_id, stopped=True)

    def resume(self, node_id: int) -> None:
        """Let a paused node run again (SIGCONT); returns once it runs."""
        self._signal(node_id, signal.SIGCONT)
        self._wait_state(node_id, stopped=False)

    def _wait_state(self, node_id: int, *, stopped: bool, timeout_s: float = 5.0) -> None:
        """Wait until the kernel shows the process stopped (state ``T``) or not (signals are asynchronous)."""
        pid = self.pid(node_id)
        deadline = time.monotonic() + timeout_s
        while pid is not None and time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                return  # no /proc (not Linux) or the process is gone
            if (state == "T") == stopped:
                return
            time.sleep(0.01)

    def restart(self, node_id: int) -> None:
        """Start node ``node_id`` again (killing it first if it runs) on the same ports and log dir.

        Returns once a broker is registered and in Metadata again (the controller: once every
        running broker answers).
        """
        node = self._node(node_id)
        if node.alive():
            assert node.proc is not None
            node.proc.kill()
            node.proc.wait()
        self._launch(node)
        live = {i for i, n in self.nodes.items() if i != CONTROLLER_ID and n.alive()}
        self._wait_for(live, time.monotonic() + self.timeout_s)

    def pid(self, node_id: int) -> int | None:
        """Return node ``node_id``'s process id (None when it is not running)."""
        node = self._node(node_id)
        return node.proc.pid if node.alive() and node.proc is not None else None

    # -- what a client needs ----------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """Return ``127.0.0.1:port,...`` of every broker's client listener."""
        return ",".join(f"127.0.0.1:{p}" for _b, p in sorted(self.ports.items()))

    def client_config(self) -> dict[str, str]:
        """Return the confluent-kafka config (security settings included), as ``eos serve`` gives."""
        return confluent_config(self.bootstrap, self.password)

    def kafka_python_config(self) -> dict[str, Any]:
        """Return the same as keyword arguments for kafka-python and aiokafka."""
        return kafka_python_config(self.bootstrap, self.password)

    def ready_info(self) -> dict[str, Any]:
        """Return what a ready file holds: ``eos serve``'s shape plus the kind and every node's pid."""
        return {
            "kind": KIND,
            "bootstrap.servers": self.bootstrap,
            "client_config": self.client_config(),
            "kafka_python": self.kafka_python_config(),
            "brokers": {str(b): p for b, p in sorted(self.ports.items())},
            "seed": None,
            "pid": os.getpid(),
            "journal": None,
            "pids": {str(i): self.pid(i) for i in sorted(self.nodes)},
            "controller": {"id": CONTROLLER_ID, "port": self.controller_port},
            "cluster_id": self.cluster_id,
            "workdir": str(self.workdir) if self.workdir is not None else None,
        }

    def write_ready_file(self, path: str | Path) -> None:
        """Write :meth:`ready_info` as JSON, atomically, readable by its owner only (the password)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(self.ready_info(), f, indent=2)
        tmp.replace(path)


def stop_signal() -> Any:
    """Return an event that SIGTERM sets, for a command that serves a cluster until it is told to stop."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda _sig, _frame: stop.set())
    return stop
