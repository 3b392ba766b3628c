"""The catalogue of Kafka's trace event names, and the one module a reader of the trace imports.

Every event the engine emits is named once: the simulated world's own events (run, phases,
faults, messages, fault sites, coverage marks) in :mod:`engine.sim.events`, which knows nothing
about Kafka, and Kafka's events (brokers, replicas and logs, producers, transactions, groups,
consumers, service databases, served connections) here. This module re-exports every name of the
world's catalogue, and :data:`KIND` covers both, so a reader of the trace (a checker, a view, a
widget, a Spark query) and every emit outside ``engine/sim/`` import this module alone
(``from engine import trace_events as events``; ``world.trace.emit(node, "state",
events.TXN_STATE_WRITE, ...)``). Values are the names the short log prints and part of every
run's fingerprint. ``tests/unit/sim/test_sim_events.py`` keeps both catalogues and the engine in
step (every emit uses a constant, every constant is emitted, the kinds agree).

:data:`KAFKA_KIND` maps each name of this module to the set of kinds it is emitted with (keys of
:data:`engine.sim.trace.SYMBOLS`); :data:`KIND` adds the world's :data:`engine.sim.events.KIND`.
Each table lists the name, its kind(s), the node that emits it, the detail keys in the order the
code gives them, and what it means. ``tp`` is ``topic-partition``; ``pid`` and ``epoch`` are a
producer id and epoch.

Served connections
~~~~~~~~~~~~~~~~~~

A served cluster (:mod:`engine.wire`) traces the connections of real Kafka clients.

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``wire.close``                    drop     wire-N      reason                    a served connection to a real
                                                                                 client was closed by the server
``wire.fault``                    fault    wire-N      action, api, nth          a wire fault counted in requests
                                                                                 fired (engine.wire.service)
================================  =======  ==========  ========================  ===================================

Controller and brokers
~~~~~~~~~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``topic.create``                  state    controller  topic, partitions         a topic was created
``topic.delete``                  state    controller  topic, partitions         a topic was deleted (or dropped)
``broker.register``               state    controller  broker, incarnation       a broker registered
``broker.reregister``             state    controller  broker, incarnation       a restarted broker registered again
``broker.fence``                  state    controller  broker                    a broker missed its heartbeats
``election.clean``                state    controller  tp, leader, epoch, isr    a leader was elected from the ISR
``election.unclean``              state    controller  tp, leader, epoch         a leader was elected outside the ISR
``election.none``                 state    controller  tp, isr                   no live replica could lead
``isr.change``                    state    controller  tp, isr                   the controller changed an ISR
``broker.clean_shutdown``         state    broker      -                         the broker shut down cleanly
================================  =======  ==========  ========================  ===================================

Replicas and logs
~~~~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``replica.leader``                state    broker      tp, epoch, isr, leo, hw   the broker became the leader
``replica.follower``              state    broker      tp, leader, epoch, leo    the broker became a follower
``replica.truncate``              state    follower    tp, to, removed           a follower cut its diverging tail
``isr.propose``                   state    leader      tp, isr                   the leader asked for a new ISR
``log.append``                    state    leader      tp, offset, last, pid,    the leader appended a data batch
                                                       epoch, first_seq,         (offsets ``offset``..``last``)
                                                       last_seq, txn
``log.hw``                        state    leader      tp, hw, lso               the leader's high watermark moved
``log.lso``                       state    leader      tp, lso                   the last stable offset moved
                                                                                 without a HW move (e.g. a marker
                                                                                 ended a transaction)
================================  =======  ==========  ========================  ===================================

Produce (the broker side)
~~~~~~~~~~~~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``produce.error``                 state    broker      tp, error                 a produce request was refused
``producer_id.new``               state    broker      pid                       an idempotent producer got an id
``producer.expired``              state    broker      tp, pid                   a partition forgot an idle producer
================================  =======  ==========  ========================  ===================================

Producer client
~~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``producer.id``                   state    producer    pid, epoch                the producer got its id and epoch
``producer.epoch_bump``           state    producer    pid, epoch                the producer bumped its own epoch
``producer.purge``                state    producer    batches                   in-flight batches were purged
``produce.done``                  state    producer    tp, offset, seq, n,       a batch was acknowledged
                                                       error
``produce.failed``                state    producer    tp, offset, seq, n,       a batch (or an unbatched record:
                                                       error                     ``offset`` -1) failed
``produce.retry``                 state    producer    tp, seq, error, attempt   a batch is sent again
================================  =======  ==========  ========================  ===================================

Transactions client
~~~~~~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``txn.init``                      state    producer    txn_id, pid, epoch        initTransactions finished
``txn.begin``                     state    producer    txn_id, epoch             beginTransaction
``txn.commit``                    state    producer    txn_id, epoch             commitTransaction finished
``txn.abort``                     state    producer    txn_id, epoch             abortTransaction finished
``admin.abort``                   state    admin       tp, start_offset, pid,    the admin client aborts a hanging
                                                       epoch                     transaction (writes its marker)
================================  =======  ==========  ========================  ===================================

Transaction coordinator
~~~~~~~~~~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``coordinator.loaded``            state    broker      partition, epoch, ids     a ``__transaction_state`` partition
                                                                                 was loaded
``txn_state.write``               state    broker      txn_id, state, pid,       a transaction state was appended
                                                       epoch, offset
``txn.complete``                  state    broker      txn_id, result, epoch     a transaction ended COMPLETE_*
``marker.append``                 state    leader      tp, offset, marker, pid,  a partition leader appended a
                                                       epoch                     COMMIT/ABORT marker
``marker.rejected``               state    leader      tp, error                 a partition leader refused a marker
================================  =======  ==========  ========================  ===================================

Group coordinator
~~~~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``group.load.done``               state    broker      partition, epoch, groups  a ``__consumer_offsets`` partition
                                                                                 was loaded
``group.unload``                  state    broker      partition, groups         ... was unloaded
``group.join.error``              state    broker      group, error              a JoinGroup was refused
``group.member.added``            state    broker      group, member             a member joined
``group.rebalance``               state    broker      group, generation,        a rebalance began
                                                       reason
``group.member.removed``          state    broker      group, member, reason     a member did not rejoin in time
``group.static.replaced``         state    broker      group, instance, old,     a static member's instance rejoined
                                                       member
``group.empty``                   state    broker      group, generation         the group has no member left
``group.generation``              state    broker      group, generation,        a new generation began
                                                       leader, members
``group.sync.error``              state    broker      group, error              a SyncGroup was refused
``group.stable``                  state    broker      group, generation,        the leader's assignment was stored
                                                       assignment
``group.heartbeat.error``         state    broker      group, member, error      a Heartbeat was refused
``group.member.left``             state    broker      group, member             a member left (LeaveGroup)
``group.member.expired``          state    broker      group, member,            a member's session timed out
                                                       session_timeout_ms
``cgroup.created``                state    broker      group                     a KIP-848 group was created
``cgroup.heartbeat.error``        state    broker      group, member, error      a ConsumerGroupHeartbeat was refused
``cgroup.target``                 state    broker      group, epoch, assignor,   a new target assignment (KIP-848)
                                                       target
``cgroup.reconciled``             state    broker      group, member, epoch,     a member moved toward its target:
                                                       state, assigned,          revoke before assign
                                                       revoking
``cgroup.static.left``            state    broker      group, member             a static member left with epoch -2
``cgroup.member.removed``         state    broker      group, member, reason,    a KIP-848 member left, expired or
                                                       group_epoch               was fenced
``offset_commit.done``            state    broker      group, offsets            an OffsetCommit was stored
``offset_commit.error``           state    broker      group, error              an OffsetCommit was refused
``txn_offset_commit.pending``     state    broker      group, pid, offsets       a TxnOffsetCommit awaits its marker
``txn_offset_commit.completed``   state    broker      group, pid, result,       its marker committed or dropped it
                                                       committed
``txn_offset_commit.error``       state    broker      group, error              a TxnOffsetCommit was refused
================================  =======  ==========  ========================  ===================================

Consumer
~~~~~~~~

A consumer's ``group.*`` events come from its group member; their detail begins with ``group``.

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``consumer.fetched``              state    consumer    tp, from, records, next,  a fetch returned records
                                                       lso, hw
``consumer.unknown_partition``    state    consumer    tp                        a fetch named an unknown partition
``consumer.committed``            state    consumer    group, offsets            committed offsets were fetched
``consumer.commit``               state    consumer    error, offsets            an offset commit was answered
``consumer.close.commit_failed``  state    consumer    error                     the commit on close failed
``consumer.assignment``           state    consumer    group, assignment         the group changed what the consumer
                                                                                 reads (every partition it now owns)
``group.coordinator``             state    consumer    group, broker             the group coordinator was found
``group.coordinator.lost``        state    consumer    group, broker             ... was forgotten
``group.joined``                  state    consumer    group, member,            JoinGroup succeeded
                                                       generation, leader
``group.join.failed``             state    consumer    group, error              JoinGroup or SyncGroup failed
``group.assignment.computed``     state    consumer    group, generation,        the leader computed the assignment
                                                       assignment
``group.synced``                  state    consumer    group, generation,        SyncGroup gave this member its
                                                       assignment                partitions
``group.rejoin``                  state    consumer    group, reason             the member revokes and joins again
``group.fenced``                  state    consumer    group, error              the member's generation is gone
``group.leave``                   state    consumer    group, member, reason     the member leaves the group
``group.member.state``            state    consumer    group, from, to           a KIP-848 member changed state
``group.heartbeat.failed``        state    consumer    group, error              a ConsumerGroupHeartbeat failed
``group.reconcile``               state    consumer    group, generation,        a KIP-848 member revokes, then
                                                       revoke, assign            assigns (its member epoch)
================================  =======  ==========  ========================  ===================================

Service databases
~~~~~~~~~~~~~~~~~

A service's SQLite database (:mod:`engine.db`) traces the end of every transaction.

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``db.commit``                     state    db-<name>   label, statements         a database transaction committed
``db.rollback``                   state    db-<name>   label, statements,        ... rolled back (an error, a crash)
                                                       reason
================================  =======  ==========  ========================  ===================================
"""

