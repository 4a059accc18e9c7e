"""Live progress of a run: phase, elapsed/limit, ok/fail/info counts, ops/s, active faults —
one line rewritten in place on a terminal; on anything else the phase changes, one line
each (a CI log wants no carriage returns), and while a phase shows a running status (the
main phase) a heartbeat: its status line every HEARTBEAT_S seconds, so that a CI log shows
a run is alive and how far it is.

`Progress.start(status)` runs a ticker thread that calls `status()` (a `Status`
snapshot) twice a second and draws it; `stop()` joins it and ends the line.
"""
from __future__ import annotations

import shutil
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, TextIO

TICK_S = 0.5
HEARTBEAT_S = 30.0


@dataclass(frozen=True)
class Status:
    phase: str
    elapsed: float = 0.0
    limit: float | None = None
    ok: int = 0
    fail: int = 0
    info: int = 0
    ops_per_s: float = 0.0
    faults: tuple[str, ...] = ()

    def line(self) -> str:
        clock = f"{self.elapsed:5.0f}s" + (f"/{self.limit:.0f}s" if self.limit else "")
        faults = ", ".join(self.faults) if self.faults else "none"
        return (f"{self.phase:<11} {clock}  ok {self.ok}  fail {self.fail}  info {self.info}  "
                f"{self.ops_per_s:6.0f} ops/s  faults: {faults}")


class Progress:
    def __init__(self, out: TextIO | None = None, live: bool | None = None,
                 heartbeat_s: float = HEARTBEAT_S) -> None:
        self.out = out or sys.stderr
        self.live = self.out.isatty() if live is None else live
        self.heartbeat_s = heartbeat_s
        self._beat_at = 0.0
        self._status: Callable[[], Status] = lambda: Status("starting")
        self._last_phase = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def phase(self, name: str) -> None:
        """Show that a new phase began (a line of its own when not live)."""
        self.show(Status(name))

    def start(self, status: Callable[[], Status]) -> None:
        self._status = status
        self._beat_at = time.monotonic()
        self._stop.clear()
        self._thread = threading.Thread(target=self._tick, name="progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.show(self._status())
        if self.live:
            with self._lock:
                self.out.write("\n")
                self.out.flush()

    def show(self, status: Status) -> None:
        with self._lock:
            if self.live:
                width = shutil.get_terminal_size((120, 20)).columns - 1
                self.out.write("\r" + status.line()[:width].ljust(width))
                self.out.flush()
            elif status.phase != self._last_phase:
                self.out.write(f"fencepost: {status.phase}\n")
                self.out.flush()
            self._last_phase = status.phase

    def _tick(self) -> None:
        while not self._stop.wait(min(TICK_S, self.heartbeat_s)):
            try:
                status = self._status()
                self.show(status)
                if not self.live and time.monotonic() - self._beat_at >= self.heartbeat_s:
                    self._beat_at = time.monotonic()
                    with self._lock:
                        self.out.write(f"fencepost: {status.line()}\n")
                        self.out.flush()
            except Exception:  # a status that cannot be read now is drawn at the next tick
                continue

