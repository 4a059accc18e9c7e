"""The controller's durable state: `DIR/controller-state.json`, and the lock that keeps one controller per DIR.

The whole state is rewritten atomically (write, fsync, rename, fsync the
directory) after every change, before any answer or push about it leaves.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

import orjson

from fencepost.broker.common.durable_file import write_file_atomically

from .state import ControllerState

STATE_FILE = "controller-state.json"
LOCK_FILE = "controller.lock"


class StoreError(RuntimeError):
    """The data directory cannot be used; the message says why and what to do."""


class ControllerStore:
    """Holds the lock on `data_dir` from construction until `close()`."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / STATE_FILE
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise StoreError(f"cannot use --data-dir {self.data_dir}: {e}") from None
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise StoreError(f"data directory {self.data_dir} is in use by another controller process (it holds "
                             f"{self.data_dir / LOCK_FILE}); stop that process or give this one another "
                             "--data-dir") from None

    def load(self, session_timeout_ms: int, now: float) -> ControllerState:
        """The saved state (sessions of unfenced brokers starting at `now`), or an empty one when none is saved."""
        if not self.path.exists():
            return ControllerState(session_timeout_ms)
        try:
            doc = orjson.loads(self.path.read_bytes())
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            return ControllerState.from_dict(doc, session_timeout_ms, now)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise StoreError(f"{self.path} is not a readable controller state ({type(e).__name__}: {e}); "
                             "restore it from a copy, or move it away to start an empty cluster (every topic "
                             "and broker registration is then forgotten)") from None

    def save(self, state: ControllerState) -> None:
        """Raises StoreError when the file cannot be written (the controller must not answer then)."""
        try:
            write_file_atomically(self.path, orjson.dumps(state.to_dict(), option=orjson.OPT_INDENT_2))
        except OSError as e:
            raise StoreError(f"cannot write {self.path}: {e}") from None

    def close(self) -> None:
        os.close(self._lock_fd)
