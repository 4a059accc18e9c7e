"""The nemesis ops a run recorded in its history, as the entries of a scripted schedule
(nemesis/schedule.py: `{at, action}`), grouped into units that delta debugging removes
whole.

Rules:
- Time: an entry's `at` is its action's invoke time minus the time of the history's first
  op (the main phase's start: the traffic and the nemesis start together), in seconds,
  rounded to milliseconds.
- Actions: only top-level ops count (a scenario's own steps carry `scenario` and are the
  scenario's business). A fault's start becomes `start FAULT:TARGET` with the target the
  run used (a drawn one as drawn: the node a target picks comes from the run's seed, as
  then); a scenario becomes `start SCENARIO:PARTITION` with the partition it chose (its
  info line); a fault's stop becomes `stop FAULT`; a heal mid-run `heal`.
- The heal that ends the main phase (the last `heal`, at or after the time limit less a
  second, with the stops it made just before it) is left out: every run ends with it.
- Units: a start with the stop of that fault after it is one unit (removed together, so a
  script never stops what it did not start); a scenario, a stop without a start, and a
  heal are units of their own.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from fencepost.harness.errors import BadInput, Problems, printable
from fencepost.harness.rundir.history import NEMESIS, iter_history
from fencepost.harness.rundir.names import HISTORY_FILE
from fencepost.nemesis.spec import FAULT_KINDS, stops_by_f

# The ops that start and heal each fault (the catalogue's, nemesis/spec.py).
START_FS = {kind.start_f: name for name, kind in FAULT_KINDS.items() if kind.start_f}
STOP_FS = stops_by_f(FAULT_KINDS)
SCENARIOS = tuple(name for name, kind in FAULT_KINDS.items() if kind.scenario)
FINAL_HEAL_SLACK_S = 1.0


@dataclass(frozen=True)
class Entry:
    at: float
    action: str

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "action": self.action}


@dataclass(frozen=True)
class Unit:
    """Entries removed or kept together: a fault's start and its stop, or one entry."""
    entries: tuple[Entry, ...]

    @property
    def start(self) -> float:
        return self.entries[0].at

    def describe(self) -> str:
        """The unit in words, for the terminal (its actions escaped: they come from the history)."""
        return printable(" .. ".join(f"{e.action} at {e.at:g}s" for e in self.entries), newlines=False)


def flatten(units: Iterable[Unit]) -> list[Entry]:
    """The entries of `units` in order of time (entries at one time in the order given)."""
    return sorted((e for u in units for e in u.entries), key=lambda e: e.at)


def recorded_script(run_dir: Path, time_limit: float) -> list[Unit]:
    """The run's nemesis actions as units (module rules)."""
    path = run_dir / HISTORY_FILE
    if not path.is_file():
        raise BadInput(f"{run_dir}: no {HISTORY_FILE}: give a run directory (e.g. results/latest)")
    ops = list(iter_history(path, Problems()))
    if not ops:
        return []
    t0 = ops[0].time
    nemesis = [op for op in ops if op.process == NEMESIS and not _in_scenario(op.value)]
    entries: list[tuple[Entry, str, Any]] = []  # (entry, kind: start/stop/heal/scenario, key)
    active: dict[str, list[tuple[int, tuple[str, ...]]]] = {}  # fault name -> (entry index, nodes) started
    pending_scenario: dict[str, int] = {}
    for n, op in enumerate(nemesis):
        at = round((op.time - t0) / 1e9, 3)
        value = op.value if isinstance(op.value, dict) else {}
        if op.type == "invoke" and op.f in START_FS:
            name = START_FS[op.f]
            entries.append((Entry(at, f"start {name}:{_target(name, value)}"), "start", name))
            done = _info_after(nemesis, n, op.f)
            nodes = tuple((done or {}).get("nodes") or ())
            active.setdefault(name, []).append((len(entries) - 1, nodes))
        elif op.type == "invoke" and op.f in STOP_FS:
            name = _stopped(op.f, tuple(value.get("nodes") or ()), active)
            entries.append((Entry(at, f"stop {name}"), "stop", name))
        elif op.type == "invoke" and op.f in SCENARIOS:
            pending_scenario[op.f] = len(entries)
            entries.append((Entry(at, f"start {op.f}"), "scenario", op.f))
        elif op.type == "info" and op.f in SCENARIOS and op.f in pending_scenario:
            index = pending_scenario.pop(op.f)
            entry, kind, key = entries[index]
            if isinstance(value.get("partition"), int):
                entries[index] = (Entry(entry.at, f"start {op.f}:{value['partition']}"), kind, key)
        elif op.type == "invoke" and op.f == "heal":
            entries.append((Entry(at, "heal"), "heal", None))
    entries = _without_final_heal(entries, time_limit)
    return _units(entries)


def _in_scenario(value: Any) -> bool:
    return isinstance(value, dict) and "scenario" in value


def _info_after(ops: list, n: int, f: str) -> dict[str, Any] | None:
    for op in ops[n + 1:]:
        if op.f == f and op.type == "info":
            return op.value if isinstance(op.value, dict) else None
    return None


def _target(name: str, value: dict[str, Any]) -> Any:
    """The target a fault start was given: its `target`, or for a fault on a partition of the
    topic the partition it chose (so that the replay moves the same one)."""
    kind = FAULT_KINDS[name]
    if "target" in value:
        return value["target"]
    if kind.partition_target and isinstance(value.get("partition"), int):
        return value["partition"]
    return kind.default_target


def _stopped(f: str, nodes: tuple[str, ...], active: dict[str, list[tuple[int, tuple[str, ...]]]]) -> str:
    """The fault a stop op stops: of the names that op can stop, the one started on these nodes
    (kill and power-cut both stop with `start`), else the first started."""
    names = STOP_FS[f]
    for name in names:
        for i, (_, started_on) in enumerate(active.get(name, [])):
            if started_on == nodes:
                active[name].pop(i)
                return name
    for name in names:
        if active.get(name):
            active[name].pop(0)
            return name
    return names[0]


def _without_final_heal(entries: list[tuple[Entry, str, Any]], time_limit: float) -> list[tuple[Entry, str, Any]]:
    heals = [i for i, (_, kind, _) in enumerate(entries) if kind == "heal"]
    if not heals or entries[heals[-1]][0].at < time_limit - FINAL_HEAL_SLACK_S:
        return entries
    cut = heals[-1]
    while cut > 0 and entries[cut - 1][1] == "stop" and entries[cut - 1][0].at >= time_limit - FINAL_HEAL_SLACK_S:
        cut -= 1
    return entries[:cut] + entries[heals[-1] + 1:]


def _units(entries: list[tuple[Entry, str, Any]]) -> list[Unit]:
    units: list[Unit] = []
    open_starts: dict[str, list[int]] = {}  # fault name -> indices into units of starts without a stop yet
    for entry, kind, key in entries:
        if kind == "stop" and open_starts.get(key):
            i = open_starts[key].pop(0)
            units[i] = Unit((*units[i].entries, entry))
            continue
        units.append(Unit((entry,)))
        if kind == "start":
            open_starts.setdefault(key, []).append(len(units) - 1)
    return units
