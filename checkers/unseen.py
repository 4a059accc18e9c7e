"""`unseen` of one partition: acked values that no ok poll ever returned, and
how many acked values were still unpolled over time (docs/CHECKERS.md).

Not an error by default: consumers may simply lag. `in_final` tells whether the
final read holds the value (unseen by the consumers, yet in the log).
"""
from __future__ import annotations

import sys
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import attrgetter
from typing import TypeVar

from checkers.anomaly import UNSEEN, Anomaly
from checkers.offsets import Observations, describe, first_poll_of_values, observe, op_refs
from checkers.partition import PartitionHistory, Poll, Send

MAX_POINTS = 1000

T = TypeVar("T")
_send_value = attrgetter("value")
_complete_index = attrgetter("complete_index")
_complete_time = attrgetter("complete_time")


@dataclass(slots=True)
class UnseenResult:
    anomalies: list[Anomaly]
    # [[time_ns, acked values not yet polled], ...] at each ok-send and ok-poll
    # completion in history order, downsampled to at most MAX_POINTS points
    # (evenly spaced over the completions, the first and last kept).
    series: list[list[int]] = field(default_factory=list)


def unseen(ph: PartitionHistory, obs: Observations | None = None,
           max_points: int = MAX_POINTS) -> UnseenResult:
    """`obs` is `observe(ph)`, built here when not given."""
    obs = obs if obs is not None else observe(ph)
    acked = [s for s in obs.acked if s.complete_index is not None]
    first_polled = first_poll_of_values(obs)
    polls = [p for p in ph.polls if p.outcome == "ok" and p.complete_index is not None]

    anomalies = []
    never = [s for s in acked if s.value not in first_polled]
    if never:
        final_values = {v for _, v in ph.final or ()}
        for s in sorted(never, key=lambda s: (s.offset is None, s.offset, s.complete_index)):
            in_final = s.value in final_values
            anomalies.append(Anomaly(UNSEEN, ph.topic, ph.partition, {
                "value": s.value, "offset": s.offset, "in_final": in_final, **op_refs([s]),
                "explanation": f"{describe(s)} of {s.value!r} was acked at offset {s.offset}, but "
                               f"no ok poll returned it; the final read "
                               f"{'holds' if in_final else 'does not hold'} it"}))
    return UnseenResult(anomalies, _series(acked, polls, first_polled, max_points))


def _series(acked: list[Send], polls: list[Poll], first_polled: dict[str, int],
            max_points: int) -> list[list[int]]:
    """The count of acked-but-unpolled values at (a sample of) the completions.
    A value is pending from its ack until its first poll, if that came later:
    pending at e = #(acks <= e) - #(max(ack, first poll) <= e), two bisections
    per sampled point instead of a step per event."""
    starts = sorted(map(_complete_index, acked))
    firsts = map(first_polled.get, map(_send_value, acked), repeat(sys.maxsize))
    ends = sorted(map(max, map(_complete_index, acked), firsts))
    events = sorted([*starts, *map(_complete_index, polls)])  # two sorted runs: a merge
    sampled = downsample(events, max_points)
    # Ok ops have a completion time (checkers/partition.py).
    times = dict(zip(map(_complete_index, chain(acked, polls)),
                     map(_complete_time, chain(acked, polls))))
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
