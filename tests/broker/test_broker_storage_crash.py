"""Flush modes against a real kill -9: a child process appends, flushes part way, appends more,
and is killed with SIGKILL. `lazy` keeps only the flushed prefix; `os` and `fsync` keep everything."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fencepost.broker.storage.batch import iter_batches
from fencepost.broker.storage.manager import LogManager
from tests.support.paths import ROOT as REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from fencepost.broker.storage.manager import LogManager
    from tests.support.broker_storage_builder import batch

    data_dir, mode = Path(sys.argv[1]), sys.argv[2]
    manager = LogManager(data_dir, flush=mode, segment_bytes=2000)
    log = manager.get_or_create("fp", 0)
    log.epoch_cache.assign(1, 0)
    for i in range(30):
        log.append_as_leader(batch([f"a-{i}", f"b-{i}"]), 1)
    log.flush()
    print("flushed", log.log_end_offset, flush=True)
    for i in range(30, 50):
        log.append_as_leader(batch([f"a-{i}", f"b-{i}"]), 1)
    print("appended", log.log_end_offset, flush=True)
    time.sleep(600)
    """
)


def run_and_kill(data_dir: Path, mode: str) -> tuple[int, int]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data_dir), mode], stdout=subprocess.PIPE, text=True, cwd=REPO, env=env
    )
    try:
        flushed_line = child.stdout.readline().split()
        appended_line = child.stdout.readline().split()
        assert flushed_line[0] == "flushed" and appended_line[0] == "appended", (flushed_line, appended_line)
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    return int(flushed_line[1]), int(appended_line[1])


def read_values(log) -> list[bytes]:
    values = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        batches = list(iter_batches(log.read(offset, 1 << 20)))
        values += [r.value for b in batches for r in b.records()]
        offset = batches[-1].next_offset
    return values


def expected_values(count: int) -> list[bytes]:
    return [f"{kind}-{i}".encode() for i in range(count // 2) for kind in "ab"]


def test_lazy_mode_loses_exactly_the_unflushed_tail(tmp_path):
    flushed, appended = run_and_kill(tmp_path, "lazy")
    assert (flushed, appended) == (60, 100)
    manager = LogManager(tmp_path, segment_bytes=2000)
    log = manager.get("fp", 0)
    assert log.log_end_offset == flushed
    assert read_values(log) == expected_values(flushed)
    assert log.epoch_cache.epoch_entries() == [(1, 0)]
    manager.close()


@pytest.mark.parametrize("mode", ["os", "fsync"])
def test_write_through_modes_lose_nothing(tmp_path, mode):
    flushed, appended = run_and_kill(tmp_path, mode)
    manager = LogManager(tmp_path, segment_bytes=2000)
    log = manager.get("fp", 0)
    assert log.log_end_offset == appended == 100
    assert read_values(log) == expected_values(appended)
    assert len(log.segments) > 1
    manager.close()
