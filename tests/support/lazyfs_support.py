"""Helpers of the lazy filesystem tests: a fixture factory of real mounts (unmounted and cleaned
up after each test), the exact content of a tree, and the skip when FUSE cannot work here
(a failure under CI: tests/conftest.py)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator

import pytest

from fencepost.clusters.errors import ClusterConfigError
from fencepost.clusters.lazyfs import LazyMount, LazyOptions, check_device, cleanup, daemon_binary

CLUSTER = f"pytest-lazyfs-{os.getpid()}"
DIR = "<dir>"


def needs_fuse() -> None:
    if os.geteuid() != 0:
        pytest.skip("lazy filesystem tests mount FUSE filesystems as root")
    try:
        check_device()
        daemon_binary()
    except ClusterConfigError as e:
        pytest.skip(str(e))


def tree(root: Path, hide: str | None = None) -> dict[str, bytes | str]:
    """{relative path: content} of every file and folder (DIR) under root, but `hide` at the top."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        if folder == str(root) and hide in dirs:
            dirs.remove(hide)
        for name in dirs:
            found[os.path.relpath(os.path.join(folder, name), root)] = DIR
        for name in files:
            found[os.path.relpath(os.path.join(folder, name), root)] = Path(folder, name).read_bytes()
    return found


def backing_tree(root: Path) -> dict[str, bytes | str]:
    """The tree of a backing folder without the daemon's state folder."""
    return tree(root, hide=".fencepost-lazyfs")


def write(path: Path, data: bytes, sync: bool = False) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())


def fsync_path(path: Path) -> None:
    """fsync of a file or a folder by its name."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


MountFactory = Callable[..., LazyMount]


@pytest.fixture
def lazy(tmp_path: Path) -> Iterator[MountFactory]:
    """make(model="journal", name="fs", **options) -> a LazyMount at tmp/<name>-mnt over tmp/<name>-backing."""
    needs_fuse()
    made: list[LazyMount] = []

    def make(model: str = "journal", name: str = "fs", **options) -> LazyMount:
        mount = LazyMount.mount(tmp_path / f"{name}-mnt", tmp_path / f"{name}-backing", CLUSTER,
                                LazyOptions(model=model, **options))
        made.append(mount)
        return mount
    yield make
    for mount in made:
        try:
            mount.unmount()
        except Exception:  # noqa: BLE001 - the sweep below removes it
            pass
    cleanup([CLUSTER])
