"""Offset checks of one partition: what the acks, the ok polls and the final read
say sits at each offset, and the anomalies that follow from comparing them.

Owns the index of those observations (`Observations`, built by `observe`) and the
checks `lost-write`, `duplicate`, `inconsistent-offsets`, `truncated-read`,
`nonmonotonic-send`, `future-read`, `aborted-read` and `phantom-read`
(docs/CHECKERS.md defines each). Every check is a single pass or a sort plus a
sweep; evidence (which ops saw what) is gathered in an extra pass only for what
was flagged, so a clean history costs no more than the index.
"""
from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, compress, count, repeat
from operator import attrgetter, itemgetter, le
from typing import Any, Literal, Protocol, TypeVar, cast

from fencepost.checkers.anomaly import (
    ABORTED_READ,
    DUPLICATE,
    FUTURE_READ,
    INCONSISTENT_OFFSETS,
    LOST_WRITE,
    NONMONOTONIC_SEND,
    PHANTOM_READ,
    TRUNCATED_READ,
    Anomaly,
)
from fencepost.checkers.partition import PartitionHistory, Poll, Send

# Lists inside one anomaly's details (ops, observations) are cut at this length;
# the full count is then given next to them.
MAX_LISTED = 20

Op = Send | Poll
Earlier = TypeVar("Earlier", Send, Poll)  # the ops _overtaken sweeps: acked sends or ok polls


class _Indexed(Protocol):
    """What op_refs reads of an op (a Send, Poll, Commit or Resume)."""

    @property
    def invoke_index(self) -> int: ...

    @property
    def complete_index(self) -> int | None: ...


def op_refs(ops: Iterable[_Indexed]) -> dict[str, Any]:
    """`{"ops": [[invoke_index, complete_index], ...]}` sorted by invoke index,
    deduplicated, at most MAX_LISTED, plus `ops_total` when cut."""
    refs = sorted({(op.invoke_index, op.complete_index) for op in ops}, key=lambda r: r[0])
    out: dict[str, Any] = {"ops": [list(r) for r in refs[:MAX_LISTED]]}
    if len(refs) > MAX_LISTED:
        out["ops_total"] = len(refs)
    return out


def describe(op: Op) -> str:
    """How an explanation names an op: `send 12-13 by process 3`."""
    kind = "send" if isinstance(op, Send) else "poll"
    end = "" if op.complete_index is None else f"-{op.complete_index}"
    return f"{kind} {op.invoke_index}{end} by process {op.process}"


_offset = itemgetter(0)
_value = itemgetter(1)
_send_value = attrgetter("value")
_send_offset = attrgetter("offset")
_invoke_index = attrgetter("invoke_index")
_complete_index = attrgetter("complete_index")
_records = attrgetter("records")


