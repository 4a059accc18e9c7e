"""Loading a run directory into the checkers' input: one `PartitionHistory` per
partition, what the verdict reads of each (`FinalState`), the check options from
test.json, and what was wrong in the files.

Grouping rules (docs/FORMATS.md, checkers/partition.py), each in one Python function:
- `group_operations`: a send belongs to the partition of its value; invokes never
  completed are `info`; a poll is projected onto each partition it returned records
  of, and onto each partition its process was assigned to (by its latest assign) --
  with the records of that partition only, possibly none; assign, subscribe and crash
  are resets; a `commit` of a consumer group member is a `Commit` in each partition it
  names; an assign of a group member (its value names the `group`, `from` its committed
  offsets) is a `Resume` in each partition it was given, asked for as early as the
  invoke of the member's latest operation before it that is not an assign (the poll
  whose rebalance callback asked; the assigns of one rebalance follow it in a burst)
  (harness/check/loading_groups.py, checkers/partition.py); sends and polls are in invoke
  order, the final read and replica logs in file order;
- `_with_resets`: the resets of every process are in every partition;
- final read completeness: harness/rundir/final_reader.py `final_state` (a `read-state` decides,
  complete only if every one says so; reads but no read-state: complete; neither: the
  final read is missing). Without final.jsonl every final read is missing.

Two readers: the C reader (harness/check/native_load.py: both files at once on two
threads with `parallel`, each partition's objects then made on their own, lying
together in memory) where it was built and does not give up on the file (anything
unusual); else the exact reader, the reference, which reports what is wrong
(history.jsonl: `HistoryReader` grouped by `group_operations`; final.jsonl:
`final_reader.read_final`). Without the C reader, `load_run(..., parallel=True)` reads
a large final.jsonl in a forked process (harness/processes/forked.py) while this one reads
the history. `fresh_copy` copies one partition's input into fresh memory, for the
checks to walk (harness/check/checking.py); partitions the C reader made need not.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from fencepost.checkers.partition import CheckOptions, Outcome, PartitionHistory, Poll, Reset, Send
from fencepost.harness.check import native_load
from fencepost.harness.check.loading_groups import commits_of, resumes_of
from fencepost.harness.errors import Problems
from fencepost.harness.processes.forked import Forked, can_fork
from fencepost.harness.rundir.final_reader import NO_FINAL_READ, FinalLog, FinalState, read_final
from fencepost.harness.rundir.find import history_of
from fencepost.harness.rundir.history import HistoryCounts, HistoryReader, Operation
from fencepost.harness.rundir.names import FINAL_FILE, TEST_FILE
from fencepost.harness.rundir.recorded_test import checker_section, read_test

RESET_FS = frozenset(("assign", "subscribe", "crash"))
# A final.jsonl smaller than this is read in this process even when `parallel`:
# forking and pickling would cost more than reading it.
FORK_MIN_BYTES = 4 << 20
# What checking a run holds in memory (docs/FORMATS.md, "Memory"), with margin over what was
# measured (196 MiB peak for 84 MB of history.jsonl and final.jsonl, 200,000 history lines, the
# C reader; 124 MiB with the exact reader): MEMORY_PER_BYTE bytes per byte of the two files, plus
# MEMORY_BASE. A run that needs more than the machine has available is not read: unknown.
MEMORY_PER_BYTE = 3
MEMORY_BASE = 128 << 20

PartitionKey = tuple[str, int]
_value = itemgetter(1)  # of an (offset, value) record


@dataclass(slots=True)
class RunCounts:
    lines: int = 0  # history lines
    ops: int = 0  # valid history lines
    nemesis: int = 0
    by_f_type: dict[str, dict[str, int]] = field(default_factory=dict)  # f -> type -> n
    final_lines: int = 0
    # A torn last line (no terminating newline), ignored: the verdict cannot be valid
    # (harness/check/verdict.py).
    history_torn: bool = False
    final_torn: bool = False


@dataclass(slots=True)
class LoadedRun:
    run_dir: Path
    # Each partition's checker input, in key order; empty where `builder`
    # builds them (`partition(key)`) and in a `header()`.
    partitions: dict[PartitionKey, PartitionHistory]
    test: dict[str, Any]
    options: CheckOptions
    invalid_anomalies: frozenset[str]
    problems: Problems
    counts: RunCounts
    final_present: bool
    # What the verdict reads of each partition: its final read's state. Every
    # partition of the run is here, in key order.
    finals: dict[PartitionKey, FinalState]
    # The partitions were made one by one in fresh memory (the C reader's
    # history): the checks walk them as they are, with no `fresh_copy`.
    fresh: bool = False
    # After load_run(lazy=True), where the C reader read the history: builds
    # each partition when asked (`partition`).
    builder: native_load.PartitionBuilder | None = None

    def keys(self) -> list[PartitionKey]:
        """Every partition of the run, in key order."""
        return list(self.finals)

    def partition(self, key: PartitionKey) -> PartitionHistory:
        """The checker input of partition `key` (built now, when lazy)."""
        if self.builder is None:
            return self.partitions[key]
        return _with_resets(self.builder.build(key), self.builder.resets)

    def partition_size(self, key: PartitionKey) -> int:
        """What `key`'s check costs, roughly: its ops and final records."""
        if self.builder is not None:
            return self.builder.size(key)
        ph = self.partitions[key]
        return len(ph.sends) + len(ph.polls) + len(ph.final or ())

    def header(self) -> LoadedRun:
        """This run without its partitions' input: what the verdict and
        results.json read, small to pickle."""
        return replace(self, partitions={}, builder=None)

    @property
    def errors(self) -> list[str]:
        return self.problems.listed_errors()

    @property
    def warnings(self) -> list[str]:
        return self.problems.listed_warnings()


