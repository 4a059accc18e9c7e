"""Planters: each takes a valid synthetic run and returns a copy holding one
chosen anomaly (docs/CHECKERS.md), with
a description of what was planted.

A planting may cause other anomalies too (an overwritten acked record is also
`inconsistent-offsets`); what a planter promises is that the named one is there.
`PLANTERS` lists every planter by name; several plant the same anomaly in
different ways (`lost-write/missing`, `lost-write/overwritten`, ...). A planter
that finds nothing to work on in a run raises `CannotPlant`.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fencepost.checkers import anomaly as A
from tests.support.synth.edit import (
    CannotPlant,
    OpRef,
    acked_sends,
    append_record,
    consecutive_polls,
    fresh_process,
    insert_after,
    insert_before,
    insert_record,
    move_after,
    ok_polls,
    pair_ops,
    poll_records,
    remove_record,
    replace_value,
    send_lines,
)
from tests.support.synth.run import SynthRun

__all__ = ["CannotPlant", "PLANTERS", "Planted", "Planter", "plant"]


@dataclass(slots=True)
class Planted:
    run: SynthRun
    anomaly: str
    partition: int
    # offsets, values, `ops` (history indices of the ops involved) and `story`
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Planter:
    name: str
    anomaly: str
    plant: Callable[[SynthRun, random.Random], Planted]
    doc: str


PLANTERS: dict[str, Planter] = {}


def plant(name: str, run: SynthRun, rng: random.Random | int = 0) -> Planted:
    """Plant `name` (a key of PLANTERS) in a copy of `run`."""
    if isinstance(rng, int):
        rng = random.Random(rng)
    return PLANTERS[name].plant(run.clone(), rng)


def _planter(name: str, anomaly: str):
    def register(fn: Callable[[SynthRun, random.Random], Planted]):
        PLANTERS[name] = Planter(name, anomaly, fn, (fn.__doc__ or "").strip())
        return fn
    return register


def _choose(rng: random.Random, items: list, what: str) -> Any:
    if not items:
        raise CannotPlant(f"the run has no {what}")
    return rng.choice(items)


def _ack(op: OpRef) -> tuple[int, int, str]:
    v = op.complete["value"]
    return v["partition"], v["offset"], v["value"]


# -- lost writes ------------------------------------------------------------------

@_planter("lost-write/missing", A.LOST_WRITE)
def lost_write_missing(run: SynthRun, rng: random.Random) -> Planted:
    """An acked record vanishes from the final read and from every replica,
    while later records stay (the final read reaches past it)."""
    candidates = [op for op in acked_sends(run.history)
                  if _ack(op)[1] < run.final[_ack(op)[0]].end_offset() - 1]
    op = _choose(rng, candidates, "acked send below the end of its partition")
    p, o, v = _ack(op)
    remove_record(run, p, o)
    return Planted(run, A.LOST_WRITE, p, {"how": "missing", "offset": o, "value": v,
                                           "ops": [op.indices()],
                                           "story": f"acked {v}@{o} is gone from every log"})


@_planter("lost-write/tail", A.LOST_WRITE)
def lost_write_tail(run: SynthRun, rng: random.Random) -> Planted:
    """The acked last record of a partition vanishes from the final read and
    every replica: the complete final read now ends just before it."""
    ends = {p: pf.end_offset() - 1 for p, pf in run.final.items()}
    candidates = [op for op in acked_sends(run.history) if _ack(op)[1] == ends[_ack(op)[0]]]
    op = _choose(rng, candidates, "acked send at the end of its partition")
    p, o, v = _ack(op)
    remove_record(run, p, o)
    for rf in run.final[p].replicas.values():  # an uncommitted tail above it goes too
        rf.records = [r for r in rf.records if r[0] < o]
        rf.log_end_offset = min(rf.log_end_offset, o)
        rf.high_watermark = min(rf.high_watermark, o)
    return Planted(run, A.LOST_WRITE, p, {"how": "missing", "offset": o, "value": v,
                                           "ops": [op.indices()],
                                           "story": f"acked {v}@{o}, the last record, is gone"})


@_planter("lost-write/overwritten", A.LOST_WRITE)
def lost_write_overwritten(run: SynthRun, rng: random.Random) -> Planted:
    """Another value (of an info send running alongside) sits at an acked
    record's offset in the final read and every replica."""
    op = _choose(rng, acked_sends(run.history), "acked send")
    p, o, v = _ack(op)
    w = _overwrite_with_concurrent_info_send(run, op, p, o)
    return Planted(run, A.LOST_WRITE, p, {"how": "overwritten", "offset": o, "value": v, "by": w,
                                           "ops": [op.indices()],
                                           "story": f"acked {v}@{o} was overwritten by {w}"})


