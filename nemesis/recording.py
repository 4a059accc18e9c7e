"""How the nemesis records its actions: the recorder it is given, and one action as an
invoke/info pair (Jepsen's style).

The recorder is anything with `nemesis(f, value, type, error)` — in a run,
`harness.rundir.history.Recorder` (this package never imports harness). `recorded()`
writes an `invoke` line when an action begins, with what is asked (e.g.
`{"target": "one"}`), and an `info` line when it ends, with what was done (e.g.
`{"target": "one", "nodes": ["n2"]}`); when the action raises, the `info` line
carries the error and whatever was done up to then, and the exception goes on.
`MemoryRecorder` keeps the ops in a list (the CLI's one-shot verbs, tests).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Protocol

from fencepost.clusters import ClusterConfigError, HostError


class NemesisRecorder(Protocol):
    def nemesis(self, f: str, value: Any = None, type: Literal["invoke", "ok", "fail", "info"] = "info",
                error: str | None = None) -> Any: ...


@dataclass
class Outcome:
    """The value of the `info` line; the action sets it as it goes."""
    value: Any


@contextmanager
def recorded(recorder: NemesisRecorder, f: str, value: Any = None) -> Iterator[Outcome]:
    recorder.nemesis(f, value, type="invoke")
    outcome = Outcome(value)
    try:
        yield outcome
    except BaseException as e:
        recorder.nemesis(f, outcome.value, type="info", error=describe_error(e))
        raise
    recorder.nemesis(f, outcome.value, type="info")


def describe_error(e: BaseException) -> str:
    if isinstance(e, (HostError, ClusterConfigError)):
        return str(e)
    if isinstance(e, KeyboardInterrupt):
        return "interrupted"
    if not isinstance(e, Exception):  # e.g. the heal guard's SignalReceived
        return f"interrupted: {e}"
    return f"{type(e).__name__}: {e}"


class MemoryRecorder:
    """Keeps nemesis ops as dicts shaped like history lines (`process`, `type`, `f`, `value`, `error`)."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []

    def nemesis(self, f: str, value: Any = None, type: str = "info", error: str | None = None) -> dict[str, Any]:
        op = {"process": "nemesis", "type": type, "f": f, "value": value}
        if error is not None:
            op["error"] = error
        self.ops.append(op)
        return op
