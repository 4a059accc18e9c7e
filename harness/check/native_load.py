"""The native reader (harness._native, C, sources in harness/native/):
history.jsonl and final.jsonl read into tables of plain C records -- both
files at once on two threads when asked, since the C code runs without the GIL -- and
each partition's checker input (`PartitionHistory`) made from them, one
partition at a time, so that its objects lie together in memory (what
`loading.fresh_copy` otherwise makes by copying).

The exact Python readers (harness/rundir/history.py `HistoryReader` grouped by
`loading.group_operations`, harness/rundir/final_reader.py `read_final`) are the
reference: the C reader gives what they give, or gives up on a file where it
is not sure of a line (anything they would report, anything unusual such as
non-ASCII bytes, escaped keys, numbers with exponents), which they then read;
so results, errors and warnings are always theirs. Without the compiled
module (no C compiler when installed) `available()` is False and they read
every file.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fencepost.checkers.partition import PartitionHistory, Poll, ReplicaState, Reset, Send
from fencepost.harness.rundir.final_reader import NO_FINAL_READ, FinalLog, FinalState, final_state
from fencepost.harness.rundir.history import HistoryCounts

try:
    from fencepost.harness import _native
except ImportError:  # built without a C compiler: the exact readers read every file
    _native = None

PartitionKey = tuple[str, int]


def available() -> bool:
    """Was the C reader compiled (pip install with a C compiler)?"""
    return _native is not None


@dataclass(slots=True)
class NativeTables:
    """What the C reader made of a run's two files: a table each, or None
    (with why) where it left the file to the exact readers."""

    history: Any | None  # harness._native.HistoryTable
    history_why: str | None
    final: Any | None  # harness._native.FinalTable, or None (also when there is no file)
    final_why: str | None

    def history_counts(self) -> HistoryCounts:
        lines, nemesis, by_f_type = self.history.counts()
        counts = HistoryCounts(lines=lines, ops=sum(n for _, _, n in by_f_type), nemesis=nemesis)
        for f, type_, n in by_f_type:
            counts.by_f_type[(f, type_)] = n
        return counts

    def resets(self) -> list[Reset]:
        return self.history.resets(Reset)


def read_tables(history_path: Path, final_path: Path | None, parallel: bool = True) -> NativeTables:
    """Both files read by the C reader, with `parallel` final.jsonl on a
    second thread (`final_path` None: there is none)."""
    final: list[Any] = [None, None]

    def read_final() -> None:
        final[:] = _native.read_final(str(final_path))

    thread = None
    if final_path is not None and not parallel:
        read_final()
    elif final_path is not None:
        thread = threading.Thread(target=read_final, name="native final.jsonl reader")
        thread.start()
    try:
        history, history_why = _native.read_history(str(history_path))
    finally:
        if thread is not None:
            thread.join()
    return NativeTables(history, history_why, final[0], final[1])


def history_columns(path: Path) -> dict[str, list] | None:
    """history.jsonl as columns for its Parquet copy (harness/analysis/parquet.py), or None
    where the C reader leaves it to the Python code (not compiled, or a line not plain)."""
    return None if _native is None else _native.history_columns(str(path))


def final_columns(path: Path) -> dict[str, list] | None:
    """final.jsonl as columns for its Parquet copy, or None (as history_columns)."""
    return None if _native is None else _native.final_columns(str(path))


class PartitionBuilder:
    """Makes the checker input of one partition at a time from the tables:
    its sends and polls, its final read, replica logs and states (or, where
    the C reader left final.jsonl to the exact reader, those taken from
    `final_log`). `resets` are the history's, which every partition holds
    (harness/check/loading.py gives them)."""

    def __init__(self, tables: NativeTables, resets: list[Reset], final_log: FinalLog | None = None
                 ) -> None:
        self.tables = tables
        self.resets = resets
        self.final_log = final_log
        self._history = {key: i for i, key in enumerate(tables.history.keys())} if tables.history else {}
        self._final = {key: i for i, key in enumerate(tables.final.keys())} if tables.final else {}
        self._history_sizes = tables.history.sizes() if tables.history else []
        self._reads = tables.final.reads() if tables.final else []

    def keys(self) -> list[PartitionKey]:
        """Every partition of the tables (and of `final_log`), in key order."""
        keys = self._history.keys() | self._final.keys()
        if self.final_log is not None:
            keys |= self.final_log.partitions()
        return sorted(keys)

    def size(self, key: PartitionKey) -> int:
        """What `key`'s check costs, roughly: its ops and final records."""
        h = self._history.get(key)
        f = self._final.get(key)
        ops = 0 if h is None else sum(self._history_sizes[h])
        if f is not None:
            return ops + self._reads[f][2]
        if self.final_log is not None:
            return ops + len(self.final_log.reads.get(key, ()))
        return ops

    def build(self, key: PartitionKey) -> PartitionHistory:
        """`key`'s partition, all but its resets."""
        h = self._history.get(key, -1)
        f = self._final.get(key, -1)
        sends, polls, final, replicas, states = _native.build(
            self.tables.history if h >= 0 else None, h, self.tables.final if f >= 0 else None, f,
            Send, Poll)
        ph = PartitionHistory(key[0], key[1], sends, polls)
        if f >= 0:
            self._set_final(ph, final, replicas, states)
        elif self.final_log is not None:
            self.final_log.attach(ph)
        return ph

    def attach_final(self, ph: PartitionHistory) -> None:
        """Set `ph`'s final read, completeness, replica logs and states from
        the final table (where the history was read by the exact reader)."""
        f = self._final.get(ph.key, -1)
        if f >= 0:
            _, _, final, replicas, states = _native.build(None, -1, self.tables.final, f, Send, Poll)
            self._set_final(ph, final, replicas, states)

    def _set_final(self, ph: PartitionHistory, final: list | None, replicas: dict,
                   states: list) -> None:
        """What FinalLog.attach does, from what the final table built for `ph`."""
        state = self.final_state(ph.key)
        if state.present:
            ph.final = final if final is not None else []
            ph.final_complete = state.complete
        ph.replicas = replicas
        ph.replica_states = {node: ReplicaState(node, leo, hw, epoch, epochs)
                             for node, leo, hw, epoch, epochs in states}

    def final_state(self, key: PartitionKey) -> FinalState:
        """What the verdict reads of `key`, without building it."""
        f = self._final.get(key)
        if f is not None:
            has_reads, complete, _ = self._reads[f]  # complete: the read-states joined, or None
            return final_state(has_reads, complete)
        if self.final_log is not None:
            return self.final_log.final_state(key)
        return NO_FINAL_READ