@dataclass(slots=True)
class Observations:
    """The index of one partition that every check shares, built once by
    `observe`: each distinct (offset, value) pair seen by an ack, an ok poll or
    the final read, indexed both ways, plus the ops lists the checks walk.
    Almost every offset is seen with one value and every value at one offset, so
    the plain dicts keep one each and the rare exceptions are listed in full in
    `multi_*`."""

    final_at: dict[int, str]  # the final read: offset -> value (the first, if repeated)
    # Highest offset the final read speaks for: sys.maxsize when complete, its
    # last offset when incomplete, -1 when there is no final read.
    final_reach: int
    value_at: dict[int, str]  # offset -> a value seen there (all of them in multi_values)
    multi_values: dict[int, set[str]]  # offsets seen with several values -> those values
    offset_of: dict[str, int]  # value -> an offset it was seen at (all in multi_offsets)
    multi_offsets: dict[str, set[int]]  # values seen at several offsets -> those offsets
    writer: dict[str, Send]  # value -> the first send of it (any outcome)
    other_writers: dict[str, list[Send]]  # value -> further sends of the same value
    acked: list[Send]  # ok sends with an offset, in history order
    # Ok polls that returned records of this partition, in completion order.
    reads: list[Poll]
    # Each distinct (offset, value) an ok poll returned -> completion index of
    # the first ok poll that returned it.
    polled: dict[tuple[int, str], int]
    # Sends that may have written (all but `fail`) in invoke order, and the lowest
    # offset holding each one's value (`_landing`; sys.maxsize when unknown).
    writes: list[Send]
    landings: list[int]
    # The highest offset each of `reads` returned: `read_marks()` computes it once.
    marks: list[int] | None = None
    known: list[int] | None = None  # `known_offsets()`, computed once

    def read_marks(self) -> list[int]:
        """The highest offset each of `reads` returned, in their order."""
        if self.marks is None:
            self.marks = [max(map(_offset, records)) for records in map(_records, self.reads)]
        return self.marks

    def reached(self, offset: int) -> bool:
        """Does the final read speak for `offset` (hold it, or read past it)?"""
        return offset <= self.final_reach

    def offsets_of(self, value: str) -> list[int]:
        more = self.multi_offsets.get(value)
        if more:
            return sorted(more)
        return [self.offset_of[value]] if value in self.offset_of else []

    def values_at(self, offset: int) -> list[str]:
        more = self.multi_values.get(offset)
        if more:
            return sorted(more)
        return [self.value_at[offset]] if offset in self.value_at else []

    def lowest_offset_of(self, value: str) -> int | None:
        more = self.multi_offsets.get(value)
        return min(more) if more else self.offset_of.get(value)

    def writers_of(self, value: str) -> list[Send]:
        first = self.writer.get(value)
        if first is None:
            return []
        return [first, *self.other_writers.get(value, ())]

    def final_offsets_of(self, value: str) -> list[int]:
        return [o for o in self.offsets_of(value) if self.final_at.get(o) == value]

    def known_offsets(self) -> list[int]:
        """Offsets seen in acks, ok polls and the final read, ascending (computed once: the
        checks that ask share it and must not change it)."""
        if self.known is None:
            self.known = sorted(self.value_at)
        return self.known


def observe(ph: PartitionHistory) -> Observations:
    """Index the acks, ok polls and final read of `ph`. Built from C-level set
    and dict operations over the records as they are: a Python-level step per
    record would be the cost of the whole check."""
    acked = [s for s in ph.sends if s.outcome == "ok" and s.offset is not None]
    # Most polls return nothing of this partition: drop them at C speed first.
    with_records = compress(ph.polls, map(len, map(_records, ph.polls)))
    reads = sorted((p for p in with_records if p.outcome == "ok"), key=_complete_index)
    polled = _first_polls(reads)
    pairs = polled.keys() | set(zip(map(_send_offset, acked), map(_send_value, acked)))
    final_at: dict[int, str] = {}
    final_reach = -1
    if ph.final is not None:
        pairs.update(ph.final)
        final_at = dict(reversed(ph.final))  # reversed: the first value wins a repeated offset
        final_reach = sys.maxsize if ph.final_complete else max(final_at, default=-1)

    value_at = dict(pairs)
    offset_of = dict(zip(map(_value, pairs), map(_offset, pairs)))
    multi_values: dict[int, set[str]] = {}
    multi_offsets: dict[str, set[int]] = {}
    if len(value_at) < len(pairs):  # some offset was seen with several values
        for o, v in pairs:
            if value_at[o] != v:
                multi_values.setdefault(o, {value_at[o]}).add(v)
    if len(offset_of) < len(pairs):  # some value was seen at several offsets
        for o, v in pairs:
            if offset_of[v] != o:
                multi_offsets.setdefault(v, {offset_of[v]}).add(o)

    writer = {s.value: s for s in reversed(ph.sends)}  # reversed: the first send wins
    other_writers: dict[str, list[Send]] = {}
    if len(writer) < len(ph.sends):
        for s in ph.sends:
            if writer[s.value] is not s:
                other_writers.setdefault(s.value, []).append(s)
    writes = sorted((s for s in ph.sends if s.outcome != "fail"), key=_invoke_index)
    obs = Observations(final_at, final_reach, value_at, multi_values, offset_of, multi_offsets,
                       writer, other_writers, acked, reads, polled, writes, [])
    obs.landings = _landings(obs, writes)
    return obs


