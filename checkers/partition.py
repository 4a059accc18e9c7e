"""The checkers' input: one partition's client operations and final logs.

Ops are already paired (invoke + completion). Real-time order is history
order: `invoke_index` / `complete_index` are the history line numbers, so
"A completed before B was invoked" is `A.complete_index < B.invoke_index`.
An op whose completion never came (harness died, client crashed) has
`complete_index=None` and outcome `info`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import msgspec

Outcome = Literal["ok", "fail", "info"]


# Send and Poll are msgspec Structs, not dataclasses: a large run loads a million of
# them and each check worker copies its partition's (harness/check/loading.fresh_copy), and a
# Struct is built in C and carries no garbage-collector header (they hold no cycles):
# loading history.jsonl took 25% less time, the copy 30% less.
class Send(msgspec.Struct, gc=False):
    process: int
    value: str
    outcome: Outcome
    invoke_index: int
    invoke_time: int
    complete_index: int | None = None
    complete_time: int | None = None
    offset: int | None = None  # the acked offset, on ok
    leader_epoch: int | None = None
    error: str | None = None


class Poll(msgspec.Struct, gc=False):
    """One poll, projected onto this partition: `records` are (offset, value)
    pairs in the order the client returned them (possibly empty)."""

    process: int
    outcome: Outcome
    invoke_index: int
    invoke_time: int
    complete_index: int | None = None
    complete_time: int | None = None
    records: list[tuple[int, str]] = msgspec.field(default_factory=list)
    error: str | None = None


@dataclass(slots=True)
class Reset:
    """An assign, subscribe or crash of a consumer process: its position may
    jump, so poll-skip/nonmonotonic-poll are not judged across it."""

    process: int
    index: int
    time: int
    f: str


@dataclass(slots=True)
class Commit:
    """A consumer group member's commit of this partition's offset: `offset` is the next offset to
    read (Kafka's convention), `group` the consumer group."""

    process: int
    group: str
    offset: int
    outcome: Outcome
    invoke_index: int
    invoke_time: int
    complete_index: int | None = None
    complete_time: int | None = None


@dataclass(slots=True)
class Resume:
    """A group member given this partition by a rebalance (its `assign` op, from invoke to
    completion), starting at `offset`: the committed offset it was told (0 where the group had
    none). That offset was read while the member's previous operation ran (the poll whose
    rebalance callback asked for it), so the read may have begun as early as that operation's
    invoke: `asked_index` (the assign's own invoke when the member did nothing before)."""

    process: int
    group: str
    offset: int
    invoke_index: int
    invoke_time: int
    complete_index: int | None = None
    complete_time: int | None = None
    asked_index: int = -1


@dataclass(slots=True)
class ReplicaState:
    node: str
    log_end_offset: int
    high_watermark: int
    leader_epoch: int | None = None
    epochs: list[tuple[int, int]] = field(default_factory=list)


@dataclass(slots=True)
class PartitionHistory:
    topic: str
    partition: int
    sends: list[Send] = field(default_factory=list)
    polls: list[Poll] = field(default_factory=list)
    resets: list[Reset] = field(default_factory=list)
    # Consumer groups: members' commits of this partition and their resumes from committed offsets.
    commits: list[Commit] = field(default_factory=list)
    resumes: list[Resume] = field(default_factory=list)
    # The final consumer read: (offset, value) in log order, or None if absent.
    final: list[tuple[int, str]] | None = None
    final_complete: bool = False
    # Each replica's on-disk log: node -> [(offset, value)] in log order.
    replicas: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    replica_states: dict[str, ReplicaState] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)


@dataclass(slots=True)
class CheckOptions:
    """What the checkers need to know about the run (from test.json)."""

    idempotent: bool = False
    # Check linearizability as well as the offset checks.
    linearizability: bool = True
    # "witness": verify the log model's greedy linearization first and search
    # only when it fails; "search": always run the Wing-Gong/Lowe search.
    linear_method: str = "witness"
    # States the search may explore per partition before giving up (-> unknown).
    search_budget: int = 5_000_000