def _overwrite_with_concurrent_info_send(run: SynthRun, op: OpRef, p: int, o: int) -> str:
    process = fresh_process(run.history)
    w = f"{process}-1"
    invoke, complete = send_lines(process, run.topic, p, w, "info")
    insert_after(run.history, op.invoke, [invoke])
    insert_after(run.history, op.complete, [complete])
    replace_value(run, p, o, w)
    return w


# -- duplicates, inconsistent offsets, truncated reads ----------------------------

@_planter("duplicate", A.DUPLICATE)
def duplicate(run: SynthRun, rng: random.Random) -> Planted:
    """An acked value is written a second time right after itself (every later
    offset moves up by one; polls that read across it return it too)."""
    op = _choose(rng, acked_sends(run.history), "acked send")
    p, o, v = _ack(op)
    new = insert_record(run, p, o, v)
    return Planted(run, A.DUPLICATE, p, {"value": v, "offsets": [o, new], "ops": [op.indices()],
                                          "story": f"{v} sits at {o} and {new}"})


@_planter("inconsistent-offsets", A.INCONSISTENT_OFFSETS)
def inconsistent_offsets(run: SynthRun, rng: random.Random) -> Planted:
    """A poll returns, at a known offset, the value of an info send running
    alongside it instead of the value the log holds there."""
    op, record = _choose(rng, [(op, r) for op in ok_polls(run.history)
                               for r in op.complete["value"]["records"]], "polled record")
    p, o, v = record["partition"], record["offset"], record["value"]
    process = fresh_process(run.history)
    w = f"{process}-1"
    invoke, complete = send_lines(process, run.topic, p, w, "info")
    insert_before(run.history, op.invoke, [invoke])
    insert_after(run.history, op.complete, [complete])
    record["value"] = w
    return Planted(run, A.INCONSISTENT_OFFSETS, p,
                   {"offset": o, "values": [v, w], "ops": [op.indices()],
                    "story": f"a poll saw {w}@{o}; the log holds {v} there"})


@_planter("truncated-read", A.TRUNCATED_READ)
def truncated_read(run: SynthRun, rng: random.Random) -> Planted:
    """A record some poll returned is gone from the final read and every
    replica (later records stay)."""
    candidates = [(op, r) for op in ok_polls(run.history) for r in op.complete["value"]["records"]
                  if r["offset"] < run.final[r["partition"]].end_offset() - 1]
    op, record = _choose(rng, candidates, "polled record below the end of its partition")
    p, o, v = record["partition"], record["offset"], record["value"]
    remove_record(run, p, o)
    return Planted(run, A.TRUNCATED_READ, p, {"offset": o, "value": v, "ops": [op.indices()],
                                               "story": f"a poll saw {v}@{o}; it is gone from every log"})


# -- real-time order: sends and polls ----------------------------------------------