def _first_polls(reads: list[Poll]) -> dict[tuple[int, str], int]:
    """(offset, value) -> completion index of the first of `reads` (in completion
    order) that returned it. Consumers re-read records many times, so this is
    the one place every polled record is hashed: one C-level dict build, latest
    poll first so that the earliest one's index is written last."""
    latest_first = reads[::-1]
    records = list(map(_records, latest_first))
    indices = map(repeat, map(_complete_index, latest_first), map(len, records))
    return dict(zip(chain.from_iterable(records), chain.from_iterable(indices)))


def first_poll_of_values(obs: Observations) -> dict[str, int]:
    """value -> completion index of the first ok poll that returned it (at any offset)."""
    if not obs.multi_offsets:  # each value at one offset: one polled pair per value
        return dict(zip(map(_value, obs.polled), obs.polled.values()))
    first: dict[str, int] = {}
    for (_, v), i in obs.polled.items():
        if i < first.get(v, sys.maxsize):
            first[v] = i
    return first


# --- evidence -------------------------------------------------------------

Source = Literal["ack", "poll", "final"]


@dataclass(slots=True)
class Sighting:
    offset: int
    value: str
    by: Source
    op: Op | None  # None for the final read

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"offset": self.offset, "value": self.value, "by": self.by}
        if self.op is not None:
            out["op"] = [self.op.invoke_index, self.op.complete_index]
        return out


def sightings(ph: PartitionHistory, values: set[str] | None = None,
              offsets: set[int] | None = None) -> list[Sighting]:
    """Every observation (ack, ok poll record, final record) of a value in
    `values` or at an offset in `offsets`: one pass, for the flagged few."""
    values = values or set()
    offsets = offsets or set()
    if not values and not offsets:
        return []
    found: list[Sighting] = []
    for s in ph.sends:
        if s.outcome == "ok" and s.offset is not None and (
                s.value in values or s.offset in offsets):
            found.append(Sighting(s.offset, s.value, "ack", s))
    for p in ph.polls:
        if p.outcome == "ok":
            for o, v in p.records:
                if v in values or o in offsets:
                    found.append(Sighting(o, v, "poll", p))
    for o, v in ph.final or ():
        if v in values or o in offsets:
            found.append(Sighting(o, v, "final", None))
    return found


def _observed(seen: list[Sighting]) -> dict[str, Any]:
    out: dict[str, Any] = {"observed": [s.to_json() for s in seen[:MAX_LISTED]]}
    if len(seen) > MAX_LISTED:
        out["observed_total"] = len(seen)
    return out


def _ops_of(seen: list[Sighting]) -> list[Op]:
    return [s.op for s in seen if s.op is not None]


# --- lost-write -------------------------------------------------------------


@dataclass(slots=True)
class LostWrites:
    anomalies: list[Anomaly]
    unjudged: int  # writes the incomplete (or missing) final read did not reach


