"""Running a campaign: its runs one after another, each on a fresh cluster, in
`RESULTS/campaigns/<name>/<YYYYmmddTHHMMSS><UTC offset>-<6 hex>/` (`latest` beside them):

  campaign.json              the campaign file's name, its source and the planned run ids
  runs/<run-id>/outcome.json the run's settings and configuration, verdict, exit code, anomaly
                             counts, run directory, seconds
  runs/<run-id>/<run dirs>   what `fencepost run` writes (results/ of that run)
  junit.xml                  one testcase per finished run

`--resume` continues the latest campaign directory of that name: runs with an
outcome.json are skipped. A run that crashes (RunError or any exception) is recorded
as crashed and the campaign goes on; Ctrl-C stops it after the run's own heal and
teardown. Exit code per DESIGN.md §3.5: 255 if any run crashed, else 2 if any
unknown, else 1 if any invalid, else 0.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, TextIO

from harness.campaign.junit import JUNIT_FILE, write_junit
from harness.campaign.plan import Campaign, PlannedRun
from harness.errors import EXIT_CRASH, EXIT_INVALID, EXIT_UNKNOWN, EXIT_VALID, BadInput
from harness.run.store import LATEST, new_run_dir

CAMPAIGNS = "campaigns"
PLAN_FILE = "campaign.json"
OUTCOME_FILE = "outcome.json"
EXIT_BY_VERDICT = {"valid": EXIT_VALID, "invalid": EXIT_INVALID, "unknown": EXIT_UNKNOWN, "crashed": EXIT_CRASH}

RunOne = Callable[[PlannedRun, Path], dict[str, Any]]


def campaign_dir(results: Path, campaign: Campaign, resume: bool) -> Path:
    """A fresh campaign directory, or with `resume` the latest one of this campaign (checked
    to hold the same planned runs)."""
    home = results / CAMPAIGNS / campaign.name
    if not resume:
        directory = new_run_dir(results / CAMPAIGNS, campaign.name)
        _write_json(directory / PLAN_FILE, {"name": campaign.name, "source": str(campaign.source),
                                            "runs": [r.run_id for r in campaign.runs]})
        return directory
    latest = home / LATEST
    if not latest.exists():
        raise BadInput(f"--resume: campaign {campaign.name} has no directory under {home} yet; "
                       "start it without --resume")
    directory = latest.resolve()
    planned = json.loads((directory / PLAN_FILE).read_text())["runs"]
    if planned != [r.run_id for r in campaign.runs]:
        raise BadInput(f"--resume: {directory} was planned with other runs than {campaign.source} now "
                       "gives (the matrix or base changed); start a new campaign without --resume")
    return directory


def run_campaign(campaign: Campaign, directory: Path, run_one: RunOne, out: TextIO = sys.stderr) -> int:
    """Every planned run without an outcome; the campaign's exit code."""
    outcomes: list[dict[str, Any]] = []
    todo = []
    for run in campaign.runs:
        done = directory / "runs" / run.run_id / OUTCOME_FILE
        if done.is_file():
            outcomes.append(json.loads(done.read_text()))
        else:
            todo.append(run)
    if outcomes:
        print(f"campaign {campaign.name}: resuming, {len(outcomes)} of {len(campaign.runs)} runs done already",
              file=out)
    started = time.monotonic()
    for n, run in enumerate(todo):
        print(f"campaign {campaign.name}: run {len(outcomes) + 1}/{len(campaign.runs)} {run.run_id}; "
              f"{_tally(outcomes)}{_eta(started, n, len(todo))}", file=out, flush=True)
        where = directory / "runs" / run.run_id
        where.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        try:
            outcome = run_one(run, where)
        except KeyboardInterrupt:
            print(f"campaign {campaign.name}: interrupted; continue with --resume", file=out)
            raise
        except Exception as e:  # a crashed run is a result of the campaign, not its end
            outcome = {"verdict": "crashed", "exit_code": EXIT_CRASH, "error": f"{type(e).__name__}: {e}",
                       "traceback": traceback.format_exc(limit=8)}
        outcome = {"run_id": run.run_id, "settings": dict(run.settings),
                   "config": {"system": run.spec.system, "truncation": run.spec.truncation,
                              "faults": run.spec.faults or "none"},
                   "seconds": round(time.monotonic() - began, 1), **outcome}
        _write_json(where / OUTCOME_FILE, outcome)
        outcomes.append(outcome)
        write_junit(directory / JUNIT_FILE, campaign.name, outcomes)
    write_junit(directory / JUNIT_FILE, campaign.name, outcomes)
    print(f"campaign {campaign.name}: {len(outcomes)} runs; {_tally(outcomes)}", file=out)
    print(f"campaign directory: {directory}", file=out)
    return campaign_exit_code(outcomes)


def campaign_exit_code(outcomes: list[dict[str, Any]]) -> int:
    verdicts = {o["verdict"] for o in outcomes}
    for verdict in ("crashed", "unknown", "invalid"):
        if verdict in verdicts:
            return EXIT_BY_VERDICT[verdict]
    return EXIT_VALID


def _tally(outcomes: list[dict[str, Any]]) -> str:
    counts = {v: sum(o["verdict"] == v for o in outcomes) for v in EXIT_BY_VERDICT}
    return ", ".join(f"{v} {n}" for v, n in counts.items())


def _eta(started: float, done: int, total: int) -> str:
    if not done:
        return ""
    left = (time.monotonic() - started) / done * (total - done)
    return f"; ETA {int(left // 60)}m{int(left % 60):02d}s"


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)
