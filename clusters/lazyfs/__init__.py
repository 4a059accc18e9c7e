"""fencepost's own lazy filesystem: a FUSE daemon in C (this folder's *.c, compiled on first use)
that serves a backing folder and keeps every change not yet made durable (fsync/fdatasync,
msync, a folder's fsync) in its own memory, so that a power cut loses exactly that. docs/LAZYFS.md
says what a cut loses and keeps under each metadata model.

- `LazyMount.mount(mountpoint, backing, cluster, LazyOptions(model="journal"))` (mount.py),
  `.power_cut(kill)`, `.stats()`, `.checkpoint()`, `.drop()`, `.unmount()`, `.state()` /
  `LazyMount.attach(state)`;
- `cleanup(clusters=())` (cleanup.py): what crashed runs left, for `fencepost cleanup`;
- `daemon_binary()`, `check_device()` (build.py): the compiled daemon, the FUSE device.
"""
from __future__ import annotations

from fencepost.clusters.lazyfs.build import check_device, daemon_binary
from fencepost.clusters.lazyfs.cleanup import cleanup
from fencepost.clusters.lazyfs.mount import CutReport, LazyMount, LazyOptions

__all__ = ["CutReport", "LazyMount", "LazyOptions", "check_device", "cleanup", "daemon_binary"]
