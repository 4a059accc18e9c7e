"""The daemon's binary: compiled from this package's C sources on first use, with the system C
compiler and libfuse3, into `$XDG_CACHE_HOME/fencepost/lazyfs/<hash of the sources and flags>/`
(default `~/.cache/...`). Changed sources get a folder of their own, so an editable install
always runs what its files say; a folder appears whole (built aside, then renamed) or not at all.

What is missing is said with the Debian package that brings it: a C compiler (`gcc`),
`pkg-config`, the libfuse3 headers (`libfuse3-dev`), the FUSE device and tools (`fuse3`).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from fencepost.clusters.errors import ClusterConfigError

HERE = Path(__file__).resolve().parent
SOURCES = ("lazyfs.h", "log.c", "pages.c", "nodes.c", "names.c", "control.c", "ops.c", "main.c")
BINARY = "fencepost-lazyfs"
CFLAGS = ("-O2", "-g", "-std=gnu11", "-Wall", "-Wextra", "-pthread")
COMPILE_TIMEOUT_S = 300.0
FUSE_DEVICE = "/dev/fuse"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fencepost" / "lazyfs"


def source_hash(folder: Path = HERE, flags: tuple[str, ...] = CFLAGS) -> str:
    digest = hashlib.sha256(" ".join(flags).encode())
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def daemon_binary(cache: Path | None = None) -> Path:
    """The compiled daemon for these sources, built now if it is not in the cache yet."""
    folder = (cache or cache_root()) / source_hash()
    exe = folder / BINARY
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe
    return compile_daemon(folder, exe)


def compiler() -> str:
    found = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not found:
        raise ClusterConfigError("the lazy filesystem is compiled on first use and no C compiler (cc, gcc) is on "
                                 "PATH: install one (Debian: apt-get install gcc)")
    return found


def fuse_flags() -> tuple[list[str], list[str]]:
    """(compile flags, link flags) of libfuse3, from pkg-config."""
    pkg_config = shutil.which("pkg-config")
    if not pkg_config:
        raise ClusterConfigError("the lazy filesystem finds libfuse3 with pkg-config, which is not on PATH: "
                                 "install it (Debian: apt-get install pkg-config libfuse3-dev)")
    done = subprocess.run([pkg_config, "--cflags", "--libs", "fuse3"], capture_output=True, text=True)
    if done.returncode != 0:
        raise ClusterConfigError("the lazy filesystem needs the libfuse3 headers and pkg-config does not know "
                                 f"fuse3 ({done.stderr.strip() or 'no fuse3.pc'}): install them "
                                 "(Debian: apt-get install libfuse3-dev)")
    flags = done.stdout.split()
    return [f for f in flags if not f.startswith(("-l", "-L"))], [f for f in flags if f.startswith(("-l", "-L"))]


def compile_command(output: Path, extra: tuple[str, ...] = ()) -> list[str]:
    cflags, libs = fuse_flags()
    sources = [str(HERE / name) for name in SOURCES if name.endswith(".c")]
    return [compiler(), *CFLAGS, *extra, *cflags, "-o", str(output), *sources, *libs]


def compile_daemon(folder: Path, exe: Path) -> Path:
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=folder.parent))
    try:
        argv = compile_command(work / BINARY)
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ClusterConfigError(f"compiling the lazy filesystem took over {COMPILE_TIMEOUT_S:g}s: "
                                     f"{' '.join(argv)}") from None
        if done.returncode != 0:
            raise ClusterConfigError(f"the lazy filesystem did not compile (`{' '.join(argv)}`):\n"
                                     f"{(done.stderr or done.stdout).strip()[-3000:]}")
        try:
            os.replace(work, folder)
        except OSError:
            if not exe.is_file():  # not another process's build that won the race
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return exe


def check_device(device: str = FUSE_DEVICE) -> None:
    """The kernel's FUSE device is there, and (not as root) the setuid helper that mounts with it."""
    if not os.path.exists(device):
        raise ClusterConfigError(f"{device} is missing, and a lazy filesystem is a FUSE mount: install fuse3 "
                                 "(Debian: apt-get install fuse3) and load the module (modprobe fuse); in a "
                                 "container, pass the device (docker run --device /dev/fuse --cap-add SYS_ADMIN)")
    if os.geteuid() != 0 and not shutil.which("fusermount3"):
        raise ClusterConfigError("mounting a lazy filesystem as a user needs fusermount3, not on PATH: install "
                                 "fuse3 (Debian: apt-get install fuse3), or run as root")
