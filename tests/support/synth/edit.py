"""Editing a synthetic run in place: finding ops in its history, inserting and
moving history lines, and changing the final logs (read and replicas) record by
record. The planters are built from these; each helper keeps the history well
formed (index = line number, time non-decreasing, one op in flight per process).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.support.synth.run import PartitionFinal, SynthRun

Line = dict[str, Any]


class CannotPlant(Exception):
    """The run lacks what a planter needs (e.g. no poll with two records)."""


@dataclass(slots=True)
class OpRef:
    """One operation of a history: its invoke line and its completion line
    (None if it never completed). Lines are the history's own dicts, so a ref
    stays valid while lines are inserted or moved."""

    process: Any
    f: str
    invoke: Line
    complete: Line | None

    @property
    def type(self) -> str:
        return self.complete["type"] if self.complete is not None else "info"

    def indices(self) -> list[int | None]:
        return [self.invoke["index"], None if self.complete is None else self.complete["index"]]


def pair_ops(history: list[Line]) -> list[OpRef]:
    ops: list[OpRef] = []
    pending: dict[Any, OpRef] = {}
    for line in history:
        if line["type"] == "invoke":
            op = OpRef(line["process"], line["f"], line, None)
            pending[line["process"]] = op
            ops.append(op)
        else:
            op = pending.pop(line["process"], None)
            if op is not None:
                op.complete = line
    return ops


def acked_sends(history: list[Line], partition: int | None = None) -> list[OpRef]:
    return [op for op in pair_ops(history)
            if op.f == "send" and op.type == "ok"
            and (partition is None or op.complete["value"]["partition"] == partition)]


def ok_polls(history: list[Line]) -> list[OpRef]:
    return [op for op in pair_ops(history) if op.f == "poll" and op.type == "ok"]


def poll_records(op: OpRef, partition: int) -> list[dict[str, Any]]:
    """The records of one partition in an ok poll, in the order returned (the
    dicts inside the line: editing them edits the history)."""
    return [r for r in op.complete["value"]["records"] if r["partition"] == partition]


def consecutive_polls(history: list[Line], partition: int) -> Iterator[tuple[OpRef, OpRef]]:
    """Pairs of ok polls of one process that both returned records of
    `partition`, with no assign, crash or info poll (it may have consumed
    records nobody saw) of that process between them."""
    last: dict[Any, OpRef] = {}
    for op in pair_ops(history):
        if op.f in ("assign", "subscribe", "crash") or (op.f == "poll" and op.type == "info"):
            last.pop(op.process, None)
        elif op.f == "poll" and op.type == "ok" and poll_records(op, partition):
            if op.process in last:
                yield last[op.process], op
            last[op.process] = op


def fresh_process(history: list[Line]) -> int:
    return 1 + max((line["process"] for line in history if isinstance(line["process"], int)), default=-1)


def renumber(history: list[Line]) -> None:
    """index = line number; time made non-decreasing (a moved or inserted line
    takes the time of the line before it when it would go back in time)."""
    last = 0
    for i, line in enumerate(history):
        line["index"] = i
        if line["time"] < last:
            line["time"] = last
        last = line["time"]


def insert_after(history: list[Line], anchor: Line | None, lines: list[Line]) -> None:
    """Insert `lines` right after `anchor` (at the start if None); renumbers."""
    at = 0 if anchor is None else _position(history, anchor) + 1
    for line in lines:
        line.setdefault("time", history[at - 1]["time"] if at else 0)
        line.setdefault("index", 0)
    history[at:at] = lines
    renumber(history)


def insert_before(history: list[Line], anchor: Line, lines: list[Line]) -> None:
    at = _position(history, anchor)
    insert_after(history, history[at - 1] if at else None, lines)


def move_after(history: list[Line], op: OpRef, anchor: Line) -> None:
    """Make `op` begin right after `anchor`. If its completion is already later
    than the anchor, only the invoke moves; otherwise the op is given a fresh
    process (so no process has two ops in flight) and moves whole."""
    if op.complete is not None and _position(history, op.complete) > _position(history, anchor):
        del history[_position(history, op.invoke)]
        insert_after(history, anchor, [op.invoke])
        return
    process = fresh_process(history)
    del history[_position(history, op.invoke)]
    if op.complete is not None:
        del history[_position(history, op.complete)]
    moved = [op.invoke] + ([op.complete] if op.complete is not None else [])
    for line in moved:
        line["process"] = process
        line["time"] = 0  # renumber gives it the time of the line before
    op.process = process
    insert_after(history, anchor, moved)


def send_lines(process: int, topic: str, partition: int, value: str, outcome: str | None,
               offset: int | None = None, epoch: int | None = None,
               error: str | None = None) -> tuple[Line, Line | None]:
    """An invoke and (unless outcome is None) a completion line of one send."""
    v = {"topic": topic, "partition": partition, "value": value}
    invoke = {"process": process, "type": "invoke", "f": "send", "value": dict(v)}
    if outcome is None:
        return invoke, None
    if outcome == "ok":
        v.update(offset=offset, leader_epoch=epoch)
    complete = {"process": process, "type": outcome, "f": "send", "value": v}
    if outcome != "ok":
        complete["error"] = error or ("NOT_ENOUGH_REPLICAS" if outcome == "fail" else "request timed out")
    return invoke, complete


# -- final logs ----------------------------------------------------------------

def final_value(run: SynthRun, partition: int, offset: int) -> str | None:
    for o, v, _ in run.final[partition].read:
        if o == offset:
            return v
    return None


def remove_record(run: SynthRun, partition: int, offset: int) -> str:
    """Remove the record at `offset` from the final read and from every replica
    (a record lost everywhere); returns its value."""
    pf = run.final[partition]
    gone = [r for r in pf.read if r[0] == offset]
    if not gone:
        raise CannotPlant(f"partition {partition} has no record at offset {offset}")
    pf.read = [r for r in pf.read if r[0] != offset]
    for rf in pf.replicas.values():
        rf.records = [r for r in rf.records if r[0] != offset]
    return gone[0][1]


def replace_value(run: SynthRun, partition: int, offset: int, value: str) -> str:
    """Put `value` at `offset` in the final read and every replica holding that
    offset; returns the value it replaced."""
    pf = run.final[partition]
    old = final_value(run, partition, offset)
    if old is None:
        raise CannotPlant(f"partition {partition} has no record at offset {offset}")
    pf.read = [(o, value if o == offset else v, e) for o, v, e in pf.read]
    for rf in pf.replicas.values():
        rf.records = [(o, value if o == offset else v, e) for o, v, e in rf.records]
    return old


def append_record(run: SynthRun, partition: int, value: str) -> int:
    """Append a committed record at the end of the final read and of every
    replica that holds the whole read; an uncommitted tail in its way is dropped
    (a new leader would have truncated it). Returns the record's offset."""
    pf = run.final[partition]
    end = pf.end_offset()
    leader = pf.replicas.get(pf.leader)
    epoch = leader.leader_epoch if leader is not None else None
    pf.read.append((end, value, epoch))
    prefix = pf.read[:-1]
    for rf in pf.replicas.values():
        rf.records = [r for r in rf.records if r[0] < end]
        rf.log_end_offset = min(rf.log_end_offset, end)
        if rf.records == prefix:
            rf.records.append((end, value, epoch))
            rf.log_end_offset = end + 1
            if rf.high_watermark == end:
                rf.high_watermark = end + 1
    return end


