"""Picture: the dashboard's static picture, HTML that a notebook viewer's sanitiser keeps as drawn.

Role
----
A saved notebook, nbviewer, GitHub or an untrusted notebook in JupyterLab shows no live widget,
only an output's HTML. JupyterLab sanitises the HTML of an untrusted output: it drops ``<style>``
blocks and SVG (their text is left run together), buttons are dead, and nothing of the widget's
style sheet is loaded. :func:`picture_html` turns the panels' HTML (:mod:`widgets.panels`) into
HTML that survives that as drawn:

* every inline ``<svg>`` becomes an ``<img>`` whose ``src`` is the same SVG as a ``data:`` URI
  (JupyterLab's sanitiser checks schemes on ``href`` and ``cite`` only, and an image is inert);
* the action buttons are dropped (nothing answers them), and so are the ``data-`` attributes
  (the sanitiser drops them too; the page's scripts and tests find the live widget by them);
* the few classes that carry meaning get their style inline (``style`` attributes of the
  properties the sanitiser allows), on a light card whatever the viewer's theme, since an SVG
  drawn as an image cannot follow the page's text colour.

Invariants
----------
* No ``<style>``, ``<script>``, ``<svg>`` nor ``<button>`` in the result.
* Pure: the same panels give the same picture.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from html import escape

#: The picture's text colour; SVG text drawn in ``currentColor`` is drawn in it.
INK = "#222"
#: Styles inlined by class (the sanitiser keeps ``style`` attributes of these properties).
STYLES = {
    "eos-picture": f"font-family:sans-serif;font-size:12px;line-height:1.35;color:{INK};background:#fff;"
    "padding:6px;border:1px solid #ccc;border-radius:4px",
    "eos-picture-head": "font-family:monospace;font-weight:600;margin:0 0 6px",
    "eos-picture-note": "font-style:italic;margin:0 0 6px",
    "eos-panel": "border:1px solid #ccc;border-radius:4px;padding:4px 6px;margin:0 0 8px;overflow-x:auto",
    "eos-producer-head": "display:flex;flex-wrap:wrap;gap:10px;align-items:center",
    "eos-producer": "margin:0 0 6px",
    "eos-table": "border-collapse:collapse;font-family:monospace;font-size:11px",
    "eos-up": "color:#2e9d5e",
    "eos-paused": "color:#d39e00",
    "eos-down": "color:#d1493f",
    "eos-fenced": "color:#d1493f;font-weight:600",
    "eos-error": "color:#d1493f;font-weight:600",
    "eos-empty": "opacity:0.7;font-style:italic",
    "eos-caption": "font-weight:600;font-family:monospace",
    "eos-rec": "display:inline-block;padding:0 3px;margin:1px;border:1px solid #8a8f98;border-radius:2px;"
    "font-family:monospace;font-size:10px",
    "eos-evs": "font-family:monospace;font-size:10.5px;white-space:pre;overflow-x:auto",
    "eos-read": "display:inline-block;vertical-align:top;margin:0 8px 0 0;padding:3px 5px;border:1px solid #ccc",
}

_SVG = re.compile(r"<svg\b.*?</svg>", re.S)
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_BUTTON = re.compile(r"<button\b.*?</button>", re.S)
_CLASS = re.compile(r'class="([^"]*)"')
_DATA = re.compile(r'\sdata-[\w-]+="[^"]*"')


def svg_image(svg: str) -> str:
    """Return ``svg`` as an ``<img>`` of a ``data:`` URI, its ``<title>`` as the alt text."""
    found = _TITLE.search(svg)
    alt = found[1] if found else "picture"
    svg = svg.replace("currentColor", INK)
    data = base64.b64encode(svg.encode()).decode("ascii")
    return f'<img class="eos-picture-svg" alt="{alt}" src="data:image/svg+xml;base64,{data}" style="max-width:100%">'


def _inline(match: re.Match[str]) -> str:
    classes = match[1]
    style = ";".join(STYLES[c] for c in classes.split() if c in STYLES)
    return f'class="{classes}" style="{style}"' if style else match[0]


def sanitiser_proof(html: str) -> str:
    """Return panel HTML with its SVG as images, no buttons and the meaningful styles inline."""
    return _CLASS.sub(_inline, _convert(html))


def _convert(html: str) -> str:
    html = _DATA.sub("", _BUTTON.sub("", html))
    return _SVG.sub(lambda m: svg_image(m[0]), html)


def _head_and_panels(token: str, lines: str, body: str) -> str:
    return _CLASS.sub(_inline, f'<div class="eos-picture eos-picture-{token}">{lines}{body}</div>')


def picture_html(token: str, head: str, note: str, panels: Iterable[tuple[str, str, str]]) -> str:
    """Return the whole static picture: ``head`` and ``note`` lines, then each (name, title, html) panel.

    ``token`` names the picture (class ``eos-picture-<token>``): the live widget of the same
    dashboard hides it while it shows (``dashboard.js``).
    """
    body = "".join(
        f'<section class="eos-panel eos-p-{name}"><h4 style="margin:0 0 4px;font-size:12px">{escape(title)}</h4>'
        f"{_convert(html)}</section>"
        for name, title, html in panels
    )
    lines = f'<div class="eos-picture-head">{escape(head)}</div>'
    if note:
        lines += f'<div class="eos-picture-note">{escape(note)}</div>'
    return _head_and_panels(token, lines, body)
