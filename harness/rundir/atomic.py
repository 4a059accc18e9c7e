"""Writing a file whole or not at all: the one implementation every run file, page, plot,
export and campaign file is written with (docs/RELIABILITY.md, 7.2).

- `atomic_file(path)` yields a file object for `path`: what is written goes to a temporary
  file beside it, `.<name>.<16 hex>.partial`, made with O_EXCL (so two writers, processes or
  threads, never share one) and held with an exclusive lock while it is written; on success
  it is fsynced, renamed over `path` and the folder fsynced; on an error it is removed and
  `path` keeps what it held. `write_atomically(path, data)` is that for bytes or a str.
- Only a regular file is ever replaced: a `path` that exists as anything else (a symlink, a
  FIFO, a device, a folder) is refused with `NotRegularFile` (a BadInput: exit 254) naming
  it, before anything is written, and left as it was.
- `output_folder(parent, name)` is a folder fencepost fills with its own output (linear/,
  trace/, plots/): a symlink there is replaced by a real folder (the link removed, never its
  target, never followed); anything else that is not a folder is refused.
- Leftover temporary files of killed writers (`.<name>.<16 hex>.partial`, and the
  `.<name>.<pid>.partial` of earlier releases) are removed by the next writer of that file
  (`remove_stale_partials`) and by `fencepost cleanup` (`remove_stale_partials_under`); one
  whose lock a live writer holds is left alone.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.safe_names import contained, safe_name

PARTIAL_SUFFIX = ".partial"
# A temporary file's name starts with `.` and the file's name, cut and hashed (safe_names.py)
# when over this many bytes, so that the whole stays below the 255 bytes of a file name.
_STEM_BYTES = 200
_PARTIAL_MIDDLE = re.compile(r"[0-9a-f]{16}|[0-9]+")  # this release's random part, or an earlier one's pid
_ANY_PARTIAL = re.compile(r"\..+\.(?:[0-9a-f]{16}|[0-9]+)\.partial")


class NotRegularFile(BadInput, OSError):
    """A path fencepost was to write is there as something else than a regular file: a BadInput
    (exit 254), and an OSError too, so that a caller that says "cannot write X" and what to do
    about it (check's --no-write) says so for this as well; its strerror is the whole message."""

    def __init__(self, path: Path, message: str):
        super().__init__(errno.EEXIST, message, str(path))

    def __str__(self) -> str:
        return str(self.strerror)


def write_atomically(path: Path | str, data: bytes | str) -> None:
    """`path` holds `data` whole or its old content, never a part (module doc). A str is
    written as UTF-8."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_file(path) as out:
        out.write(payload)


@contextmanager
def atomic_file(path: Path | str, mode: str = "wb", encoding: str | None = None) -> Iterator[IO[Any]]:
    """A file object whose content replaces `path` when the block ends without an error
    (module doc); `mode` "wb" or "w" (text, `encoding` default UTF-8)."""
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_file writes with mode 'wb' or 'w', not {mode!r}")
    path = Path(path)
    refuse_unless_regular(path)
    remove_stale_partials(path.parent, path.name)
    fd, tmp = _new_partial(path)
    try:
        with os.fdopen(fd, mode, encoding=(encoding or "utf-8") if mode == "w" else None) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
            refuse_unless_regular(path)  # made while we wrote?
            os.replace(tmp, path)  # the lock goes with the close, after the rename
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_directory(path.parent)


def refuse_unless_regular(path: Path | str) -> None:
    """NotRegularFile unless `path` is missing or a regular file (a symlink is not followed)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(path, f"{path} is {describe_kind(path, st.st_mode)}, not a regular file: fencepost "
                             "replaces only regular files and left it as it was; move it away, or write "
                             "somewhere else")


def describe_kind(path: Path, mode: int) -> str:
    if stat.S_ISLNK(mode):
        try:
            return f"a symbolic link (to {os.readlink(path)})"
        except OSError:
            return "a symbolic link"
    for test, kind in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def output_folder(parent: Path | str, name: str) -> Path:
    """`parent`/`name`, a real folder inside `parent`, made if missing: a symlink there is
    removed (not its target) and a folder made in its place; a file or anything else that is
    not a folder is refused (BadInput), and left as it was."""
    path = contained(parent, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        path.unlink()
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{path} is {describe_kind(path, st.st_mode)}, not a folder: fencepost writes its "
                       f"{name}/ pages there; move it away and try again")
    path.mkdir(exist_ok=True)
    if not stat.S_ISDIR(os.lstat(path).st_mode):  # a link made meanwhile
        raise BadInput(f"{path} changed while fencepost made it a folder; try again")
    return path


def sync_directory(directory: Path) -> None:
    """fsync `directory`, so that the names made or renamed in it are durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def point_latest(link: Path, target: Path) -> None:
    """`link` -> `target` (relative), replacing an older link in one rename."""
    relative = os.path.relpath(target, link.parent)
    while True:
        tmp = link.with_name(f".{link.name}.{secrets.token_hex(8)}.link")
        try:
            tmp.symlink_to(relative, target_is_directory=True)
            break
        except FileExistsError:
            continue
    try:
        os.replace(tmp, link)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# --- temporary files ----------------------------------------------------------------


def _stem(name: str) -> str:
    return name if len(os.fsencode(name)) <= _STEM_BYTES else safe_name(name, 100)


def _new_partial(path: Path) -> tuple[int, Path]:
    """A new temporary file beside `path`, open for writing and locked: (fd, its path)."""
    stem = _stem(path.name)
    while True:
        tmp = path.with_name(f".{stem}.{secrets.token_hex(8)}{PARTIAL_SUFFIX}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
        except FileExistsError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits while a sweep looks at it
            if _same_file(tmp, os.fstat(fd)):
                return fd, tmp
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # a sweep took it for a killed writer's between the open and the lock: again


def _same_file(path: Path, st: os.stat_result) -> bool:
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def _partial_of(name: str) -> Callable[[str], bool]:
    """Whether an entry's name is a temporary file of a writer of `name` (a test on names)."""
    prefix = f".{_stem(name)}."

    def test(entry: str) -> bool:
        return (entry.startswith(prefix) and entry.endswith(PARTIAL_SUFFIX)
                and _PARTIAL_MIDDLE.fullmatch(entry, len(prefix), len(entry) - len(PARTIAL_SUFFIX)) is not None)
    return test


def remove_stale_partials(folder: Path | str, name: str | None = None) -> list[Path]:
    """Remove the temporary files killed writers left in `folder` (of the file `name`, or of
    any file); returns them. A live writer's (its lock held) and anything but a regular file
    are left alone."""
    is_partial = _ANY_PARTIAL.fullmatch if name is None else _partial_of(name)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        if entry.name.endswith(PARTIAL_SUFFIX) and is_partial(entry.name) and _remove_if_stale(Path(entry.path)):
            removed.append(Path(entry.path))
    return removed


def remove_stale_partials_under(root: Path | str) -> list[Path]:
    """remove_stale_partials in `root` and every folder under it (links not followed)."""
    removed = []
    for folder, _, _ in os.walk(root):
        removed += remove_stale_partials(folder)
    return removed


def _remove_if_stale(path: Path) -> bool:
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live writer's
        if not _same_file(path, st):
            return False  # renamed into place meanwhile
        path.unlink()
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
