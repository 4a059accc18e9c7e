"""What every plot of the report shares: figures drawn with matplotlib's Agg canvas
(no pyplot, so no global figure state), the colours of op types and fault kinds
(colours.py, shared with the HTML pages), the nemesis shading (Jepsen's style: a band per fault from its
start to its stop, a legend entry per kind), the time axis in seconds, PNG output, and the
placeholder drawn when there is nothing to plot.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from fencepost.harness.measures.bands import SCENARIO, Band
from fencepost.harness.report.colours import fault_colour
from fencepost.harness.rundir.atomic import atomic_file

DPI = 100
WIDTH_IN = 11.0
HEIGHT_IN = 4.2
NS_PER_S = 1e9

BAND_ALPHA = 0.16
SCENARIO_STRIP = (0.94, 1.0)  # scenario bands: a strip along the top, in axes fraction
# Bands of one kind closer than this share of the plot's span are drawn as one: the
# gap would be under a pixel, and thousands of bands would cost seconds per plot.
MERGE_GAP_FRACTION = 4000


def new_figure(height_in: float = HEIGHT_IN) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    return fig, ax


def shade_bands(ax: Axes, bands: Iterable[Band]) -> list[Patch]:
    """Shade each band over the whole height (scenarios: a strip along the top),
    one collection per kind; returns the legend handles, one per kind."""
    by_kind: dict[str, list[tuple[int, int]]] = {}
    for band in bands:
        by_kind.setdefault(band.kind, []).append((band.start, max(band.end, band.start)))
    span = max((end for spans in by_kind.values() for _, end in spans), default=0)
    spare: dict[str, str] = {}
    handles = []
    for kind, intervals in by_kind.items():
        spans = [(start / NS_PER_S, (end - start) / NS_PER_S)
                 for start, end in merge_intervals(intervals, span // MERGE_GAP_FRACTION)]
        colour = fault_colour(kind, spare)
        if kind == SCENARIO:
            low, high = SCENARIO_STRIP
            ax.broken_barh(spans, (low, high - low), transform=ax.get_xaxis_transform(),
                           facecolor=colour, alpha=0.7, linewidth=0, zorder=0.5)
        else:
            # linewidth: an instant action still shows as a hairline
            ax.broken_barh(spans, (0, 1), transform=ax.get_xaxis_transform(), facecolor=colour,
                           edgecolor=colour, alpha=BAND_ALPHA, linewidth=0.4, zorder=0.5)
        handles.append(Patch(facecolor=colour, alpha=0.7 if kind == SCENARIO else 0.35,
                             label=kind if kind != SCENARIO else "scenario (top strip)"))
    return handles


def merge_intervals(intervals: list[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """(start, end) intervals united, also across gaps of at most `gap`."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1] + gap:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def time_axis(ax: Axes, end_ns: int) -> None:
    ax.set_xlabel("time since the run started (s)")
    ax.set_xlim(0, max(end_ns / NS_PER_S, 1e-3) * 1.01)


def legend(ax: Axes, handles: list, title: str | None = None) -> None:
    """A legend outside the axes on the right, so it hides no data."""
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                  title=title, title_fontsize=8, frameon=False, borderaxespad=0.0)


def placeholder(ax: Axes, text: str) -> None:
    """An empty plot that says why it is empty."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=12,
            color="#666666")
    ax.set_xticks([])
    ax.set_yticks([])


def save(fig: Figure, path: Path) -> Path:
    """Write `fig` as PNG to `path`, whole or not at all (harness/rundir/atomic.py: a `path` that
    is a link or anything but a regular file is refused, never written through); the folder is
    the caller's (build.py makes plots/ with output_folder)."""
    with atomic_file(path) as out:
        fig.savefig(out, format="png", dpi=DPI, bbox_inches="tight")
    return path
