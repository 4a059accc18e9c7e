"""Loading a run directory into the checkers' input: one `PartitionHistory` per
partition, the check options from test.json, and what was wrong in the files.

Grouping rules (DESIGN.md §3.2-3.3, checkers/partition.py):
- a send belongs to the partition of its value; invokes never completed are `info`;
- a poll is projected onto each partition it returned records of, and onto each
  partition its process was assigned to (by its latest assign) — with the
  records of that partition only, possibly none;
- assign, subscribe and crash of a process are resets in every partition;
- sends and polls are in invoke order, the final read and replica logs in file order;
- final read completeness: a `read-state` with `complete:false` -> incomplete;
  reads but no read-state -> complete; a partition with neither -> its final read
  is missing (`final` is None). Without final.jsonl every final read is missing.

The history is read by the fast path (harness/fast_history.py) when every
line is plainly valid, else by the exact reader (`HistoryReader`), which
reports what is wrong. `load_run(..., parallel=True)` reads final.jsonl in a
forked process (harness/forked.py) while this one reads the history.
`fresh_copy` copies one partition's input into fresh memory, for the checks
to walk (harness/checking.py).
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from checkers.anomaly import ALL as ALL_ANOMALIES, DEFAULT_INVALID, DUPLICATE
from checkers.partition import CheckOptions, PartitionHistory, Poll, Reset, Send
from harness.errors import BadInput, Problems
from harness.fast_history import read_grouped
from harness.final_log import FINAL_FILE, FinalLog, read_final
from harness.forked import Forked, can_fork
from harness.history import HISTORY_FILE, HistoryReader, Operation

TEST_FILE = "test.json"
RUN_DIR_HELP = (f"a run directory holds {HISTORY_FILE} (the operations), {FINAL_FILE} (the final "
                f"reads and replica logs) and optionally {TEST_FILE} (the test spec), as in "
                f"results/<test-name>/<YYYYmmddTHHMMSS>-<6 hex>/ (DESIGN.md §3.1); give the path "
                f"of one, or results/latest")
RESET_FS = frozenset(("assign", "subscribe", "crash"))
# A final.jsonl smaller than this is read in this process even when `parallel`:
# forking and pickling would cost more than reading it.
FORK_MIN_BYTES = 4 << 20

PartitionKey = tuple[str, int]
_value = itemgetter(1)  # of an (offset, value) record


@dataclass(slots=True)
class RunCounts:
    lines: int = 0  # history lines
    ops: int = 0  # valid history lines
    nemesis: int = 0
    by_f_type: dict[str, dict[str, int]] = field(default_factory=dict)  # f -> type -> n
    final_lines: int = 0


@dataclass(slots=True)
class LoadedRun:
    run_dir: Path
    partitions: dict[PartitionKey, PartitionHistory]
    test: dict[str, Any]
    options: CheckOptions
    invalid_anomalies: frozenset[str]
    problems: Problems
    counts: RunCounts
    final_present: bool

    @property
    def errors(self) -> list[str]:
        return self.problems.listed_errors()

    @property
    def warnings(self) -> list[str]:
        return self.problems.listed_warnings()


def load_run(run_dir: Path | str, *, parallel: bool = False) -> LoadedRun:
    """Read history.jsonl, final.jsonl and test.json of `run_dir`. With
    `parallel`, a large final.jsonl is read in a forked process while this one
    reads the history (the same result, in less wall-clock time on two cores).

    Raises BadInput when `run_dir` is not a run directory or test.json is
    unusable; problems inside the history and final logs are collected instead.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir} is not a directory: {RUN_DIR_HELP}")
    history_path = run_dir / HISTORY_FILE
    if not history_path.is_file():
        raise BadInput(f"{run_dir} is not a run directory (it has no {HISTORY_FILE}): {RUN_DIR_HELP}")
    test = read_test(run_dir / TEST_FILE)
    options, invalid = options_from_test(test, run_dir / TEST_FILE)
    problems = Problems()
    final_path = run_dir / FINAL_FILE
    with _gc_paused():
        final_reader = None
        if (parallel and final_path.is_file() and final_path.stat().st_size >= FORK_MIN_BYTES
                and can_fork()):
            final_reader = Forked(f"the process reading {final_path}", _read_final_elsewhere,
                                  final_path)
        try:
            fast = read_grouped(history_path)
            if fast is not None:
                partitions, resets, history = fast
            else:  # something to report: the exact reader says what, with line and field
                reader = HistoryReader(history_path, problems)
                partitions, resets = group_operations(reader.operations())
                history = reader.counts
            final = None
            if final_reader is not None:
                final, found = final_reader.result()
                _add_problems(problems, found)  # after the history's, as in one process
            elif final_path.is_file():
                final = read_final(final_path, problems)
        finally:
            if final_reader is not None:
                final_reader.stop()  # a no-op once its result is in
        attach_final(partitions, final)
        for ph in partitions.values():
            ph.resets = list(resets)
    counts = RunCounts(lines=history.lines, ops=history.ops, nemesis=history.nemesis,
                       by_f_type=history.by_f(), final_lines=final.lines if final else 0)
    return LoadedRun(run_dir, dict(sorted(partitions.items())), test, options, invalid, problems,
                     counts, final is not None)


def verdict_stub(ph: PartitionHistory) -> PartitionHistory:
    """What the verdict (harness/verdict.py) reads of a partition: whether its
    final read is there and complete; nothing else."""
    return PartitionHistory(ph.topic, ph.partition, final=None if ph.final is None else [],
                            final_complete=ph.final_complete)


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


