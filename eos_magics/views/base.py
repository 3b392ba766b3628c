"""The result objects of the magics: :class:`View` (text + HTML) and :class:`TableView` (+ rows, pandas).

Role
----
Every magic returns a view. Its plain text is what the real tool prints (``print(v)``,
``repr(v)`` and ``str(v)`` all give it), so a terminal or a doctest reads like Kafka;
``_repr_html_`` gives Jupyter a title, a picture when there is one, and a table or the text.

Invariants
----------
* ``repr(v) == str(v) == v.text``, exactly as the engine's text view returns it.
* The HTML is self-contained: inline styles only, no script, no external style sheet, and every
  string that comes from the user or the engine is escaped (:func:`html.escape`). Colours are
  neutral greys at partial opacity and text inherits the notebook's colour, so it reads in light
  and dark themes.
* The HTML fits the page it is shown in: table cells and text wrap inside the output cell
  (lists of offsets read as ranges, long lists are cut with "… (N more)" in the HTML only), and
  what still cannot wrap (an SVG picture, one very long token) scrolls inside its own box, never
  the page.
* A view is a snapshot: building it reads the cluster once; it never changes afterwards.
* Importing this module imports no pandas and no engine: :meth:`TableView.to_pandas` imports
  pandas when called.

What it does not do
-------------------
It reads no cluster (the factories in :mod:`eos_magics.views.kafka` do), and draws no picture
(:mod:`eos_magics.views.svg` does).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = [
    "MAX_CELL_ITEMS",
    "MAX_HTML_LINES",
    "MAX_HTML_ROWS",
    "PAGE_WIDTH_PX",
    "TableView",
    "View",
    "cell_html",
    "cell_text",
    "min_width_px",
    "plain_table",
]

#: The HTML shows at most this many table rows (the text and ``to_pandas()`` have them all).
MAX_HTML_ROWS = 200
#: The HTML ``<pre>`` shows at most this many lines of text.
MAX_HTML_LINES = 2000
#: A list in an HTML table cell shows at most this many items, then "… (N more)".
MAX_CELL_ITEMS = 8
#: The width a view must fit, in CSS pixels: a JupyterLab output at a 1280 px window with the file browser open.
PAGE_WIDTH_PX = 860
#: The width of one character of these tables' 12 px fonts, and a cell's left and right padding.
_CHAR_PX, _CELL_PAD_PX = 7.2, 12

_BORDER = "rgba(128,128,128,0.35)"
_SHADE = "rgba(128,128,128,0.12)"
_MONO = "var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace)"
_TONES = {"ok": "#2e7d4f", "fail": "#c0392b", "warn": "#a86f00", "info": "#5f6b7a"}
#: Where a camelCase column name may break: ``current|Txn|First|Offset``.
_NAME_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: The dash of a range of offsets, held to its numbers (word joiners): ``4–26`` never breaks as ``4–`` / ``26``.
_RANGE_DASH = "\u2060–\u2060"
#: Where a cell's text may break besides spaces: after a comma, after a hyphen that joins two words.
_BREAK_AFTER = re.compile(r",|(?<=\w)-(?=\w)")


def cell_text(value: Any) -> str:
    """Return how a cell reads in text and HTML: ``-`` for None, bytes decoded, booleans lower-case."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, tuple):
        return ",".join(cell_text(v) for v in value)
    return str(value)


def cell_html(value: Any, *, max_items: int = MAX_CELL_ITEMS) -> str:
    """Return how a cell reads in an HTML table: :func:`cell_text`, made short enough for a page.

    A list or tuple reads as comma-space separated items (so the line can wrap), runs of three or
    more consecutive ints as one range (``4–26``), and at most ``max_items`` items followed by
    ``… (N more)``; an empty one reads ``-``. Only the HTML is shortened: the text and ``to_pandas()`` keep every value.
    """
    if not isinstance(value, (tuple, list)):
        return cell_text(value)
    if not value:
        return "-"  # as None reads: an empty cell looks like a rendering fault
    items = _ranges(value)
    shown = ", ".join(items[:max_items])
    if len(items) > max_items:
        shown += f", … ({len(items) - max_items} more)"
    return shown