from __future__ import annotations

from engine.sim import events as _world
from engine.sim.events import *  # noqa: F403  (the world's names, re-exported: one module for readers)

# -- served clusters (engine.wire) ---------------------------------------------------------

#: A real client's connection closed by the server (a crash, a protocol error, a refused login).
WIRE_CLOSE = "wire.close"
#: A wire fault counted in requests fired (``drop-response``, ``close-after``, ``close-before``).
WIRE_FAULT = "wire.fault"

# -- controller and brokers ----------------------------------------------------------------

TOPIC_CREATE = "topic.create"
#: A topic deleted at the controller (its partitions), or its replicas dropped by a broker.
TOPIC_DELETE = "topic.delete"
BROKER_REGISTER = "broker.register"
BROKER_REREGISTER = "broker.reregister"
BROKER_FENCE = "broker.fence"
ELECTION_CLEAN = "election.clean"
ELECTION_UNCLEAN = "election.unclean"
ELECTION_NONE = "election.none"
ISR_CHANGE = "isr.change"
BROKER_CLEAN_SHUTDOWN = "broker.clean_shutdown"

# -- replicas and logs ---------------------------------------------------------------------

REPLICA_LEADER = "replica.leader"
REPLICA_FOLLOWER = "replica.follower"
REPLICA_TRUNCATE = "replica.truncate"
ISR_PROPOSE = "isr.propose"
LOG_APPEND = "log.append"
LOG_HW = "log.hw"
LOG_LSO = "log.lso"

