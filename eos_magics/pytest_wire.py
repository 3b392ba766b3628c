"""What ``eos_server`` offers a test on every cluster it can be: the interface, the final read, the promises.

``eos_server`` yields an :class:`eos_magics.pytest_served.EosTestServer` (the served cluster, the
default) or, under ``pytest --eos-server=kafka``, an :class:`eos_magics.pytest_kafka.EosTestKafka`
(a real Kafka 4.4 cluster). A test written against one runs unchanged against the other, so both
derive from :class:`WireTestCluster`, which says what they share; ``docs/testing.md`` is the
user's guide.

Role
----
* :class:`WireTestCluster`: the client configs (built from :attr:`~WireTestCluster.bootstrap`
  and :attr:`~WireTestCluster.password` here, once for both kinds), the fault and query methods
  each kind carries out in its own way, the failure report's section, and ``kind``
  (``"served"`` or ``"kafka"``) for a test that must tell them apart.
* :func:`final_read`: every committed record of some topics, read over the wire by a real
  confluent-kafka consumer (``isolation.level=read_committed``, every partition assigned from the
  beginning, ``enable.partition.eof``), up to each partition's high watermark.
* :func:`judge_promises`: ``@pytest.mark.eos_check(promise=...)`` on an ``eos_server`` test: heal,
  :func:`final_read` the promises' topics, :func:`engine.check.promises.check_promises`, and fail
  the test with the same report as ``eos_cluster``'s ``eos_check``.

Invariants
----------
* A partition is read to its end only when the read reaches the high watermark it had when the
  read began: with ``read_committed`` a consumer stops at the last stable offset
  (``Partition.lastStableOffset`` in Kafka's ``UnifiedLog``), so an open transaction holds the
  read back, and the read fails with one line naming those partitions instead of judging a
  partial log.
* Loading this module imports pytest, the standard library and the plugin module only.

What it does not do
-------------------
It records no client: on ``eos_server`` only promises are judged (the history modes of
``eos_check`` need the simulated ``eos_cluster``, whose clients are recorded).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from engine.check.promises import CommittedRecord, Promise

__all__ = ["FinalReadError", "WireTestCluster", "final_read", "judge_promises"]

#: How long :func:`final_read` may take before it gives up on the partitions not at their end.
FINAL_READ_TIMEOUT_S = 30.0


class FinalReadError(RuntimeError):
    """The final read could not reach the end of some partitions (or a topic is missing)."""


class WireTestCluster:
    """What every ``eos_server`` cluster offers a test: configs, faults, queries, the report section.

    Subclasses set :attr:`kind` and implement :attr:`bootstrap`, :attr:`password`, :meth:`fault`
    (every named fault and query is one call of it), :meth:`replay_section` and :meth:`stop`. A
    fault a kind cannot carry out fails the test with one line (:meth:`unavailable`).
    """

    #: ``"served"`` (``eos serve`` in the test's process) or ``"kafka"`` (Apache Kafka 4.4).
    kind = ""
    #: Whether a phase of the test failed.
    failed = False

    @property
    def bootstrap(self) -> str:
        """``127.0.0.1:port,...`` of every broker."""
        raise NotImplementedError

    @property
    def password(self) -> str | None:
        """The SASL/PLAIN password of user ``eos`` (random per cluster)."""
        raise NotImplementedError

    # -- client configs ---------------------------------------------------------------------------

    def config(self, **extra: Any) -> dict[str, Any]:
        """Return the confluent-kafka config (bootstrap servers, SASL/PLAIN), with ``extra`` on top.

        Keys with dots are not keyword arguments: ``{**eos_server.config(), "group.id": "g"}``.
        """
        from engine.wire.client_config import confluent_config

        return {**confluent_config(self.bootstrap, self.password), **extra}

    def confluent_config(self, **extra: Any) -> dict[str, Any]:
        """The same as :meth:`config`."""
        return self.config(**extra)

    def kafka_python_config(self, **extra: Any) -> dict[str, Any]:
        """Return kafka-python's keyword arguments (``KafkaProducer(**eos_server.kafka_python_config())``)."""
        from engine.wire.client_config import kafka_python_config

        return {**kafka_python_config(self.bootstrap, self.password), **extra}

    def aiokafka_config(self, **extra: Any) -> dict[str, Any]:
        """Return aiokafka's keyword arguments (the same names as kafka-python's)."""
        return self.kafka_python_config(**extra)

    # -- faults and queries: eos fault's vocabulary, one request each --------------------------------

    def fault(self, op: str, **args: Any) -> dict[str, Any]:
        """Make one request of ``eos fault``'s vocabulary (``crash``, ``wire-fault``, ``leader`` ...); answer it.

        Each kind carries it out its own way (the served cluster through its control channel,
        Kafka 4.4 with signals and Kafka's own metadata); every named fault below is one call of it.
        """
        raise NotImplementedError

    def crash(self, broker: int) -> None:
        """Crash a broker (a process crash: its connections close)."""
        self.fault("crash", broker=broker)

    def restart(self, broker: int) -> None:
        """Restart a crashed broker."""
        self.fault("restart", broker=broker)

    def pause(self, broker: int) -> None:
        """Pause a broker (a zombie until :meth:`resume`)."""
        self.fault("pause", broker=broker)

    def resume(self, broker: int) -> None:
        """Resume a paused broker."""
        self.fault("resume", broker=broker)

    def isolate(self, broker: int) -> None:
        """Cut a broker off from every other node."""
        self.fault("isolate", broker=broker)

    def heal(self) -> None:
        """End every fault: restart, resume (and reconnect) every broker."""
        self.fault("heal")

    def leader(self, topic: str, partition: int = 0) -> int:
        """Return the partition's leader now (-1: none)."""
        return int(self.fault("leader", topic=topic, partition=partition)["broker"])

    def coordinator(self, kind: str, key: str) -> int:
        """Return the coordinator of a group (``kind="group"``) or transactional id (``"transaction"``)."""
        return int(self.fault("coordinator", kind=kind, key=key)["broker"])

    def brokers(self) -> dict[str, list[int]]:
        """Return the brokers by state (``up``, ``down``, ``paused``) and the isolated ones."""
        return self.fault("brokers")

    def wire_fault(self, action: str, api: str, nth: int = 1) -> int:
        """Arm a wire fault on the ``nth`` next request of ``api`` (``Produce``, ``EndTxn``, ...); return its id."""
        return int(self.fault("wire-fault", action=action, api=api, nth=nth)["fault"])

    def drop_response(self, api: str, nth: int = 1) -> int:
        """Carry out the ``nth`` next ``api`` request and never answer it (a lost acknowledgement)."""
        return self.wire_fault("drop-response", api, nth)

    def close_after(self, api: str, nth: int = 1) -> int:
        """Carry out the ``nth`` next ``api`` request, then close its connection instead of answering."""
        return self.wire_fault("close-after", api, nth)

    def close_before(self, api: str, nth: int = 1) -> int:
        """Close the connection of the ``nth`` next ``api`` request before it is carried out."""
        return self.wire_fault("close-before", api, nth)

    def unavailable(self, what: str, why: str) -> None:
        """Fail the test with one line: ``what`` cannot be done to this kind of cluster, and why."""
        pytest.fail(
            f"eos_server.{what} cannot be done to {self.name}: {why}; run the test on the served cluster only "
            f'(@pytest.mark.eos_served_only("...") skips it under --eos-server=kafka) or check '
            f'eos_server.kind == "{self.kind}"',
            pytrace=False,
        )

    @property
    def name(self) -> str:
        """The cluster in words, for messages."""
        return {"served": "the served cluster", "kafka": "a real Kafka 4.4 cluster"}.get(self.kind, self.kind)

    # -- the report -------------------------------------------------------------------------------

    def replay_section(self) -> str:
        """Return the failure report's ``eos`` section."""
        raise NotImplementedError

    def stop(self) -> None:
        """Release what the test held."""
        raise NotImplementedError