def lost_writes(ph: PartitionHistory, obs: Observations) -> LostWrites:
    """Ok sends not in the final read at their acked offset, and info sends whose
    value an ok poll saw at an offset where the final read does not hold it."""
    anomalies: list[Anomaly] = []
    unjudged = 0
    final_at = obs.final_at
    for s in obs.acked:
        o, v = s.offset, s.value
        assert o is not None  # acked: the ok sends with an offset
        if final_at.get(o) == v:
            continue
        if not obs.reached(o):
            unjudged += 1
            continue
        anomalies.append(_lost(ph, obs, s, o, [s], "was acked at"))

    # Info sends seen by an ok poll: judged at the offsets the polls saw them at.
    acked_values = set(map(_send_value, obs.acked))
    lost_at: dict[str, int] = {}
    info: dict[str, Send] = {}
    judged: set[str] = set()
    for s in ph.sends:
        if (s.outcome != "info" or s.value not in obs.offset_of or s.value in acked_values
                or s.value in judged):
            continue
        judged.add(s.value)
        polled_at = [o for o in obs.offsets_of(s.value) if (o, s.value) in obs.polled]
        if not polled_at or any(final_at.get(o) == s.value for o in polled_at):
            continue
        reached = [o for o in polled_at if obs.reached(o)]
        if not reached:
            unjudged += 1
            continue
        lost_at[s.value], info[s.value] = reached[0], s
    readers: dict[str, list[Op]] = {}
    for seen in sightings(ph, values=set(lost_at)):
        if seen.by == "poll" and seen.op is not None and seen.offset == lost_at[seen.value]:
            readers.setdefault(seen.value, []).append(seen.op)
    for v, o in lost_at.items():
        anomalies.append(_lost(ph, obs, info[v], o, [info[v], *readers.get(v, ())],
                               "ended info, but a poll returned it at"))
    anomalies.sort(key=lambda a: a.details["offset"])
    return LostWrites(anomalies, unjudged)


def _lost(ph: PartitionHistory, obs: Observations, send: Send, offset: int,
          ops: list[Op], how_known: str) -> Anomaly:
    there = obs.final_at.get(offset)
    elsewhere = obs.final_offsets_of(send.value)
    details: dict[str, Any] = {
        "value": send.value, "offset": offset, "send_outcome": send.outcome,
        "how": "missing" if there is None else "overwritten",
    }
    if there is not None:
        details["final_value"] = there
    if elsewhere:
        details["final_offsets"] = elsewhere
    details.update(op_refs(ops))
    now = ("has nothing there, although it reached past it" if there is None
           else f"holds {there!r} there")
    also = f" ({send.value!r} sits at {elsewhere} instead)" if elsewhere else ""
    details["explanation"] = (f"{describe(send)} of {send.value!r} {how_known} offset {offset}; "
                              f"the final read {now}{also}")
    return Anomaly(LOST_WRITE, ph.topic, ph.partition, details)


# --- duplicate, inconsistent-offsets ------------------------------------------


def duplicates(ph: PartitionHistory, obs: Observations) -> list[Anomaly]:
    """Values seen at more than one offset across acks, ok polls and final read."""
    if not obs.multi_offsets:
        return []
    by_value: dict[str, list[Sighting]] = {}
    for seen in sightings(ph, values=set(obs.multi_offsets)):
        by_value.setdefault(seen.value, []).append(seen)
    out = []
    for v in sorted(obs.multi_offsets, key=lambda v: (min(obs.multi_offsets[v]), v)):
        offsets = obs.offsets_of(v)
        sights = by_value.get(v, [])
        details = {"value": v, "offsets": offsets, **_observed(sights), **op_refs(_ops_of(sights)),
                   "explanation": f"{v!r} was seen at {len(offsets)} offsets {offsets}; "
                                  f"a value is written once, so it belongs at one"}
        out.append(Anomaly(DUPLICATE, ph.topic, ph.partition, details))
    return out


def inconsistent_offsets(ph: PartitionHistory, obs: Observations) -> list[Anomaly]:
    """Offsets seen holding more than one value across acks, ok polls and final read."""
    if not obs.multi_values:
        return []
    by_offset: dict[int, list[Sighting]] = {}
    for seen in sightings(ph, offsets=set(obs.multi_values)):
        by_offset.setdefault(seen.offset, []).append(seen)
    out = []
    for o in sorted(obs.multi_values):
        values = obs.values_at(o)
        sights = by_offset.get(o, [])
        details = {"offset": o, "values": values, **_observed(sights), **op_refs(_ops_of(sights)),
                   "explanation": f"offset {o} was seen holding {len(values)} different values "
                                  f"{values}; a log offset holds one record for good"}
        out.append(Anomaly(INCONSISTENT_OFFSETS, ph.topic, ph.partition, details))
    return out