@_planter("nonmonotonic-send", A.NONMONOTONIC_SEND)
def nonmonotonic_send(run: SynthRun, rng: random.Random) -> Planted:
    """Send B (acked at b) is made to begin only after send A (acked at a > b)
    completed: A then completed before B began, yet got the higher offset."""
    acked = acked_sends(run.history)
    pairs = []
    by_partition: dict[int, list[OpRef]] = {}
    for op in acked:
        by_partition.setdefault(_ack(op)[0], []).append(op)
    for ops in by_partition.values():
        ops.sort(key=lambda op: _ack(op)[1])
        pairs += [(ops[i + 1], ops[i]) for i in range(len(ops) - 1)]
    a_op, b_op = _choose(rng, pairs, "two acked sends in one partition")
    p, a, av = _ack(a_op)
    _, b, bv = _ack(b_op)
    move_after(run.history, b_op, a_op.complete)
    return Planted(run, A.NONMONOTONIC_SEND, p,
                   {"offsets": [a, b], "values": [av, bv], "ops": [a_op.indices(), b_op.indices()],
                    "story": f"{av} acked at {a} before {bv} was sent; {bv} got {b}"})


@_planter("future-read", A.FUTURE_READ)
def future_read(run: SynthRun, rng: random.Random) -> Planted:
    """The send of a value some poll returned is made to begin only after that
    poll completed: the poll saw the value before it was sent."""
    sends = {(_ack(op)[0], _ack(op)[2]): op for op in acked_sends(run.history)}
    candidates = [(poll, r) for poll in ok_polls(run.history) for r in poll.complete["value"]["records"]
                  if (r["partition"], r["value"]) in sends]
    poll, record = _choose(rng, candidates, "poll of an acked value")
    p, o, v = record["partition"], record["offset"], record["value"]
    send = sends[(p, v)]
    move_after(run.history, send, poll.complete)
    return Planted(run, A.FUTURE_READ, p, {"offset": o, "value": v,
                                            "ops": [poll.indices(), send.indices()],
                                            "story": f"a poll saw {v}@{o} before {v} was sent"})


# -- polls ------------------------------------------------------------------------

def _poll_pairs(run: SynthRun, min_next: int) -> list[tuple[int, OpRef, OpRef]]:
    return [(p, first, second) for p in sorted(run.final)
            for first, second in consecutive_polls(run.history, p)
            if len(poll_records(second, p)) >= min_next]


@_planter("poll-skip", A.POLL_SKIP)
def poll_skip(run: SynthRun, rng: random.Random) -> Planted:
    """A consumer's poll leaves out the first record it should have returned
    after its previous poll."""
    p, first, second = _choose(rng, _poll_pairs(run, 2), "two consecutive polls of a partition")
    skipped = poll_records(second, p)[0]
    second.complete["value"]["records"].remove(skipped)
    return Planted(run, A.POLL_SKIP, p, {"offset": skipped["offset"], "value": skipped["value"],
                                          "ops": [first.indices(), second.indices()],
                                          "story": f"offset {skipped['offset']} skipped between polls"})


@_planter("nonmonotonic-poll", A.NONMONOTONIC_POLL)
def nonmonotonic_poll(run: SynthRun, rng: random.Random) -> Planted:
    """A consumer's poll returns again the last record of its previous poll."""
    p, first, second = _choose(rng, _poll_pairs(run, 1), "two consecutive polls of a partition")
    again = dict(poll_records(first, p)[-1])
    records = second.complete["value"]["records"]
    records.insert(records.index(poll_records(second, p)[0]), again)
    return Planted(run, A.NONMONOTONIC_POLL, p, {"offset": again["offset"], "value": again["value"],
                                                  "ops": [first.indices(), second.indices()],
                                                  "story": f"offset {again['offset']} polled twice"})


def _polls_with(run: SynthRun, n: int) -> list[tuple[int, OpRef]]:
    return [(p, op) for op in ok_polls(run.history) for p in sorted(run.final)
            if len(poll_records(op, p)) >= n]