def read_test(path: Path) -> dict[str, Any]:
    """test.json as a dict; {} when absent."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        test = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON ({e}); fix or remove it (it is optional)") from None
    if type(test) is not dict:
        raise BadInput(f"{path}: expected a JSON object, got {type(test).__name__}")
    return test


LINEAR_METHODS = ("witness", "search")


def options_from_test(test: dict[str, Any], where: Path | str = TEST_FILE
                      ) -> tuple[CheckOptions, frozenset[str]]:
    """CheckOptions and the anomaly names that make a run invalid, from test.json."""
    defaults = CheckOptions()
    idempotent = _setting(test, "producer.idempotent", bool, defaults.idempotent, where)
    linearizability = _setting(test, "checker.linearizability", bool, defaults.linearizability, where)
    budget = _setting(test, "checker.search_budget", int, defaults.search_budget, where)
    method = _setting(test, "checker.linear_method", str, defaults.linear_method, where)
    if method not in LINEAR_METHODS:
        raise BadInput(f"{where}: field \"checker.linear_method\": {method!r} is not one of "
                       f"{', '.join(LINEAR_METHODS)}")
    if budget <= 0:
        raise BadInput(f"{where}: field \"checker.search_budget\": {budget} must be a positive "
                       f"number of states")
    invalid = _setting(test, "checker.invalid", list, None, where)
    if invalid is None:
        invalid_set = DEFAULT_INVALID if idempotent else DEFAULT_INVALID - {DUPLICATE}
    else:
        unknown = [name for name in invalid if name not in ALL_ANOMALIES]
        if unknown:
            raise BadInput(f"{where}: field \"checker.invalid\": {unknown} are not anomaly names; "
                           f"known: {', '.join(ALL_ANOMALIES)}")
        invalid_set = frozenset(invalid)
    return CheckOptions(idempotent=idempotent, linearizability=linearizability,
                        linear_method=method, search_budget=budget), invalid_set


def _setting(test: dict[str, Any], dotted: str, kind: type, default: Any, where: Path | str) -> Any:
    node: Any = test
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    if node is None:
        return default
    if type(node) is not kind:  # `type is`, so that true is not taken for an int
        raise BadInput(f"{where}: field \"{dotted}\": expected {kind.__name__}, got "
                       f"{orjson.dumps(node).decode()[:80]}")
    return node


def group_operations(operations: Iterable[Operation]
                     ) -> tuple[dict[PartitionKey, PartitionHistory], list[Reset]]:
    """Per-partition sends and polls, and the resets (for every partition), from
    paired client operations (`HistoryReader.operations()`)."""
    partitions: dict[PartitionKey, PartitionHistory] = {}
    resets: list[Reset] = []
    assigned: dict[int, tuple[PartitionKey, ...]] = {}  # process -> partitions of its latest assign
    outcomes = {"ok": "ok", "fail": "fail", "info": "info"}  # one shared str per outcome

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
                keys = tuple((t, p) for t, p in op.invoke_value["partitions"])
                assigned[process] = keys
                for key in keys:
                    partition(key)
            elif f != "assign":
                assigned.pop(process, None)  # unknown until the next assign
    by_index = attrgetter("invoke_index")
    for ph in partitions.values():
        ph.sends.sort(key=by_index)
        ph.polls.sort(key=by_index)
    resets.sort(key=attrgetter("index"))
    return partitions, resets


def attach_final(partitions: dict[PartitionKey, PartitionHistory], final: FinalLog | None) -> None:
    """Set each partition's final read, its completeness and the replica logs;
    partitions seen only in final.jsonl are added."""
    if final is None:
        return
    for key in final.partitions():
        if key not in partitions:
            partitions[key] = PartitionHistory(key[0], key[1])
    for key, ph in partitions.items():
        reads = final.reads.get(key)
        if key in final.read_complete:
            ph.final = reads if reads is not None else []
            ph.final_complete = final.read_complete[key]
        elif reads is not None:
            ph.final = reads
            ph.final_complete = True
        ph.replicas = final.replicas.get(key, {})
        ph.replica_states = final.replica_states.get(key, {})


def fresh_copy(ph: PartitionHistory) -> PartitionHistory:
    """An equal copy of `ph` whose sends, polls and records sit in fresh,
    contiguous memory, each distinct value string and (offset, value) record
    once, the final read's records shared with the polls that returned them.

    Why: a loaded partition's objects are spread over the whole heap,
    interleaved with the other partitions' and with what parsing freed, and
    the checks walk them many times; on the 1M-line benchmark a partition's
    check took 2.7 s as loaded and 1.1 s on a copy that cost 0.6 s to make.
    Ints are copied by `+ 0` (a new int object), strings by encode/decode.
    The final read's records are kept as they are: read from final.jsonl in
    log order (or unpickled from the process that read it), a partition's lie
    together already, and copying them cost more than it saved (6 alternating
    pairs on the 1M-line bench, copy and check of one partition: median 1.69 s
    with them kept, 1.85 s with them copied; kept faster in 5).
    Replica logs, replica states and resets are kept too (walked once)."""
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
    return PartitionHistory(ph.topic, ph.partition, sends, polls, ph.resets,
                            None if final is None else list(final),
                            ph.final_complete, ph.replicas, ph.replica_states)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a run loads: building a million
    objects otherwise triggers full collections that cost more than the load
    (measured: 6.6 s vs 2.7 s for 1M lines). Nothing loaded forms cycles.
    freeze() then unfreeze() moves what was built straight to the oldest
    generation, so the first collection after re-enabling does not traverse it
    all as young objects (2.4 s on a heavy 1M-line run)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()
