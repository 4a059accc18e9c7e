"""`python -m fencepost.broker dump-log`: print every record of every replica log in a data directory as
`final.jsonl` lines, then one `replica-state` line per partition.

Owns the read-only reading of a data directory, ours or stock Kafka's (same
layout; message formats v2 and v0/v1, every codec):
  {"kind":"replica","node","topic","partition","offset","value","leader_epoch"}
  {"kind":"replica-state","node","topic","partition","log_end_offset","high_watermark",
   "leader_epoch","epochs":[[epoch,start],...]}
Values are UTF-8 text, or {"base64": ...} when not UTF-8, or null. Record epochs
are the batch's partition leader epoch (null for v0/v1 or -1). It never recovers
or modifies anything: a torn or corrupt tail is reported on stderr and skipped
with everything after it in that partition (what recovery would cut). Control
batches (transaction markers) are skipped; so are internal topics (`__*`) unless
`--all`. The high watermark comes from `replication-offset-checkpoint` (0 when
absent), clamped to the log as a restarting broker would; the epochs are those of
the batches, followed by newer `leader-epoch-checkpoint` entries up to the log end.
Exit status: 0 done, 1 some partition could not be read, 2 bad arguments (as `serve`).
"""
from __future__ import annotations

import argparse
import base64
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO

import orjson

from fencepost.broker.storage.batch import RecordBatch, ScanOutcome, scan_batches
from fencepost.broker.storage.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    read_epoch_checkpoint,
    read_offset_checkpoint,
)
from fencepost.broker.storage.compression import DecompressionError
from fencepost.broker.storage.epoch_cache import LeaderEpochFileCache
from fencepost.broker.storage.legacy import LegacyFormatError
from fencepost.broker.storage.manager import parse_partition_dir
from fencepost.broker.storage.records import RecordDecodeError
from fencepost.broker.storage.segment import parse_segment_name

EXIT_OK = 0
EXIT_UNREADABLE = 1
EXIT_BAD_ARGUMENTS = 2
NODE_FILE = "node"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fencepost.broker dump-log",
        description="Print the records of every partition log in a broker data directory (ours or stock "
        "Kafka's) as final.jsonl lines: one 'replica' line per record, one 'replica-state' line per partition.",
    )
    parser.add_argument(
        "--data-dir", action="append", required=True, type=Path, metavar="DIR",
        help="the broker's data directory (log.dirs); repeat for a broker with several",
    )
    parser.add_argument("--node", help="node name for the lines (default: the data dir's 'node' file, else its name)")
    parser.add_argument("--all", action="store_true", help="include internal topics (names starting with '__')")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_BAD_ARGUMENTS
    for data_dir in args.data_dir:
        if not data_dir.is_dir():
            print(f"dump-log: --data-dir {data_dir} is not a directory; give the broker's log directory",
                  file=sys.stderr)
            return EXIT_BAD_ARGUMENTS
    node = args.node or node_name(args.data_dir[0])
    try:
        return dump(args.data_dir, node, include_internal=args.all, out=sys.stdout.buffer, err=sys.stderr)
    except BrokenPipeError:
        return EXIT_OK