@_planter("int-poll-skip", A.INT_POLL_SKIP)
def int_poll_skip(run: SynthRun, rng: random.Random) -> Planted:
    """A poll leaves out a record between two it returns."""
    p, op = _choose(rng, _polls_with(run, 3), "poll with three records of a partition")
    mine = poll_records(op, p)
    skipped = mine[rng.randrange(1, len(mine) - 1)]
    op.complete["value"]["records"].remove(skipped)
    return Planted(run, A.INT_POLL_SKIP, p, {"offset": skipped["offset"], "value": skipped["value"],
                                              "ops": [op.indices()],
                                              "story": f"offset {skipped['offset']} skipped inside a poll"})


@_planter("int-nonmonotonic-poll", A.INT_NONMONOTONIC_POLL)
def int_nonmonotonic_poll(run: SynthRun, rng: random.Random) -> Planted:
    """A poll returns one of its records twice in a row."""
    p, op = _choose(rng, _polls_with(run, 1), "poll with a record")
    twice = rng.choice(poll_records(op, p))
    records = op.complete["value"]["records"]
    records.insert(records.index(twice) + 1, dict(twice))
    return Planted(run, A.INT_NONMONOTONIC_POLL, p, {"offset": twice["offset"], "value": twice["value"],
                                                      "ops": [op.indices()],
                                                      "story": f"offset {twice['offset']} twice in one poll"})


# -- replicas ---------------------------------------------------------------------

@_planter("replica-divergence", A.REPLICA_DIVERGENCE)
def replica_divergence(run: SynthRun, rng: random.Random) -> Planted:
    """A follower holds another value than the leader at an offset below both
    their high watermarks."""
    candidates = []
    for p, pf in sorted(run.final.items()):
        leader = pf.replicas.get(pf.leader)
        if leader is None:
            continue
        for node, rf in sorted(pf.replicas.items()):
            if node == pf.leader:
                continue
            below = min(rf.high_watermark, leader.high_watermark)
            candidates += [(p, node, o) for o, _, _ in rf.records if o < below]
    p, node, o = _choose(rng, candidates, "follower record below both high watermarks")
    rf = run.final[p].replicas[node]
    stale = f"stale-{node}-{o}"
    old = next(v for off, v, _ in rf.records if off == o)
    rf.records = [(off, stale if off == o else v, e) for off, v, e in rf.records]
    return Planted(run, A.REPLICA_DIVERGENCE, p,
                   {"nodes": [run.final[p].leader, node], "offset": o, "values": [old, stale],
                    "story": f"{node} holds {stale}@{o}; the leader {old}"})


# -- what only the log model rules out -------------------------------------------

@_planter("aborted-read", A.ABORTED_READ)
def aborted_read(run: SynthRun, rng: random.Random) -> Planted:
    """The value of a failed send shows up at the end of the final read."""
    failed = [op for op in pair_ops(run.history) if op.f == "send" and op.type == "fail"]
    p = rng.choice(sorted(run.final))
    if failed:
        op = rng.choice(failed)
        p, v = op.invoke["value"]["partition"], op.invoke["value"]["value"]
    else:
        process = fresh_process(run.history)
        v = f"{process}-1"
        lines = [line for line in send_lines(process, run.topic, p, v, "fail") if line]
        insert_after(run.history, run.history[-1] if run.history else None, lines)
        op = pair_ops(run.history)[-1]
    o = append_record(run, p, v)
    return Planted(run, A.ABORTED_READ, p, {"offset": o, "value": v, "ops": [op.indices()],
                                             "story": f"failed send's {v} read at {o}"})


@_planter("phantom-read", A.PHANTOM_READ)
def phantom_read(run: SynthRun, rng: random.Random) -> Planted:
    """A value no send ever wrote shows up at the end of the final read."""
    p = rng.choice(sorted(run.final))
    v = f"phantom-{rng.randrange(10**6)}"
    o = append_record(run, p, v)
    return Planted(run, A.PHANTOM_READ, p, {"offset": o, "value": v, "ops": [],
                                             "story": f"{v}@{o} was never sent"})


