"""An admin client node: ``kafka-transactions.sh`` in the simulated cluster, abort included.

:class:`AdminClient` is a node of the world (name ``admin-1`` …) that sends its requests over the
simulated network, so faults apply to it like to any client. ``describe-producers`` (and the
lookup ``abort`` starts with) is a DescribeProducers request to the partition's leader, or to
``broker_id``'s broker, answered by its replica manager (Kafka's ``ReplicaManager.activeProducerState``):
that broker down or cut off is ``TimeoutException``, one hosting no replica
``NotLeaderOrFollowerException``. ``list`` is a ListTransactions request to every live broker,
whose transaction coordinator answers for the ``__transaction_state`` partitions it leads; the
answers are unioned (Kafka's ``KafkaAdminClient.listTransactions``). ``describe`` is a
DescribeTransactions request to the id's coordinator, the leader of its ``__transaction_state``
partition (Kafka's ``TransactionCoordinator.handleDescribeTransactions``). A coordinator still
loading is asked again after ``RETRY_BACKOFF_MS``; one that does not answer is ``TimeoutException``
(cut off) or ``CoordinatorNotAvailableException`` (down: the connection is refused).
``find-hanging`` is answered by the views of :mod:`engine.views.transactions`, which read exactly
the state the coordinators and replicas would answer from.

``abort`` is the operator's way to clear a hanging transaction (KIP-664):
``kafka-transactions.sh abort --topic T --partition P --start-offset O``

1. DescribeProducers on the partition leader: find the producer whose open transaction starts at
   ``O``; none: ``Could not find any open transactions starting at offset O on partition T-P``.
2. WriteTxnMarkers(ABORT) to the leader with that producer id and epoch, and its latest
   coordinator epoch (0 when the partition has seen no marker from it), as the tool builds its
   ``AbortTransactionSpec``. The leader validates it like a coordinator's marker (an older epoch
   or coordinator epoch is refused), appends it, adds the range to the ``.txnindex`` and answers
   once the marker is below the high watermark; the LSO then moves past the transaction.
3. The call runs the simulation until the answer comes (or ``timeout_ms`` passes) and raises
   the broker's error as an exception.

The marker carries no transactional id (Kafka's WriteTxnMarkers has none); the request's field
is set to ``""``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import args
from engine import trace_events as events
from engine.client.base import wait_for
from engine.coordinator_lookup import TRANSACTION_STATE_TOPIC, partition_for
from engine.errors import (
    CoordinatorNotAvailableException,
    ErrorCode,
    KafkaError,
    TimeoutException,
    TransactionalIdNotFoundException,
    exception_for,
)
from engine.protocol import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from engine.rpc import RpcNode
from engine.views import lookup
from engine.views import transactions as views

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from engine.views.lookup import ClusterState
    from engine.views.transactions import (
        HangingTransaction,
        ProducerStateRow,
        TransactionDescription,
        TransactionListing,
    )

#: How long ``abort`` waits for the leader's answer (Kafka's default ``default.api.timeout.ms``).
DEFAULT_API_TIMEOUT_MS = 60_000
#: Per-request timeout (``request.timeout.ms``).
REQUEST_TIMEOUT_MS = 30_000
#: Wait before asking a coordinator that is still loading again (``retry.backoff.ms``).
RETRY_BACKOFF_MS = 100


class AbortTransactionError(KafkaError):
    """``abort`` found nothing to abort: no open transaction starts at the given offset."""


class AdminClient(RpcNode):
    """An admin client of one cluster (``kafka-transactions.sh``)."""

    def __init__(self, cluster: ClusterState, name: str = "admin-1") -> None:
        super().__init__(cluster.world, name)
        self.cluster = cluster

    # -- read-only subcommands --------------------------------------------------------------------

    def _ask_coordinator(self, broker: int, body: Any, deadline: int, what: str) -> Any:
        """Send ``body`` to a broker's coordinator and wait; ask again while it loads; return the answer.

        An answer of COORDINATOR_LOAD_IN_PROGRESS is asked again after ``RETRY_BACKOFF_MS`` until
        ``deadline`` (Kafka's admin handlers retry it), then returned. No answer: ``CoordinatorNotAvailableException``
        when the connection was refused or closed (the broker is down), else ``TimeoutException``.
        """
        while True:
            resp = wait_for(
                self,
                lambda done: self.request(
                    f"broker-{broker}",
                    body,
                    done,
                    timeout_ms=max(1, min(REQUEST_TIMEOUT_MS, deadline - self.world.now_ms)),
                ),
                deadline,
            )
            if resp is None:
                if self.no_answer is ErrorCode.NETWORK_EXCEPTION:
                    msg = f"{what}: broker {broker} refused the connection (down); retry when it is back"
                    raise CoordinatorNotAvailableException(msg)
                msg = f"{what}: not answered by broker {broker} by {deadline} ms (cut off or paused)"
                raise TimeoutException(msg)
            if not _loading(resp) or self.world.now_ms + RETRY_BACKOFF_MS >= deadline:
                return resp
            self.world.run_for(RETRY_BACKOFF_MS)

    def list_transactions(
        self, duration_filter_ms: int | None = None, *, timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    ) -> tuple[TransactionListing, ...]:
        """Return the ``list`` rows: ListTransactions to every live broker, answers unioned.

        Each broker's coordinator answers for the ``__transaction_state`` partitions it leads
        (Kafka's ``TransactionStateManager.listTransactionStates``), so the rows come by
        coordinator id, then transactional id. A broker that does not answer fails the call
        (``TimeoutException``, ``CoordinatorNotAvailableException``), as ``KafkaAdminClient.listTransactions``
        fails when one broker's answer fails.
        """
        if duration_filter_ms is not None:
            args.check_int(duration_filter_ms, "duration filter", minimum=0)
        req = ListTransactionsRequest(duration_filter_ms=-1 if duration_filter_ms is None else duration_filter_ms)
        deadline = self.world.now_ms + timeout_ms
        rows = []
        for b in self.cluster.controller.live_brokers():
            resp: ListTransactionsResponse = self._ask_coordinator(b, req, deadline, "list-transactions")
            if resp.error is not ErrorCode.NONE:
                raise exception_for(resp.error, f"list-transactions answered by broker {b}: {resp.error.name}")
            rows.extend(
                views.TransactionListing(t.transactional_id, b, t.producer_id, t.state)
                for t in sorted(resp.transactions)
            )
        return tuple(rows)

    def describe_transaction(
        self, transactional_id: str, *, timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    ) -> TransactionDescription:
        """Return the ``describe`` row: a DescribeTransactions to the id's coordinator.

        The coordinator is the leader of the id's ``__transaction_state`` partition in the
        metadata. Raises ``TransactionalIdNotFoundException`` when the coordinator does not know
        the id (or no id was ever initialised: there is no ``__transaction_state``),
        ``CoordinatorNotAvailableException`` when the partition has no leader or its leader is down,
        ``CoordinatorLoadInProgressException`` when it is still loading at ``timeout_ms``, and
        ``TimeoutException`` when no answer comes (the coordinator cut off).
        """
        args.check_str(transactional_id, "transactional id")
        n = self.cluster.config.transaction_state_log_num_partitions
        p = partition_for(transactional_id, n)
        state = self.cluster.controller.partitions.get((TRANSACTION_STATE_TOPIC, p))
        if state is None:
            raise TransactionalIdNotFoundException(_not_found(transactional_id), transactional_id=transactional_id)
        if state.leader < 0:
            msg = (
                f"The coordinator of transactional id {transactional_id!r} ({TRANSACTION_STATE_TOPIC}-{p}) is not "
                "available: it has no leader now; retry when another broker leads the partition"
            )
            raise CoordinatorNotAvailableException(msg, transactional_id=transactional_id)
        deadline = self.world.now_ms + timeout_ms
        what = f"describe of transactional id {transactional_id!r}"
        resp: DescribeTransactionsResponse = self._ask_coordinator(
            state.leader, DescribeTransactionsRequest((transactional_id,)), deadline, what
        )
        [d] = resp.transactions
        if d.error is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            raise TransactionalIdNotFoundException(_not_found(transactional_id), transactional_id=transactional_id)
        if d.error is not ErrorCode.NONE:
            msg = f"{what}: broker {state.leader} answered {d.error.name}"
            raise exception_for(d.error, msg, transactional_id=transactional_id)
        start = None if d.start_ms < 0 else d.start_ms
        return views.TransactionDescription(
            state.leader,
            transactional_id,
            d.producer_id,
            d.producer_epoch,
            d.state,
            d.timeout_ms,
            start,
            None if start is None else self.world.now_ms - start,
            d.partitions,
        )

    def describe_producers(
        self,
        topic: str,
        partition: int = 0,
        broker_id: int | None = None,
        *,
        timeout_ms: int = DEFAULT_API_TIMEOUT_MS,
    ) -> tuple[ProducerStateRow, ...]:
        """Return the ``describe-producers`` rows: a DescribeProducers to the leader (or ``broker_id``).

        ``UnknownTopicOrPartitionException``, ``ValueError`` (no such broker) and
        ``LeaderNotAvailableException`` (no leader, no ``broker_id``) before sending; the broker's
        error (``NotLeaderOrFollowerException``: it hosts no replica) as an exception; and
        ``TimeoutException`` when no answer comes within ``timeout_ms`` (the broker down or cut off).
        """
        b = lookup.hosting_broker(self.cluster, topic, partition, broker_id)
        deadline = self.world.now_ms + timeout_ms
        resp: DescribeProducersResponse | None = wait_for(
            self,
            lambda done: self.request(
                f"broker-{b}",
                DescribeProducersRequest(topic, partition),
                done,
                timeout_ms=min(REQUEST_TIMEOUT_MS, timeout_ms),
            ),
            deadline,
        )
        if resp is None:
            msg = f"describe-producers of {topic}-{partition} not answered by broker {b} in {timeout_ms} ms"
            raise TimeoutException(msg)
        if resp.error is not ErrorCode.NONE:
            raise exception_for(resp.error, None, topic=topic, partition=partition)
        return tuple(
            views.ProducerStateRow(
                topic,
                partition,
                b,
                x.producer_id,
                x.producer_epoch,
                None if x.coordinator_epoch < 0 else x.coordinator_epoch,
                x.last_sequence,
                x.last_timestamp,
                x.current_txn_start_offset,
            )
            for x in resp.producers
        )

    def find_hanging(
        self,
        broker_id: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        max_transaction_timeout_min: int = views.DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
    ) -> tuple[HangingTransaction, ...]:
        """Return the ``find-hanging`` rows."""
        return views.find_hanging_rows(self.cluster, broker_id, topic, partition, max_transaction_timeout_min)

    # -- abort ----------------------------------------------------------------------------------

    def abort_spec(self, topic: str, partition: int, start_offset: int) -> WriteTxnMarkersRequest:
        """Return the ABORT marker request ``abort --start-offset`` would send (step 1 above).

        ``UnknownTopicOrPartitionException`` for a partition the cluster does not have,
        ``ValueError`` for a negative offset, :class:`AbortTransactionError` when no open
        transaction starts there.
        """
        lookup.require_partition(self.cluster, topic, partition)
        args.check_int(start_offset, "start offset", minimum=0)
        for s in self.describe_producers(topic, partition):
            if s.current_txn_start_offset == start_offset:
                coordinator_epoch = 0 if s.coordinator_epoch is None else s.coordinator_epoch
                return WriteTxnMarkersRequest(
                    "", s.producer_id, s.producer_epoch, coordinator_epoch, False, topic, partition
                )
        msg = f"Could not find any open transactions starting at offset {start_offset} on partition {topic}-{partition}"
        raise AbortTransactionError(msg, topic=topic, partition=partition, start_offset=start_offset)

    def abort_transaction(
        self, topic: str, partition: int, start_offset: int, *, timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    ) -> WriteTxnMarkersRequest:
        """Abort the open transaction starting at ``start_offset``; return the marker request sent.

        Runs the simulation until the leader answers. Raises :class:`AbortTransactionError` when
        no open transaction starts there, the broker's error (e.g. ``InvalidProducerEpochException``,
        ``TransactionCoordinatorFencedException``) when the marker is refused, and
        ``TimeoutException`` when no answer comes within ``timeout_ms``.
        """
        args.check_int(timeout_ms, "timeout_ms", minimum=1)
        req = self.abort_spec(topic, partition, start_offset)
        self.world.trace.emit(
            self.name,
            "state",
            events.ADMIN_ABORT,
            ("tp", f"{topic}-{partition}"),
            ("start_offset", start_offset),
            ("pid", req.producer_id),
            ("epoch", req.producer_epoch),
        )
        deadline = self.world.now_ms + timeout_ms
        while True:
            leader = lookup.require_partition(self.cluster, topic, partition).leader
            if leader >= 0:
                resp: WriteTxnMarkersResponse | None = wait_for(
                    self,
                    lambda done, to=f"broker-{leader}": self.request(
                        to, req, done, timeout_ms=min(REQUEST_TIMEOUT_MS, timeout_ms)
                    ),
                    deadline,
                )
                if resp is not None and resp.error is ErrorCode.NONE:
                    return req
                if resp is not None and not resp.error.retriable:
                    raise exception_for(resp.error, resp.error_message, topic=topic, partition=partition)
            if self.world.now_ms >= deadline:
                msg = (
                    f"abort of the transaction at offset {start_offset} on {topic}-{partition} "
                    f"not answered in {timeout_ms} ms"
                )
                raise TimeoutException(msg)
            self.world.run_for(100)


def _as_is(client: AdminClient) -> AdminClient:
    return client


class TransactionsAdmin:
    """``kafka-transactions.sh`` bound to a cluster: each method prints like the subcommand.

    The :class:`AdminClient` node is created only when a request needs it (``list``, ``describe``,
    ``describe-producers``, ``abort``); ``find-hanging`` reads the views and never changes the world.
    """

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self._client: AdminClient | None = None
        #: Handed the admin client when it is made, and returns the one to use: a journal wraps it
        #: there, so the requests it sends later are recorded (:meth:`engine.journal.Journal.adopt`).
        self.on_client_made: Callable[[AdminClient], AdminClient] = _as_is

    @property
    def client(self) -> AdminClient:
        """Return the admin client node (created on first use)."""
        if self._client is None:
            n = 1
            while f"admin-{n}" in self.cluster.world.nodes:
                n += 1
            self._client = self.on_client_made(AdminClient(self.cluster, f"admin-{n}"))
        return self._client

    @property
    def existing_client(self) -> AdminClient | None:
        """Return the admin client node if one was made, else None (reading makes none)."""
        return self._client

    def list(self, duration_filter_ms: int | None = None) -> str:
        """``list [--duration-filter MS]``: asked of every broker's coordinator over the network."""
        rows = self.client.list_transactions(duration_filter_ms)
        return views.format_table(views.LIST_HEADERS, [r.cells() for r in rows])

    def describe(self, transactional_id: str) -> str:
        """``describe --transactional-id ID``: asked of the id's coordinator over the network."""
        row = self.client.describe_transaction(transactional_id)
        return views.format_table(views.DESCRIBE_HEADERS, [row.cells()])

    def describe_producers(self, topic: str, partition: int = 0, broker_id: int | None = None) -> str:
        """``describe-producers --topic T --partition P [--broker-id B]``: asked of the broker over the network."""
        rows = self.client.describe_producers(topic, partition, broker_id)
        return views.format_table(views.PRODUCERS_HEADERS, [r.cells() for r in rows])

    def find_hanging(
        self,
        broker_id: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        max_transaction_timeout_min: int = views.DEFAULT_MAX_TRANSACTION_TIMEOUT_MIN,
    ) -> str:
        """``find-hanging (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout MIN]``."""
        return views.find_hanging(self.cluster, broker_id, topic, partition, max_transaction_timeout_min)

    def abort(self, topic: str, partition: int, start_offset: int) -> str:
        """``abort --topic T --partition P --start-offset O``: prints nothing on success (returns "")."""
        self.client.abort_transaction(topic, partition, start_offset)
        return ""


def _loading(resp: Any) -> bool:
    """Return True when a coordinator's answer says it is still loading (ask again)."""
    if isinstance(resp, DescribeTransactionsResponse):
        return any(d.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS for d in resp.transactions)
    return resp.error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def _not_found(transactional_id: str) -> str:
    return (
        f"The transactional id {transactional_id!r} was not found: its coordinator does not know it (never "
        "initialised with init_transactions(), or expired)"
    )