# -- produce (the broker side) -------------------------------------------------------------

PRODUCE_ERROR = "produce.error"
PRODUCER_ID_NEW = "producer_id.new"
PRODUCER_EXPIRED = "producer.expired"

# -- producer client -----------------------------------------------------------------------

PRODUCER_ID = "producer.id"
PRODUCER_EPOCH_BUMP = "producer.epoch_bump"
PRODUCER_PURGE = "producer.purge"
PRODUCE_DONE = "produce.done"
PRODUCE_FAILED = "produce.failed"
PRODUCE_RETRY = "produce.retry"

# -- transactions client -------------------------------------------------------------------

TXN_INIT = "txn.init"
TXN_BEGIN = "txn.begin"
TXN_COMMIT = "txn.commit"
TXN_ABORT = "txn.abort"
ADMIN_ABORT = "admin.abort"

# -- transaction coordinator ---------------------------------------------------------------

COORDINATOR_LOADED = "coordinator.loaded"
TXN_STATE_WRITE = "txn_state.write"
TXN_COMPLETE = "txn.complete"
MARKER_APPEND = "marker.append"
MARKER_REJECTED = "marker.rejected"

# -- group coordinator ---------------------------------------------------------------------

GROUP_LOAD_DONE = "group.load.done"
GROUP_UNLOAD = "group.unload"
GROUP_JOIN_ERROR = "group.join.error"
GROUP_MEMBER_ADDED = "group.member.added"
#: A static member (KIP-345) rejoined with its instance id: the old member id is fenced, the new one keeps its place.
GROUP_STATIC_REPLACED = "group.static.replaced"
GROUP_REBALANCE = "group.rebalance"
GROUP_MEMBER_REMOVED = "group.member.removed"
GROUP_EMPTY = "group.empty"
GROUP_GENERATION = "group.generation"
GROUP_SYNC_ERROR = "group.sync.error"
GROUP_STABLE = "group.stable"
GROUP_HEARTBEAT_ERROR = "group.heartbeat.error"
GROUP_MEMBER_LEFT = "group.member.left"
GROUP_MEMBER_EXPIRED = "group.member.expired"
#: KIP-848 consumer groups (engine/group/consumer_heartbeat.py).
CGROUP_HEARTBEAT_ERROR = "cgroup.heartbeat.error"
CGROUP_CREATED = "cgroup.created"
CGROUP_TARGET = "cgroup.target"
CGROUP_RECONCILED = "cgroup.reconciled"
CGROUP_STATIC_LEFT = "cgroup.static.left"
CGROUP_MEMBER_REMOVED = "cgroup.member.removed"
OFFSET_COMMIT_DONE = "offset_commit.done"
OFFSET_COMMIT_ERROR = "offset_commit.error"
TXN_OFFSET_COMMIT_PENDING = "txn_offset_commit.pending"
TXN_OFFSET_COMMIT_COMPLETED = "txn_offset_commit.completed"
TXN_OFFSET_COMMIT_ERROR = "txn_offset_commit.error"

