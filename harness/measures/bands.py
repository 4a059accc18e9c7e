"""Nemesis activity as time bands: from the ops the nemesis recorded (docs/NEMESIS.md,
"Recorded ops") to `Band`s the plots shade, one per fault from its start to its stop.

Each action is an `invoke` line and an `info` line; they are paired first (an info
without its invoke is an instant action; an invoke never answered lasts to the end of
the history). Then faults are opened and closed:

| opened by | kind | closed by |
|---|---|---|
| `start-partition` | partition | `stop-partition` with the same grudge (else the oldest open partition) |
| `start-client-partition` | client-partition | `stop-client-partition` with the same grudge (else the oldest open one); a `stop-partition` too (it heals the whole network) |
| `pause` | pause | `resume` of its nodes; a `kill`, `power-cut` or `stop` of its nodes |
| `kill`, `power-cut`, `stop` (clean) | kill, power-cut, stop | `start` of its nodes |
| `start-netem` | netem | `stop-netem` of its nodes |
| `start-reassign` | reassign | `stop-reassign` of the same topic-partition (else the oldest open one) |

A node-keyed fault is closed for the nodes the closing action names, where that
action ended; its other nodes stay in a band of their own from there on (a
`pause n1,n2` then `kill n2` is `pause n1,n2` up to the kill and `pause n1` after
it). A kill, power cut or clean stop ends a pause because the process it froze is
gone: the scenarios (nemesis/scenarios.py) pause a node and later kill it, and
never resume it. A `heal` (a band of its own) closes every open fault; a fault
started again on a node that already has one open closes the older one where its
action ended (a history that records a kill as kill-and-restart in one action); a
fault still open when the history ends lasts to its end. Scenarios (`leader-bounce`, `zombie`, `fast-leader-change`,
`kip101-divergence`, `last-replica-standing`: nemesis/spec.py) are
bands of kind `scenario` from their invoke to their info; their steps are faults
like any other, marked with the scenario's name; so are the clean restarts (`restart`,
`rolling-restart`: nemesis/restarts.py), whose stops and starts are bands of kind stop.
Waits (`await-*`) are not faults.
Any other action is a band of its own kind, from invoke to info.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from fencepost.nemesis.spec import FAULT_KINDS, stops_by_f

# The ops that start and heal each fault (nemesis/spec.py), and a scenario's clean `stop` of a
# node, which its `start` ends.
STOP = "stop"
FAULT_STARTS = {**{k.start_f: k.name for k in FAULT_KINDS.values() if k.start_f}, STOP: STOP}
FAULT_STOPS = stops_by_f(FAULT_KINDS, {"start": (STOP,)})
# Faults keyed by a value of their own (a grudge, a topic-partition), not by nodes: a stop closes
# the open one with the same key, else the oldest; a `stop-partition` heals every cut.
KEYED = {"partition": ("stop-partition",), "client-partition": ("stop-client-partition", "stop-partition"),
         "reassign": ("stop-reassign",)}
# A fault start that also ends other faults of its nodes: a process killed or stopped
# is no longer paused.
ENDS_ON_START = {"kill": ("pause",), "power-cut": ("pause",), "stop": ("pause",)}
SCENARIOS = tuple(kind.name for kind in FAULT_KINDS.values() if kind.scenario)
HEAL = "heal"
SCENARIO = "scenario"


@dataclass(slots=True)
class NemesisOp:
    """A nemesis line of the history."""
    index: int
    time: int  # ns since the run started
    type: str  # invoke or info (ok/fail are accepted too)
    f: str
    value: Any
    error: str | None


@dataclass(frozen=True, slots=True)
class Band:
    kind: str  # partition, pause, kill, power-cut, stop, heal, scenario, or another action's f
    start: int  # ns since the run started
    end: int
    label: str  # what it was, e.g. "kill n2" or "leader-bounce fp-1"
    scenario: str | None = None  # the scenario a step belongs to


@dataclass(slots=True)
class Action:
    f: str
    start: int
    end: int
    value: Any
    error: str | None
    invoke_index: int | None = None  # history lines; None: no such line (an info alone, or
    info_index: int | None = None  # an invoke never answered)


def pair_actions(ops: Iterable[NemesisOp], end_time: int) -> list[Action]:
    """Invoke/info pairs, in the order the actions began."""
    actions: list[Action] = []
    open_by_f: dict[str, list[Action]] = {}
    for op in ops:
        if op.type == "invoke":
            action = Action(op.f, op.time, end_time, op.value, None, op.index)
            actions.append(action)
            open_by_f.setdefault(op.f, []).append(action)
            continue
        waiting = open_by_f.get(op.f)
        if waiting:
            action = waiting.pop()  # scenario steps nest inside their scenario: last in, first out
            action.end = op.time
            action.info_index = op.index
            if op.value is not None:
                action.value = op.value
            action.error = op.error
        else:
            actions.append(Action(op.f, op.time, op.time, op.value, op.error, None, op.index))
    return actions


def nemesis_bands(ops: Iterable[NemesisOp], end_time: int) -> list[Band]:
    """The bands of a run's nemesis ops (see the module doc), ordered by start."""
    bands: list[Band] = []
    open_faults: list[tuple[str, Action, Any]] = []  # kind, the action that opened it, its key

    def close(entry: tuple[str, Action, Any], at: int) -> None:
        open_faults.remove(entry)
        kind, action, key = entry
        bands.append(Band(kind, action.start, max(at, action.start), _label(kind, key),
                          _scenario(action.value)))

    def close_nodes(kinds: tuple[str, ...], nodes: set[str], at: int) -> None:
        """Close the open faults of `kinds` on any of `nodes` at `at`; their other
        nodes carry on in a band that begins there."""
        for entry in [e for e in open_faults if e[0] in kinds and set(e[2]) & nodes]:
            close(entry, at)
            kind, action, key = entry
            rest = [node for node in key if node not in nodes]
            if rest:
                value = {**action.value, "nodes": rest} if isinstance(action.value, dict) else action.value
                carried = Action(action.f, max(at, action.start), action.end, value, action.error)
                open_faults.append((kind, carried, rest))

    for action in pair_actions(ops, end_time):
        f = action.f
        if f in FAULT_STARTS:
            kind = FAULT_STARTS[f]
            key = _key(kind, action.value) if kind in KEYED else _nodes(action.value)
            if isinstance(action.value, dict) and "skipped" in action.value:
                continue  # nothing was hit (a `leader` target without a leader)
            if kind not in KEYED:
                for entry in [e for e in open_faults if e[0] == kind and set(e[2]) & set(key)]:
                    close(entry, entry[1].end)
                close_nodes(ENDS_ON_START.get(f, ()), set(key), action.end)
            open_faults.append((kind, action, key))
        elif f in FAULT_STOPS:
            kinds = FAULT_STOPS[f]
            if kinds[0] in KEYED:
                for kind in [k for k, stops in KEYED.items() if f in stops]:
                    candidates = [e for e in open_faults if e[0] == kind]
                    if kind != kinds[0]:  # healed along (a stop-partition heals client cuts): all of them
                        closing = candidates
                    else:
                        same = [e for e in candidates if e[2] == _key(kind, action.value)]
                        closing = (same or candidates)[:1]
                    for entry in closing:
                        close(entry, action.end)
            else:
                close_nodes(kinds, set(_nodes(action.value)), action.end)
        elif f == HEAL:
            bands.append(Band(HEAL, action.start, action.end, "heal"))
            for entry in list(open_faults):
                close(entry, action.end)
        elif f in SCENARIOS:
            bands.append(Band(SCENARIO, action.start, action.end, _scenario_label(f, action.value), f))
        elif not f.startswith("await-"):
            bands.append(Band(f, action.start, action.end, f))
    for entry in list(open_faults):
        close(entry, end_time)
    bands.sort(key=lambda band: (band.start, band.end))
    return bands


