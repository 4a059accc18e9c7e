"""This machine's processes, below both the hosts (clusters/hosts/) and the lazy filesystem
(clusters/lazyfs/), which both start and watch processes here: the environment marker every
process we start carries (`FENCEPOST_CLUSTER=<cluster name>`, so that `fencepost cleanup` finds
strays), a process's state read from /proc, signalling, and reaping our own children so a killed
one does not linger as a zombie."""
from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Literal

ProcessState = Literal["running", "stopped", "gone"]
CLUSTER_ENV = "FENCEPOST_CLUSTER"


def state_of_tasks(stats: str) -> ProcessState:
    """running, stopped or gone from the /proc/<pid>/task/*/stat lines of a process ('' = gone).

    Gone only when every thread has ended: a killed multi-threaded process (a JVM) has a
    zombie leader while its other threads still exit, and keeps its sockets open until
    the last one has."""
    states = [line[line.rindex(")") + 2] for line in stats.splitlines() if ")" in line]
    alive = [s for s in states if s not in "ZX"]
    if not alive:
        return "gone"
    return "stopped" if all(s in "Tt" for s in alive) else "running"


def local_state(pid: int) -> ProcessState:
    reap(pid)
    stats = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").glob("*/stat"))
    except FileNotFoundError:  # the process ended while its tasks were listed
        tasks = []
    for task in tasks:
        try:
            stats.append(task.read_text())
        except OSError:
            continue  # that thread has just ended
    return state_of_tasks("\n".join(stats))


def signal_local(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
    reap(pid)


def reap(pid: int) -> None:
    """Collect the exit status of a child of ours that has ended (not ours, or running: no-op)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
