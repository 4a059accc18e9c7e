"""What a node durably kept, in Kafka's on-disk layout (the own broker keeps the same): the
answers a System gives the durability scenarios (nemesis/durability.py), so that they ask the
cluster and never read the broker's files themselves.

- `partition_log_bytes`: the bytes of a partition's log segments (`<topic>-<partition>/*.log`)
  in a node's data folders, as the node's programs see them (after a power cut: what was
  durable), measured on the node's host with `find`;
- `checkpointed_high_watermark`: a partition's high watermark in the `replication-offset-checkpoint`
  of a data folder (version 0, an entry count, then `<topic> <partition> <hw>` per line). The
  broker writes and owns that format (broker/storage/checkpoints.py); clusters starts the broker
  as a process and never imports it, so this is a reader of its own, held to the broker's on the
  same files by tests/clusters/test_system_durable.py. Anything it cannot read answers None, as
  the broker's reader's refusals did."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from fencepost.clusters.errors import HostError
from fencepost.clusters.hosts.base import Host

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CHECKPOINT_VERSION = "0"


def partition_log_bytes(host: Host, folders: Sequence[str], topic: str, partition: int,
                        timeout: float) -> int | None:
    """The bytes of the partition's log segments under `folders` on `host`; None when the host
    cannot tell (a folder missing, the command failed)."""
    try:
        done = host.run(["find", *folders, "-path", f"*/{topic}-{partition}/*.log", "-printf", "%s\n"],
                        timeout=timeout, check=False)
    except (HostError, OSError):
        return None
    return sum(int(n) for n in done.stdout.split()) if done.ok else None


def checkpointed_high_watermark(data_dir: Path, topic: str, partition: int) -> int | None:
    """The partition's entry in `data_dir`'s replication-offset-checkpoint; None when the file is
    absent, does not follow the format, or holds no entry for the partition."""
    try:
        text = (data_dir / REPLICATION_OFFSET_CHECKPOINT).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2 or lines[0].strip() != CHECKPOINT_VERSION:
        return None
    try:
        count = int(lines[1])
    except ValueError:
        return None
    entries: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        fields = line.split()
        if len(fields) != 3:
            return None
        try:
            entries[(fields[0], int(fields[1]))] = int(fields[2])
        except ValueError:
            return None
    if len(lines) - 2 != count:
        return None
    return entries.get((topic, partition))
