"""The one owner of the history format (docs/FORMATS.md, history.jsonl): schema, writer, reader.

history.jsonl holds one JSON object per line, append-only: `index` (= the
0-based line number), `time` (ns since the run started), `process` (int, or
"nemesis"), `type` (invoke|ok|fail|info), `f`, and optional `value` / `error`.
Unknown fields are kept (`Op.extra`; paired `Operation`s leave them out) and
otherwise ignored.

- `HistoryWriter` appends lines (thread-safe) and makes them durable. It owns
  one thread, the flusher: started by `open()` / `__enter__`, stopped and joined
  by `close()` / `__exit__`. It fsyncs the file at most `FSYNC_DELAY` after an
  append, so that lines are on disk within 100 ms without an fsync per line.
- `Recorder` is the facade workloads and nemeses get: invoke / complete / nemesis.
- `iter_plain` streams a file's readable lines unvalidated (for observers only).
- `HistoryReader` / `iter_history` stream a file: each line is validated;
  problems go to a `Problems` collector with file, 1-based line and field.
  Only a last line without its terminating newline is a torn write: a warning,
  ignored, and `HistoryCounts.torn` is set (the verdict then cannot be valid,
  harness/check/verdict.py). A complete line that fails validation is an error
  wherever it stands (the verdict becomes unknown), and reading goes on. Every
  integer read (and every integer of a nemesis value or of an unknown field) must
  lie within int64 (`INT64_MIN`..`INT64_MAX`), `time` and offsets also not negative, else the
  line is an error naming the field. A line longer than `MAX_LINE_BYTES` is an
  error, skipped without being held in memory.
- `HistoryReader.operations()` pairs each client invoke with the next
  completion of the same process; invokes never completed come out last, with
  no completion (their outcome is unknown: `info`). A record polled again in a
  partition is the same (offset, value) tuple object.
- `lines_at` fetches a few lines by index, to show the ops an anomaly names.
"""
from __future__ import annotations

import logging
import os
import threading
import time as _time
from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterator, Literal, TypeGuard

import orjson

from fencepost.harness.errors import Problems
from fencepost.harness.errors import clip as _clip
from fencepost.harness.errors import show as _show

_log = logging.getLogger("fencepost.history")

NEMESIS = "nemesis"
TYPES = ("invoke", "ok", "fail", "info")
CLIENT_FS = ("send", "poll", "assign", "subscribe", "crash", "commit")
FSYNC_DELAY = 0.02  # seconds from the first unsynced append to its fsync (<< 100 ms)
# The readers' bound on one line, its newline included (docs/FORMATS.md, "Reading"): a longer
# line is an error, skipped in chunks, never held whole. A poll of a thousand records is ~100 KiB.
MAX_LINE_BYTES = 64 << 20
_SKIP_CHUNK = 1 << 20
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)  # orjson reads integers below it as floats: only the upper bound needs a test

OpType = Literal["invoke", "ok", "fail", "info"]
_KNOWN_FIELDS = frozenset(("index", "time", "process", "type", "f", "value", "error"))


class Op:
    """One validated history line."""

    __slots__ = ("index", "time", "process", "type", "f", "value", "error", "extra")

    def __init__(self, index: int, time: int, process: int | str, type: str, f: str,
                 value: Any = None, error: str | None = None, extra: dict[str, Any] | None = None):
        self.index = index
        self.time = time
        self.process = process
        self.type = type
        self.f = f
        self.value = value
        self.error = error
        self.extra = extra

    def to_json(self) -> dict[str, Any]:
        line = {"index": self.index, "time": self.time, "process": self.process,
                "type": self.type, "f": self.f}
        if self.value is not None:
            line["value"] = self.value
        if self.error is not None:
            line["error"] = self.error
        if self.extra:
            line.update(self.extra)
        return line

    def __repr__(self) -> str:
        return f"Op({self.to_json()!r})"


