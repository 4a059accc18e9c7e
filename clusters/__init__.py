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

from clusters.errors import ClusterConfigError, HostError, NotRejoining
from clusters.hosts import (
    BACKENDS, backend_option_names, check_backend_options, default_backend, default_subnet,
    kernel_shaping_unavailable, netns_unavailable, required_tools,
)
from clusters.modes import FLUSH_MODES, RELEASE_PROTOCOL, TRUNCATION_MODES, TRUNCATIONS
from clusters.systems import check_system, check_system_options, default_truncation, is_kafka


# Imported when first asked for (each pulls in machinery of its own), so that
# `from clusters import is_kafka` stays cheap for the CLI: name -> its module.
_LAZY = {"Cluster": "clusters.cluster", "ClusterSpec": "clusters.cluster",
         "TopicSpec": "clusters.systems.base", "PartitionView": "clusters.systems.base",
         "fatal_markers": "clusters.systems.markers", "java_version": "clusters.systems.kafka.dist",
         "recorded_clusters": "clusters.store", "state_path": "clusters.store", "check_name": "clusters.store",
         "cleanup_everything": "clusters.cleanup", "check_device": "clusters.lazyfs"}


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
