"""One Kafka partition's history as log-model ops, and its linearizability check.

`partition_ops` is the translation (docs/LINEARIZABILITY.md §2 states it
exactly); `check_partition` runs the search on it and, when it fails, the
minimiser and the visual. Pure: Python objects in, a `LinearResult` out.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any

from checkers.linear.logmodel import Append, LogModel, Read, ReadExact
from checkers.linear.minimize import Counterexample, minimize
from checkers.linear.model import Op
from checkers.linear.search import check
from checkers.linear.visual import render_html
from checkers.linear.witness import verify
from checkers.partition import CheckOptions, PartitionHistory, Poll, Send

FINAL_PROCESS = "final"
FINAL_READ = "final-read"  # the `ref` of the final read's ops

_offset = itemgetter(0)
_value = itemgetter(1)


@dataclass(frozen=True, slots=True)
class RetryCopy:
    """The `ref` of an extra append: another copy of `send`'s value, which a
    non-idempotent producer's retry may have written."""

    send: Send


@dataclass(slots=True)
class LinearResult:
    linearizable: bool | None  # None: the search gave up (budget)
    explored: int
    # The minimal non-linearizable op set, one dict per op (call order).
    counterexample: list[dict[str, Any]] = field(default_factory=list)
    html: str | None = None
    explanation: str = ""
    ops: int = 0  # ops the search was given
    # "witness": a verified greedy linearization proved it; "search": the search decided.
    method: str = "search"


def partition_ops(ph: PartitionHistory, options: CheckOptions) -> list[Op]:
    """The log-model ops of one partition history. Each op's `ref` is the
    Send or Poll it came from, a RetryCopy, or FINAL_READ."""
    _validate(ph)
    ok_polls = [p for p in ph.polls if p.outcome == "ok" and p.records]
    polled = set(map(tuple, chain.from_iterable(p.records for p in ok_polls)))
    final = set() if ph.final is None else set(map(tuple, ph.final))
    seen = polled | final  # (offset, value) pairs read by an ok poll or the final read
    # value -> an offset it was seen at; values seen at several offsets in `multi`.
    offset_of = dict(zip(map(_value, seen), map(_offset, seen)))
    multi: dict[str, set[int]] = {}
    if len(offset_of) < len(seen):
        for o, v in seen:
            if offset_of[v] != o:
                multi.setdefault(v, {offset_of[v]}).add(o)

    ops: list[Op] = []
    acked_elsewhere: set[str] = set()
    for s in ph.sends:
        if s.outcome == "ok":
            ops.append(Op(len(ops), s.process, s.invoke_index, s.complete_index,
                          Append(s.offset, s.value), None, s))
            if offset_of.get(s.value, s.offset) != s.offset:
                acked_elsewhere.add(s.value)
        elif s.outcome == "info" and s.value in offset_of:
            # It took effect where its value was first seen, or never.
            first = min(multi[s.value]) if s.value in multi else offset_of[s.value]
            ops.append(Op(len(ops), s.process, s.invoke_index, None, Append(first, s.value), None, s))
        # A failed send surely did not happen: no op.

    if not options.idempotent and (multi or acked_elsewhere):
        _retry_copies(ph, ops, multi, offset_of, set(multi) | acked_elsewhere)

    for p in ok_polls:
        ops.append(Op(len(ops), p.process, p.invoke_index, p.complete_index,
                      Read(tuple(map(tuple, p.records))), None, p))

    if ph.final is not None:
        mentioned = set(map(_offset, polled))
        mentioned.update(op.input.offset for op in ops if op.input.__class__ is Append)
        _final_reads(ph, final, mentioned, ops)
    return ops


def _validate(ph: PartitionHistory) -> None:
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


