"""A child process a test started: its command, its log file, its readiness line, and its signals.

Owns the life of one process (`python -m fencepost.broker serve`, `python -m fencepost.broker
controller`, ...): launch with stdout and stderr appended to its log file,
wait for the line that says it is ready (or name it, with the tail of its log,
when it dies or stays silent), SIGSTOP/SIGCONT/SIGTERM/SIGKILL, and reaping.
Only processes started here are ever signalled.
"""
from __future__ import annotations

import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import ROOT as REPO_ROOT

START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 20.0
POLL_INTERVAL_S = 0.05
LOG_TAIL_LINES = 30


class ClusterError(RuntimeError):
    """A cluster process or request did not do what was asked (the message says which and why)."""


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"({path} does not exist)"
    return "\n".join(text.splitlines()[-lines:]) or f"({path} is empty)"


@dataclass
class ManagedProcess:
    """One child process we started: its command, its log, and its readiness line."""
    name: str
    command: list[str]
    log_file: Path
    ready: re.Pattern[str]
    proc: subprocess.Popen | None = field(default=None, repr=False)
    paused: bool = False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise ClusterError(f"{self.name} was never started")
        return self.proc.pid

    def launch(self) -> int:
        """Start the process (not waiting); returns the log offset its readiness line will follow."""
        if self.alive():
            raise ClusterError(f"{self.name} is running already (pid {self.proc.pid}): stop or kill it first")
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        offset = self.log_file.stat().st_size if self.log_file.exists() else 0
        with open(self.log_file, "ab") as log:
            self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         cwd=REPO_ROOT)
        self.paused = False
        return offset

    def wait_ready(self, offset: int, timeout: float = START_TIMEOUT_S) -> re.Match[str]:
        """Until the readiness line appears after `offset` in the log; its match."""
        deadline = time.monotonic() + timeout
        while True:
            with open(self.log_file, "rb") as log:
                log.seek(offset)
                found = self.ready.search(log.read().decode(errors="replace"))
            if found:
                return found
            if self.proc is not None and self.proc.poll() is not None:
                raise ClusterError(f"{self.name} exited with status {self.proc.returncode} on start "
                                   f"({' '.join(self.command)}); the end of {self.log_file}:\n"
                                   f"{log_tail(self.log_file)}")
            if time.monotonic() >= deadline:
                self.kill()
                raise ClusterError(f"{self.name} did not log /{self.ready.pattern}/ within {timeout:g}s, "
                                   f"so it was killed; the end of {self.log_file}:\n{log_tail(self.log_file)}")
            time.sleep(POLL_INTERVAL_S)

    def signal(self, sig: signal.Signals) -> None:
        if not self.alive():
            raise ClusterError(f"{self.name} is not running: cannot send it {sig.name}")
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL and reap (a paused process dies too)."""
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(STOP_TIMEOUT_S)
        self.paused = False

    def terminate(self) -> None:
        """SIGTERM without waiting (a paused process is continued first, else it could not act on it)."""
        if self.alive():
            if self.paused:
                self.proc.send_signal(signal.SIGCONT)
                self.paused = False
            self.proc.send_signal(signal.SIGTERM)

    def wait_exit(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """The exit status; on timeout the process is killed and ClusterError raised."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ClusterError(f"{self.name} did not exit within {timeout:g}s of SIGTERM, so it was killed; "
                               f"the end of {self.log_file}:\n{log_tail(self.log_file)}") from None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        if not self.alive():
            return self.proc.returncode if self.proc is not None else 0
        self.terminate()
        return self.wait_exit(timeout)
