"""`fencepost check`: load a run directory, check every partition, decide the
verdict, write results.json (and counterexample pages), print a summary.

Parallelism (`jobs`, default one per CPU): a large run (LOADER_MIN_BYTES of
history) is loaded and checked in a forked process (`_Loader`), which sends
back only the reports and what the verdict reads, and exits without spending
time on freeing what it loaded. There, final.jsonl is read while the history
is read (harness/check/loading.py); then the partitions are checked in worker
processes (`_Worker`) forked after the load, each reading the loaded run
through the pages it shares copy-on-write with this one, and sending back its
reports, pickled through a pipe, before it exits. A forked process keeps what
it loaded, built or copied on its entry point (Forked's `fn`, which Forked
holds until the process leaves by os._exit, harness/processes/forked.py): dropped, it
would be freed object by object (0.4 s for a million lines) for nothing.
What travels back is small: past the examples results.json shows, an
anomaly is sent as its name only (`compact`). A worker's exception is raised
here with the worker's traceback as its cause. `jobs=1`, a small run (below
FORK_MIN_OPS) or a process running other threads check in this process.
Work is shared by cost (`_shares`); where whole partitions would leave a
worker idle through the last round (3 partitions on 2 workers), either a
partition's checks are split in two halves (`HALVES`: named checks of
`checkers.check.CHECKS`) run by two workers and their findings merged here
(`checkers.check.merge`), or each partition
gets a worker of its own and the workers share `jobs` CPUs (held to them by
their CPU affinity where the machine has more): whichever the cost model
says ends sooner (for 3 equal partitions on 2, the latter).

A large partition is checked on a fresh copy of it (`loading.fresh_copy`):
the loaded objects lie scattered over the heap, and walking them again and
again cost more than copying them once. Partitions the C reader made
(`LoadedRun.fresh`) were made one by one and are checked as they are.

Garbage collection is off while the checkers run, and the loaded objects are
frozen (`gc.freeze`): the checkers build hundreds of thousands of objects and
no cycles worth collecting, so each collection would be pure cost (a partition
check took 2.5x longer with it on). The previous state is restored afterwards.
"""
from __future__ import annotations

import gc
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from fencepost.checkers.anomaly import Anomaly
from fencepost.checkers.check import CHECKS, Findings, PartitionReport, check_partition, merge, run_checks
from fencepost.checkers.partition import PartitionHistory
from fencepost.harness.check.liveness import liveness
from fencepost.harness.check.loading import LoadedRun, PartitionKey, fresh_copy, load_run
from fencepost.harness.check.summary import EXAMPLES_PER_ANOMALY, build_results, print_summary, write_results
from fencepost.harness.check.verdict import Valid, decide
from fencepost.harness.errors import BadInput
from fencepost.harness.processes.forked import Forked, can_fork, collect
from fencepost.harness.rundir.atomic import output_folder, write_atomically
from fencepost.harness.rundir.names import HISTORY_FILE, TEST_FILE
from fencepost.harness.rundir.record import partition_name
from fencepost.harness.rundir.recorded_test import read_test
from fencepost.harness.rundir.safe_names import contained, safe_name

LINEAR_DIR = "linear"
# Below this many ops and final records in all, partitions are checked in this
# process whatever `jobs` says: forking and pickling would cost more than it saves.
FORK_MIN_OPS = 50_000
# From this size of history.jsonl on, with jobs > 1, the run is loaded and checked in
# a forked process, which sends back the reports and what the verdict reads and exits
# without freeing the loaded run (0.3-0.4 s for a million lines): nothing else holds it.
LOADER_MIN_BYTES = 4 << 20
# From this many ops and final records a partition is checked on a fresh copy.
COPY_MIN_OPS = 20_000
_STDOUT = object()  # check_run's default `out`: sys.stdout as it is at the call


@dataclass(slots=True)
class CheckOutcome:
    valid: Valid
    results: dict[str, Any]
    exit_code: int


