"""Dashboard: the live cluster view you can play, pause, step, break and scrub back.

Role
----
An ``anywidget`` whose panels (:mod:`widgets.panels`) show a :class:`~widgets.live.LiveRun`'s
board: brokers, partitions, producers with their sequence windows, ``__transaction_state``, the
partition logs, read_committed vs read_uncommitted, the recent events with fault windows, and a
message sequence chart of one transaction. Its controls (in ``dashboard.js``) play and pause the
run at a rate of simulated ms per second, step one event or one request, scrub to any event,
and act on the thing that fails: crash or restart a broker, pause a producer into a zombie,
drop a producer's next acknowledgement.

Threads
-------
One pacer (:mod:`widgets.pacer`: a thread, or the asyncio loop where threads cannot start, as in
JupyterLite's Pyodide) wakes at most :data:`MAX_HZ` times a second. When playing it
advances the engine with ``cluster.run_for`` (journaled, under the run's lock); then it
publishes: it reads the board at the chosen event from the recorder, turns it into the frame
(:mod:`widgets.frame`: numbers and short strings, log tails packed) and sends the values that
changed since the frame last sent, in one custom message; the page (``dashboard.js``) keeps the
frame and draws every panel from it. A view that opens asks for the whole frame (``hello``).
While live a tick packs at most a few changed log tails (:data:`TAILS_PER_TICK`) and builds the
sequence chart at most every :data:`MSC_EVERY_S`, so its cost grows neither with the run nor with
the partitions. Clicks arrive on the kernel's main thread and act under the same lock. The
engine itself never sees a thread.

Time travel
-----------
``scrub`` is -1 for "live" or an event index: every panel then shows the board after that
event (exact, from the recorder), and the status bar shows the notes of that moment. Acting
on the run while scrubbed back forks: the journal replays the run up to that event in a new
cluster and the action applies there. A fork drops every later event and the clients created
after it (the notebook's names move to the fork), so a click never forks at once: it sets
``confirm``, a question the page shows with a button to fork, one to cancel and one to go live;
only the fork button's message (``fork``) acts. (A call of :meth:`Dashboard.act` from Python
is its own confirmation.) The owner may pass ``fork(index)`` to do the forking itself (the
magics' session rebinds its names and client history), and the dashboard follows the new run.

Playing
-------
``rate`` simulated ms pass per wall-clock second, :data:`DEFAULT_RATE` by default: slow enough
to watch a transaction's few requests one after the other. Most of a fault's story is waiting
(a crashed leader is noticed only when its broker session times out, 9 s later), and nothing
on the board moves meanwhile; so while no row changes, play runs at up to :data:`QUIET_RATE`
and slows down again at the first change (see :meth:`Dashboard.step_publish`).

Invariants
----------
* Showing, scrubbing or closing the dashboard never changes the run: the pacer only reads,
  and only play and the action buttons drive the engine, through the journal.
* Offline: the script and styles are files next to this module, loaded by anywidget from the
  kernel; nothing comes from a CDN.
* Where no front-end runs (a saved notebook reopened, nbviewer, GitHub, an untrusted notebook),
  the static picture shows what the dashboard showed last: displayed, the dashboard is two
  outputs, the widget and its picture (:mod:`widgets.picture`: HTML that JupyterLab's sanitiser
  keeps as drawn, drawn in Python by :mod:`widgets.panels`), the picture under a display id that
  :meth:`Dashboard.update_picture` updates at the end of every cell, when the run stands still (the
  first tick that finds nothing new) and on close, so a saved notebook shows the end of the run.
  The live widget hides its own picture while it shows (``dashboard.js``); closed, the picture
  is what is left.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from html import escape
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from engine import trace_events as ev
from engine.views.recorder import CLIENT_TXN_EVENTS
from engine.views.sequence_chart import transaction_chart
from widgets import frame, panels, picture
from widgets.live import LiveRun
from widgets.pacer import MAX_HZ, pacer_for
from widgets.sequence_svg import chart_values, sequence_svg

#: Panel traits, in page order.
PANELS = ("brokers", "partitions", "producers", "txns", "groups", "logs", "reads", "timeline", "msc")
#: Simulated ms per wall-clock second when playing, by default.
DEFAULT_RATE = 200
#: While playing through a stretch in which no row of the board changes, up to this many simulated
#: ms per second: a 9 s wait for a broker session to time out takes about a second to watch.
QUIET_RATE = 10_000
#: A quiet stretch is run in steps of at least this many simulated ms, checking for a change after each.
QUIET_STEP_MS = 100
#: ...and for at most this much wall time per pacer tick.
QUIET_BUDGET_S = 0.05
#: The actions that change the run, and what each does (the words of the fork question).
RUN_ACTIONS = {
    "play": "play",
    "step": "step one event",
    "step-request": "run to the next request",
    "crash": "crash {node}",
    "restart": "restart {node}",
    "pause-node": "pause {node}",
    "resume": "resume {node}",
    "drop-ack": "drop the next acknowledgement to {node}",
}
#: The break buttons (their ops in ``dashboard.js``) and the verb of :mod:`engine.fault_verbs` each speaks.
FAULT_BUTTONS = {
    "crash": "crash",
    "restart": "restart",
    "pause-node": "pause",
    "resume": "resume",
    "drop-ack": "lose-next-ack",
}
#: Journaled calls a fork can stop inside (the others it stops before).
#: How many of the clients a fork drops the question names (then "and N more").
_NAMED = 3
_CUTTABLE = frozenset({("cluster", "run_for"), ("cluster", "run_until"), ("cluster", "step")})
#: The status bar keeps at most this many notes (each with the event it was written at).
MAX_NOTES = 200
#: While live, a tick packs at most this many changed log tails, or as many as lets every tail
#: wait at most :data:`TAIL_TICKS` ticks (the ones packed longest ago first): a busy run's logs
#: change every tick, and packing all of them would make a tick's cost grow with the partitions.
TAILS_PER_TICK = 2
TAIL_TICKS = 5
#: While live, the sequence chart is drawn again at most this often (seconds of wall time).
MSC_EVERY_S = 1.0

_HERE = Path(__file__).parent


def _panel(name: str) -> property:
    """A panel's HTML at the event shown now, as the static picture draws it (the page draws from the frame)."""
    return property(lambda self: self._panels_html()[name], doc=f"The {name} panel's HTML (read-only).")


