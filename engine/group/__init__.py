"""Consumer groups on ``__consumer_offsets``: the classic group protocol and committed offsets.

:class:`GroupCoordinator` is a broker extension installed on every broker; it coordinates the
groups whose ``__consumer_offsets`` partition the broker leads. :mod:`engine.group.state` holds the
state machine, :mod:`engine.group.membership` JoinGroup/SyncGroup/Heartbeat/LeaveGroup,
:mod:`engine.group.records` the records written to the log and their replay on load, and
:mod:`engine.group.txn_offsets` transactional offset commits and their fencing (KIP-447). The
client half is in ``engine/client``: :mod:`engine.client.group_member` (the consumer's
``ConsumerCoordinator``) and :mod:`engine.client.assignor` (the range assignor the group leader runs).
"""

from engine.group.coordinator import GroupCoordinator
from engine.group.state import VALID_PREVIOUS, GroupState, IllegalGroupTransitionError

__all__ = [
    "VALID_PREVIOUS",
    "GroupCoordinator",
    "GroupState",
    "IllegalGroupTransitionError",
]
