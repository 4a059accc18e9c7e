"""`unseen` of one partition: acked values that no ok poll ever returned, and
how many acked values were still unpolled over time (docs/CHECKERS.md).

Not an error by default: consumers may simply lag. `in_final` tells whether the
final read holds the value (unseen by the consumers, yet in the log).
"""
from __future__ import annotations

import sys
from bisect import bisect_right
from dataclasses import dataclass, field
from heapq import nsmallest
from itertools import chain, compress, repeat
from operator import attrgetter, itemgetter, not_
from typing import TypeVar

from fencepost.checkers.anomaly import UNSEEN, Anomaly
from fencepost.checkers.offsets import Observations, first_poll_of_values, observe
from fencepost.checkers.partition import PartitionHistory, Poll, Send

MAX_POINTS = 1000

T = TypeVar("T")
_send_value = attrgetter("value")
_complete_index = attrgetter("complete_index")
_complete_time = attrgetter("complete_time")
_by_offset = attrgetter("offset", "complete_index")
_value = itemgetter(1)


@dataclass(slots=True)
class UnseenResult:
    anomalies: list[Anomaly]
    # [[time_ns, acked values not yet polled], ...] at each ok-send and ok-poll
    # completion in history order, downsampled to at most MAX_POINTS points
    # (evenly spaced over the completions, the first and last kept).
    series: list[list[int]] = field(default_factory=list)
    in_final: int = 0  # of the anomalies: those whose value the final read holds


def unseen(ph: PartitionHistory, obs: Observations | None = None,
           max_points: int = MAX_POINTS, keep: int | None = None) -> UnseenResult:
    """`obs` is `observe(ph)`, built here when not given. With `keep`, only
    the first `keep` anomalies (by offset) carry their details; the others
    are one detail-less stand-in, repeated (as harness.check.checking.compact
    leaves them): a clean run whose consumers lag has an unseen value per
    unread ack, and their details were most of this check's time."""
    obs = obs if obs is not None else observe(ph)
    acked = [s for s in obs.acked if s.complete_index is not None]
    first_polled = first_poll_of_values(obs)
    polls = [p for p in ph.polls if p.outcome == "ok" and p.complete_index is not None]

    anomalies = []
    in_final_count = 0
    polled = map(first_polled.__contains__, map(_send_value, acked))
    never = list(compress(acked, map(not_, polled)))
    if never:
        final_values = set(map(_value, ph.final or ()))
        in_final_count = sum(map(final_values.__contains__, map(_send_value, never)))
        where = (UNSEEN, ph.topic, ph.partition)
        shown = (sorted(never, key=_by_offset) if keep is None or keep >= len(never)
                 else nsmallest(keep, never, key=_by_offset))
        for s in shown:  # acked: each has an offset
            value, offset = s.value, s.offset
            in_final = value in final_values
            # The details of op_refs([s]) and describe(s), written out: there may be many.
            anomalies.append(Anomaly(*where, {
                "value": value, "offset": offset, "in_final": in_final,
                "ops": [[s.invoke_index, s.complete_index]],
                "explanation": f"send {s.invoke_index}-{s.complete_index} by process "
                               f"{s.process} of {value!r} was acked at offset {offset}, but no "
                               f"ok poll returned it; the final read "
                               f"{'holds' if in_final else 'does not hold'} it"}))
        if len(shown) < len(never):
            anomalies += [Anomaly(*where)] * (len(never) - len(shown))
    return UnseenResult(anomalies, _series(acked, polls, first_polled, max_points),
                        in_final_count)


def _series(acked: list[Send], polls: list[Poll], first_polled: dict[str, int],
            max_points: int) -> list[list[int]]:
    """The count of acked-but-unpolled values at (a sample of) the completions.
    A value is pending from its ack until its first poll, if that came later:
    pending at e = #(acks <= e) - #(max(ack, first poll) <= e), two bisections
    per sampled point instead of a step per event."""
    acks = list(map(_complete_index, acked))
    starts = sorted(acks)
    firsts = map(first_polled.get, map(_send_value, acked), repeat(sys.maxsize))
    ends = sorted(map(max, acks, firsts))
    completions = [*acks, *map(_complete_index, polls)]
    events = sorted([*starts, *completions[len(acks):]])  # two sorted runs: a merge
    sampled = downsample(events, max_points)
    # Ok ops have a completion time (checkers/partition.py); only the sampled ones are needed.
    wanted = set(sampled)
    chosen = list(map(wanted.__contains__, completions))
    times = dict(zip(compress(completions, chosen),
                     map(_complete_time, compress(chain(acked, polls), chosen))))
    return [[times[e], bisect_right(starts, e) - bisect_right(ends, e)] for e in sampled]


def downsample(points: list[T], max_points: int) -> list[T]:
    """At most `max_points` evenly spaced points, the first and last kept."""
    n = len(points)
    if n <= max_points:
        return points
    if max_points < 2:
        return points[-max_points:] if max_points else []
    step = (n - 1) / (max_points - 1)
    return [points[round(i * step)] for i in range(max_points)]
