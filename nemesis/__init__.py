"""Faults and their schedules; every fault has a heal (docs/NEMESIS.md, docs/NEMESIS.md).

The public API, in one place:

- `parse_faults("kill,pause,partition:majorities-ring") -> tuple[FaultSpec, ...]`
  (spec.py; ClusterConfigError naming the bad part)
- `make_schedule(kind, faults, interval, script) -> Schedule` — `fixed`, `random`,
  `scripted` (schedule.py: FixedSchedule, RandomSchedule, ScriptedSchedule.from_data)
- `Nemesis(cluster, schedule, recorder, seed=, topic=, partition=, timeout=)` — checks
  every fault against the cluster up front; `.run(duration) -> RunSummary` in the
  caller's thread; `.stop()`; `.heal() -> list[str]` (driver.py)
- `start_fault(cluster, "kill:leader", recorder, ...) -> Fault` and
  `heal_cluster(cluster, recorder) -> list[str]` — the one-shot CLI verbs (driver.py)
- `HealGuard(heal)` — heal once on leaving the block, SIGINT/SIGTERM, exit (guard.py)
- `NemesisRecorder` (the `nemesis(f, value, type, error)` protocol) and
  `MemoryRecorder` (recording.py)

Modules: spec (names, targets, syntax), grudges and targets (pure choices),
context (cluster, recorder, RNG, waits), faults (partition, pause, kill,
power-cut), scenarios (leader-bounce, zombie), catalog (spec -> fault, checks),
schedule, driver, guard, recording.
"""
from fencepost.nemesis.catalog import check_fault, new_fault
from fencepost.nemesis.driver import Nemesis, RunSummary, heal_cluster, start_fault
from fencepost.nemesis.guard import HealGuard, SignalReceived
from fencepost.nemesis.recording import MemoryRecorder, NemesisRecorder
from fencepost.nemesis.schedule import FixedSchedule, RandomSchedule, Schedule, ScriptedSchedule, Step, make_schedule
from fencepost.nemesis.spec import FAULT_KINDS, FaultSpec, parse_fault, parse_faults

__all__ = [
    "FAULT_KINDS", "FaultSpec", "FixedSchedule", "HealGuard", "MemoryRecorder", "Nemesis", "NemesisRecorder",
    "RandomSchedule", "RunSummary", "Schedule", "ScriptedSchedule", "SignalReceived", "Step", "check_fault",
    "heal_cluster", "make_schedule", "new_fault", "parse_fault", "parse_faults", "start_fault",
]