def _ranges(values: Sequence[Any]) -> list[str]:
    """Return the items as text, each run of three or more consecutive ints as ``first–last``."""
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while _is_int(values[i]) and j + 1 < len(values) and _is_int(values[j + 1]) and values[j + 1] == values[j] + 1:
            j += 1
        if j - i >= 2:
            out.append(f"{values[i]}{_RANGE_DASH}{values[j]}")
        else:
            out.extend(cell_text(v) for v in values[i : j + 1])
        i = j + 1
    return out


def _is_int(value: Any) -> bool:
    """True for an int that is not a bool (``True, False`` is no range)."""
    return isinstance(value, int) and not isinstance(value, bool)


def plain_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Return a left-aligned text table, columns two spaces apart, no trailing spaces.

    Used by views that no Kafka tool prints (deliveries, messages, brokers ...); the views of
    Kafka's tools use the engine's own formatter instead.
    """
    table = [list(columns)] + [[cell_text(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in table)


def _esc(s: Any) -> str:
    return html.escape(str(s), quote=True)


def badge(label: str, tone: str = "info") -> str:
    """Return a small coloured label (white on a mid-tone colour: readable in both themes)."""
    colour = _TONES.get(tone, _TONES["info"])
    return (
        f'<span style="display:inline-block;padding:0 6px;margin-right:6px;border-radius:3px;font-size:11px;'
        f'font-weight:700;color:#fff;background:{colour}">{_esc(label)}</span>'
    )


def pre(text: str, *, max_lines: int = MAX_HTML_LINES) -> str:
    """Return text in a ``<pre>``, escaped, cut to ``max_lines`` with a note.

    Long lines wrap inside the cell, between words (JupyterLab's own ``pre`` style breaks them
    anywhere, mid-word): a line of a tool's output is never off to the right of the page. Tall
    text scrolls in its own box.
    """
    lines = text.split("\n")
    note = ""
    if len(lines) > max_lines:
        note = f'<div style="opacity:0.7;font-size:11px">… {len(lines) - max_lines} more lines: print() shows all</div>'
        lines = lines[:max_lines]
    return (
        f'<pre style="margin:4px 0;padding:6px 8px;max-height:28em;overflow:auto;border:1px solid {_BORDER};'
        f"border-radius:3px;font-family:{_MONO};font-size:12px;line-height:1.35;white-space:pre-wrap;"
        "word-break:normal;overflow-wrap:anywhere;tab-size:8;"
        f'background:transparent;color:inherit">{_esc(chr(10).join(lines))}</pre>{note}'
    )


def heading(text: str) -> str:
    """Return one bold line of text, escaped, that wraps inside its cell (a finding's headline)."""
    return f'<div style="font-weight:600;margin:6px 0 2px 0;overflow-wrap:anywhere">{_esc(text)}</div>'


def details(summary: str, inner_html: str, *, open_: bool = False) -> str:
    """Return a collapsible block (``<details>``: no script needed)."""
    flag = ' open="open"' if open_ else ""  # the XML form: the views stay well-formed
    return (
        f'<details{flag} style="margin:4px 0"><summary style="cursor:pointer;opacity:0.8;font-size:12px">'
        f"{_esc(summary)}</summary>{inner_html}</details>"
    )


def html_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, max_rows: int = MAX_HTML_ROWS, head: bool = True
) -> str:
    """Return an escaped HTML table that fits its cell, cut to ``max_rows`` rows with a note.

    Cells read as :func:`cell_html` and wrap (``white-space:normal``): a long message takes more
    lines, not more width; a comma-joined list or a hyphenated id may break after each comma or
    hyphen, and column names between their words (``current·Txn·First·Offset``).
    What still cannot wrap scrolls inside the table's own box. ``head=False`` leaves the header out
    (a two-column list of labels and values).
    """
    cell = (
        f"padding:2px 8px 2px 4px;border-bottom:1px solid {_BORDER};text-align:left;vertical-align:top;"
        "white-space:normal;word-break:normal;overflow-wrap:break-word"
    )
    header = "".join(f'<th style="{cell};font-weight:600;background:{_SHADE}">{_column_name(c)}</th>' for c in columns)
    body = "".join(
        "<tr>"
        + "".join(f'<td style="{cell};font-family:{_MONO}">{_wrappable(cell_html(v))}</td>' for v in row)
        + "</tr>"
        for row in rows[:max_rows]
    )
    note = ""
    if len(rows) > max_rows:
        note = (
            f'<div style="opacity:0.7;font-size:11px">… {len(rows) - max_rows} more rows: '
            "to_pandas() and print() have them all</div>"
        )
    if not rows:
        body = f'<tr><td colspan="{len(columns)}" style="{cell};opacity:0.7">(no rows)</td></tr>'
    thead = f"<thead><tr>{header}</tr></thead>" if head else ""
    return (
        '<div style="overflow-x:auto;max-width:100%"><table style="border-collapse:collapse;font-size:12px;'
        f'margin:4px 0;table-layout:auto;color:inherit;background:transparent">{thead}<tbody>{body}</tbody>'
        f"</table></div>{note}"
    )


