"""A Docker daemon for the docker tests: the one that answers, or one started here.

`ensure_dockerd()` returns None when a daemon answers already (it is left
alone), else starts `dockerd` (as root; its output appended to
results/dockerd.log), waits until it answers, and returns its process, which
`stop_dockerd` ends at the end of the test session — exactly that pid, no
other. Under CI the daemon is started here (scripts/provision installs it).
Note: a starting dockerd sets the FORWARD policy to DROP; the netns backend
handles its own bridge.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import docker
import docker.errors

from tests.support.paths import ROOT as REPO_ROOT

DOCKERD_LOG = REPO_ROOT / "results" / "dockerd.log"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0
LOG_TAIL_LINES = 20


class DockerdError(RuntimeError):
    """No daemon answers and none could be started; the message says why and what to do."""


def daemon_answers() -> bool:
    try:
        client = docker.from_env(timeout=5)
    except docker.errors.DockerException:
        return False
    try:
        return bool(client.ping())
    except docker.errors.DockerException:
        return False
    except OSError:
        return False
    finally:
        client.close()


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) or "(empty)"
    except FileNotFoundError:
        return f"({path} does not exist)"


def ensure_dockerd(log: Path = DOCKERD_LOG, timeout: float = START_TIMEOUT_S) -> subprocess.Popen | None:
    """None when a daemon answers; else the dockerd started here, answering. DockerdError otherwise."""
    if daemon_answers():
        return None
    if os.environ.get("DOCKER_HOST"):
        raise DockerdError(f"the Docker daemon at DOCKER_HOST={os.environ['DOCKER_HOST']} does not answer; "
                           "start it, or unset DOCKER_HOST to use (or start) the local one")
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise DockerdError("no Docker daemon answers and dockerd is not installed: install docker.io "
                           "(scripts/provision does)")
    if os.geteuid() != 0:
        raise DockerdError("no Docker daemon answers and only root can start dockerd: start it as root")
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen([dockerd], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    deadline = time.monotonic() + timeout
    while not daemon_answers():
        if process.poll() is not None:
            raise DockerdError(f"dockerd (pid {process.pid}) exited with status {process.returncode} on start; "
                               f"the end of {log}:\n{log_tail(log)}")
        if time.monotonic() > deadline:
            stop_dockerd(process)
            raise DockerdError(f"dockerd (pid {process.pid}) did not answer within {timeout:g}s; "
                               f"the end of {log}:\n{log_tail(log)}")
        time.sleep(0.2)
    return process


def stop_dockerd(process: subprocess.Popen, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM to the dockerd we started (it stops its containerd), SIGKILL if it outlives `timeout`."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def running_dockerd() -> Iterator[None]:
    """A daemon that answers for the block: the one running, or one started here and stopped after."""
    started = ensure_dockerd()
    try:
        yield
    finally:
        if started is not None:
            stop_dockerd(started)
