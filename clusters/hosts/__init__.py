"""Host backends (docs/hosts/): netns, process, docker, ssh.

Each backend is a module here with:
- `provision(cluster, nodes, workdir, options) -> HostSet` — fresh hosts named `nodes`;
  `workdir` is a local folder for the cluster's files (the netns and process
  backends put node directories under it); `options` a mapping of
  backend-specific settings, validated there (ClusterConfigError names a bad one);
- `attach(state) -> HostSet` — the same hosts again from `HostSet.state()`;
- `cleanup(clusters=()) -> list[str]` — remove what crashed clusters (all, or only
  the named ones) left on this backend (only things whose names start with the
  project's prefix); what it removed;
- `OPTIONS`: the names of its options, and optionally `check_options(options, nodes)`:
  what can be judged of their values before anything exists (ClusterConfigError).
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Mapping

from fencepost.clusters.errors import ClusterConfigError

BACKENDS = ("netns", "process", "docker", "ssh")


def backend_module(name: str) -> ModuleType:
    if name not in BACKENDS:
        raise ClusterConfigError(f"unknown host backend {name!r}: choose one of {', '.join(BACKENDS)}")
    return importlib.import_module(f"fencepost.clusters.hosts.{name}")


def backend_option_names(name: str) -> tuple[str, ...]:
    """The options backend `name` takes."""
    return tuple(getattr(backend_module(name), "OPTIONS", ()))


def check_backend_options(name: str, options: Mapping[str, Any], nodes: int) -> None:
    """Backend `name`'s options for a cluster of `nodes` brokers, as far as they can be judged
    before anything exists (ClusterConfigError names what is wrong): their names, and what
    the backend checks of their values up front (`check_options`)."""
    names = backend_option_names(name)
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise ClusterConfigError(f"the {name} backend has no option {unknown[0]!r}; its options: "
                                 f"{', '.join(names) or 'none'}")
    check = getattr(backend_module(name), "check_options", None)
    if check is not None:
        check(options, nodes)


def default_subnet(name: str) -> str | None:
    """The network backend `name` puts a cluster on when its options name none (None: it has
    no such default)."""
    return getattr(backend_module(name), "DEFAULT_SUBNET", None)


def required_tools(name: str) -> dict[str, str]:
    """The programs backend `name` needs on this machine's PATH -> the Debian package of each."""
    return dict(getattr(backend_module(name), "REQUIRED_TOOLS", {}))


def kernel_shaping_unavailable(name: str) -> str | None:
    """Why backend `name` cannot shape packets (the netem fault) on this machine's kernel, known
    before any cluster exists; None when it can or when only a node can tell (the backends
    whose nodes run on this kernel ask it: `KERNEL_SHAPING`)."""
    if not getattr(backend_module(name), "KERNEL_SHAPING", False):
        return None
    from fencepost.clusters.hosts.tc import kernel_netem_unavailable
    return kernel_netem_unavailable()


def default_backend() -> str:
    """netns where it can work (Linux, root, `ip` and `iptables` on PATH: partitions possible), else process."""
    return "process" if netns_unavailable() else "netns"


def netns_unavailable() -> str | None:
    """Why the default cannot be netns on this machine, or None when it can."""
    from fencepost.clusters.hosts.netns import unavailable_reason  # the backend owns its requirements
    return unavailable_reason()
