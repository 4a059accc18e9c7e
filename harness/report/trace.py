"""Follow one value, or one offset, through a run: every event that touched it, in
time order, and what the final logs hold where it was.

A **value** target (`3-17`, what a producer sent) is touched by: its send's invoke
and its completion (ok with the offset and leader epoch acked, or fail/info), and
every poll that returned it (with the offset and leader epoch it saw). An **offset**
target (`fp/0/264`) is touched by the send acked at that offset and every poll that
returned a record there. Then, from final.jsonl, at each offset the value was acked
or polled at (or the offset itself): the final read's record, and each replica's
record, its leader epoch at that offset (from its epoch cache: the latest epoch
starting at or below the offset) and its high watermark; for a value, also every
offset the final read holds it at. Around it all, the nemesis actions that overlap
the time from the first event less `around` to the last plus `around`.

The files are read by their owners' readers: history.jsonl by `iter_history`
(harness/rundir/history.py), final.jsonl by `iter_final` (harness/rundir/final_reader.py).
`TraceCollector` is a history-scan observer, so the report traces every anomaly
example in the one pass it makes (harness/report/scan.py); `trace_run` is the whole
thing for one run (`fencepost trace`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, cast

from fencepost.checkers.partition import ReplicaState
from fencepost.harness.errors import BadInput, Problems
from fencepost.harness.measures.bands import NemesisOp, pair_actions
from fencepost.harness.rundir.final_reader import Record, iter_final
from fencepost.harness.rundir.find import history_of
from fencepost.harness.rundir.history import NEMESIS, Op, iter_history
from fencepost.harness.rundir.names import FINAL_FILE
from fencepost.harness.rundir.safe_names import safe_name

AROUND_S = 10.0
OFFSET_FORM = re.compile(r"(.+)/(\d+)/(\d+)")

Key = tuple[str, int]  # (topic, partition)
Place = tuple[str, int, int]  # (topic, partition, offset)


@dataclass(frozen=True, slots=True)
class Target:
    """A value, or an offset of a partition."""
    value: str | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None

    @property
    def place(self) -> Place | None:
        if self.offset is None:
            return None
        assert self.topic is not None and self.partition is not None  # an offset's (parse_offset)
        return (self.topic, self.partition, self.offset)

    def describe(self) -> str:
        if self.value is not None:
            return f"value {self.value!r}"
        return f"offset {self.topic}/{self.partition}/{self.offset}"

    def file_name(self) -> str:
        """A file name of its own: `value-3-17.html`, `offset-fp-0-264.html`; one with other
        characters than letters, digits, '.', '_', '-', or longer than safe_names.MAX_NAME,
        gets a readable prefix and a hash (harness/rundir/safe_names.py)."""
        if self.value is not None:
            stem = f"value-{self.value}"
        else:
            stem = f"offset-{self.topic or ''}-{self.partition}-{self.offset}"
        return f"{safe_name(stem)}.html"


def parse_offset(text: str) -> Target:
    """TOPIC/PARTITION/OFFSET (`fp/0/264`); BadInput saying the form otherwise."""
    found = OFFSET_FORM.fullmatch(text.strip())
    if found is None:
        raise BadInput(f"--offset {text!r}: write TOPIC/PARTITION/OFFSET, e.g. fp/0/264 (the partition "
                       f"and offset are whole numbers)")
    return Target(topic=found.group(1), partition=int(found.group(2)), offset=int(found.group(3)))


@dataclass(slots=True)
class Event:
    time: int  # ns since the run started
    lines: tuple[int, ...]  # history lines (an invoke and its completion: both)
    process: str
    what: str  # in words
    kind: str  # invoke, ok, fail, info, poll, nemesis
    place: Place | None = None
    epoch: int | None = None


@dataclass(slots=True)
class ReplicaAt:
    node: str
    value: str | None  # None: the replica has no record there
    epoch: int | None
    high_watermark: int | None
    log_end_offset: int | None


@dataclass(slots=True)
class FinalAt:
    """What final.jsonl holds at one offset."""
    place: Place
    read: str | None  # the final read's value there, None: none
    read_complete: bool | None  # the partition's read-state; None: no final read of it
    replicas: list[ReplicaAt] = field(default_factory=list)


@dataclass(slots=True)
class Trace:
    target: Target
    events: list[Event]  # client events and nemesis actions, in time order
    finals: list[FinalAt]
    final_present: bool
    held_at: list[Place]  # value targets: where the final read holds the value

    @property
    def touched(self) -> bool:
        return any(e.kind != "nemesis" for e in self.events) or bool(self.held_at) or any(
            f.read is not None or any(r.value is not None for r in f.replicas) for f in self.finals)


class TraceCollector:
    """Gathers, from history ops handed to it in file order, the events of each target
    (a history-scan observer); `finish` adds the final logs and the nemesis around."""

    def __init__(self, targets: Iterable[Target], around_s: float = AROUND_S):
        self.targets = list(dict.fromkeys(targets))
        self.around_ns = int(around_s * 1e9)
        self._by_value: dict[str, Target] = {t.value: t for t in self.targets if t.value is not None}
        self._by_place: dict[Place, Target] = {t.place: t for t in self.targets if t.place is not None}
        self.events: dict[Target, list[Event]] = {t: [] for t in self.targets}
        self.places: dict[Target, set[Place]] = {t: ({t.place} if t.place else set()) for t in self.targets}
        self.nemesis: list[NemesisOp] = []
        self.some_value: str | None = None  # a value sent in this run, for error messages
        self._pending: dict[Any, Op] = {}
        self._unfinished: dict[Any, Event] = {}  # a target send's invoke event, until its completion
        self.last_time = 0

    def __call__(self, op: Op) -> None:
        if op.time > self.last_time:
            self.last_time = op.time
        if op.process == NEMESIS:
            self.nemesis.append(NemesisOp(op.index, op.time, op.type, op.f, op.value, op.error))
            return
        f = op.f
        if op.type == "invoke":
            self._pending[op.process] = op
            if f == "send":
                value = op.value["value"]
                if self.some_value is None:
                    self.some_value = value
                target = self._by_value.get(value)
                if target is not None:
                    event = Event(op.time, (op.index,), str(op.process),
                                  f"send invoked: {_where(op.value)} {value!r}", "invoke")
                    self.events[target].append(event)
                    self._unfinished[op.process] = event
            return
        invoke = self._pending.pop(op.process, None)
        self._unfinished.pop(op.process, None)
        if f == "send":
            self._send_completion(op, invoke)
        elif f == "poll" and op.type == "ok" and (self._by_value or self._by_place):
            self._poll(op, invoke)

    def _send_completion(self, op: Op, invoke: Op | None) -> None:
        v = op.value
        value = v["value"]
        lines = (op.index,) if invoke is None else (invoke.index, op.index)
        waited = "" if invoke is None else f" ({_duration(op.time - invoke.time)} after its invoke)"
        place = (v["topic"], v["partition"], v["offset"]) if op.type == "ok" else None
        if op.type == "ok":
            what = (f"send ok: acked at {_where(v)} offset {v['offset']}, leader epoch "
                    f"{_epoch(v.get('leader_epoch'))}{waited}")
        else:
            what = f"send {op.type}" + (f": {op.error}" if op.error else "") + waited
        target = self._by_value.get(value)
        if target is not None:
            self.events[target].append(Event(op.time, lines, str(op.process), what, op.type, place,
                                             v.get("leader_epoch")))
            if place is not None:
                self.places[target].add(place)
        at = self._by_place.get(place) if place is not None else None
        if at is not None:
            if invoke is not None:
                self.events[at].append(Event(invoke.time, (invoke.index,), str(op.process),
                                             f"send invoked: {_where(v)} {value!r}", "invoke"))
            self.events[at].append(Event(op.time, lines, str(op.process), f"{what}: {value!r}", op.type,
                                         place, v.get("leader_epoch")))

    def _poll(self, op: Op, invoke: Op | None) -> None:
        lines = (op.index,) if invoke is None else (invoke.index, op.index)
        since = "" if invoke is None else f" (invoked at {invoke.time / 1e9:.6f} s)"
        for record in op.value["records"]:
            place = (record["topic"], record["partition"], record["offset"])
            value = record["value"]
            epoch = record.get("leader_epoch")
            for target in (self._by_value.get(value), self._by_place.get(place)):
                if target is None:
                    continue
                what = (f"poll returned {'it' if target.value is not None else repr(value)}: "
                        f"{place[0]}-{place[1]} offset {place[2]}, leader epoch {_epoch(epoch)}{since}")
                self.events[target].append(Event(op.time, lines, str(op.process), what, "poll", place, epoch))
                self.places[target].add(place)

    def finish(self, run_dir: Path, problems: Problems | None = None) -> list[Trace]:
        """The traces, with final.jsonl read for the places found (if the file is there)."""
        for event in self._unfinished.values():
            event.what += " (never completed: its outcome is unknown)"
        self._unfinished = {}
        final = _FinalAt(self.places, set(self._by_value))
        final_path = Path(run_dir) / FINAL_FILE
        present = final_path.is_file()
        if present:
            final.read(final_path, problems or Problems())
            extra = {t: {p for p in final.held.get(t.value, []) if p not in self.places[t]}
                     for t in self.targets if t.value is not None}
            if any(extra.values()):  # the value sits elsewhere too: what the replicas hold there
                more = _FinalAt({t: p for t, p in extra.items() if p}, set())
                more.read(final_path, problems or Problems())
                final.merge(more)
                for target, places in extra.items():
                    self.places[target] |= places
        actions = pair_actions(self.nemesis, self.last_time)
        traces = []
        for target in self.targets:
            events = sorted(self.events[target], key=lambda e: (e.time, e.lines))
            events += self._nemesis_around(events, actions)
            events.sort(key=lambda e: (e.time, e.lines))
            ordered = sorted(self.places[target])
            traces.append(Trace(target, events, [final.at(place) for place in ordered], present,
                                sorted(final.held.get(target.value, [])) if target.value else []))
        return traces

    def _nemesis_around(self, events: list[Event], actions: list) -> list[Event]:
        if not events:
            return []
        low = events[0].time - self.around_ns
        high = events[-1].time + self.around_ns
        around = []
        for action in actions:
            if action.end < low or action.start > high or action.f.startswith("await-"):
                continue
            lines = tuple(i for i in (action.invoke_index, action.info_index) if i is not None)
            what = f"{action.f} {_nemesis_detail(action.value)}".strip()
            what += f", {_duration(action.end - action.start)}" if action.end > action.start else ""
            if action.error:
                what += f" (error: {action.error})"
            around.append(Event(action.start, lines, NEMESIS, what, "nemesis"))
        return around


class _FinalAt:
    """One pass over final.jsonl for the places wanted (and where values sit)."""

    def __init__(self, places: dict[Target, set[Place]], values: set[str]):
        self.wanted: set[Place] = {p for ps in places.values() for p in ps}
        self.keys: set[Key] = {(p[0], p[1]) for p in self.wanted}
        self.values = values
        self.reads: dict[Place, str] = {}
        self.replicas: dict[Place, dict[str, str]] = {}
        self.states: dict[Key, dict[str, ReplicaState]] = {}
        self.complete: dict[Key, bool] = {}
        self.read_keys: set[Key] = set()
        self.held: dict[str, list[Place]] = {}

    def read(self, path: Path, problems: Problems) -> None:
        values, wanted, keys = self.values, self.wanted, self.keys
        # the kind tells the item's type and whether there is a node (final_reader.FinalEntry)
        for kind, key, node, item in iter_final(path, problems):
            if kind == "read":
                self.read_keys.add(key)
                record = cast(Record, item)
                place = (key[0], key[1], record[0])
                if place in wanted:
                    self.reads[place] = record[1]
                if record[1] in values:
                    self.held.setdefault(record[1], []).append(place)
            elif kind == "replica":
                record = cast(Record, item)
                place = (key[0], key[1], record[0])
                if place in wanted:
                    self.replicas.setdefault(place, {})[cast(str, node)] = record[1]
            elif key in keys:
                if kind == "replica-state":
                    self.states.setdefault(key, {})[cast(str, node)] = cast(ReplicaState, item)
                else:  # read-state
                    self.complete[key] = cast(bool, item) and self.complete.get(key, True)

    def merge(self, other: _FinalAt) -> None:
        self.reads.update(other.reads)
        self.replicas.update(other.replicas)
        for key, states in other.states.items():
            self.states.setdefault(key, {}).update(states)
        self.complete.update(other.complete)
        self.read_keys |= other.read_keys

    def at(self, place: Place) -> FinalAt:
        key = (place[0], place[1])
        complete = self.complete.get(key, True if key in self.read_keys else None)
        states = self.states.get(key, {})
        held = self.replicas.get(place, {})
        replicas = []
        for node in sorted(set(states) | set(held)):
            state = states.get(node)
            replicas.append(ReplicaAt(node, held.get(node), _epoch_at(state, place[2]) if state else None,
                                      state.high_watermark if state else None,
                                      state.log_end_offset if state else None))
        return FinalAt(place, self.reads.get(place), complete, replicas)


def trace_run(run_dir: Path | str, target: Target, around_s: float = AROUND_S) -> Trace:
    """The trace of one target in a run directory. BadInput when it is not a run
    directory, or nothing in it touched the target."""
    run_dir = Path(run_dir)
    history = history_of(run_dir)
    collector = TraceCollector([target], around_s)
    problems = Problems(max_kept=5)
    for op in iter_history(history, problems):
        collector(op)
    (trace,) = collector.finish(run_dir, problems)
    if not trace.touched:
        example = f" (e.g. {collector.some_value!r}, as in `fencepost trace {run_dir} {collector.some_value}`)" \
            if collector.some_value else ""
        if target.value is not None:
            raise BadInput(f"value {target.value!r} is in no send, poll or final record of {run_dir}: give a "
                           f"value a producer sent{example}; history.html's search finds values")
        raise BadInput(f"offset {target.topic}/{target.partition}/{target.offset}: no send was acked there, no "
                       f"poll returned it and the final logs hold nothing there in {run_dir}; check the topic, "
                       f"partition and offset (history.html shows them)")
    return trace


def _epoch_at(state: ReplicaState, offset: int) -> int | None:
    """The leader epoch of `offset` in a replica's epoch cache: the latest epoch whose
    start offset is at or below it; None if it starts after every entry's start (or
    the cache is empty) or lies at or beyond the log end."""
    if offset >= state.log_end_offset:
        return None
    found = None
    for epoch, start in sorted(state.epochs, key=lambda pair: pair[1]):
        if start <= offset:
            found = epoch
    return found


def _where(v: dict[str, Any]) -> str:
    return f"{v['topic']}-{v['partition']}"


def _epoch(epoch: Any) -> str:
    return "-" if epoch is None else str(epoch)


def _duration(ns: int) -> str:
    s = ns / 1e9
    return f"{s:.3f} s" if s >= 1 else f"{s * 1e3:.3f} ms"


def _nemesis_detail(value: Any) -> str:
    if not isinstance(value, dict):
        return ""
    parts = []
    if isinstance(value.get("nodes"), list) and value["nodes"]:
        parts.append(",".join(map(str, value["nodes"])))
    if isinstance(value.get("grudge"), dict) and value["grudge"]:
        parts.append("; ".join(f"{node} x {','.join(map(str, peers)) if isinstance(peers, list) else peers}"
                               for node, peers in sorted(value["grudge"].items())))
    if value.get("topic") is not None and value.get("partition") is not None:
        parts.append(f"{value['topic']}-{value['partition']}")
    if isinstance(value.get("scenario"), str):
        parts.append(f"(in {value['scenario']})")
    if isinstance(value.get("skipped"), str):
        parts.append(f"skipped: {value['skipped']}")
    return " ".join(parts)