# -- consumer ------------------------------------------------------------------------------

CONSUMER_FETCHED = "consumer.fetched"
CONSUMER_UNKNOWN_PARTITION = "consumer.unknown_partition"
CONSUMER_COMMITTED = "consumer.committed"
CONSUMER_COMMIT = "consumer.commit"
CONSUMER_CLOSE_COMMIT_FAILED = "consumer.close.commit_failed"
#: A subscribed consumer's assignment changed (a rebalance, a reconciliation, a leave): what it owns now.
CONSUMER_ASSIGNMENT = "consumer.assignment"
GROUP_COORDINATOR = "group.coordinator"
GROUP_COORDINATOR_LOST = "group.coordinator.lost"
GROUP_JOINED = "group.joined"
GROUP_JOIN_FAILED = "group.join.failed"
GROUP_ASSIGNMENT_COMPUTED = "group.assignment.computed"
GROUP_SYNCED = "group.synced"
GROUP_REJOIN = "group.rejoin"
GROUP_FENCED = "group.fenced"
GROUP_LEAVE = "group.leave"
#: KIP-848 member (engine/client/consumer_member.py): a state change, a failed heartbeat, a reconciliation.
GROUP_MEMBER_STATE = "group.member.state"
GROUP_HEARTBEAT_FAILED = "group.heartbeat.failed"
GROUP_RECONCILE = "group.reconcile"

# -- service databases --------------------------------------------------------------------

