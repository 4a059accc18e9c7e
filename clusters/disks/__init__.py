"""The nodes' lazy disks (docs/LAZYFS.md): which folders of a node are lazy filesystems and
who mounts, cuts and unmounts them (`LazyDisks`, lazy_disks.py); what every node's disk is
whichever backend holds it (`NodeDisk`, `CutLoss`, node_disk.py); the disk of a docker node,
whose daemon runs inside its container (`ContainerDisk`, container_disk.py). The lazy
filesystem itself, its daemon and its control socket are clusters/lazyfs/."""
from __future__ import annotations

from fencepost.clusters.disks.lazy_disks import LazyDisks
from fencepost.clusters.disks.node_disk import CutLoss, NodeDisk, backing_folder

__all__ = ["CutLoss", "LazyDisks", "NodeDisk", "backing_folder"]
