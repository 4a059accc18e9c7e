"""When faults start and stop: fixed, random (seeded) and scripted schedules.

A schedule yields `Step`s: `start` a fault, `stop` the active faults of a name (or
all), `heal` (everything). A step is due `wait` seconds after the previous step
finished, or — scripted — `at` seconds after the nemesis started (a step that is
already late runs at once). Schedules draw from the RNG the driver passes
(seeded), never from a global one.

- `fixed` (`FixedSchedule(faults, interval)`): the faults in the given order, over
  and over: start, hold `interval`, stop, quiet `interval`. A scenario has no hold
  (it runs to its end when started): start, quiet `interval`.
- `random` (`RandomSchedule(faults, mean)`): every fault on a lane of its own, the
  lanes at once (faults overlap, as in Jepsen's combined nemesis): start, hold,
  stop, quiet, each hold and quiet drawn uniformly from [mean/2, 3·mean/2]; a fault
  named without a target gets one drawn at each start (`spec.DRAWN_TARGETS`). Its
  steps carry `at` (the merged timeline), so a slow action delays, never reorders.
- `scripted` (`ScriptedSchedule.from_data(entries)`): a list of entries, each
  `{"at": SECONDS, "action": ACTION}` (a TOML `[[nemesis.script]]` table) or
  `[SECONDS, ACTION]`, where ACTION is `start FAULT[:TARGET]`, `stop FAULT` (every
  active fault of that name), `stop` (every active fault) or `heal`. Entries run
  in order of `at`; entries with the same `at` in the order given.
"""
from __future__ import annotations

import heapq
import itertools
import math
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence

from fencepost.clusters import ClusterConfigError
from fencepost.nemesis.spec import DRAWN_TARGETS, FAULT_KINDS, FaultSpec, parse_fault, parse_faults

Action = Literal["start", "stop", "heal"]
SCHEDULES = ("fixed", "random", "scripted")
DEFAULT_INTERVAL_S = 10.0


@dataclass(frozen=True)
class Step:
    action: Action
    fault: FaultSpec | None = None  # start: the fault; stop: the faults of this name (None: all)
    wait: float = 0.0  # seconds after the previous step finished
    at: float | None = None  # or: seconds after the nemesis started (scripted)

    def describe(self) -> str:
        what = {"start": f"start {self.fault}", "heal": "heal",
                "stop": f"stop {self.fault.name}" if self.fault else "stop"}[self.action]
        return f"{what} at {self.at:g}s" if self.at is not None else f"{what} after {self.wait:g}s"


class Schedule(ABC):
    @property
    @abstractmethod
    def faults(self) -> tuple[FaultSpec, ...]:
        """Every fault the schedule may start (the driver checks them against the cluster up front)."""

    @abstractmethod
    def steps(self, rng: random.Random) -> Iterator[Step]:
        """The steps, possibly without end."""

    def fitted(self, can_take: Callable[[FaultSpec], bool]) -> Schedule:
        """This schedule without the choices of its own that a cluster cannot take (`can_take`)."""
        return self


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ClusterConfigError(f"nemesis {name} {value!r}: give a number of seconds > 0")
    return float(value)


def _need_faults(faults: Sequence[FaultSpec], schedule: str) -> tuple[FaultSpec, ...]:
    if not faults:
        raise ClusterConfigError(f"the {schedule} schedule needs at least one fault, e.g. kill,pause,partition")
    return tuple(faults)


def _cycle_steps(order: Iterator[FaultSpec], hold, quiet) -> Iterator[Step]:
    """start, hold, stop, quiet — a scenario without hold and stop."""
    wait = 0.0
    for spec in order:
        yield Step("start", spec, wait=wait)
        if not spec.scenario:
            yield Step("stop", spec, wait=hold())
        wait = quiet()


@dataclass(frozen=True)
class FixedSchedule(Schedule):
    fault_specs: tuple[FaultSpec, ...]
    interval: float = DEFAULT_INTERVAL_S

    def __post_init__(self) -> None:
        object.__setattr__(self, "fault_specs", _need_faults(self.fault_specs, "fixed"))
        object.__setattr__(self, "interval", _positive("interval", self.interval))

    @property
    def faults(self) -> tuple[FaultSpec, ...]:
        return self.fault_specs

    def steps(self, rng: random.Random) -> Iterator[Step]:
        return _cycle_steps(itertools.cycle(self.fault_specs), lambda: self.interval, lambda: self.interval)


