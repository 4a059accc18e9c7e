"""The native stacks of every thread of this process — librdkafka's own threads among them
(`rdk:main`, `rdk:broker<id>`, named by librdkafka) — taken with gdb when a client is in
trouble, so that a client stuck inside librdkafka (a thread blocked on a lock, a request
waiting on a broker thread) shows where. The client log (workloads/client_log.py) says what
librdkafka last did; the stacks say where each of its threads is now.

`write_native_stacks(path)`: runs `gdb -p <this pid> -batch -ex "thread apply all bt"`,
which stops the whole process while it reads the stacks (about 1-5 s on a loaded 2-core
machine: every client of the run pauses, as in a long GC pause), and returns a sentence
saying what it did (no gdb, a timeout, gdb's failure: said, never raised).

gdb stops every thread of this process, the one that waits for it too, so nothing here may
depend on this process while gdb runs: gdb writes straight into files (a pipe read by this
process fills at 64 KiB and gdb then waits for ever on a reader it has stopped), and the time
limit is enforced from outside by coreutils' `timeout`, which kills gdb (the kernel then
detaches it and this process runs on). debuginfod is off: gdb never reaches the network.
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
    limit = shutil.which("timeout")
    if limit is None:
        return "native stacks not taken: no coreutils timeout on PATH to bound gdb"
    command = [limit, "-s", "KILL", f"{timeout_s:g}", gdb, "-p", str(os.getpid()), "-batch", "-nx",
               "-iex", "set debuginfod enabled off", "-ex", "set pagination off",
               "-ex", f"thread apply all bt {FRAMES}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    errors = path.with_name(path.name + ".gdb-stderr")
    try:
        with open(path, "w", encoding="utf-8") as out, open(errors, "w", encoding="utf-8") as err:
            returncode = subprocess.run(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL).returncode
    except OSError as e:
        return f"native stacks not taken: gdb could not start: {e}"
    stacks = path.read_text(encoding="utf-8", errors="replace")
    tail = (errors.read_text(encoding="utf-8", errors="replace").strip().splitlines() or ["no output"])[-1]
    errors.unlink(missing_ok=True)
    if returncode in (124, 137, -9):
        return f"native stacks cut short: gdb did not finish within {timeout_s:g} s (what it printed is in {path.name})"
    if "Thread " not in stacks:
        path.unlink(missing_ok=True)
        return f"native stacks not taken: gdb exited {returncode}: {tail}"
    return f"native stacks of every thread written to {path.name}"