def _wrappable(text: str) -> str:
    """Return a cell's text escaped, free to break after a comma or a joining hyphen.

    ``orders-0,orders-1``, ``1,2,3`` and a consumer id such as ``consumer-1-4e1907d5-bde2-…``
    have no space; a leading minus (``-1``) is no joining hyphen and never breaks.
    """
    return _BREAK_AFTER.sub(r"\g<0><wbr/>", _esc(text))


def _column_name(name: str) -> str:
    """Return a column name escaped, with a break opportunity between its words (``<wbr/>``)."""
    return "<wbr/>".join(_esc(part) for part in _NAME_BREAK.split(str(name)))


def min_width_px(page: str) -> int:
    """Return the narrowest width, in CSS pixels, that a view's HTML can wrap to without scrolling.

    The widest of its pictures (their ``width``) and its tables, where a table needs, column by
    column, its longest word (text between spaces or ``<wbr/>``; a whole ``nowrap`` cell) at 12 px,
    plus padding. ``<pre>`` text is left out: it wraps (:func:`pre`). A view fits the page when
    this is at most :data:`PAGE_WIDTH_PX`; the tests hold every view to that.
    """
    import xml.etree.ElementTree as ET

    root = ET.fromstring(f"<root>{page}</root>")
    widths = [int(float(e.get("width", "0"))) for e in root.iter() if e.tag.endswith("svg")]
    for table in root.iter("table"):
        columns: dict[int, float] = {}
        for row in table.iter("tr"):
            for i, cell in enumerate(c for c in row if c.tag in ("td", "th")):
                if cell.get("colspan"):
                    continue
                columns[i] = max(columns.get(i, 0.0), _longest_word(cell) * _CHAR_PX + _CELL_PAD_PX)
        widths.append(round(sum(columns.values())))
    return max(widths, default=0)


def _longest_word(cell: Any) -> int:
    """Return the length of the longest run of text in a cell that the browser may not break."""
    if "nowrap" in (cell.get("style") or ""):
        return len("".join(cell.itertext()))
    pieces = [cell.text or ""] + [child.tail or "" for child in cell]  # <wbr/> children split the text
    return max((len(word) for piece in pieces for word in piece.split()), default=0)


