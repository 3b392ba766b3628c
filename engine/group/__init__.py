"""Consumer groups on ``__consumer_offsets``: the classic group protocol and committed offsets.

:class:`GroupCoordinator` is a broker extension installed on every broker; it coordinates the
groups whose ``__consumer_offsets`` partition the broker leads. :mod:`engine.group.state` holds the
state machine, :mod:`engine.group.membership` JoinGroup/SyncGroup/Heartbeat/LeaveGroup,
:mod:`engine.group.records` the records written to the log and their replay on load. The client
half lives here too: :mod:`engine.group.member` (the consumer's ``ConsumerCoordinator``) and
:mod:`engine.group.assignor` (the range assignor the group leader runs).
"""

from engine.group.assignor import RANGE, range_assign
from engine.group.coordinator import GroupCoordinator
from engine.group.state import VALID_PREVIOUS, GroupState, IllegalGroupTransitionError

__all__ = [
    "RANGE",
    "VALID_PREVIOUS",
    "GroupCoordinator",
    "GroupState",
    "IllegalGroupTransitionError",
    "range_assign",
]
