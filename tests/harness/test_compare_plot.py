"""compare.png (harness/compare/plot.py): each group's bars centred on its label, a zero rate
drawn as a visible mark (a bar of height 0 draws nothing), and every bar annotated with its
invalid runs over its runs with a verdict."""
from __future__ import annotations

from statistics import mean

import pytest
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from fencepost.harness.compare.plot import draw_rates, plot_rates
from fencepost.harness.compare.table import Row


@pytest.fixture(autouse=True)
def close_figures():
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


def row(system: str, truncation: str, faults: str, runs: int, invalid: int, unknown: int = 0,
        crashed: int = 0) -> Row:
    return Row(system, truncation, faults, runs, invalid, unknown, crashed, {}, {})


def bar_centres(ax) -> list[float]:
    return [p.get_x() + p.get_width() / 2 for p in ax.patches if isinstance(p, Rectangle)]


def test_every_group_of_bars_is_centred_on_its_label():
    # zombie has only one of the two versions: its bar must sit on its label, not beside it
    table = [row("own", "hw", "kill", 5, 3), row("own", "kip320", "kill", 5, 1),
             row("own", "hw", "zombie", 4, 4), row("kafka:2.0.1", "kip320", "partition", 3, 1),
             row("own", "hw", "partition", 3, 2), row("kafka:1.1.1", "hw", "partition", 3, 3)]
    ax = draw_rates(table).axes[0]
    ticks = {label.get_text(): x for label, x in zip(ax.get_xticklabels(), ax.get_xticks())}
    assert set(ticks) == {"kill", "zombie", "partition"}
    centres = bar_centres(ax)
    assert len(centres) == len(table)
    for fault, x in ticks.items():
        group = [c for c in centres if abs(c - x) < 0.5]
        assert len(group) == sum(r.faults == fault for r in table)
        assert mean(group) == pytest.approx(x), fault


def test_a_zero_rate_is_drawn_and_every_bar_says_invalid_over_runs():
    table = [row("own", "hw", "kill", 5, 3, unknown=1), row("own", "kip320", "kill", 5, 0),
             row("own", "kip320", "zombie", 2, 0, crashed=2)]
    ax = draw_rates(table).axes[0]
    zero = [a for a in ax.get_children() if a.get_gid() == "zero-rate"]
    assert len(zero) == 1 and isinstance(zero[0], Line2D) and zero[0].get_visible()
    xs, ys = zero[0].get_xdata(), zero[0].get_ydata()
    kip320_kill = sorted(bar_centres(ax))[1]
    assert min(xs) < kip320_kill < max(xs) and set(ys) == {0}
    assert zero[0].get_linewidth() >= 2 and not zero[0].get_clip_on()  # not half hidden by the axis
    texts = {t.get_text() for t in ax.texts}
    assert {"3/4", "0/5", "no verdict"} <= texts  # 3 invalid of the 4 with a verdict (1 unknown)


def test_the_plot_is_written(tmp_path):
    path = plot_rates([row("own", "hw", "kill", 5, 0)], tmp_path / "sub" / "compare.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
