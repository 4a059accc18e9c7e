"""What every node's lazy disk is, whichever backend holds it (clusters/disks/lazy_disks.py picks and
manages them; the docker backend's own is clusters/disks/container_disk.py): a `NodeDisk`, what a
power cut of it lost (`CutLoss`), and where a mount's durable state lives (`backing_folder`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath
from typing import Any, Callable, Mapping

from fencepost.clusters.hosts.base import Host
from fencepost.clusters.lazyfs import CutReport

DURABLE = "durable"  # <workdir>/durable/...: the backing folders


@dataclass(frozen=True)
class CutLoss:
    """What a power cut of one node lost, over its disks."""
    lost_bytes: int  # unsynced data dropped, in whole 4 KiB pages
    lost_files: int  # files that had unsynced data
    restored_entries: int  # directory entries put back (removed or renamed since their durable point)
    removed_entries: int  # entries taken away (made since the last durable point)

    @staticmethod
    def of(reports: list[CutReport] | list[Mapping[str, Any]]) -> CutLoss:
        def total(name: str) -> int:
            return sum(int(r.get(name, 0) if isinstance(r, Mapping) else getattr(r, name)) for r in reports)
        return CutLoss(total("lost_bytes"), total("lost_files"), total("restored_entries"), total("removed_entries"))

    def to_json(self) -> dict[str, int]:
        return asdict(self)


def backing_folder(host: Host, folder: str) -> str:
    """The backing folder of a lazy mount at `folder` (a folder inside the node's workdir)."""
    inside = PurePosixPath(folder).relative_to(host.workdir)
    return str(PurePosixPath(host.workdir) / DURABLE / inside)


class NodeDisk(ABC):
    """The lazy mounts of one node."""
    node: str

    @abstractmethod
    def power_cut(self, kill: Callable[[], None]) -> CutLoss:
        """Drop every mount, `kill()` (the caller ends the node's processes), mount each again."""

    @abstractmethod
    def writeback(self) -> None:
        """Make everything durable, as the kernel writing dirty pages back would."""

    @abstractmethod
    def unmount(self) -> None:
        """A clean unmount of each (everything durable first); HostError naming what stays mounted."""

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """JSON-able; `attach_disk(host, state)` rebuilds it."""

    @property
    @abstractmethod
    def folders(self) -> list[str]:
        """The mount points."""

    @property
    def kills_with_signals(self) -> bool:
        """Whether a kill of the node must signal its processes rather than use the backend's own
        kill (docker's would end the daemon too, and a kill -9 keeps what a power cut loses)."""
        return False

    @property
    @abstractmethod
    def backings(self) -> list[str]:
        """Their backing folders, on this machine, in the same order: the durable state (what a
        power cut leaves; while the node is down after one, exactly what it will find)."""
