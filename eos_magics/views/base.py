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
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["MAX_HTML_LINES", "MAX_HTML_ROWS", "TableView", "View", "cell_text", "plain_table"]

#: The HTML shows at most this many table rows (the text and ``to_pandas()`` have them all).
MAX_HTML_ROWS = 200
#: The HTML ``<pre>`` shows at most this many lines of text.
MAX_HTML_LINES = 2000

_BORDER = "rgba(128,128,128,0.35)"
_SHADE = "rgba(128,128,128,0.12)"
_MONO = "var(--jp-code-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace)"
_TONES = {"ok": "#2e7d4f", "fail": "#c0392b", "warn": "#a86f00", "info": "#5f6b7a"}


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
    """Return text in a scrolling ``<pre>``, escaped, cut to ``max_lines`` with a note."""
    lines = text.split("\n")
    note = ""
    if len(lines) > max_lines:
        note = f'<div style="opacity:0.7;font-size:11px">… {len(lines) - max_lines} more lines: print() shows all</div>'
        lines = lines[:max_lines]
    return (
        f'<pre style="margin:4px 0;padding:6px 8px;max-height:28em;overflow:auto;border:1px solid {_BORDER};'
        f"border-radius:3px;font-family:{_MONO};font-size:12px;line-height:1.35;white-space:pre;tab-size:8;"
        f'background:transparent;color:inherit">{_esc(chr(10).join(lines))}</pre>{note}'
    )


def details(summary: str, inner_html: str, *, open_: bool = False) -> str:
    """Return a collapsible block (``<details>``: no script needed)."""
    flag = " open" if open_ else ""
    return (
        f'<details{flag} style="margin:4px 0"><summary style="cursor:pointer;opacity:0.8;font-size:12px">'
        f"{_esc(summary)}</summary>{inner_html}</details>"
    )


def html_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, max_rows: int = MAX_HTML_ROWS) -> str:
    """Return an escaped HTML table, cut to ``max_rows`` rows with a note."""
    cell = f"padding:2px 10px 2px 4px;border-bottom:1px solid {_BORDER};text-align:left;vertical-align:top"
    head = "".join(
        f'<th style="{cell};font-weight:600;background:{_SHADE};white-space:nowrap">{_esc(c)}</th>' for c in columns
    )
    body = "".join(
        "<tr>" + "".join(f'<td style="{cell};font-family:{_MONO}">{_esc(cell_text(v))}</td>' for v in row) + "</tr>"
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
    return (
        f'<div style="overflow-x:auto"><table style="border-collapse:collapse;font-size:12px;margin:4px 0;'
        f'color:inherit;background:transparent"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
        f"{note}"
    )


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
            parts.append(f'<div style="font-weight:600;margin:0 0 4px 0">{mark}{_esc(self.title)}</div>')
        if self._summary:
            parts.append(
                f'<div style="margin:0 0 4px 0;font-family:{_MONO};font-size:12px">{_esc(self._summary)}</div>'
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
        import pandas as pd

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