def load_run(run_dir: Path | str, *, parallel: bool = False, lazy: bool = False) -> LoadedRun:
    """Read history.jsonl, final.jsonl and test.json of `run_dir`. With
    `parallel`, final.jsonl is read while the history is: by the C reader on a
    second thread, else (when large) in a forked process (the same result, in
    less wall-clock time on two cores).
    With `lazy`, where the C reader read the history, no partition is built:
    `partitions` is empty, and `partition(key)` builds one when asked.

    Raises BadInput when `run_dir` is not a run directory or test.json is
    unusable; problems inside the history and final logs are collected instead.
    """
    run_dir = Path(run_dir)
    history_path = history_of(run_dir)
    test = read_test(run_dir / TEST_FILE)
    checker = checker_section(test, run_dir / TEST_FILE)
    options, invalid = checker.options, checker.invalid
    problems = Problems()
    final_path = run_dir / FINAL_FILE
    too_large = _too_large(history_path, final_path)
    if too_large is not None:
        problems.error(too_large)
        return LoadedRun(run_dir, {}, test, options, invalid, problems, RunCounts(), final_path.is_file(), {})
    with _gc_paused():
        reader = _read_natively if native_load.available() else _read_in_python
        read = reader(history_path, final_path, problems, parallel)
        partitions = read.partitions
        builder = read.builder
        if builder is not None and not lazy:
            partitions = {key: builder.build(key) for key in read.finals}
            builder = None
        for ph in partitions.values():
            _with_resets(ph, read.resets)
    history = read.history
    counts = RunCounts(lines=history.lines, ops=history.ops, nemesis=history.nemesis,
                       by_f_type=history.by_f(), final_lines=read.final_lines or 0,
                       history_torn=history.torn, final_torn=read.final_torn)
    return LoadedRun(run_dir, dict(sorted(partitions.items())), test, options, invalid, problems,
                     counts, read.final_lines is not None, read.finals, read.builder is not None,
                     builder)


def memory_needed(history_path: Path, final_path: Path) -> int:
    """About what checking these files holds in memory at most (MEMORY_PER_BYTE)."""
    size = 0
    for path in (history_path, final_path):
        try:
            size += path.stat().st_size
        except OSError:
            pass  # absent: the readers say what is wrong
    return MEMORY_BASE + MEMORY_PER_BYTE * size