def check_run(run_dir: Path | str, *, write: bool = True, out: Any = _STDOUT,
              jobs: int | None = None) -> CheckOutcome:
    """Check the run in `run_dir`. Raises BadInput if it is not a run directory.
    With `write`, results.json and linear/<topic>-<partition>.html are written
    into it. The summary is printed to `out` (a text stream; by default the
    current sys.stdout; None: not printed). `jobs`: CPUs that read the input
    files and check partitions side by side (None: os.cpu_count(); see the
    module docstring)."""
    if out is _STDOUT:
        out = sys.stdout
    jobs = default_jobs(jobs)
    started = time.perf_counter()
    run_dir = Path(run_dir)
    section = None
    if jobs > 1 and _history_bytes(run_dir) >= LOADER_MIN_BYTES and can_fork():
        loader = Forked(f"the process loading and checking {run_dir}", _Loader(), run_dir, jobs)
        try:
            # the liveness verdict's pass over the history, here while the forked process checks
            section = liveness(run_dir, read_test(run_dir / TEST_FILE))
        except BadInput:
            section = None  # the loader says what is wrong with test.json
        run, reports = loader.result()
    else:
        run = load_run(run_dir, parallel=jobs > 1)
        reports = check_partitions(run, jobs, keep=EXAMPLES_PER_ANOMALY)
    verdict = decide(run, reports)
    linear_files = write_counterexamples(run_dir, reports) if write else {}
    results = build_results(run, reports, verdict, time.perf_counter() - started, linear_files, section)
    results_path = write_results(run_dir, results) if write else None
    if out is not None:
        print_summary(results, out, results_path, run_dir)
    return CheckOutcome(verdict.valid, results, verdict.exit_code)


@dataclass(slots=True)
class _Loader:
    """The forked process that loads and checks a large run (Forked's `fn`):
    it sends back the run's `header()` (what the verdict reads) and the
    reports of its partitions, compacted (results.json shows
    EXAMPLES_PER_ANOMALY examples of each anomaly). The loaded run stays in
    `run` until the process leaves (see the module docstring)."""

    run: LoadedRun | None = None

    def __call__(self, run_dir: Path, jobs: int) -> tuple[LoadedRun, list[PartitionReport]]:
        self.run = load_run(run_dir, parallel=True, lazy=True)
        reports = check_partitions(self.run, jobs, keep=EXAMPLES_PER_ANOMALY)
        return self.run.header(), reports


def _history_bytes(run_dir: Path) -> int:
    try:
        return (run_dir / HISTORY_FILE).stat().st_size
    except OSError:
        return 0  # load_run says what is wrong


def default_jobs(jobs: int | None) -> int:
    """`jobs`, checked, or os.cpu_count() when None."""
    if jobs is None:
        return os.cpu_count() or 1
    if type(jobs) is not int or jobs < 1:
        raise BadInput(f"jobs: {jobs!r} is not a positive number of processes; give 1 to check "
                       f"in one process, or leave it out for one per CPU ({os.cpu_count()})")
    return jobs


def check_partitions(run: LoadedRun, jobs: int | None = 1, keep: int | None = None
                     ) -> list[PartitionReport]:
    """The report of each partition of `run`, in `run.keys()` order,
    checked by up to `jobs` worker processes (1, the default: in this process;
    None: os.cpu_count()). With `keep`, the reports keep only the first
    `keep` anomalies of each name in full (see `compact`), whichever process
    made them. A lazily loaded run's partitions are built where they are
    checked; in this process, each is dropped once checked."""
    keys = run.keys()
    sizes = [run.partition_size(key) for key in keys]
    jobs = default_jobs(jobs)
    if sum(sizes) < FORK_MIN_OPS or not can_fork():
        jobs = 1  # a worker costs a fork and a pickle: not worth it for a small run
    with _collector_off():
        shares = _shares(sizes, jobs) if jobs > 1 else []
        if len(shares) <= 1:
            reports = [_check(run, key, keep) for key in keys]
            return reports if keep is None else [compact(report, keep) for report in reports]
        return _check_in_workers(run, keys, shares, keep,
                                 worker_cpus(jobs, len(shares), _usable_cpus()))


def _check(run: LoadedRun, key: PartitionKey, keep: int | None) -> PartitionReport:
    """`check_partition` of `run`'s partition `key` (`_checked`)."""
    return check_partition(_checked(run, key), run.options, keep)


def _checked(run: LoadedRun, key: PartitionKey) -> PartitionHistory:
    """What the checks of `key` walk: the partition, built now if the run was
    loaded lazily; a large partition loaded by the exact reader on a fresh
    copy (`fresh_copy`: its objects are scattered over the heap)."""
    ph = run.partition(key)
    if not run.fresh and run.partition_size(key) >= COPY_MIN_OPS:
        return fresh_copy(ph)
    return ph


