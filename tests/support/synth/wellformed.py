"""Independent checks of synthetic runs, written without the project's checkers
so that tests of the generator and planters do not lean on the code they test.

`history_problems`: the history is well formed (docs/FORMATS.md, history.jsonl): index = line number,
time non-decreasing, at most one op in flight per process, completions match
their invoke. `validity_problems`: the run is valid in the generator's sense: acked
records sit in the final read at their offsets, reads show only what was written
by a send that was not failed, consumers read contiguously, replicas agree below
their high watermarks, and a consumer group member resumes where the generator's
coordinator stood (it takes a commit at the commit's invoke: every ok one, some info ones).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from typing import Any

from tests.support.synth.run import SynthRun


def history_problems(lines: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    pending: dict[Any, dict[str, Any]] = {}
    last_time = -1
    for n, line in enumerate(lines):
        where = f"line {n}"
        if line.get("index") != n:
            problems.append(f"{where}: index {line.get('index')}")
        if not isinstance(line.get("time"), int) or line["time"] < last_time:
            problems.append(f"{where}: time {line.get('time')} after {last_time}")
        last_time = line.get("time", last_time)
        process, type_ = line["process"], line["type"]
        if type_ == "invoke":
            if process in pending:
                problems.append(f"{where}: second invoke of process {process}")
            pending[process] = line
            continue
        invoke = pending.pop(process, None)
        if invoke is None:
            problems.append(f"{where}: {type_} without an invoke of process {process}")
            continue
        if invoke["f"] != line["f"]:
            problems.append(f"{where}: completes {line['f']} but {invoke['f']} was invoked")
        if line["f"] == "send":
            for key in ("topic", "partition", "value"):
                if invoke["value"][key] != line["value"][key]:
                    problems.append(f"{where}: send {key} differs from its invoke")
            if type_ == "ok" and not isinstance(line["value"].get("offset"), int):
                problems.append(f"{where}: ok send without an offset")
    return problems


def validity_problems(run: SynthRun) -> list[str]:
    problems: list[str] = []
    final = {p: {o: v for o, v, _ in pf.read} for p, pf in run.final.items()}
    final_offsets = {p: [o for o, _, _ in pf.read] for p, pf in run.final.items()}
    writers: dict[str, list[str]] = defaultdict(list)  # value -> outcomes of its sends
    pending: dict[Any, dict[str, Any]] = {}
    last_read: dict[tuple[Any, int], int] = {}  # (process, partition) -> last offset polled
    for line in run.history:
        process, type_, f = line["process"], line["type"], line["f"]
        if type_ == "invoke":
            pending[process] = line
            if f == "send":
                writers[line["value"]["value"]].append("invoked")
            continue
        pending.pop(process, None)
        if f == "send":
            v = line["value"]
            writers[v["value"]][-1] = type_
            if type_ == "ok" and final[v["partition"]].get(v["offset"]) != v["value"]:
                problems.append(f"line {line['index']}: acked {v['value']}@{v['offset']} is not "
                                f"in the final read of partition {v['partition']}")
        elif f in ("assign", "crash"):
            for key in [k for k in last_read if k[0] == process]:
                del last_read[key]
        elif f == "poll" and type_ == "ok":
            for r in line["value"]["records"]:
                p, o, v = r["partition"], r["offset"], r["value"]
                if final[p].get(o) != v:
                    problems.append(f"line {line['index']}: polled {v}@{o} is not in the final read")
                prev = last_read.get((process, p))
                if prev is not None:
                    offsets = final_offsets[p]
                    i = _index_of(offsets, prev)
                    expected = offsets[i + 1] if i is not None and i + 1 < len(offsets) else None
                    if o != expected:
                        problems.append(f"line {line['index']}: process {process} read offset {o} "
                                        f"of partition {p} after {prev} (expected {expected})")
                last_read[(process, p)] = o
    seen_values: dict[tuple[int, str], int] = {}
    for p, pf in run.final.items():
        for o, v, _ in pf.read:
            outcomes = writers.get(v)
            if not outcomes:
                problems.append(f"partition {p}: {v}@{o} in the final read was never sent")
            elif all(x == "fail" for x in outcomes):
                problems.append(f"partition {p}: {v}@{o} in the final read was only sent by failed sends")
            if run.idempotent and (p, v) in seen_values:
                problems.append(f"partition {p}: {v} at {seen_values[(p, v)]} and {o} (idempotent)")
            seen_values[(p, v)] = o
        problems += _replica_problems(p, pf)
    problems += _real_time_problems(run)
    problems += _group_problems(run)
    return problems


def _group_problems(run: SynthRun) -> list[str]:
    """A group member's resume (an assign naming its group, from committed offsets) must start at
    what the coordinator may hold at the assign's invoke: the latest ok commit invoked before it,
    or an info commit invoked after that one (taken or not), or 0 when no ok commit came first."""
    outcome: dict[int, str] = {}  # invoke index -> the commit's completion type
    pending: dict[Any, int] = {}
    for line in run.history:
        if line["f"] != "commit":
            continue
        if line["type"] == "invoke":
            pending[line["process"]] = line["index"]
        else:
            outcome[pending.pop(line["process"])] = line["type"]
    problems = []
    commits: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)  # -> (invoke, offset)
    for line in run.history:
        v = line["value"]
        if line["type"] != "invoke":
            continue
        if line["f"] == "commit":
            for _, p, o in v["offsets"]:
                commits[(v["group"], p)].append((line["index"], o))
        elif line["f"] == "assign" and "group" in v and isinstance(v.get("from"), dict):
            for _, p in v["partitions"]:
                made = commits.get((v["group"], p), [])
                oks = [i for i, (index, _) in enumerate(made) if outcome.get(index) == "ok"]
                after = made[oks[-1]:] if oks else made
                allowed = {o for index, o in after if outcome.get(index, "info") != "fail"}
                if not oks:
                    allowed.add(0)
                offset = v["from"].get(f"{run.topic}-{p}")
                if offset not in allowed:
                    problems.append(f"line {line['index']}: process {line['process']} resumes partition {p} "
                                    f"at {offset}, the coordinator held one of {sorted(allowed)}")
    return problems


def _real_time_problems(run: SynthRun) -> list[str]:
    """A send's value may only sit above every offset acked or polled before the
    send began (offsets grow with time)."""
    where: dict[tuple[int, str], set[int]] = defaultdict(set)  # (partition, value) -> offsets
    for p, pf in run.final.items():
        for o, v, _ in pf.read:
            where[(p, v)].add(o)
    for line in run.history:
        if line["f"] == "send" and line["type"] == "ok":
            v = line["value"]
            where[(v["partition"], v["value"])].add(v["offset"])
        elif line["f"] == "poll" and line["type"] == "ok":
            for r in line["value"]["records"]:
                where[(r["partition"], r["value"])].add(r["offset"])
    problems = []
    seen_max: dict[int, int] = defaultdict(lambda: -1)  # partition -> highest offset acked/polled so far
    for line in run.history:
        f, type_ = line["f"], line["type"]
        if f == "send" and type_ == "invoke":
            p, v = line["value"]["partition"], line["value"]["value"]
            low = min(where.get((p, v), ()), default=None)
            if low is not None and low <= seen_max[p]:
                problems.append(f"line {line['index']}: {v} sits at {low}, but offset {seen_max[p]} "
                                f"was acked or polled before it was sent")
        elif f == "send" and type_ == "ok":
            p = line["value"]["partition"]
            seen_max[p] = max(seen_max[p], line["value"]["offset"])
        elif f == "poll" and type_ == "ok":
            for r in line["value"]["records"]:
                seen_max[r["partition"]] = max(seen_max[r["partition"]], r["offset"])
    return problems


def _replica_problems(partition: int, pf: Any) -> list[str]:
    problems = []
    logs = {n: {o: v for o, v, _ in rf.records} for n, rf in pf.replicas.items()}
    for n, rf in pf.replicas.items():
        if rf.high_watermark > rf.log_end_offset:
            problems.append(f"partition {partition} {n}: HW {rf.high_watermark} > LEO {rf.log_end_offset}")
        if rf.records and rf.records[-1][0] >= rf.log_end_offset:
            problems.append(f"partition {partition} {n}: a record at or above LEO")
    nodes = sorted(pf.replicas)
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            below = min(pf.replicas[a].high_watermark, pf.replicas[b].high_watermark)
            for o in set(logs[a]) | set(logs[b]):
                if o < below and logs[a].get(o) != logs[b].get(o):
                    problems.append(f"partition {partition}: {a} and {b} differ at {o} below HW {below}")
    return problems


def _index_of(offsets: list[int], offset: int) -> int | None:
    i = bisect_left(offsets, offset)
    return i if i < len(offsets) and offsets[i] == offset else None
