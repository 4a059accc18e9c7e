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
- any other `FATAL` line, and `UnexpectedAppendOffsetException` (no partition named) —
  except the FATAL lines of a start Kafka refused because its previous ZooKeeper session
  still held `/brokers/ids/N` ("A broker is already registered on the path /brokers/ids/N
  ... restarted it faster than the zookeeper timeout": 0.10.2 to 1.1 log it FATAL) when a
  later start in the same log reached "started": the cluster starts such a broker again
  until its old session has expired (measured: every run of kip101-divergence on 0.10.2.2
  and 0.11.0.3 had one, the broker started 2 s later and its partition served again
  within 0.02 s of the heal). A refused start never followed by one that succeeded stays
  a marker, as does a partition's marker within it.
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
# One start of a broker: its log from a "starting" line of KafkaServer to the next.
KAFKA_STARTING = re.compile(r"\bstarting \(kafka\.server\.KafkaServer\)")
KAFKA_STARTED = re.compile(r"\bstarted \(kafka\.server\.KafkaServer\)")
KAFKA_STILL_REGISTERED = re.compile(r"A broker is already registered on the path /brokers/ids/\d+")
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
    found: list[tuple[int, FatalMarker]] = []  # (the start it belongs to, the marker)
    awaiting: set[str] = set()  # partitions whose fetcher said it awaits the controller's next word
    start, refused, started = 0, set(), set()  # starts counted by their "starting" line
    for line in text.splitlines():
        if KAFKA_STARTING.search(line):
            start += 1
            continue
        if KAFKA_STARTED.search(line):
            started.add(start)
        if KAFKA_STILL_REGISTERED.search(line):
            refused.add(start)
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
            found.append((start, FatalMarker(node, line.strip()[:MAX_LINE], partition,
                                             bool(KAFKA_HALTS.search(line)))))
    retried = {s for s in refused if any(later > s for later in started)}  # the start after it succeeded
    return [marker for s, marker in found if s not in retried or marker.partition is not None]


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