@_planter("nonlinearizable/lost-write", A.NONLINEARIZABLE)
def nonlinearizable_lost_write(run: SynthRun, rng: random.Random) -> Planted:
    """An overwritten acked record (see lost-write/overwritten): the search
    finds no linearization."""
    planted = lost_write_overwritten(run, rng)
    return Planted(planted.run, A.NONLINEARIZABLE, planted.partition, planted.details)


@_planter("nonlinearizable/chain", A.NONLINEARIZABLE)
def nonlinearizable_chain(run: SynthRun, rng: random.Random) -> Planted:
    """A poll returned offset o; a send acked at b < o (whose value that poll
    need not have returned) is made to begin after the poll completed. No
    single pair of sends is out of order: only the chain append(o) -> poll ->
    send(b) is, which the search finds (future-read names the same pair)."""
    by_partition: dict[int, list[OpRef]] = {}
    for op in acked_sends(run.history):
        by_partition.setdefault(_ack(op)[0], []).append(op)
    lowest = {p: min(_ack(op)[1] for op in ops) for p, ops in by_partition.items()}
    candidates = [(poll, r) for poll in ok_polls(run.history) for r in poll.complete["value"]["records"]
                  if r["offset"] > lowest.get(r["partition"], r["offset"])]
    rng.shuffle(candidates)
    for poll, record in candidates[:50]:
        returned = {x["value"] for x in poll.complete["value"]["records"]}
        below = [op for op in by_partition[record["partition"]]
                 if _ack(op)[1] < record["offset"] and _ack(op)[2] not in returned]
        if below:
            break
    else:
        raise CannotPlant("the run has no poll above an acked send it did not return")
    send = rng.choice(below)
    p, b, v = _ack(send)
    move_after(run.history, send, poll.complete)
    return Planted(run, A.NONLINEARIZABLE, p,
                   {"offsets": [record["offset"], b], "values": [record["value"], v],
                    "ops": [poll.indices(), send.indices()],
                    "story": f"a poll saw offset {record['offset']}; {v} was sent after it, yet got {b}"})


# -- not an error -------------------------------------------------------------------

@_planter("unseen", A.UNSEEN)
def unseen(run: SynthRun, rng: random.Random) -> Planted:
    """A send acked at the very end of the run, after every poll: in the final
    read, never polled."""
    p = rng.choice(sorted(run.final))
    process = fresh_process(run.history)
    v = f"{process}-1"
    o = append_record(run, p, v)
    epoch = run.final[p].read[-1][2]
    invoke, complete = send_lines(process, run.topic, p, v, "ok", offset=o, epoch=epoch)
    insert_after(run.history, run.history[-1] if run.history else None, [invoke, complete])
    return Planted(run, A.UNSEEN, p, {"offset": o, "value": v, "ops": [[invoke["index"], complete["index"]]],
                                       "story": f"{v} acked at {o} after the last poll"})


# -- consumer groups ------------------------------------------------------------------
#
# Both plant by moving where a group member resumes (its assign's `from` offset) out of what
# the group's commits allow, using bounds read off the history alone: every offset the group's
# committed offset may hold when the member resumes is the offset of a commit that did not fail
# and was invoked before the assign ended — or 0, unless an ok commit completed before the
# member's previous op (the poll in which it asked) began; an ok commit that completed before
# another such commit was invoked is overwritten by it.


def _group_resumes(run: SynthRun) -> list[tuple[OpRef, int, int]]:
    """(the assign, its partition, where its member asked: the invoke of its last op before it
    that is not an assign) of every ok resume of a group member from committed offsets."""
    found = []
    asked: dict[Any, int] = {}
    for op in pair_ops(run.history):  # in invoke order; one op at a time per process
        v = op.invoke["value"]
        if (op.f == "assign" and op.type == "ok" and isinstance(v, dict) and "group" in v
                and isinstance(v.get("from"), dict)):
            for topic, p in v["partitions"]:
                found.append((op, p, asked.get(op.process, op.invoke["index"])))
        if op.f != "assign":
            asked[op.process] = op.invoke["index"]
    return found


