"""workloads/client_stacks.py: the native stacks of a process with many threads are written
whole, and taking them never hangs the process (gdb stops every thread of it, the one that
waits for gdb too: a pipe read by that process filled at 64 KiB and gdb waited for ever)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.support.paths import ROOT

MANY_THREADS = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from fencepost.workloads.client_stacks import write_native_stacks
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait, name=f"sleeper-{i}") for i in range(120)]
    for t in threads:
        t.start()
    said = write_native_stacks(Path(sys.argv[1]), timeout_s=float(sys.argv[2]))
    stop.set()
    print(said)
""")


def stacks_of_many_threads(out, timeout_s: str) -> str:
    """What write_native_stacks said in a process of 120 threads (it must exit 0 within 120 s)."""
    done = subprocess.run([sys.executable, "-c", MANY_THREADS, str(out), timeout_s], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb (apt-get install gdb)")
def test_stacks_of_many_threads_are_written_whole_without_hanging(tmp_path):
    out = tmp_path / "stacks.txt"
    said = stacks_of_many_threads(out, "60")
    assert "written to stacks.txt" in said, said
    stacks = out.read_text()
    assert stacks.count("Thread ") >= 120
    assert len(stacks.encode()) > 64 * 1024  # more than a pipe holds: the case that hung
    assert not (tmp_path / "stacks.txt.gdb-stderr").exists()


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb (apt-get install gdb)")
def test_a_gdb_over_its_time_is_killed_and_the_process_runs_on(tmp_path):
    said = stacks_of_many_threads(tmp_path / "stacks.txt", "0.01")
    assert "within 0.01 s" in said, said
