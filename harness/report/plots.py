"""The report's performance plots, as PNG files under RUN_DIR/plots/ (docs/REPORT.md):

- `latency-raw.png` — every completed op: x its invoke time, y its latency (log),
  coloured by outcome, marker by f; above MAX_RAW_POINTS ops a seeded random sample,
  every outcome kept visible (at least MIN_PER_GROUP points of each);
- `latency-quantiles.png` — p50/p95/p99/max latency of the ops invoked in each time
  bucket, per f (all outcomes: a timed-out op waited that long too);
- `rate.png` — completions per second in each bucket, per f and outcome;
- `unseen.png` — acked values no poll had returned yet, over time (results.json's
  `stats.partitions.*.unseen_series`, summed over the partitions);
- `realtime-lag.png` — per consumer, at each poll, how long ago the oldest acked write
  it had not read yet was acked (harness/measures/lag.py defines it).

All of them shade the nemesis bands (harness/report/figures.py). Each draws a
placeholder saying why when there is nothing to plot.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from matplotlib.lines import Line2D

from fencepost.harness.measures.bands import Band
from fencepost.harness.measures.lag import RealtimeLag
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
from fencepost.harness.report.scan import TYPE_NAMES, ScannedHistory

PLOTS_DIR = "plots"
MAX_RAW_POINTS = 200_000
MIN_PER_GROUP = 5_000
BUCKETS = 100  # time buckets of the quantile and rate plots, about
QUANTILES = ((0.5, "p50", "#2A9D8F"), (0.95, "p95", "#E9B824"), (0.99, "p99", "#EE6C2C"),
             (1.0, "max", "#B5179E"))
F_MARKERS = {"send": ".", "poll": "+", "assign": "x", "subscribe": "x", "crash": "^"}
F_STYLES: dict[str, Literal["-", "--", ":"]] = {"send": "-", "poll": "--"}
MIN_LATENCY_MS = 1e-3  # a zero latency still shows on the log scale


@dataclass(frozen=True, slots=True)
class PlotFile:
    name: str  # e.g. "latency-raw"
    path: Path
    title: str
    caption: str  # what it shows
    read: str = ""  # how to read it (the report shows it under the plot)


def write_plots(scan: ScannedHistory, bands: list[Band], results: dict[str, Any] | None,
                lag: RealtimeLag, plots_dir: Path) -> list[PlotFile]:
    """Draw the five plots into `plots_dir`; returns them in the report's order."""
    end = max(scan.last_time, max((b.end for b in bands), default=0))
    return [latency_raw(scan, bands, end, plots_dir),
            latency_quantiles(scan, bands, end, plots_dir),
            rate(scan, bands, end, plots_dir),
            unseen(results, bands, end, plots_dir),
            realtime_lag(lag, bands, end, plots_dir)]


def latency_raw(scan: ScannedHistory, bands: list[Band], end: int, plots_dir: Path) -> PlotFile:
    fig, ax = new_figure()
    done = scan.completed()
    total = int(done.sum())
    title = "latency of each op"
    if total == 0:
        placeholder(ax, "no completed operations")
    else:
        x_all = scan.invoke / NS_PER_S
        y_all = np.maximum(scan.latency() / 1e6, MIN_LATENCY_MS)
        rng = np.random.default_rng(0)
        share = min(1.0, MAX_RAW_POINTS / total)
        handles = []
        for f_code, f in enumerate(scan.fs):
            for t_code, t in enumerate(TYPE_NAMES):
                where = np.flatnonzero(done & (scan.f == f_code) & (scan.type == t_code))
                if not len(where):
                    continue
                keep = min(len(where), max(math.ceil(len(where) * share), MIN_PER_GROUP))
                if keep < len(where):
                    where = np.sort(rng.choice(where, keep, replace=False))
                ax.plot(x_all[where], y_all[where], linestyle="none", marker=F_MARKERS.get(f, "."),
                        markersize=2.5 if len(where) > 20_000 else 4, color=TYPE_COLOURS[t],
                        alpha=0.6, rasterized=True, zorder=2)
                handles.append(Line2D([], [], linestyle="none", marker=F_MARKERS.get(f, "."),
                                      markersize=6, color=TYPE_COLOURS[t], label=f"{f} {t}"))
        ax.set_yscale("log")
        ax.set_ylabel("latency (ms)")
        if share < 1.0:
            title += f" (a random sample: {MAX_RAW_POINTS:,} of {total:,} ops)"
        legend(ax, handles + shade_bands(ax, bands))
        time_axis(ax, end)
    ax.set_title(title)
    return PlotFile("latency-raw", save(fig, plots_dir / "latency-raw.png"), "Raw latency",
                    "Each completed operation at its invoke time, its latency on a log scale, "
                    "coloured by outcome (ok blue, fail red, info orange), marker by kind; shaded: "
                    "nemesis activity.",
                    "Latency jumping inside a fault band is a partition or a paused leader; info ops lined "
                    "up at one latency are client timeouts; failures clustering in a band are the fault's.")