def insert_record(run: SynthRun, partition: int, after: int, value: str) -> int:
    """Insert a record right after offset `after` as if it had been appended
    together with that record: every later offset of the partition moves up by
    one (acks, polls, assign offsets, the final read, replicas, their states),
    and each poll that read across the new offset, or continued from `after`,
    now returns it too. Returns the new record's offset."""
    new = after + 1
    pf = run.final[partition]
    held = [r for r in pf.read if r[0] == after]
    if not held:
        raise CannotPlant(f"partition {partition} has no record at offset {after} to insert after")
    epoch = held[0][2]
    _shift_history(run, partition, after)
    _add_to_polls(run, partition, after, value, epoch)
    pf.read = _shifted_with(pf.read, after, (new, value, epoch))
    for rf in pf.replicas.values():
        if not any(o == after for o, _, _ in rf.records):
            continue
        has_more = any(o > after for o, _, _ in rf.records) or rf.log_end_offset > after + 1
        rf.records = _shifted_with(rf.records, after, (new, value, epoch) if has_more else None)
        if has_more:
            rf.log_end_offset += 1
            if rf.high_watermark > new:
                rf.high_watermark += 1
        rf.epochs = [[e, s + 1 if s > after else s] for e, s in rf.epochs]
    return new


def _shifted_with(records: list, after: int, new: tuple | None) -> list:
    out = []
    for o, v, e in records:
        if o > after:
            o += 1
        out.append((o, v, e))
        if o == after and new is not None:
            out.append(new)
    return out


def _shift_history(run: SynthRun, partition: int, after: int) -> None:
    key = f"{run.topic}-{partition}"
    for line in run.history:
        value = line.get("value")
        if not isinstance(value, dict):
            continue
        if line["f"] == "send" and line["type"] == "ok" and value["partition"] == partition:
            if value["offset"] > after:
                value["offset"] += 1
        elif line["f"] == "poll" and line["type"] == "ok":
            for r in value["records"]:
                if r["partition"] == partition and r["offset"] > after:
                    r["offset"] += 1
        elif line["f"] == "assign" and isinstance(value.get("from"), dict):
            start = value["from"].get(key)
            if isinstance(start, int) and start > after:
                value["from"][key] = start + 1
        elif line["f"] == "commit":
            for entry in value["offsets"]:
                if entry[1] == partition and entry[2] > after:
                    entry[2] += 1


def _add_to_polls(run: SynthRun, partition: int, after: int, value: str, epoch: int | None) -> None:
    new = after + 1
    record = {"topic": run.topic, "partition": partition, "offset": new, "value": value,
              "leader_epoch": epoch}
    last: dict[Any, int] = {}  # process -> last offset of `partition` it polled
    for op in pair_ops(run.history):
        if op.f in ("assign", "subscribe", "crash"):
            last.pop(op.process, None)
            continue
        if op.f != "poll" or op.type != "ok":
            continue
        records = op.complete["value"]["records"]
        mine = [i for i, r in enumerate(records) if r["partition"] == partition]
        if not mine:
            continue
        offsets = [records[i]["offset"] for i in mine]
        if after in offsets and offsets[-1] > new:
            at = mine[offsets.index(after)] + 1
            records.insert(at, dict(record))
        elif last.get(op.process) == after and offsets[0] > new:
            records.insert(mine[0], dict(record))
        last[op.process] = [r["offset"] for r in records if r["partition"] == partition][-1]


def _position(history: list[Line], line: Line) -> int:
    for i, candidate in enumerate(history):
        if candidate is line:
            return i
    raise ValueError("line is not in this history")


def partitions_with_records(run: SynthRun, at_least: int = 1) -> list[int]:
    return [p for p, pf in sorted(run.final.items()) if len(pf.read) >= at_least]


def leader_epoch(pf: PartitionFinal) -> int | None:
    leader = pf.replicas.get(pf.leader)
    return leader.leader_epoch if leader is not None else None
