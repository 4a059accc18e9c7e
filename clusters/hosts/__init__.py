"""Host backends (docs/hosts/): netns, process, docker, ssh.

Each backend is a module here with:
- `provision(cluster, nodes, workdir, options) -> HostSet` — fresh hosts named `nodes`;
  `workdir` is a local folder for the cluster's files (the netns and process
  backends put node directories under it); `options` a mapping of
  backend-specific settings, validated there (ClusterConfigError names a bad one);
- `attach(state) -> HostSet` — the same hosts again from `HostSet.state()`;
- `cleanup(clusters=()) -> list[str]` — remove what crashed clusters (all, or only
  the named ones) left on this backend (only things whose names start with the
  project's prefix); what it removed.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from clusters.errors import ClusterConfigError

BACKENDS = ("netns", "process", "docker", "ssh")


def backend_module(name: str) -> ModuleType:
    if name not in BACKENDS:
        raise ClusterConfigError(f"unknown host backend {name!r}: choose one of {', '.join(BACKENDS)}")
    return importlib.import_module(f"clusters.hosts.{name}")


def default_backend() -> str:
    """netns where it can work (Linux, root, `ip` and `iptables` on PATH: partitions possible), else process."""
    return "process" if netns_unavailable() else "netns"


def netns_unavailable() -> str | None:
    """Why the default cannot be netns on this machine, or None when it can."""
    from clusters.hosts.netns import unavailable_reason  # the backend owns its requirements
    return unavailable_reason()
