"""The checks of one partition, each named, composed into a `PartitionReport`.

A check (`CHECKS`) takes a partition, its observations (`checkers.offsets.observe`) and the
options, and returns its `Findings`: anomalies, the stats it measured, why the partition cannot
be called valid, and (the linearizability check) its search's result. `merge` decides the
partition's report from the findings of its checks, in the order of `CHECKS`: its anomalies in
that order (a nonlinearizable one last), its stats, its unknown reasons. `check_partition` runs
every check and merges them: the one entry point the harness CLI and the Spark pipeline call per
partition. Checks are independent once the observations are built, so a scheduler may run some
in one process and the rest in another (`run_checks` with the names) and merge the findings
(harness/check/checking.py does); the checks know nothing of it. Which anomalies make a run invalid is
the caller's choice (harness/check/verdict.py decides; `checkers.anomaly.default_invalid` is the
documented default, docs/CHECKERS.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Callable

from fencepost.checkers.anomaly import NONLINEARIZABLE, Anomaly
from fencepost.checkers.groups import check_groups
from fencepost.checkers.offsets import Observations, check_offsets, observe
from fencepost.checkers.partition import CheckOptions, PartitionHistory
from fencepost.checkers.polls import check_polls
from fencepost.checkers.replicas import replica_divergence
from fencepost.checkers.unseen import unseen


@dataclass(slots=True)
class PartitionReport:
    topic: str
    partition: int
    anomalies: list[Anomaly]
    stats: dict[str, Any]
    linearizable: bool | None = None  # None: not searched, or the search gave up
    linear_explored: int = 0
    linear_method: str | None = None  # "witness" or "search": what decided
    counterexample: list[dict[str, Any]] = field(default_factory=list)
    linear_html: str | None = None
    # Why this partition's verdict cannot be `valid` even without anomalies.
    unknown_reasons: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LinearResult:
    linearizable: bool | None
    explored: int
    method: str | None
    counterexample: list[dict[str, Any]]
    html: str | None


@dataclass(slots=True)
class Findings:
    """What one check found in one partition."""

    anomalies: list[Anomaly] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    unknown_reasons: list[str] = field(default_factory=list)
    linear: LinearResult | None = None  # the linearizability check's search, when it ran


Check = Callable[[PartitionHistory, Observations, CheckOptions, "int | None"], Findings]


def _counts(ph: PartitionHistory, obs: Observations, options: CheckOptions, keep: int | None) -> Findings:
    """No anomaly: what the partition holds (sends by outcome, polls, the final read)."""
    outcomes = {"ok": 0, "fail": 0, "info": 0}
    for s in ph.sends:
        outcomes[s.outcome] += 1
    polls_ok = [p for p in ph.polls if p.outcome == "ok"]
    return Findings(stats={
        "sends_ok": outcomes["ok"], "sends_fail": outcomes["fail"], "sends_info": outcomes["info"],
        "polls": len(ph.polls), "polls_ok": len(polls_ok),
        "records_polled": sum(map(len, map(attrgetter("records"), polls_ok))),
        "final_length": None if ph.final is None else len(ph.final),
        "final_complete": ph.final is not None and ph.final_complete,
    })


def _offsets(ph: PartitionHistory, obs: Observations, options: CheckOptions, keep: int | None) -> Findings:
    """The offset checks (docs/CHECKERS.md), and why acked writes could not be judged: a final
    read missing or incomplete."""
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
    return Findings(list(offsets.anomalies), {"unjudged": offsets.unjudged}, unknown)


def _polls(ph: PartitionHistory, obs: Observations, options: CheckOptions, keep: int | None) -> Findings:
    return Findings(list(check_polls(ph, obs, obs.known_offsets())))


def _groups(ph: PartitionHistory, obs: Observations, options: CheckOptions, keep: int | None) -> Findings:
    return Findings(list(check_groups(ph, obs.known_offsets())))


def _replicas(ph: PartitionHistory, obs: Observations, options: CheckOptions, keep: int | None) -> Findings:
    return Findings(list(replica_divergence(ph)))


def _unseen(ph: PartitionHistory, obs: Observations, options: CheckOptions, keep: int | None) -> Findings:
    """Acked writes no consumer saw; with `keep`, those past the first `keep` may come without
    details (see checkers/unseen.py)."""
    found = unseen(ph, obs, keep=keep)
    return Findings(list(found.anomalies), {"unseen": len(found.anomalies), "unseen_in_final": found.in_final,
                                            "unseen_series": found.series})


def _linearizability(ph: PartitionHistory, obs: Observations, options: CheckOptions,
                     keep: int | None) -> Findings:
    """With `options.linearizability`, the search (the costly, optional part of a check)."""
    if not options.linearizability:
        return Findings()
    return _search(ph, options, obs)


# Every check, in the order a report lists their anomalies.
CHECKS: dict[str, Check] = {"counts": _counts, "offsets": _offsets, "polls": _polls, "groups": _groups,
                            "replicas": _replicas, "unseen": _unseen, "linearizability": _linearizability}
# What a report's stats hold when a check did not say.
NO_STATS = {"unjudged": 0, "unseen": 0, "unseen_in_final": 0, "unseen_series": []}


def check_partition(ph: PartitionHistory, options: CheckOptions,
                    keep: int | None = None) -> PartitionReport:
    """Every check of docs/CHECKERS.md on one partition (the linearizability search if
    `options.linearizability`), merged. With `keep`, a check may leave anomalies past the
    first `keep` of their name without details (`unseen` does: see there); counts and order
    stay exact."""
    return merge(ph.topic, ph.partition, run_checks(ph, options, keep=keep))


def run_checks(ph: PartitionHistory, options: CheckOptions, names: tuple[str, ...] | None = None,
               keep: int | None = None, obs: Observations | None = None) -> dict[str, Findings]:
    """The findings of the checks `names` (all of `CHECKS` by default) on `ph`; `obs` is
    `observe(ph)`, built here when not given."""
    obs = obs if obs is not None else observe(ph)
    unknown = [name for name in (names or ()) if name not in CHECKS]
    if unknown:
        raise ValueError(f"no check named {unknown[0]!r}: the checks are {', '.join(CHECKS)}")
    return {name: CHECKS[name](ph, obs, options, keep) for name in (names or CHECKS)}


def merge(topic: str, partition: int, findings: dict[str, Findings]) -> PartitionReport:
    """A partition's report from its checks' findings (each check's once), in `CHECKS` order
    whatever the order given: anomalies (a nonlinearizable one last), stats, unknown reasons,
    and the search's result."""
    ordered = [findings[name] for name in CHECKS if name in findings]
    anomalies = [a for f in ordered for a in f.anomalies if a.name != NONLINEARIZABLE]
    anomalies += [a for f in ordered for a in f.anomalies if a.name == NONLINEARIZABLE]
    stats: dict[str, Any] = {}
    for f in ordered:
        stats.update(f.stats)
    for key, default in NO_STATS.items():
        stats.setdefault(key, list(default) if isinstance(default, list) else default)
    report = PartitionReport(topic, partition, anomalies, stats,
                             unknown_reasons=[r for f in ordered for r in f.unknown_reasons])
    linear = next((f.linear for f in ordered if f.linear is not None), None)
    if linear is not None:
        report.linearizable = linear.linearizable
        report.linear_explored = linear.explored
        report.linear_method = linear.method
        report.counterexample = linear.counterexample
        report.linear_html = linear.html
    return report


def _search(ph: PartitionHistory, options: CheckOptions, obs: Observations) -> Findings:
    # Imported here: the search is the costly, optional part of a check.
    from fencepost.checkers.linear.kafka import check_partition as linear_check

    result = linear_check(ph, options, obs)
    found = Findings(linear=LinearResult(result.linearizable, result.explored, result.method,
                                         result.counterexample, result.html))
    if result.linearizable is None:
        found.unknown_reasons.append(
            f"the linearizability search of {ph.topic}/{ph.partition} gave up after "
            f"{result.explored} states (budget {options.search_budget}); raise search_budget "
            f"to decide it")
    elif result.linearizable is False:
        ops = [[step["invoke_index"], step.get("complete_index")]
               for step in result.counterexample if "invoke_index" in step]
        why = getattr(result, "explanation", "") or (
            "the counterexample is a set of its ops that admits no such order by itself")
        found.anomalies.append(Anomaly(NONLINEARIZABLE, ph.topic, ph.partition, {
            "counterexample": result.counterexample, "explored": result.explored, "ops": ops,
            "explanation": f"the operations of {ph.topic}/{ph.partition} admit no order "
                           f"consistent with real time and a single log: {why}"}))
    return found
