"""The dashboard's panels as HTML strings, from a frozen board (:mod:`engine.views.board`).

Role
----
One function per panel, each a pure function of a :class:`~engine.views.board.BoardState` (and,
for the timeline, the trace events up to the board's index). They draw the static picture
(nbconvert, GitHub, a saved notebook: :mod:`widgets.picture`); the live page draws the same
markup from the frame's values (``dashboard.js``, checked equal by
``tests/widgets/test_widgets_frame_drawing.py``), so an executed notebook shows what the widget
showed.

One colour per identity (views.md, lesson 2): each producer id has a hue, each of its epochs a
shade, and batches of a fenced epoch are grey; whether a transaction is open, committed or
aborted is told by the border (dashed, solid, hatched), never by another colour. Broker and node
status is the only traffic-light colour (up, paused, down).

A value nobody can know now is shown as unknown (:data:`UNKNOWN`, with the reason on hover),
never as the engine's ``-1``: a partition whose leader is down or paused has no LEO, HW or LSO
(the board says -1), and a producer has no id before ``InitProducerId`` answers.

Buttons carry ``data-op`` and ``data-node`` attributes; the widget's script turns a click into an
action message (crash, restart, pause, resume, drop the next ack). In a static page they do
nothing.

Invariants
----------
* Deterministic: the same board gives the same bytes (no clock, no ids, fixed orders).
* Everything the engine names is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from engine import trace_events as ev
from engine.views.board import BoardState, LogTail, PartitionRow, ProducerRow
from widgets import svg

#: Rows changed within this many trace events of the board's index are highlighted.
FRESH_EVENTS = 60
#: Timeline lines shown.
TIMELINE_LINES = 14
#: What a value nobody knows now looks like (the engine's -1).
UNKNOWN = "—"

_HUES = (212, 28, 280, 160, 340, 95, 190, 250)
_STATUS = {"up": "eos-up", "paused": "eos-paused", "down": "eos-down"}
_FENCED_GREY = "#9aa0a6"


# -- colours ------------------------------------------------------------------------------------


def producer_palette(board: BoardState) -> dict[int, int]:
    """Return a hue per producer id, in the order ids first appear on the board (deterministic)."""
    order: dict[int, int] = {}

    def see(pid: int) -> None:
        if pid >= 0 and pid not in order:
            order[pid] = _HUES[len(order) % len(_HUES)]

    for p in board.producers:
        see(p.producer_id)
    for t in board.txns:
        see(t.producer_id)
    for tail in board.logs:
        for b in tail.batches:
            see(b.producer_id)
    return order


def fenced_epochs(board: BoardState) -> set[tuple[int, int]]:
    """Return the ``(producer id, epoch)`` pairs of fenced producers: zombies.

    A producer is fenced when its coordinator moved its transactional id to a newer epoch that
    the producer did not take itself: another instance ran ``init_transactions``, or its
    transaction timed out. Under transaction version 2 every commit or abort also bumps the
    epoch (KIP-890), but the producer learns that epoch in the EndTxn answer, so an epoch
    behind the coordinator's counts only when the producer is not ending a transaction, or
    when a broker already told it ``ProducerFencedException``.
    """
    coordinator = {t.transactional_id: t for t in board.txns}
    out: set[tuple[int, int]] = set()
    for p in board.producers:
        if p.producer_id < 0:
            continue
        if p.error in ("ProducerFencedException", "InvalidProducerEpochException"):
            out.add((p.producer_id, p.epoch))
            continue
        t = coordinator.get(p.transactional_id) if p.transactional_id else None
        ending = p.state in ("COMMITTING_TRANSACTION", "ABORTING_TRANSACTION")
        if t is not None and not ending and (t.producer_id, t.epoch) > (p.producer_id, p.epoch):
            out.add((p.producer_id, p.epoch))
    return out


def batch_colour(pid: int, epoch: int, hues: dict[int, int], fenced: set[tuple[int, int]]) -> str:
    """Return a batch's fill: its producer's hue, one shade per epoch, grey if that epoch is fenced."""
    if pid < 0:
        return svg.COLOURS["plain"]
    if (pid, epoch) in fenced:
        return _FENCED_GREY
    hue = hues.get(pid, 0)
    lightness = (38, 50, 62, 44, 56)[epoch % 5]
    return f"hsl({hue},62%,{lightness}%)"


# -- small writers ------------------------------------------------------------------------------


def _table(cls: str, headers: Sequence[str], rows: Iterable[str], empty: str) -> str:
    body = "".join(rows)
    if not body:
        return f'<div class="eos-empty {cls}">{escape(empty)}</div>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f'<table class="eos-table {cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _button(op: str, node: str, text: str, title: str) -> str:
    return (
        f'<button class="eos-act" data-op="{escape(op)}" data-node="{escape(node)}" '
        f'title="{escape(title)}">{escape(text)}</button>'
    )


def _fresh(board: BoardState, key: tuple[str, Any]) -> str:
    when = board.changed.get(key, -1)
    return " eos-fresh" if when >= 0 and board.event_index - when <= FRESH_EVENTS and when > 0 else ""


def _status(status: str) -> str:
    return f'<span class="eos-status {_STATUS.get(status, "")}">{escape(status)}</span>'


def _range(a: int, b: int) -> str:
    if a < 0 or b < 0:
        return UNKNOWN
    return str(a) if a == b else f"{a}..{b}"


def _known(value: int, why: str) -> str:
    """``value``, or :data:`UNKNOWN` saying ``why`` on hover when it is negative (the engine's "unknown")."""
    if value >= 0:
        return str(value)
    return f'<span class="eos-unknown" title="unknown: {escape(why)}">{UNKNOWN}</span>'


def offsets_unknown(board: BoardState, p: PartitionRow) -> str:
    """Return why a partition's LEO, HW and LSO are unknown now ("" when they are known).

    The board reads them from the leader; a leader that is down or paused answers nothing.
    """
    if p.leo >= 0:
        return ""
    if p.leader < 0:
        return "the partition has no leader"
    status = _broker_status(board, p.leader)
    if status in ("down", "paused"):
        return f"leader {p.leader} is {status}"
    return f"leader {p.leader} has not loaded the partition"


def _broker_status(board: BoardState, broker_id: int) -> str:
    return next((b.status for b in board.brokers if b.broker_id == broker_id), "")


# -- panels ---------------------------------------------------------------------------------------


def brokers_panel(board: BoardState) -> str:
    """Brokers: status, fencing, the coordinator partitions each leads, and fault buttons."""
    rows = []
    for b in board.brokers:
        node = f"broker-{b.broker_id}"
        if b.status == "down":
            acts = _button("restart", node, "restart", f"restart {node}: it rebuilds from its disk")
        elif b.status == "paused":
            acts = _button("resume", node, "resume", f"resume {node}")
        else:
            acts = _button("crash", node, "crash", f"crash {node}: volatile state lost") + _button(
                "pause", node, "pause", f"pause {node}: it stops while time goes on"
            )
        txn, grp = _few(b.txn_partitions), _few(b.group_partitions)
        rows.append(
            f'<tr class="eos-broker{_fresh(board, ("broker", b.broker_id))}" data-node="{node}">'
            f"<td>{node}</td><td>{_status(b.status)}{' fenced' if b.fenced else ''}</td>"
            f"<td>{txn}</td><td>{grp}</td><td>{acts}</td></tr>"
        )
    rows.append(f"<tr><td>controller</td><td>{_status(board.controller)}</td><td></td><td></td><td></td></tr>")
    return _table(
        "eos-brokers", ("node", "status", "txn coordinator of", "group coordinator of", "faults"), rows, "no brokers"
    )


def _few(ids: Sequence[int], most: int = 6) -> str:
    """Return a short list of partition numbers: all of them in the hover title."""
    if not ids:
        return "-"
    full = ", ".join(str(i) for i in ids)
    if len(ids) <= most:
        return full
    short = ", ".join(str(i) for i in ids[:most])
    return f'<span title="{full}">{len(ids)}: {short}, …</span>'


def partitions_panel(board: BoardState) -> str:
    """Partitions: leader, leader epoch, ISR, replicas, LEO, HW and LSO (the leader's)."""
    rows = []
    for p in board.partitions:
        why = offsets_unknown(board, p)
        lag = p.hw - p.lso if p.hw >= 0 and p.lso >= 0 else 0
        lso = _known(p.lso, why) + (f' <span class="eos-note">(HW-{lag})</span>' if lag else "")
        if why:
            lso += f' <span class="eos-note">({escape(why)})</span>'
        leader = _known(p.leader, why)
        if p.leader >= 0 and _broker_status(board, p.leader) in ("down", "paused"):
            leader += " " + _status(_broker_status(board, p.leader))
        rows.append(
            f'<tr class="eos-partition{_fresh(board, ("partition", p.key))}" data-tp="{escape(p.topic)}-{p.partition}">'
            f"<td>{escape(p.topic)}-{p.partition}</td><td>{leader}</td><td>{_known(p.leader_epoch, why)}</td>"
            f"<td>{_ids(p.isr)}</td><td>{_ids(p.replicas)}</td>"
            f'<td class="eos-leo">{_known(p.leo, why)}</td><td class="eos-hw">{_known(p.hw, why)}</td>'
            f'<td class="eos-lso">{lso}</td></tr>'
        )
    return _table(
        "eos-partitions",
        ("partition", "leader", "epoch", "ISR", "replicas", "LEO", "HW", "LSO"),
        rows,
        "no topics yet",
    )


def _ids(ids: Sequence[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


def _window(board: BoardState, p: PartitionRow, pid: int) -> str:
    why = offsets_unknown(board, p)
    if why:
        return _known(-1, f"{why}: the window lives on the leader")
    for e in p.producers:
        if e.producer_id == pid:
            slots = [
                f'<span class="eos-slot" title="cached on the leader: sequences '
                f"{_range(w.first_sequence, w.last_sequence)} "
                f'at offset {w.first_offset}">{_range(w.first_sequence, w.last_sequence)}</span>'
                for w in e.window
            ]
            slots += ['<span class="eos-slot eos-slot-empty"></span>'] * max(0, 5 - len(e.window))
            return "".join(slots)
    return ""


def producers_panel(board: BoardState) -> str:
    """Producers: id, epoch, transactional id, state; per partition sequences, window and in-flight."""
    hues, zombies = producer_palette(board), fenced_epochs(board)
    parts = {p.key: p for p in board.partitions}
    blocks = []
    for pr in board.producers:
        colour = batch_colour(pr.producer_id, pr.epoch, hues, zombies)
        fenced = (pr.producer_id, pr.epoch) in zombies
        acts = _producer_buttons(pr)
        head = (
            f'<div class="eos-producer-head"><span class="eos-swatch" style="background:{colour}"></span>'
            f"<b>{escape(pr.name)}</b> {_status(pr.status)}"
            f'<span class="eos-kv">tx id <b>{escape(pr.transactional_id or "-")}</b></span>'
            f'<span class="eos-kv">producer id <b class="eos-pid">{_known(pr.producer_id, _NO_PID)}</b></span>'
            f'<span class="eos-kv">epoch <b class="eos-epoch">{_known(pr.epoch, _NO_PID)}</b></span>'
            f'<span class="eos-kv">state <b class="eos-state">{escape(pr.state)}</b></span>'
            + (' <span class="eos-fenced">zombie: a newer epoch exists</span>' if fenced else "")
            + (f' <span class="eos-error">{escape(pr.error)}</span>' if pr.error else "")
            + f'<span class="eos-acts">{acts}</span></div>'
        )
        rows = []
        for pp in pr.partitions:
            flight = " ".join(
                f'<span class="eos-inflight" title="sent {f.attempts} time(s), no answer yet">'
                f"{_range(f.first_seq, f.last_seq)}{'×' + str(f.attempts) if f.attempts > 1 else ''}</span>"
                for f in pp.in_flight
            )
            part = parts.get((pp.topic, pp.partition))
            window = _window(board, part, pr.producer_id) if part is not None else ""
            rows.append(
                f"<tr><td>{escape(pp.topic)}-{pp.partition}</td><td>{_known(pp.next_seq, _NO_SEQ)}</td>"
                f"<td>{_known(pp.last_acked_seq, 'none acknowledged yet')}</td>"
                f"<td>{flight or '-'}</td><td>{pp.queued}</td><td>{window}</td></tr>"
            )
        table = _table(
            "eos-producer-parts",
            ("partition", "next seq", "last acked", "in flight", "queued", "leader's dedup window (5 batches)"),
            rows,
            "nothing sent yet",
        )
        fresh = _fresh(board, ("producer", pr.name))
        blocks.append(f'<div class="eos-producer{fresh}" data-node="{escape(pr.name)}">{head}{table}</div>')
    return "".join(blocks) or '<div class="eos-empty">no producers yet</div>'


_NO_PID = "no producer id yet (InitProducerId not answered)"
_NO_SEQ = "no sequence: the producer is not idempotent"


def _producer_buttons(pr: ProducerRow) -> str:
    node = pr.name
    if pr.status in ("down", "outside"):  # an outside client lives in its own process: not ours to break
        return ""
    if pr.status == "paused":
        return _button("resume", node, "resume", f"resume {node}: the zombie wakes up and tries to go on")
    return (
        _button("pause", node, "pause (zombie)", f"pause {node}: it stalls while time goes on, a zombie")
        + _button("drop-ack", node, "drop next ack", f"drop the next ProduceResponse to {node}: it must retry")
        + _button("crash", node, "crash", f"crash {node}: what it had not delivered is lost")
    )


def txns_panel(board: BoardState) -> str:
    """``__transaction_state``: one row per transactional id, fresh transitions highlighted."""
    rows = []
    for t in board.txns:
        pending = f' <span class="eos-note">→ {escape(t.pending)}</span>' if t.pending else ""
        parts = ", ".join(f"{escape(tp)}-{p}" for tp, p in t.partitions) or "-"
        rows.append(
            f'<tr class="eos-txn{_fresh(board, ("txn", t.transactional_id))}" '
            f'data-txn="{escape(t.transactional_id)}"><td>{escape(t.transactional_id)}</td>'
            f"<td>{t.coordinator}</td><td>{t.txn_partition}</td><td>{_known(t.producer_id, _NO_PID)}</td>"
            f'<td class="eos-epoch">{_known(t.epoch, _NO_PID)}</td>'
            f'<td class="eos-state">{escape(t.state)}{pending}</td>'
            f"<td>{parts}</td><td>{t.timeout_ms}</td><td>{t.last_update_ms}</td></tr>"
        )
    return _table(
        "eos-txns",
        (
            "transactional id",
            "coordinator",
            "__transaction_state",
            "producer id",
            "epoch",
            "state",
            "partitions",
            "timeout ms",
            "last update ms",
        ),
        rows,
        "no transactional ids yet (init_transactions writes the first entry)",
    )


def assignment_text(tps: Sequence[tuple[str, int]]) -> str:
    """``t:0,1; u:2``: an assignment's partitions by topic, as plain text (the page escapes it)."""
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return "; ".join(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items())) or "-"


def groups_panel(board: BoardState) -> str:
    """Consumer groups: one row per group, protocol, state, generation or epoch, members, lag.

    A classic group shows its generation; a consumer-protocol (KIP-848) group its group epoch and,
    when its target assignment lags behind, that epoch too (``epoch 3 → target 2``), and each
    member's epoch next to its assignment.
    """
    rows = []
    for g in board.groups:
        if g.protocol == "consumer":
            gen = f"epoch {g.generation}"
            if g.assignment_epoch is not None and g.assignment_epoch != g.generation:
                gen += f' <span class="eos-note">target {g.assignment_epoch}</span>'
        else:
            gen = f"generation {g.generation}"
        members = "<br>".join(
            f"{escape(m.client_id or m.member_id)}"
            + (f' <span class="eos-epoch">e{m.epoch}</span>' if m.epoch is not None else "")
            + f": {escape(assignment_text(m.assignment))}"
            for m in g.members
        )
        rows.append(
            f'<tr class="eos-group{_fresh(board, ("group", g.group_id))}" data-group="{escape(g.group_id)}">'
            f"<td>{escape(g.group_id)}</td><td>{g.coordinator}</td><td>{escape(g.protocol)}</td>"
            f'<td class="eos-state">{escape(g.state)}</td><td>{gen}</td>'
            f"<td>{members or '-'}</td><td>{'-' if g.lag is None else g.lag}</td></tr>"
        )
    return _table(
        "eos-groups",
        ("group", "coordinator", "protocol", "state", "generation / epoch", "members: assignment", "lag"),
        rows,
        "no consumer groups yet (a consumer with a group.id joins or commits the first)",
    )


def log_legend(board: BoardState, hues: dict[int, int], zombies: set[tuple[int, int]]) -> list[tuple[str, str]]:
    """Return the producer colours (and grey, when a zombie's batch is shown) for the strips' legend."""
    legend = [(f"hsl({h},62%,50%)", f"producer {pid}") for pid, h in hues.items()]
    if any((b.producer_id, b.producer_epoch) in zombies for t in board.logs for b in t.batches):
        legend.append((_FENCED_GREY, "fenced epoch (zombie)"))
    return legend


def logs_panel(board: BoardState) -> str:
    """One log strip per partition: batches coloured by producer and epoch, markers, HW and LSO."""
    hues, zombies = producer_palette(board), fenced_epochs(board)
    parts = {p.key: p for p in board.partitions}
    legend = log_legend(board, hues, zombies)
    strips = []
    for t in board.logs:
        p = parts.get((t.topic, t.partition))
        why = offsets_unknown(board, p) if p is not None else ""
        strips.append(log_strip_html(t, p, hues, zombies, legend, why))
    return "".join(strips) or '<div class="eos-empty">no topics yet</div>'


def log_strip_html(
    tail: LogTail,
    p: PartitionRow | None,
    hues: dict[int, int],
    zombies: set[tuple[int, int]],
    legend: Sequence[tuple[str, str]],
    unknown: str = "",
) -> str:
    """One partition's strip (see :func:`logs_panel`).

    ``unknown`` says why the leader's offsets are unknown (:func:`offsets_unknown`): the strip
    then shows the leader's log as its disk holds it, with no cursor, and says so.
    """
    name = f"{tail.topic}-{tail.partition}"
    picture = svg.log_strip(
        tail.summaries(),
        high_watermark=p.hw if p else -1,
        last_stable_offset=p.lso if p else -1,
        log_end_offset=p.leo if p else None,
        label=f"log of {name} on its leader" + (f" ({unknown}: read from its disk)" if unknown else ""),
        fill=lambda b: batch_colour(b.producer_id, b.producer_epoch, hues, zombies),
        legend=legend,
        unknown=unknown,
    )
    caption = f'<div class="eos-caption">{escape(name)}</div>'
    return f'<div class="eos-strip" data-tp="{escape(name)}">{caption}{picture}</div>'


def reads_panel(board: BoardState, topic: str | None = None, partition: int = 0) -> str:
    """read_uncommitted and read_committed views of one partition side by side, with consumer lag."""
    target = _pick_partition(board, topic, partition)
    if target is None:
        return '<div class="eos-empty">no topics yet</div>'
    tail = board.log(target.topic, target.partition)
    summaries = tail.summaries()
    ru = [b for b in summaries if not b.is_control and b.base_offset < target.hw]
    rc = [b for b in summaries if not b.is_control and b.last_offset < target.lso and b.kind != "aborted"]
    hidden_aborted = sum(b.count for b in summaries if b.kind == "aborted" and b.last_offset < target.hw)
    held_open = sum(b.count for b in summaries if b.kind == "open")
    name = f"{target.topic}-{target.partition}"
    why = offsets_unknown(board, target)

    def side(title: str, cls: str, batches: list[Any], cursor: str, offset: int, note: str) -> str:
        cells = "".join(
            f'<span class="eos-rec eos-{b.kind}" title="offsets {_range(b.base_offset, b.last_offset)} · {b.kind}">'
            f"{_range(b.base_offset, b.last_offset)}</span>"
            for b in batches[-24:]
        )
        if why:  # nobody can read: no leader answers, and where its cursor stood is not known
            count, bound, note = _known(-1, why), f"{cursor} {UNKNOWN} ({escape(why)})", "nothing readable now"
        else:
            count, bound = str(sum(b.count for b in batches)), f"{cursor} {offset}"
        records = "record" if count == "1" else "records"
        return (
            f'<div class="eos-read {cls}"><div class="eos-caption">{title}</div>'
            f'<div class="eos-read-count"><b>{count}</b> {records} readable, up to {bound}</div>'
            f'<div class="eos-recs">{cells or "-"}</div><div class="eos-note">{note}</div></div>'
        )

    left = side(
        "read_uncommitted",
        "eos-ru",
        ru,
        "HW",
        target.hw,
        "sees open and aborted transactions' records too",
    )
    right = side(
        "read_committed",
        "eos-rc",
        rc,
        "LSO",
        target.lso,
        f"{svg.counted(hidden_aborted, 'aborted record')} skipped;"
        f" {svg.counted(held_open, 'record')} of open transactions held back",
    )

    def lag_to(offset: int, pos: int) -> str:
        if pos < 0:
            return _known(pos, "no position yet")
        return _known(offset, why) if offset < 0 else str(max(0, offset - pos))

    lag_rows = []
    for c in board.consumers:
        for t, p, pos in c.positions:
            if (t, p) == (target.topic, target.partition):
                bound = target.lso if c.isolation == "read_committed" else target.hw
                lag_rows.append(
                    f"<tr><td>{escape(c.name)}</td><td>{escape(c.isolation)}</td>"
                    f"<td>{_known(pos, 'no position yet')}</td><td>{lag_to(target.hw, pos)}</td>"
                    f"<td>{lag_to(target.lso, pos)}</td><td>{lag_to(bound, pos)}</td></tr>"
                )
    lag = _table(
        "eos-lag",
        ("consumer", "isolation.level", "position", "lag to HW", "lag to LSO", "can read now"),
        lag_rows,
        f"no consumer reads {name} yet",
    )
    return f'<div class="eos-reads" data-tp="{escape(name)}"><div class="eos-side">{left}{right}</div>{lag}</div>'


def _pick_partition(board: BoardState, topic: str | None, partition: int) -> PartitionRow | None:
    if topic is not None:
        for p in board.partitions:
            if p.topic == topic and p.partition == partition:
                return p
    with_data = [p for p in board.partitions if p.leo > 0]
    return (with_data or list(board.partitions) or [None])[0]


_FAULT_PAIRS = {ev.CRASH: ev.RESTART, ev.PAUSE: ev.RESUME, ev.PARTITION: ev.HEAL}


def fault_windows(trace_events: Sequence[Any], upto: int) -> list[tuple[str, str, int, int | None]]:
    """Return ``(node, fault, start_ms, end_ms or None)`` for every crash, pause and network cut up to ``upto``.

    ``trace_events`` may be the whole trace or only its fault events (what the dashboard keeps).
    """
    open_: dict[tuple[str, str], int] = {}
    out: list[tuple[str, str, int, int | None]] = []
    for e in trace_events:
        if e.index > upto:
            break
        if e.kind != "fault":
            continue
        if e.name in _FAULT_PAIRS:
            open_[(e.node, e.name)] = e.time_ms
        else:
            for start, end in _FAULT_PAIRS.items():
                if e.name == end:
                    keys = [k for k in open_ if k[1] == start and (start == ev.PARTITION or k[0] == e.node)]
                    out.extend((k[0], start, open_.pop(k), e.time_ms) for k in keys)
    out.extend((node, name, t, None) for (node, name), t in open_.items())
    return sorted(out, key=lambda w: (w[2], w[0], w[1]))


def timeline_panel(
    trace_events: Sequence[Any],
    index: int,
    now_ms: int,
    *,
    lines: int = TIMELINE_LINES,
    faults: Sequence[Any] | None = None,
) -> str:
    """The latest events up to ``index`` (the short log) over a time axis with fault windows shaded.

    ``faults``: the trace's fault events, when the caller keeps them (else the trace is read).
    """
    if index < 0 or not trace_events:
        return '<div class="eos-empty">no events yet</div>'
    index = min(index, len(trace_events) - 1)
    first = max(0, index - lines + 1)
    recent = trace_events[first : index + 1]
    rows = []
    for e in recent:
        cls = {"fault": " eos-ev-fault", "drop": " eos-ev-drop", "phase": " eos-ev-phase"}.get(e.kind, "")
        if e.name in (ev.TXN_STATE_WRITE, ev.MARKER_APPEND, ev.LOG_LSO):
            cls += " eos-ev-txn"
        rows.append(f'<div class="eos-ev{cls}" data-index="{e.index}">{escape(e.short())}</div>')
    t0 = trace_events[first].time_ms
    t1 = max(now_ms, t0 + 1)
    source = faults if faults is not None else trace_events
    windows = [w for w in fault_windows(source, index) if (w[3] is None or w[3] >= t0)]
    axis = _axis_svg(t0, t1, windows)
    return f'<div class="eos-timeline">{axis}<div class="eos-evs">{"".join(rows)}</div></div>'


def _axis_svg(t0: int, t1: int, windows: list[tuple[str, str, int, int | None]]) -> str:
    width, row = 640, 14
    height = 22 + row * max(1, len(windows))
    span = max(1, t1 - t0)

    def x(t: int) -> int:
        return 8 + (min(max(t, t0), t1) - t0) * (width - 16) // span

    body = [
        f'<line x1="8" y1="14" x2="{width - 8}" y2="14" stroke="currentColor" stroke-opacity="0.5"/>',
        f'<text x="8" y="10" font-size="9" fill="currentColor">{t0} ms</text>',
        f'<text x="{width - 8}" y="10" font-size="9" text-anchor="end" fill="currentColor">{t1} ms</text>',
    ]
    for i, (node, fault, start, end) in enumerate(windows):
        y = 20 + i * row
        x0, x1 = x(start), x(end if end is not None else t1)
        label = f"{node} {fault} {start}..{end if end is not None else 'now'} ms"
        body.append(
            f'<g><title>{escape(label)}</title><rect x="{x0}" y="{y}" width="{max(2, x1 - x0)}" height="{row - 3}" '
            f'fill="#d1493f" fill-opacity="0.25" stroke="#d1493f"/>'
            f'<text x="{x0 + 3}" y="{y + row - 5}" font-size="9" fill="currentColor">'
            f"{escape(node + ' ' + fault)}</text></g>"
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="eos-axis" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" style="max-width:100%;height:auto;display:block">{"".join(body)}</svg>'
    )
