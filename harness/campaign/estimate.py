"""How long a campaign will take, before any run starts (`fencepost campaign --plan`).

Rules:
- A run's time is its time limit plus an overhead (setup, heal, quiesce, final reads,
  teardown, check, report). The overhead is learned: the median, over the earlier runs of
  the same configuration (system, truncation, faults) found in the results folder's
  campaigns, of their seconds minus their time limit, taken from runs made with the same
  `--parallel` when there are any (side by side, runs share the CPUs and each takes longer).
  Without earlier runs it is modelled: MODELLED_OVERHEAD_S by system.
- With `--parallel N` the runs are dealt to N slots in plan order, each to the slot that
  frees first (as the campaign does); the campaign's time is when the last slot is done.
"""
from __future__ import annotations

import heapq
import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from fencepost.clusters import is_kafka
from fencepost.harness.campaign.plan import PlannedRun
from fencepost.harness.rundir.names import CAMPAIGN_RUNS_DIR, CAMPAIGNS_DIR, OUTCOME_FILE

# A run's seconds beyond its time limit, measured on a 2-core machine (docs/BENCHMARKS.md).
MODELLED_OVERHEAD_S = {"own": 6.0, "kafka": 45.0}


@dataclass(frozen=True)
class RunEstimate:
    run: PlannedRun
    seconds: float
    learned_from: int  # earlier runs the overhead was taken from; 0: modelled


def configuration(run: PlannedRun) -> tuple[str, str, str]:
    return run.spec.system, run.spec.truncation, run.spec.faults or "none"


def earlier_overheads(results: Path, parallel: int) -> dict[tuple[str, str, str], list[float]]:
    """Configuration -> seconds beyond the time limit of earlier campaign runs (those made at
    this parallel level when there are any for the configuration)."""
    same: dict[tuple[str, str, str], list[float]] = {}
    other: dict[tuple[str, str, str], list[float]] = {}
    for path in results.glob(f"{CAMPAIGNS_DIR}/*/*/{CAMPAIGN_RUNS_DIR}/*/{OUTCOME_FILE}"):
        if path.parent.parent.parent.is_symlink() or path.parent.parent.parent.parent.is_symlink():
            continue
        try:
            outcome = json.loads(path.read_text())
            config = outcome["config"]
            key = (str(config["system"]), str(config["truncation"]), str(config["faults"]))
            overhead = float(outcome["seconds"]) - float(outcome["time_limit"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # outcomes before time limits were recorded, or crashed early: not a measure
        if outcome.get("verdict") == "crashed":
            continue
        (same if int(outcome.get("parallel") or 1) == parallel else other).setdefault(key, []).append(overhead)
    return {key: same.get(key) or other[key] for key in {*same, *other}}


def estimate(runs: tuple[PlannedRun, ...], results: Path, parallel: int = 1) -> tuple[list[RunEstimate], float]:
    """Each run's estimate, and the campaign's time with `parallel` slots."""
    learned = earlier_overheads(results, parallel)
    estimates = []
    for run in runs:
        seen = learned.get(configuration(run), [])
        overhead = (statistics.median(seen) if seen
                    else MODELLED_OVERHEAD_S["kafka" if is_kafka(run.spec.system) else "own"])
        estimates.append(RunEstimate(run, run.spec.time_limit + max(0.0, overhead), len(seen)))
    slots = [0.0] * max(1, parallel)
    for e in estimates:
        heapq.heapreplace(slots, slots[0] + e.seconds)
    return estimates, max(slots) if estimates else 0.0


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return (f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s" if rest >= 60
            else f"{rest} s")
