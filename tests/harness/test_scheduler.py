"""The scheduler in simulated time: rates (staggered, exact, unlimited), waiting when
every process is busy (no queue, no burst afterwards), fairness between processes,
stop, counts and snapshots, close; process id plans and refusals.

`SimWorkload` is a workload whose operations take a fixed simulated latency; its
`service` and the scheduler's `sleep` advance a shared simulated clock, so each test
runs simulated seconds in milliseconds and asserts exact or near-exact counts."""
from __future__ import annotations

import threading
from collections import Counter

import pytest

from fencepost.harness.run.scheduler import Lane, Scheduler, plan_processes


class SimClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class SimWorkload:
    """Each op completes `latency` simulated seconds after it began, with type `outcome(n)`."""

    def __init__(self, clock: SimClock, processes, latency: float, name: str = "sim",
                 outcome=lambda n: "ok", on_begin=None) -> None:
        self.clock = clock
        self.name = name
        self.processes = tuple(processes)
        self.latency = latency
        self.outcome = outcome
        self.on_begin = on_begin
        self.in_flight: dict[int, tuple[float, object]] = {}
        self.begun: list[tuple[float, int]] = []
        self.max_in_flight = 0
        self.closed_with: list[int] = []

    @property
    def pending(self) -> int:
        return len(self.in_flight)

    def begin(self, process, done) -> None:
        assert process not in self.in_flight, f"process {process} began a second op while one is in flight"
        self.begun.append((self.clock.now, process))
        if self.on_begin:
            self.on_begin(len(self.begun))
        if self.latency == 0:
            done(process, self.outcome(len(self.begun)))
            return
        self.in_flight[process] = (self.clock.now + self.latency, done)
        self.max_in_flight = max(self.max_in_flight, len(self.in_flight))

    def service(self, timeout: float) -> None:
        due = min((t for t, _ in self.in_flight.values()), default=None)
        if due is None or due > self.clock.now + timeout:
            self.clock.now += max(timeout, 1e-9)  # a wait of 1e-17 s would leave the float as it is
            return
        self.clock.now = max(self.clock.now, due)
        for process, (t, done) in sorted(self.in_flight.items(), key=lambda item: item[1][0]):
            if t <= self.clock.now:
                del self.in_flight[process]
                done(process, self.outcome(len(self.begun)))

    def close(self, timeout: float) -> None:
        self.closed_with = sorted(self.in_flight)
        for process, (_, done) in list(self.in_flight.items()):
            del self.in_flight[process]
            done(process, "info")


def scheduler(clock: SimClock, *lanes: Lane, **kwargs) -> Scheduler:
    return Scheduler(list(lanes), clock=clock, sleep=clock.sleep, **kwargs)


def test_a_staggered_rate_issues_that_many_ops_per_second():
    clock = SimClock()
    work = SimWorkload(clock, range(10), latency=0.005)
    snapshot = scheduler(clock, Lane(work, 500), seed=3).run(20)
    assert 500 * 20 * 0.97 <= len(work.begun) <= 500 * 20 * 1.03
    assert snapshot.invoked == len(work.begun) and snapshot.ok == snapshot.invoked - snapshot.pending
    # staggered: the gaps vary, between 0 and 2/rate
    gaps = [b[0] - a[0] for a, b in zip(work.begun, work.begun[1:])]
    assert min(gaps) < 0.0005 and 0.003 < max(gaps) <= 0.004 + 0.001


def test_without_stagger_the_gaps_are_exactly_one_over_the_rate():
    clock = SimClock()
    work = SimWorkload(clock, range(4), latency=0.001)
    scheduler(clock, Lane(work, 100), stagger=False).run(10)
    assert len(work.begun) in (1000, 1001)
    gaps = {round(b[0] - a[0], 6) for a, b in zip(work.begun, work.begun[1:])}
    assert gaps == {0.01}


def test_the_stagger_follows_the_seed():
    def times(seed: int) -> list[float]:
        clock = SimClock()
        work = SimWorkload(clock, range(3), latency=0.001)
        scheduler(clock, Lane(work, 50), seed=seed).run(2)
        return [t for t, _ in work.begun]

    assert times(7) == times(7) != times(8)