DB_COMMIT = "db.commit"
DB_ROLLBACK = "db.rollback"

# -- kinds ---------------------------------------------------------------------------------

_STATE = frozenset({"state"})

#: Every name of this module -> the kinds it is emitted with (keys of ``engine.sim.trace.SYMBOLS``).
KAFKA_KIND: dict[str, frozenset[str]] = {
    WIRE_CLOSE: frozenset({"drop"}),
    WIRE_FAULT: frozenset({"fault"}),
    **dict.fromkeys(
        (
            # controller and brokers
            TOPIC_CREATE,
            TOPIC_DELETE,
            BROKER_REGISTER,
            BROKER_REREGISTER,
            BROKER_FENCE,
            ELECTION_CLEAN,
            ELECTION_UNCLEAN,
            ELECTION_NONE,
            ISR_CHANGE,
            BROKER_CLEAN_SHUTDOWN,
            # replicas and logs
            REPLICA_LEADER,
            REPLICA_FOLLOWER,
            REPLICA_TRUNCATE,
            ISR_PROPOSE,
            LOG_APPEND,
            LOG_HW,
            LOG_LSO,
            # produce (the broker side)
            PRODUCE_ERROR,
            PRODUCER_ID_NEW,
            PRODUCER_EXPIRED,
            # producer client
            PRODUCER_ID,
            PRODUCER_EPOCH_BUMP,
            PRODUCER_PURGE,
            PRODUCE_DONE,
            PRODUCE_FAILED,
            PRODUCE_RETRY,
            # transactions client
            TXN_INIT,
            TXN_BEGIN,
            TXN_COMMIT,
            TXN_ABORT,
            ADMIN_ABORT,
            # transaction coordinator
            COORDINATOR_LOADED,
            TXN_STATE_WRITE,
            TXN_COMPLETE,
            MARKER_APPEND,
            MARKER_REJECTED,
            # group coordinator
            GROUP_LOAD_DONE,
            GROUP_UNLOAD,
            GROUP_JOIN_ERROR,
            GROUP_MEMBER_ADDED,
            GROUP_STATIC_REPLACED,
            GROUP_REBALANCE,
            GROUP_MEMBER_REMOVED,
            GROUP_EMPTY,
            GROUP_GENERATION,
            GROUP_SYNC_ERROR,
            GROUP_STABLE,
            GROUP_HEARTBEAT_ERROR,
            GROUP_MEMBER_LEFT,
            GROUP_MEMBER_EXPIRED,
            CGROUP_HEARTBEAT_ERROR,
            CGROUP_CREATED,
            CGROUP_TARGET,
            CGROUP_RECONCILED,
            CGROUP_STATIC_LEFT,
            CGROUP_MEMBER_REMOVED,
            OFFSET_COMMIT_DONE,
            OFFSET_COMMIT_ERROR,
            TXN_OFFSET_COMMIT_PENDING,
            TXN_OFFSET_COMMIT_COMPLETED,
            TXN_OFFSET_COMMIT_ERROR,
            # consumer
            CONSUMER_FETCHED,
            CONSUMER_UNKNOWN_PARTITION,
            CONSUMER_COMMITTED,
            CONSUMER_COMMIT,
            CONSUMER_CLOSE_COMMIT_FAILED,
            CONSUMER_ASSIGNMENT,
            GROUP_COORDINATOR,
            GROUP_COORDINATOR_LOST,
            GROUP_JOINED,
            GROUP_JOIN_FAILED,
            GROUP_ASSIGNMENT_COMPUTED,
            GROUP_SYNCED,
            GROUP_REJOIN,
            GROUP_FENCED,
            GROUP_LEAVE,
            GROUP_MEMBER_STATE,
            GROUP_HEARTBEAT_FAILED,
            GROUP_RECONCILE,
            # service databases
            DB_COMMIT,
            DB_ROLLBACK,
        ),
        _STATE,
    ),
}

#: Every catalogued name, the world's and Kafka's -> the kinds it is emitted with.
KIND: dict[str, frozenset[str]] = {**_world.KIND, **KAFKA_KIND}
