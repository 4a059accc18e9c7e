"""The runs `fencepost analyze` is given: (run id, run directory) for every run of a
campaign directory (its runs/<id>/outcome.json), or for run directories and folders
holding them (the id then is the folder's path below the given one)."""
from __future__ import annotations

import json
from pathlib import Path

from harness.errors import BadInput


def find_runs(paths: list[Path]) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for path in paths:
        if not path.is_dir():
            raise BadInput(f"{path} is not a directory: give campaign directories or folders holding runs")
        before = len(found)
        if (path / "campaign.json").is_file():
            for outcome in sorted(path.glob("runs/*/outcome.json")):
                run_dir = json.loads(outcome.read_text()).get("run_dir")
                if run_dir and (Path(run_dir) / "history.jsonl").is_file():
                    found.append((outcome.parent.name, Path(run_dir)))
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
