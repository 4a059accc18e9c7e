"""One lazy filesystem: its daemon mounted at a path over a backing folder, the power cut, and the
unmount.

The daemon runs in its own session (it outlives the process that mounted it, as cluster
processes do) with the markers `FENCEPOST_CLUSTER=<cluster>` and `FENCEPOST_LAZYFS=<mount
point>` in its environment, and mounts with the source `fencepost-lazyfs:<cluster>`: that is
how `fencepost cleanup` finds what a crashed run left (clusters/lazyfs/cleanup.py). Its log is
`BACKING/.fencepost-lazyfs/daemon.log`.

A power cut, in this order (each step needs the one before):
1. `drop`: the daemon loses what is not durable and answers every request with EIO from then
   on, so pages a dying process still writes back (mapped index files) cannot bring lost data
   back;
2. the caller's `kill`: every process using the mount ends (kill -9);
3. unmount, lazily when something still holds the mount, and the old daemon is made to exit
   (a process started under `ip netns exec` has its own copy of the mount table, in which the
   mount lives on, served by the old daemon, until that process ends);
4. a new daemon mounts the same backing folder at the same path.
"""
from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from fencepost.clusters.errors import ClusterConfigError, HostError
from fencepost.clusters.lazyfs import control, mounts
from fencepost.clusters.lazyfs.build import check_device, daemon_binary
from fencepost.clusters.processes import CLUSTER_ENV, local_state, signal_local

LAZYFS_ENV = "FENCEPOST_LAZYFS"
LOG = "daemon.log"
MODELS = ("journal", "strict")
CLUSTER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")  # goes into a mount option: no ',' or space
READY_TIMEOUT_S = 15.0
UNMOUNTED_EXIT_S = 2.0  # an unmounted daemon ends at once, unless a mount table copy keeps it serving
DROPPED_EXIT_S = 0.3  # a dropped daemon has nothing to write: told to stop sooner
TERM_EXIT_S = 30.0  # told to stop, a daemon writes every unsynced byte first
POLL_S = 0.02


@dataclass(frozen=True)
class LazyOptions:
    """How a lazy filesystem behaves (chosen at mount, kept across power cuts)."""
    model: str = "journal"  # journal: any fsync makes earlier entry changes durable; strict: a folder's fsync
    mmap_suffixes: tuple[str, ...] = (".index", ".timeindex")  # served through the page cache, so mmap works
    cache_limit_mb: int = 1024  # unsynced bytes held at most; a write past it fails with ENOSPC (0: no limit)
    passthrough: bool = False  # no laziness at all (a baseline for measurements)

    def checked(self) -> LazyOptions:
        if self.model not in MODELS:
            raise ClusterConfigError(f"lazy filesystem model {self.model!r}: choose {' or '.join(MODELS)}")
        if any(not s or "\0" in s or "/" in s for s in self.mmap_suffixes):
            raise ClusterConfigError(f"mmap suffixes {list(self.mmap_suffixes)}: give file name endings like .index")
        if self.cache_limit_mb < 0:
            raise ClusterConfigError(f"cache limit {self.cache_limit_mb} MiB: give 0 (no limit) or more")
        return self

    def argv(self) -> list[str]:
        args = ["--model", self.model, "--cache-limit-mb", str(self.cache_limit_mb)]
        for suffix in self.mmap_suffixes:
            args += ["--mmap-suffix", suffix]
        return args + (["--passthrough"] if self.passthrough else [])

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> LazyOptions:
        return LazyOptions(**{**data, "mmap_suffixes": tuple(data.get("mmap_suffixes", LazyOptions.mmap_suffixes))})


@dataclass(frozen=True)
class CutReport:
    """What a power cut did."""
    lost_bytes: int  # unsynced data dropped, in whole 4 KiB pages
    lost_files: int  # files that had unsynced data
    restored_entries: int  # directory entries put back (unlinked or renamed without a durable point)
    removed_entries: int  # entries taken away (made without a durable point)
    lazy_unmount: bool  # still in use after `kill`: detached; the kernel finishes when its users end
    daemon_before: int
    daemon_after: int


def check_cluster(cluster: str) -> str:
    if not CLUSTER_NAME.fullmatch(cluster):
        raise ClusterConfigError(f"cluster name {cluster!r} cannot name a lazy mount: use letters, digits, "
                                 "'_', '.' and '-' (up to 100), starting with a letter or digit")
    return cluster