def compact(report: PartitionReport, keep: int) -> PartitionReport:
    """`report` with only the first `keep` anomalies of each name in full; the
    others are replaced by one detail-less stand-in per name, so the count and
    order of names stay exact (all that the verdict and results.json read past
    their examples) and the report pickles small."""
    seen: dict[str, int] = {}
    stand_ins: dict[str, Anomaly] = {}
    kept: list[Anomaly] = []
    for anomaly in report.anomalies:
        n = seen[anomaly.name] = seen.get(anomaly.name, 0) + 1
        if n <= keep:
            kept.append(anomaly)
        else:
            stand_in = stand_ins.get(anomaly.name)
            if stand_in is None:
                stand_in = stand_ins[anomaly.name] = Anomaly(anomaly.name, report.topic,
                                                             report.partition)
            kept.append(stand_in)
    report.anomalies = kept
    return report


def compact_findings(findings: dict[str, Findings], keep: int, key: PartitionKey) -> dict[str, Findings]:
    """`findings` of partition `key` with their anomalies compacted together, as `compact` does
    a report's."""
    names = list(findings)
    everything = compact(PartitionReport(key[0], key[1], [a for name in names for a in findings[name].anomalies],
                                         {}), keep)
    kept = iter(everything.anomalies)
    for name in names:
        findings[name].anomalies = [next(kept) for _ in findings[name].anomalies]
    return findings


def write_counterexamples(run_dir: Path, reports: list[PartitionReport]) -> dict[str, str]:
    """Write the page of each partition found not linearizable; returns
    partition name -> path relative to the run directory."""
    written: dict[str, str] = {}
    for report in reports:
        if report.linearizable is False and report.linear_html:
            name = partition_name(report.topic, report.partition)
            file_name = counterexample_file_name(report.topic, report.partition)
            relative = f"{LINEAR_DIR}/{file_name}"
            try:
                write_atomically(contained(output_folder(run_dir, LINEAR_DIR), file_name), report.linear_html)
            except OSError as e:
                raise BadInput(f"cannot write {run_dir / relative}: {e.strerror or e}; make the "
                               f"run directory writable, or check with --no-write") from e
            written[name] = relative
    return written


def counterexample_file_name(topic: str, partition: int) -> str:
    """linear/'s page of a partition: `<topic>-<partition>.html`, made safe (harness/rundir/safe_names.py)."""
    return f"{safe_name(partition_name(topic, partition))}.html"


# --- worker processes ---------------------------------------------------------------


# A partition's checks in two halves of about equal cost, independent once each has built the
# observations: the offset checks and the search; the rest. Which checks go together is this
# scheduler's choice; the checkers only run the checks they are named.
HALVES = (("offsets", "linearizability"), ("counts", "polls", "groups", "replicas", "unseen"))
assert sorted(name for half in HALVES for name in half) == sorted(CHECKS), "every check in one half"
Task = tuple[int, "int | None"]  # (index in histories, None for the whole check, else a half's index)
# What a half of a partition's check costs, as a share of the whole check:
# each half copies the partition and builds its observations again
# (docs/BENCHMARKS.md, "Checking").
HALF_COST = 0.8
# Where whole partitions divide unevenly among the CPUs (3 on 2), up to this many
# worker processes per job, one per partition, sharing `jobs` CPUs (`_shares`):
# faster than splitting a partition in halves (docs/BENCHMARKS.md, "Checking").
MAX_WORKERS_PER_JOB = 2


def _check_in_workers(run: LoadedRun, keys: list[PartitionKey], shares: list[list[Task]],
                      keep: int | None, cpus: frozenset[int] | None) -> list[PartitionReport]:
    """Fork a process per share of the partitions `keys` of `run` (`_shares`),
    each on `cpus` (None: any); collect their reports, joining the halves of a
    partition checked in two. Every worker is reaped before this returns or
    raises."""
    children: list[tuple[Forked, list[Task]]] = []
    worker = _Worker(run, keys, keep, cpus)  # each forked worker calls its own copy
    try:
        for share in shares:
            names = ", ".join(f"{keys[i][0]}/{keys[i][1]}"
                              + ("" if half is None else f" ({'+'.join(HALVES[half])})") for i, half in share)
            children.append((Forked(f"the check worker of {names}", worker, share), share))
        collect([child for child, _ in children])
        reports: list[PartitionReport | None] = [None] * len(keys)
        halves: dict[int, dict[str, Findings]] = {}
        for child, share in children:
            for (i, half), result in zip(share, child.result()):
                if half is None:
                    reports[i] = result
                else:
                    halves.setdefault(i, {}).update(result)
        for i, findings in halves.items():
            reports[i] = merge(keys[i][0], keys[i][1], findings)
    finally:
        for child, _ in children:
            child.stop()  # a no-op for those reaped by result()
    return reports  # type: ignore[return-value]  # every index was in one share


