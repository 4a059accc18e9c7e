"""Processes on this machine, for the backends whose nodes share its kernel (process, netns).

Spawning (own session, output appended to a log file, the cluster marker in the
environment) and finding every process that carries a cluster marker (for
`fencepost cleanup`); reading a pid's state from /proc, signalling and reaping are
clusters/processes.py's (the lazy filesystem uses them too).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from fencepost.clusters.errors import HostError
from fencepost.clusters.hosts.base import CommandResult
from fencepost.clusters.processes import CLUSTER_ENV
from fencepost.clusters.processes import local_state as local_state
from fencepost.clusters.processes import reap as reap
from fencepost.clusters.processes import signal_local as signal_local


def run_local(host: str, argv: Sequence[str], timeout: float, check: bool,
              env: Mapping[str, str] | None = None) -> CommandResult:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              env=None if env is None else {**os.environ, **env})
    except FileNotFoundError:
        raise HostError(f"on {host}: `{argv[0]}` is not installed (running `{' '.join(argv)}`)") from None
    except subprocess.TimeoutExpired:
        raise HostError(f"on {host}: `{' '.join(argv)}` did not finish within {timeout:g}s") from None
    result = CommandResult(host, tuple(argv), done.returncode, done.stdout, done.stderr)
    return result.check() if check else result


def spawn_local(host: str, argv: Sequence[str], log: str, env: Mapping[str, str], cwd: str | None) -> int:
    """Start `argv` in a new session with stdout/stderr appended to `log`; its pid."""
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        try:
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    cwd=cwd, env={**os.environ, **env}, start_new_session=True)
        except FileNotFoundError:
            raise HostError(f"on {host}: `{argv[0]}` is not installed (spawning `{' '.join(argv)}`)") from None
    return proc.pid


def marked_processes(cluster: str | None = None) -> dict[int, str]:
    """{pid: cluster} of every process whose environment carries the cluster marker
    (of `cluster`, or of any cluster), except this process."""
    found: dict[int, str] = {}
    marker = CLUSTER_ENV.encode() + b"="
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        for item in environ.split(b"\0"):
            if item.startswith(marker):
                name = item[len(marker):].decode(errors="replace")
                if cluster is None or name == cluster:
                    found[int(entry.name)] = name
                break
    return found