def final_read(
    config: dict[str, Any], topics: Iterable[str], timeout_s: float = FINAL_READ_TIMEOUT_S
) -> list[CommittedRecord]:
    """Read every committed record of ``topics`` over the wire, to each partition's end.

    Parameters
    ----------
    config : dict
        The confluent-kafka config of the cluster (:meth:`WireTestCluster.config`).
    topics : iterable of str
        The topics to read, every partition of each.
    timeout_s : float
        How long the read may take.

    Returns
    -------
    list of CommittedRecord
        In (topic, partition, offset) order, keys and values as bytes.

    Raises
    ------
    FinalReadError
        A topic does not exist, or some partitions did not reach the high watermark they had when
        the read began within ``timeout_s`` (an open transaction holds back the last stable offset).
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    from engine.check.promises import CommittedRecord

    names = sorted(set(topics))
    # never joined nor committed: the partitions are assigned
    common = {**config, "group.id": "eos-check-final-read", "enable.auto.commit": False, "log_level": 0}
    # the high watermarks: ListOffsets(LATEST) at read_uncommitted (at read_committed it answers the LSO)
    ends: dict[tuple[str, int], int] = {}
    asker = Consumer({**common, "isolation.level": "read_uncommitted"})
    try:
        meta = asker.list_topics(timeout=timeout_s).topics  # all topics: never creates one
        missing = [t for t in names if t not in meta or meta[t].error is not None]
        if missing:
            raise FinalReadError(f"no topic {missing[0]!r} on the cluster to read")
        for t in names:
            for p in sorted(meta[t].partitions):
                ends[(t, p)] = asker.get_watermark_offsets(TopicPartition(t, p), timeout=timeout_s)[1]
    finally:
        asker.close()
    consumer = Consumer({**common, "isolation.level": "read_committed", "enable.partition.eof": True})
    records: list[CommittedRecord] = []
    pending: set[tuple[str, int]] = set()
    try:
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in ends])
        pending.update(tp for tp, end in ends.items() if end > 0)
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None:
                continue
            err = m.error()
            if err is None:
                records.append(CommittedRecord(m.topic(), m.partition(), m.offset(), m.key(), m.value()))
                if m.offset() + 1 >= ends[(m.topic(), m.partition())]:
                    pending.discard((m.topic(), m.partition()))
            elif err.code() == KafkaError._PARTITION_EOF:
                if m.offset() >= ends[(m.topic(), m.partition())]:  # the end read_committed reached: the LSO
                    pending.discard((m.topic(), m.partition()))
            elif err.fatal():
                raise FinalReadError(f"the final read failed: {err.str()}")
    finally:
        consumer.close()
    if pending:
        where = ", ".join(f"{t}-{p} (end {ends[(t, p)]})" for t, p in sorted(pending))
        raise FinalReadError(
            f"the final read_committed read did not reach the end of {where} in {timeout_s:g} s: "
            "an open transaction holds the last stable offset back"
        )
    return sorted(records)


def judge_promises(eos: WireTestCluster, check: tuple[Any, Any, Any, Sequence[Promise]]) -> None:
    """Judge ``eos_check``'s promises on an ``eos_server`` cluster after its test; fail the test if broken.

    Parameters
    ----------
    eos : WireTestCluster
        The test's cluster.
    check : tuple
        The ``eos_check`` marker read by :func:`eos_magics.pytest_plugin.check_args`:
        ``(mode, settle_ms, topics, promises)``.
    """
    from engine.check.anomaly import Report
    from engine.check.promises import check_promises
    from eos_magics.pytest_plugin import eos_check_failure

    mode, _settle_ms, topics, promises = check
    eos.heal()
    names = sorted({t for p in promises for t in (p.source, p.target)})
    try:
        records = final_read(eos.config(), names)
    except FinalReadError as exc:
        pytest.fail(f"eos_check(promise={[str(p) for p in promises]!r}): {exc}", pytrace=False)
    found = check_promises(records, promises)
    report = Report.classify(found, frozenset(), {"records": len(records)})
    if not report.ok:
        pytest.fail(eos_check_failure(mode, topics, promises, report), pytrace=False)
