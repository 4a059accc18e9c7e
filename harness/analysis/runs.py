"""The runs `fencepost analyze` is given: (run id, run directory) for every run of a
campaign directory (its runs/<id>/outcome.json), or for run directories and folders
holding them (the id then is the folder's path below the given one)."""
from __future__ import annotations

from pathlib import Path

from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.campaigns import is_campaign, read_outcomes, run_dir_of
from fencepost.harness.rundir.find import run_dirs
from fencepost.harness.rundir.names import HISTORY_FILE


def analyzed_runs(paths: list[Path]) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for path in paths:
        if not path.is_dir():
            raise BadInput(f"{path} is not a directory: give campaign directories or folders holding runs")
        before = len(found)
        if is_campaign(path):
            for outcome_file, outcome in read_outcomes(path):
                run_dir = run_dir_of(outcome_file, outcome)
                if run_dir is not None:
                    found.append((outcome_file.parent.name, run_dir))
        else:
            for run_dir in run_dirs(path, with_history=True):
                found.append((run_dir.name if run_dir == path else str(run_dir.relative_to(path)), run_dir))
        if len(found) == before:
            raise BadInput(f"{path} holds no run with a {HISTORY_FILE}")
    ids = [run_id for run_id, _ in found]
    if len(set(ids)) != len(ids):
        found = [(f"{i:04d}-{run_id}", d) for i, (run_id, d) in enumerate(found, start=1)]
    return found


def find_expectations(paths: list[Path]) -> dict[str, dict]:
    """Run id -> what its campaign expected it to yield (outcome.json's `expected`), for the
    campaign directories among `paths`; runs elsewhere expect nothing (judged as valid)."""
    expected: dict[str, dict] = {}
    for path in paths:
        if path.is_dir() and is_campaign(path):
            for outcome_file, outcome in read_outcomes(path):
                if outcome.get("expected"):
                    expected[outcome_file.parent.name] = outcome["expected"]
    return expected