@dataclass(frozen=True)
class RandomSchedule(Schedule):
    """One lane per fault name, all running at once (Jepsen's combined nemesis): each lane
    starts its fault, holds it, stops it, stays quiet, over and over, every hold and quiet
    drawn from [mean/2, 3·mean/2]; the lanes start staggered within the first mean. So
    faults overlap (a kill while a partition is up). A fault named without a target gets
    one drawn at each start from `DRAWN_TARGETS` (those the cluster can take: `fitted`);
    several specs of one name share a lane and its draws (`kill:leader,kill:one`)."""
    fault_specs: tuple[FaultSpec, ...]
    mean: float = DEFAULT_INTERVAL_S

    def __post_init__(self) -> None:
        object.__setattr__(self, "fault_specs", _need_faults(self.fault_specs, "random"))
        object.__setattr__(self, "mean", _positive("interval", self.mean))

    @property
    def faults(self) -> tuple[FaultSpec, ...]:
        return tuple(dict.fromkeys(spec for lane in self.lanes().values() for spec in lane))

    def lanes(self) -> dict[str, tuple[FaultSpec, ...]]:
        """Fault name -> the specs its lane draws from, in the order given."""
        lanes: dict[str, list[FaultSpec]] = {}
        for spec in self.fault_specs:
            lanes.setdefault(spec.name, []).extend(_choices(spec))
        return {name: tuple(dict.fromkeys(specs)) for name, specs in lanes.items()}

    def fitted(self, can_take: Callable[[FaultSpec], bool]) -> RandomSchedule:
        """Drawn targets the cluster cannot take (minority of 2 brokers, ...) left out; a fault's
        default target and explicit targets always stay (the driver checks them strictly)."""
        kept: list[FaultSpec] = []
        for spec in self.fault_specs:
            kept.extend(c for c in _choices(spec) if not spec.drawn or c.target == spec.target or can_take(c))
        return RandomSchedule(tuple(kept), self.mean)

    def steps(self, rng: random.Random) -> Iterator[Step]:
        def draw() -> float:
            return rng.uniform(self.mean / 2, self.mean * 3 / 2)
        lanes = self.lanes()
        # (when due, lane index, is a stop): lanes merged on one timeline, ties in lane order
        due: list[tuple[float, int, bool]] = [(rng.uniform(0, self.mean), i, False) for i in range(len(lanes))]
        heapq.heapify(due)
        names = list(lanes)
        while True:
            at, lane, stopping = heapq.heappop(due)
            name = names[lane]
            if stopping:
                yield Step("stop", lanes[name][0], at=at)
                heapq.heappush(due, (at + draw(), lane, False))
                continue
            spec = rng.choice(lanes[name])
            yield Step("start", spec, at=at)
            heapq.heappush(due, (at + draw(), lane, not spec.scenario))


def _choices(spec: FaultSpec) -> list[FaultSpec]:
    """The specs a random schedule may start for `spec`: its drawn targets, or itself."""
    if not spec.drawn:
        return [spec]
    return [FaultSpec(spec.name, t) for t in DRAWN_TARGETS.get(spec.name, (spec.target,))]


@dataclass(frozen=True)
class ScriptedSchedule(Schedule):
    script: tuple[Step, ...]

    @property
    def faults(self) -> tuple[FaultSpec, ...]:
        return tuple(dict.fromkeys(s.fault for s in self.script if s.action == "start" and s.fault is not None))

    def steps(self, rng: random.Random) -> Iterator[Step]:
        return iter(self.script)

    @staticmethod
    def from_data(entries: Sequence[Mapping[str, Any] | Sequence[Any]]) -> ScriptedSchedule:
        if isinstance(entries, (str, bytes, Mapping)) or not isinstance(entries, Sequence):
            raise ClusterConfigError(f"a nemesis script is a list of entries like {{at = 5, action = "
                                     f"\"start kill:leader\"}}; got {type(entries).__name__}")
        steps = [parse_entry(entry, i) for i, entry in enumerate(entries)]
        return ScriptedSchedule(tuple(sorted(steps, key=_scripted_at)))


def _scripted_at(step: Step) -> float:
    assert step.at is not None  # parse_entry gives every scripted step its time
    return step.at


def parse_entry(entry: Mapping[str, Any] | Sequence[Any], index: int) -> Step:
    where = f"nemesis script entry {index} ({entry!r})"
    if isinstance(entry, Mapping):
        unknown = sorted(set(entry) - {"at", "action"})
        if unknown or "at" not in entry or "action" not in entry:
            raise ClusterConfigError(f"{where}: an entry has exactly the keys at and action, "
                                     f"e.g. {{at = 5, action = \"start kill:leader\"}}")
        at, action = entry["at"], entry["action"]
    elif isinstance(entry, Sequence) and not isinstance(entry, (str, bytes)) and len(entry) == 2:
        at, action = entry
    else:
        raise ClusterConfigError(f"{where}: write {{at = SECONDS, action = ACTION}} or [SECONDS, ACTION]")
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at) or at < 0:
        raise ClusterConfigError(f"{where}: at {at!r} is not a number of seconds >= 0")
    if not isinstance(action, str):
        raise ClusterConfigError(f"{where}: the action {action!r} is not a string")
    return Step(*parse_action(action, where), at=float(at))


def parse_action(text: str, where: str) -> tuple[Action, FaultSpec | None]:
    verb, _, rest = text.strip().partition(" ")
    rest = rest.strip()
    if verb == "heal" and not rest:
        return "heal", None
    if verb == "start" and rest:
        return "start", parse_fault(rest, where)
    if verb == "stop":
        if not rest:
            return "stop", None
        name = rest.partition(":")[0].strip()
        kind = FAULT_KINDS.get(name)
        if kind is None:
            raise ClusterConfigError(f"{where}: unknown fault {name!r}: choose from {', '.join(FAULT_KINDS)}")
        if kind.scenario:
            raise ClusterConfigError(f"{where}: {name} is a scenario; it ends by itself, there is nothing to stop")
        return "stop", FaultSpec(name, kind.default_target)
    raise ClusterConfigError(f"{where}: unknown action {text!r}: write `start FAULT[:TARGET]`, `stop FAULT`, "
                             f"`stop` or `heal`")


def make_schedule(kind: str, faults: str | Sequence[FaultSpec] = (), interval: float = DEFAULT_INTERVAL_S,
                  script: Sequence[Any] | None = None) -> Schedule:
    """A schedule by name, as the CLI and a test spec give it (`faults` a spec string or parsed specs)."""
    specs = parse_faults(faults) if isinstance(faults, str) else tuple(faults)
    if kind == "fixed":
        return FixedSchedule(specs, interval)
    if kind == "random":
        return RandomSchedule(specs, interval)
    if kind == "scripted":
        if script is None:
            raise ClusterConfigError("the scripted schedule needs a script: a list of {at, action} entries")
        return ScriptedSchedule.from_data(script)
    raise ClusterConfigError(f"unknown nemesis schedule {kind!r}: choose one of {', '.join(SCHEDULES)}")
