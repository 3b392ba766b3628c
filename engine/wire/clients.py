"""The outside clients of a served cluster, as the wire shows them: producers and consumers.

Role
----
A real client (confluent-kafka, the Java client ...) is no engine ``Producer`` or ``Consumer``:
the cluster knows it only through its connections (:class:`~engine.wire.gateway.WireConnection`).
:class:`OutsideClients` follows every answered request of every connection and keeps, per
outside client, what the cluster can know of it, in the rows the dashboard draws
(:class:`~engine.views.board.ProducerRow`, :class:`~engine.views.board.ConsumerRow`). The
service hands it to its cluster (``cluster.outside_clients``), and :mod:`engine.views.board`
lists these rows after the engine's own clients: one list of "which clients exist".

What is known of whom
---------------------
* A producer is a transactional id (InitProducerId, AddPartitionsToTxn, EndTxn, a
  transactional Produce), or else a client id that produced. Its producer id and epoch come
  from InitProducerId's answer (and from its Produce batches' headers, which carry them); its
  state from the transaction requests (``READY``, ``IN_TRANSACTION``, ``COMMITTING_TRANSACTION``,
  ``ABORTING_TRANSACTION``, as Kafka's ``TransactionManager.State`` names them); per partition
  the next sequence it sent (``baseSequence + lastOffsetDelta + 1`` of its last batch) and the
  last one the broker acknowledged.
* A consumer is a client id that fetched. Its ``isolation.level`` is its Fetch's, and its group
  the group id its JoinGroup, SyncGroup, Heartbeat, OffsetCommit, OffsetFetch or
  ConsumerGroupHeartbeat named (from any connection of the same client id). Its position per
  partition is where its last Fetch asked to read from, moved past the last batch that Fetch's
  answer handed it.

Transactions in the trace
-------------------------
An engine producer emits ``txn.init``, ``txn.begin``, ``txn.commit`` and ``txn.abort`` state
events, from which the sequence chart (:mod:`engine.views.sequence_chart`) and the dashboard find
a transactional id's transactions. For an outside producer the connection that talks to its
transaction coordinator emits them: ``txn.init`` when InitProducerId is answered, ``txn.begin``
when the first AddPartitionsToTxn or AddOffsetsToTxn of a transaction is answered (transaction
version 2 sends none: then just before its end), ``txn.commit``/``txn.abort`` when EndTxn is
answered. So the chart shows the client's requests to its coordinator, the coordinator's markers
and their answers (its Produce requests go over other connections, other lanes).

Invariants
----------
* It reads requests and the answers the handlers built; it changes nothing of the cluster and
  emits only the ``txn.*`` state events above.
* Deterministic: clients in the order they first showed up, partitions sorted.
"""

from __future__ import annotations

import struct
from typing import Any

from engine import trace_events as events
from engine.config import IsolationLevel
from engine.views.board import ConsumerRow, ProducerPartition, ProducerRow

# Kafka's API keys (``ApiKeys``) of the requests that say who a client is.
_PRODUCE, _FETCH, _OFFSET_COMMIT, _OFFSET_FETCH = 0, 1, 8, 9
_JOIN_GROUP, _HEARTBEAT, _SYNC_GROUP = 11, 12, 14
_INIT_PRODUCER_ID, _ADD_PARTITIONS, _ADD_OFFSETS, _END_TXN, _TXN_OFFSET_COMMIT = 22, 24, 25, 26, 28
_CONSUMER_GROUP_HEARTBEAT = 68
_GROUP_APIS = frozenset(
    {_OFFSET_COMMIT, _OFFSET_FETCH, _JOIN_GROUP, _HEARTBEAT, _SYNC_GROUP, _CONSUMER_GROUP_HEARTBEAT}
)

#: A v2 record batch header up to its sequence: baseOffset, length, leader epoch, magic, crc,
#: attributes, lastOffsetDelta, two timestamps, producerId, producerEpoch, baseSequence.
_HEADER = struct.Struct(">qiibIhiqqqhi")

