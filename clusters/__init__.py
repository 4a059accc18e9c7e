"""Where and what runs: hosts (netns, process, docker, ssh) and systems (own brokers, stock
Kafka). The harness reaches clusters through what this module names; the modules behind it
are the backends' and systems' own.

- `Cluster`, `ClusterSpec`: a cluster brought up, attached to, driven and torn down;
- `BACKENDS`, `default_backend()`, `netns_unavailable()`, `backend_option_names(backend)`,
  `check_backend_options(backend, options, nodes)`, `default_subnet(backend)`,
  `required_tools(backend)`: the host backends, their options and needs;
- `java_version()`: the Java that stock Kafka runs on;
- `is_kafka(system)`, `default_truncation(system)`, `check_system(system)`,
  `check_system_options(system, options)`: the systems and their options, judged before
  anything runs;
- `TRUNCATIONS`, `TRUNCATION_MODES`, `RELEASE_PROTOCOL`, `FLUSH_MODES`: the modes (modes.py);
- `TopicSpec`, `PartitionView`: a topic to create and a partition as the cluster sees it;
  `fatal_markers(text)`: the lines of a node's log that say it gave up;
- `recorded_clusters()`, `state_path(dir)`, `check_name(name)`, `cleanup_everything()`: the
  clusters left running and what crashed ones left behind; `check_device()`: the FUSE device
  the lazy filesystem needs;
- `ClusterConfigError`, `HostError`, `NotRejoining`: what goes wrong (errors.py).
"""
from __future__ import annotations

from fencepost.clusters.errors import ClusterConfigError, HostError, NotRejoining
from fencepost.clusters.hosts import (
    BACKENDS,
    backend_option_names,
    check_backend_options,
    default_backend,
    default_subnet,
    kernel_shaping_unavailable,
    netns_unavailable,
    required_tools,
)
from fencepost.clusters.modes import FLUSH_MODES, RELEASE_PROTOCOL, TRUNCATION_MODES, TRUNCATIONS
from fencepost.clusters.systems import check_system, check_system_options, default_truncation, is_kafka

# Imported when first asked for (each pulls in machinery of its own), so that
# `from clusters import is_kafka` stays cheap for the CLI: name -> its module.
_LAZY = {"Cluster": "fencepost.clusters.cluster", "ClusterSpec": "fencepost.clusters.cluster",
         "TopicSpec": "fencepost.clusters.systems.base", "PartitionView": "fencepost.clusters.systems.base",
         "fatal_markers": "fencepost.clusters.systems.markers",
         "java_version": "fencepost.clusters.systems.kafka.dist",
         "recorded_clusters": "fencepost.clusters.state_file", "state_path": "fencepost.clusters.state_file",
         "check_name": "fencepost.clusters.state_file",
         "cleanup_everything": "fencepost.clusters.cleanup", "check_device": "fencepost.clusters.lazyfs"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'clusters' has no attribute {name!r}")


__all__ = ["BACKENDS", "ClusterConfigError", "FLUSH_MODES", "HostError", "NotRejoining", "RELEASE_PROTOCOL",
           "TRUNCATIONS", "TRUNCATION_MODES", "backend_option_names", "check_backend_options", "check_system",
           "check_system_options", "default_backend", "default_subnet", "default_truncation", "is_kafka",
           "kernel_shaping_unavailable", "netns_unavailable",
           "required_tools", *_LAZY]
