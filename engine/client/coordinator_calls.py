"""Requests to a coordinator: FindCoordinator, a cache of the answers, retries of retriable errors.

The transaction manager talks to the transaction coordinator of its ``transactional.id`` and to the
group coordinator of a consumer group (``send_offsets_to_transaction``). Each key's coordinator is
looked up once (FindCoordinator to any broker) and cached until an answer says NOT_COORDINATOR or
COORDINATOR_NOT_AVAILABLE, or no answer comes; then it is looked up again after
``retry.backoff.ms``. Other retriable coordinator errors are retried against the same coordinator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.client.base import wait_for
from engine.errors import ErrorCode
from engine.protocol import FindCoordinatorRequest, FindCoordinatorResponse

if TYPE_CHECKING:
    from collections.abc import Callable

    from engine.client.base import ClientNode

#: Coordinator errors after which the client looks the coordinator up again and retries.
REFIND = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
#: Coordinator errors the client retries against the same coordinator.
RETRY = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
    }
)


class CoordinatorCalls:
    """One client's known coordinators and its calls to them."""

    def __init__(self, client: ClientNode, request_timeout_ms: int, retry_backoff_ms: int) -> None:
        self.client = client
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        #: (key type, key) -> the broker id of its coordinator, as last found
        self.known: dict[tuple[int, str], int] = {}

    def forget(self, key_type: int, key: str) -> None:
        """Look the coordinator of ``key`` up again before the next request."""
        self.known.pop((key_type, key), None)

    def with_coordinator(self, key_type: int, key: str, then: Callable[[int], None], failed: Callable[[], Any]) -> None:
        """Call ``then(broker_id)`` with the coordinator of ``key`` (found first if unknown), or ``failed()``."""
        known = self.known.get((key_type, key))
        if known is not None:
            then(known)
            return

        def found(resp: FindCoordinatorResponse | None) -> None:
            if resp is None or resp.error is not ErrorCode.NONE:
                failed()
                return
            self.known[(key_type, key)] = resp.node_id
            then(resp.node_id)

        c = self.client
        c.request(c.pick_broker(), FindCoordinatorRequest(key, key_type), found, timeout_ms=self.request_timeout_ms)

    def call(self, key_type: int, key: str, make: Callable[[], Any], deadline_ms: int) -> Any:
        """Send ``make()`` to the coordinator, retrying retriable errors; wait for a final answer.

        Returns that answer (its error may still be set: a non-retriable one), or None when none
        came by ``deadline_ms`` or the client went down.
        """
        c = self.client
        answers: list[Any] = []
        sinks: list[Callable[[Any], None]] = []

        def attempt() -> None:
            if answers or c.world.now_ms >= deadline_ms:
                return
            self.with_coordinator(key_type, key, send, lambda: c.set_timer(self.retry_backoff_ms, attempt))

        def send(coordinator: int) -> None:
            c.request(f"broker-{coordinator}", make(), answered, timeout_ms=self.request_timeout_ms)

        def answered(resp: Any) -> None:
            code = c.no_answer if resp is None else resp.error
            if code in REFIND or resp is None:
                self.forget(key_type, key)
                c.set_timer(self.retry_backoff_ms, attempt)
                return
            if code in RETRY:
                c.set_timer(self.retry_backoff_ms, attempt)
                return
            answers.append(resp)
            sinks[0](resp)

        def start(done: Callable[[Any], None]) -> None:
            sinks.append(done)
            attempt()

        return wait_for(c, start, deadline_ms)