class View:
    """A result with the plain text of a Kafka tool (or the engine) and an HTML rendering.

    Attributes
    ----------
    text : str
        The plain text; ``repr``, ``str`` and ``print`` give exactly this.
    title : str
        One line naming what is shown (the HTML heading).
    picture : str
        An SVG string, or ``""``.
    data : object
        The engine object the view was built from (a frozen snapshot, a report, a result ...),
        for code that wants more than the text.
    """

    def __init__(
        self,
        text: str,
        *,
        title: str = "",
        picture: str = "",
        data: Any = None,
        badge: tuple[str, str] | None = None,
        summary: str = "",
        text_label: str = "",
    ) -> None:
        if not isinstance(text, str):
            msg = f"a view's text is a str, got {type(text).__name__}"
            raise TypeError(msg)
        self.text = text
        self.title = title
        self.picture = picture
        self.data = data
        self._badge = badge
        self._summary = summary
        self._text_label = text_label

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    # -- HTML -------------------------------------------------------------------------------

    def _head_html(self) -> str:
        parts = []
        if self._badge is not None or self.title:
            mark = badge(*self._badge) if self._badge is not None else ""
            parts.append(
                f'<div style="font-weight:600;margin:0 0 4px 0;overflow-wrap:anywhere">{mark}{_esc(self.title)}</div>'
            )
        if self._summary:
            parts.append(
                f'<div style="margin:0 0 4px 0;font-family:{_MONO};font-size:12px;white-space:pre-wrap;'
                f'overflow-wrap:anywhere">{_esc(self._summary)}</div>'
            )
        if self.picture:
            parts.append(f'<div style="margin:4px 0;overflow-x:auto">{self.picture}</div>')
        return "".join(parts)

    def _body_html(self) -> str:
        """The part under the picture: the text itself."""
        return pre(self.text) if self.text else ""

    def _repr_html_(self) -> str:
        return (
            '<div class="eos-view" style="color:inherit;background:transparent;line-height:1.4;'
            f'margin:2px 0;max-width:100%">{self._head_html()}{self._body_html()}</div>'
        )


class TableView(View):
    """A :class:`View` with rows: ``columns``, ``rows``, ``column(name)``, ``to_pandas()``.

    Rows keep their values typed (ints, None, bytes as produced) for code; text and HTML show
    them with :func:`cell_text`. Iterating gives one **dict per row**, keyed by column name:
    Kafka's column names (``CURRENT-OFFSET``, ``Duration(min)``) are not Python identifiers, so
    namedtuples would have to rename them.

    The HTML shows the table; when the text is a tool's own output (``text_label`` given), the
    text follows in a collapsible block, or in place of the table with ``show_table=False``.
    """

    def __init__(
        self,
        text: str,
        columns: Sequence[str],
        rows: Sequence[Sequence[Any]],
        *,
        show_table: bool = True,
        **kw: Any,
    ) -> None:
        super().__init__(text, **kw)
        self.columns: tuple[str, ...] = tuple(columns)
        self.rows: tuple[tuple[Any, ...], ...] = tuple(tuple(r) for r in rows)
        for r in self.rows:
            if len(r) != len(self.columns):
                msg = f"row {r!r} has {len(r)} values for {len(self.columns)} columns {self.columns}"
                raise ValueError(msg)
        self._show_table = show_table

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for r in self.rows:
            yield dict(zip(self.columns, r, strict=True))

    def __getitem__(self, i: int) -> dict[str, Any]:
        return dict(zip(self.columns, self.rows[i], strict=True))

    def column(self, name: str) -> list[Any]:
        """Return the values of one column, in row order (KeyError naming the columns if none)."""
        try:
            i = self.columns.index(name)
        except ValueError:
            msg = f"no column {name!r}; columns: {', '.join(self.columns)}"
            raise KeyError(msg) from None
        return [r[i] for r in self.rows]

    def to_pandas(self) -> Any:
        """Return a pandas DataFrame with these columns and rows (pandas is imported here)."""
        from eos_magics.errors import require

        pd = require("pandas", "to_pandas()")

        return pd.DataFrame([list(r) for r in self.rows], columns=list(self.columns))

    def _body_html(self) -> str:
        parts = []
        if self._show_table:
            parts.append(html_table(self.columns, self.rows))
            if self._text_label and self.text:
                parts.append(details(self._text_label, pre(self.text)))
        elif self.text:
            parts.append(pre(self.text))
        return "".join(parts)
