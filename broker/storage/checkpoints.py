"""Kafka's checkpoint files: a version line, an entry count line, then one entry per line.

Owns the file format (CheckpointFile.java) and its atomic replacement: write
`<file>.tmp`, fsync it, rename over the file, fsync the directory. Two users:
- `replication-offset-checkpoint` in the data dir root: `<topic> <partition> <hw>`;
- `leader-epoch-checkpoint` in a partition dir: `<epoch> <start offset>`.
Both at version 0, fields separated by one space, lines ended by `\\n`.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

CHECKPOINT_VERSION = 0
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class CheckpointError(ValueError):
    """A checkpoint file that does not follow the format; the message names file, line and fix."""


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(path: Path, entries: Iterable[str], version: int = CHECKPOINT_VERSION) -> None:
    """Replace `path` atomically with a checkpoint holding `entries` (one line each)."""
    lines = list(entries)
    text = f"{version}\n{len(lines)}\n" + "".join(f"{line}\n" for line in lines)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_directory(path.parent)


def read_checkpoint(path: Path, fields: int, version: int = CHECKPOINT_VERSION) -> list[list[str]] | None:
    """The entries of checkpoint `path`, each split into `fields` fields; None if the file is absent."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    fix = f"repair or delete {path} (the broker rebuilds it)"
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise CheckpointError(f"{path}: expected a version line and a count line, found {len(lines)} line(s); {fix}")
    if lines[0].strip() != str(version):
        raise CheckpointError(f"{path} line 1: unsupported checkpoint version {lines[0]!r} (expected {version}); {fix}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path} line 2: entry count {lines[1]!r} is not an integer; {fix}") from None
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"{path} line {number}: {line!r} has {len(parts)} fields, expected {fields}; {fix}")
        entries.append(parts)
    if len(entries) != count:
        raise CheckpointError(f"{path}: line 2 announces {count} entries but {len(entries)} follow; {fix}")
    return entries


def _int_field(path: Path, number: int, value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise CheckpointError(
            f"{path} entry {number}: {what} {value!r} is not an integer; repair or delete the file") from None


def write_offset_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    """`<topic> <partition> <offset>` lines, sorted by topic and partition."""
    write_checkpoint(path, (f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())))


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset}; empty if the file is absent."""
    entries = read_checkpoint(path, 3) or []
    return {
        (topic, _int_field(path, n, partition, "partition")): _int_field(path, n, offset, "offset")
        for n, (topic, partition, offset) in enumerate(entries, start=1)
    }


def write_epoch_checkpoint(path: Path, entries: Iterable[tuple[int, int]]) -> None:
    """`<epoch> <start offset>` lines in the given (ascending) order."""
    write_checkpoint(path, (f"{epoch} {start}" for epoch, start in entries))


def read_epoch_checkpoint(path: Path) -> list[tuple[int, int]]:
    """[(epoch, start offset)] in file order; empty if the file is absent."""
    entries = read_checkpoint(path, 2) or []
    return [
        (_int_field(path, n, epoch, "epoch"), _int_field(path, n, start, "start offset"))
        for n, (epoch, start) in enumerate(entries, start=1)
    ]
