"""The reader of final.jsonl (docs/FORMATS.md, final.jsonl): the final consumer read and each
replica's on-disk log, written after the run has healed.

Kinds: `read` (the final consumer's read, the authoritative log), `replica` (a
record of one node's log), `replica-state` (a node's LEO, HW, epoch cache) and
`read-state` (whether the final read reached the end). Unknown kinds and fields
are ignored (a warning once per kind). Problems are reported as in history.py:
file, 1-based line and field. As there, only a last line without its terminating
newline is torn (a warning; `FinalLog.torn`), a complete bad line is an error
wherever it stands, every integer must lie within int64, and a line longer than
`MAX_LINE_BYTES` is an error. A torn line takes its partition's final read with
it: the partition its prefix names (a `read` or `read-state` line), or where it
names none, every partition whose reads have no `read-state` yet, is read
incomplete (`FinalLog.torn_partitions`), never complete with its tail missing.

`iter_final` streams entries; `read_final` groups them per partition. A
record seen again in a partition (the final read's record, again in each
replica's log) is the same (offset, value) tuple object. This is the exact
reader, the reference of every rule and message; the C reader
(harness/check/native_load.py) reads plainly valid files faster and leaves any
other to it.

Completeness of a partition's final read (`final_state`, the one place of
the rule): its `read-state` lines decide, complete only if every one says so
(`FinalLog.add_read_state`); `read` lines without one are a complete read; a
partition with neither has no final read.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Union, cast

import orjson

from fencepost.checkers.partition import PartitionHistory, ReplicaState
from fencepost.harness.errors import Problems
from fencepost.harness.errors import clip as _clip
from fencepost.harness.errors import show as _show
from fencepost.harness.rundir.history import (
    INT64_MAX,
    MAX_LINE_BYTES,
    TORN,
    _int,
    _int64_error,
    _skip_line,
    _too_long,
)

KINDS = ("read", "replica", "replica-state", "read-state")

PartitionKey = tuple[str, int]
Record = tuple[int, str]  # (offset, value)
# What one line holds, by kind: read -> Record; replica -> Record;
# replica-state -> ReplicaState; read-state -> bool (complete).
FinalItem = Union[Record, ReplicaState, bool]
# (kind, (topic, partition), node or None, item)
FinalEntry = tuple[str, PartitionKey, Union[str, None], FinalItem]


@dataclass(frozen=True, slots=True)
class FinalState:
    """What the verdict reads of a partition's final read: is there one, and
    did it reach the end of the partition."""

    present: bool
    complete: bool


NO_FINAL_READ = FinalState(False, False)


def final_state(has_reads: bool, read_state: bool | None) -> FinalState:
    """A partition's final read from what final.jsonl holds of it: `read`
    lines (`has_reads`) and its `read-state` lines joined (`read_state`,
    None: none). The read-state decides; reads without one are complete;
    neither: no final read."""
    if read_state is not None:
        return FinalState(True, read_state)
    return FinalState(has_reads, has_reads)


@dataclass(slots=True)
class FinalLog:
    """final.jsonl grouped by partition, each list in file (= log) order."""

    reads: dict[PartitionKey, list[Record]] = field(default_factory=dict)
    read_complete: dict[PartitionKey, bool] = field(default_factory=dict)
    replicas: dict[PartitionKey, dict[str, list[Record]]] = field(default_factory=dict)
    replica_states: dict[PartitionKey, dict[str, ReplicaState]] = field(default_factory=dict)
    lines: int = 0
    torn: bool = False  # the last line had no terminating newline (ignored)

    def partitions(self) -> set[PartitionKey]:
        return {*self.reads, *self.read_complete, *self.replicas, *self.replica_states}

    def add_read_state(self, key: PartitionKey, complete: bool) -> None:
        """A `read-state` line of `key`: with several, complete only if every one says so."""
        self.read_complete[key] = complete and self.read_complete.get(key, True)

    def final_state(self, key: PartitionKey) -> FinalState:
        return final_state(key in self.reads, self.read_complete.get(key))

    def attach(self, ph: PartitionHistory) -> None:
        """Set `ph`'s final read and its completeness (`final_state`; None
        where there is none), replica logs and states."""
        key = (ph.topic, ph.partition)
        state = self.final_state(key)
        if state.present:
            reads = self.reads.get(key)
            ph.final = reads if reads is not None else []
            ph.final_complete = state.complete
        ph.replicas = self.replicas.get(key, {})
        ph.replica_states = self.replica_states.get(key, {})


def read_final(path: Path | str, problems: Problems | None = None) -> FinalLog:
    """Read a final.jsonl file into a `FinalLog` (problems go to `problems`)."""
    log = FinalLog()
    reads = log.reads
    replicas = log.replicas
    reader = FinalReader(path, problems)
    # the kind tells the item's type and whether there is a node (FinalEntry)
    for kind, key, node, item in reader:
        if kind == "read":
            records = reads.get(key)
            if records is None:
                records = reads[key] = []
            records.append(cast(Record, item))
        elif kind == "replica":
            nodes = replicas.get(key)
            if nodes is None:
                nodes = replicas[key] = {}
            records = nodes.get(cast(str, node))
            if records is None:
                records = nodes[cast(str, node)] = []
            records.append(cast(Record, item))
        elif kind == "replica-state":
            log.replica_states.setdefault(key, {})[cast(str, node)] = cast(ReplicaState, item)
        else:
            log.add_read_state(key, cast(bool, item))
    log.lines = reader.lines
    if reader.torn is not None:
        log.torn = True
        named = _torn_partition(reader.torn)
        if named is not None:
            if named is not _NOT_A_READ:
                log.add_read_state(named, False)
        else:
            for key in log.reads:
                if key not in log.read_complete:
                    log.add_read_state(key, False)
    return log


_NOT_A_READ: PartitionKey = ("", -1)
_KIND = re.compile(rb'^\s*\{\s*"kind"\s*:\s*"([a-z-]*)"')
_TOPIC = re.compile(rb'"topic"\s*:\s*("(?:[^"\\]|\\.)*")')
_PARTITION = re.compile(rb'"partition"\s*:\s*(-?[0-9]+)\s*[,}]')


def _torn_partition(torn: bytes) -> PartitionKey | None:
    """The partition whose final read a torn last line may have been part of, from what is left
    of the line: `_NOT_A_READ` when it begins as another kind's line (a replica's), None when
    it does not name its kind, topic and partition (fencepost writes them first)."""
    kind = _KIND.match(torn)
    if kind is not None and kind.group(1) in (b"replica", b"replica-state"):
        return _NOT_A_READ
    topic = _TOPIC.search(torn)
    partition = _PARTITION.search(torn)
    if kind is None or topic is None or partition is None:
        return None
    try:
        name = orjson.loads(topic.group(1))
    except orjson.JSONDecodeError:
        return None
    number = int(partition.group(1))
    return (name, number) if type(name) is str and number <= INT64_MAX else None


def iter_final(path: Path | str, problems: Problems | None = None) -> Iterator[FinalEntry]:
    """Validated entries of a final.jsonl file, one by one, in file order."""
    return iter(FinalReader(path, problems))


class FinalReader:
    """Streams a final.jsonl file; `lines` is set once the file has been read."""

    def __init__(self, path: Path | str, problems: Problems | None = None):
        self.path = Path(path)
        self.problems = Problems() if problems is None else problems
        self.lines = 0
        self.torn: bytes | None = None  # a torn last line's bytes (at most MAX_LINE_BYTES)

    def __iter__(self) -> Iterator[FinalEntry]:
        return self._read()

    def _read(self) -> Iterator[FinalEntry]:
        # One loop, written for speed: a run's final.jsonl holds millions of
        # record lines. Each record appears once in the final read and once per
        # replica: equal records of a partition are one tuple object (`known`),
        # which saves memory and makes the later hashing and pickling cheap.
        problems = self.problems
        path = self.path
        where = str(path)
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        keys: dict[PartitionKey, PartitionKey] = {}  # one shared key tuple per partition
        nodes: dict[str, str] = {}
        known: dict[PartitionKey, dict[int, Record]] = {}  # partition -> offset -> record
        held: str | None = None  # a bad line's problem, reported once the line is behind us
        number = 0
        limit = MAX_LINE_BYTES
        with open(path, "rb") as file:
            readline = file.readline
            while line := readline(limit):
                number += 1
                if held is not None:
                    problems.error(f"{where}:{number - 1}: {held}")
                    held = None
                if line[-1] != 10:  # b"\n": a torn last line, or one over the bound
                    if len(line) == limit and _skip_line(file):
                        held = _too_long()
                        continue
                    self.torn = line
                    torn = TORN.replace('the operation', 'what')
                    problems.warning(f"{where}:{number}: the last line is ignored: {torn}")
                    break
                try:
                    d = loads(line)
                except decode_error as e:
                    held = f"not valid JSON ({e}): {_clip(line)}"
                    continue
                if type(d) is not dict:
                    held = f"expected a JSON object, got {_show(d)}"
                    continue
                kind = d.get("kind")
                topic = d.get("topic")
                partition = d.get("partition")
                if type(kind) is not str:
                    held = _missing_or_bad(d, "kind", f"one of {', '.join(KINDS)}")
                    continue
                if kind not in _KIND_SET:
                    problems.warn_once(f"kind:{kind}", f"{where}:{number}: kind {kind!r} is not one of "
                                                       f"{', '.join(KINDS)}: such lines are ignored")
                    continue
                if type(topic) is not str:
                    held = _missing_or_bad(d, "topic", "a string")
                    continue
                if type(partition) is not int or partition > INT64_MAX:
                    held = _missing_or_bad(d, "partition", "an integer")
                    continue
                key = keys.get((topic, partition))
                if key is None:
                    key = keys[(topic, partition)] = (topic, partition)
                node = None
                if kind != "read" and kind != "read-state":
                    node = d.get("node")
                    if type(node) is not str:
                        held = _missing_or_bad(d, "node", "a string (the node name)")
                        continue
                    node = nodes.setdefault(node, node)
                if kind == "read" or kind == "replica":
                    offset = d.get("offset")
                    value = d.get("value")
                    epoch = d.get("leader_epoch")
                    if type(offset) is not int or not 0 <= offset <= INT64_MAX:
                        held = _missing_or_bad(d, "offset", "an integer")
                    elif type(value) is not str:
                        held = _missing_or_bad(d, "value", "a string")
                    elif epoch is not None and (type(epoch) is not int or epoch > INT64_MAX):
                        held = _missing_or_bad(d, "leader_epoch", "an integer or null")
                    else:
                        records = known.get(key)
                        if records is None:
                            records = known[key] = {}
                        record = records.get(offset)
                        if record is None or record[1] != value:
                            record = records[offset] = (offset, value)
                        yield kind, key, node, record
                elif kind == "read-state":
                    complete = d.get("complete")
                    if type(complete) is not bool:
                        held = _missing_or_bad(d, "complete", "true or false")
                    else:
                        yield kind, key, None, complete
                else:
                    assert node is not None  # read above for every kind but read and read-state
                    state, held = _replica_state(d, node)
                    if state is not None:
                        yield kind, key, node, state
        if held is not None:
            problems.error(f"{where}:{number}: {held}")
        self.lines = number


def _replica_state(d: dict[str, Any], node: str) -> tuple[ReplicaState | None, str | None]:
    leo = d.get("log_end_offset")
    hw = d.get("high_watermark")
    epoch = d.get("leader_epoch")
    epochs = d.get("epochs", [])
    if not _int(leo):
        return None, _missing_or_bad(d, "log_end_offset", "an integer")
    if not _int(hw):
        return None, _missing_or_bad(d, "high_watermark", "an integer")
    if epoch is not None and not _int(epoch):
        return None, _missing_or_bad(d, "leader_epoch", "an integer or null")
    if type(epochs) is not list:
        return None, _missing_or_bad(d, "epochs", "a list of [epoch, start offset] pairs")
    pairs = []
    for n, entry in enumerate(epochs):
        if type(entry) is list and len(entry) == 2 and any(type(x) is int and not _int(x) for x in entry):
            return None, _int64_error(f"epochs[{n}]", entry)
        if (type(entry) is not list or len(entry) != 2 or type(entry[0]) is not int
                or type(entry[1]) is not int):
            return None, f"field \"epochs[{n}]\": expected an [epoch, start offset] pair, got {_show(entry)}"
        pairs.append((entry[0], entry[1]))
    return ReplicaState(node, leo, hw, epoch, pairs), None


def _missing_or_bad(d: dict[str, Any], name: str, expected: str) -> str:
    if name not in d:
        return f"field \"{name}\": missing (expected {expected})"
    if type(d[name]) is int and not _int(d[name]):
        return _int64_error(name, d[name])
    if name == "offset" and type(d[name]) is int and d[name] < 0:
        return f"field \"offset\": {d[name]} is negative, which no offset is"
    return f"field \"{name}\": expected {expected}, got {_show(d[name])}"


_KIND_SET = frozenset(KINDS)
