"""Errors of the clusters package, split by who must act.

`ClusterConfigError` is a request the cluster cannot honour as configured (a
partition on the process backend, an unknown backend, a subnet in use, a
missing tool): the CLI prints it and exits 254. `HostError` is a host or a
process on it not doing what was asked (a command failed, a process died on
start, a node unreachable); the message names the node, the command and what
came back.
"""
from __future__ import annotations


class ClusterConfigError(ValueError):
    """The cluster cannot be built or asked this as configured; the message says what to change."""


class HostError(RuntimeError):
    """A host, or a process on it, failed; the message names which, what was asked and what came back."""


class NotRejoining(HostError):
    """A wait for a replica to rejoin an ISR that cannot end well: its process exited, or it gave
    the partition up (a fatal marker in its log). The message says which and what it logged."""
