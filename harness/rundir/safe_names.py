"""File names made of data, and where they may go: the one owner (docs/RELIABILITY.md, 7.2).

A topic, a value, an offset or a name read from a run's files is anyone's bytes: `../../X`,
a NUL, 300 characters. Every file name built from such data goes through `safe_name`, and
every file fencepost writes under a folder of its own goes through `contained`, which
refuses a path whose folder, resolved, lies outside that folder resolved.

`safe_name(text)` is `text` itself when that is already a harmless name: letters, digits,
`_`, `.` and `-` only, not starting with `.` or `-`, at most `MAX_NAME` characters. Any
other text gets a readable prefix (each other character as `_`, leading dots and dashes
dropped) and `~` with 16 hex digits of the SHA-256 of the text: at most `MAX_NAME`
characters, and never one of the kept names (those have no `~`), so two texts get two names
(but for a collision of 64 bits of SHA-256).
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from fencepost.harness.errors import BadInput

MAX_NAME = 120  # characters of a name safe_name makes (a page adds `.html`; file systems allow 255 bytes)
HASH_CHARS = 16
_KEPT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_OTHER = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(text: str, limit: int = MAX_NAME) -> str:
    """A name for a file made of `text`: one path component of at most `limit` characters
    from `[A-Za-z0-9._~-]`, never `.`, `..` or a name starting with `.`, `-` or `~`
    (module doc). `limit` is at least HASH_CHARS + 2."""
    if len(text) <= limit and _KEPT.fullmatch(text):
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    readable = _OTHER.sub("_", text[:limit]).lstrip(".-")[:limit - HASH_CHARS - 1] or "x"
    return f"{readable}~{digest}"


def plain_name(name: str) -> bool:
    """Whether `name` is one path component that names an entry of a folder (no `/`, no NUL,
    not empty, `.` or `..`)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\x00" not in name


def contained(folder: Path | str, *names: str) -> Path:
    """`folder`/`names...`, refused (BadInput) unless each name is a plain name and the path's
    folder, with every link in it resolved, lies inside `folder` resolved. The last name is not
    resolved: a link there is the writer's to refuse (harness/rundir/atomic.py)."""
    folder = Path(folder)
    path = folder.joinpath(*names)
    bad = next((name for name in names if not plain_name(name)), None)
    if bad is not None:
        raise BadInput(f"{path}: {bad!r} is not a plain file name; fencepost writes only inside {folder} "
                       "(this is a bug of fencepost: a name made of data missed harness/rundir/safe_names.py)")
    root = folder.resolve()
    where = path.parent.resolve()
    if not where.is_relative_to(root):
        raise BadInput(f"{path} lies in {where}, outside {root} (a link on the way leads out); fencepost "
                       f"writes only inside {folder}: replace the link by a folder, or remove it")
    return path