def available_memory() -> int | None:
    """Bytes of memory this machine has available (Linux: MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _too_large(history_path: Path, final_path: Path) -> str | None:
    """Why the run is not read (it needs more memory than is available), or None."""
    need = memory_needed(history_path, final_path)
    have = available_memory()
    if have is None or need <= have:
        return None
    return (f"{history_path}: history.jsonl and final.jsonl need about {need >> 20} MiB to check and this "
            f"machine has {have >> 20} MiB available: not read, the verdict is unknown; check the run on a "
            f"machine with more memory (docs/FORMATS.md, \"Memory\")")


@dataclass(slots=True)
class _Read:
    """What a reader gives load_run."""

    partitions: dict[PartitionKey, PartitionHistory]  # with their final reads, not their resets
    resets: list[Reset]
    finals: dict[PartitionKey, FinalState]  # every partition's, in key order
    history: HistoryCounts
    final_lines: int | None  # None: no final.jsonl
    # Where the C reader read the history: the builder of the partitions
    # (which are then not in `partitions`).
    builder: native_load.PartitionBuilder | None = None
    final_torn: bool = False  # final.jsonl's last line was torn (the C reader gives such a file up)


def _with_resets(ph: PartitionHistory, resets: list[Reset]) -> PartitionHistory:
    """`ph` holding the run's resets: an assign, subscribe or crash of a
    process resets what it sees of every partition."""
    ph.resets = list(resets)
    return ph


def _finals(keys: Iterable[PartitionKey], state: Callable[[PartitionKey], FinalState]
            ) -> dict[PartitionKey, FinalState]:
    return {key: state(key) for key in sorted(keys)}


def _no_final_read(key: PartitionKey) -> FinalState:
    return NO_FINAL_READ


def _read_natively(history_path: Path, final_path: Path, problems: Problems,
                   parallel: bool) -> _Read:
    """Both files by the C reader (at once with `parallel`), a file it gave up
    on by the exact reader (which reports what is wrong: the history's
    problems before final.jsonl's)."""
    tables = native_load.read_tables(history_path, final_path if final_path.is_file() else None,
                                     parallel)
    partitions: dict[PartitionKey, PartitionHistory] = {}
    if tables.history is not None:
        resets = tables.resets()
        history = tables.history_counts()
    else:
        partitions, resets, history = _read_history(history_path, problems)
    final_log = None
    final_lines = None
    if tables.final is not None:
        final_lines = tables.final.lines
    elif final_path.is_file():
        final_log = read_final(final_path, problems)
        final_lines = final_log.lines
    builder = native_load.PartitionBuilder(tables, resets, final_log)
    torn = final_log is not None and final_log.torn
    if tables.history is not None:
        return _Read(partitions, resets, _finals(builder.keys(), builder.final_state), history,
                     final_lines, builder, torn)
    # The history was read by the exact reader: the builder adds final.jsonl's part.
    for key in builder.keys():
        ph = partitions.get(key)
        if ph is None:
            ph = partitions[key] = PartitionHistory(key[0], key[1])
        builder.attach_final(ph)
    if final_log is not None:
        attach_final(partitions, final_log)
    return _Read(partitions, resets, _finals(partitions, builder.final_state), history, final_lines,
                 final_torn=torn)


def _read_in_python(history_path: Path, final_path: Path, problems: Problems, parallel: bool
                    ) -> _Read:
    """Both files by the exact reader; with `parallel`, a large final.jsonl
    in a forked process while this one reads the history."""
    final_reader = None
    if (parallel and final_path.is_file() and final_path.stat().st_size >= FORK_MIN_BYTES
            and can_fork()):
        final_reader = Forked(f"the process reading {final_path}", _read_final_elsewhere,
                              final_path)
    try:
        partitions, resets, history = _read_history(history_path, problems)
        final = None
        if final_reader is not None:
            final, found = final_reader.result()
            _add_problems(problems, found)  # after the history's, as in one process
        elif final_path.is_file():
            final = read_final(final_path, problems)
    finally:
        if final_reader is not None:
            final_reader.stop()  # a no-op once its result is in
    if final is None:
        return _Read(partitions, resets, _finals(partitions, _no_final_read), history, None)
    attach_final(partitions, final)
    return _Read(partitions, resets, _finals(partitions, final.final_state), history, final.lines,
                 final_torn=final.torn)


def _read_history(path: Path, problems: Problems
                  ) -> tuple[dict[PartitionKey, PartitionHistory], list[Reset], HistoryCounts]:
    """history.jsonl by the exact reader, grouped per partition."""
    reader = HistoryReader(path, problems)
    partitions, resets = group_operations(reader.operations())
    return partitions, resets, reader.counts


def _read_final_elsewhere(path: Path) -> tuple[FinalLog, Problems]:
    """What the forked reader of final.jsonl sends back."""
    found = Problems()
    return read_final(path, found), found


def _add_problems(problems: Problems, found: Problems) -> None:
    """Report `found` (collected by another process) to `problems`, in order
    and with exact counts. (Its warn_once keys are not carried over: the file
    that used them has been read through.)"""
    for message in found.errors:
        problems.error(message)
    problems.error_count += found.error_count - len(found.errors)
    for message in found.warnings:
        problems.warning(message)
    problems.warning_count += found.warning_count - len(found.warnings)


def group_operations(operations: Iterable[Operation]
                     ) -> tuple[dict[PartitionKey, PartitionHistory], list[Reset]]:
    """Per-partition sends and polls, and the resets (for every partition), from
    paired client operations (`HistoryReader.operations()`)."""
    partitions: dict[PartitionKey, PartitionHistory] = {}
    resets: list[Reset] = []
    assigned: dict[int, tuple[PartitionKey, ...]] = {}  # process -> partitions of its latest assign
    previous: dict[int, int] = {}  # process -> the invoke index of its latest op but assigns
    outcomes: dict[str, Outcome] = {"ok": "ok", "fail": "fail", "info": "info"}  # one shared str per outcome

    def partition(key: PartitionKey) -> PartitionHistory:
        ph = partitions.get(key)
        if ph is None:
            ph = partitions[key] = PartitionHistory(key[0], key[1])
        return ph

    for op in operations:
        f = op.f
        process = op.process
        if f == "send":
            v = op.invoke_value
            value = v["value"]
            key = (v["topic"], v["partition"])
            ph = partitions.get(key) or partition(key)
            if op.type == "ok":
                cv = op.value
                send = Send(process, value, "ok", op.invoke_index, op.invoke_time,
                            op.complete_index, op.complete_time, cv["offset"], cv.get("leader_epoch"),
                            op.error)
            else:
                send = Send(process, value, outcomes[op.type], op.invoke_index, op.invoke_time,
                            op.complete_index, op.complete_time, None, None, op.error)
            ph.sends.append(send)
        elif f == "poll":
            by_key = op.records if op.records is not None else {}
            for key in assigned.get(process, ()):
                if key not in by_key:
                    by_key[key] = []
            outcome = outcomes[op.type]
            for key, records in by_key.items():
                partition(key).polls.append(
                    Poll(process, outcome, op.invoke_index, op.invoke_time, op.complete_index,
                         op.complete_time, records, op.error))
        elif f in RESET_FS:
            resets.append(Reset(process, op.invoke_index, op.invoke_time, f))
            if f == "assign" and op.type != "fail":
                v = op.invoke_value
                keys = tuple((t, p) for t, p in v["partitions"])
                assigned[process] = keys
                for key in keys:
                    partition(key)
                for key, resume in resumes_of(process, v.get("group"), v.get("from"), keys, op.invoke_index,
                                              op.invoke_time, op.complete_index, op.complete_time,
                                              previous.get(process, op.invoke_index)):
                    partition(key).resumes.append(resume)
            elif f != "assign":
                assigned.pop(process, None)  # unknown until the next assign
        elif f == "commit":
            v = op.invoke_value
            for key, commit in commits_of(process, v["group"], v["offsets"], outcomes[op.type], op.invoke_index,
                                          op.invoke_time, op.complete_index, op.complete_time):
                partition(key).commits.append(commit)
        if f != "assign":  # a burst of assigns after a poll was asked for during that poll
            previous[process] = op.invoke_index
    by_index = attrgetter("invoke_index")
    for ph in partitions.values():
        ph.sends.sort(key=by_index)
        ph.polls.sort(key=by_index)
        ph.commits.sort(key=by_index)
        ph.resumes.sort(key=by_index)
    resets.sort(key=attrgetter("index"))
    return partitions, resets


def attach_final(partitions: dict[PartitionKey, PartitionHistory], final: FinalLog | None) -> None:
    """Set each partition's final read, its completeness and the replica logs
    (`FinalLog.attach`); partitions seen only in final.jsonl are added."""
    if final is None:
        return
    for key in final.partitions():
        if key not in partitions:
            partitions[key] = PartitionHistory(key[0], key[1])
    for ph in partitions.values():
        final.attach(ph)


def fresh_copy(ph: PartitionHistory) -> PartitionHistory:
    """An equal copy of `ph` whose sends, polls and records sit in fresh,
    contiguous memory, each distinct value string and (offset, value) record
    once, the final read's records shared with the polls that returned them.

    Why: a loaded partition's objects are spread over the whole heap,
    interleaved with the other partitions' and with what parsing freed, and
    the checks walk them many times: on a copy they run faster than the copy
    costs (docs/BENCHMARKS.md). Ints are copied by `+ 0` (a new int object),
    strings by encode/decode. The final read's records are kept as they are:
    read from final.jsonl in log order (or unpickled from the process that
    read it), a partition's lie together already, and copying them costs more
    than it saves. Replica logs, replica states and resets are kept too
    (walked once)."""
    final = ph.final
    # Each distinct record and value string once; the final read's as they are.
    records: dict[tuple[int, str], tuple[int, str]] = dict(zip(final, final)) if final else {}
    strings: dict[str, str] = {}
    if final:
        values = list(map(_value, final))
        strings = dict(zip(values, values))

    def string(value: str) -> str:
        copy = strings.get(value)
        if copy is None:
            copy = strings[value] = value.encode("utf-8", "surrogatepass").decode(
                "utf-8", "surrogatepass")
        return copy

    def record(r: tuple[int, str]) -> tuple[int, str]:
        copy = records.get(r)
        if copy is None:
            copy = records[r] = (r[0] + 0, string(r[1]))
        return copy

    known = records.__getitem__

    def copied(polled: list[tuple[int, str]]) -> list[tuple[int, str]]:
        try:
            return list(map(known, polled))
        except KeyError:  # a record the final read does not hold
            return list(map(record, polled))

    sends = [Send(s.process, string(s.value), s.outcome, s.invoke_index + 0, s.invoke_time + 0,
                  None if s.complete_index is None else s.complete_index + 0,
                  None if s.complete_time is None else s.complete_time + 0,
                  None if s.offset is None else s.offset + 0, s.leader_epoch, s.error)
             for s in ph.sends]
    polls = [Poll(p.process, p.outcome, p.invoke_index + 0, p.invoke_time + 0,
                  None if p.complete_index is None else p.complete_index + 0,
                  None if p.complete_time is None else p.complete_time + 0,
                  copied(p.records), p.error) for p in ph.polls]
    return PartitionHistory(ph.topic, ph.partition, sends, polls, ph.resets, ph.commits, ph.resumes,
                            None if final is None else list(final),
                            ph.final_complete, ph.replicas, ph.replica_states)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a run loads: building a million
    objects otherwise triggers full collections that cost more than the load
    (docs/BENCHMARKS.md). Nothing loaded forms cycles. freeze() then
    unfreeze() moves what was built straight to the oldest generation, so the
    first collection after re-enabling does not traverse it all as young
    objects."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()
