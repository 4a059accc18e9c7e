"""Committed consumer-group offsets, kept in memory and in an append-only file in the data directory.

Owns `consumer-offsets.jsonl`: one JSON line per committed partition offset,
appended with write(2) at each commit (and fsynced in fsync mode), so commits
survive a restart or a kill -9. On open the file is replayed (a torn last line
from a crash is ignored) and rewritten compacted; deletions rewrite it too.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

from fencepost.broker.common.durable_file import write_file_atomically

log = logging.getLogger("broker.offsets")

FILE_NAME = "consumer-offsets.jsonl"


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
    commit_timestamp_ms: int = -1


def _line(group: str, topic: str, partition: int, c: CommittedOffset) -> bytes:
    return orjson.dumps({"g": group, "t": topic, "p": partition, "o": c.offset, "e": c.leader_epoch,
                         "m": c.metadata, "ts": c.commit_timestamp_ms}) + b"\n"


class OffsetStore:
    def __init__(self, data_dir: Path, fsync: bool = False) -> None:
        self.path = Path(data_dir) / FILE_NAME
        self.fsync = fsync
        self._offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self._file: BinaryIO | None = None  # the file appended to, from open() to close()

    def open(self) -> None:
        if self.path.exists():
            lines = self.path.read_bytes().split(b"\n")
            for number, raw in enumerate(lines, 1):
                if not raw.strip():
                    continue
                try:
                    d = orjson.loads(raw)
                    entry = CommittedOffset(int(d["o"]), int(d.get("e", -1)), d.get("m", ""), int(d.get("ts", -1)))
                    self._offsets.setdefault(d["g"], {})[(d["t"], int(d["p"]))] = entry
                except (ValueError, KeyError, TypeError) as e:
                    if number >= len(lines) - 1:
                        log.warning("ignoring a torn last line in %s (a crash during a commit): %s", self.path, e)
                    else:
                        raise RuntimeError(f"{self.path} line {number} is not a committed offset record ({e}); "
                                           "restore the file or remove the line") from e
        self._rewrite()

    def close(self) -> None:
        if self._file is not None:
            self._rewrite()
            self._file.close()
            self._file = None

    # queries and changes

    def commit(self, group: str, offsets: dict[tuple[str, int], CommittedOffset]) -> None:
        if not offsets:
            return
        now = int(time.time() * 1000)
        lines = []
        group_offsets = self._offsets.setdefault(group, {})
        for (topic, partition), c in offsets.items():
            if c.commit_timestamp_ms < 0:
                c = CommittedOffset(c.offset, c.leader_epoch, c.metadata, now)
            group_offsets[(topic, partition)] = c
            lines.append(_line(group, topic, partition, c))
        assert self._file is not None  # open() came first
        self._file.write(b"".join(lines))
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())

    def fetch(self, group: str) -> dict[tuple[str, int], CommittedOffset]:
        return dict(self._offsets.get(group, {}))

    def delete_topic(self, topic: str) -> None:
        changed = False
        for offsets in self._offsets.values():
            for key in [k for k in offsets if k[0] == topic]:
                del offsets[key]
                changed = True
        if changed:
            self._rewrite()

    def _rewrite(self) -> None:
        if self._file is not None:
            self._file.close()
        data = b"".join(_line(g, t, p, c) for g, offsets in self._offsets.items() for (t, p), c in offsets.items())
        write_file_atomically(self.path, data)
        self._file = open(self.path, "ab", buffering=0)
