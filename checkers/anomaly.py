"""Anomaly names (public, docs/CHECKERS.md) and the record of one found anomaly."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LOST_WRITE = "lost-write"
DUPLICATE = "duplicate"
INCONSISTENT_OFFSETS = "inconsistent-offsets"
TRUNCATED_READ = "truncated-read"
NONMONOTONIC_SEND = "nonmonotonic-send"
POLL_SKIP = "poll-skip"
NONMONOTONIC_POLL = "nonmonotonic-poll"
INT_POLL_SKIP = "int-poll-skip"
INT_NONMONOTONIC_POLL = "int-nonmonotonic-poll"
REPLICA_DIVERGENCE = "replica-divergence"
NONLINEARIZABLE = "nonlinearizable"
UNSEEN = "unseen"
# Extensions: what the log model also rules out (docs/CHECKERS.md).
ABORTED_READ = "aborted-read"  # a failed send's value was read (Jepsen's G1a)
PHANTOM_READ = "phantom-read"  # a value no send ever wrote was read
FUTURE_READ = "future-read"  # a poll saw an offset before the send that got it began
# Consumer groups (checkers/groups.py): a member resuming from a committed offset.
COMMIT_SKIP = "commit-skip"  # resumed above every offset the group could have committed
COMMIT_REREAD = "commit-reread"  # resumed below what the group's commits had surely covered

ALL = (
    LOST_WRITE, DUPLICATE, INCONSISTENT_OFFSETS, TRUNCATED_READ, NONMONOTONIC_SEND,
    POLL_SKIP, NONMONOTONIC_POLL, INT_POLL_SKIP, INT_NONMONOTONIC_POLL,
    REPLICA_DIVERGENCE, NONLINEARIZABLE, UNSEEN, ABORTED_READ, PHANTOM_READ,
    FUTURE_READ, COMMIT_SKIP, COMMIT_REREAD,
)

# One line each, for pages a reader may have without the docs (the report):
# docs/CHECKERS.md has the exact definitions.
DEFINITIONS = {
    LOST_WRITE: "an acknowledged send (or an info send some poll saw) whose value the final read does not "
                "hold at its offset: missing there, or overwritten by another value",
    DUPLICATE: "one value seen at more than one offset (acks, polls, the final read)",
    INCONSISTENT_OFFSETS: "two different values seen at one offset (acks, polls, the final read)",
    TRUNCATED_READ: "a poll returned a record the final read does not hold at that offset",
    NONMONOTONIC_SEND: "send A was acked before send B began, yet B's value sits at an offset at or "
                       "below A's",
    POLL_SKIP: "between two consecutive polls of one consumer, offsets known to hold records were "
               "skipped",
    NONMONOTONIC_POLL: "a consumer's poll began at or below the offset its previous poll ended at",
    INT_POLL_SKIP: "inside one poll, offsets known to hold records were skipped",
    INT_NONMONOTONIC_POLL: "inside one poll, an offset at or below the one before it",
    REPLICA_DIVERGENCE: "two replicas hold different records (or one holds none) at an offset below "
                        "both their high watermarks, where records are committed",
    NONLINEARIZABLE: "no single log, in real-time order, explains every ack, poll and the final read",
    UNSEEN: "acknowledged, but no poll ever returned it (consumers may lag: informational)",
    ABORTED_READ: "a value whose sends all failed was read (Jepsen's G1a)",
    PHANTOM_READ: "a value no send wrote was read",
    FUTURE_READ: "a poll saw an offset before the send that got it had begun",
    COMMIT_SKIP: "a consumer group member resumed above every offset its group could have committed, "
                 "skipping records no commit covered",
    COMMIT_REREAD: "a consumer group member resumed below an offset its group's commit had surely "
                   "covered, reading again what the commit said was read",
}

# The documented default: every anomaly but `unseen` makes a run invalid;
# `duplicate` only when the producer was idempotent (decided by the caller).
DEFAULT_INVALID = frozenset(a for a in ALL if a != UNSEEN)


def default_invalid(idempotent: bool) -> frozenset[str]:
    """Anomalies that make a run invalid by default: all but `unseen`, and
    `duplicate` only when the producer was idempotent."""
    return DEFAULT_INVALID if idempotent else DEFAULT_INVALID - {DUPLICATE}


@dataclass(slots=True)
class Anomaly:
    name: str
    topic: str
    partition: int
    # Free-form, JSON-serialisable details: offsets, values, `how`, and `ops`
    # (history indices of the operations involved).
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.name, "topic": self.topic, "partition": self.partition, **self.details}
