"""A synthetic run as data: history lines, each partition's final logs, the
generator's ground truth; and writing it as a run directory (docs/FORMATS.md).

History lines are kept as the dicts that go into history.jsonl, so planters edit
exactly what users' files hold; final logs are kept structured (records per
replica) and rendered to final.jsonl lines on writing.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

# One log record: (offset, value, leader_epoch).
Record = tuple[int, str, int | None]


@dataclass(slots=True)
class ReplicaFinal:
    """One replica's on-disk log and its state at the end of the run."""

    records: list[Record]
    log_end_offset: int
    high_watermark: int
    leader_epoch: int | None
    epochs: list[list[int]] = field(default_factory=list)  # [[epoch, start_offset], ...]


@dataclass(slots=True)
class PartitionFinal:
    """The final consumer read of one partition and every replica's log."""

    read: list[Record]
    complete: bool = True
    leader: str = "n1"
    replicas: dict[str, ReplicaFinal] = field(default_factory=dict)

    def end_offset(self) -> int:
        """The offset right after the final read's last record (0 if empty)."""
        return self.read[-1][0] + 1 if self.read else 0


@dataclass(slots=True)
class SendTruth:
    """What really happened to one send."""

    process: int
    partition: int
    value: str
    invoke_index: int
    complete_index: int | None = None
    outcome: str | None = None  # ok / fail / info; None: never completed
    acked_offset: int | None = None
    final_offsets: list[int] = field(default_factory=list)  # where the final read holds it
    truncated: int = 0  # copies appended and later truncated (never committed)


@dataclass(slots=True)
class Truth:
    """The generator's ground truth, for planters and for tests of the generator."""

    sends: dict[str, SendTruth] = field(default_factory=dict)  # by value
    leader_changes: int = 0
    truncated_records: int = 0
    duplicate_copies: int = 0  # extra copies a non-idempotent retry left in the final log
    offset_gaps: int = 0

    def acked(self, partition: int | None = None) -> list[SendTruth]:
        return [s for s in self.sends.values()
                if s.outcome == "ok" and (partition is None or s.partition == partition)]


@dataclass(slots=True)
class SynthRun:
    topic: str
    history: list[dict[str, Any]]
    final: dict[int, PartitionFinal]
    test: dict[str, Any]
    truth: Truth

    @property
    def idempotent(self) -> bool:
        return bool(self.test.get("producer", {}).get("idempotent", False))

    def final_lines(self) -> list[dict[str, Any]]:
        return list(final_lines(self.topic, self.final))

    def clone(self) -> SynthRun:
        """A copy whose history and final logs can be edited without touching
        this run (the ground truth is shared: it describes the generated run)."""
        history = orjson.loads(orjson.dumps(self.history))
        final = {p: PartitionFinal(list(pf.read), pf.complete, pf.leader,
                                   {n: ReplicaFinal(list(rf.records), rf.log_end_offset, rf.high_watermark,
                                                    rf.leader_epoch, [list(e) for e in rf.epochs])
                                    for n, rf in pf.replicas.items()})
                 for p, pf in self.final.items()}
        return SynthRun(self.topic, history, final, copy.deepcopy(self.test), self.truth)

    def write(self, run_dir: Path) -> Path:
        return write_run(run_dir, self.history, self.final_lines(), self.test)


def final_lines(topic: str, finals: dict[int, PartitionFinal]) -> Iterator[dict[str, Any]]:
    """final.jsonl lines (docs/FORMATS.md, final.jsonl): per partition the read, its read-state, then each
    replica's records and its replica-state."""
    for partition in sorted(finals):
        pf = finals[partition]
        for offset, value, epoch in pf.read:
            yield {"kind": "read", "topic": topic, "partition": partition,
                   "offset": offset, "value": value, "leader_epoch": epoch}
        yield {"kind": "read-state", "topic": topic, "partition": partition,
               "complete": pf.complete}
        for node in sorted(pf.replicas):
            rf = pf.replicas[node]
            for offset, value, epoch in rf.records:
                yield {"kind": "replica", "node": node, "topic": topic, "partition": partition,
                       "offset": offset, "value": value, "leader_epoch": epoch}
            yield {"kind": "replica-state", "node": node, "topic": topic, "partition": partition,
                   "log_end_offset": rf.log_end_offset, "high_watermark": rf.high_watermark,
                   "leader_epoch": rf.leader_epoch, "epochs": rf.epochs}


_NEWLINE = orjson.OPT_APPEND_NEWLINE


def write_jsonl(path: Path, lines: Iterable[dict[str, Any]]) -> int:
    """Write one JSON object per line; returns the number of lines."""
    n = 0
    chunk: list[bytes] = []
    with open(path, "wb") as f:
        for line in lines:
            chunk.append(orjson.dumps(line, option=_NEWLINE))
            n += 1
            if len(chunk) >= 8192:
                f.write(b"".join(chunk))
                chunk.clear()
        f.write(b"".join(chunk))
    return n


def write_run(run_dir: Path, history_lines: Iterable[dict[str, Any]],
              final_lines: Iterable[dict[str, Any]] | None,
              test: dict[str, Any] | None = None) -> Path:
    """Write `history.jsonl`, `final.jsonl` (unless None) and, if given,
    `test.json` into `run_dir` (created if needed); returns `run_dir`."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(run_dir / "history.jsonl", history_lines)
    if final_lines is not None:
        write_jsonl(run_dir / "final.jsonl", final_lines)
    if test is not None:
        (run_dir / "test.json").write_bytes(orjson.dumps(test, option=orjson.OPT_INDENT_2))
    return run_dir
