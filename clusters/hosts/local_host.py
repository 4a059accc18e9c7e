"""What the hosts that share this machine's kernel and filesystem (process, netns) do alike:
signals and process states by pid from /proc, and files copied in place."""
from __future__ import annotations

import shutil
import signal
from pathlib import Path

from fencepost.clusters.hosts.base import Host, ProcessHandle, ProcessState
from fencepost.clusters.hosts.local_process import local_state, signal_local


class LocalHost(Host):
    def signal(self, handle: ProcessHandle, sig: signal.Signals) -> None:
        signal_local(handle.pid, sig)

    def process_state(self, handle: ProcessHandle) -> ProcessState:
        return local_state(handle.pid)

    def put(self, local: Path, remote: str) -> None:
        Path(remote).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, remote)

    def get(self, remote: str, local: Path) -> None:
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(remote, local)
