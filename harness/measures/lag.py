"""Realtime lag per consumer (Jepsen's kafka checker reports the worst of it): how
far behind the newest acknowledged writes each consumer's polls were, over time.

Definition (docs/REPORT.md says the same): at each poll of consumer c, invoked at
time t, for each partition p that c reads — the partitions of its latest assign; with
subscribe, or before any assign, every partition written to so far — take the
earliest-acknowledged write to p that was acknowledged before t and whose offset is
above the highest offset of p that c had read by the end of that poll. The lag at p
is t minus that write's acknowledgement time (0 when there is none); the poll's
realtime lag is the largest over c's partitions. "Read" counts from c's latest
assign: an assign from the beginning forgets what c had read, one from committed
offsets starts just below them. Failed and unknown (`info`) polls read nothing but
still have a lag: a consumer whose polls keep failing falls behind like one stuck.

`RealtimeLag` is a history-scan observer (harness/report/scan.py), O(log n) per
partition a poll reads: per partition, the acknowledgements in the order they arrived
with the running maximum of their offsets, which does not decrease, so the first
acknowledgement above what a consumer had read is a binary search away (the first
offset above it is where the running maximum first is).
"""
from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from fencepost.harness.rundir.history import NEMESIS, Op

Key = tuple[str, int]


@dataclass(slots=True)
class LagSeries:
    """One consumer's polls: invoke times and realtime lags, ns."""
    process: int
    times: array = field(default_factory=lambda: array("q"))
    lags: array = field(default_factory=lambda: array("q"))

    def worst(self) -> tuple[int, int]:
        """(lag, time) of its worst poll."""
        if not self.lags:
            return 0, 0
        at = max(range(len(self.lags)), key=self.lags.__getitem__)
        return self.lags[at], self.times[at]


class RealtimeLag:
    """The observer (see the module doc); `series` per consumer process once the scan is done."""

    def __init__(self) -> None:
        self._ack_times: dict[Key, array] = {}
        self._ack_reach: dict[Key, array] = {}  # the highest offset acked so far, per ack
        self._read: dict[tuple[int, Key], int] = {}  # highest offset read since the latest assign
        self._assigned: dict[int, list[Key] | None] = {}  # None: subscribed (every partition)
        self._invoked: dict[int, int] = {}
        self.series: dict[int, LagSeries] = {}

    def __call__(self, op: Op) -> None:
        process = op.process
        if process == NEMESIS:
            return
        if op.type == "invoke":
            self._invoked[process] = op.time
            return
        invoked = self._invoked.pop(process, None)
        f = op.f
        if f == "send":
            if op.type == "ok":
                v = op.value
                key = (v["topic"], v["partition"])
                times = self._ack_times.get(key)
                if times is None:
                    times = self._ack_times[key] = array("q")
                    self._ack_reach[key] = array("q")
                reach = self._ack_reach[key]
                times.append(op.time)
                reach.append(max(reach[-1], v["offset"]) if reach else v["offset"])
        elif f == "poll":
            if invoked is not None:
                self._poll(process, invoked, op)
        elif f == "assign" and op.type != "fail":
            self._assign(process, op.value)
        elif f == "subscribe" and op.type != "fail":
            self._assigned[process] = None

    def _assign(self, process: int, value: Any) -> None:
        if not isinstance(value, dict) or not isinstance(value.get("partitions"), list):
            return
        # history lines reach observers unvalidated (iter_plain): a malformed pair is the
        # reader's error to report, not one to crash on here
        keys = [(tp[0], tp[1]) for tp in value["partitions"]
                if type(tp) is list and len(tp) == 2 and type(tp[0]) is str and type(tp[1]) is int]
        start = value.get("from")
        self._assigned[process] = keys
        for key in keys:
            position = start.get(f"{key[0]}-{key[1]}") if isinstance(start, dict) else None
            self._read[(process, key)] = position - 1 if type(position) is int else -1

    def _poll(self, process: int, invoked: int, op: Op) -> None:
        polled: set[Key] = set()
        if op.type == "ok":
            read = self._read
            for record in op.value["records"]:
                key = (record["topic"], record["partition"])
                polled.add(key)
                mine = (process, key)
                if record["offset"] > read.get(mine, -1):
                    read[mine] = record["offset"]
        assigned = self._assigned.get(process)
        keys = set(self._ack_times) if assigned is None else set(assigned)
        lag = 0
        for key in keys | polled:
            lag = max(lag, self._lag_at(process, key, invoked))
        series = self.series.get(process)
        if series is None:
            series = self.series[process] = LagSeries(process)
        series.times.append(invoked)
        series.lags.append(lag)

    def _lag_at(self, process: int, key: Key, at: int) -> int:
        reach = self._ack_reach.get(key)
        if reach is None:
            return 0
        first = bisect_right(reach, self._read.get((process, key), -1))  # the first ack above what it read
        if first < len(reach):
            acked = self._ack_times[key][first]
            if acked < at:
                return at - acked
        return 0
