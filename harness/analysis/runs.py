"""The runs `fencepost analyze` is given: (run id, run directory) for every run of a
campaign directory (its runs/<id>/outcome.json), or for run directories and folders
holding them (the id then is the folder's path below the given one)."""
from __future__ import annotations

from pathlib import Path

from harness.campaign.outcomes import is_campaign, read_outcomes, run_dir_of
from harness.errors import BadInput


def find_runs(paths: list[Path]) -> list[tuple[str, Path]]:
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
        elif (path / "history.jsonl").is_file():
            found.append((path.name, path))
        else:
            for history in sorted(path.rglob("history.jsonl")):
                relative = history.parent.relative_to(path)
                if "latest" not in relative.parts:
                    found.append((str(relative), history.parent))
        if len(found) == before:
            raise BadInput(f"{path} holds no run with a history.jsonl")
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
