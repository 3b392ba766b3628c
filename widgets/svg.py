"""Small SVG pictures of engine state, as strings: a partition log, a producer's dedup window, brokers, lag.

Role
----
Pure functions from frozen engine data (``engine.views.log_batches``, ``engine.views.snapshots``)
to an ``<svg>`` string that a view puts in its HTML. One colour per meaning everywhere:
grey = non-transactional, amber = transaction still open, green = committed (and COMMIT
markers), red = aborted (and ABORT markers). Border style repeats it for those who do not see
colour: open is dashed, aborted is hatched, markers carry a glyph (✓ COMMIT, ✗ ABORT).

Invariants
----------
* Deterministic: integer geometry only, attributes in a fixed order, no ids, no random, no
  clock; the same input gives the same bytes.
* Well-formed, self-contained XML: every text is escaped, no external reference, no script,
  no style sheet. Text and lines use ``currentColor``, so a picture follows the notebook's
  light or dark theme; fills are mid-tone colours at partial opacity, readable on both.
* Every box carries a ``<title>`` (the browser's hover tooltip) with its full details.

What it does not do
-------------------
It reads no cluster (callers pass the frozen data), animates nothing and never imports a
notebook library.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

__all__ = [
    "COLOURS",
    "DEFAULT_MAX_BATCHES",
    "KIND_LABELS",
    "broker_row",
    "counted",
    "lag_bars",
    "log_strip",
    "producer_window",
]

#: Fill and stroke colour per batch kind (see ``engine.views.log_batches.KINDS``).
COLOURS: dict[str, str] = {
    "plain": "#8a8f98",
    "open": "#d39e00",
    "committed": "#2e9d5e",
    "aborted": "#d1493f",
    "commit-marker": "#2e9d5e",
    "abort-marker": "#d1493f",
}
#: Legend text per kind.
KIND_LABELS: dict[str, str] = {
    "plain": "non-transactional",
    "open": "transaction open",
    "committed": "committed",
    "aborted": "aborted",
    "commit-marker": "COMMIT marker",
    "abort-marker": "ABORT marker",
}
_STATUS_COLOURS = {"up": "#2e9d5e", "paused": "#d39e00", "down": "#d1493f"}

#: A long log is cut to its last this many batches.
DEFAULT_MAX_BATCHES = 30

_FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"
_CHAR_W = 6  # width of one character at font-size 10, rounded up
_PAD = 8
_BOX_H = 34
_UNIT = 12  # px per record before scaling
_MIN_W = 20
_MAX_W = 160
_MAX_STRIP_W = 880
_NOTE_W = 150
_LABEL_ROW_H = 13
_LABEL_GAP = 8  # px between two cursor labels on one row


# -- small writers ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _quoted(value: str) -> str:
    """``quoteattr`` of a value; pictures repeat few values (colours, opacities), so it is cached."""
    return quoteattr(value)


def _attrs(pairs: Iterable[tuple[str, Any]]) -> str:
    out = []
    for k, v in pairs:
        if v is None:
            continue
        if type(v) is int:  # no escaping to do (bool is not int here: type(), not isinstance)
            out.append(f' {k}="{v}"')
        else:
            out.append(f" {k}={_quoted(str(v))}")
    return "".join(out)


def _el(tag: str, *pairs: tuple[str, Any], body: str = "") -> str:
    if body:
        return f"<{tag}{_attrs(pairs)}>{body}</{tag}>"
    return f"<{tag}{_attrs(pairs)}/>"


def _text(x: int, y: int, s: str, *extra: tuple[str, Any], anchor: str = "start", size: int = 10) -> str:
    return _el(
        "text",
        ("x", x),
        ("y", y),
        ("text-anchor", anchor),
        ("font-size", size),
        ("fill", "currentColor"),
        *extra,
        body=escape(s),
    )


def _title(s: str) -> str:
    return f"<title>{escape(s)}</title>"


def _svg(width: int, height: int, label: str, body: list[str]) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family={quoteattr(_FONT)} font-size="10" '
        f'style="max-width:100%;height:auto;display:block">'
    )
    return head + _title(label) + "".join(body) + "</svg>"


def counted(n: int, noun: str) -> str:
    """Return ``n`` and ``noun``, plural unless ``n`` is 1: ``1 record``, ``0 records``, ``2 records``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _hatch(x: int, y: int, w: int, h: int, colour: str, step: int = 6) -> list[str]:
    """Return 45-degree lines filling the box (clipped by arithmetic, no clipPath id needed)."""
    out = []
    for c in range(-h + step // 2, w, step):
        lo, hi = max(0, -c), min(h, w - c)
        if lo < hi:
            out.append(
                _el(
                    "line",
                    ("x1", x + c + lo),
                    ("y1", y + h - lo),
                    ("x2", x + c + hi),
                    ("y2", y + h - hi),
                    ("stroke", colour),
                    ("stroke-width", 1),
                    ("stroke-opacity", "0.7"),
                )
            )
    return out


def _legend_item(body: list[str], x: int, y: int, label: str, style: tuple[tuple[str, Any], ...]) -> int:
    """Append a 10 x 10 swatch drawn in ``style`` and its ``label`` at ``x``; return where the next item starts."""
    body.append(_el("rect", ("x", x), ("y", y - 9), ("width", 10), ("height", 10), *style))
    body.append(_text(x + 14, y, label, size=9))
    return x + 14 + _CHAR_W * len(label) + 12


def _range(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}..{last}"


# -- the log strip ----------------------------------------------------------------------------------


def _widths(batches: Sequence[Any]) -> list[int]:
    """Return one box width per batch: by record count, at least ``_MIN_W``, scaled to fit the strip."""
    natural = [_MIN_W if b.is_control else min(_MAX_W, max(_MIN_W, _UNIT * b.count)) for b in batches]
    total = sum(natural)
    room = _MAX_STRIP_W - _MIN_W * len(natural)
    extra = total - _MIN_W * len(natural)
    if total <= _MAX_STRIP_W or extra <= 0:
        return natural
    room = max(room, 0)
    return [_MIN_W + (w - _MIN_W) * room // extra for w in natural]


def _batch_title(b: Any) -> str:
    if b.is_control:
        return (
            f"offset {b.base_offset}: {b.control_type} marker · producer {b.producer_id} epoch {b.producer_epoch}"
            f" · coordinator epoch {b.coordinator_epoch}"
        )
    records = counted(b.count, "record")
    parts = [f"offsets {_range(b.base_offset, b.last_offset)} ({records})"]
    if b.producer_id >= 0:
        parts.append(f"producer {b.producer_id} epoch {b.producer_epoch}")
    if b.base_sequence >= 0:
        parts.append(f"sequences {_range(b.base_sequence, b.last_sequence)}")
    parts.append(KIND_LABELS.get(b.kind, b.kind) + (" transaction" if b.kind in ("committed", "aborted") else ""))
    return " · ".join(parts)


def _box(b: Any, x: int, y: int, w: int, fill: Callable[[Any], str] | None = None) -> list[str]:
    colour = COLOURS.get(b.kind, COLOURS["plain"])
    if fill is not None and not b.is_control:
        colour = fill(b)
    out = ["<g>", _title(_batch_title(b))]
    rect = (("x", x), ("y", y), ("width", w), ("height", _BOX_H), ("rx", 2), ("fill", colour), ("stroke", colour))
    if b.is_control:
        out.append(_el("rect", *rect, ("fill-opacity", "0.85")))
        glyph = "✓" if b.control_type == "COMMIT" else "✗"
        out.append(
            _el(
                "text",
                ("x", x + w // 2),
                ("y", y + _BOX_H // 2 + 5),
                ("text-anchor", "middle"),
                ("font-size", 14),
                ("font-weight", "bold"),
                ("fill", "#ffffff"),
                body=glyph,
            )
        )
    else:
        out.append(
            _el(
                "rect",
                *rect,
                ("fill-opacity", "0.22" if b.kind == "aborted" else "0.35"),
                ("stroke-width", 1.5),
                ("stroke-dasharray", "4 3" if b.kind == "open" else None),
            )
        )
        if b.kind == "aborted":
            out.extend(_hatch(x, y, w, _BOX_H, colour))
        if b.producer_id >= 0:
            label = f"p{b.producer_id} e{b.producer_epoch}"
            if w >= _CHAR_W * len(label) + 4:
                out.append(_text(x + w // 2, y + _BOX_H // 2 + 4, label, anchor="middle", size=9))
    out.append("</g>")
    return out


def _offset_x(offset: int, batches: Sequence[Any], xs: list[int], ws: list[int], left: int, right: int) -> int:
    """Return the x of the boundary just before ``offset`` (clamped to the strip)."""
    if not batches or offset <= batches[0].base_offset:
        return left
    for b, x, w in zip(batches, xs, ws, strict=True):
        if b.base_offset <= offset <= b.last_offset:
            return x + (offset - b.base_offset) * w // max(1, b.count)
    return right


def _cursor_labels(cursors: list[tuple[str, int]]) -> list[tuple[str, int, list[str]]]:
    """Group cursors at the same offset: ``[(label, offset, names)]`` in offset order."""
    groups: dict[int, list[str]] = {}
    for name, offset in cursors:
        groups.setdefault(offset, []).append(name)
    return [("=".join(names) + f" {offset}", offset, names) for offset, names in sorted(groups.items())]


_CURSOR_DASH = {"LSO": "5 3", "HW": None, "LEO": "2 2"}


def log_strip(
    batches: Sequence[Any],
    *,
    high_watermark: int = -1,
    last_stable_offset: int = -1,
    log_end_offset: int | None = None,
    max_batches: int = DEFAULT_MAX_BATCHES,
    label: str = "partition log",
    fill: Callable[[Any], str] | None = None,
    legend: Sequence[tuple[str, str]] | None = None,
    unknown: str = "",
) -> str:
    """Return a partition log as a strip of batch boxes with HW, LSO and LEO lines.

    ``batches`` are :class:`engine.views.log_batches.BatchSummary` (or objects with the same
    fields), oldest first. Each box spans its offsets (width by record count, at least 20 px),
    coloured by kind, with its base offset below and ``p<producer id> e<epoch>`` inside where it
    fits. Cursors at one offset share a line (``HW=LEO 7``). A cursor at -1 is unknown: it has
    no line, and the text right of the strip names it (``LSO, HW unknown``), followed by
    ``unknown`` (why) when given; ``log_end_offset`` None is the end of the last batch. Only
    the last ``max_batches`` batches are drawn, after a note counting the earlier ones; a cursor
    below the first drawn batch sits at the strip's left edge, its label marked ``◂``.

    Each label starts just right of its line, like a flag. Labels are laid out left to right
    on rows that only go down (a label shares a row only with labels that end before its line),
    so no label overlaps another and no line crosses a label: the lines of labels further left
    pass the lower rows to the left of every label there.

    ``fill`` colours data batches another way (the dashboard gives each producer a hue, one
    shade per epoch, grey once fenced); the transaction outcome is then told by the border
    alone (open dashed, aborted hatched, committed solid) and ``legend`` lists the colours as
    ``(colour, text)`` pairs after the outcome legend.
    """
    if max_batches < 1:
        msg = f"max_batches must be at least 1, got {max_batches}"
        raise ValueError(msg)
    all_batches = list(batches)
    hidden = max(0, len(all_batches) - max_batches)
    shown = all_batches[hidden:]
    leo = log_end_offset if log_end_offset is not None else (all_batches[-1].last_offset + 1 if all_batches else 0)
    named = (("LSO", last_stable_offset), ("HW", high_watermark), ("LEO", leo))
    cursors = [(n, o) for n, o in named if o >= 0]
    groups = _cursor_labels(cursors)
    missing = [n for n, o in named if o < 0]

    left = _PAD + (_NOTE_W if hidden else 0)
    ws = _widths(shown) if shown else []
    xs = []
    x = left
    for w in ws:
        xs.append(x)
        x += w
    right = x if shown else left + 120
    body: list[str] = []

    # cursor labels: flags right of their lines, on rows that only go down (see the docstring)
    placed: list[tuple[str, int, int, list[str], int]] = []
    row, row_end = 0, -_LABEL_GAP
    for text, offset, names in groups:
        cx = _offset_x(offset, shown, xs, ws, left, right)
        if hidden and offset < shown[0].base_offset:
            text = "◂" + text  # the cursor is in the batches not drawn
        if placed and cx < row_end + _LABEL_GAP:
            row += 1
        row_end = cx + 3 + _CHAR_W * len(text)
        placed.append((text, cx, cx + 3, names, row))
    width = max(right, *(tx + _CHAR_W * len(t) + 4 for t, _, tx, _, _ in placed), 240) + _PAD
    top = _PAD + _LABEL_ROW_H * (row + 1) + 4

    if hidden:
        note = f"… {hidden} earlier batch{'es' if hidden != 1 else ''}"
        body.append(_text(_PAD, top + _BOX_H // 2 + 4, note, ("fill-opacity", "0.7")))
    if shown:
        for b, bx, w in zip(shown, xs, ws, strict=True):
            body.extend(_box(b, bx, top, w, fill))
            base = str(b.base_offset)
            if w >= _CHAR_W * len(base) + 2:
                body.append(_text(bx + 2, top + _BOX_H + 12, base, ("fill-opacity", "0.8"), size=9))
    else:
        body.append(
            _el(
                "rect",
                ("x", left),
                ("y", top),
                ("width", right - left),
                ("height", _BOX_H),
                ("fill", "none"),
                ("stroke", "currentColor"),
                ("stroke-opacity", "0.4"),
                ("stroke-dasharray", "3 3"),
            )
        )
        body.append(_text(left + (right - left) // 2, top + _BOX_H // 2 + 4, "empty log", anchor="middle"))

    for text, cx, tx, names, row in placed:
        y_label = _PAD + _LABEL_ROW_H * (row + 1) - 2
        body.append("<g>")
        body.append(_title(", ".join(_CURSOR_MEANING[n] for n in names)))
        body.append(
            _el(
                "line",
                ("x1", cx),
                ("y1", y_label - 9),
                ("x2", cx),
                ("y2", top + _BOX_H + 3),
                ("stroke", "currentColor"),
                ("stroke-width", 1.5),
                ("stroke-dasharray", _CURSOR_DASH[names[0]]),
            )
        )
        body.append(_text(tx, y_label, text, size=10))
        body.append("</g>")
    if missing:
        said = ", ".join(missing) + " unknown" + (f": {unknown}" if unknown else "")
        body.append(_text(right + 10, top + _BOX_H // 2 + 4, said, size=10))
        width = max(width, right + 10 + _CHAR_W * len(said) + _PAD)

    # legend: the kinds present, in a fixed order
    present = [k for k in COLOURS if any(b.kind == k for b in shown)]
    y_legend = top + _BOX_H + 28
    lx = _PAD
    for k in present:
        marker = k.endswith("marker")
        # with ``fill`` a data batch's colour is its producer's: its outcome swatch is drawn in the
        # text colour, by the pattern alone, as the boxes tell it (open dashed, aborted hatched)
        colour = COLOURS[k] if marker or fill is None else "currentColor"
        opacity = "0.85" if marker else "0.22" if k == "aborted" else "0.35"
        dashes = "2 2" if k == "open" else None
        style = (("fill", colour), ("fill-opacity", opacity), ("stroke", colour), ("stroke-dasharray", dashes))
        if k == "aborted":
            body.extend(_hatch(lx, y_legend - 9, 10, 10, colour, step=4))
        lx = _legend_item(body, lx, y_legend, KIND_LABELS[k], style)
    for colour, text in legend or ():
        lx = _legend_item(body, lx, y_legend, text, (("fill", colour), ("stroke", colour)))
    width = max(width, lx + _PAD)
    height = y_legend + 8 if present else top + _BOX_H + 20
    return _svg(width, height, label, body)


_CURSOR_MEANING = {
    "LSO": "LSO: last stable offset, read_committed consumers read below it",
    "HW": "HW: high watermark, replicated to the ISR; read_uncommitted consumers read below it",
    "LEO": "LEO: log end offset, where the next record goes",
}


# -- the producer window ----------------------------------------------------------------------------

_SLOT_W = 108
_SLOT_H = 40
_SLOT_GAP = 6


def _slot_rect(x: int, y: int, *style: tuple[str, Any]) -> str:
    """One slot of the dedup window: a rounded ``_SLOT_W`` x ``_SLOT_H`` box drawn in ``style``."""
    return _el("rect", ("x", x), ("y", y), ("width", _SLOT_W), ("height", _SLOT_H), ("rx", 3), *style)


def producer_window(entry: Any, *, window_size: int = 5, label: str = "") -> str:
    """Return one producer's dedup window as ``window_size`` slots, oldest cached batch first.

    ``entry`` is a :class:`engine.views.snapshots.ProducerEntryView`. Each filled slot shows the
    batch's first..last sequence and offsets; empty slots are dashed. The header names the
    producer id and epoch, and the coordinator epoch and the open transaction's first offset
    when the entry has them. The newest slot (the one ``describe-producers`` reports as
    LastSequence) has a heavier border.
    """
    window = list(entry.window)
    size = max(window_size, len(window))
    parts = [f"producer {entry.producer_id}", f"epoch {entry.producer_epoch}"]
    if entry.coordinator_epoch >= 0:
        parts.append(f"coordinator epoch {entry.coordinator_epoch}")
    if entry.current_txn_first_offset is not None:
        parts.append(f"transaction open since offset {entry.current_txn_first_offset}")
    header = " · ".join(parts)
    body = [_text(_PAD, _PAD + 10, header, ("font-weight", "bold"))]
    top = _PAD + 18
    for i in range(size):
        x = _PAD + i * (_SLOT_W + _SLOT_GAP)
        if i < len(window):
            w = window[i]
            newest = i == len(window) - 1
            body.append("<g>")
            body.append(
                _title(
                    f"cached batch {i + 1} of {len(window)}: sequences {_range(w.first_sequence, w.last_sequence)}, "
                    f"offsets {_range(w.first_offset, w.last_offset)}, timestamp {w.timestamp}"
                )
            )
            style = (("fill", COLOURS["plain"]), ("fill-opacity", "0.18"), ("stroke", "currentColor"))
            body.append(_slot_rect(x, top, *style, ("stroke-width", 2 if newest else 1)))
            body.append(_text(x + 6, top + 16, f"seq {_range(w.first_sequence, w.last_sequence)}"))
            body.append(
                _text(x + 6, top + 31, f"off {_range(w.first_offset, w.last_offset)}", ("fill-opacity", "0.75"))
            )
            body.append("</g>")
        else:
            style = (("fill", "none"), ("stroke", "currentColor"), ("stroke-opacity", "0.4"))
            body.append(_slot_rect(x, top, *style, ("stroke-dasharray", "3 3")))
            body.append(
                _text(x + _SLOT_W // 2, top + _SLOT_H // 2 + 4, "empty", ("fill-opacity", "0.5"), anchor="middle")
            )
    caption = f"dedup window: {len(window)} of {window_size} batches cached, oldest first"
    body.append(_text(_PAD, top + _SLOT_H + 14, caption, ("fill-opacity", "0.75"), size=9))
    width = max(_PAD * 2 + size * (_SLOT_W + _SLOT_GAP) - _SLOT_GAP, _PAD * 2 + _CHAR_W * len(header))
    height = top + _SLOT_H + 22
    return _svg(width, height, label or f"dedup window of producer {entry.producer_id}", body)


# -- brokers ----------------------------------------------------------------------------------------

_BROKER_W = 124
_BROKER_H = 40


def broker_row(brokers: Sequence[Any], *, label: str = "brokers") -> str:
    """Return one box per broker (:class:`engine.views.snapshots.BrokerView`), coloured by status.

    Green up, amber paused, red down (crashed); a fenced broker has a dashed border. Each box
    says the broker id, its status and how many partitions it leads.
    """
    body = []
    for i, b in enumerate(brokers):
        x = _PAD + i * (_BROKER_W + 8)
        colour = _STATUS_COLOURS.get(b.status, COLOURS["plain"])
        status = b.status + (", fenced" if b.fenced else "")
        body.append("<g>")
        body.append(
            _title(f"broker {b.broker_id}: {status}; leads {len(b.leader_of)}, follows {len(b.follower_of)} partitions")
        )
        body.append(
            _el(
                "rect",
                ("x", x),
                ("y", _PAD),
                ("width", _BROKER_W),
                ("height", _BROKER_H),
                ("rx", 4),
                ("fill", colour),
                ("fill-opacity", "0.3"),
                ("stroke", colour),
                ("stroke-width", 1.5),
                ("stroke-dasharray", "4 3" if b.fenced else None),
            )
        )
        body.append(_text(x + 6, _PAD + 15, f"broker {b.broker_id}", ("font-weight", "bold")))
        body.append(_text(x + 6, _PAD + 30, f"{status} · leads {len(b.leader_of)}", size=9))
        body.append("</g>")
    width = max(_PAD * 2 + len(brokers) * (_BROKER_W + 8) - 8, 120)
    return _svg(width, _BROKER_H + 2 * _PAD, label, body)


# -- consumer lag -----------------------------------------------------------------------------------

_BAR_W = 300


def lag_bars(rows: Sequence[tuple[str, int | None, int | None, int | None]], *, label: str = "consumer lag") -> str:
    """Return one bar per partition: ``(label, committed offset, LSO, HW)``; None is unknown.

    The track runs from 0 to the HW; the filled part reaches the committed offset; a tick marks
    the LSO. From the fill to the tick is what a read_committed consumer can still read; from
    the tick to the end of the track, records of open transactions it cannot read yet.
    """
    body = []
    name_w = max((len(r[0]) for r in rows), default=4) * _CHAR_W + 8
    y = _PAD
    for name, current, lso, hw in rows:
        scale = max(1, hw or 0, current or 0, lso or 0)
        x0 = _PAD + name_w
        body.append("<g>")
        body.append(_title(f"{name}: committed {_dash(current)}, LSO {_dash(lso)}, HW {_dash(hw)}"))
        body.append(_text(_PAD, y + 11, name))
        body.append(
            _el(
                "rect",
                ("x", x0),
                ("y", y + 2),
                ("width", _BAR_W),
                ("height", 12),
                ("fill", "none"),
                ("stroke", "currentColor"),
                ("stroke-opacity", "0.4"),
            )
        )
        if current is not None and current > 0:
            body.append(
                _el(
                    "rect",
                    ("x", x0),
                    ("y", y + 2),
                    ("width", current * _BAR_W // scale),
                    ("height", 12),
                    ("fill", COLOURS["committed"]),
                    ("fill-opacity", "0.5"),
                )
            )
        if lso is not None:
            lx = x0 + lso * _BAR_W // scale
            body.append(
                _el(
                    "line",
                    ("x1", lx),
                    ("y1", y),
                    ("x2", lx),
                    ("y2", y + 16),
                    ("stroke", "currentColor"),
                    ("stroke-width", 2),
                )
            )
        lag = "-" if hw is None or current is None else str(hw - current)
        body.append(_text(x0 + _BAR_W + 6, y + 11, f"lag {lag} (HW {_dash(hw)}, LSO {_dash(lso)})", size=9))
        body.append("</g>")
        y += 20
    width = _PAD * 2 + name_w + _BAR_W + 6 + _CHAR_W * 30
    return _svg(width, y + _PAD, label, body)


def _dash(x: int | None) -> str:
    return "-" if x is None else str(x)