def _shares(sizes: list[int], jobs: int) -> list[list[Task]]:
    """The tasks of each worker, balanced by cost: the largest first, each to
    the worker with the least so far. When that leaves workers idle at the
    end (3 partitions on 2 workers: one waits while the other checks the
    third), whichever ends the work sooner: the smallest large partitions
    checked in two halves (`HALVES`) by two workers, or up
    to MAX_WORKERS_PER_JOB * jobs workers, one per partition, sharing `jobs`
    CPUs (`worker_cpus`). `sizes`: what each partition costs
    (`LoadedRun.partition_size`)."""
    n = len(sizes)
    whole: list[tuple[float, Task]] = [(sizes[i], (i, None)) for i in range(n)]
    best = _balanced(whole, jobs)
    by_size = sorted((i for i in range(n) if sizes[i] >= COPY_MIN_OPS), key=sizes.__getitem__)
    for split in range(1, min(len(by_size), jobs) + 1):
        halved = set(by_size[:split])
        tasks = [task for task in whole if task[1][0] not in halved]
        tasks += [(HALF_COST * sizes[i], (i, half)) for i in halved for half in range(len(HALVES))]
        candidate = _balanced(tasks, jobs)
        if candidate[0] < best[0]:
            best = candidate
    if jobs < n <= MAX_WORKERS_PER_JOB * jobs:
        # One process per partition, more processes than jobs sharing `jobs` CPUs: the
        # work ends when all of it has had its share of the CPUs, or the largest is done.
        shared = max(sum(sizes) / jobs, max(sizes))
        if shared < best[0]:
            return [[(i, None)] for i in sorted(range(n), key=lambda i: -sizes[i])]
    return best[1]


def worker_cpus(jobs: int, workers: int, usable: frozenset[int] | None) -> frozenset[int] | None:
    """The CPUs `workers` processes are held to so that they use `jobs` CPUs
    at most (`usable`: those this process may run on, None: unknown), or
    None when they need no holding: no more workers than jobs, or no more
    usable CPUs than jobs."""
    if workers <= jobs or usable is None or len(usable) <= jobs:
        return None
    return frozenset(sorted(usable)[:jobs])


def _usable_cpus() -> frozenset[int] | None:
    if not hasattr(os, "sched_getaffinity"):
        return None
    return frozenset(os.sched_getaffinity(0))


def _balanced(tasks: list[tuple[float, Task]], jobs: int) -> tuple[float, list[list[Task]]]:
    """(the largest load, the shares): `tasks` (cost, task) on up to `jobs`
    workers, the costliest first, each to the worker with the least so far."""
    loads = [0.0] * min(jobs, len(tasks))
    shares: list[list[Task]] = [[] for _ in loads]
    for cost, task in sorted(tasks, key=lambda t: -t[0]):
        w = loads.index(min(loads))
        shares[w].append(task)
        loads[w] += cost
    return max(loads, default=0.0), shares


@dataclass(slots=True)
class _Worker:
    """A check worker, a forked process (Forked's `fn`): the reports of its
    share of `run`'s partitions `keys` (each whole or a half), compacted with
    `keep`; on `cpus` when given. What it checked (built or copied here)
    stays in `checked` until the process leaves (see the module docstring)."""

    run: LoadedRun
    keys: list[PartitionKey]
    keep: int | None
    cpus: frozenset[int] | None
    checked: list[PartitionHistory] = field(default_factory=list)

    def __call__(self, share: list[Task]) -> list[PartitionReport | dict[str, Findings]]:
        if self.cpus is not None:
            os.sched_setaffinity(0, self.cpus)
        run, keep = self.run, self.keep
        results: list[PartitionReport | dict[str, Findings]] = []
        for i, half in share:
            ph = _checked(run, self.keys[i])
            self.checked.append(ph)
            if half is None:
                report = check_partition(ph, run.options, keep)
                results.append(report if keep is None else compact(report, keep))
            else:
                findings = run_checks(ph, run.options, HALVES[half], keep=keep)
                results.append(findings if keep is None else compact_findings(findings, keep, self.keys[i]))
        return results


@contextmanager
def _collector_off() -> Iterator[None]:
    """No garbage collection while checking (see the module docstring); what
    the checks left behind is collected on the way out."""
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
