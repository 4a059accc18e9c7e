"""The final.jsonl writer: the run's final reads (`read` and `read-state` lines) and every
replica's log (`replica` and `replica-state` lines), docs/FORMATS.md.

Each group of lines is added whole or not at all: the file is rewritten beside itself with
the new lines, fsynced and renamed over (harness/rundir/atomic.py). A partition's read cut
short by a killed harness would otherwise look complete, and the checkers would call the
writes after the cut lost; a replica's log cut short would look truncated.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import orjson

from fencepost.harness.rundir.atomic import write_atomically
from fencepost.harness.rundir.names import FINAL_FILE

KINDS = ("read", "read-state", "replica", "replica-state")


def final_path(run_dir: Path) -> Path:
    return Path(run_dir) / FINAL_FILE


def add_final_lines(path: Path, lines: Sequence[bytes]) -> int:
    """final.jsonl at `path` with `lines` (one JSON document each, no newline) added in one
    rename after an fsync: a crash leaves the old file or the new one, never a part. How many."""
    path = Path(path)
    old = path.read_bytes() if path.exists() else b""
    if old and not old.endswith(b"\n"):
        old += b"\n"  # a file ended by hand without one: the new lines start on their own
    write_atomically(path, old + b"".join(line + b"\n" for line in lines))
    return len(lines)


def encode_lines(documents: Iterable[dict[str, Any]]) -> list[bytes]:
    """final.jsonl lines of `documents`, each of a known kind (a programming error otherwise)."""
    lines = []
    for document in documents:
        if document.get("kind") not in KINDS:
            raise ValueError(f"not a final.jsonl line kind: {document.get('kind')!r}; one of {', '.join(KINDS)}")
        lines.append(orjson.dumps(document))
    return lines
