"""The liveness section of results.json: what the run shows of the cluster ceasing to work,
beside safety and never part of `valid`. Today: the fatal markers in every node's log
(clusters/systems/markers.py: a broker that halted, a partition a broker gave up), read from
the run directory's `nodes/<node>/*.log`, so `fencepost check` finds the same again later.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from clusters.systems.markers import fatal_markers

NODES_DIR = "nodes"
MAX_MARKERS = 50  # per run: the first ones say what happened; the count says how often


def liveness(run_dir: Path, test: dict[str, Any]) -> dict[str, Any]:
    """{"findings": n, "fatal_markers": [{node, log, partition, line}, ...],
    "failed_partitions": ["n3: fp-2", ...]} for the run in `run_dir` of the system test.json names."""
    system = str(test.get("system") or "own")
    markers: list[dict[str, Any]] = []
    nodes = run_dir / NODES_DIR
    for log in sorted(nodes.glob("*/*.log")) if nodes.is_dir() else ():
        text = log.read_text(errors="replace")
        markers += [{**m.to_json(), "log": f"{NODES_DIR}/{log.parent.name}/{log.name}"}
                    for m in fatal_markers(system, log.parent.name, text)]
    failed = sorted({f"{m['node']}: {m['partition']}" for m in markers if m["partition"]})
    return {"findings": len(markers), "fatal_markers": markers[:MAX_MARKERS], "failed_partitions": failed}


def describe(section: dict[str, Any]) -> list[str]:
    """Lines a person reads: what failed, on which node, in its own words."""
    if not section.get("findings"):
        return []
    lines = [f"{section['findings']} fatal marker(s) in node logs (a liveness finding, not a safety anomaly)"]
    lines += [f"{m['node']}: {m['line']}" for m in section["fatal_markers"][:3]]
    return lines