class Operation:
    """A client operation: an invoke paired with its completion. One never
    completed has type `info` and `complete_index` / `complete_time` None."""

    __slots__ = ("process", "f", "invoke_index", "invoke_time", "invoke_value",
                 "type", "complete_index", "complete_time", "value", "error", "records")

    def __init__(self, process: int, f: str, invoke_index: int, invoke_time: int, invoke_value: Any,
                 type: str, complete_index: int | None, complete_time: int | None, value: Any,
                 error: str | None, records: dict[tuple[str, int], list[tuple[int, str]]] | None):
        self.process = process
        self.f = f
        self.invoke_index = invoke_index
        self.invoke_time = invoke_time
        self.invoke_value = invoke_value
        self.type = type  # ok, fail or info
        self.complete_index = complete_index
        self.complete_time = complete_time
        self.value = value  # the completion's value
        self.error = error
        # An ok poll's records by (topic, partition), as (offset, value) in the
        # order returned.
        self.records = records

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"Operation({fields})"


@dataclass(slots=True)
class HistoryCounts:
    """What a read saw: lines, ops by (f, type), nemesis ops."""

    lines: int = 0
    ops: int = 0  # valid lines
    nemesis: int = 0
    by_f_type: Counter[tuple[str, str]] = field(default_factory=Counter)
    torn: bool = False  # the last line had no terminating newline (ignored: its op is unknown)

    def by_f(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = {}
        for (f, type_), n in sorted(self.by_f_type.items()):
            table.setdefault(f, {})[type_] = n
        return table


# ---------------------------------------------------------------------------
# Writing


class HistoryWriter:
    """Appends ops to history.jsonl, one line per call, durably (see module doc).

    Use as a context manager, or call `open()` and `close()`.
    """

    def __init__(self, path: Path | str, start_ns: int | None = None):
        self.path = Path(path)
        self.start_ns = _time.monotonic_ns() if start_ns is None else start_ns
        self._lock = threading.Lock()
        self._next_index = 0
        self._fd: int | None = None
        self._dirty = threading.Event()  # set while lines are unsynced
        self._closing = threading.Event()
        self._flusher: threading.Thread | None = None
        self._flush_error: BaseException | None = None

    def open(self) -> HistoryWriter:
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already open")
        self._next_index = _prepare_for_append(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._closing.clear()
        self._flusher = threading.Thread(target=self._flush_loop, name=f"fsync {self.path.name}",
                                         daemon=True)
        self._flusher.start()
        return self

    def __enter__(self) -> HistoryWriter:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def append(self, process: int | str, type: str, f: str, value: Any = None,
               error: str | None = None, **extra: Any) -> dict[str, Any]:
        """Write one op now (a single write(2)); returns the line as written."""
        if self._flush_error is not None:
            raise OSError(f"fsync of {self.path} failed: {self._flush_error}") from self._flush_error
        with self._lock:
            if self._fd is None:
                raise RuntimeError(f"{self.path} is not open: call open() or use `with`")
            line: dict[str, Any] = {"index": self._next_index,
                                    "time": _time.monotonic_ns() - self.start_ns,
                                    "process": process, "type": type, "f": f}
            if value is not None:
                line["value"] = value
            if error is not None:
                line["error"] = error
            if extra:
                line.update(extra)
            os.write(self._fd, orjson.dumps(line) + b"\n")
            self._next_index += 1
        # The flusher clears the flag before it fsyncs, so a line written while the flag
        # is still set is covered by that fsync; skipping the set saves a lock per line.
        if not self._dirty.is_set():
            self._dirty.set()
        return line

    def close(self) -> None:
        if self._fd is None:
            return
        self._closing.set()
        self._dirty.set()  # wakes the flusher
        if self._flusher is not None:
            self._flusher.join()
            self._flusher = None
        with self._lock:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def _flush_loop(self) -> None:
        fd = self._fd
        assert fd is not None  # open() sets it before it starts this thread
        while True:
            self._dirty.wait()
            if self._closing.is_set():
                return  # close() does the last fsync
            if self._closing.wait(FSYNC_DELAY):  # let more lines gather
                return  # closing: close() does the last fsync
            self._dirty.clear()
            try:
                os.fsync(fd)
            except OSError as e:  # reported by the next append
                self._flush_error = e
                return
            if self._closing.is_set():  # close() may have set _dirty before our clear()
                return


def _prepare_for_append(path: Path) -> int:
    """The number of whole lines already in a file we append to, so that `index`
    stays the line number. A torn last line (no newline: the writer was killed
    mid-write) is cut off, else the next line would be glued onto it."""
    try:
        with open(path, "rb+") as f:
            lines = 0
            whole = 0  # bytes up to the end of the last whole line
            read = 0
            for chunk in iter(lambda: f.read(1 << 20), b""):
                newlines = chunk.count(b"\n")
                if newlines:
                    lines += newlines
                    whole = read + chunk.rindex(b"\n") + 1
                read += len(chunk)
            if whole < read:
                f.truncate(whole)
            return lines
    except FileNotFoundError:
        return 0


@dataclass(frozen=True, slots=True)
class InvokeHandle:
    """What `Recorder.invoke` returns and `Recorder.complete` takes."""

    process: int
    f: str
    value: Any
    index: int


class Recorder:
    """The facade that workloads and nemeses record their operations through."""

    def __init__(self, writer: HistoryWriter):
        self.writer = writer
        self._pending: set[int] = set()
        self._lock = threading.Lock()

    def invoke(self, process: int, f: str, value: Any = None) -> InvokeHandle:
        with self._lock:
            if process in self._pending:
                raise RuntimeError(f"process {process} invoked {f!r} while its previous op is "
                                   f"still pending: complete it first, or use another process id")
            self._pending.add(process)
        line = self.writer.append(process, "invoke", f, value)
        return InvokeHandle(process, f, value, line["index"])

    def complete(self, handle: InvokeHandle, type: OpType, value: Any = None,
                 error: str | None = None) -> dict[str, Any]:
        """Record the outcome of `handle`. Without a value, the invoke's value is
        repeated (what docs/FORMATS.md asks of a failed or unknown send in history.jsonl)."""
        if type not in ("ok", "fail", "info"):
            raise ValueError(f"completion type must be ok, fail or info, not {type!r}")
        with self._lock:
            if handle.process not in self._pending:
                raise RuntimeError(f"process {handle.process} has no pending op to complete "
                                   f"(invoke at index {handle.index} was completed already)")
            self._pending.discard(handle.process)
        return self.writer.append(handle.process, type, handle.f,
                                  handle.value if value is None else value, error)

    def nemesis(self, f: str, value: Any = None, type: OpType = "info",
                error: str | None = None) -> dict[str, Any]:
        return self.writer.append(NEMESIS, type, f, value, error)


# ---------------------------------------------------------------------------
# Reading


def iter_plain(path: Path | str, containing: bytes | None = None) -> Iterator[Op]:
    """Every line of a history file that decodes to an object with the required fields (index and
    time integers, type and f strings), as an Op, unvalidated otherwise and without a word about
    the others: for passes that only observe (the liveness verdict) over files `fencepost check`
    validates anyway. A line whose index, time or value's offset is beyond int64 (time: or
    negative) is left out too (`fencepost check` reports it): the observers keep those in int64
    arrays. `containing`: only lines with these bytes are decoded."""
    loads = orjson.loads
    for line in _bounded_lines(path):
        if containing is not None and containing not in line:
            continue
        try:
            d = loads(line)
            index, time, process, type_, f = d["index"], d["time"], d["process"], d["type"], d["f"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            continue
        if (type(index) is int and type(time) is int and type(type_) is str and type(f) is str
                and index <= INT64_MAX and 0 <= time <= INT64_MAX
                and (type(value := d.get("value")) is not dict
                     or type(offset := value.get("offset")) is not int or offset <= INT64_MAX)):
            yield Op(index, time, process, type_, f, value, d.get("error"))


def _bounded_lines(path: Path | str) -> Iterator[bytes]:
    """The lines of a file, each at most MAX_LINE_BYTES: one longer is skipped in chunks and
    comes out as b"" (never held whole), so that line numbers stay right."""
    with open(path, "rb") as file:
        readline = file.readline
        limit = MAX_LINE_BYTES
        while line := readline(limit):
            if len(line) == limit and line[-1] != 10:
                _skip_line(file)
                line = b""
            yield line


def iter_history(path: Path | str, problems: Problems | None = None) -> Iterator[Op]:
    """Validated ops of a history file, one by one, in file order. Problems go
    to `problems`, or without it to the log (logger "fencepost.history")."""
    return iter(HistoryReader(path, problems))


class HistoryReader:
    """Streams a history file. Iterate for ops; `operations()` for client ops paired.
    `counts` is complete once the file has been read through."""

    def __init__(self, path: Path | str, problems: Problems | None = None):
        self.path = Path(path)
        self.problems = Problems(log=_log) if problems is None else problems
        self.counts = HistoryCounts()

    def __iter__(self) -> Iterator[Op]:
        return self._read(pair=False)

    def operations(self) -> Iterator[Operation]:
        """Client operations (invoke + completion) as their completions arrive;
        then those never completed (type `info`, no completion), in invoke
        order. Nemesis ops are counted but not yielded."""
        return self._read(pair=True)

    def _read(self, pair: bool) -> Iterator[Any]:
        # One loop, written for speed: it runs once per history line. A bad line
        # sets `held`, reported as an error once the line is behind us; only a last
        # line without its newline is torn (a warning).
        problems = self.problems
        counts = self.counts
        by_f_type: dict[tuple[str, str], int] = {}
        where = str(self.path)
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        types = _TYPE_SET
        value_checks = _VALUE_CHECKS
        known_fields = _KNOWN_FIELDS
        required = _REQUIRED
        grouped: Any = None
        shared_records: dict[tuple[str, int], dict[int, tuple[int, str]]] = {}
        pending: dict[int, tuple[int, int, str, Any]] = {}  # process -> (index, time, f, value)
        unknown_fs: set[str] = set()
        held: str | None = None
        nemesis_ops = sends_invoked = sends_ok = 0
        index = -1
        limit = MAX_LINE_BYTES
        int64_max = INT64_MAX
        with open(self.path, "rb") as file:
            readline = file.readline
            while line := readline(limit):
                index += 1
                if held is not None:
                    problems.error(f"{where}:{index}: {held}")  # the previous line, 1-based
                    held = None
                if line[-1] != 10:  # b"\n": a torn last line, or one over the bound
                    if len(line) == limit and _skip_line(file):
                        held = _too_long()
                        continue
                    counts.torn = True
                    problems.warning(f"{where}:{index + 1}: the last line is ignored: {TORN}")
                    break
                try:
                    d = loads(line)
                except decode_error as e:
                    held = f"not valid JSON ({e}): {_clip(line)}"
                    continue
                if type(d) is not dict:
                    held = f"expected a JSON object, got {_show(d)}"
                    continue
                try:
                    i, t, p, ty, f = required(d)
                except KeyError:
                    held = _header_error(d, index)
                    continue
                v: Any = d.get("value")  # any JSON value; checked per f below
                er = d.get("error")
                if (type(i) is not int or i != index or type(t) is not int or not 0 <= t <= int64_max
                        or type(ty) is not str or ty not in types or type(f) is not str
                        or (er is not None and type(er) is not str)):
                    held = _header_error(d, index)
                    continue
                extra = None
                if len(d) > 6 and len(d) > 5 + ("value" in d) + ("error" in d):
                    extra = {k: x for k, x in d.items() if k not in known_fields}
                    held = _beyond_int64(extra, "")
                    if held is not None:
                        continue
                if type(p) is int:
                    if p > int64_max:
                        held = _int64_error("process", p)
                        continue
                    if f == "send":
                        # The common case, checked inline; _check_send* say what is wrong.
                        if (type(v) is not dict or type(v.get("topic")) is not str
                                or type(v.get("partition")) is not int or v["partition"] > int64_max
                                or type(v.get("value")) is not str):
                            held = _check_send(v)
                        elif ty == "ok":
                            epoch = v.get("leader_epoch")
                            offset = v.get("offset")
                            if (type(offset) is not int or not 0 <= offset <= int64_max
                                    or (epoch is not None and (type(epoch) is not int or epoch > int64_max))):
                                held = _check_send_ok(v)
                    elif pair and f == "poll" and ty == "ok":
                        # Checked and grouped per partition in one pass over the records.
                        grouped = _group_records(v, shared_records)
                        if type(grouped) is str:
                            held = grouped
                    else:
                        check = value_checks.get((f, ty))
                        if check is not None:
                            held = check(v)
                        elif f not in CLIENT_FS and f not in unknown_fs:
                            unknown_fs.add(f)
                            problems.warning(f"{where}:{index + 1}: client f {f!r} is not one of "
                                             f"{', '.join(CLIENT_FS)}: its ops are kept but not checked")
                    if held is not None:
                        if ty != "invoke" and p in pending:
                            # A completion we cannot read: the outcome is unknown.
                            invoke = pending.pop(p)
                            if pair:
                                yield _unfinished(p, invoke)
                        continue
                    if ty == "invoke":
                        previous = pending.get(p)
                        if previous is not None:
                            # The new invoke is kept; the earlier one never completed.
                            problems.error(
                                f"{where}:{index + 1}: field \"type\": process {p} invokes {f!r} "
                                f"while its {previous[2]!r} invoked at line {previous[0] + 1} has "
                                f"no completion; that one is taken as never completed")
                            if pair:
                                yield _unfinished(p, previous)
                        pending[p] = (index, t, f, v)
                        if not pair:
                            yield Op(index, t, p, ty, f, v, er, extra)
                    else:
                        opened = pending.get(p)
                        if (opened is None or opened[2] != f
                                or (f == "send" and (v["value"] != opened[3]["value"]
                                                     or v["partition"] != opened[3]["partition"]
                                                     or v["topic"] != opened[3]["topic"]))):
                            held = _completion_error(p, ty, f, v, opened)
                            if opened is not None:
                                del pending[p]  # a bad completion: the outcome is unknown
                                if pair:
                                    yield _unfinished(p, opened)
                            continue
                        del pending[p]
                        if pair:
                            yield Operation(p, f, opened[0], opened[1], opened[3], ty, index, t, v, er,
                                            grouped if f == "poll" and ty == "ok" else None)
                        else:
                            yield Op(index, t, p, ty, f, v, er, extra)
                elif p == NEMESIS:
                    if v is not None:
                        held = _beyond_int64(v, "value")
                        if held is not None:
                            continue
                    nemesis_ops += 1
                    if not pair:
                        yield Op(index, t, p, ty, f, v, er, extra)
                else:
                    held = _field_error(d, "process", 'must be an integer or "nemesis"')
                    continue
                if f == "send" and ty == "invoke":  # the two most common kinds, counted cheaply
                    sends_invoked += 1
                elif f == "send" and ty == "ok":
                    sends_ok += 1
                else:
                    key = (f, ty)
                    by_f_type[key] = by_f_type.get(key, 0) + 1
        lines = index + 1
        if held is not None:
            problems.error(f"{where}:{lines}: {held}")
        counts.lines = lines
        counts.nemesis = nemesis_ops
        for key, n in ((("send", "invoke"), sends_invoked), (("send", "ok"), sends_ok)):
            if n:
                by_f_type[key] = n
        counts.by_f_type.update(by_f_type)
        counts.ops = sum(by_f_type.values())
        if pair:
            for p, invoke in sorted(pending.items(), key=_by_invoke_index):
                yield _unfinished(p, invoke)


def _header_error(d: dict[str, Any], index: int) -> str:
    """What is wrong with the required fields of a line (one that has a problem)."""
    for name in ("index", "time", "process", "type", "f"):
        if name not in d:
            return _field_error(d, name, "")
    i = d.get("index")
    if type(i) is not int or i != index:
        return _field_error(d, "index", f"must be {index}, the 0-based line number")
    if type(d.get("time")) is not int:
        return _field_error(d, "time", "must be an integer (ns since the run started)")
    if d["time"] > INT64_MAX:
        return _int64_error("time", d["time"])
    if d["time"] < 0:
        return _field_error(d, "time", "must not be negative (ns since the run started)")
    ty = d.get("type")
    if type(ty) is not str or ty not in _TYPE_SET:
        return _field_error(d, "type", "is not one of invoke, ok, fail, info")
    if type(d.get("f")) is not str:
        return _field_error(d, "f", "must be a string")
    return _field_error(d, "error", "must be a string")


def _completion_error(process: int, type_: str, f: str, value: Any,
                      invoke: tuple[int, int, str, Any] | None) -> str:
    if invoke is None:
        return f"field \"type\": {type_!r} of process {process} without a pending invoke"
    if invoke[2] != f:
        return f"field \"f\": {f!r} completes the {invoke[2]!r} invoked at line {invoke[0] + 1}"
    return _send_mismatch(invoke[3], value, invoke[0])


def _unfinished(process: int, invoke: tuple[int, int, str, Any]) -> Operation:
    index, time, f, value = invoke
    return Operation(process, f, index, time, value, "info", None, None, None, None, None)


def _by_invoke_index(item: tuple[int, tuple[int, int, str, Any]]) -> int:
    return item[1][0]


_TYPE_SET = frozenset(TYPES)
_REQUIRED = itemgetter("index", "time", "process", "type", "f")


def _field_error(d: dict[str, Any], name: str, what: str) -> str:
    if name not in d:
        return f"field \"{name}\": missing (required: index, time, process, type, f)"
    return f"field \"{name}\": {_show(d[name])} {what}"


def _expect(path: str, value: Any, what: str) -> str:
    return f"field \"{path}\": expected {what}, got {_show(value)}"


TORN = ("it has no terminating newline (a torn write): the operation it held is unknown, so the "
        "verdict cannot be valid")


def _int(value: Any) -> TypeGuard[int]:
    """An integer within int64 (orjson reads those below INT64_MIN as floats)."""
    return type(value) is int and value <= INT64_MAX


def _offset(value: Any) -> TypeGuard[int]:
    """An offset: an integer from 0 within int64 (Kafka's are never negative)."""
    return type(value) is int and 0 <= value <= INT64_MAX


def _expect_int(path: str, value: Any, what: str) -> str:
    """`_expect`, or for an integer beyond int64 `_int64_error`, or for a negative offset that."""
    if type(value) is int and value < 0:
        return f"field \"{path}\": {value} is negative, which no offset is: fix or remove the line"
    return _int64_error(path, value) if type(value) is int else _expect(path, value, what)


def _int64_error(path: str, value: Any) -> str:
    return (f"field \"{path}\": {value} is beyond int64 ({INT64_MIN}..{INT64_MAX}), which no writer "
            f"writes: fix or remove the line")


def _beyond_int64(value: Any, path: str) -> str | None:
    """What is wrong with the first integer beyond int64 anywhere in `value` (for values the rules
    do not read field by field: nemesis values, unknown fields), or None."""
    if type(value) is int:
        return _int64_error(path, value) if value > INT64_MAX else None
    if type(value) is dict:
        for key, item in value.items():
            if type(item) in (int, dict, list):
                error = _beyond_int64(item, f"{path}.{key}" if path else key)
                if error is not None:
                    return error
    elif type(value) is list:
        for n, item in enumerate(value):
            if type(item) in (int, dict, list):
                error = _beyond_int64(item, f"{path}[{n}]")
                if error is not None:
                    return error
    return None


def _too_long() -> str:
    return (f"the line is longer than {MAX_LINE_BYTES >> 20} MiB, the readers' bound: not read "
            f"(no writer writes such a line)")


def _skip_line(file: Any) -> bool:
    """Read past the rest of an over-long line in chunks; True if it ended with a newline."""
    while chunk := file.readline(_SKIP_CHUNK):
        if chunk[-1] == 10:
            return True
    return False


def _check_send(v: Any) -> str | None:
    if type(v) is not dict:
        return _expect("value", v, 'an object {"topic", "partition", "value"}')
    topic = v.get("topic")
    if type(topic) is not str:
        return _expect("value.topic", topic, "a string")
    partition = v.get("partition")
    if not _int(partition):
        return _expect_int("value.partition", partition, "an integer")
    value = v.get("value")
    if type(value) is not str:
        return _expect("value.value", value, "a string")
    return None


def _check_send_ok(v: Any) -> str | None:
    error = _check_send(v)
    if error is not None:
        return error
    offset = v.get("offset")
    if not _offset(offset):
        return _expect_int("value.offset", offset, "an integer (the acked offset)")
    epoch = v.get("leader_epoch")
    if epoch is not None and not _int(epoch):
        return _expect_int("value.leader_epoch", epoch, "an integer or null")
    return None


def _check_poll_invoke(v: Any) -> str | None:
    return None if v is None else _expect("value", v, "null for a poll invoke")


def _check_poll_ok(v: Any) -> str | None:
    if type(v) is not dict or type(v.get("records")) is not list:
        return _expect("value", v, 'an object {"records": [...]}')
    for record in v["records"]:  # one expression per record: this runs millions of times
        if (type(record) is not dict or type(record.get("topic")) is not str
                or type(p := record.get("partition")) is not int or type(o := record.get("offset")) is not int
                or p > INT64_MAX or not 0 <= o <= INT64_MAX or type(record.get("value")) is not str
                or ((epoch := record.get("leader_epoch")) is not None
                    and (type(epoch) is not int or epoch > INT64_MAX))):
            return _poll_record_error(v["records"])
    return None


def _group_records(v: Any, shared: dict[tuple[str, int], dict[int, tuple[int, str]]]
                   ) -> dict[tuple[str, int], list[tuple[int, str]]] | str:
    """An ok poll's records grouped by (topic, partition) as (offset, value)
    pairs; or what is wrong with them. A record seen before in the history
    is the same tuple object (`shared`: per partition, offset -> the record):
    consumers read records several times, and one object per record saves
    memory and makes every later hash and comparison of it cheap."""
    if type(v) is not dict or type(v.get("records")) is not list:
        return _expect("value", v, 'an object {"records": [...]}')
    grouped: dict[tuple[str, int], list[tuple[int, str]]] = {}
    topic = partition = None
    # both set at the first record (its partition is never None): empty only for the type
    group: list[tuple[int, str]] = []
    known: dict[int, tuple[int, str]] = {}
    for record in v["records"]:  # runs millions of times: kept lean
        if type(record) is not dict:
            return _poll_record_error(v["records"])
        p = record.get("partition")
        offset = record.get("offset")
        value = record.get("value")
        if (type(p) is not int or type(offset) is not int or type(value) is not str
                or p > INT64_MAX or not 0 <= offset <= INT64_MAX
                or ((epoch := record.get("leader_epoch")) is not None
                    and (type(epoch) is not int or epoch > INT64_MAX))):
            return _poll_record_error(v["records"])
        if p != partition or record.get("topic") != topic:  # records come in runs of one partition
            topic = record.get("topic")
            if type(topic) is not str:
                return _poll_record_error(v["records"])
            partition = p
            group = grouped.setdefault((topic, p), [])
            known = shared.setdefault((topic, p), {})
        pair = known.get(offset)
        if pair is None:
            pair = known[offset] = (offset, value)
        elif pair[1] != value:
            pair = (offset, value)  # another value at that offset: kept apart
        group.append(pair)
    return grouped


def _poll_record_error(records: list[Any]) -> str:
    """What is wrong with the first bad record of a poll."""
    for n, record in enumerate(records):
        if type(record) is not dict:
            return _expect(f"value.records[{n}]", record, "an object")
        for name, kind, what in (("topic", str, "a string"), ("partition", int, "an integer"),
                                 ("offset", int, "an integer"), ("value", str, "a string")):
            in_range = _offset if name == "offset" else _int
            if type(record.get(name)) is not kind or (kind is int and not in_range(record[name])):
                return _expect_int(f"value.records[{n}].{name}", record.get(name), what)
        epoch = record.get("leader_epoch")
        if epoch is not None and not _int(epoch):
            return _expect_int(f"value.records[{n}].leader_epoch", epoch, "an integer or null")
    return _expect("value.records", records, "valid records")


def _check_assign(v: Any) -> str | None:
    if type(v) is not dict or type(v.get("partitions")) is not list:
        return _expect("value", v, 'an object {"partitions": [[topic, partition], ...], "from": ...}')
    for n, tp in enumerate(v["partitions"]):
        if type(tp) is not list or len(tp) != 2 or type(tp[0]) is not str or not _int(tp[1]):
            return _expect(f"value.partitions[{n}]", tp, "a [topic, partition] pair (an int64 partition)")
    start = v.get("from")
    if start is not None and start != "beginning" and type(start) is not dict:
        return _expect("value.from", start, '"beginning" or an object of offsets')
    if type(start) is dict:
        error = _beyond_int64(start, "value.from")
        if error is not None:
            return error
    if "group" in v:  # a consumer group's resume: its committed offsets are checked (checkers/groups.py)
        if type(v["group"]) is not str:
            return _expect("value.group", v["group"], "a consumer group's name")
        if start is not None and start != "beginning":
            for key, offset in start.items():
                if type(offset) is not int or key.rpartition("-")[0] == "" or not key.rpartition("-")[2].isdigit():
                    return _expect(f"value.from.{key}", offset, 'an integer offset under a "topic-partition" key')
    return None


def _check_commit(v: Any) -> str | None:
    if type(v) is not dict or type(v.get("group")) is not str or type(v.get("offsets")) is not list:
        return _expect("value", v, 'an object {"group": name, "offsets": [[topic, partition, offset], ...]}')
    for n, entry in enumerate(v["offsets"]):
        if (type(entry) is not list or len(entry) != 3 or type(entry[0]) is not str
                or not _int(entry[1]) or not _int(entry[2])):
            return _expect(f"value.offsets[{n}]", entry, "a [topic, partition, offset] triple (int64 numbers)")
    return None


def _send_mismatch(invoked: dict[str, Any], completed: dict[str, Any], invoke_index: int) -> str:
    for key in ("topic", "partition", "value"):
        if completed.get(key) != invoked.get(key):
            return (f"field \"value.{key}\": {_show(completed.get(key))} differs from the invoke at "
                    f"line {invoke_index + 1} ({_show(invoked.get(key))})")
    return "the value differs from the invoke's"


_VALUE_CHECKS = {
    ("send", "invoke"): _check_send,
    ("send", "ok"): _check_send_ok,
    ("send", "fail"): _check_send,
    ("send", "info"): _check_send,
    ("poll", "invoke"): _check_poll_invoke,
    ("poll", "ok"): _check_poll_ok,
    ("assign", "invoke"): _check_assign,
    ("assign", "ok"): _check_assign,
    ("commit", "invoke"): _check_commit,
    ("commit", "ok"): _check_commit,
}


def lines_at(path: Path | str, indices: set[int]) -> dict[int, Any]:
    """The history lines at `indices` (0-based), parsed but not validated: the
    ops an anomaly names, to show next to it. One pass, no parse of the others."""
    found: dict[int, Any] = {}
    if not indices:
        return found
    last = max(indices)
    for index, line in enumerate(_bounded_lines(path)):
        if index in indices:
            try:
                found[index] = orjson.loads(line)
            except orjson.JSONDecodeError:
                found[index] = line.decode("utf-8", "replace").rstrip("\n")
        if index >= last:
            break
    return found