def latency_quantiles(scan: ScannedHistory, bands: list[Band], end: int,
                      plots_dir: Path) -> PlotFile:
    fig, ax = new_figure()
    done = scan.completed()
    width = bucket_width(end)
    if not done.any():
        placeholder(ax, "no completed operations")
    else:
        lat = np.maximum(scan.latency() / 1e6, MIN_LATENCY_MS)
        handles = []
        for f_code, f in enumerate(scan.fs):
            where = np.flatnonzero(done & (scan.f == f_code))
            if not len(where):
                continue
            buckets, values = bucket_quantiles(scan.invoke[where] // width, lat[where],
                                               [q for q, _, _ in QUANTILES])
            x = (buckets + 0.5) * width / NS_PER_S
            for (_, name, colour), column in zip(QUANTILES, values.T):
                ax.plot(x, column, linestyle=F_STYLES.get(f, ":"), marker=".", markersize=3,
                        color=colour, linewidth=1.2, zorder=2)
            handles.append(Line2D([], [], linestyle=F_STYLES.get(f, ":"), color="#444444", label=f))
        handles += [Line2D([], [], color=colour, label=name) for _, name, colour in QUANTILES]
        ax.set_yscale("log")
        ax.set_ylabel("latency (ms)")
        legend(ax, handles + shade_bands(ax, bands))
        time_axis(ax, end)
    ax.set_title(f"latency quantiles per {_seconds(width)} bucket (by invoke time)")
    return PlotFile("latency-quantiles", save(fig, plots_dir / "latency-quantiles.png"),
                    "Latency quantiles",
                    f"p50, p95, p99 and max latency of the operations invoked in each "
                    f"{_seconds(width)} bucket, per kind of operation (line style); every outcome counts.",
                    "p99 and max rising in a fault band while p50 stays: a few requests stuck behind a "
                    "failover; everything rising: the cluster stalled.")