#: The status an outside client's row carries: the dashboard cannot crash or pause it.
OUTSIDE = "outside"


class _Producer:
    def __init__(self, name: str, transactional_id: str) -> None:
        self.name = name
        self.transactional_id = transactional_id
        self.producer_id = -1
        self.epoch = -1
        self.state = "INITIALIZING" if transactional_id else "IDEMPOTENT"
        self.error: str | None = None
        #: True between a transaction's txn.begin event and its end
        self.began = False
        #: (topic, partition) -> [next sequence sent, last sequence acknowledged]
        self.partitions: dict[tuple[str, int], list[int]] = {}

    def row(self) -> ProducerRow:
        parts = tuple(
            ProducerPartition(t, p, seqs[0], seqs[1], (), 0) for (t, p), seqs in sorted(self.partitions.items())
        )
        return ProducerRow(
            self.name, OUTSIDE, self.transactional_id, self.producer_id, self.epoch, self.state, self.error, parts
        )


class _Consumer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.isolation = IsolationLevel.READ_UNCOMMITTED
        self.group_id = ""
        self.positions: dict[tuple[str, int], int] = {}

    def row(self) -> ConsumerRow:
        positions = tuple((t, p, o) for (t, p), o in sorted(self.positions.items()))
        return ConsumerRow(self.name, OUTSIDE, self.isolation, self.group_id, positions)


def _end_of_batches(data: bytes) -> int | None:
    """The offset after the last whole batch of ``data`` (a Fetch answer's records), or None if none."""
    end, pos = None, 0
    while pos + _HEADER.size <= len(data):
        fields = _HEADER.unpack_from(data, pos)
        base, length, last_delta = fields[0], fields[1], fields[6]
        if pos + 12 + length > len(data):
            break
        end, pos = base + last_delta + 1, pos + 12 + length
    return end


def _transactional_id(api_key: int, body: Any) -> str | None:
    """The transactional id a request names (AddPartitionsToTxn v3 and below: ``v3_and_below_...``)."""
    if api_key == _ADD_PARTITIONS:
        return getattr(body, "v3_and_below_transactional_id", None)
    return getattr(body, "transactional_id", None)


