"""Consumer groups of one partition: a member that resumes from a committed offset must
neither skip what no commit covered nor read again what a commit surely covered —
`commit-skip` and `commit-reread` (docs/CHECKERS.md defines both).

For each resume R of group g (a member given the partition by a rebalance, at offset f: the
committed offset it was told, 0 where there was none), the offsets the group's committed
offset may hold when R reads it:
- the offsets of the *latest* ok commits of g that completed before R began (those no other
  such commit follows in real time; a later ok commit overwrites an earlier one) — R begins
  where the member may have asked for the committed offset: the invoke of its operation before
  the assign (`Resume.asked_index`: the poll in whose rebalance callback it asked);
- the offset of every commit of g that did not fail and was invoked before R ended, but did not
  complete ok before R began (concurrent with R, `info`, or never completed: it may land at any
  moment);
- 0, when no ok commit of g completed before R began (nothing need have been committed).
f among them is fine. f above all of them is a `commit-skip` when offsets known to hold records
(acks, polls, the final read) lie in [highest, f); f below all of them a `commit-reread` when
known offsets lie in [f, lowest). An f strictly between two of them, equal to none, is not
judged: which one was in effect cannot be told. Failed commits changed nothing. Conservative
on purpose: the workload commits only what a member read, so a resume the group could have
been told by any interleaving is never flagged.

Pure, per partition (P-compositional): commits and resumes name their partition.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from fencepost.checkers.anomaly import COMMIT_REREAD, COMMIT_SKIP, Anomaly
from fencepost.checkers.offsets import op_refs
from fencepost.checkers.partition import Commit, PartitionHistory, Resume

MAX_LISTED = 10  # offsets named in one anomaly (all are counted)


def _known_in(known: Sequence[int], low: int, high: int) -> tuple[list[int], int]:
    """The known offsets in [low, high): the first few, and how many."""
    lo, hi = bisect_left(known, low), bisect_left(known, high)
    return list(known[lo:min(hi, lo + MAX_LISTED)]), max(0, hi - lo)


def possible_offsets(resume: Resume, commits: Sequence[Commit]) -> set[int]:
    """The committed offsets group `resume.group` may hold when `resume` reads it (module doc)."""
    began = resume.asked_index if resume.asked_index >= 0 else resume.invoke_index
    ended = resume.complete_index
    settled = [c for c in commits if c.outcome == "ok" and c.complete_index is not None
               and c.complete_index < began]
    possible: set[int] = set()
    if settled:
        latest_invoke = max(c.invoke_index for c in settled)
        # c is overwritten when another settled commit was invoked after c completed
        possible.update(c.offset for c in settled
                        if c.complete_index is not None and not c.complete_index < latest_invoke)
    else:
        possible.add(0)
    settled_ids = {id(c) for c in settled}
    possible.update(c.offset for c in commits
                    if c.outcome != "fail" and id(c) not in settled_ids
                    and (ended is None or c.invoke_index < ended))
    return possible


def check_groups(ph: PartitionHistory, known: Sequence[int]) -> list[Anomaly]:
    """`commit-skip` and `commit-reread` of every resume of `ph`; `known`: the partition's known
    offsets, sorted (`Observations.known_offsets`)."""
    if not ph.resumes:
        return []
    commits: dict[str, list[Commit]] = {}
    for c in ph.commits:
        commits.setdefault(c.group, []).append(c)
    out = []
    for resume in sorted(ph.resumes, key=lambda r: r.invoke_index):
        group = commits.get(resume.group, [])
        possible = possible_offsets(resume, group)
        f = resume.offset
        if f in possible:
            continue
        high, low = max(possible), min(possible)
        if f > high:
            listed, count = _known_in(known, high, f)
            if count:
                out.append(_anomaly(ph, COMMIT_SKIP, resume, group, possible, listed, count, high))
        elif f < low:
            listed, count = _known_in(known, f, low)
            if count:
                out.append(_anomaly(ph, COMMIT_REREAD, resume, group, possible, listed, count, low))
    return out


def _anomaly(ph: PartitionHistory, name: str, resume: Resume, commits: list[Commit], possible: set[int],
             listed: list[int], count: int, bound: int) -> Anomaly:
    near = [c for c in commits if c.offset == bound] or commits
    refs = op_refs([resume, *near[-3:]])
    what = "skipped" if name == COMMIT_SKIP else "reread"
    where = f"{ph.topic}/{ph.partition}"
    if name == COMMIT_SKIP:
        why = (f"the highest offset group {resume.group!r} could have committed was {bound}: it skips "
               f"{count} known offset(s) from {listed[0]} on that no commit covered")
    else:
        why = (f"group {resume.group!r} had surely committed {bound} (or later) before: it reads "
               f"{count} known offset(s) from {listed[0]} on again, which the commit covered")
    details: dict[str, Any] = {
        "group": resume.group, "process": resume.process, "offset": resume.offset,
        "committed": sorted(possible), what: listed, f"{what}_count": count, **refs,
        "explanation": f"process {resume.process} resumed {where} at offset {resume.offset} "
                       f"(assign {resume.complete_index}); {why}"}
    return Anomaly(name, ph.topic, ph.partition, details)
