"""The nemesis driver: a schedule's steps applied to a cluster until a deadline or a stop,
every action recorded; `heal()` undoes whatever is active. Plus the one-shot
`start_fault` and `heal_cluster` the CLI's `fencepost nemesis start|heal` use.

`Nemesis.run()` runs in the caller's thread and starts no thread. To run it beside
a workload, start a thread with `target=nemesis.run` and, at the end, call
`nemesis.stop()` (or let `duration` pass), join the thread, then `nemesis.heal()`.
`heal()` may also be called from another thread while `run()` is busy (a heal
guard does so on Ctrl-C): it stops the loop, waits for the action in progress to
end (each is bounded by the context's timeout), then heals.

A failed action (the cluster raised HostError, ClusterConfigError or OSError) is
recorded with its error, added to `errors`, and the loop goes on. Decisions come
from two RNGs derived from the seed (one for the schedule, one for the faults),
so one seed and one cluster give one sequence of decisions.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from fencepost.clusters import Cluster, ClusterConfigError, HostError
from fencepost.nemesis.catalog import check_fault, new_fault
from fencepost.nemesis.context import DEFAULT_GROUP, DEFAULT_TIMEOUT_S, DEFAULT_TOPIC, NemesisContext
from fencepost.nemesis.faults import Fault
from fencepost.nemesis.recording import NemesisRecorder, recorded
from fencepost.nemesis.schedule import Schedule, Step
from fencepost.nemesis.spec import FaultSpec, parse_fault

ACTION_ERRORS = (HostError, ClusterConfigError, OSError)
HEAL_LOCK_WAIT_FACTOR = 4  # heal() waits at most this many timeouts for the action in progress


@dataclass
class RunSummary:
    steps: int = 0  # steps carried out
    errors: list[str] = field(default_factory=list)  # one line per failed action


class Nemesis:
    def __init__(self, cluster: Cluster, schedule: Schedule, recorder: NemesisRecorder, *, seed: int = 0,
                 topic: str = DEFAULT_TOPIC, partition: int | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S, group: str = DEFAULT_GROUP,
                 netem: dict | None = None) -> None:
        """Checks every fault of the schedule against the cluster: ClusterConfigError before anything runs
        (targets a random schedule would draw and this cluster cannot take are left out first).
        `group`: the consumer group `group-coordinator` targets; `netem`: the netem fault's settings."""
        netem = dict(netem or {})
        schedule = schedule.fitted(lambda spec: can_take(spec, cluster, netem))
        for spec in schedule.faults:
            check_fault(spec, cluster, netem)
        self.cluster = cluster
        self.schedule = schedule
        self.seed = seed
        self.ctx = NemesisContext(cluster, recorder, random.Random(f"{seed}/faults"), topic, partition, timeout,
                                  group, netem)
        self.active: list[Fault] = []
        self.summary = RunSummary()
        self._stop = threading.Event()
        self._busy = threading.RLock()  # held for each action; heal() takes it too

    # -- the loop ------------------------------------------------------------------------------

    def run(self, duration: float | None = None) -> RunSummary:
        """Carry out steps until `duration` seconds have passed, stop() or heal() was called, or the
        schedule ends. A step due after the deadline is not started. Active faults stay active: heal()."""
        started = time.monotonic()
        deadline = None if duration is None else started + duration
        last = started
        for step in self.schedule.steps(random.Random(f"{self.seed}/schedule")):
            due = started + step.at if step.at is not None else last + step.wait
            if deadline is not None and due >= deadline:
                break
            if self._stop.wait(max(0.0, due - time.monotonic())):
                break
            with self._busy:
                if self._stop.is_set():
                    break
                self._carry_out(step)
            self.summary.steps += 1
            last = time.monotonic()
        return self.summary

    def stop(self) -> None:
        """Ask run() to return after the action in progress (from any thread)."""
        self._stop.set()

    @property
    def errors(self) -> list[str]:
        return self.summary.errors

    def _carry_out(self, step: Step) -> None:
        if step.action == "start":
            assert step.fault is not None  # a start step names its fault (Step)
            self._start(step.fault)
        elif step.action == "stop":
            self._stop_faults(step.fault)
        else:
            self._heal_now()

    def _start(self, spec: FaultSpec) -> None:
        fault = new_fault(spec)
        self.active.append(fault)
        try:
            fault.start(self.ctx)
        except ACTION_ERRORS as e:
            self.summary.errors.append(f"start {spec}: {e}")
        if not fault.active:
            self.active.remove(fault)

    def _stop_faults(self, spec: FaultSpec | None) -> list[str]:
        done = []
        for fault in [f for f in reversed(self.active) if spec is None or f.spec.name == spec.name]:
            self.active.remove(fault)
            try:
                fault.stop(self.ctx)
                done.append(f"stopped {fault.spec}")
            except ACTION_ERRORS as e:
                self.summary.errors.append(f"stop {fault.spec}: {e}")
        return done

    # -- heal ----------------------------------------------------------------------------------

    def heal(self) -> list[str]:
        """Stop the loop, stop every active fault (each recorded), then `cluster.heal()` for anything
        left (recorded as `heal`). What was done, one line each. Raises when the cluster could not
        be healed (after trying everything)."""
        self._stop.set()
        locked = self._busy.acquire(timeout=self.ctx.timeout * HEAL_LOCK_WAIT_FACTOR)
        try:
            return self._heal_now() if locked else self._heal_cluster(["an action was still running"])
        finally:
            if locked:
                self._busy.release()

    def _heal_now(self) -> list[str]:
        return self._heal_cluster(self._stop_faults(None))

    def _heal_cluster(self, done: list[str]) -> list[str]:
        with recorded(self.ctx.recorder, "heal", None) as op:
            done = [*done, *self.cluster.heal(self.ctx.timeout)]
            op.value = {"done": done}
        return done


