"""The picture of a counterexample: one self-contained HTML page (inline CSS and
SVG, no scripts, nothing fetched) with the ops as bars on a time axis, one lane
per process (after Porcupine's visualisation), the longest order found and the
states along it, and why the rest cannot take effect.

The time axis is compressed: every distinct call or return position gets one
slot, in order, so a few ops spread over a long history stay readable.

With `RunLinks` (a page written into a run directory), the page links back to the
report and each op to its history lines in the history viewer: its bar, and a
column of the tables.
"""
from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any, Callable

from fencepost.checkers.linear.minimize import Counterexample
from fencepost.checkers.linear.model import Op


@dataclass(frozen=True, slots=True)
class RunLinks:
    """Where the page sits among a run's pages (relative links)."""
    report: str  # e.g. "../report.html"
    history: str  # the history viewer; a line is history + "#i<line>"
    lines: Callable[[Op], tuple[int, ...]]  # an op's history lines (none: not from a line)

    def line_links(self, op: Op) -> str:
        return "&ndash;".join(f'<a href="{escape(self.history)}#i{n}">{n}</a>' for n in self.lines(op))

_SLOT = 120  # px per distinct time point
_LANE = 44  # px per process lane
_BAR = 26
_LEFT = 110  # room for lane names
_TOP = 34
_CHAR = 7.3  # px per character of the bar labels' monospace font

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d1d1f; }
h1 { font-size: 20px; margin: 0 0 6px; }
p.why { max-width: 980px; background: #fff4f2; border-left: 4px solid #d4351c; padding: 8px 12px; }
svg text { font: 12px ui-monospace, monospace; }
svg .lane { font: 12px system-ui, sans-serif; fill: #555; }
svg .tick { fill: #888; font-size: 11px; }
.legend span { display: inline-block; margin-right: 18px; }
.sw { display: inline-block; width: 14px; height: 10px; margin-right: 5px; border: 1px solid #444; }
table { border-collapse: collapse; margin: 8px 0 20px; }
td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.mono { font-family: ui-monospace, monospace; }
"""

_FILL_TAKEN = "#cfe8cf"
_FILL_STUCK = "#f6c7bf"


def render_html(cx: Counterexample, title: str = "Not linearizable", links: RunLinks | None = None) -> str:
    """The page for one counterexample (see the module docstring)."""
    nav = (f'<p class="nav"><a href="{escape(links.report)}">&larr; the report</a> &middot; '
           f'<a href="{escape(links.history)}">the history viewer</a> (each op below links to its '
           f'lines there)</p>' if links else "")
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        nav,
        f'<p class="why">{escape(cx.explanation)}</p>',
        _legend(),
        _timeline(cx, links),
        _order_table(cx, links),
        _stuck_table(cx, links),
        "</body></html>",
    ])


def _lane_key(process: Any) -> tuple[int, str]:
    return (0, f"{process:>12}") if isinstance(process, int) else (1, str(process))


def _timeline(cx: Counterexample, links: RunLinks | None = None) -> str:
    lanes = sorted({op.process for op in cx.ops}, key=_lane_key)
    lane_of = {p: i for i, p in enumerate(lanes)}
    points = sorted({t for op in cx.ops for t in (op.call, op.ret) if t is not None})
    slot = {t: i for i, t in enumerate(points)}
    open_end = len(points)  # where ops with an unknown outcome run off to
    order = {op.id: i + 1 for i, op in enumerate(cx.longest)}

    def x(i: float) -> float:
        return _LEFT + i * _SLOT

    width = x(open_end + 1)
    height = _TOP + _LANE * len(lanes) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height}" '
           f'role="img" aria-label="operations by process over time">']
    for t, i in slot.items():
        out.append(f'<line x1="{x(i):.0f}" y1="{_TOP - 8}" x2="{x(i):.0f}" y2="{height - 6}" '
                   f'stroke="#eee"/>')
        out.append(f'<text class="tick" x="{x(i):.0f}" y="{_TOP - 14}" text-anchor="middle">{t}</text>')
    for p, i in lane_of.items():
        y = _TOP + i * _LANE
        name = f"process {p}" if isinstance(p, int) else str(p)
        out.append(f'<text class="lane" x="8" y="{y + _BAR / 2 + 4:.0f}">{escape(name)}</text>')
    for op in cx.ops:
        y = _TOP + lane_of[op.process] * _LANE
        x1 = x(slot[op.call])
        x2 = x(open_end) if op.ret is None else max(x(slot[op.ret]), x1 + 14)
        taken = op.id in order
        dash = ' stroke-dasharray="5 3"' if op.ret is None else ""
        ends = f"called {op.call}, " + ("outcome unknown" if op.ret is None else f"returned {op.ret}")
        lines = links.lines(op) if links else ()
        out.append(f'<a href="{escape(links.history)}#i{lines[0]}">' if links and lines else "<g>")
        out.append(f"<title>{escape(cx.descriptions[op.id])} ({ends})</title>")
        out.append(f'<rect x="{x1:.0f}" y="{y}" width="{x2 - x1:.0f}" height="{_BAR}" rx="4" '
                   f'fill="{_FILL_TAKEN if taken else _FILL_STUCK}" stroke="#444"{dash}/>')
        text_x = x1 + 6
        if taken:
            out.append(f'<circle cx="{x1 + 11:.0f}" cy="{y + _BAR / 2:.0f}" r="8" fill="#2e7d32"/>')
            out.append(f'<text x="{x1 + 11:.0f}" y="{y + _BAR / 2 + 4:.0f}" fill="#fff" '
                       f'text-anchor="middle">{order[op.id]}</text>')
            text_x = x1 + 24
        label = _fit(cx.labels[op.id], x2 - text_x - 4)
        out.append(f'<text x="{text_x:.0f}" y="{y + _BAR / 2 + 4:.0f}">{escape(label)}</text>')
        out.append("</a>" if lines else "</g>")
    out.append("</svg>")
    return "\n".join(out)


def _fit(label: str, width: float) -> str:
    """`label` cut to what fits in `width` px (the tooltip has it whole)."""
    room = max(int(width / _CHAR), 3)
    return label if len(label) <= room else label[:room - 1] + "…"


def _legend() -> str:
    return ('<p class="legend">'
            f'<span><i class="sw" style="background:{_FILL_TAKEN}"></i>takes effect in the longest '
            'order found (numbered)</span>'
            f'<span><i class="sw" style="background:{_FILL_STUCK}"></i>cannot take effect after it</span>'
            '<span><i class="sw" style="border-style:dashed"></i>outcome unknown (may never take '
            'effect)</span></p>')


def _order_table(cx: Counterexample, links: RunLinks | None = None) -> str:
    extra = "<td></td>" if links else ""
    rows = [f'<tr><td>0</td><td>(start)</td>{extra}<td class="mono">{escape(cx.states[0])}</td></tr>']
    for i, op in enumerate(cx.longest, 1):
        lines = f"<td>{links.line_links(op)}</td>" if links else ""
        rows.append(f'<tr><td>{i}</td><td class="mono">{escape(cx.descriptions[op.id])}</td>{lines}'
                    f'<td class="mono">{escape(cx.states[i])}</td></tr>')
    head = "<th>history lines</th>" if links else ""
    return (f"<h2>Longest order found</h2><table><tr><th>#</th><th>operation</th>{head}"
            "<th>state after it</th></tr>" + "".join(rows) + "</table>")


def _stuck_table(cx: Counterexample, links: RunLinks | None = None) -> str:
    rows = [f'<tr><td class="mono">{escape(cx.descriptions[op.id])}</td>'
            + (f"<td>{links.line_links(op)}</td>" if links else "") + f"<td>{escape(why)}</td></tr>"
            for op, why in cx.stuck]
    head = "<th>history lines</th>" if links else ""
    return (f"<h2>Then stuck</h2><table><tr><th>operation</th>{head}<th>why it cannot take effect next"
            "</th></tr>" + "".join(rows) + "</table>")
