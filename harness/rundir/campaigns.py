"""Reading a campaign directory (written by harness/campaign/conductor.py): its plan
(campaign.json) and its runs' outcome.json files, and the run directory each outcome names.

A run directory is found relative to the campaign directory first (`run_path`), so a
campaign copied elsewhere (a CI artifact downloaded, shards on storage mounted at another
path) still finds its runs; else at the absolute `run_dir` it was written to.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.find import has_history, is_campaign_dir
from fencepost.harness.rundir.names import CAMPAIGN_FILE, CAMPAIGN_RUNS_DIR, OUTCOME_FILE


def is_campaign(path: Path) -> bool:
    return is_campaign_dir(path)


def read_plan(directory: Path) -> dict[str, Any]:
    try:
        plan = json.loads((directory / CAMPAIGN_FILE).read_text())
    except FileNotFoundError:
        raise BadInput(f"{directory}: not a campaign directory (no {CAMPAIGN_FILE}); give "
                       "RESULTS/campaigns/NAME/<time>-<hex>, e.g. results/campaigns/ci/latest") from None
    except (OSError, ValueError) as e:
        raise BadInput(f"{directory / CAMPAIGN_FILE}: cannot read it as JSON ({e})") from None
    if not isinstance(plan, dict) or not isinstance(plan.get("runs"), list):
        raise BadInput(f"{directory / CAMPAIGN_FILE}: not a campaign plan (no list of runs)")
    return plan


def read_outcomes(directory: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(outcome file, outcome) of every finished run, in run order."""
    found = []
    for path in sorted(directory.glob(f"{CAMPAIGN_RUNS_DIR}/*/{OUTCOME_FILE}")):
        try:
            outcome = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise BadInput(f"{path}: cannot read it as JSON ({e}); run the campaign with --resume to "
                           "run that run again after removing the file") from None
        if isinstance(outcome, dict):
            found.append((path, outcome))
    return found


def run_dir_of(outcome_file: Path, outcome: dict[str, Any]) -> Path | None:
    """The run directory of an outcome, where it is now; None when it has none (a crash
    before the run began) or it is gone."""
    campaign = outcome_file.parent.parent.parent
    for candidate in (campaign / outcome["run_path"] if outcome.get("run_path") else None,
                      Path(outcome["run_dir"]) if outcome.get("run_dir") else None):
        if candidate is not None and has_history(candidate):
            return candidate
    return None