def _retry_copies(ph: PartitionHistory, ops: list[Op], multi: dict[str, set[int]],
                  offset_of: dict[str, int], values: set[str]) -> None:
    """A non-idempotent producer's retry may write a value again: every offset
    a value was seen at that none of its sends' appends covers becomes an
    optional append, callable from when the value's first send began."""
    covered: dict[str, set[int]] = {}
    first_send: dict[str, Send] = {}
    for op in ops:
        v = op.input.value
        if v in values:
            covered.setdefault(v, set()).add(op.input.offset)
            if v not in first_send or op.ref.invoke_index < first_send[v].invoke_index:
                first_send[v] = op.ref
    for v in sorted(values & first_send.keys()):
        s = first_send[v]
        for o in sorted(multi.get(v, {offset_of[v]}) - covered[v]):
            ops.append(Op(len(ops), s.process, s.invoke_index, None, Append(o, v), None, RetryCopy(s)))


def _final_reads(ph: PartitionHistory, final: set[tuple[int, str]], mentioned: set[int],
                 ops: list[Op]) -> None:
    """The final read, one ReadExact per offset, after every other op. Offsets
    in gaps that no other op mentions are left out: nothing could ever be
    appended there, so their ReadExact(None) would hold trivially. A complete
    final read also says nothing lies past its end."""
    exact: set[tuple[int, str | None]] = set(final)
    held = set(map(_offset, final))
    last = max(held, default=-1)
    for o in mentioned - held:
        if o <= last or ph.final_complete:
            exact.add((o, None))
    lines = [i for x in (*ph.sends, *ph.polls) for i in (x.invoke_index, x.complete_index)
             if i is not None]
    call = 1 + max(lines, default=-1)  # after every line of this partition's history
    for o, v in sorted(exact, key=lambda r: (r[0], r[1] is None, r[1] or "")):
        ops.append(Op(len(ops), FINAL_PROCESS, call, call + 1, ReadExact(o, v), None, FINAL_READ))


def check_partition(ph: PartitionHistory, options: CheckOptions) -> LinearResult:
    """Search one partition's ops against the log model. `linearizable` is the
    search's answer for the ops as given: with an incomplete final read the
    caller must still not call the partition valid (checkers/check.py does so)."""
    ops = partition_ops(ph, options)
    model = LogModel()
    if options.linear_method == "witness":
        order = model.witness(ops)
        if order is not None and verify(model, ops, order):
            return LinearResult(True, explored=0, ops=len(ops), method="witness")
    found = check(model, ops, options.search_budget)
    result = LinearResult(found.linearizable, found.explored, ops=len(ops), method="search")
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


def _origin(op: Op) -> tuple[str, Send | Poll | None, bool]:
    """(f, the history op, is a retry copy) of a search op."""
    ref = op.ref
    if isinstance(ref, RetryCopy):
        return "send", ref.send, True
    if isinstance(ref, Send):
        return "send", ref, False
    if isinstance(ref, Poll):
        return "poll", ref, False
    return FINAL_READ, None, False


def describe_with_source(model: LogModel) -> Callable[[Op], str]:
    """Names an op with its model action and where the history has it:
    `append 5='3-1' [send ok 12-15, process 3]`."""
    def describe(op: Op) -> str:
        f, origin, copy = _origin(op)
        base = model.describe_op(op)
        if origin is None:
            return base
        end = "" if origin.complete_index is None else f"-{origin.complete_index}"
        also = ", a retry's copy" if copy else ""
        return f"{base} [{f} {origin.outcome} {origin.invoke_index}{end}, process {origin.process}{also}]"
    return describe


def counterexample_entry(op: Op, cx: Counterexample) -> dict[str, Any]:
    """One op of a counterexample as JSON: where it came from and what it did.
    Final-read entries carry no invoke_index: they are not history lines."""
    f, origin, copy = _origin(op)
    entry: dict[str, Any] = {"f": f}
    if origin is None:
        entry.update(type="ok", process=FINAL_PROCESS)
    else:
        entry.update(type=origin.outcome, process=origin.process,
                     invoke_index=origin.invoke_index, complete_index=origin.complete_index)
    inp = op.input
    if isinstance(inp, Read):
        entry["records"] = [list(r) for r in inp.records]
        if len(origin.records) > len(inp.records):
            entry["records_total"] = len(origin.records)
    else:
        entry["offset"] = inp.offset
        entry["value"] = inp.value
    if copy:
        entry["copy"] = True
    entry["description"] = cx.descriptions[op.id]
    return entry
