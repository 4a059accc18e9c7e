"""Fatal markers: the lines a node's log holds when the system gave up on a partition or on
itself — what makes a replica never rejoin an ISR, however long one waits. One list per system,
read by the cluster (to stop waiting for what will not come) and by `fencepost check` (to
report it in results.json as a liveness finding, never a safety anomaly).

Stock Kafka:
- `Exiting because log truncation is not allowed for partition P` (0.10.2 to 1.1: a follower
  whose log is longer than its new leader's, unclean election off, halts the broker);
- `Partition P marked as failed` (2.2 on: the fetcher gives up on a partition, e.g. after an
  `UnexpectedAppendOffsetException`, and the broker goes on without it) — except right after
  the same node logged `Partition P has an older epoch (E) than the current leader. Will
  await the new LeaderAndIsr state before resuming fetching`: that failure lasts until the
  controller's next word, which a fenced follower gets (measured: 47 such lines in 16 of 30
  last-replica-standing runs on 3.9.1 and 4.4.0, and every partition served again within
  0.07 s of the heal);
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
KAFKA_AWAITS_LEADER = re.compile(rf"Partition {_PARTITION} has an older epoch \(\d+\) than the current leader\. "
                                 r"Will await the new LeaderAndIsr state")
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
    awaiting: set[str] = set()  # partitions whose fetcher said it awaits the controller's next word
    for line in text.splitlines():
        if (waits := KAFKA_AWAITS_LEADER.search(line)) is not None:
            awaiting.add(_partition_of(waits))
            continue
        partition = None
        for pattern in KAFKA_PARTITION_MARKERS:
            if (match := pattern.search(line)) is not None:
                partition = _partition_of(match)
                break
        if partition is not None and partition in awaiting and "marked as failed" in line:
            awaiting.discard(partition)  # the failure that waits: not a marker
            continue
        if partition is not None or any(p.search(line) for p in KAFKA_OTHER_MARKERS):
            found.append(FatalMarker(node, line.strip()[:MAX_LINE], partition, bool(KAFKA_HALTS.search(line))))
    return found


def _partition_of(match: re.Match) -> str:
    return match["dash"] or f"{match['bt']}-{match['bp']}"


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
