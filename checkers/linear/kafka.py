"""One Kafka partition's history as log-model ops, and its linearizability check.

`partition_ops` is the translation (docs/LINEARIZABILITY.md §2 states it
exactly); `check_partition` runs the search on it and, when it fails, the
minimiser and the visual. Before any of that, `greedy_witness` checks the
linearization of LINEARIZABILITY.md §6 straight on the partition (the one
the reference, checkers/linear/reference_witness.py, proposes as ops and checks
against the model): on a valid history it is the whole cost of the check. Pure: Python
objects in, a `LinearResult` out.
"""
from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass, field
from itertools import accumulate, chain
from operator import attrgetter, itemgetter, lt
from typing import Any, cast

from fencepost.checkers.linear.logmodel import Append, LogModel, Read, ReadExact
from fencepost.checkers.linear.minimize import Counterexample, minimize
from fencepost.checkers.linear.model import Op
from fencepost.checkers.linear.search import check
from fencepost.checkers.linear.visual import RunLinks, render_html
from fencepost.checkers.offsets import Observations, observe
from fencepost.checkers.partition import CheckOptions, PartitionHistory, Poll, Send

# tuple() of an (offset, value) record as JSON gave it (a list or a tuple): the same pair
_as_pair = cast(Callable[[Any], tuple[int, str]], tuple)

FINAL_PROCESS = "final"
FINAL_READ = "final-read"  # the `ref` of the final read's ops

_offset = itemgetter(0)
_value = itemgetter(1)
_records = attrgetter("records")
_invoke_index = attrgetter("invoke_index")
_complete_index = attrgetter("complete_index")
_send_offset = attrgetter("offset")
_send_value = attrgetter("value")


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


def partition_ops(ph: PartitionHistory, options: CheckOptions,
                  obs: Observations | None = None) -> list[Op]:
    """The log-model ops of one partition history. Each op's `ref` is the
    Send or Poll it came from, a RetryCopy, or FINAL_READ. `obs` is
    `observe(ph)` when the caller has it: its index of what was seen where is
    reused instead of hashing every polled record again."""
    _validate(ph)
    seen = _Seen(ph, obs)
    ops: list[Op] = []
    for s in ph.sends:
        offset = seen.append_offset(s)
        if offset is not None:
            ops.append(Op(len(ops), s.process, s.invoke_index,
                          s.complete_index if s.outcome == "ok" else None,
                          Append(offset, s.value), None, s))
    for offset, s in _retry_copies(ph, options, seen):
        ops.append(Op(len(ops), s.process, s.invoke_index, None, Append(offset, s.value), None,
                      RetryCopy(s)))
    appends = len(ops)
    ok_polls = [p for p in ph.polls if p.outcome == "ok" and p.records]
    ops.extend([Op(n, p.process, p.invoke_index, p.complete_index,
                   Read(tuple(map(_as_pair, p.records))), None, p)
                for n, p in enumerate(ok_polls, appends)])
    if ph.final is not None:
        mentioned = set(map(_offset, seen.polled))
        mentioned.update(op.input.offset for op in ops[:appends])
        call = 1 + _last_line(ph)  # after every line of this partition's history
        ops.extend([Op(n, FINAL_PROCESS, call, call + 1, ReadExact(o, v), None, FINAL_READ)
                    for n, (o, v) in enumerate(_final_exacts(ph, mentioned), len(ops))])
    return ops


def _validate(ph: PartitionHistory) -> None:
    oks = [s for s in ph.sends if s.outcome == "ok"]
    ok_polls = [p for p in ph.polls if p.outcome == "ok"]
    if not (None in map(_send_offset, oks) or None in map(_complete_index, oks)
            or None in map(_complete_index, ok_polls)):
        return  # the usual case, found at C speed; the loops below say what is wrong
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


