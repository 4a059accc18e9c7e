"""This machine's mount table as fencepost's lazy filesystems appear in it, unmounting, and the
processes that keep a mount busy.

A lazy mount has the type `fuse.fencepost-lazyfs` and the source `fencepost-lazyfs:<cluster>`,
so it says whose it is. The table read is this process's mount namespace: a process started
under `ip netns exec` (or `unshare -m`) holds a copy of it, where a mount unmounted here lives
on until that process ends.
"""
from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Collection

FSTYPE = "fuse.fencepost-lazyfs"
SOURCE_PREFIX = "fencepost-lazyfs:"
MNT_DETACH = 2
_OCTAL = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class MountEntry:
    mountpoint: str
    fstype: str
    source: str

    @property
    def cluster(self) -> str | None:
        """The cluster of a fencepost lazy mount, else None."""
        if self.fstype != FSTYPE or not self.source.startswith(SOURCE_PREFIX):
            return None
        return self.source[len(SOURCE_PREFIX):]


def source_for(cluster: str) -> str:
    return SOURCE_PREFIX + cluster


def unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[MountEntry]:
    entries = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 2:
            continue
        entries.append(MountEntry(unescape(fields[4]), tail[0], unescape(tail[1])))
    return entries


def mount_table() -> list[MountEntry]:
    return parse_mountinfo(Path("/proc/self/mountinfo").read_text())


def mounted_at(path: str | Path) -> MountEntry | None:
    """What is mounted at `path` (the topmost mount), or None when it is no mount point."""
    found = [m for m in mount_table() if m.mountpoint == str(path)]
    return found[-1] if found else None


def lazy_mounts(clusters: Collection[str] = ()) -> list[MountEntry]:
    """Every fencepost lazy mount (of `clusters` when named), deepest first."""
    ours = [m for m in mount_table() if m.cluster is not None and (not clusters or m.cluster in clusters)]
    return sorted(ours, key=lambda m: m.mountpoint.count("/"), reverse=True)


def unmount(path: str | Path, lazy: bool = False) -> None:
    """Unmount `path`; lazy detaches it now and lets the kernel finish when its users are gone.
    OSError with the errno otherwise (EBUSY: in use; EINVAL: not a mount point)."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.umount2(os.fsencode(str(path)), MNT_DETACH if lazy else 0) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(path))
        return
    helper = shutil.which("fusermount3")
    if helper is None:
        raise OSError(errno.ENOENT, "fusermount3 is not on PATH (Debian package fuse3)", str(path))
    done = subprocess.run([helper, "-u", *(["-z"] if lazy else []), str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        busy = "busy" in done.stderr
        raise OSError(errno.EBUSY if busy else errno.EINVAL, done.stderr.strip(), str(path))


def users(path: str | Path) -> list[int]:
    """Pids of the processes whose cwd, root, open files or mappings lie under `path` (this
    process's view; those it may not look at are left out)."""
    prefix = str(path).rstrip("/") + "/"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        if _uses(entry, str(path), prefix):
            found.append(int(entry.name))
    return sorted(found)


def _uses(proc: Path, path: str, prefix: str) -> bool:
    def under(target: str) -> bool:
        return target == path or target.startswith(prefix)
    try:
        links = [proc / "cwd", proc / "root", *(proc / "fd").iterdir()]
    except OSError:
        return False
    for link in links:
        try:
            if under(os.readlink(link)):
                return True
        except OSError:
            continue
    try:
        maps = (proc / "maps").read_text()
    except OSError:
        return False
    return any(under(line.split(None, 5)[5]) for line in maps.splitlines() if len(line.split(None, 5)) == 6)
