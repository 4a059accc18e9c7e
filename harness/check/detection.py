"""Time to first detection: how far into a run its invalidity could first have been known.
The one definition `fencepost analyze` (harness/analysis/checks.py) and `fencepost
compare` (harness/compare/) share.

Rules, on history times (nanoseconds; 0 is the run's start):
1. An anomaly's evidence is complete at the latest completion time among the sends,
   polls, commits and resumes (assigns) its `ops` names (history indices, or [invoke, complete] pairs; an invoke's index
   stands for its op's completion). Ops never completed, and indices of other operations,
   are not counted; an anomaly naming no completed send or poll has no time. The checkers
   list at most 20 ops per anomaly (checkers/offsets.py), and the time is taken over those.
2. A partition's first evidence is the earliest such time over the anomalies of the run's
   invalid set found in it (`first_evidence_ns`), or None.
3. A run's first detection is the earliest first evidence over its partitions, in
   seconds, for an invalid run only: None for a valid or unknown run, and for an invalid
   run whose invalidating anomalies name no completed op (`first_detection_s`).
4. A configuration's figure is the median over its runs that have one (`median_s`).

The anomalies must be the full list a check found: a report compacted for results.json
(harness.check.checking.compact) has lost the ops of all but its first examples.
"""
from __future__ import annotations

import statistics
from typing import Iterable

from fencepost.checkers.anomaly import Anomaly
from fencepost.checkers.partition import Commit, PartitionHistory, Poll, Resume, Send


def first_evidence_ns(ph: PartitionHistory, anomalies: Iterable[Anomaly], invalid: frozenset[str]) -> int | None:
    """Rule 2: the earliest history time (ns) at which all the listed ops of one anomaly
    named in `invalid` had completed, in partition `ph`; None if there is none."""
    times: dict[int, int] = {}
    every: tuple[Send | Poll | Commit | Resume, ...] = (*ph.sends, *ph.polls, *ph.commits, *ph.resumes)
    for op in every:
        if op.complete_index is not None and op.complete_time is not None:
            times[op.invoke_index] = times[op.complete_index] = op.complete_time
    earliest = None
    for anomaly in anomalies:
        if anomaly.name not in invalid:
            continue
        indices = [i for pair in anomaly.details.get("ops", ())
                   for i in (pair if isinstance(pair, (list, tuple)) else (pair,))]
        known = [times[i] for i in indices if i in times]
        if known:
            done = max(known)
            earliest = done if earliest is None else min(earliest, done)
    return earliest


def first_detection_s(valid: object, evidence_ns: Iterable[int | None]) -> float | None:
    """Rule 3: seconds from the run's start to its first invalidating evidence, given the
    run's verdict (`valid`: True, False or "unknown") and its partitions' first evidence."""
    if valid is not False:
        return None
    known = [t for t in evidence_ns if t is not None]
    return min(known) / 1e9 if known else None


def median_s(times: Iterable[float | None]) -> float | None:
    """Rule 4: the median of the runs' first detections that exist; None if none does."""
    known = [t for t in times if t is not None]
    return statistics.median(known) if known else None
