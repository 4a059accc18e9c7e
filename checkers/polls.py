"""Consumer order checks of one partition: `poll-skip` and `nonmonotonic-poll`
between consecutive polls of one process, `int-poll-skip` and
`int-nonmonotonic-poll` inside one poll (docs/CHECKERS.md defines each).

A skip is only a skip over an offset known to exist: one seen in an ack, an ok
poll or the final read (`Observations.known_offsets`), found by bisection in
that sorted list.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import count
from operator import eq, itemgetter
from typing import Any

from fencepost.checkers.anomaly import (
    INT_NONMONOTONIC_POLL,
    INT_POLL_SKIP,
    NONMONOTONIC_POLL,
    POLL_SKIP,
    Anomaly,
)
from fencepost.checkers.offsets import Observations, describe, observe, op_refs
from fencepost.checkers.partition import PartitionHistory, Poll

_offset = itemgetter(0)

# A skip names at most this many of the offsets it skipped (and counts them all).
MAX_SKIPPED_LISTED = 10


def _skipped(known: Sequence[int], after: int, before: int) -> dict[str, Any] | None:
    """The known offsets strictly between `after` and `before` (the first few,
    and how many), or None if there are none."""
    lo, hi = bisect_right(known, after), bisect_left(known, before)
    if hi <= lo:
        return None
    return {"skipped": list(known[lo:min(hi, lo + MAX_SKIPPED_LISTED)]), "skipped_count": hi - lo}


def poll_order(ph: PartitionHistory, obs: Observations, known: Sequence[int]) -> list[Anomaly]:
    """Compare each ok poll that returned records of this partition with the
    previous such poll of the same process. A `Reset` of the process, or an
    `info` poll (it may have consumed records nobody saw), forgets the previous
    poll; polls that returned nothing here, and failed polls, are passed over.
    A process has one op in flight, so its polls' completion order (that of
    `obs.reads`) is its invoke order."""
    forgets: dict[int, list[int]] = {}  # process -> history indices that forget its position
    for r in ph.resets:
        forgets.setdefault(r.process, []).append(r.index)
    for p in ph.polls:
        if p.outcome == "info":
            forgets.setdefault(p.process, []).append(p.invoke_index)
    for indices in forgets.values():
        indices.sort()
    out = []
    last: dict[int, Poll] = {}
    for ev in obs.reads:
        prev = last.get(ev.process)
        last[ev.process] = ev
        # Contiguous with the previous poll is the common case: nothing to look up.
        if prev is None or ev.records[0][0] == prev.records[-1][0] + 1:
            continue
        if not _forgotten(forgets.get(ev.process), prev, ev):
            out.extend(_compare(ph, known, prev, ev))
    return out


def _forgotten(forgets: list[int] | None, prev: Poll, ev: Poll) -> bool:
    """Was the position of the process forgotten between `prev` and `ev`?"""
    if not forgets:
        return False
    return bisect_left(forgets, ev.invoke_index) > bisect_right(forgets, prev.invoke_index)


def _compare(ph: PartitionHistory, known: Sequence[int], prev: Poll, ev: Poll) -> list[Anomaly]:
    prev_last, first = prev.records[-1][0], ev.records[0][0]
    base = {"process": ev.process, "previous_last_offset": prev_last, "first_offset": first}
    if first <= prev_last:
        return [Anomaly(NONMONOTONIC_POLL, ph.topic, ph.partition, {
            **base, **op_refs([prev, ev]),
            "explanation": f"{describe(ev)} started at offset {first}, but the previous "
                           f"poll of that process ended at {prev_last}, with no assign between"})]
    skipped = _skipped(known, prev_last, first)
    if not skipped:
        return []
    return [Anomaly(POLL_SKIP, ph.topic, ph.partition, {
        **base, **skipped, **op_refs([prev, ev]),
        "explanation": f"{describe(ev)} started at offset {first} after the previous poll "
                       f"of that process ended at {prev_last}, skipping "
                       f"{skipped['skipped_count']} known offset(s) {skipped['skipped']}"})]


def internal_poll_order(ph: PartitionHistory, obs: Observations,
                        known: Sequence[int]) -> list[Anomaly]:
    """Inside each ok poll's records of this partition: offsets must strictly
    increase and step over no known offset. One anomaly per offending pair."""
    out = []
    for p in obs.reads:
        if len(p.records) < 2:
            continue
        prev = p.records[0][0]
        if all(map(eq, map(_offset, p.records), count(prev))):
            continue  # consecutive offsets: the common case, checked at C speed
        for o, _ in p.records[1:]:
            if o != prev + 1:
                out.extend(_internal(ph, p, known, prev, o))
            prev = o
    return out


def _internal(ph: PartitionHistory, p: Poll, known: Sequence[int], prev: int,
              o: int) -> list[Anomaly]:
    base = {"process": p.process, "offset": prev, "next_offset": o}
    if o <= prev:
        return [Anomaly(INT_NONMONOTONIC_POLL, ph.topic, ph.partition, {
            **base, **op_refs([p]),
            "explanation": f"{describe(p)} returned offset {o} right after offset {prev}"})]
    skipped = _skipped(known, prev, o)
    if not skipped:
        return []
    return [Anomaly(INT_POLL_SKIP, ph.topic, ph.partition, {
        **base, **skipped, **op_refs([p]),
        "explanation": f"{describe(p)} went from offset {prev} to {o}, skipping "
                       f"{skipped['skipped_count']} known offset(s) {skipped['skipped']}"})]


def check_polls(ph: PartitionHistory, obs: Observations | None = None,
                known: Sequence[int] | None = None) -> list[Anomaly]:
    """Both checks; `obs` is `observe(ph)` and `known` its `known_offsets()`,
    built here when not given."""
    obs = obs if obs is not None else observe(ph)
    known = known if known is not None else obs.known_offsets()
    return [*poll_order(ph, obs, known), *internal_poll_order(ph, obs, known)]
