"""Each client's own log, kept cheaply until it is needed: librdkafka's debug lines (its
`debug` contexts) and the workload's notes of what the client returned, in a bounded
in-memory ring per client process, written to the run directory only when the client is
in trouble — stuck, crashed, or not closed in time — so an intermittent failure brings
its own evidence and a healthy run writes nothing.

confluent-kafka hands librdkafka's log lines to the `logger` setting's `log(level, fmt,
*args)` (args: facility, client name, text) on the thread that serves the client's queue:
a Consumer's `poll()` (and its `close()`), not librdkafka's own threads. So a line is
stamped when the workload's poll delivers it, at most one poll interval after librdkafka
wrote it; a client nobody polls delivers nothing (an abandoned close's later lines are lost).

`ClientLog(process, path, lines)`: `log` (the logger), `note(text)` (the workload's own
line), `flush(why)` — write the ring to `path` under a header saying why, then keep
appending every later line there (at most STREAMED_LINES_MAX, then one line saying so)
until `close()`. Lines are kept as tuples and formatted only when written.

The file (docs/FORMATS.md, `clients/<process>.log`): one line per log line,
`<UTC time, ms> <level> <facility> <text>` (level: librdkafka's syslog level name;
`NOTE` for the workload's notes, facility `fencepost`), and `=== ... ===` lines where
a flush began ("flushed: <why>; N earlier lines dropped by the ring").
"""
from __future__ import annotations

import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

# librdkafka's debug contexts (CONFIGURATION.md, `debug`); "all" is every one.
DEBUG_CONTEXTS = ("generic", "broker", "topic", "metadata", "feature", "queue", "msg", "protocol", "cgrp",
                  "security", "fetch", "interceptor", "plugin", "consumer", "admin", "eos", "mock", "assignor",
                  "conf", "telemetry", "all")
# What a consumer's fetch state needs: leaders and metadata, fetch states and offset validation,
# broker connections, and every request sent and answered.
DEFAULT_DEBUG = "broker,topic,metadata,consumer,fetch,protocol"
DEFAULT_LINES = 20_000  # per client: about the last 10-60 s of a consumer at DEFAULT_DEBUG (docs/WORKLOADS.md)
STREAMED_LINES_MAX = 500_000  # after a flush, lines written before the file stops growing
# Python logging levels (what confluent-kafka passes) to syslog names (what librdkafka calls them).
LEVELS = {10: "DEBUG", 20: "INFO", 30: "WARNING", 40: "ERR", 50: "CRIT"}


def check_debug(debug: str) -> str | None:
    """Why `debug` is no list of librdkafka debug contexts ("" is none), or None when it is."""
    if debug == "":
        return None
    unknown = [c for c in debug.split(",") if c.strip() not in DEBUG_CONTEXTS]
    if unknown:
        return (f"{unknown[0]!r} is no librdkafka debug context: give a comma-separated list of "
                f"{', '.join(DEBUG_CONTEXTS)}, or \"\" for none")
    return None


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


class ClientLog:
    """One client process's log (see the module docstring). Thread-safe: lines come from the
    polling thread and from a closing thread."""

    def __init__(self, process: int, path: Path, lines: int = DEFAULT_LINES,
                 clock: Callable[[], float] = time.time) -> None:
        if lines < 1:
            raise ValueError(f"a client log ring holds at least 1 line, not {lines}")
        self.process = process
        self.path = path
        self._ring: deque[tuple[float, str, str, str]] = deque(maxlen=lines)
        self._clock = clock
        self._lock = threading.Lock()
        self._file: Any = None
        self._seen = 0  # lines given since the last flush (ring or file)
        self.total = 0  # lines given, ever (a run's cost figure: docs/WORKLOADS.md)
        self._streamed = 0
        self.flushes: list[str] = []  # why each flush was made, in order

    @property
    def flushed(self) -> bool:
        return bool(self.flushes)

    def log(self, level: int, fmt: str, *args: Any) -> None:
        """confluent-kafka's logger: `fmt % args` is `<facility> [<client name>] <text>`."""
        facility, text = (args[0], args[2]) if len(args) == 3 else ("", fmt % args if args else fmt)
        self._add((self._clock(), LEVELS.get(level, str(level)), facility, text))

    def note(self, text: str) -> None:
        """A line of the workload's own (what a poll returned, why it flushed)."""
        self._add((self._clock(), "NOTE", "fencepost", text))

    def _add(self, line: tuple[float, str, str, str]) -> None:
        self.total += 1
        if self._file is None:
            self._ring.append(line)  # deque.append is atomic: no lock on the hot path
            self._seen += 1
            return
        with self._lock:
            if self._file is None:
                self._ring.append(line)
                return
            if self._streamed < STREAMED_LINES_MAX:
                self._file.write(_format(line))
            elif self._streamed == STREAMED_LINES_MAX:
                self._file.write(f"=== {STREAMED_LINES_MAX} lines written after the flush: the rest is not ===\n")
            self._streamed += 1

    def flush(self, why: str) -> Path:
        """Write the ring to the file under a header saying `why`, and every later line after it
        (once flushed, a second flush only adds its header)."""
        with self._lock:
            self.flushes.append(why)
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = open(self.path, "a", encoding="utf-8", errors="replace")
                lines = list(self._ring)
                self._ring.clear()
                dropped, self._seen = max(0, self._seen - len(lines)), 0
                self._file.write(f"=== {_utc(self._clock())} client {self.process} flushed: {why}; "
                                 f"{len(lines)} lines held, {dropped} earlier lines dropped by the ring ===\n")
                self._file.writelines(_format(line) for line in lines)
            else:
                self._file.write(f"=== {_utc(self._clock())} client {self.process}: {why} ===\n")
            self._file.flush()
        return self.path

    def close(self) -> None:
        """Close the file, if flushed (lines after that stay in the ring)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def _format(line: tuple[float, str, str, str]) -> str:
    t, level, facility, text = line
    return f"{_utc(t)} {level} {facility} {text}\n"
