"""The invalid-run rate per configuration with its Wilson 95% interval, one bar per
(system, truncation) within a group per fault: what each protocol version buys, at a glance."""
from __future__ import annotations

from pathlib import Path

from harness.compare.table import Row


def plot_rates(table: list[Row], path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    faults = sorted({r.faults for r in table})
    versions = sorted({(r.system, r.truncation) for r in table})
    width = 0.8 / max(1, len(versions))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(faults) * max(1, len(versions)) ** 0.5), 4.2))
    for i, version in enumerate(versions):
        xs, rates, low_err, high_err = [], [], [], []
        for j, fault in enumerate(faults):
            row = next((r for r in table if (r.system, r.truncation) == version and r.faults == fault), None)
            if row is None or not row.judged:
                continue
            low, high = row.interval
            xs.append(j + (i - (len(versions) - 1) / 2) * width)
            rates.append(row.invalid_rate)
            low_err.append(max(0.0, row.invalid_rate - low))  # the bounds round to within 1e-16 of the rate
            high_err.append(max(0.0, high - row.invalid_rate))
        ax.bar(xs, rates, width, yerr=[low_err, high_err], capsize=3, label=f"{version[0]} {version[1]}")
    ax.set_xticks(range(len(faults)), faults)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("invalid runs (Wilson 95% interval)")
    ax.set_title("invalid-run rate per fault and protocol version")
    ax.legend(fontsize="small", ncols=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