@dataclass
class LazyMount:
    mountpoint: Path
    backing: Path
    cluster: str
    options: LazyOptions
    pid: int
    _process: subprocess.Popen | None = field(default=None, repr=False, compare=False)

    # -- making one ---------------------------------------------------------------------------

    @classmethod
    def mount(cls, mountpoint: str | Path, backing: str | Path, cluster: str, options: LazyOptions | None = None,
              *, timeout: float = READY_TIMEOUT_S) -> LazyMount:
        """Mount a lazy filesystem at `mountpoint` over `backing` (both made when missing). Refused
        with a ClusterConfigError saying what to do: a mount point that is one already, is not empty,
        or contains (or lies in) the backing folder; a backing folder another daemon serves; missing
        packages or /dev/fuse."""
        options = (options or LazyOptions()).checked()
        check_cluster(cluster)
        mountpoint, backing = prepare(Path(mountpoint), Path(backing))
        process = start_daemon(mountpoint, backing, cluster, options, timeout)
        return cls(mountpoint, backing, cluster, options, process.pid, process)

    @classmethod
    def attach(cls, state: Mapping[str, Any]) -> LazyMount:
        """The mount `state()` described, from any process."""
        return cls(Path(state["mountpoint"]), Path(state["backing"]), state["cluster"],
                   LazyOptions.from_dict(state.get("options", {})), int(state["pid"]))

    def state(self) -> dict[str, Any]:
        return {"mountpoint": str(self.mountpoint), "backing": str(self.backing), "cluster": self.cluster,
                "pid": self.pid, "options": {**asdict(self.options), "mmap_suffixes": list(self.options.mmap_suffixes)}}

    @property
    def log(self) -> Path:
        return control.state_dir(self.backing) / LOG

    # -- commands ------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Not durable yet: dirty_bytes (cached 4 KiB pages), dirty_files (with unsynced data or size),
        pending_dirs (folders with entry changes), pending_entries (entries that differ from their durable state)."""
        return control.send(self.backing, "stats")

    def checkpoint(self) -> None:
        """Make everything durable, as a sync would."""
        control.send(self.backing, "checkpoint")

    def drop(self) -> dict[str, Any]:
        """Lose everything not durable; every request gets EIO until the next mount."""
        return control.send(self.backing, "drop")

    def users(self) -> list[int]:
        return mounts.users(self.mountpoint)

    # -- ending --------------------------------------------------------------------------------

    def power_cut(self, kill: Callable[[], None] = lambda: None) -> CutReport:
        """drop -> kill() (the caller ends every process using the mount) -> unmount -> mount again
        over the same backing folder. An exception from kill() leaves the mount dropped (every
        request answered with EIO) and mounted: end its users, then unmount() or cleanup."""
        lost = self.drop()
        kill()
        return self.remount(lost)

    def remount(self, lost: Mapping[str, Any]) -> CutReport:
        """Steps 3 and 4 of a power cut, after `drop()` (whose answer is `lost`) and the kill:
        unmount, end the old daemon, mount again over the same backing folder. For a caller that
        cuts several mounts of one machine at once (drop each, kill, then remount each)."""
        lazy = self._detach()
        before = self.pid
        self._await_exit(first_wait=DROPPED_EXIT_S)
        process = start_daemon(self.mountpoint, self.backing, self.cluster, self.options, READY_TIMEOUT_S)
        self.pid, self._process = process.pid, process
        return CutReport(lost.get("lost_bytes", 0), lost.get("lost_files", 0), lost.get("restored_entries", 0),
                         lost.get("removed_entries", 0), lazy, before, self.pid)

    def unmount(self) -> bool:
        """Unmount (what is not durable is made durable first, as a disk's unmount does, unless the
        mount was dropped) and wait for the daemon to end; processes still using it lose it. True
        when the mount was still in use and was detached lazily."""
        if self._alive():
            try:
                self.checkpoint()  # here, where a failure is reported, rather than at the daemon's exit
            except HostError:
                pass  # dropped, or not answering: the unmount goes on
        lazy = self._detach()
        self._await_exit()
        return lazy

    def __enter__(self) -> LazyMount:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unmount()

    def _detach(self) -> bool:
        entry = mounts.mounted_at(self.mountpoint)
        if entry is None or entry.cluster != self.cluster:
            return False
        try:
            mounts.unmount(self.mountpoint)
            return False
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise HostError(f"cannot unmount the lazy filesystem at {self.mountpoint}: {e.strerror}") from None
        try:
            mounts.unmount(self.mountpoint, lazy=True)
        except OSError as e:
            raise HostError(f"cannot unmount the lazy filesystem at {self.mountpoint}, not even lazily "
                            f"({e.strerror}); processes using it: {self.users() or 'none found'}: end them, "
                            f"then run `fencepost cleanup --cluster {self.cluster}`") from None
        return True

    def _alive(self) -> bool:
        if self._process is not None:
            return self._process.poll() is None
        return local_state(self.pid) != "gone" and daemon_of(self.pid) == str(self.mountpoint)

    def _await_exit(self, first_wait: float = UNMOUNTED_EXIT_S) -> None:
        """Wait for the daemon to end after its unmount. One still serving a copy of the mount in
        another mount namespace, or a lazily detached mount's users, is told to stop (SIGTERM: it
        makes what is left durable, unless dropped), then killed."""
        for sig, wait in ((None, first_wait), (signal.SIGTERM, TERM_EXIT_S), (signal.SIGKILL, 5.0)):
            if sig is not None and self._alive():
                signal_local(self.pid, sig)
            deadline = time.monotonic() + wait
            while self._alive() and time.monotonic() < deadline:
                time.sleep(POLL_S)
            if not self._alive():
                self._process = None
                return
        raise HostError(f"the lazy filesystem daemon {self.pid} ({self.mountpoint}) outlived kill -9")


def prepare(mountpoint: Path, backing: Path) -> tuple[Path, Path]:
    """Both folders resolved (made when missing), or a ClusterConfigError saying what is wrong."""
    entry = mounts.mounted_at(os.path.abspath(mountpoint))
    if entry is not None:
        raise ClusterConfigError(mount_point_in_use(mountpoint, entry))
    for folder, what in ((mountpoint, "mount point"), (backing, "backing folder")):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ClusterConfigError(f"lazy filesystem {what} {folder}: {e.strerror}") from None
    mountpoint, backing = Path(os.path.realpath(mountpoint)), Path(os.path.realpath(backing))
    entry = mounts.mounted_at(mountpoint)
    if entry is not None:
        raise ClusterConfigError(mount_point_in_use(mountpoint, entry))
    if mountpoint == backing or backing in mountpoint.parents or mountpoint in backing.parents:
        raise ClusterConfigError(f"the lazy filesystem's mount point {mountpoint} and backing folder {backing} "
                                 "must not contain each other: give two separate folders")
    present = [p.name for p in mountpoint.iterdir()]
    if present:
        raise ClusterConfigError(f"mount point {mountpoint} is not empty ({len(present)} entries, e.g. "
                                 f"{sorted(present)[0]!r}): the lazy filesystem would hide them; give an empty "
                                 "folder (its files belong in the backing folder)")
    return mountpoint, backing


def mount_point_in_use(mountpoint: Path, entry: mounts.MountEntry) -> str:
    if entry.cluster is not None:
        return (f"{mountpoint} is a lazy mount of cluster {entry.cluster} already: unmount it, or remove "
                f"what a crashed run left with `fencepost cleanup --cluster {entry.cluster}`")
    return (f"{mountpoint} is a mount point already ({entry.fstype} {entry.source}): unmount it or choose "
            "another mount point")


def start_daemon(mountpoint: Path, backing: Path, cluster: str, options: LazyOptions,
                 timeout: float) -> subprocess.Popen:
    """Start a daemon and return once its mount answers; the reason, from its log, when it cannot."""
    check_device()
    exe = daemon_binary()
    state = control.state_dir(backing)
    state.mkdir(mode=0o700, exist_ok=True)
    log = state / LOG
    argv = [str(exe), str(backing), str(mountpoint), *options.argv(), "--fsname", mounts.source_for(cluster)]
    with open(log, "ab") as out:
        start = out.tell()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                                   env={**os.environ, CLUSTER_ENV: cluster, LAZYFS_ENV: str(mountpoint)})
    deadline = time.monotonic() + timeout
    while True:
        code = process.poll()
        if code is not None:
            raise ClusterConfigError(f"the lazy filesystem for {mountpoint} did not mount (exit {code}): "
                                     f"{log_since(log, start) or 'no message'}")
        if ready(backing, mountpoint, process.pid):
            return process
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            if mounts.mounted_at(mountpoint) is not None:
                mounts.unmount(mountpoint, lazy=True)
            raise HostError(f"the lazy filesystem for {mountpoint} did not answer within {timeout:g}s; "
                            f"its log ({log}): {log_since(log, start) or 'empty'}")
        time.sleep(POLL_S)


def ready(backing: Path, mountpoint: Path, pid: int) -> bool:
    try:
        answer = control.send(backing, "ping", timeout=2.0)
    except HostError:
        return False
    entry = mounts.mounted_at(mountpoint)
    return bool(answer.get("ready")) and answer.get("pid") == pid and entry is not None \
        and entry.fstype == mounts.FSTYPE


def log_since(log: Path, offset: int) -> str:
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace").strip()[-2000:]
    except OSError:
        return ""


def daemon_of(pid: int) -> str | None:
    """The mount point a lazy filesystem daemon `pid` serves (its environment marker), else None."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    marker = LAZYFS_ENV.encode() + b"="
    for item in environ.split(b"\0"):
        if item.startswith(marker):
            return item[len(marker):].decode(errors="replace")
    return None