# --- truncated-read -------------------------------------------------------------


def truncated_reads(ph: PartitionHistory, obs: Observations) -> list[Anomaly]:
    """Records an ok poll returned that the final read does not hold at that
    offset (judged only where the final read reached). One anomaly per record,
    naming every poll that returned it."""
    if ph.final is None:
        return []
    suspects = {(o, v) for o, v in obs.polled.keys() - set(ph.final) if obs.reached(o)}
    if not suspects:
        return []
    found: dict[tuple[int, str], list[Op]] = {}
    for seen in sightings(ph, offsets={o for o, _ in suspects}):
        if seen.by == "poll" and seen.op is not None and (seen.offset, seen.value) in suspects:
            found.setdefault((seen.offset, seen.value), []).append(seen.op)
    out = []
    for (o, v), polls in sorted(found.items()):
        there = obs.final_at.get(o)
        details: dict[str, Any] = {"offset": o, "value": v,
                                   "how": "missing" if there is None else "overwritten"}
        if there is not None:
            details["final_value"] = there
        details.update(op_refs([*polls, *obs.writers_of(v)]))
        now = "nothing" if there is None else repr(there)
        more = f" (and {len(polls) - 1} more polls)" if len(polls) > 1 else ""
        details["explanation"] = (f"{describe(polls[0])} returned {v!r} at offset {o}{more}, "
                                  f"but the final read holds {now} there")
        out.append(Anomaly(TRUNCATED_READ, ph.topic, ph.partition, details))
    return out


# --- nonmonotonic-send, future-read: sweeps in history order ------------------------


def _landing(obs: Observations, send: Send) -> int | None:
    """The lowest offset holding `send`'s value: its ack, or where polls and the
    final read saw the value. When several sends wrote the same value, only the
    send's own ack is attributable to it."""
    if send.value in obs.other_writers:
        return send.offset if send.outcome == "ok" else None
    return obs.lowest_offset_of(send.value)


def _overtaken(obs: Observations, earlier: Sequence[Earlier],
               marks: list[int]) -> Iterator[tuple[Earlier, int, Send, int]]:
    """Sweep for the two checks below. `earlier` are ops sorted by completion
    index, `marks[i]` the highest offset `earlier[i]` vouches for. Yields
    (E, mark, B, b) for every send B (not failed) whose value sits at b <= mark,
    where E is the op with the highest mark among those completed before B was
    invoked. A prefix maximum, then one bisection per send, all in C-level
    map()s: O(n log n) with no Python step per send unless it is flagged."""
    if not earlier:
        return
    completed = list(map(_complete_index, earlier))
    highs: list[int] = list(accumulate(marks, max))  # highs[i]: highest mark in earlier[:i + 1]
    later, lands = obs.writes, obs.landings
    before = list(map(bisect_left, repeat(completed), map(_invoke_index, later)))
    reach = map((-1, *highs).__getitem__, before)  # -1: nothing completed before
    for i in compress(count(), map(le, lands, reach)):
        k = before[i] - 1
        e = bisect_left(highs, highs[k])  # the first op to reach that mark
        yield earlier[e], highs[k], later[i], lands[i]


def _landings(obs: Observations, sends: list[Send]) -> list[int]:
    """`_landing` of each send, with sys.maxsize for None."""
    lands = list(map(obs.offset_of.get, map(_send_value, sends), repeat(sys.maxsize)))
    if obs.multi_offsets or obs.other_writers:
        for i, s in enumerate(sends):
            if s.value in obs.multi_offsets or s.value in obs.other_writers:
                b = _landing(obs, s)
                lands[i] = sys.maxsize if b is None else b
    return lands


