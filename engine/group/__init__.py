"""Consumer groups on ``__consumer_offsets``: the classic group protocol and committed offsets.

:class:`GroupCoordinator` is a broker extension installed on every broker; it coordinates the
groups whose ``__consumer_offsets`` partition the broker leads. :mod:`engine.group.state` holds the
state machine, :mod:`engine.group.assignor` the client-side range assignor,
:mod:`engine.group.records` the records written to the log and their replay on load.
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
