"""Anomaly names (public, DESIGN.md §3.4) and the record of one found anomaly."""
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
# Extensions of §3.4: what the log model also rules out (see docs/CHECKERS.md).
ABORTED_READ = "aborted-read"  # a failed send's value was read (Jepsen's G1a)
PHANTOM_READ = "phantom-read"  # a value no send ever wrote was read
FUTURE_READ = "future-read"  # a poll saw an offset before the send that got it began

ALL = (
    LOST_WRITE, DUPLICATE, INCONSISTENT_OFFSETS, TRUNCATED_READ, NONMONOTONIC_SEND,
    POLL_SKIP, NONMONOTONIC_POLL, INT_POLL_SKIP, INT_NONMONOTONIC_POLL,
    REPLICA_DIVERGENCE, NONLINEARIZABLE, UNSEEN, ABORTED_READ, PHANTOM_READ,
    FUTURE_READ,
)

# The documented default: every anomaly but `unseen` makes a run invalid;
# `duplicate` only when the producer was idempotent (decided by the caller).
DEFAULT_INVALID = frozenset(a for a in ALL if a != UNSEEN)


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