def can_take(spec: FaultSpec, cluster: Cluster, netem: dict | None = None) -> bool:
    try:
        check_fault(spec, cluster, netem)
    except ClusterConfigError:
        return False
    return True


def start_fault(cluster: Cluster, fault: str | FaultSpec, recorder: NemesisRecorder, *,
                target: str | None = None, seed: int | None = None, topic: str = DEFAULT_TOPIC,
                partition: int | None = None, timeout: float = DEFAULT_TIMEOUT_S, group: str = DEFAULT_GROUP,
                netem: dict | None = None) -> Fault:
    """One fault started and left active (a scenario: run to its end), for `fencepost nemesis start`.

    `fault` is `NAME[:TARGET]` (or `target` gives the target); `seed` None draws nodes at random.
    ClusterConfigError when the cluster cannot take it (nothing done); the cluster's HostError
    when it failed (recorded; what was done stays: `heal_cluster` undoes it). The fault's `done`
    says what it did. Undo with `heal_cluster` (also from another process: the cluster's saved
    state knows every cut, paused and stopped process)."""
    spec = fault if isinstance(fault, FaultSpec) else parse_fault(fault)
    if target is not None:
        spec = parse_fault(f"{spec.name}:{target}")
    check_fault(spec, cluster, netem)
    rng = random.Random(seed) if seed is not None else random.Random()
    ctx = NemesisContext(cluster, recorder, rng, topic, partition, timeout, group, dict(netem or {}))
    started = new_fault(spec)
    started.start(ctx)
    return started


def heal_cluster(cluster: Cluster, recorder: NemesisRecorder, timeout: float = DEFAULT_TIMEOUT_S) -> list[str]:
    """Undo every fault on the cluster (`cluster.heal()`), recorded as `heal`; what was done."""
    with recorded(recorder, "heal", None) as op:
        done = cluster.heal(timeout)
        op.value = {"done": done}
    return done
