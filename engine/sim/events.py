"""The catalogue of the simulated world's trace event names: run, phases, faults, messages, sites, marks.

The world knows nothing about Kafka, and neither does this catalogue: the names of Kafka's
events (brokers, replicas, producers, transactions, groups, consumers, databases, served
connections) are catalogued in :mod:`engine.trace_events`, which also re-exports every name
here, so a reader of the trace (a checker, a view, a widget, a Spark query) finds every event it
may meet in that one module. Each emit in ``engine/sim/`` passes its name as a constant of this
module (``world.trace.emit(node, "fault", events.CRASH, ...)``), never as a free string, so a typo
in a name is an ``AttributeError`` rather than a silent new event. The values are the names the
short log prints, and part of every run's fingerprint: renaming one changes every fingerprint.
``tests/unit/sim/test_sim_events.py`` keeps both catalogues and the engine in step (every emit
uses a constant, every constant is emitted, the kinds agree, ``sim/`` emits only the world's
names).

:data:`KIND` maps each name to the set of kinds (the keys of :data:`engine.sim.trace.SYMBOLS`)
it is emitted with: most names have one kind, the message kinds have three (``send``,
``deliver`` and ``drop``). Three kinds of name are not plain constants:

- *Phases.* :meth:`World.set_phase(phase) <engine.sim.world.World.set_phase>` emits
  ``phase.<phase>``; :func:`phase_event` returns that name and refuses a phase not in
  :data:`PHASES`.
- *Messages.* The network names each send, delivery and drop after the message's kind
  (:data:`MESSAGE_KINDS`: ``request``, ``response``, ``oneway``), so it passes the message's
  ``kind`` through rather than a constant.
- *Coverage marks.* :meth:`Trace.mark(node, label) <engine.sim.trace.Trace.mark>` emits
  :data:`MARK` with a ``label``; labels are free text and are not catalogued.

Each table lists the name, its kind(s), the node that emits it, the detail keys in the order the
code gives them, and what it means. ``tp`` is ``topic-partition``; ``pid`` and ``epoch`` are a
producer id and epoch.

World and phases
~~~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``run.start``                     phase    world       seed                      the world was made (first event)
``phase.safety``                  phase    world       -                         faults on: the run's safety phase
``phase.heal``                    phase    world       -                         every fault ends (``World.heal``)
``phase.liveness``                phase    world       -                         faults off; the run must progress
``phase.end``                     phase    world       -                         the driver ended the run
================================  =======  ==========  ========================  ===================================

Faults
~~~~~~

Node faults come from :class:`~engine.sim.world.World` (directly or from a fault plan), network
faults from :class:`~engine.sim.network.Network`.

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``crash``                         fault    the node    lose_unflushed_tail,      the node crashed; ``lost`` lists
                                                       lost                      the unflushed entries it lost
``restart``                       fault    the node    incarnation               the node restarted
``pause``                         fault    the node    -                         the node was paused (a zombie)
``resume``                        fault    the node    -                         the paused node resumed
``fault.skipped``                 fault    the node    kind, why                 a plan entry was moot (node
                                           or ``-``                              already down, unknown, ...)
``rule.add``                      fault    network     rule, action, src, dst,   a message fault rule was installed
                                                       kind, body
``partition``                     fault    network     a, b, one_way             a network partition began
``heal``                          fault    network     -                         every partition and clog ended
``clog``                          fault    network     a, b                      links clogged: messages queue
``unclog``                        fault    network     links                     clogged links released in order
``delay``                         fault    receiver    id, delay_ms              a rule delayed a message
``hold``                          fault    receiver    id, rule                  a rule held a message
``duplicate``                     fault    receiver    id                        a rule delivers a message twice
``release``                       fault    receiver    id                        a held message was released
================================  =======  ==========  ========================  ===================================

Network
~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``request``                       send     sender      to, id, msg, then the     a message of this kind was sent;
                                                       body's ``trace_detail``   ``msg`` is the body's type
``request``                       deliver  receiver    from, id, msg             ... was delivered
``request``                       drop     receiver    from, id, reason          ... was lost: ``reason`` is
                                                                                 partitioned, no such node, node
                                                                                 down, connection reset, rule <id>
``response``                      send     sender      as for ``request``        a response message was sent
``response``                      deliver  receiver    as for ``request``        ... was delivered
``response``                      drop     receiver    as for ``request``        ... was lost (as for ``request``)
``oneway``                        send     sender      as for ``request``        a oneway message was sent
``oneway``                        deliver  receiver    as for ``request``        ... was delivered
``oneway``                        drop     receiver    as for ``request``        ... was lost (as for ``request``)
``refused``                       drop     sender      to, id                    a request's destination was down:
                                                                                 the sender learns it (TCP RST)
``disconnect``                    drop     peer        from                      the process at the other end of a
                                                                                 connection died: the OS closed it
                                                                                 (in-flight requests fail)
================================  =======  ==========  ========================  ===================================

Fault sites
~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``site.enable``                   site     the asker   site, enabled             a site's once-per-run enable draw
``site.pass``                     site     the asker   site                      an enabled site did not fire
``site.fire``                     site     the asker   site, why                 a site fired (``forced``/``drawn``)
================================  =======  ==========  ========================  ===================================

Coverage marks
~~~~~~~~~~~~~~

================================  =======  ==========  ========================  ===================================
name                              kind     node        detail                    meaning
================================  =======  ==========  ========================  ===================================
``mark``                          mark     the node    label                     a coverage mark was hit (free text)
================================  =======  ==========  ========================  ===================================
"""

