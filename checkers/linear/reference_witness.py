"""The reference witness: a proposed linearization of a history, checked against any model
instead of searching for one. `fencepost check` does not use it: it decides with
`checkers.linear.kafka.greedy_witness` on the partition's index, and the tests hold that to
this reference (`log_witness` proposes the order of docs/LINEARIZABILITY.md §6 as ops,
`verify` checks any order against any model).

A witness is a total order of some of a history's ops. It proves the history
linearizable iff it holds every required op (those with a known return) at
most once, respects real time (an op that returned before another was called
comes first), and the model allows every op in that order from `init()`.
That check is O(n) model steps, so a good proposal spares the exponential search on
histories that are linearizable; when the witness fails, the complete search alone may
answer "not linearizable".

For the log model the steps are not replayed one by one through
`LogModel.step`: along one order the log only grows, so each kind of op is
checked against the appends placed before it in a few C-level passes
(`_log_allows`), with the same answer as the step-by-step replay.
"""
from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from itertools import accumulate, chain, compress, count, islice, repeat
from operator import attrgetter, ge, is_, itemgetter, lt
from typing import Any

from fencepost.checkers.linear.logmodel import Append, LogModel, Read, ReadExact
from fencepost.checkers.linear.model import Model, Op

_id = attrgetter("id")
_call = attrgetter("call")
_ret = attrgetter("ret")
_input = attrgetter("input")
_offset = attrgetter("offset")
_value = attrgetter("value")
_records = attrgetter("records")


def verify(model: Model[Any], ops: Sequence[Op], order: Sequence[Op]) -> bool:
    """True iff `order` is a linearization of `ops` under `model`."""
    ids = list(map(_id, order))
    placed = set(ids)
    if len(placed) != len(ids):
        return False  # an op placed twice
    if not _respects_real_time(order):
        return False
    if type(model) is LogModel:
        allowed = _log_allows(order)
        if allowed is not None and not allowed:
            return False
        if allowed is None and not _model_allows(model, order):
            return False
    elif not _model_allows(model, order):
        return False
    return all(op.id in placed for op in ops if op.ret is not None)


def _respects_real_time(order: Sequence[Op]) -> bool:
    """No op returned before an op placed earlier was called."""
    if len(order) < 2:
        return True
    latest_call = accumulate(map(_call, order), max)  # the latest call up to each op
    returns = [sys.maxsize if r is None else r for r in map(_ret, order[1:])]
    return not any(map(lt, returns, latest_call))


def _model_allows(model: Model[Any], order: Sequence[Op]) -> bool:
    state = model.init()
    for op in order:
        state = model.step(state, op)
        if state is None:
            return False
    return True


def _log_allows(order: Sequence[Op]) -> bool | None:
    """Does the log model allow `order`, step by step from the empty log?
    None when the order holds ops that are not the log model's, or reads of
    records that are not (offset, value) tuples: `LogModel.step` decides those.

    Along `order` the log only grows, so it is decided by kind, each in one
    C-level pass: the appends' offsets strictly increase (from the empty log's
    -1); each record a read returned was appended, with that value, before the
    read; each final read finds what the appends placed before it left there."""
    inputs = list(map(_input, order))
    kinds = list(map(type, inputs))
    if kinds.count(Append) + kinds.count(Read) + kinds.count(ReadExact) != len(kinds):
        return None
    positions = range(len(order))
    appended_at = list(compress(positions, map(is_, kinds, repeat(Append))))
    appends = list(map(inputs.__getitem__, appended_at))
    offsets = list(map(_offset, appends))
    if not all(map(lt, chain((-1,), offsets), offsets)):
        return False
    values = list(map(_value, appends))
    read_at = list(compress(positions, map(is_, kinds, repeat(Read))))
    if read_at:
        written_at = dict(zip(zip(offsets, values), appended_at))  # (offset, value) -> position
        records = list(map(_records, map(inputs.__getitem__, read_at)))
        lengths = list(map(len, records))
        if 0 in lengths:  # an empty read is always allowed
            read_at = list(compress(read_at, lengths))
            records = list(compress(records, lengths))
            lengths = list(filter(None, lengths))
        # Position of the append of each record (sys.maxsize: none), then per
        # read the latest of its records': islice takes each read's run in turn.
        where = iter(map(written_at.get, chain.from_iterable(records), repeat(sys.maxsize)))
        try:
            needs = list(map(max, map(islice, repeat(where), lengths)))
        except TypeError:  # unhashable records: not (offset, value) tuples
            return None
        if any(map(ge, needs, read_at)):
            return False
    exact_at = list(compress(positions, map(is_, kinds, repeat(ReadExact))))
    if exact_at:
        exacts = list(map(inputs.__getitem__, exact_at))
        if not appended_at or exact_at[0] > appended_at[-1]:  # the usual case: after every append
            held = dict(zip(offsets, values))
            return list(map(held.get, map(_offset, exacts))) == list(map(_value, exacts))
        placed = dict(zip(offsets, zip(appended_at, values)))  # offset -> (position, value)
        for at, exact in zip(exact_at, exacts):
            position, value = placed.get(exact.offset, (at, None))
            if (value if position < at else None) != exact.value:
                return False
    return True