class OutsideClients:
    """Every outside client of one served cluster, kept from its connections' requests."""

    def __init__(self) -> None:
        self._producers: dict[str, _Producer] = {}
        self._consumers: dict[str, _Consumer] = {}
        self._groups: dict[str, str] = {}  # client id -> group id
        self._conn: Any = None  # the connection whose answer is being read
        #: Bumped on every change: the recorder reads the rows again only when it moved.
        self.version = 0

    def producer_rows(self) -> tuple[ProducerRow, ...]:
        """Return one row per outside producer, in the order they showed up."""
        return tuple(p.row() for p in self._producers.values())

    def consumer_rows(self) -> tuple[ConsumerRow, ...]:
        """Return one row per outside consumer, in the order they showed up."""
        return tuple(c.row() for c in self._consumers.values())

    # -- following the wire ------------------------------------------------------------------

    def observe(self, conn: Any, api_key: int, body: Any, answer: dict[str, Any] | None) -> None:
        """Take in one answered request of connection ``conn`` (a :class:`~engine.wire.gateway.WireConnection`)."""
        self._conn = conn
        cid = conn.client_id or "(no client.id)"
        try:
            changed = self._observe(cid, api_key, body, answer or {})
        except (AttributeError, TypeError, KeyError, struct.error):  # a shape we do not read: skip it
            changed = False
        if changed:
            self.version += 1

    def _observe(self, cid: str, api_key: int, body: Any, answer: dict[str, Any]) -> bool:
        ok = answer.get("error_code", 0) == 0
        if api_key == _INIT_PRODUCER_ID:
            p = self._producer(cid, body.transactional_id or "")
            if ok:
                p.producer_id, p.epoch = answer["producer_id"], answer["producer_epoch"]
                p.state = "READY" if p.transactional_id else "IDEMPOTENT"
                p.error = None
                p.began = False
                if p.transactional_id:
                    self._trace().emit(self._conn.name, "state", events.TXN_INIT, *_fields(p, ("pid", p.producer_id)))
            return True
        tid = _transactional_id(api_key, body)
        if api_key in (_ADD_PARTITIONS, _ADD_OFFSETS, _TXN_OFFSET_COMMIT) and tid:
            p = self._producer(cid, tid)
            p.state = "IN_TRANSACTION"
            if not p.began and answer.get("error_code", 0) == 0:
                p.began = True
                self._trace().emit(self._conn.name, "state", events.TXN_BEGIN, *_fields(p))
            return True
        if api_key == _END_TXN:
            p = self._producer(cid, body.transactional_id)
            if ok:
                p.state = "READY"
                if not p.began:  # transaction version 2: no AddPartitionsToTxn came first
                    self._trace().emit(self._conn.name, "state", events.TXN_BEGIN, *_fields(p))
                p.began = False
                if body.committed:
                    self._trace().emit(self._conn.name, "state", events.TXN_COMMIT, *_fields(p))
                else:
                    self._trace().emit(self._conn.name, "state", events.TXN_ABORT, *_fields(p))
            else:
                p.state = "COMMITTING_TRANSACTION" if body.committed else "ABORTING_TRANSACTION"
            return True
        if api_key == _PRODUCE:
            return self._produce(cid, body, answer)
        if api_key == _FETCH:
            c = self._consumer(cid)
            committed = body.isolation_level == 1
            c.isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
            for t in body.topics:
                for part in t.partitions:
                    if t.topic and part.fetch_offset >= 0:
                        c.positions[(t.topic, part.partition)] = part.fetch_offset
            for t in answer.get("responses", ()):
                for part in t["partitions"]:
                    end = _end_of_batches(part.get("records") or b"")
                    key = (t["topic"], part["partition_index"])
                    if end is not None and key in c.positions:
                        c.positions[key] = max(c.positions[key], end)
            return True
        if api_key in _GROUP_APIS and getattr(body, "group_id", None):
            self._groups[cid] = body.group_id
            c = self._consumers.get(cid)
            if c is not None and c.group_id != body.group_id:
                c.group_id = body.group_id
                return True
        return False

    def _trace(self) -> Any:
        return self._conn.world.trace

    def _produce(self, cid: str, body: Any, answer: dict[str, Any]) -> bool:
        codes = {
            (t["name"], r["index"]): r["error_code"]
            for t in answer.get("responses", ())
            for r in t.get("partition_responses", ())
        }
        p: _Producer | None = None
        for topic in body.topic_data:
            for part in topic.partition_data:
                data = bytes(part.records or b"")
                if len(data) < _HEADER.size:
                    continue
                fields = _HEADER.unpack_from(data)
                last_delta, pid, epoch, base_seq = fields[6], fields[9], fields[10], fields[11]
                if pid < 0:
                    continue  # a plain producer: no id, no sequences
                if p is None:
                    p = self._producer(cid, body.transactional_id or "")
                    if p.producer_id < 0:
                        p.producer_id, p.epoch = pid, epoch
                seqs = p.partitions.setdefault((topic.name, part.index), [0, -1])
                last = base_seq + last_delta
                seqs[0] = max(seqs[0], last + 1)
                if codes.get((topic.name, part.index), -1) == 0:
                    seqs[1] = max(seqs[1], last)
        return p is not None

    def _producer(self, cid: str, transactional_id: str) -> _Producer:
        key = transactional_id or cid
        p = self._producers.get(key)
        if p is None:
            p = self._producers[key] = _Producer(f"{key} (outside)", transactional_id)
        return p

    def _consumer(self, cid: str) -> _Consumer:
        c = self._consumers.get(cid)
        if c is None:
            c = self._consumers[cid] = _Consumer(f"{cid} (outside consumer)")
            c.group_id = self._groups.get(cid, "")
        return c


def _fields(p: _Producer, *extra: tuple[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Return a transaction event's detail: the producer's transactional id, ``extra``, its epoch."""
    return (("txn_id", p.transactional_id), *extra, ("epoch", p.epoch))
