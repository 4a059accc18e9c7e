"""One Kafka partition's history as log-model ops, and its linearizability check.

`partition_ops` is the translation (docs/LINEARIZABILITY.md §2 states it
exactly); `check_partition` runs the search on it and, when it fails, the
minimiser and the visual. Pure: Python objects in, a `LinearResult` out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from checkers.linear.logmodel import Append, LogModel, Read, ReadExact
from checkers.linear.minimize import Counterexample, minimize
from checkers.linear.model import Op
from checkers.linear.search import check
from checkers.linear.visual import render_html
from checkers.partition import CheckOptions, PartitionHistory, Send

FINAL_PROCESS = "final"


@dataclass(frozen=True, slots=True)
class Source:
    """Where an op of the search came from, for reports."""

    f: str  # "send", "poll" or "final-read"
    type: str  # the history outcome: "ok" or "info"
    process: int | str
    invoke_index: int | None = None
    complete_index: int | None = None
    copy: bool = False  # an extra copy of a non-idempotent send (a retry)
    records: int = 0  # a poll's record count before any projection


@dataclass(slots=True)
class LinearResult:
    linearizable: bool | None  # None: the search gave up (budget)
    explored: int
    # The minimal non-linearizable op set, one dict per op (call order).
    counterexample: list[dict[str, Any]] = field(default_factory=list)
    html: str | None = None
    explanation: str = ""
    ops: int = 0  # ops the search was given


def partition_ops(ph: PartitionHistory, options: CheckOptions) -> list[Op]:
    """The log-model ops of one partition history (see the module docstring)."""
    where = f"{ph.topic}/{ph.partition}"
    for s in ph.sends:
        if s.outcome == "ok" and (s.offset is None or s.complete_index is None):
            missing = "offset" if s.offset is None else "complete_index"
            raise ValueError(f"{where}: the ok send at history line {s.invoke_index} "
                             f"(value {s.value!r}) has no {missing}; an ok send needs both "
                             f"(check the history's send ok lines)")
    for p in ph.polls:
        if p.outcome == "ok" and p.complete_index is None:
            raise ValueError(f"{where}: the ok poll at history line {p.invoke_index} has no "
                             f"complete_index; an ok poll needs one")

    seen_at: dict[str, set[int]] = {}  # value -> offsets where the final read or an ok poll saw it
    for o, v in ph.final or ():
        seen_at.setdefault(v, set()).add(o)
    for p in ph.polls:
        if p.outcome == "ok":
            for o, v in p.records:
                seen_at.setdefault(v, set()).add(o)

    ops: list[Op] = []

    def add(process: Any, call: int, ret: int | None, inp: Any, source: Source) -> None:
        ops.append(Op(len(ops), process, call, ret, inp, None, source))

    claimed: dict[str, set[int]] = {}  # value -> offsets some send's append already covers
    first_send: dict[str, Send] = {}
    for s in ph.sends:
        if s.outcome == "fail":
            continue  # surely did not happen
        first_send.setdefault(s.value, s)
        if s.outcome == "ok":
            add(s.process, s.invoke_index, s.complete_index, Append(s.offset, s.value),
                Source("send", "ok", s.process, s.invoke_index, s.complete_index))
            claimed.setdefault(s.value, set()).add(s.offset)
        else:  # info: it took effect where its value was first seen, or never
            at = seen_at.get(s.value)
            if at:
                first = min(at)
                add(s.process, s.invoke_index, None, Append(first, s.value),
                    Source("send", "info", s.process, s.invoke_index, s.complete_index))
                claimed.setdefault(s.value, set()).add(first)

    if not options.idempotent:
        # A retry may have written a value again: every other offset it was
        # seen at is an append that may have happened after the send began.
        for v, offsets in seen_at.items():
            s = first_send.get(v)
            if s is None:
                continue
            for o in sorted(offsets - claimed.get(v, set())):
                add(s.process, s.invoke_index, None, Append(o, v),
                    Source("send", s.outcome, s.process, s.invoke_index, s.complete_index, copy=True))

    for p in ph.polls:
        if p.outcome == "ok" and p.records:
            add(p.process, p.invoke_index, p.complete_index, Read(tuple((o, v) for o, v in p.records)),
                Source("poll", "ok", p.process, p.invoke_index, p.complete_index,
                       records=len(p.records)))

    if ph.final is not None:
        _final_reads(ph, ops, add)
    return ops


def _final_reads(ph: PartitionHistory, ops: list[Op], add: Any) -> None:
    """The final read, one ReadExact per offset, after every other op. Offsets
    in gaps that no other op mentions are left out: nothing could ever be
    appended there, so their ReadExact(None) would hold trivially."""
    exact: set[tuple[int, str | None]] = {(o, v) for o, v in ph.final}
    held = {o for o, _ in exact}
    last = max(held, default=-1)
    mentioned: set[int] = set()
    for op in ops:
        inp = op.input
        if isinstance(inp, Append):
            mentioned.add(inp.offset)
        else:
            mentioned.update(o for o, _ in inp.records)
    for o in mentioned - held:
        if o <= last or ph.final_complete:
            exact.add((o, None))
    lines = [i for x in (*ph.sends, *ph.polls) for i in (x.invoke_index, x.complete_index)
             if i is not None]
    call = 1 + max(lines, default=-1)  # after every line of this partition's history
    source = Source("final-read", "ok", FINAL_PROCESS)
    for o, v in sorted(exact, key=lambda r: (r[0], r[1] is None, r[1] or "")):
        add(FINAL_PROCESS, call, call + 1, ReadExact(o, v), source)


def check_partition(ph: PartitionHistory, options: CheckOptions) -> LinearResult:
    """Search one partition's ops against the log model. `linearizable` is the
    search's answer for the ops as given: with an incomplete final read the
    caller must still not call the partition valid (checkers/check.py does so)."""
    ops = partition_ops(ph, options)
    model = LogModel()
    found = check(model, ops, options.search_budget)
    result = LinearResult(found.linearizable, found.explored, ops=len(ops))
    if found.linearizable is not False:
        return result
    cx = minimize(model, ops, options.search_budget, found.deepest, describe_with_source(model))
    if cx is None:  # the minimiser's own searches ran out of budget
        result.explanation = "not linearizable; no counterexample within the search budget"
        return result
    result.counterexample = [counterexample_entry(op, cx) for op in cx.ops]
    result.explanation = cx.explanation
    result.html = render_html(cx, title=f"{ph.topic}/{ph.partition}: not linearizable")
    return result


def describe_with_source(model: LogModel):
    """Names an op with its model action and where the history has it:
    `append 5='3-1' [send ok 12-15, process 3]`."""
    def describe(op: Op) -> str:
        src: Source = op.ref
        base = model.describe_op(op)
        if not isinstance(src, Source) or src.f == "final-read":
            return base
        lines = f"{src.invoke_index}" + ("" if src.complete_index is None else f"-{src.complete_index}")
        copy = ", a retry's copy" if src.copy else ""
        return f"{base} [{src.f} {src.type} {lines}, process {src.process}{copy}]"
    return describe


def counterexample_entry(op: Op, cx: Counterexample) -> dict[str, Any]:
    """One op of a counterexample as JSON: where it came from and what it did.
    Final-read entries carry no invoke_index: they are not history lines."""
    src: Source = op.ref
    entry: dict[str, Any] = {"f": src.f, "type": src.type, "process": src.process}
    if src.f != "final-read":
        entry["invoke_index"] = src.invoke_index
        entry["complete_index"] = src.complete_index
    inp = op.input
    if isinstance(inp, Read):
        entry["records"] = [list(r) for r in inp.records]
        if src.records > len(inp.records):
            entry["records_total"] = src.records
    else:
        entry["offset"] = inp.offset
        entry["value"] = inp.value
    if src.copy:
        entry["copy"] = True
    entry["description"] = cx.descriptions[op.id]
    return entry
