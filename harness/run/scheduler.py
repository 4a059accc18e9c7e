"""The scheduler: drives workloads at a target rate, each logical process with at
most one operation in flight, for a time limit or until stopped; counts
completions for the live progress line.

A `Lane` is one workload and the rate its operations are issued at (ops/s
across all its processes; None: as fast as processes come free). The run
loop, in the caller's thread (`run`), issues an operation whenever one is due
and a process of its lane is free — the free process that has waited longest,
so every process gets its turn — and otherwise waits for completions by
serving the workloads (a producer's delivery reports), never longer than
`MAX_WAIT_S`, so that `stop()` from any thread ends it promptly. Nothing is
queued: when every process of a lane is busy, its due operations wait for one
to come free, and what falls more than `CATCH_UP_S` behind is dropped rather
than sent later in a burst. So at a rate R the lane issues R ops/s as long as
completions keep up.

Due times follow Jepsen's `stagger`: the gap after each operation is uniform
in [0, 2/R) (mean 1/R) from a seeded RNG; without stagger it is exactly 1/R.

A workload is anything with `processes`, `pending` (ops in flight),
`begin(process, done)`, `service(timeout)` and `close(timeout)`
(workloads/producer.py, workloads/consumer.py); it calls `done(process, type)`
once per `begin`, when that process is free again.

Client crashes (`crash_interval`, Jepsen's `--crash-clients`): on a timeline of their own
(gaps uniform in [0, 2·interval), seeded), a free process of a lane whose workload can crash
its client (`crash(process, done)`) is drawn and its client crashed instead of its next
operation; the crash is an operation of that lane (a `crash` op, `info`).

Process ids (`plan_processes`): producers 0..c-1 for concurrency c; consumers
from the first multiple of 1000 at or above c (1000, 1001, ... for c <= 1000),
so the two never meet and a consumer is recognisable in a history.
"""
from __future__ import annotations

import math
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

MAX_WAIT_S = 0.05  # the longest wait between two looks at the stop event and the clock
CATCH_UP_S = 0.1  # operations due longer ago than this are dropped, not issued in a burst
RATE_WINDOW_S = 1.0  # ops_per_s: completions over (at least) the last this many seconds
CONSUMER_ID_BLOCK = 1000
UNLIMITED = None


class Workload(Protocol):
    name: str
    processes: tuple[int, ...]

    @property
    def pending(self) -> int: ...

    def begin(self, process: int, done: Callable[[int, str], None]) -> None: ...

    def service(self, timeout: float) -> None: ...

    def close(self, timeout: float) -> None: ...


@dataclass(frozen=True)
class ProcessPlan:
    producers: range
    consumers: range


def plan_processes(concurrency: int, consumers: int) -> ProcessPlan:
    """The process ids of `concurrency` producer processes and `consumers` consumer processes."""
    if concurrency < 1:
        raise ValueError(f"concurrency = {concurrency}: give at least 1 producer process")
    if consumers < 0:
        raise ValueError(f"consumers = {consumers}: give 0 or more consumer processes")
    first = max(CONSUMER_ID_BLOCK, math.ceil(concurrency / CONSUMER_ID_BLOCK) * CONSUMER_ID_BLOCK)
    return ProcessPlan(range(concurrency), range(first, first + consumers))


@dataclass(frozen=True)
class Lane:
    """A workload and its target rate (ops/s across its processes; None: unlimited)."""
    workload: Workload
    rate: float | None = UNLIMITED

    def __post_init__(self) -> None:
        if self.rate is not None and not (isinstance(self.rate, (int, float)) and self.rate > 0
                                          and math.isfinite(self.rate)):
            raise ValueError(f"rate = {self.rate!r} for the {self.workload.name} workload: give ops/s > 0, "
                             f"or None for as fast as its processes come free")
        if not self.workload.processes:
            raise ValueError(f"the {self.workload.name} workload has no processes: give it at least one")


