"""Draw partition ownership over time as a self-contained SVG: one lane per group and partition.

Role
----
:func:`ownership_svg` turns an :class:`~engine.views.ownership.Ownership` into SVG text a notebook
can display: time runs left to right over the window, each lane is one partition of one group,
each bar is one member owning it (one colour per member within its group, its name on the bar when
it fits), and each gap with no owner is a red hatched box at least 2 px wide, so a gap of a few
milliseconds in a window of a minute still shows. The lane's total time without an owner is
printed at its right.

Invariants
----------
- Deterministic: the output depends only on the ownership; integer coordinates.
- Self-contained: no script, no style sheet, no external reference; every text is XML-escaped.
  Text and axis use ``currentColor`` (light and dark themes); every bar and gap has a
  ``<title>`` with its member, start and end.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from engine.views.ownership import Ownership

__all__ = ["MEMBER_COLOURS", "ownership_svg"]

#: One colour per member of a group, in the order members first own something (Okabe-Ito).
MEMBER_COLOURS = ("#0072b2", "#009e73", "#e69f00", "#cc79a7", "#56b4e9", "#f0e442", "#000000")
_GAP = "#d1493f"
_FONT = "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"
_LABEL_W = 170
_RIGHT_W = 90
_LANE_H = 16
_TOP = 22


def ownership_svg(own: Ownership, *, width: int = 860, title: str = "partition ownership") -> str:
    """Return the ownership chart of ``own`` (see the module docstring) as an ``<svg>`` string."""
    t0, t1 = own.start_ms, max(own.end_ms, own.start_ms + 1)
    plot = width - _LABEL_W - _RIGHT_W

    def x(t: int) -> int:
        return _LABEL_W + (min(max(t, t0), t1) - t0) * plot // (t1 - t0)

    body: list[str] = [
        (
            f'<line x1="{_LABEL_W}" y1="{_TOP - 6}" x2="{_LABEL_W + plot}" y2="{_TOP - 6}" '
            'stroke="currentColor" stroke-opacity="0.5"/>'
        ),
        f'<text x="{_LABEL_W}" y="{_TOP - 10}" fill="currentColor">{t0} ms</text>',
        f'<text x="{_LABEL_W + plot}" y="{_TOP - 10}" text-anchor="end" fill="currentColor">{t1} ms</text>',
        f'<text x="{width - 4}" y="{_TOP - 10}" text-anchor="end" fill="currentColor">no owner</text>',
    ]
    colours: dict[tuple[str, str], str] = {}
    previous_group = None
    y = _TOP
    for p in own.partitions:
        if previous_group is not None and p.group != previous_group:
            y += _LANE_H // 2
        previous_group = p.group
        for member in p.owners:
            taken = sum(1 for g, _ in colours if g == p.group)
            colours.setdefault((p.group, member), MEMBER_COLOURS[taken % len(MEMBER_COLOURS)])
        lane = f"{p.group} {p.topic}-{p.partition}"
        text = f'<text x="{_LABEL_W - 6}" y="{y + 11}" text-anchor="end" fill="currentColor">{escape(lane)}</text>'
        body.append(text)
        for i in p.owned:
            x0, x1 = x(i.start_ms), x(i.end_ms)
            tip = f"{lane}: {i.member} owned it {i.start_ms}..{i.end_ms} ms"
            label = ""
            if i.member is not None and (x1 - x0) >= 7 * len(i.member) + 6:
                label = f'<text x="{x0 + 3}" y="{y + 11}" fill="#ffffff">{escape(i.member)}</text>'
            colour = colours[(p.group, i.member or "")]
            body.append(
                f'<g><title>{escape(tip)}</title><rect x="{x0}" y="{y + 1}" width="{max(1, x1 - x0)}" '
                f'height="{_LANE_H - 3}" fill="{colour}" fill-opacity="0.85"/>{label}</g>'
            )
        for g in p.gaps:
            x0, x1 = x(g.start_ms), x(g.end_ms)
            tip = f"{lane}: no owner {g.start_ms}..{g.end_ms} ms ({g.ms} ms)"
            body.append(
                f'<g><title>{escape(tip)}</title><rect x="{x0}" y="{y + 1}" width="{max(2, x1 - x0)}" '
                f'height="{_LANE_H - 3}" fill="{_GAP}" fill-opacity="0.35" stroke="{_GAP}"/></g>'
            )
        total = f"{p.gap_ms} ms" if p.gap_ms else "-"
        body.append(f'<text x="{width - 4}" y="{y + 11}" text-anchor="end" fill="currentColor">{total}</text>')
        y += _LANE_H
    height = y + 6
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" font-family={quoteattr(_FONT)} font-size="10" '
        'style="max-width:100%;height:auto;display:block">'
    )
    return head + f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