def node_name(data_dir: Path) -> str:
    """The name in `<data_dir>/node`, else the directory's own name."""
    try:
        name = (data_dir / NODE_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        name = ""
    return name or data_dir.resolve().name


@dataclass
class PartitionDump:
    """What one partition's scan found: its end, the epochs of its batches, and any problem."""

    log_start_offset: int | None = None
    log_end_offset: int = 0
    batch_epochs: list[tuple[int, int]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    unreadable: bool = False


def dump(data_dirs: list[Path], node: str, *, include_internal: bool, out: BinaryIO, err: TextIO) -> int:
    status = EXIT_OK
    for data_dir in data_dirs:
        high_watermarks = _high_watermarks(data_dir, err)
        for path, (topic, partition) in _partition_dirs(data_dir):
            if topic.startswith("__") and not include_internal:
                continue
            state = _dump_partition(path, node, topic, partition, out)
            for problem in state.problems:
                print(f"dump-log: {problem}", file=err)
            if state.unreadable:
                status = EXIT_UNREADABLE
            out.write(_state_line(path, node, topic, partition, state, high_watermarks.get((topic, partition), 0), err))
    out.flush()
    return status


def _partition_dirs(data_dir: Path) -> Iterator[tuple[Path, tuple[str, int]]]:
    found = []
    for path in data_dir.iterdir():
        parsed = parse_partition_dir(path.name) if path.is_dir() else None
        if parsed is not None:
            found.append((parsed, path))
    for parsed, path in sorted(found):
        yield path, parsed


def _high_watermarks(data_dir: Path, err: TextIO) -> dict[tuple[str, int], int]:
    try:
        return read_offset_checkpoint(data_dir / REPLICATION_OFFSET_CHECKPOINT)
    except (CheckpointError, OSError) as exc:
        print(f"dump-log: {exc}; high watermarks reported as 0", file=err)
        return {}


def _dump_partition(path: Path, node: str, topic: str, partition: int, out: BinaryIO) -> PartitionDump:
    state = PartitionDump()
    bases = sorted(b for b in (parse_segment_name(p.name) for p in path.iterdir()) if b is not None)
    state.log_end_offset = bases[0] if bases else 0
    state.log_start_offset = state.log_end_offset
    prefix = {"kind": "replica", "node": node, "topic": topic, "partition": partition}
    for number, base in enumerate(bases):
        segment = path / f"{base:020d}.log"
        if base < state.log_end_offset:
            state.problems.append(
                f"{segment}: starts at offset {base}, below the end of the previous segment ({state.log_end_offset}); "
                f"it and {len(bases) - number - 1} later segment(s) skipped"
            )
            break
        if not _dump_segment(segment, state, prefix, out):
            skipped = len(bases) - number - 1
            if skipped:
                state.problems.append(f"{path}: {skipped} segment(s) after {segment.name} skipped")
            break
    return state


def _dump_segment(segment: Path, state: PartitionDump, prefix: dict, out: BinaryIO) -> bool:
    """Print the records of one segment file; False if it stopped early (the rest of the log is skipped)."""
    try:
        fd = os.open(segment, os.O_RDONLY)
    except OSError as exc:
        state.problems.append(f"{segment}: cannot open: {exc.strerror}")
        state.unreadable = True
        return False
    try:
        size = os.fstat(fd).st_size
        outcome = ScanOutcome()
        for position, batch in scan_batches(lambda pos, n: os.pread(fd, n, pos), size, outcome):
            # (a RecordBatch is exactly a batch of magic 2: iter_batches makes them so)
            first = batch.base_offset if isinstance(batch, RecordBatch) else batch.offset
            where = f"{segment} byte {position} (offsets {first}..)"
            if not batch.is_valid():
                state.problems.append(f"{where}: CRC mismatch; this batch and everything after it skipped")
                return False
            if batch.last_offset < state.log_end_offset:
                state.problems.append(
                    f"{where}: offsets go back below {state.log_end_offset}; this batch and everything after it skipped"
                )
                return False
            epoch = batch.partition_leader_epoch
            if epoch >= 0 and (not state.batch_epochs or state.batch_epochs[-1][0] != epoch):
                state.batch_epochs.append((epoch, batch.base_offset))
            if not batch.is_control:
                try:
                    records = batch.records()
                except (DecompressionError, RecordDecodeError, LegacyFormatError) as exc:
                    state.problems.append(f"{where}: records do not decode ({exc}); skipped with everything after")
                    return False
                out.write(_record_lines(prefix, records, epoch if epoch >= 0 else None))
            state.log_end_offset = batch.last_offset + 1
        if outcome.problem:
            assert outcome.problem_position is not None  # set with the problem (ScanOutcome._stop)
            state.problems.append(
                f"{segment}: {outcome.problem} at byte {outcome.problem_position} of {size}; "
                f"{size - outcome.problem_position} bytes skipped"
            )
            return False
        return True
    except OSError as exc:
        state.problems.append(f"{segment}: read failed: {exc.strerror}")
        state.unreadable = True
        return False
    finally:
        os.close(fd)


def _json_value(value: bytes | None):
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def _record_lines(prefix: dict, records, epoch: int | None) -> bytes:
    lines = []
    for record in records:
        line = dict(prefix)
        line["offset"] = record.offset
        line["value"] = _json_value(record.value)
        line["leader_epoch"] = epoch
        lines.append(orjson.dumps(line))
    return b"\n".join(lines) + b"\n" if lines else b""


def _state_line(
    path: Path, node: str, topic: str, partition: int, state: PartitionDump, checkpoint_hw: int, err: TextIO
) -> bytes:
    end = state.log_end_offset
    start = state.log_start_offset if state.log_start_offset is not None else 0
    epochs = LeaderEpochFileCache(None, state.batch_epochs)
    try:
        checkpointed = read_epoch_checkpoint(path / LEADER_EPOCH_CHECKPOINT)
    except (CheckpointError, OSError) as exc:
        print(f"dump-log: {exc}; epochs taken from the batches only", file=err)
        checkpointed = []
    last_start = state.batch_epochs[-1][1] if state.batch_epochs else -1
    for epoch, epoch_start in checkpointed:
        if epoch > epochs.latest_epoch and last_start <= epoch_start <= end:
            epochs.assign(epoch, epoch_start)
    latest = epochs.latest_epoch
    line = {
        "kind": "replica-state",
        "node": node,
        "topic": topic,
        "partition": partition,
        "log_end_offset": end,
        "high_watermark": min(max(checkpoint_hw, start), end),
        "leader_epoch": latest if latest >= 0 else None,
        "epochs": [[epoch, epoch_start] for epoch, epoch_start in epochs.epoch_entries()],
    }
    return orjson.dumps(line) + b"\n"