@dataclass(frozen=True)
class LaneCounts:
    name: str
    invoked: int
    ok: int
    fail: int
    info: int

    @property
    def completed(self) -> int:
        return self.ok + self.fail + self.info


@dataclass(frozen=True)
class Snapshot:
    """What the progress line shows: completions by type (all lanes), ops/s over the
    last second or so, the mean since the start, and each lane's counts."""
    elapsed: float
    invoked: int
    ok: int
    fail: int
    info: int
    pending: int
    ops_per_s: float
    mean_ops_per_s: float
    lanes: tuple[LaneCounts, ...] = ()


@dataclass(eq=False)
class _LaneState:
    lane: Lane
    gap: Callable[[], float]
    free: deque[int]
    next_due: float = -math.inf
    invoked: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {"ok": 0, "fail": 0, "info": 0})

    def done(self, process: int, type: str) -> None:
        self.counts[type] += 1
        self.free.append(process)


class Scheduler:
    """See the module docstring. `stagger`: Jepsen's random gaps (else exact 1/rate);
    `seed`: the gaps' RNG; `stop`: an event that ends `run` when set (one is made if
    not given; `stop()` sets it). `clock` and `sleep` (the wait when no workload has
    anything in flight; default: on the stop event) are for simulated time in tests."""

    def __init__(self, lanes: Sequence[Lane], *, stagger: bool = True, seed: int = 0,
                 stop: threading.Event | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], object] | None = None, crash_interval: float | None = None) -> None:
        if not lanes:
            raise ValueError("the scheduler needs at least one lane (a workload and its rate)")
        ids = [p for lane in lanes for p in lane.workload.processes]
        if len(ids) != len(set(ids)):
            raise ValueError(f"process ids are shared between workloads: {sorted(ids)}; give each its own "
                             f"(plan_processes)")
        self._rng = random.Random(seed)
        self._lanes = [_LaneState(lane, self._gap(lane.rate, stagger), deque(lane.workload.processes))
                       for lane in lanes]
        self._stop = stop or threading.Event()
        self._clock = clock
        self._sleep = sleep or self._stop.wait
        self._started: float | None = None
        self._stopped_at: float | None = None
        self._window = (0.0, 0)  # (time, completions) at the start of the rate window
        self._ops_per_s = 0.0
        if crash_interval is not None and not (isinstance(crash_interval, (int, float)) and crash_interval > 0
                                               and math.isfinite(crash_interval)):
            raise ValueError(f"crash_interval = {crash_interval!r}: give seconds > 0, or None for no crashes")
        self._crash_interval = crash_interval
        self._crash_rng = random.Random(f"{seed}/crashes")
        self._next_crash = math.inf
        self.crashes = 0  # clients crashed
    def _gap(self, rate: float | None, stagger: bool) -> Callable[[], float]:
        if rate is None:
            return lambda: 0.0
        if stagger:
            uniform, high = self._rng.uniform, 2.0 / rate
            return lambda: uniform(0.0, high)
        return lambda: 1.0 / rate

    # -- running ------------------------------------------------------------------------

    def run(self, time_limit: float | None) -> Snapshot:
        """Issue operations until `time_limit` seconds have passed (None: until stopped) or
        `stop()`; returns then, leaving operations in flight to `close`."""
        clock = self._clock
        now = self._started = clock()
        self._window = (now, 0)
        end = math.inf if time_limit is None else now + time_limit
        lanes = self._lanes
        for state in lanes:
            state.next_due = now
        if self._crash_interval is not None and self._next_crash == math.inf:
            self._next_crash = now + self._crash_rng.uniform(0, 2 * self._crash_interval)
        while not self._stop.is_set():
            now = clock()
            if now >= end:
                break
            if now >= self._next_crash:
                self._crash(now)
            for state in lanes:
                self._issue(state, now)
            self._measure(now)
            self._wait(min(end, self._next_wake(now)) - clock())
        self._stopped_at = clock()
        return self.snapshot()

    def _issue(self, state: _LaneState, now: float) -> None:
        """Begin the lane's due operations, at most one per process free now: an operation
        that completes inside `begin` frees its process for the next pass, after the
        clock and the stop event were looked at again."""
        free = state.free
        begin = state.lane.workload.begin
        done = state.done
        for _ in range(len(free)):
            if state.next_due > now:
                return
            # Debt older than CATCH_UP_S is forgiven: no burst after all processes were busy.
            state.next_due = max(state.next_due, now - CATCH_UP_S) + state.gap()
            state.invoked += 1
            begin(free.popleft(), done)

    def _crash(self, now: float) -> None:
        """Crash the client of a free process of a lane that can (none free: tried again
        MAX_WAIT_S later, so that waiting for one never spins)."""
        candidates = [(state, p) for state in self._lanes if hasattr(state.lane.workload, "crash")
                      for p in state.free]
        if not candidates:
            self._next_crash = now + MAX_WAIT_S
            return
        state, process = self._crash_rng.choice(candidates)
        state.free.remove(process)
        state.invoked += 1
        self.crashes += 1
        assert self._crash_interval is not None  # crashes are scheduled only with an interval
        self._next_crash = now + self._crash_rng.uniform(0, 2 * self._crash_interval)
        # crash() is optional for a workload (the hasattr above): not in the Workload protocol
        getattr(state.lane.workload, "crash")(process, state.done)

    def _next_wake(self, now: float) -> float:
        due = [s.next_due for s in self._lanes if s.free]
        return min(min(due, default=math.inf), self._next_crash, now + MAX_WAIT_S)

    def _wait(self, timeout: float) -> None:
        """Serve the workloads with operations in flight for up to `timeout` seconds."""
        timeout = min(max(timeout, 0.0), MAX_WAIT_S)
        busy = [s.lane.workload for s in self._lanes if s.lane.workload.pending]
        if not busy:
            if timeout > 0:
                self._sleep(timeout)
            return
        share = timeout / len(busy)
        for workload in busy:
            workload.service(share)

    def _measure(self, now: float) -> None:
        since, completed_then = self._window
        if now - since >= RATE_WINDOW_S:
            completed = self._completed()
            self._ops_per_s = (completed - completed_then) / (now - since)
            self._window = (now, completed)

    def _completed(self) -> int:
        return sum(sum(s.counts.values()) for s in self._lanes)

    @property
    def stopped(self) -> bool:
        """Whether `stop()` was called (`run` returns at once then)."""
        return self._stop.is_set()

    def stop_crashes(self) -> None:
        """No more client crashes (the recovery after the final heal)."""
        self._crash_interval = None
        self._next_crash = math.inf

    def stop(self) -> None:
        """End `run` soon (within MAX_WAIT_S and the operation being issued); any thread."""
        self._stop.set()

    def close(self, timeout: float) -> Snapshot:
        """Close every workload, in lane order, within `timeout` seconds together: each waits
        for its operations in flight and completes those still without an answer `info`."""
        deadline = self._clock() + timeout
        for state in self._lanes:
            state.lane.workload.close(max(0.0, deadline - self._clock()))
        return self.snapshot()

    # -- progress -----------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Counts so far; safe to call from any thread (the values are read, not locked:
        a snapshot taken mid-operation may be one op behind)."""
        now = self._clock()
        started = self._started if self._started is not None else now
        elapsed = (self._stopped_at if self._stopped_at is not None else now) - started
        lanes = tuple(LaneCounts(s.lane.workload.name, s.invoked, s.counts["ok"], s.counts["fail"],
                                 s.counts["info"]) for s in self._lanes)
        ok = sum(c.ok for c in lanes)
        fail = sum(c.fail for c in lanes)
        info = sum(c.info for c in lanes)
        invoked = sum(c.invoked for c in lanes)
        completed = ok + fail + info
        mean = completed / elapsed if elapsed > 0 else 0.0
        rate = self._ops_per_s if elapsed >= RATE_WINDOW_S else mean
        return Snapshot(elapsed, invoked, ok, fail, info, invoked - completed, rate, mean, lanes)