def rate(scan: ScannedHistory, bands: list[Band], end: int, plots_dir: Path) -> PlotFile:
    fig, ax = new_figure()
    done = scan.completed()
    width = bucket_width(end)
    if not done.any():
        placeholder(ax, "no completed operations")
    else:
        n_buckets = int(end // width) + 1
        bucket = np.clip(scan.complete // width, 0, n_buckets - 1)
        x = (np.arange(n_buckets) + 0.5) * width / NS_PER_S
        handles = []
        for f_code, f in enumerate(scan.fs):
            for t_code, t in enumerate(TYPE_NAMES):
                where = done & (scan.f == f_code) & (scan.type == t_code)
                if not where.any():
                    continue
                counts = np.bincount(bucket[where], minlength=n_buckets)[:n_buckets]
                ax.plot(x, counts / (width / NS_PER_S), linestyle=F_STYLES.get(f, ":"),
                        color=TYPE_COLOURS[t], linewidth=1.3, zorder=2)
                handles.append(Line2D([], [], linestyle=F_STYLES.get(f, ":"), color=TYPE_COLOURS[t],
                                      label=f"{f} {t}"))
        ax.set_ylabel("completions per second")
        ax.set_ylim(bottom=0)
        legend(ax, handles + shade_bands(ax, bands))
        time_axis(ax, end)
    ax.set_title(f"throughput per {_seconds(width)} bucket (by completion time)")
    return PlotFile("rate", save(fig, plots_dir / "rate.png"), "Throughput",
                    "Operations completed per second, by kind (line style) and outcome (colour).",
                    "The ok rate at zero: no leader, or the ISR below min.insync.replicas; fail and info "
                    "spiking as a fault begins; the gap after a band ends is the recovery time.")


def unseen(results: dict[str, Any] | None, bands: list[Band], end: int, plots_dir: Path) -> PlotFile:
    fig, ax = new_figure()
    series = unseen_series(results)
    if not series:
        placeholder(ax, "no unseen series (results.json missing, or no acked sends)"
                    if not results else "no acked sends: nothing to see")
    else:
        times, total = sum_steps(list(series.values()))
        end = max(end, int(times[-1]))
        if len(series) <= 12:
            for name, points in series.items():
                ax.step(points[:, 0] / NS_PER_S, points[:, 1], where="post", linewidth=0.9,
                        alpha=0.8, label=name, zorder=2)
        ax.step(times / NS_PER_S, total, where="post", color="#222222", linewidth=1.6,
                label="all partitions", zorder=3)
        ax.set_ylabel("acked, not yet polled")
        ax.set_ylim(bottom=0)
        handles, _ = ax.get_legend_handles_labels()
        legend(ax, handles + shade_bands(ax, bands))
        time_axis(ax, end)
    ax.set_title("unseen: acknowledged values no poll had returned yet")
    return PlotFile("unseen", save(fig, plots_dir / "unseen.png"), "Unseen",
                    "How many acknowledged values no consumer had polled yet, over time, per partition "
                    "and summed (black).",
                    "Near zero: the consumer keeps up. Climbing and falling back: it lags and catches up. "
                    "Above zero at the end: values never polled (the unseen anomaly, informational).")


def realtime_lag(lag: RealtimeLag, bands: list[Band], end: int, plots_dir: Path) -> PlotFile:
    fig, ax = new_figure()
    series = [s for _, s in sorted(lag.series.items()) if len(s.times)]
    if not series:
        placeholder(ax, "no polls: no consumer to be behind")
    else:
        handles = []
        for s in series:
            worst, when = s.worst()
            (line,) = ax.step(np.frombuffer(s.times, dtype=np.int64) / NS_PER_S,
                              np.frombuffer(s.lags, dtype=np.int64) / NS_PER_S, where="post",
                              linewidth=1.1, zorder=2,
                              label=f"process {s.process} (worst {worst / NS_PER_S:.3g} s at "
                                    f"{when / NS_PER_S:.1f} s)")
            handles.append(line)
        ax.set_ylabel("realtime lag (s)")
        ax.set_ylim(bottom=0)
        legend(ax, handles + shade_bands(ax, bands))
        time_axis(ax, end)
    ax.set_title("realtime lag per consumer: how long ago the oldest acked write it had not read was acked")
    return PlotFile("realtime-lag", save(fig, plots_dir / "realtime-lag.png"), "Realtime lag",
                    "At each poll of a consumer (at its invoke time): how long ago the oldest acknowledged "
                    "write of its partitions that it had not yet read was acknowledged; 0 when it had read "
                    "everything acknowledged before the poll began.",
                    "A consumer keeping up stays near zero. One rising at one second per second is stuck, "
                    "or its polls fail, and drops when it catches up; the legend gives each consumer's "
                    "worst poll.")


# --- helpers -----------------------------------------------------------------------------


def bucket_width(end_ns: int, buckets: int = BUCKETS) -> int:
    """A round bucket width (1, 2 or 5 x 10^k ns) giving about `buckets` buckets."""
    raw = max(end_ns / buckets, 1.0)
    magnitude = 10 ** math.floor(math.log10(raw))
    for step in (1, 2, 5, 10):
        if raw <= step * magnitude:
            return int(step * magnitude)
    return int(10 * magnitude)


def bucket_quantiles(bucket: np.ndarray, values: np.ndarray,
                     quantiles: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """The buckets that hold values, and for each the given quantiles of its
    values (nearest rank below), as a (buckets x quantiles) array."""
    order = np.lexsort((values, bucket))
    bucket, values = bucket[order], values[order]
    present, starts, counts = np.unique(bucket, return_index=True, return_counts=True)
    columns = [values[starts + np.floor(q * (counts - 1)).astype(np.int64)] for q in quantiles]
    return present, np.column_stack(columns)


def unseen_series(results: dict[str, Any] | None) -> dict[str, np.ndarray]:
    """partition name -> (n x 2) array of [time ns, unseen count], from results.json."""
    partitions = ((results or {}).get("stats") or {}).get("partitions")
    series: dict[str, np.ndarray] = {}
    if not isinstance(partitions, dict):
        return series
    for name, stats in sorted(partitions.items()):
        points = stats.get("unseen_series") if isinstance(stats, dict) else None
        if not isinstance(points, list) or not points:
            continue
        try:
            array = np.array(points, dtype=np.float64).reshape(-1, 2)
        except (TypeError, ValueError):
            continue  # not [[time, count], ...]: not drawn
        series[str(name)] = array[np.argsort(array[:, 0], kind="stable")]
    return series


def sum_steps(series: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The sum of step functions (each holds its value from its time until its
    next point; 0 before its first), at the union of their times."""
    times = np.unique(np.concatenate([s[:, 0] for s in series]))
    total = np.zeros(len(times))
    for s in series:
        at = np.searchsorted(s[:, 0], times, side="right") - 1
        total += np.where(at >= 0, s[np.maximum(at, 0), 1], 0.0)
    return times, total


def _seconds(width_ns: int) -> str:
    s = width_ns / NS_PER_S
    if s >= 1:
        return f"{s:g} s"
    if s >= 1e-3:
        return f"{s * 1e3:g} ms"
    return f"{s * 1e6:g} µs"
