"""What a campaign found, per configuration and per run, from one campaign directory or the
shards of one campaign (`--shard I/N` on several machines, on shared storage): the figures
of `fencepost compare` (harness/compare/: runs, invalid, the invalid-run rate with its
Wilson interval, Fisher's exact test against the baseline or the row above, the median time
to first detection, the liveness-failure rate with its interval and p; one implementation,
so `fencepost analyze` gives the same numbers) beside what each run was expected to yield
(harness/campaign/expect.py) and whether it did.

Rules:
- Every directory must be of one campaign (the same name and planned runs); shards may come
  in any number and order, each run once; a planned run no directory has finished is
  `missing` (a shard not given, a campaign still running or stopped).
- A run's verdict, anomalies, first detection and liveness verdict come from its run
  directory, as compare reads it; a run that crashed before its history began counts as crashed.
- A configuration with any run that failed liveness is flagged (`ConfigLine.liveness_flagged`),
  whatever its runs' verdicts and expectations: a stuck consumer never hides behind a valid
  verdict.
- The baseline: the one given, else the campaign file's `baseline`, else none (each row of a
  fault group against the row above it).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fencepost.harness.campaign.expect import Expectation, campaign_exit_code, status_of
from fencepost.harness.compare.formats import as_dict
from fencepost.harness.compare.order import label
from fencepost.harness.compare.table import Row
from fencepost.harness.errors import EXIT_VALID, BadInput
from fencepost.harness.rundir.campaigns import read_outcomes, read_plan, run_dir_of
from fencepost.harness.rundir.names import REPORT_FILE


@dataclass(frozen=True)
class RunLine:
    run_id: str
    configuration: tuple[str, str, str]  # system, truncation, faults
    verdict: str
    status: str  # expected, surprise, unknown, crashed
    why: str
    expected: Expectation
    anomaly_counts: dict[str, int]
    first_detection_s: float | None
    seconds: float
    run_dir: Path | None
    shard: str | None
    liveness: str | None = None  # results.json's liveness verdict: ok, failed, unknown (None: not judged)


@dataclass(frozen=True)
class ConfigLine:
    row: Row  # compare's row: the figures
    expected: tuple[str, ...]  # what its runs were expected to yield, in words (one per distinct expectation)
    statuses: dict[str, int]  # status -> runs

    @property
    def surprises(self) -> int:
        return self.statuses.get("surprise", 0)

    @property
    def name(self) -> str:
        return label(self.row.system, self.row.truncation)

    @property
    def liveness_flagged(self) -> bool:
        """Some run of this configuration failed liveness (a stuck consumer, say), valid or not."""
        return self.row.liveness_failed > 0


@dataclass(frozen=True)
class CampaignSummary:
    name: str
    directories: tuple[Path, ...]
    shards: tuple[str, ...]  # "1/2", ...; () for a whole campaign
    planned: int
    missing: tuple[str, ...]  # planned run ids without an outcome
    baseline: str | None
    configurations: tuple[ConfigLine, ...]
    runs: tuple[RunLine, ...] = field(default=())

    @property
    def surprises(self) -> int:
        return sum(r.status == "surprise" for r in self.runs)

    @property
    def exit_code(self) -> int:
        """As the campaign's (`campaign_exit_code`, harness/campaign/expect.py)."""
        return campaign_exit_code((r.status, r.verdict) for r in self.runs)

    @property
    def green(self) -> bool:
        return self.exit_code == EXIT_VALID


def summarize(directories: list[Path], baseline: str | None = None) -> CampaignSummary:
    from fencepost.harness.compare.collect import crashed_result, result_of
    from fencepost.harness.compare.significance import Baseline, with_p_values
    from fencepost.harness.compare.table import rows

    if not directories:
        raise BadInput("give at least one campaign directory")
    plans = [(d, read_plan(d)) for d in directories]
    name, planned = plans[0][1].get("name", "?"), plans[0][1]["runs"]
    for d, plan in plans[1:]:
        if plan.get("name") != name or plan["runs"] != planned:
            raise BadInput(f"{d} is not a shard of the campaign in {directories[0]} (another name or other planned "
                           "runs): give the directories of one campaign's shards")
    baseline = baseline or next((p.get("baseline") for _, p in plans if p.get("baseline")), None)
    lines: list[RunLine] = []
    results = []
    seen: dict[str, Path] = {}
    for d, plan in plans:
        for outcome_file, outcome in read_outcomes(d):
            run_id = outcome.get("run_id", outcome_file.parent.name)
            if run_id in seen:
                raise BadInput(f"run {run_id} is in both {seen[run_id]} and {d}: give each shard once (the shards "
                               "of one campaign hold each run once)")
            seen[run_id] = d
            run_dir = run_dir_of(outcome_file, outcome)
            result = (result_of(run_dir) if run_dir is not None
                      else crashed_result(outcome_file.parent, outcome.get("config", {})))
            results.append(result)
            status = status_of(outcome)
            lines.append(RunLine(run_id, result.configuration, result.verdict, status,
                                 outcome.get("why") or result.verdict, Expectation.from_json(outcome.get("expected")),
                                 dict(result.anomaly_counts), result.first_detection_s,
                                 float(outcome.get("seconds") or 0.0), run_dir, plan.get("shard"),
                                 result.liveness))
    table = with_p_values(rows(results), Baseline.parse(baseline) if baseline else None) if results else []
    configs = []
    for row in table:
        mine = [line for line in lines if line.configuration == (row.system, row.truncation, row.faults)]
        configs.append(ConfigLine(row, tuple(dict.fromkeys(line.expected.describe() for line in mine)),
                                  dict(Counter(line.status for line in mine))))
    order = {run_id: n for n, run_id in enumerate(planned)}
    lines.sort(key=lambda line: order.get(line.run_id, len(order)))
    shards = tuple(sorted({p["shard"] for _, p in plans if p.get("shard")}))
    return CampaignSummary(name, tuple(directories), shards, len(planned),
                           tuple(r for r in planned if r not in seen), baseline, tuple(configs), tuple(lines))


def to_json(summary: CampaignSummary, out: Path) -> dict[str, Any]:
    """summary.json: the campaign, each configuration (compare's row as `fencepost compare
    --format json` gives it, plus expected, statuses and surprises) and each run (links
    relative to `out`, where summary.json is)."""
    import os

    def link(run: RunLine) -> str | None:
        return None if run.run_dir is None else os.path.relpath(run.run_dir / REPORT_FILE, out)

    return {
        "campaign": summary.name, "directories": [str(d) for d in summary.directories],
        "shards": list(summary.shards), "planned": summary.planned, "finished": len(summary.runs),
        "missing": list(summary.missing), "baseline": summary.baseline, "surprises": summary.surprises,
        "exit_code": summary.exit_code, "green": summary.green,
        "configurations": [{**as_dict(c.row), "expected": list(c.expected), "statuses": c.statuses,
                            "surprises": c.surprises} for c in summary.configurations],
        "runs": [{"run_id": r.run_id, "system": r.configuration[0], "truncation": r.configuration[1],
                  "faults": r.configuration[2], "verdict": r.verdict, "status": r.status, "why": r.why,
                  "expected": r.expected.to_json(), "anomaly_counts": r.anomaly_counts,
                  "first_detection_s": r.first_detection_s, "liveness": r.liveness, "seconds": r.seconds,
                  "shard": r.shard,
                  "run_dir": None if r.run_dir is None else str(r.run_dir), "report": link(r)}
                 for r in summary.runs],
    }