def test_unlimited_rate_keeps_every_process_busy():
    clock = SimClock()
    work = SimWorkload(clock, range(8), latency=0.01)
    scheduler(clock, Lane(work, None)).run(1)
    # 8 processes, 10 ms each: 800 ops/s; the first round starts at once
    assert 790 <= len(work.begun) <= 808
    assert work.max_in_flight == 8


def test_busy_processes_make_due_ops_wait_and_no_burst_follows():
    clock = SimClock()
    slow = SimWorkload(clock, range(2), latency=0.1)  # capacity: 20 ops/s
    scheduler(clock, Lane(slow, 1000)).run(5)
    assert slow.max_in_flight == 2  # never more than one op per process, nothing queued
    assert 95 <= len(slow.begun) <= 102  # capacity, not the asked 1000/s
    # the latency drops: the rate is the asked one again, with no catch-up of the missed ops
    clock2 = SimClock()
    work = SimWorkload(clock2, range(2), latency=0.1)
    sched = scheduler(clock2, Lane(work, 100), stagger=False)
    work.on_begin = lambda n: setattr(work, "latency", 0.001) if n == 10 else None
    sched.run(3)
    dropped_at = work.begun[9][0]
    burst = [t for t, _ in work.begun if dropped_at < t <= dropped_at + 0.05]
    # owed then: ~40 ops; forgiven but CATCH_UP_S (0.1 s, 10 ops) of them, plus 5 due meanwhile
    assert len(burst) <= 17
    assert 99 <= sum(1 for t, _ in work.begun if 2 <= t < 3) <= 101  # then the asked rate


def test_every_process_gets_its_turn():
    clock = SimClock()
    work = SimWorkload(clock, range(10), latency=0.003)
    scheduler(clock, Lane(work, 1000), seed=1).run(5)
    per_process = Counter(p for _, p in work.begun)
    assert set(per_process) == set(range(10))
    assert max(per_process.values()) - min(per_process.values()) <= 1


def test_lanes_keep_their_own_rates_and_counts():
    clock = SimClock()
    sends = SimWorkload(clock, range(5), latency=0.002, name="producer",
                        outcome=lambda n: ("ok", "fail", "info")[n % 3])
    polls = SimWorkload(clock, range(1000, 1002), latency=0, name="consumer")
    sched = scheduler(clock, Lane(sends, 200), Lane(polls, 20), seed=2)
    snapshot = sched.run(10)
    producer, consumer = snapshot.lanes
    assert (producer.name, consumer.name) == ("producer", "consumer")
    assert 200 * 10 * 0.95 <= producer.invoked <= 200 * 10 * 1.05
    assert 20 * 10 * 0.9 <= consumer.invoked <= 20 * 10 * 1.1
    assert consumer.ok == consumer.invoked and consumer.fail == consumer.info == 0
    assert min(producer.ok, producer.fail, producer.info) > 0.3 * producer.completed
    assert snapshot.ok == producer.ok + consumer.ok
    assert snapshot.fail + snapshot.info + snapshot.ok + snapshot.pending == snapshot.invoked
    assert abs(snapshot.mean_ops_per_s - 220) < 15
    assert abs(snapshot.ops_per_s - 220) < 40
    assert snapshot.elapsed == pytest.approx(10, abs=0.06)


def test_stop_ends_the_run_and_close_completes_what_is_in_flight():
    clock = SimClock()
    stop = threading.Event()
    work = SimWorkload(clock, range(3), latency=60.0)  # nothing completes in this run
    work.on_begin = lambda n: stop.set() if n == 3 else None
    sched = scheduler(clock, Lane(work, None), stop=stop)
    snapshot = sched.run(None)
    assert snapshot.invoked == 3 and snapshot.pending == 3
    closed = sched.close(0.5)
    assert work.closed_with == [0, 1, 2]
    assert (closed.pending, closed.info) == (0, 3)


