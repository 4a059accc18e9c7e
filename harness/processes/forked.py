"""Running a function in a forked process and taking its result back.

`Forked(what, fn, *args)` forks: the child runs `fn(*args)`, pickles the
return value (or the exception raised, with its traceback as text) into a
pipe and leaves by `os._exit` (no atexit handler, no flush of buffers it
shares with the parent). The child sees the parent's memory as it was at the
fork, copy-on-write: large inputs cost nothing to hand over; only the result
is serialised. The parent reads the pipes (`collect` reads several side by
side, so that no child blocks on a full pipe), then `result()` reaps the child
and returns its value, or raises its exception with `ChildTraceback` (the
child's traceback) as the cause. `args` stay referenced in the child until it
leaves, and it leaves without freeing anything: `fn` keeps what it built on
itself, and Forked holds `fn` until the child leaves (harness/check/checking.py's
`_Loader`, `_Worker`), so nothing is freed object by object, for nothing. On Linux a child
is killed when its parent dies (`prctl(PR_SET_PDEATHSIG)`): its result would
go nowhere, and a parent killed by SIGKILL (an OOM kill, a CI timeout) would
otherwise leave it working on, and its own children with it. Fork only when
`can_fork()`.
"""
from __future__ import annotations

import ctypes
import os
import pickle
import selectors
import signal
import sys
import threading
import traceback
from typing import Any, Callable, cast

_CHUNK = 1 << 20


def can_fork() -> bool:
    """Whether work may be handed to forked processes: the platform forks, and
    this process runs no other thread (a forked child could block forever on
    a lock such a thread held at the fork)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class ChildTraceback(Exception):
    """The traceback of an exception raised in a forked process (its text)."""

    def __str__(self) -> str:
        return f"in a forked process:\n{self.args[0]}"


class Forked:
    """`fn(*args)` running in a forked child; `what` names it in errors."""

    def __init__(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        self.what = what
        self._chunks: list[bytes] = []
        sys.stdout.flush()
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _run_child(write_end, fn, args, parent)
        os.close(write_end)
        self.pid: int | None = pid
        self.fd: int | None = read_end

    def fileno(self) -> int:
        assert self.fd is not None
        return self.fd

    def read_some(self) -> bool:
        """Read what the pipe holds now; False once the child has closed it."""
        assert self.fd is not None
        chunk = os.read(self.fd, _CHUNK)
        if chunk:
            self._chunks.append(chunk)
        return bool(chunk)

    def result(self) -> Any:
        """The child's return value (reading the rest of the pipe first)."""
        while self.fd is not None and self.read_some():
            pass
        self._close()
        pid, status = self.pid, self._reap()
        data = b"".join(self._chunks)
        self._chunks = []
        try:
            outcome, value, text = pickle.loads(data)
        except Exception:  # nothing, or a torn message: the child died while writing
            raise RuntimeError(f"{self.what} (pid {pid}) {_how(status)} before sending "
                               f"its result (out of memory?); run with --jobs 1 to do it all "
                               f"in one process") from None
        if outcome == "error":
            raise value from ChildTraceback(text)
        return value

    def stop(self) -> None:
        """Kill the child if it still runs, and reap it (on an error or Ctrl-C)."""
        self._close()
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def _close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _reap(self) -> int:
        if self.pid is None:
            return 0
        try:
            status = os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            status = 0
        self.pid = None
        return status


def collect(children: list[Forked]) -> None:
    """Read every child's pipe side by side until each is closed."""
    with selectors.DefaultSelector() as selector:
        for child in children:
            if child.fd is not None:
                selector.register(child, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                ready = cast(Forked, key.fileobj)  # only children are registered
                if not ready.read_some():  # the child is done writing
                    selector.unregister(key.fileobj)


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _die_with(parent: int) -> None:
    """Have the kernel SIGKILL this (forked) process when `parent` dies;
    leave at once if it already has. (Linux only; elsewhere, nothing.)"""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # no prctl to call: the child outlives a killed parent
        return
    if os.getppid() != parent:  # the parent died between the fork and the prctl
        os._exit(1)


def _run_child(write_end: int, fn: Callable[..., Any], args: tuple, parent: int) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it
        _die_with(parent)
        data = pickle.dumps(("ok", fn(*args), ""), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException as e:  # everything goes back to the parent
        code = 1
        text = "".join(traceback.format_exception(e))
        try:
            data = pickle.dumps(("error", e, text), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # an exception that does not pickle: its type and message
            data = pickle.dumps(("error", RuntimeError(f"{type(e).__name__}: {e}"), text))
    try:
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
    finally:
        os._exit(code)


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by signal {os.WTERMSIG(status)}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"