class Dashboard(anywidget.AnyWidget):
    """The live dashboard of one run (see the module docstring)."""

    _esm = _HERE / "dashboard.js"
    _css = _HERE / "dashboard.css"

    brokers = _panel("brokers")
    partitions = _panel("partitions")
    producers = _panel("producers")
    txns = _panel("txns")
    groups = _panel("groups")
    logs = _panel("logs")
    reads = _panel("reads")
    timeline = _panel("timeline")
    msc = _panel("msc")
    #: The question a click on the run while rewound asks before forking ({} : none); see the module docstring.
    confirm = traitlets.Dict().tag(sync=True)
    txn_ids = traitlets.List(traitlets.Unicode()).tag(sync=True)
    msc_txn = traitlets.Unicode("").tag(sync=True)
    #: The partitions the reads panel can show, and the chosen one ("" : the first with records).
    partition_names = traitlets.List(traitlets.Unicode()).tag(sync=True)
    reads_tp = traitlets.Unicode("").tag(sync=True)
    scrub = traitlets.Int(-1).tag(sync=True)
    playing = traitlets.Bool(False).tag(sync=True)
    rate = traitlets.Int(DEFAULT_RATE).tag(sync=True)
    #: The name of this dashboard's static picture (its display id, and its class): the page hides it while live.
    picture = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        run: LiveRun,
        *,
        title: str = "cluster",
        fork: Callable[[int], tuple[LiveRun, int]] | None = None,
        pacer: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.title = title
        self._fork = fork if fork is not None else (lambda i: self.run.fork(i))
        self.forks = 0
        #: (event index, text): what the status bar says from that event on
        self.notes: list[tuple[int, str]] = []
        self.quiet = False
        #: time_ms, index, first, last, live, title, note, forks, quiet (the page gets it in the frame, key ``st``)
        self.status: dict[str, Any] = {}
        self._shown: tuple[Any, ...] = ()
        self._drawn: dict[str, tuple[Any, Any]] = {}
        self._msc_at = 0.0
        #: How many sequence charts were built (a bench tells the ticks that built one apart).
        self.charts_built = 0
        #: The panels' HTML (the picture's, and what Python reads) for the key it was drawn at.
        self._html: tuple[Any, dict[str, str]] = ((), {})
        #: The frame last sent to the page (:mod:`widgets.frame`), and its encoder.
        self._sent: dict[str, Any] = {}
        self._encoder = frame.Encoder()
        #: A throttled panel was sent as it was: publish again when its time comes, changed or not.
        self._behind = False
        self._scan = _TraceScan()
        self._publishing = threading.RLock()
        self.picture = f"eos-{self.model_id or id(self)}"
        #: The picture's HTML as last sent, and when (None: not displayed, nothing to update).
        self._picture_sent: str | None = None
        #: The run moved since the picture was last sent.
        self._picture_stale = False
        self._cell_hook: Any = None
        self.on_msg(self._on_action)
        self.observe(self._on_control, names=["scrub", "msc_txn", "reads_tp"])
        self.publish()
        self.pacer = pacer_for(self) if pacer else None
        if self.pacer is not None:
            self.pacer.start()

    # -- publishing -----------------------------------------------------------------------------

    def index(self) -> int:
        """Return the event the panels show: the scrubbed one, or the latest."""
        rec = self.run.recorder
        if 0 <= self.scrub < rec.last_index:
            return max(self.scrub, rec.first_index)
        return rec.last_index

    @property
    def rewound(self) -> bool:
        """True while the panels show an earlier event than the latest."""
        return 0 <= self.scrub < self.run.recorder.last_index

    def note_at(self, index: int) -> str:
        """Return the status bar's note at ``index``: the latest written at or before it.

        A note is stamped with the event the dashboard showed when it was written, so scrubbing
        back before a crash no longer says the broker crashed.
        """
        for at, text in reversed(self.notes):
            if at <= index:
                return text
        return ""

    def say(self, text: str) -> None:
        """Add a note to the status bar, stamped with the event shown now."""
        if text:
            self.notes.append((self.index(), text))
            del self.notes[:-MAX_NOTES]

    def render(self, board: Any = None) -> dict[str, str]:
        """Return every panel's HTML for ``board`` (the board at :meth:`index` by default).

        A panel is rendered again only when what it shows changed (its rows, compared by
        identity first: the recorder hands out the same row objects until a row changes), so a
        tick of a busy run redraws the few panels that moved.
        """
        if board is None:
            board = self.run.recorder.at(self.index())
        index = board.event_index
        self._scan.advance(self.run.cluster.world.trace.events, self.run.recorder)
        hues = panels.producer_palette(board)
        zombies = panels.fenced_epochs(board)
        look = (tuple(hues.items()), frozenset(zombies))
        fresh = frozenset(k for k, when in board.changed.items() if when > 0 and index - when <= panels.FRESH_EVENTS)
        memo = self._memo
        out = {
            "brokers": memo("brokers", (board.brokers, board.controller, fresh), panels.brokers_panel, board),
            # a leader's status says why its offsets are unknown: the broker rows are in the keys
            "partitions": memo("partitions", (board.partitions, board.brokers, fresh), panels.partitions_panel, board),
            "producers": memo(
                "producers",
                (board.producers, board.partitions, board.brokers, board.txns, look, fresh),
                panels.producers_panel,
                board,
            ),
            "txns": memo("txns", (board.txns, fresh), panels.txns_panel, board),
            "groups": memo("groups", (board.groups, fresh), panels.groups_panel, board),
            "logs": self._logs(board, hues, zombies, look),
            "reads": memo(
                "reads",
                (board.partitions, board.brokers, board.logs, board.consumers, self.reads_tp),
                lambda b: panels.reads_panel(b, *self._reads_target()),
                board,
            ),
            "timeline": memo(
                "timeline",
                (index, board.time_ms, len(self._scan.faults)),
                lambda b: panels.timeline_panel(
                    self.run.cluster.world.trace.events, index, b.time_ms, faults=self._scan.faults
                ),
                board,
            ),
            "msc": self._msc(index),
        }
        return out

    def _logs(self, board: Any, hues: dict[int, int], zombies: set[tuple[int, int]], look: Any) -> str:
        """The log strips, each partition's drawn again only when its tail, offsets or colours changed."""
        parts = {p.key: p for p in board.partitions}
        legend = panels.log_legend(board, hues, zombies)
        strips = []
        for tail in board.logs:
            p = parts.get((tail.topic, tail.partition))
            why = panels.offsets_unknown(board, p) if p is not None else ""
            key = (tuple(map(id, tail.batches)), p, why, look, tuple(legend))
            strips.append(
                self._memo(
                    f"log:{tail.topic}-{tail.partition}",
                    key,
                    lambda _b, tail=tail, p=p, why=why: panels.log_strip_html(tail, p, hues, zombies, legend, why),
                    board,
                )
            )
        html = "".join(strips) or '<div class="eos-empty">no topics yet</div>'
        self._drawn["logs"] = (None, html)
        return html

    def _memo(self, name: str, key: Any, draw: Callable[[Any], str], board: Any) -> str:
        have = self._drawn.get(name)
        if have is not None and have[0] == key:
            return have[1]
        html = draw(board)
        self._drawn[name] = (key, html)
        return html

    def _reads_target(self) -> tuple[str | None, int]:
        topic, _, partition = self.reads_tp.rpartition("-")
        if topic and partition.isdigit():
            return topic, int(partition)
        return None, 0

    def _msc_chart(self, index: int) -> tuple[Any, Any]:
        """``(key, chart)``: the sequence chart of the chosen id's latest transaction up to ``index``.

        ``chart`` is a :class:`~engine.views.sequence_chart.SequenceChart`, or the text to show
        instead. Built from that transaction's own stretch of the trace (found by
        :class:`_TraceScan`, not by reading the whole trace), and while live at most once per
        :data:`MSC_EVERY_S`.
        """
        tid = self.msc_txn or (self.txn_ids[0] if self.txn_ids else "")
        if not tid:
            return ("none",), "no transaction yet"
        window = self._scan.window(tid, index)
        if window is None:
            return ("none", tid), f"no transaction of {tid} yet"
        key = (id(self.run), tid, window.begin, window.upto(index))
        live = index == self.run.recorder.last_index
        have = self._drawn.get("msc-chart")
        if have is not None and have[0] == key:
            return have
        if have is not None and live and time.monotonic() - self._msc_at < MSC_EVERY_S:
            self._behind = True
            return have
        events = self.run.cluster.world.trace.events
        picked = [events[i] for i in window.prefix] + events[window.start : window.upto(index) + 1]
        try:
            chart: Any = transaction_chart(picked, tid)
            chart = dataclasses.replace(chart, occurrence=window.occurrence, count=window.count)
        except ValueError as exc:
            chart = str(exc)
        self._drawn["msc-chart"] = (key, chart)
        self._msc_at = time.monotonic()
        self.charts_built += 1
        return key, chart

    def _msc(self, index: int) -> str:
        """The sequence chart as the picture draws it (:func:`~widgets.sequence_svg.sequence_svg`)."""
        key, chart = self._msc_chart(index)
        have = self._drawn.get("msc")
        if have is None or have[0] != key:
            html = f'<div class="eos-empty">{escape(chart)}</div>' if isinstance(chart, str) else sequence_svg(chart)
            have = self._drawn["msc"] = (key, html)
        return have[1]

    def _msc_values(self, index: int) -> dict[str, Any]:
        """The sequence chart as the frame sends it (:func:`~widgets.sequence_svg.chart_values`)."""
        key, chart = self._msc_chart(index)
        have = self._drawn.get("msc-values")
        if have is None or have[0] != key:
            values = {"empty": chart} if isinstance(chart, str) else chart_values(chart)
            have = self._drawn["msc-values"] = (key, values)
        return have[1]

    def publish(self, *, force: bool = False) -> bool:
        """Render and send what changed since the last publish; return True if anything was sent.

        Called by the pacer thread and by controls on the kernel's thread, one at a time. It
        reads the recorder without the run's lock (the recorder only appends), so a long cell
        that holds the lock still shows live.
        """
        with self._publishing:
            return self._publish(force)

    def _publish(self, force: bool) -> bool:
        rec = self.run.recorder
        index = self.index()
        key = self._shown_key(index)
        if key == self._shown and not force and not self._behind:
            if self._picture_stale:  # the run stands still: bring the notebook's picture up to date now
                self._update_picture()
            return False
        self._shown, self._behind = key, False
        board = rec.at(index)
        events = self.run.cluster.world.trace.events
        self._scan.advance(events, rec)
        ids = sorted({t.transactional_id for t in board.txns})
        if ids != self.txn_ids:
            self.txn_ids = ids  # before the chart: its default id is the first (a trait: sent when it changes)
        names = [f"{p.topic}-{p.partition}" for p in board.partitions]
        if names != self.partition_names:
            self.partition_names = names
        self.status = {
            "title": self.title,
            "seed": self.run.cluster.seed,
            "time_ms": board.time_ms,
            "now_ms": self.run.cluster.now_ms,
            "index": index,
            "first": rec.first_index,
            "last": rec.last_index,
            "live": index == rec.last_index,
            "note": self.note_at(index),
            "forks": self.forks,
            "quiet": self.quiet,
        }
        live = index == rec.last_index and not force
        budget = max(TAILS_PER_TICK, -(-len(board.logs) // TAIL_TICKS)) if live else None
        now = self._encoder.frame(board, events, self._scan.faults, tail_budget=budget)
        if self._encoder.tails_behind:
            self._behind = True  # the next tick packs the tails left as they were
        now["st"] = self.status
        now["msc"] = self._msc_values(index)
        now["rtp"] = self.reads_tp
        changed, gone = frame.diff(self._sent, now)
        self._sent = now
        if changed or gone:
            self.send(*frame.message(changed, gone))
        self._picture_stale = self._picture_sent is not None
        if force:
            self._update_picture()
        return True

    @property
    def sent_frame(self) -> dict[str, Any]:
        """The frame last sent to the page (:mod:`widgets.frame`; read it, do not change it)."""
        return self._sent

    def _send_frame(self) -> None:
        """Send the whole frame last sent (a page that opens a view asks for it: ``hello``)."""
        with self._publishing:
            self.send(*frame.message(self._sent, [], full=True))

    def _panels_html(self) -> dict[str, str]:
        """Every panel's HTML at the event shown now (drawn once per shown moment)."""
        index = self.index()
        key = self._shown_key(index)
        with self._publishing:
            if self._html[0] != key:
                self._html = (key, self.render(self.run.recorder.at(index)))
            return self._html[1]

    def _shown_key(self, index: int) -> tuple[Any, ...]:
        """What the panels show at ``index`` depends on: the moment, how far the run went, the choices, the run."""
        return (index, self.run.recorder.last_index, self.msc_txn, self.reads_tp, id(self.run))

    def snapshot_html(self) -> str:
        """Return the static picture of what the panels show now (:mod:`widgets.picture`)."""
        return self._picture_html(self._panels_html(), self.status)

    def _picture_html(self, rendered: dict[str, str], s: dict[str, Any]) -> str:
        head = (
            f"{self.title} · seed {s.get('seed')} · t={s.get('time_ms')} ms · event {s.get('index')} of {s.get('last')}"
        )
        if not s.get("live", True):
            head += " (rewound)"
        panes = [(n, _TITLES[n], rendered.get(n, "")) for n in PANELS]
        return picture.picture_html(self.picture, head, s.get("note", ""), panes)

    def update_picture(self) -> None:
        """Send the static picture of what the dashboard shows now, if it changed (see the module docstring)."""
        with self._publishing:
            self._update_picture()

    def _update_picture(self) -> None:
        if self._picture_sent is None:
            return  # not displayed
        self._picture_stale = False
        html = self.snapshot_html()
        if html != self._picture_sent:
            from IPython.display import update_display

            self._picture_sent = html
            try:
                update_display({"text/html": html}, raw=True, display_id=self.picture)
            except Exception:  # a front-end without display updates keeps its first picture; the live view goes on
                self._picture_sent = None

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        if isinstance(bundle, tuple):
            data, meta = bundle
        else:
            data, meta = bundle, {}
        data = dict(data or {})
        data["text/html"] = self.snapshot_html()
        return data, meta

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Display the widget, then its static picture under :attr:`picture` as display id."""
        from IPython import get_ipython
        from IPython.display import display

        data, meta = self._repr_mimebundle_(**kwargs)
        html = data.pop("text/html")
        data["text/plain"] = f"{self.title}: the eos dashboard (live where its kernel runs; its picture follows)"
        display(data, metadata=meta, raw=True)
        self._picture_sent = html
        display({"text/html": html}, raw=True, display_id=self.picture)
        shell = get_ipython()
        if shell is not None and self._cell_hook is None:
            self._cell_hook = shell.events
            shell.events.register("post_run_cell", self._after_cell)

    def _after_cell(self, *_args: Any) -> None:
        """At the end of every cell the picture is brought up to date (what a saved notebook keeps)."""
        try:
            self.publish()
            self.update_picture()
        except Exception:  # a picture never breaks the user's cell
            pass

    # -- controls and actions ---------------------------------------------------------------------

    def _on_control(self, change: dict[str, Any]) -> None:
        if change["name"] == "scrub" and self.confirm:
            self.confirm = {}  # the question was about the event shown before
        self.publish()

    def _on_action(self, widget: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("op") == "hello":  # a view opened: it draws from the whole frame
            self._send_frame()
            return
        try:
            self.say(self.click(str(content.get("op", "")), str(content.get("node", ""))))
        except Exception as exc:  # a refused action is shown, never raised into the kernel
            self.say(f"{type(exc).__name__}: {exc}")
        self.publish(force=True)

    def click(self, op: str, node: str = "") -> str:
        """Answer a click of the page (what :meth:`act` does, but asking before a fork); return a note.

        While rewound, an action that changes the run (:data:`RUN_ACTIONS`) only sets
        ``confirm``; ``fork`` then does the action asked about, ``cancel`` forgets it.
        """
        if op == "fork":
            asked, self.confirm = self.confirm, {}
            if not asked:
                return "nothing to fork: no action was waiting"
            if asked["index"] != self.index():
                return "not forked: the dashboard moved since the question"
            return self.act(asked["op"], asked["node"])
        if op == "cancel":
            self.confirm = {}
            return "cancelled: nothing forked"
        if op in RUN_ACTIONS and self.rewound:
            self.confirm = self.question(op, node)
            return ""
        return self.act(op, node)

    def question(self, op: str, node: str = "") -> dict[str, Any]:
        """Return what to ask before forking here to do ``op``: the text, and the fork button's words.

        Two short sentences: where the run forks, and what it drops (the later events and the
        clients the user made after that point; the checker's own final readers are not named).
        """
        from engine.scenarios.supervisor import is_check_reader

        rec = self.run.recorder
        index, last = self.index(), rec.last_index
        call = self._uncut_call(index)
        point = index if call is None else max(rec.first_index, call.start_index - 1)
        then, now = rec.at(point), rec.latest()
        had = {r.name for r in (*then.producers, *then.consumers)}
        lost = [r.name for r in (*now.producers, *now.consumers) if r.name not in had]
        lost = list(dict.fromkeys(n for n in lost if not is_check_reader(n)))  # the user's own clients only
        where = "there"
        if point != index:  # a call that waits cannot be cut: say where the fork really starts
            began = "the final check's read" if is_check_reader(call.target) else f"{call.target}.{call.method}()"
            where = f"from event {point}, where {began} began"
        clients = ""
        if lost:
            more = f" and {len(lost) - _NAMED} more" if len(lost) > _NAMED else ""
            clients = f" and the clients {', '.join(lost[:_NAMED])}{more}"
        text = (
            f"Acting at event {index} of {last} forks the run {where}. "
            f"It drops the {last - point} later events{clients}; the notebook's names move to the fork."
        )
        what = RUN_ACTIONS[op].format(node=node)
        return {"op": op, "node": node, "index": index, "last": last, "text": text, "fork": f"Fork here and {what}"}

    def _uncut_call(self, index: int) -> Any:
        """Return the journaled client call running at ``index`` that a fork cannot stop inside, or None.

        A fork stops after the handler of ``index`` when that is inside ``run_for``, ``run_until``
        or ``step``, but before a client call that waits (``flush``, ``consume`` ...):
        :meth:`engine.journal.Journal.fork`. The question says where the fork really starts.
        """
        for entry in self.run.journal.entries:
            if entry.start_index > index + 1:
                break
            if entry.end_index > index + 1 and (entry.target, entry.method) not in _CUTTABLE:
                return entry
        return None

    def live(self) -> None:
        """Show the latest event again (and forget a question about an earlier one)."""
        self.scrub = -1
        self.publish()

    def act(self, op: str, node: str = "") -> str:
        """Do one control or fault action; return a one-line note for the status bar.

        ``op`` is play, pause, step (one event), step-request (until the next request is sent),
        live, or a fault on ``node``: crash, restart, pause-node, resume, drop-ack. An action on
        the run while scrubbed back forks the run at the scrubbed event first: called from
        Python, ``act`` is its own confirmation (a click asks first, see :meth:`click`).
        """
        if op == "pause":
            self.playing = False
            return "paused"
        if op == "live":
            self.live()
            return ""
        if op not in RUN_ACTIONS:
            msg = f"unknown action {op!r}"
            raise ValueError(msg)
        forked = self._fork_if_scrubbed()
        text = self._do(op, node)
        return f"{forked}; {text}" if forked else text

    def _do(self, op: str, node: str) -> str:
        if op == "play":
            self.playing = True
            return "playing"
        if op in ("step", "step-request"):
            return self._step(op)
        from engine import fault_verbs

        verb = FAULT_BUTTONS[op]
        if verb == "lose-next-ack":
            fault_verbs.lose_next_ack(self.run.cluster, dst=node)
            return f"{node}: next ProduceResponse dropped"
        fault_verbs.node_fault(self.run.cluster, verb, node)
        done = {"pause": "paused", "crash": "crashed", "restart": "restarted", "resume": "resumed"}
        return f"{node} {done[verb]}"

    def _step(self, op: str) -> str:
        cluster = self.run.cluster
        trace = cluster.world.trace
        start = trace.count
        if op == "step":
            ran = cluster.step(1)
            return f"stepped {ran} event handler ({trace.count - start} trace events)"
        seen = [start]

        def sent_request() -> bool:
            events = trace.events
            for e in itertools.islice(events, seen[0], None):
                if e.kind == "send" and e.name == ev.MESSAGE_REQUEST:
                    return True
            seen[0] = len(events)
            return False

        cluster.run_until(lambda: sent_request() or cluster.world.scheduler.next_due_ms() is None)
        return f"ran to the next request ({trace.count - start} trace events)"

    def _fork_if_scrubbed(self) -> str:
        rec = self.run.recorder
        if not 0 <= self.scrub < rec.last_index:
            return ""
        run, stop = self._fork(self.scrub)
        self.follow(run)
        self.forks += 1
        return f"forked at event {stop}"

    def follow(self, run: LiveRun) -> None:
        """Show another run from now on (a fork of this one), live.

        The notes written up to the fork point stay: the fork shares that history.
        """
        self.run = run
        self._drawn.clear()
        self._encoder.forget()
        self._scan = _TraceScan()
        self.notes = [n for n in self.notes if n[0] <= run.recorder.last_index]
        self.confirm = {}
        self.scrub = -1
        self.publish(force=True)

    def step_publish(self) -> None:
        """Advance one pacer tick of play (when playing), then publish; the pacer calls this."""
        self.quiet = False
        if self.playing and self.scrub < 0:
            try:
                self._play_tick()
            except Exception as exc:  # a stalled or refused run stops play and says why
                self.playing = False
                self.say(f"stopped: {type(exc).__name__}: {exc}")
        self.publish()

    def _play_tick(self) -> None:
        """Run one tick's share of ``rate``; while nothing on the board changed, go on up to :data:`QUIET_RATE`.

        Quiet steps are :data:`QUIET_STEP_MS` (or the tick's share, if larger), so the first
        change after a quiet stretch is shown at most one step late. Every step is a journaled
        ``run_for``: replay and fork see the same calls, however the wall clock cut them.
        """
        cluster, rec = self.run.cluster, self.run.recorder
        ms = max(1, self.rate // MAX_HZ)
        before = rec.changes()
        cluster.run_for(ms)
        step, budget = max(ms, QUIET_STEP_MS), QUIET_RATE // MAX_HZ - ms
        deadline = time.monotonic() + QUIET_BUDGET_S
        while budget >= step and rec.changes() == before and time.monotonic() < deadline:
            cluster.run_for(step)
            budget -= step
            self.quiet = True

    def close(self) -> None:
        """Stop the pacer and close the widget (the run is left as it is)."""
        if self.pacer is not None:
            self.pacer.stop()
        if self._cell_hook is not None:
            try:
                self.update_picture()
            finally:
                self._cell_hook.unregister("post_run_cell", self._after_cell)
                self._cell_hook = None
        super().close()


_TITLES = {
    "brokers": "Brokers",
    "partitions": "Partitions",
    "producers": "Producers",
    "txns": "__transaction_state",
    "groups": "Consumer groups",
    "logs": "Partition logs",
    "reads": "read_committed vs read_uncommitted",
    "timeline": "Recent events",
    "msc": "Transaction sequence chart",
}


@dataclasses.dataclass
class _TxnWindow:
    """Where the latest transaction of an id up to some event lies in the trace."""

    #: Events to put first (the producer's ``txn.init``, which names its producer id).
    prefix: tuple[int, ...]
    #: The first event of the transaction's stretch (just after the producer's previous end).
    start: int
    begin: int
    #: The first event after the stretch (the id's next begin), or None while it is the last.
    stop: int | None
    occurrence: int
    count: int

    def upto(self, index: int) -> int:
        return index if self.stop is None else min(index, self.stop - 1)


class _TraceScan:
    """Take in each transaction begin/end/init event and each fault once, as the recorder collects them.

    The dashboard asks, every tick, where the chosen id's latest transaction lies and which
    faults happened; reading the whole trace each time would grow with the run, and reading
    each new event would grow with the engine's pace.
    """

    _TXN = CLIENT_TXN_EVENTS

    def __init__(self) -> None:
        #: How many of the recorder's transaction and fault events were taken in (-1: none yet).
        self.cursor = -1
        self.fault_cursor = -1
        #: transactional id -> the indexes of its begins, and the node of each
        self.begins: dict[str, tuple[list[int], list[str]]] = {}
        #: (transactional id, node, name) -> the indexes of that node's init, commit or abort events of the id
        self.marks: dict[tuple[str, str, str], list[int]] = {}
        #: every fault event, in order
        self.faults: list[Any] = []
        #: the index of each producer's first event (found when a window asks)
        self.first_seen: dict[str, int] = {}
        self._events: list[Any] = []

    def advance(self, events: list[Any], recorder: Any) -> None:
        """Take in the transaction and fault events new since the last call.

        The recorder collects them as the run goes (``txn_events``, ``fault_events``); only the
        events before it started watching are read from the trace, once.
        """
        self._events = events
        if self.cursor < 0:
            self._take(itertools.islice(events, recorder.seen_from), itertools.islice(events, recorder.seen_from))
            self.cursor = self.fault_cursor = 0
        txn, faults = recorder.txn_events, recorder.fault_events
        t_end, f_end = len(txn), len(faults)
        self._take(itertools.islice(txn, self.cursor, t_end), itertools.islice(faults, self.fault_cursor, f_end))
        self.cursor, self.fault_cursor = t_end, f_end

    def _take(self, txn_events: Iterable[Any], fault_events: Iterable[Any]) -> None:
        names = self._TXN
        for e in txn_events:
            if e.kind != "state" or e.name not in names:
                continue
            tid = e.get("txn_id")
            if tid is None:
                continue
            if e.name == ev.TXN_BEGIN:
                at, nodes = self.begins.setdefault(tid, ([], []))
                at.append(e.index)
                nodes.append(e.node)
            else:
                self.marks.setdefault((tid, e.node, e.name), []).append(e.index)
        self.faults.extend(e for e in fault_events if e.kind == "fault")

    def _first_event(self, node: str) -> int:
        """The index of ``node``'s first event (read once per node, from the start of the trace)."""
        first = self.first_seen.get(node)
        if first is None:
            first = next((e.index for e in self._events if e.node == node), 0)
            self.first_seen[node] = first
        return first

    def window(self, tid: str, index: int) -> _TxnWindow | None:
        """Where the latest transaction of ``tid`` begun at or before ``index`` lies (bisections, not scans)."""
        at, nodes = self.begins.get(tid, ((), ()))
        k = bisect.bisect_right(at, index)
        if k == 0:
            return None
        begin, node = at[k - 1], nodes[k - 1]
        start, prefix = self._first_event(node), ()
        ends = [
            ids[bisect.bisect_left(ids, begin) - 1]
            for name in (ev.TXN_COMMIT, ev.TXN_ABORT)
            if (ids := self.marks.get((tid, node, name))) and ids[0] < begin
        ]
        if ends:
            start = max(ends) + 1
        inits = self.marks.get((tid, node, ev.TXN_INIT), [])
        i = bisect.bisect_left(inits, start)
        if i:
            prefix = (inits[i - 1],)
        stop = at[k] if k < len(at) and at[k] <= index else None
        return _TxnWindow(prefix, start, begin, stop, k - 1, k)