def nonmonotonic_sends(ph: PartitionHistory, obs: Observations) -> list[Anomaly]:
    """Send A acked at a completed before send B was invoked, yet B's value sits
    at some b <= a (B's ack, or where the final read or an ok poll saw it)."""
    acked = sorted((s for s in obs.acked if s.complete_index is not None), key=_complete_index)
    out = []
    # acked: the ok sends with an offset
    for a_send, a, b_send, b in _overtaken(obs, acked, cast(list[int], [s.offset for s in acked])):
        out.append(Anomaly(NONMONOTONIC_SEND, ph.topic, ph.partition, {
            "value": b_send.value, "offset": b, "send_outcome": b_send.outcome,
            "earlier_value": a_send.value, "earlier_offset": a, **op_refs([a_send, b_send]),
            "explanation": f"{describe(a_send)} was acked at offset {a} before {describe(b_send)} "
                           f"began, yet {b_send.value!r} sits at offset {b} <= {a}"}))
    return out


def future_reads(ph: PartitionHistory, obs: Observations) -> list[Anomaly]:
    """An ok poll that returned offsets up to m completed before send B was
    invoked, yet B's value sits at some offset b <= m."""
    out = []
    for poll, m, b_send, b in _overtaken(obs, obs.reads, obs.read_marks()):
        out.append(Anomaly(FUTURE_READ, ph.topic, ph.partition, {
            "value": b_send.value, "offset": b, "send_outcome": b_send.outcome,
            "poll_max_offset": m, **op_refs([poll, b_send]),
            "explanation": f"{describe(poll)} had read up to offset {m} before "
                           f"{describe(b_send)} began, yet {b_send.value!r} sits at "
                           f"offset {b} <= {m}"}))
    return out


# --- aborted-read, phantom-read -------------------------------------------------


def aborted_reads(ph: PartitionHistory, obs: Observations) -> list[Anomaly]:
    """Values whose every send failed, yet an ok poll or the final read holds them."""
    aborted = {v for v, s in obs.writer.items()
               if s.outcome == "fail" and v in obs.offset_of
               and all(o.outcome == "fail" for o in obs.other_writers.get(v, ()))}
    return _unexplained(ph, obs, aborted, ABORTED_READ,
                        "every send of {v!r} failed, yet it was read at offsets {offsets}")


def phantom_reads(ph: PartitionHistory, obs: Observations) -> list[Anomaly]:
    """Values read (ok poll or final read) that no send of this partition wrote."""
    phantoms = obs.offset_of.keys() - obs.writer.keys()
    return _unexplained(ph, obs, phantoms, PHANTOM_READ,
                        "{v!r} was read at offsets {offsets}, "
                        "but no send of this partition wrote it")


def _unexplained(ph: PartitionHistory, obs: Observations, values: set[str], name: str,
                 explanation: str) -> list[Anomaly]:
    if not values:
        return []
    by_value: dict[str, list[Sighting]] = {}
    for seen in sightings(ph, values=values):
        by_value.setdefault(seen.value, []).append(seen)
    out = []
    for v in sorted(values, key=lambda v: (obs.lowest_offset_of(v), v)):
        offsets = obs.offsets_of(v)
        sights = by_value.get(v, [])
        details = {"value": v, "offsets": offsets, **_observed(sights),
                   **op_refs([*_ops_of(sights), *obs.writers_of(v)]),
                   "explanation": explanation.format(v=v, offsets=offsets)}
        out.append(Anomaly(name, ph.topic, ph.partition, details))
    return out


# --- all of the above ---------------------------------------------------------------


@dataclass(slots=True)
class OffsetFindings:
    anomalies: list[Anomaly]
    unjudged: int


def check_offsets(ph: PartitionHistory, obs: Observations | None = None) -> OffsetFindings:
    """Every check of this module, over one index of `ph`."""
    obs = obs if obs is not None else observe(ph)
    lost = lost_writes(ph, obs)
    anomalies = [
        *lost.anomalies,
        *duplicates(ph, obs),
        *inconsistent_offsets(ph, obs),
        *truncated_reads(ph, obs),
        *nonmonotonic_sends(ph, obs),
        *future_reads(ph, obs),
        *aborted_reads(ph, obs),
        *phantom_reads(ph, obs),
    ]
    return OffsetFindings(anomalies, lost.unjudged)