def _group_commits(run: SynthRun) -> dict[tuple[str, int], list[tuple[OpRef, int]]]:
    """Per (group, partition): (the commit, its offset of that partition), failed ones left out.
    One pass over the history (a pass per resume was quadratic on big runs)."""
    out: dict[tuple[str, int], list[tuple[OpRef, int]]] = {}
    for op in pair_ops(run.history):
        if op.f == "commit" and op.type != "fail":
            for _, q, o in op.invoke["value"]["offsets"]:
                out.setdefault((op.invoke["value"]["group"], q), []).append((op, o))
    return out


def _known(run: SynthRun, p: int) -> list[int]:
    return sorted({o for o, _, _ in run.final[p].read})


def _set_resume(op: OpRef, p: int, topic: str, offset: int) -> None:
    for line in (op.invoke, op.complete):
        line["value"]["from"][f"{topic}-{p}"] = offset


@_planter("commit-skip/ahead", A.COMMIT_SKIP)
def commit_skip(run: SynthRun, rng: random.Random) -> Planted:
    """A group member resumes just past a known offset above everything its group committed
    (or could have): it skips that record, which no commit covered."""
    candidates = []
    commits_of = _group_commits(run)
    for op, p, _ in _group_resumes(run):
        ends = op.complete["index"]
        high = max([o for c, o in commits_of.get((op.invoke["value"]["group"], p), [])
                    if c.invoke["index"] < ends] + [0])
        above = [k for k in _known(run, p) if k >= high]
        if above:
            candidates.append((op, p, above[0] + 1, high))
    op, p, f, high = _choose(rng, candidates, "group resume with a known offset above its commits")
    _set_resume(op, p, run.topic, f)
    return Planted(run, A.COMMIT_SKIP, p, {"offset": f, "ops": [op.indices()],
                                            "story": f"resumed at {f}, above every commit (at most {high})"})


@_planter("commit-reread/rewound", A.COMMIT_REREAD)
def commit_reread(run: SynthRun, rng: random.Random) -> Planted:
    """A group member resumes at a known offset below everything its group could have
    committed, after an ok commit completed: it reads again what the commit covered."""
    candidates = []
    commits_of = _group_commits(run)
    for op, p, asked in _group_resumes(run):
        ends = op.complete["index"]
        commits = [(c, o) for c, o in commits_of.get((op.invoke["value"]["group"], p), [])
                   if c.invoke["index"] < ends]
        settled = [c for c, _ in commits if c.type == "ok" and c.complete["index"] < asked]
        if not settled:
            continue  # with no commit surely in effect, 0 is allowed
        last_invoke = max(c.invoke["index"] for c in settled)
        # an ok commit some later settled one was invoked after is overwritten: not a bound
        live = [o for c, o in commits if not (c.type == "ok" and c.complete["index"] < asked
                                              and c.complete["index"] < last_invoke)]
        low = min(live)
        below = [k for k in _known(run, p) if k < low]
        if below:
            candidates.append((op, p, below[-1], low))
    op, p, f, low = _choose(rng, candidates, "group resume after an ok commit above a known offset")
    _set_resume(op, p, run.topic, f)
    return Planted(run, A.COMMIT_REREAD, p, {"offset": f, "ops": [op.indices()],
                                              "story": f"resumed at {f}, below every commit (at least {low})"})


def expected_invalid(planted: Planted) -> bool:
    """Whether the planted anomaly makes the run invalid by the default rule."""
    if planted.anomaly == A.UNSEEN:
        return False
    if planted.anomaly == A.DUPLICATE:
        return planted.run.idempotent
    return True

