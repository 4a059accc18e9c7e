"""compare.png: the invalid-run rate per configuration with its Wilson 95% interval, a
group of bars per fault, a bar per (system, truncation) in the table's order
(harness/compare/order.py), one colour per (system, truncation) across groups.

Rules: each group's bars are centred on its label, whichever configurations it has; a
rate of 0 (a bar of height 0 draws nothing) is drawn as a thick mark on the axis in the
bar's colour; every bar is annotated with its invalid runs over its runs with a verdict
(`3/4`: the rate's own fraction; unknown and crashed runs are left out); a configuration
without any run with a verdict has no bar, only the words `no verdict`."""
from __future__ import annotations

from pathlib import Path

from fencepost.harness.compare.table import Row

GROUP_WIDTH = 0.8  # of the unit between two fault groups


def draw_rates(table: list[Row]):
    """The figure (matplotlib), for saving or inspecting; `table` in the order of `rows`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    faults = list(dict.fromkeys(r.faults for r in table))
    versions = list(dict.fromkeys((r.system, r.truncation) for r in sorted(table, key=_version_order)))
    colours = {v: f"C{i % 10}" for i, v in enumerate(versions)}
    most = max((sum(r.faults == f for r in table) for f in faults), default=1)
    width = GROUP_WIDTH / most
    fig, ax = plt.subplots(figsize=(max(6.0, 1.5 + 0.6 * len(table) + 0.5 * len(faults)),
                                    4.6 + 0.25 * ((len(versions) + 2) // 3)))
    labelled: set[tuple[str, str]] = set()
    for j, fault in enumerate(faults):
        group = [r for r in table if r.faults == fault]
        for k, row in enumerate(group):
            x = j + (k - (len(group) - 1) / 2) * width
            version = (row.system, row.truncation)
            name = None if version in labelled else f"{row.system} {row.truncation}"
            labelled.add(version)
            if not row.judged:
                ax.bar([x], [0.0], width, color=colours[version], label=name)
                ax.text(x, 0.02, "no verdict", ha="center", va="bottom", rotation=90, fontsize="x-small")
                continue
            rate, (low, high) = row.invalid_rate, row.interval
            ax.bar([x], [rate], width, color=colours[version], label=name,
                   yerr=[[max(0.0, rate - low)], [max(0.0, high - rate)]],  # bounds round to 1e-16 of it
                   capsize=3)
            if rate == 0:
                ax.plot([x - width * 0.4, x + width * 0.4], [0, 0], color=colours[version], linewidth=4,
                        solid_capstyle="butt", clip_on=False, zorder=3, gid="zero-rate")
            ax.text(x, high + 0.02, f"{row.invalid}/{row.judged}", ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(range(len(faults)), faults)
    ax.set_xlim(-0.5, len(faults) - 0.5)
    ax.set_ylim(0, 1.15)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.set_ylabel("invalid-run rate (Wilson 95% interval)")
    ax.set_title("invalid runs / runs with a verdict, per fault and protocol version", fontsize="medium")
    ax.legend(fontsize="small", ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    fig.tight_layout()
    return fig


def plot_rates(table: list[Row], path: Path) -> Path:
    """Draw the figure into `path` (PNG), whole or not at all: harness/rundir/atomic.py refuses
    a `path` that is a link or anything else than a regular file, never writing through it."""
    import matplotlib.pyplot as plt

    from fencepost.harness.rundir.atomic import atomic_file

    fig = draw_rates(table)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path) as out:
            fig.savefig(out, format="png", dpi=100)
    finally:
        plt.close(fig)
    return path


def _version_order(row: Row) -> tuple:
    from fencepost.harness.compare.order import version_key
    return version_key(row.system, row.truncation)
