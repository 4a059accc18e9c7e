"""One pass over history.jsonl for the report: client operations as numpy arrays
(invoke time, completion time, process, type, f, their lines), the nemesis ops and
counts; every readable line is also handed, in file order, to the observers the
caller gives (the history viewer's columns, the realtime lag, the traces), so the
report reads the file once.

The file is read with the history format's own reader (`harness.rundir.history.iter_history`);
lines it cannot validate are skipped and counted (`fencepost check` has already
reported them in results.json). A completion is paired with the pending invoke
of its process; an invoke never completed is an `info` op with no completion
time (`complete == NO_TIME`, `complete_index == NO_TIME`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from fencepost.harness.errors import Problems
from fencepost.harness.measures.bands import NemesisOp
from fencepost.harness.rundir.history import NEMESIS, Op, iter_history
from fencepost.harness.rundir.names import HISTORY_FILE

TYPE_NAMES = ("ok", "fail", "info")  # completion types, by their code in ScannedHistory.type
OK, FAIL, INFO = range(3)
NO_TIME = -1


@dataclass(slots=True)
class ScannedHistory:
    """A history reduced to what the plots and pages draw. Arrays are aligned:
    entry i is one client operation, in invoke order."""

    invoke: np.ndarray  # int64 ns
    complete: np.ndarray  # int64 ns, NO_TIME for an op never completed
    process: np.ndarray  # int64
    type: np.ndarray  # uint8 code into TYPE_NAMES
    f: np.ndarray  # int16 code into fs
    invoke_index: np.ndarray  # int64 history line of the invoke
    complete_index: np.ndarray  # int64 history line of the completion, NO_TIME for none
    fs: list[str]
    nemesis: list[NemesisOp]
    lines: int = 0  # lines in the file (readable or not)
    unreadable: int = 0  # lines the reader rejected
    first_time: int = 0
    last_time: int = 0  # the latest time of any readable line
    by_f_type: Counter = field(default_factory=Counter)  # (f, type) -> lines, as written

    @property
    def ops(self) -> int:
        return len(self.invoke)

    def type_counts(self) -> dict[str, int]:
        """Client operations by outcome (never completed ones count as info)."""
        counts = np.bincount(self.type, minlength=len(TYPE_NAMES)) if self.ops else [0, 0, 0]
        return {name: int(n) for name, n in zip(TYPE_NAMES, counts)}

    def completed(self) -> np.ndarray:
        """Mask of the ops that have a completion."""
        return self.complete != NO_TIME

    def latency(self) -> np.ndarray:
        """Completion minus invoke time, ns (meaningful only where `completed()`)."""
        return self.complete - self.invoke


Observer = Callable[[Op], Any]


def scan_history(run_dir: Path, observers: Sequence[Observer] = ()) -> ScannedHistory:
    """Scan `run_dir/history.jsonl` (absent: an empty history), handing each
    readable line to every observer, in file order."""
    path = Path(run_dir) / HISTORY_FILE
    problems = Problems(max_kept=10)
    invoke: list[int] = []
    complete: list[int] = []
    process: list[int] = []
    types: list[int] = []
    fs: list[int] = []
    invoke_index: list[int] = []
    complete_index: list[int] = []
    f_codes: dict[str, int] = {}
    pending: dict[int, int] = {}  # process -> position in the lists
    nemesis: list[NemesisOp] = []
    by_f_type: Counter = Counter()
    first = last = None
    completion_code = {"ok": OK, "fail": FAIL, "info": INFO}
    if not path.is_file():
        return _arrays(invoke, complete, process, types, fs, invoke_index, complete_index, f_codes,
                       nemesis, 0, 0, 0, 0, by_f_type)
    readable = 0
    for op in iter_history(path, problems):
        readable += 1
        for observe in observers:
            observe(op)
        t = op.time
        if first is None:
            first = t
        if last is None or t > last:
            last = t
        by_f_type[(op.f, op.type)] += 1
        if op.process == NEMESIS:
            nemesis.append(NemesisOp(op.index, t, op.type, op.f, op.value, op.error))
            continue
        p = op.process
        if op.type == "invoke":
            code = f_codes.get(op.f)
            if code is None:
                code = f_codes[op.f] = len(f_codes)
            pending[p] = len(invoke)
            invoke.append(t)
            complete.append(NO_TIME)
            process.append(p)
            types.append(INFO)
            fs.append(code)
            invoke_index.append(op.index)
            complete_index.append(NO_TIME)
        else:
            at = pending.pop(p, None)
            if at is not None:  # a completion without its invoke is skipped (check reports it)
                complete[at] = t
                complete_index[at] = op.index
                types[at] = completion_code[op.type]
    lines = readable + problems.error_count + problems.warning_count
    return _arrays(invoke, complete, process, types, fs, invoke_index, complete_index, f_codes,
                   nemesis, lines, problems.error_count + problems.warning_count, first or 0,
                   last or 0, by_f_type)


def _arrays(invoke: list[int], complete: list[int], process: list[int], types: list[int],
            fs: list[int], invoke_index: list[int], complete_index: list[int],
            f_codes: dict[str, int], nemesis: list[NemesisOp], lines: int, unreadable: int,
            first: int, last: int, by_f_type: Counter) -> ScannedHistory:
    return ScannedHistory(
        invoke=np.array(invoke, dtype=np.int64), complete=np.array(complete, dtype=np.int64),
        process=np.array(process, dtype=np.int64), type=np.array(types, dtype=np.uint8),
        f=np.array(fs, dtype=np.int16), invoke_index=np.array(invoke_index, dtype=np.int64),
        complete_index=np.array(complete_index, dtype=np.int64),
        fs=sorted(f_codes, key=f_codes.__getitem__), nemesis=nemesis, lines=lines,
        unreadable=unreadable, first_time=first, last_time=last, by_f_type=by_f_type)