from __future__ import annotations

# -- world and phases ----------------------------------------------------------------------

RUN_START = "run.start"
PHASE_SAFETY = "phase.safety"
PHASE_HEAL = "phase.heal"
PHASE_LIVENESS = "phase.liveness"
PHASE_END = "phase.end"

#: The phases a run moves through, in order (``World.set_phase``).
PHASES: tuple[str, ...] = ("safety", "heal", "liveness", "end")

# -- faults --------------------------------------------------------------------------------

CRASH = "crash"
RESTART = "restart"
PAUSE = "pause"
RESUME = "resume"
FAULT_SKIPPED = "fault.skipped"
RULE_ADD = "rule.add"
PARTITION = "partition"
HEAL = "heal"
CLOG = "clog"
UNCLOG = "unclog"
DELAY = "delay"
HOLD = "hold"
DUPLICATE = "duplicate"
RELEASE = "release"

# -- network -------------------------------------------------------------------------------

MESSAGE_REQUEST = "request"
MESSAGE_RESPONSE = "response"
MESSAGE_ONEWAY = "oneway"
#: The message kinds, which name the network's send, deliver and drop events.
MESSAGE_KINDS: tuple[str, ...] = (MESSAGE_REQUEST, MESSAGE_RESPONSE, MESSAGE_ONEWAY)
REFUSED = "refused"
DISCONNECT = "disconnect"

# -- fault sites ---------------------------------------------------------------------------

SITE_ENABLE = "site.enable"
SITE_PASS = "site.pass"
SITE_FIRE = "site.fire"

# -- coverage marks ------------------------------------------------------------------------

MARK = "mark"

# -- kinds ---------------------------------------------------------------------------------

_PHASE = frozenset({"phase"})
_FAULT = frozenset({"fault"})
_SITE = frozenset({"site"})
_MESSAGE = frozenset({"send", "deliver", "drop"})

#: Every name of the world -> the kinds it is emitted with (keys of ``engine.sim.trace.SYMBOLS``).
KIND: dict[str, frozenset[str]] = {
    **dict.fromkeys((RUN_START, PHASE_SAFETY, PHASE_HEAL, PHASE_LIVENESS, PHASE_END), _PHASE),
    **dict.fromkeys(
        (
            CRASH,
            RESTART,
            PAUSE,
            RESUME,
            FAULT_SKIPPED,
            RULE_ADD,
            PARTITION,
            HEAL,
            CLOG,
            UNCLOG,
            DELAY,
            HOLD,
            DUPLICATE,
            RELEASE,
        ),
        _FAULT,
    ),
    **dict.fromkeys(MESSAGE_KINDS, _MESSAGE),
    REFUSED: frozenset({"drop"}),
    DISCONNECT: frozenset({"drop"}),
    **dict.fromkeys((SITE_ENABLE, SITE_PASS, SITE_FIRE), _SITE),
    MARK: frozenset({"mark"}),
}


def phase_event(phase: str) -> str:
    """Return the name of the event that enters ``phase`` (``"heal"`` -> ``"phase.heal"``).

    Raises :class:`ValueError` for a phase not in :data:`PHASES`.
    """
    if phase not in PHASES:
        msg = f"unknown phase {phase!r}; use one of {', '.join(PHASES)}"
        raise ValueError(msg)
    return f"phase.{phase}"
