"""The colours every picture of a run shares — the PNG plots (figures.py) and the
HTML pages (the timeline, the history viewer) — so an outcome or a fault kind looks
the same everywhere. No matplotlib here: the pages import it too."""
from __future__ import annotations

from fencepost.harness.measures.bands import HEAL, SCENARIO

# Op outcome colours (as Jepsen's perf plots: ok blue, info orange, fail pink-red).
TYPE_COLOURS = {"ok": "#4C8BE8", "fail": "#E5396B", "info": "#F5A623"}
FAULT_COLOURS = {"partition": "#C9A227", "pause": "#8E6CC4", "kill": "#D1495B",
                 "power-cut": "#6B4226", "stop": "#EE8434", HEAL: "#2A9D8F",
                 SCENARIO: "#1982C4", "client-partition": "#7FB800", "netem": "#00A6ED",
                 "reassign": "#A23B72"}
SPARE_COLOURS = ("#F6511D", "#3B1F2B", "#6D9DC5", "#9C6644", "#5F0F40", "#0B6E4F")


def fault_colour(kind: str, spare: dict[str, str]) -> str:
    """The colour of a fault kind; kinds without one get the next spare colour
    (`spare` remembers which, per picture)."""
    if kind in FAULT_COLOURS:
        return FAULT_COLOURS[kind]
    if kind not in spare:
        spare[kind] = SPARE_COLOURS[len(spare) % len(SPARE_COLOURS)]
    return spare[kind]
