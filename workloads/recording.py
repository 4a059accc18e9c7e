"""What the workloads need from the harness: a recorder of client operations, and the
callback that tells whoever drives a workload that an operation ended.

The recorder is anything with `invoke(process, f, value) -> handle` and
`complete(handle, type, value, error)` — in a run, `harness.rundir.history.Recorder`
(this package never imports harness; docs/README.md, Layout). `Done` is called once per
operation, after its completion is recorded, with the process id and the
completion type (`ok`, `fail` or `info`).
"""
from __future__ import annotations

from typing import Any, Callable, Literal, Protocol


class ClientRecorder(Protocol):
    def invoke(self, process: int, f: str, value: Any = None) -> Any: ...

    def complete(self, handle: Any, type: Literal["invoke", "ok", "fail", "info"], value: Any = None,
                 error: str | None = None) -> Any: ...


Done = Callable[[int, str], None]


class WorkloadConfigError(ValueError):
    """A workload option that cannot work; the message names the option, the value and what is allowed."""