class _Seen:
    """Where the reads saw each value: the offsets of the (offset, value)
    pairs that an ok poll or the final read returned. Built from `observe`'s
    index when given (a few lookups per question), else from the records."""

    __slots__ = ("ph", "obs", "polled", "_final", "_offset_of", "_multi")

    def __init__(self, ph: PartitionHistory, obs: Observations | None) -> None:
        self.ph = ph
        self.obs = obs
        self._final: set[tuple[int, str]] | None = None
        if obs is not None:
            self.polled: Set[tuple[int, str]] = obs.polled.keys()
            return
        self.polled = set(map(_as_pair, chain.from_iterable(
            p.records for p in ph.polls if p.outcome == "ok" and p.records)))
        seen = self.polled | self.final()
        # value -> an offset it was seen at; values seen at several offsets in `_multi`.
        self._offset_of = dict(zip(map(_value, seen), map(_offset, seen)))
        self._multi: dict[str, set[int]] = {}
        if len(self._offset_of) < len(seen):
            for o, v in seen:
                if self._offset_of[v] != o:
                    self._multi.setdefault(v, {self._offset_of[v]}).add(o)

    def final(self) -> set[tuple[int, str]]:
        if self._final is None:
            self._final = set(map(_as_pair, self.ph.final or ()))
        return self._final

    def offsets(self, value: str) -> list[int]:
        """The offsets `value` was read at, ascending."""
        obs = self.obs
        if obs is None:
            more = self._multi.get(value)
            if more:
                return sorted(more)
            return [self._offset_of[value]] if value in self._offset_of else []
        return [o for o in obs.offsets_of(value)
                if (o, value) in self.polled or self._in_final(obs, o, value)]

    def _in_final(self, obs: Observations, offset: int, value: str) -> bool:
        if obs.final_at.get(offset) == value:
            return True
        # final_at keeps one value per offset; several are listed in multi_values.
        return offset in obs.multi_values and (offset, value) in self.final()

    def append_offset(self, s: Send) -> int | None:
        """Where `s` appends: an ok send at its acked offset (required); an
        info send where its value was first read (optional), if it was read
        at all. A failed send surely did not happen: None."""
        if s.outcome == "ok":
            return s.offset
        if s.outcome == "info":
            offsets = self.offsets(s.value)
            return offsets[0] if offsets else None
        return None

    def copy_candidates(self) -> tuple[set[str], list[Send] | None]:
        """Values that may need a retry's copy (read at several offsets, or at
        one other than an ack of it), a superset, with their sends (None: all
        of `ph.sends`)."""
        obs = self.obs
        if obs is None:
            acked_elsewhere = {s.value for s in self.ph.sends if s.outcome == "ok"
                               and self._offset_of.get(s.value, s.offset) != s.offset}
            return set(self._multi) | acked_elsewhere, None
        # Both leave the value at two offsets among all sightings, acks included.
        values = set(obs.multi_offsets)
        return values, [s for v in values for s in obs.writers_of(v)]


def _retry_copies(ph: PartitionHistory, options: CheckOptions,
                  seen: _Seen) -> list[tuple[int, Send]]:
    """(offset, send) of each extra append. A non-idempotent producer's retry
    may write a value again: every offset a value was read at that none of
    its sends' appends covers becomes an optional append, callable from when
    the value's first send began."""
    if options.idempotent:
        return []
    candidates, sends = seen.copy_candidates()
    if not candidates:
        return []
    read_at = {v: seen.offsets(v) for v in candidates}
    covered: dict[str, set[int]] = {}
    first_send: dict[str, Send] = {}
    acked_elsewhere: set[str] = set()
    for s in ph.sends if sends is None else sends:  # in history order, per value
        v = s.value
        if v not in candidates:
            continue
        offset = seen.append_offset(s)
        if offset is None:
            continue
        if s.outcome == "ok" and len(read_at[v]) == 1 and read_at[v][0] != offset:
            acked_elsewhere.add(v)
        covered.setdefault(v, set()).add(offset)
        if v not in first_send or s.invoke_index < first_send[v].invoke_index:
            first_send[v] = s
    values = {v for v, offsets in read_at.items() if len(offsets) > 1} | acked_elsewhere
    return [(o, first_send[v]) for v in sorted(values & first_send.keys())
            for o in read_at[v] if o not in covered[v]]


def _final_exacts(ph: PartitionHistory, mentioned: set[int]) -> list[tuple[int, str | None]]:
    """The final read as (offset, value or None) checks, in offset order, one
    per offset. Offsets in gaps that no other op mentions are left out:
    nothing could ever be appended there, so their ReadExact(None) would hold
    trivially. A complete final read also says nothing lies past its end."""
    final = set(map(_as_pair, ph.final or ()))
    held = set(map(_offset, final))
    last = max(held, default=-1)
    gaps = [(o, None) for o in mentioned - held if o <= last or ph.final_complete]
    # Gap offsets hold nothing in the final read, so no two entries share an
    # offset unless both have values: the tuples sort natively.
    return sorted([*final, *gaps])


def _last_line(ph: PartitionHistory) -> int:
    """The highest history index of this partition's sends and polls, or -1."""
    ops = (ph.sends, ph.polls)
    invoked = max(chain.from_iterable(map(_invoke_index, x) for x in ops), default=-1)
    completed = max(filter(None, chain.from_iterable(map(_complete_index, x) for x in ops)),
                    default=-1)
    return max(invoked, completed)


def check_partition(ph: PartitionHistory, options: CheckOptions,
                    obs: Observations | None = None) -> LinearResult:
    """Search one partition's ops against the log model. `linearizable` is the
    search's answer for the ops as given: with an incomplete final read the
    caller must still not call the partition valid (checkers/check.py does so).
    `obs` is `observe(ph)` when the caller has it.

    With `linear_method` "witness", the linearization of docs/LINEARIZABILITY.md
    §6 is checked first, straight on the partition (`greedy_witness`, held by
    tests to the same answer as reference_witness's `log_witness` + `verify`); the
    search runs only when it fails."""
    model = LogModel()
    if options.linear_method == "witness":
        obs = observe(ph) if obs is None else obs
        holds = greedy_witness(ph, options, obs)
        if holds is not None:
            return LinearResult(True, explored=0, ops=holds, method="witness")
    ops = partition_ops(ph, options, obs)
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
    result.html = render_html(cx, title=f"{ph.topic}/{ph.partition}: not linearizable", links=RUN_LINKS)
    return result


