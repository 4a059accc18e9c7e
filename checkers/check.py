"""The whole check of one partition: every offset, poll, replica and unseen
check, then the linearizability search, gathered into a `PartitionReport`.

This is the one entry point the harness CLI and the Spark pipeline call per
partition. Its two halves (`check_half`: the offset checks and the
linearizability search; the poll, replica and unseen checks) can also run in
two processes on one partition, their reports joined by `join_halves` into
the very report `check_partition` gives. Which anomalies make a run invalid
is the caller's choice (harness/verdict.py decides; `checkers.anomaly.default_invalid`
is the documented default, docs/CHECKERS.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from checkers.anomaly import NONLINEARIZABLE, Anomaly
from checkers.groups import check_groups
from checkers.offsets import Observations, check_offsets, observe
from checkers.partition import CheckOptions, PartitionHistory
from checkers.polls import check_polls
from checkers.replicas import replica_divergence
from checkers.unseen import unseen

@dataclass(slots=True)
class PartitionReport:
    topic: str
    partition: int
    anomalies: list[Anomaly]
    stats: dict[str, Any]
    linearizable: bool | None = None  # None: not searched, or the search gave up
    linear_explored: int = 0
    linear_method: str | None = None  # "witness" or "search": what decided
    counterexample: list[dict] = field(default_factory=list)
    linear_html: str | None = None
    # Why this partition's verdict cannot be `valid` even without anomalies.
    unknown_reasons: list[str] = field(default_factory=list)


# The two halves of a partition's check (`check_half`): independent once the
# observations are built, so that two processes can share one partition.
OFFSETS_HALF = "offsets"  # offset checks and the linearizability search
READS_HALF = "reads"  # poll order, consumer groups, replicas, unseen, and the stats
HALVES = (OFFSETS_HALF, READS_HALF)


def check_partition(ph: PartitionHistory, options: CheckOptions,
                    keep: int | None = None) -> PartitionReport:
    """Every check of docs/CHECKERS.md on one partition, then (if
    `options.linearizability`) the linearizability search. With `keep`, a
    check may leave anomalies past the first `keep` of their name without
    details (`unseen` does: see there); counts and order stay exact."""
    obs = observe(ph)
    return join_halves(check_half(ph, options, OFFSETS_HALF, obs),
                       check_half(ph, options, READS_HALF, obs, keep))


def check_half(ph: PartitionHistory, options: CheckOptions, half: str,
               obs: Observations | None = None, keep: int | None = None) -> PartitionReport:
    """One half of `check_partition` (OFFSETS_HALF or READS_HALF), as a
    partial report for `join_halves`; `obs` is `observe(ph)`, built here
    when not given; `keep` as there."""
    obs = obs if obs is not None else observe(ph)
    if half == READS_HALF:
        not_seen = unseen(ph, obs, keep=keep)
        known = obs.known_offsets()
        anomalies = [*check_polls(ph, obs, known), *check_groups(ph, known), *replica_divergence(ph),
                     *not_seen.anomalies]
        # "unjudged" is the offsets half's: set by join_halves.
        return PartitionReport(ph.topic, ph.partition, anomalies,
                               _stats(ph, 0, len(not_seen.anomalies), not_seen.in_final,
                                      not_seen.series))
    if half != OFFSETS_HALF:
        raise ValueError(f"half must be one of {HALVES}, not {half!r}")
    offsets = check_offsets(ph, obs)
    where = f"{ph.topic}/{ph.partition}"
    unknown: list[str] = []
    if ph.final is None:
        unknown.append(f"no final read of {where}: {offsets.unjudged} acked write(s) and every "
                       f"polled record could not be judged (see the final-read phase in "
                       f"fencepost.log)")
    elif not ph.final_complete:
        last = max((o for o, _ in ph.final), default=None)
        stopped = "it holds no record" if last is None else f"it stopped after offset {last}"
        unknown.append(f"the final read of {where} is incomplete ({stopped}): "
                       f"{offsets.unjudged} acked write(s) above it could not be judged")

    report = PartitionReport(ph.topic, ph.partition, list(offsets.anomalies),
                             {"unjudged": offsets.unjudged}, unknown_reasons=unknown)
    if options.linearizability:
        _search(ph, options, report, obs)
    return report


def join_halves(offsets: PartitionReport, reads: PartitionReport) -> PartitionReport:
    """The report of `check_partition` from its two halves: the offset
    anomalies, then those of the reads half, then a nonlinearizable one."""
    found = [a for a in offsets.anomalies if a.name != NONLINEARIZABLE]
    linear = [a for a in offsets.anomalies if a.name == NONLINEARIZABLE]
    stats = reads.stats
    stats["unjudged"] = offsets.stats["unjudged"]
    return PartitionReport(offsets.topic, offsets.partition, [*found, *reads.anomalies, *linear],
                           stats, offsets.linearizable, offsets.linear_explored,
                           offsets.linear_method, offsets.counterexample, offsets.linear_html,
                           offsets.unknown_reasons)


def _search(ph: PartitionHistory, options: CheckOptions, report: PartitionReport,
            obs: Observations) -> None:
    # Imported here: the search is the costly, optional part of a check.
    from checkers.linear.kafka import check_partition as linear_check

    result = linear_check(ph, options, obs)
    report.linearizable = result.linearizable
    report.linear_explored = result.explored
    report.linear_method = result.method
    report.counterexample = result.counterexample
    report.linear_html = result.html
    if result.linearizable is None:
        report.unknown_reasons.append(
            f"the linearizability search of {ph.topic}/{ph.partition} gave up after "
            f"{result.explored} states (budget {options.search_budget}); raise search_budget "
            f"to decide it")
    elif result.linearizable is False:
        ops = [[step["invoke_index"], step.get("complete_index")]
               for step in result.counterexample if "invoke_index" in step]
        why = getattr(result, "explanation", "") or (
            "the counterexample is a set of its ops that admits no such order by itself")
        report.anomalies.append(Anomaly(NONLINEARIZABLE, ph.topic, ph.partition, {
            "counterexample": result.counterexample, "explored": result.explored, "ops": ops,
            "explanation": f"the operations of {ph.topic}/{ph.partition} admit no order "
                           f"consistent with real time and a single log: {why}"}))


def _stats(ph: PartitionHistory, unjudged: int, unseen_count: int, unseen_in_final: int,
           unseen_series: list[list[int]]) -> dict[str, Any]:
    outcomes = {"ok": 0, "fail": 0, "info": 0}
    for s in ph.sends:
        outcomes[s.outcome] += 1
    polls_ok = [p for p in ph.polls if p.outcome == "ok"]
    records = sum(map(len, map(attrgetter("records"), polls_ok)))
    return {
        "sends_ok": outcomes["ok"], "sends_fail": outcomes["fail"], "sends_info": outcomes["info"],
        "polls": len(ph.polls), "polls_ok": len(polls_ok),
        "records_polled": records,
        "final_length": None if ph.final is None else len(ph.final),
        "final_complete": ph.final is not None and ph.final_complete,
        "unjudged": unjudged,
        "unseen": unseen_count,
        "unseen_in_final": unseen_in_final,
        "unseen_series": unseen_series,
    }
