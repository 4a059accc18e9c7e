"""Fatal markers: the lines a node's log holds when the system gave up on a partition or on
itself — what makes a replica never rejoin an ISR, however long one waits. One list per system,
read by the cluster (to stop waiting for what will not come) and by `fencepost check` (to
report it in results.json as a liveness finding, never a safety anomaly).

Stock Kafka:
- `Exiting because log truncation is not allowed for partition P` (0.10.2 to 1.1: a follower
  whose log is longer than its new leader's, unclean election off, halts the broker);
- `Partition P marked as failed` (2.2 on: the fetcher gives up on a partition, e.g. after an
  `UnexpectedAppendOffsetException`, and the broker goes on without it);
- any other `FATAL` line, and `UnexpectedAppendOffsetException` (no partition named).
The own broker: a Python traceback's last line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Kafka names a partition "fp-2" from 1.0 on and "[fp,2]" in older lines.
_PARTITION = r"(?:\[(?P<bt>[^,\]\s]+),(?P<bp>\d+)\]|(?P<dash>[A-Za-z0-9._-]+-\d+))"
KAFKA_PARTITION_MARKERS = (
    re.compile(rf"Exiting because log truncation is not allowed for partition {_PARTITION}"),
    re.compile(rf"Partition {_PARTITION} marked as failed"),
)
KAFKA_OTHER_MARKERS = (re.compile(r"\bFATAL\b"), re.compile(r"UnexpectedAppendOffsetException"))
KAFKA_HALTS = re.compile(r"\bFATAL\b|Exiting because")
TRACEBACK_END = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))(?::.*)?$")
MAX_LINE = 500


@dataclass(frozen=True)
class FatalMarker:
    node: str
    line: str  # the log line, cut to MAX_LINE characters
    partition: str | None  # "topic-partition" when the line names one
    halts: bool = False  # the process is ending itself (and may hang doing so: 0.10.2 exits from a thread
    #                      its own shutdown hook waits for, so it never ends)

    def to_json(self) -> dict[str, str | bool | None]:
        return {"node": self.node, "partition": self.partition, "line": self.line, "halts": self.halts}


def kafka_markers(node: str, text: str) -> list[FatalMarker]:
    found = []
    for line in text.splitlines():
        partition = None
        for pattern in KAFKA_PARTITION_MARKERS:
            if (match := pattern.search(line)) is not None:
                partition = match["dash"] or f"{match['bt']}-{match['bp']}"
                break
        if partition is not None or any(p.search(line) for p in KAFKA_OTHER_MARKERS):
            found.append(FatalMarker(node, line.strip()[:MAX_LINE], partition, bool(KAFKA_HALTS.search(line))))
    return found


def own_markers(node: str, text: str) -> list[FatalMarker]:
    """The last line of each Python traceback in the own broker's or controller's log."""
    found, in_traceback = [], False
    for line in text.splitlines():
        if line.startswith("Traceback (most recent call last)"):
            in_traceback = True
        elif in_traceback and TRACEBACK_END.match(line):
            found.append(FatalMarker(node, line.strip()[:MAX_LINE], None))
            in_traceback = False
    return found


def fatal_markers(system: str, node: str, text: str) -> list[FatalMarker]:
    """The fatal markers in `text`, a log of `node` of `system` ("own", "kafka" or "kafka:VERSION")."""
    return own_markers(node, text) if system == "own" else kafka_markers(node, text)
