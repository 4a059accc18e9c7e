"""The operation timeline, `plots/timeline.png`: a lane per client process, each
operation a bar from its invoke to its completion coloured by outcome (an op never
completed runs to the end of the history), nemesis bands shaded behind.

Up to MAX_BARS operations are drawn one bar each. Above that, time is cut into
BINS bins and each lane into three stripes, ok over fail over info: a stripe is
coloured in a bin where an op of its outcome was running. A million ops draw as
fast as a thousand, and no failure disappears under the ok ops around it. More
than MAX_LANES processes share lanes (process ids in order, evenly grouped).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.patches import Patch

from fencepost.harness.measures.bands import Band
from fencepost.harness.report.colours import TYPE_COLOURS
from fencepost.harness.report.figures import (
    NS_PER_S,
    legend,
    new_figure,
    placeholder,
    save,
    shade_bands,
    time_axis,
)
from fencepost.harness.report.plots import PlotFile
from fencepost.harness.report.scan import FAIL, INFO, NO_TIME, OK, TYPE_NAMES, ScannedHistory

MAX_BARS = 4_000
BINS = 1_500
MAX_LANES = 64


def plot_timeline(scan: ScannedHistory, bands: list[Band], plots_dir: Path) -> PlotFile:
    end = max(scan.last_time, max((b.end for b in bands), default=0), 1)
    processes = np.unique(scan.process)
    lanes_n = min(len(processes), MAX_LANES)
    fig, ax = new_figure(height_in=min(1.8 + 0.22 * max(lanes_n, 3), 14.0))
    title = "operations per process"
    if scan.ops == 0:
        placeholder(ax, "no client operations")
    else:
        lane = np.searchsorted(processes, scan.process)
        if len(processes) > MAX_LANES:
            lane = lane * MAX_LANES // len(processes)
            title += f" ({len(processes)} processes in {MAX_LANES} lanes)"
        stop = np.where(scan.complete == NO_TIME, end, scan.complete)
        if scan.ops <= MAX_BARS:
            _bars(ax, scan, lane, stop)
        else:
            _binned(ax, scan, lane, stop, lanes_n, end)
            title += f" ({scan.ops:,} ops in {BINS:,} time bins; stripes per lane: ok, fail, info)"
        _lane_ticks(ax, processes, lanes_n)
        handles = [Patch(facecolor=TYPE_COLOURS[t], label=t) for t in TYPE_NAMES]
        legend(ax, handles + shade_bands(ax, bands))
        ax.set_ylim(lanes_n - 0.5, -0.5)
        ax.set_ylabel("process")
        time_axis(ax, end)
    ax.set_title(title)
    return PlotFile("timeline", save(fig, plots_dir / "timeline.png"), "Operation timeline",
                    "A lane per client process; each operation a bar from invoke to completion, "
                    "coloured by outcome (ok blue, fail red, info orange); shaded: nemesis activity. "
                    "timeline.html draws the same, to hover and zoom.",
                    "Who was blocked when: a lane of one long orange bar across a band is a client stuck "
                    "in a request during the fault.")


def _bars(ax, scan: ScannedHistory, lane: np.ndarray, stop: np.ndarray) -> None:
    start_s = scan.invoke / NS_PER_S
    width_s = np.maximum(stop - scan.invoke, 0) / NS_PER_S
    for code, name in enumerate(TYPE_NAMES):
        for lane_no in np.unique(lane[scan.type == code]):
            where = np.flatnonzero((scan.type == code) & (lane == lane_no))
            ax.broken_barh(list(zip(start_s[where], width_s[where])), (lane_no - 0.35, 0.7),
                           facecolor=TYPE_COLOURS[name], edgecolor=TYPE_COLOURS[name],
                           linewidth=0.5, zorder=2)


def _binned(ax, scan: ScannedHistory, lane: np.ndarray, stop: np.ndarray, lanes_n: int,
            end: int) -> None:
    """Per lane three stripes (ok, fail, info), coloured in the bins where an op
    of that outcome was running."""
    width = end / BINS
    first = np.clip((scan.invoke / width).astype(np.int64), 0, BINS - 1)
    last = np.clip((stop / width).astype(np.int64), first, BINS - 1)
    stripes = len(TYPE_NAMES)
    image = np.zeros((lanes_n * stripes, BINS, 4))  # transparent where idle: the bands show through
    size = lanes_n * (BINS + 1)
    for code in (OK, FAIL, INFO):
        mine = scan.type == code
        # +1 in the bin where an op begins, -1 after the one where it ends: the
        # running sum is the number of ops of this outcome running in a bin
        starts = np.bincount(lane[mine] * (BINS + 1) + first[mine], minlength=size)
        ends = np.bincount(lane[mine] * (BINS + 1) + last[mine] + 1, minlength=size)
        running = np.cumsum((starts - ends).reshape(lanes_n, BINS + 1), axis=1)[:, :BINS]
        image[code::stripes][running > 0] = to_rgba(TYPE_COLOURS[TYPE_NAMES[code]])
    ax.imshow(image, aspect="auto", interpolation="nearest", zorder=2,
              extent=(0, end / NS_PER_S, lanes_n - 0.5, -0.5))


def _lane_ticks(ax, processes: np.ndarray, lanes_n: int) -> None:
    step = max(1, lanes_n // 32)
    ticks = list(range(0, lanes_n, step))
    if len(processes) > lanes_n:
        labels = [str(processes[t * len(processes) // lanes_n]) + "…" for t in ticks]
    else:
        labels = [str(processes[t]) for t in ticks]
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=7)