def test_stop_from_another_thread():
    work_clock = SimClock()
    work = SimWorkload(work_clock, range(2), latency=0)
    sched = Scheduler([Lane(work, 100)])  # real time: the run ends only by stop
    timer = threading.Timer(0.05, sched.stop)
    timer.start()
    snapshot = sched.run(None)
    timer.join()
    assert snapshot.invoked > 0 and snapshot.pending == 0


def test_process_plans():
    plan = plan_processes(10, 2)
    assert (list(plan.producers), list(plan.consumers)) == (list(range(10)), [1000, 1001])
    assert plan_processes(1000, 1).consumers == range(1000, 1001)
    assert plan_processes(1001, 2).consumers == range(2000, 2002)
    assert plan_processes(3, 0).consumers == range(1000, 1000)
    with pytest.raises(ValueError, match="concurrency = 0"):
        plan_processes(0, 1)


def test_refusals_name_what_is_wrong():
    clock = SimClock()
    work = SimWorkload(clock, range(2), latency=0.001, name="producer")
    with pytest.raises(ValueError, match="rate = 0 for the producer workload"):
        Lane(work, 0)
    with pytest.raises(ValueError, match="no processes"):
        Lane(SimWorkload(clock, (), latency=0.001), 10)
    with pytest.raises(ValueError, match="shared between workloads"):
        Scheduler([Lane(work, 10), Lane(SimWorkload(clock, [1, 2], latency=0), 10)])
    with pytest.raises(ValueError, match="at least one lane"):
        Scheduler([])


def test_ops_that_complete_at_once_at_an_unlimited_rate_still_end_at_the_time_limit():
    clock = SimClock()
    work = SimWorkload(clock, range(3), latency=0)  # done inside begin: a process is never busy
    work.on_begin = lambda n: clock.sleep(0.001)  # each op takes a simulated millisecond
    snapshot = scheduler(clock, Lane(work, None)).run(2)
    assert 1990 <= snapshot.invoked <= 2010 and snapshot.ok == snapshot.invoked


class CrashableWorkload(SimWorkload):
    """A SimWorkload whose clients can be crashed: each crash is noted with the process."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.crashed: list[tuple[float, int]] = []

    def crash(self, process, done) -> None:
        assert process not in self.in_flight, f"process {process} crashed with an op in flight"
        self.crashed.append((self.clock.now, process))
        done(process, "info")


def test_client_crashes_come_on_their_own_seeded_timeline_to_free_processes_only():
    def run(seed: int) -> CrashableWorkload:
        clock = SimClock()
        work = CrashableWorkload(clock, range(5), latency=0.01)
        plain = SimWorkload(clock, range(1000, 1002), latency=0.001, name="plain")  # cannot crash
        sched = scheduler(clock, Lane(work, 200), Lane(plain, 20), seed=seed, crash_interval=2.0)
        snapshot = sched.run(100)
        assert sched.crashes == len(work.crashed) and snapshot.lanes[0].info == len(work.crashed)
        return work

    work = run(7)
    # about one crash every 2 s (gaps uniform in [0, 4)): 50 expected in 100 s
    assert 35 <= len(work.crashed) <= 65, len(work.crashed)
    assert {p for _, p in work.crashed} <= set(range(5)) and len({p for _, p in work.crashed}) == 5
    gaps = [b - a for (a, _), (b, _) in zip(work.crashed, work.crashed[1:])]
    assert max(gaps) < 4.1
    assert work.crashed == run(7).crashed and work.crashed != run(8).crashed


def test_without_a_crash_interval_no_client_crashes_and_stop_crashes_ends_them():
    clock = SimClock()
    work = CrashableWorkload(clock, range(3), latency=0.01)
    scheduler(clock, Lane(work, 100)).run(20)
    assert work.crashed == []
    sched = scheduler(clock, Lane(work, 100), crash_interval=0.5)
    sched.run(5)
    crashed = len(work.crashed)
    assert crashed > 0
    sched.stop_crashes()
    sched.run(5)
    assert len(work.crashed) == crashed
    with pytest.raises(ValueError, match="crash_interval"):
        scheduler(clock, Lane(work, 100), crash_interval=0)
