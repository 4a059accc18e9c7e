"""Consumer groups in the checkers' input: a group member's `commit` and its `assign` from
committed offsets, as `Commit`s and `Resume`s of the partitions they name (the rules are in
harness/check/loading.py's docstring; checkers/groups.py judges them), as the exact reader's
`group_operations` makes them; the C reader is held to it."""
from __future__ import annotations

from typing import Any, Iterable

from fencepost.checkers.partition import Commit, Outcome, Resume

PartitionKey = tuple[str, int]


def commits_of(process: int, group: str, offsets: Iterable[Any], outcome: Outcome, invoke_index: int,
               invoke_time: int, complete_index: int | None, complete_time: int | None
               ) -> list[tuple[PartitionKey, Commit]]:
    """The partitions a commit names, each with its `Commit` (offsets: [topic, partition, offset])."""
    return [((t, p), Commit(process, group, o, outcome, invoke_index, invoke_time, complete_index, complete_time))
            for t, p, o in offsets]


def resumes_of(process: int, group: Any, start: Any, keys: Iterable[PartitionKey], invoke_index: int,
               invoke_time: int, complete_index: int | None, complete_time: int | None, asked_index: int
               ) -> list[tuple[PartitionKey, Resume]]:
    """The resumes of an assign: only a group member's (`group` named) from committed offsets
    (`start` an object of "topic-partition" -> offset); a partition without one is left out."""
    if not isinstance(group, str) or not isinstance(start, dict):
        return []
    found = []
    for t, p in keys:
        offset = start.get(f"{t}-{p}")
        if type(offset) is int:
            found.append(((t, p), Resume(process, group, offset, invoke_index, invoke_time, complete_index,
                                         complete_time, asked_index)))
    return found