def greedy_witness(ph: PartitionHistory, options: CheckOptions, obs: Observations) -> int | None:
    """Does the greedy linearization of `partition_ops(ph, options)` (the one
    `LogModel.witness` proposes, docs/LINEARIZABILITY.md §6) exist and hold?
    Decided on the partition itself, without building the ops, in C-level
    passes over sends, distinct polled records and the final read. Returns the
    number of ops it linearized (as `len(partition_ops(...))`), or None when
    it fails (the caller then searches).

    The order: one append per offset (the ok send acked there, else the first
    optional append there: every optional append writes a pair some read or
    the final read saw, so each is demanded), taking effect in offset order at
    t(o) = the latest call among the appends up to o; each ok poll at
    max(its call, t(m)), m its highest record offset; the final read last.
    It is a linearization iff:
      - no two ok sends were acked at one offset, and every offset is >= 0
        (the empty log ends at -1);
      - every required op returns no earlier than its point (an op placed
        before it was called at that point, and at no later one);
      - every record an ok poll returned is the pair appended at its offset
        (then, at the poll's point, the log holds all of them);
      - the final read holds exactly the appended value at each offset it
        holds, and nothing was appended at an offset it speaks for (below its
        last offset, or anywhere if complete) without holding it.
    """
    _validate(ph)
    seen = _Seen(ph, obs)
    oks = [s for s in ph.sends if s.outcome == "ok"]
    value_at = dict(zip(map(_send_offset, oks), map(_send_value, oks)))
    if len(value_at) < len(oks):
        return None  # two required appends at one offset
    call_at = dict(zip(map(_send_offset, oks), map(_invoke_index, oks)))
    optional = [(o, s) for s in ph.sends if s.outcome == "info"
                for o in (seen.append_offset(s),) if o is not None]
    optional += _retry_copies(ph, options, seen)
    for o, s in optional:  # the first optional append at each free offset
        if o not in value_at:
            value_at[o] = s.value
            call_at[o] = s.invoke_index
    offsets = sorted(value_at)
    if offsets and offsets[0] < 0:
        return None
    point = dict(zip(offsets, accumulate(map(call_at.__getitem__, offsets), max)))
    if any(map(lt, map(_complete_index, oks), map(point.__getitem__, map(_send_offset, oks)))):
        return None  # an ok send returned before its append's point
    polled = seen.polled
    if list(map(value_at.get, map(_offset, polled))) != list(map(_value, polled)):
        return None  # a poll returned a record that no append wrote
    reads = obs.reads
    points = map(max, map(_invoke_index, reads), map(point.__getitem__, obs.read_marks()))
    if any(map(lt, map(_complete_index, reads), points)):
        return None  # a poll returned before the appends it read took effect
    exacts = 0
    if ph.final is not None:
        final = ph.final
        if list(map(value_at.get, map(_offset, final))) != list(map(_value, final)):
            return None  # the final read holds something else, or nothing was appended there
        held = set(map(_offset, final))
        last = max(held, default=-1)
        unheld = value_at.keys() - held
        if unheld and (ph.final_complete or min(unheld) <= last):
            return None  # appended where the final read says there is nothing
        mentioned = set(map(_offset, polled))
        mentioned.update(map(_send_offset, oks))
        mentioned.update(map(_offset, optional))
        gaps = mentioned - held
        if not ph.final_complete:
            gaps = {o for o in gaps if o <= last}
        # One exact per distinct final record (one per offset, unless an offset repeats).
        distinct = len(final) if len(held) == len(final) else len(seen.final())
        exacts = distinct + len(gaps)
    return len(oks) + len(optional) + len(reads) + exacts


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


def history_lines(op: Op) -> tuple[int, ...]:
    """The history lines of a search op: its send's or poll's invoke and completion;
    none for the final read's (they are not history lines)."""
    _, origin, _ = _origin(op)
    if origin is None:
        return ()
    return tuple(i for i in (origin.invoke_index, origin.complete_index) if i is not None)


# The page is written to RUN_DIR/linear/<topic>-<partition>.html (harness/check/checking.py),
# beside the report and the history viewer one folder up.
RUN_LINKS = RunLinks(report="../report.html", history="../history.html", lines=history_lines)


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
        poll = cast(Poll, origin)  # a Read is made of an ok poll (kafka_ops)
        entry["records"] = [list(r) for r in inp.records]
        if len(poll.records) > len(inp.records):
            entry["records_total"] = len(poll.records)
    else:
        entry["offset"] = inp.offset
        entry["value"] = inp.value
    if copy:
        entry["copy"] = True
    entry["description"] = cx.descriptions[op.id]
    return entry
