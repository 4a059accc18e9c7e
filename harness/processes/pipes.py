"""Output that outlives its reader: `fencepost run | head -1` must not stop a run half-way.

A write to a closed pipe raises BrokenPipeError in whatever the harness was doing —
a progress line at the start of teardown left a whole cluster behind (2026-11-22).
The entry point wraps stdout and stderr so that once the reader is gone, writes are
dropped and the command goes on to its end and its exit code; at the end the broken
descriptor is pointed at /dev/null so that the interpreter's last flush stays quiet.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Any, Iterator, TextIO

DROPPED = (BrokenPipeError, ValueError)  # ValueError: a write to a stream already closed


class PipeSafe:
    """A text stream whose writes stop silently once its reader has gone."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self.stream.write(text)
            except DROPPED:
                self.broken = True
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except DROPPED:
                self.broken = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextmanager
def outputs_that_may_close() -> Iterator[None]:
    out, err = PipeSafe(sys.stdout), PipeSafe(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out.stream, err.stream
        for safe in (out, err):
            if safe.broken:
                _silence(safe.stream)


def _silence(stream: TextIO) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stream with no descriptor (a test's capture)
        pass
