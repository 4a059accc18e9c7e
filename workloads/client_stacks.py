"""The native stacks of every thread of this process — librdkafka's own threads among them
(`rdk:main`, `rdk:broker<id>`, named by librdkafka) — taken with gdb when a client is in
trouble, so that a client stuck inside librdkafka (a thread blocked on a lock, a request
waiting on a broker thread) shows where. The client log (workloads/client_log.py) says what
librdkafka last did; the stacks say where each of its threads is now.

`write_native_stacks(path)`: runs `gdb -p <this pid> -batch -ex "thread apply all bt"`,
which stops the whole process while it reads the stacks (about 1-5 s on a loaded 2-core
machine: every client of the run pauses, as in a long GC pause), writes what it printed to
`path`, and returns a sentence saying what it did (no gdb, a timeout, gdb's failure: said,
never raised).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

GDB_TIMEOUT_S = 60.0
FRAMES = 40  # per thread


def write_native_stacks(path: Path, timeout_s: float = GDB_TIMEOUT_S) -> str:
    gdb = shutil.which("gdb")
    if gdb is None:
        return "native stacks not taken: no gdb on PATH (install gdb to have them)"
    command = [gdb, "-p", str(os.getpid()), "-batch", "-nx", "-ex", "set pagination off",
               "-ex", f"thread apply all bt {FRAMES}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"native stacks not taken: gdb did not finish within {timeout_s:g} s"
    except OSError as e:
        return f"native stacks not taken: gdb could not start: {e}"
    if "Thread " not in done.stdout:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"native stacks not taken: gdb exited {done.returncode}: {tail}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(done.stdout, encoding="utf-8")
    return f"native stacks of every thread written to {path.name}"