_NEVER = math.inf  # the effect time of a record no chosen append wrote
_position = itemgetter(4)


def _read_times(reads: list[Op], effect_at: dict[tuple[int, str], int]) -> list[float]:
    """When each read can take effect: its call, or the latest effect among
    the records it returned if later (_NEVER if one has no chosen append)."""
    records = list(map(_records, map(_input, reads)))
    lengths = list(map(len, records))
    if 0 in lengths:  # a read of nothing takes effect at its call
        return [max(op.call, max(map(effect_at.get, op.input.records, repeat(_NEVER)),
                                 default=op.call)) for op in reads]
    # One lookup per record, then each read's run of them in turn (islice).
    effects = iter(map(effect_at.get, chain.from_iterable(records), repeat(_NEVER)))
    return list(map(max, map(_call, reads), map(max, map(islice, repeat(effects), lengths))))


def _demanded_optional(optional: list[Op], required: dict[int, Op], reads: list[Op],
                       exacts: list[Op]) -> dict[int, Op]:
    """Offset -> the first optional append at an offset with no required one
    whose (offset, value) some read or final read returned."""
    free: dict[int, list[Op]] = {}
    for op in optional:
        if op.input.offset not in required:
            free.setdefault(op.input.offset, []).append(op)
    if not free:
        return {}
    wanted = {(o, op.input.value) for o, candidates in free.items() for op in candidates}
    demanded = wanted.intersection(chain.from_iterable(op.input.records for op in reads))
    demanded.update(wanted.intersection(
        (op.input.offset, op.input.value) for op in exacts if op.input.value is not None))
    out: dict[int, Op] = {}
    for offset, candidates in free.items():
        chosen = next((op for op in candidates if (offset, op.input.value) in demanded), None)
        if chosen is not None:
            out[offset] = chosen
    return out


def log_witness(ops: Sequence[Op]) -> list[Op] | None:
    """The greedy linearization of docs/LINEARIZABILITY.md §6: one append
    per offset (the required one, else an optional one that some read
    demands), taking effect in offset order, each as early as its call and
    the previous append allow; each read as early as its call and the
    appends it returned allow; the final read last."""
    required: dict[int, Op] = {}  # offset -> its one required append
    optional: list[Op] = []
    reads: list[Op] = []
    exacts: list[Op] = []
    for op in ops:
        cls = op.input.__class__
        if cls is Append:
            if op.ret is None:
                optional.append(op)
            elif op.input.offset in required:
                return None  # two required appends at one offset
            else:
                required[op.input.offset] = op
        elif cls is Read:
            reads.append(op)
        else:
            exacts.append(op)
    chosen = required
    if optional:
        chosen = dict(required)
        for offset, op in _demanded_optional(optional, required, reads, exacts).items():
            chosen[offset] = op
    offsets = sorted(chosen)
    appends = list(map(chosen.__getitem__, offsets))
    # Each append takes effect at its call or the previous one's effect.
    times = list(accumulate(map(_call, appends), max))
    pairs = list(zip(offsets, map(_value, map(_input, appends))))
    effect_at = dict(zip(pairs, times))
    placed = appends + reads + exacts  # keys below index into this
    keys = list(zip(times, repeat(0), offsets, map(_id, appends), count()))
    if reads:
        read_times = _read_times(reads, effect_at)
        if _NEVER in read_times:
            return None  # a read returned a record no chosen append wrote
        keys.extend(zip(read_times, repeat(1), repeat(0), map(_id, reads),
                        count(len(appends))))
    keys.extend(zip(map(_call, exacts), repeat(2), map(_offset, map(_input, exacts)),
                    map(_id, exacts), count(len(appends) + len(reads))))
    keys.sort()  # (time, kind, offset, id, position): the position breaks every tie
    return list(map(placed.__getitem__, map(_position, keys)))