def _nodes(value: Any) -> list[str]:
    nodes = value.get("nodes") if isinstance(value, dict) else None
    return [str(n) for n in nodes] if isinstance(nodes, list) else []


def _grudge(value: Any) -> Any:
    return value.get("grudge") if isinstance(value, dict) else None


def _key(kind: str, value: Any) -> Any:
    """What a keyed fault's stop names it by: the grudge, or the topic-partition (reassign)."""
    if kind == "reassign":
        if isinstance(value, dict) and value.get("topic") is not None and value.get("partition") is not None:
            return f"{value['topic']}-{value['partition']}"
        return None
    return _grudge(value)


def _scenario(value: Any) -> str | None:
    name = value.get("scenario") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def _label(kind: str, key: Any) -> str:
    if kind == "reassign":
        return f"reassign {key}" if key else "reassign"
    if kind in ("partition", "client-partition"):
        if isinstance(key, dict) and key:
            cut = "; ".join(f"{node} x {','.join(map(str, peers)) if isinstance(peers, list) else peers}"
                            for node, peers in sorted(key.items()))
            return f"{kind} {cut}"
        return kind
    return f"{kind} {','.join(key)}" if key else kind


def _scenario_label(f: str, value: Any) -> str:
    if isinstance(value, dict) and value.get("topic") is not None and value.get("partition") is not None:
        return f"{f} {value['topic']}-{value['partition']}"
    return f
