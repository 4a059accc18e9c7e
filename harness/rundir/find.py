"""Finding run and campaign directories under a folder: the one definition of each, used by
serve, the results index, compare and analyze.

A run directory holds test.json or history.jsonl (names.RUN_MARKERS); a campaign directory
holds campaign.json. The walk does not follow symlinks (so `latest` never lists a run twice),
skips hidden folders and the top-level folders that hold no runs (names.NOT_RUNS), and does
not look inside a run directory.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.names import CAMPAIGN_FILE, HISTORY_FILE, NOT_RUNS, RUN_DIR_HELP, RUN_MARKERS


@dataclass(frozen=True, slots=True)
class Found:
    path: Path
    campaign: bool  # a campaign directory; else a run directory


def history_of(run_dir: Path | str) -> Path:
    """The history.jsonl of run directory `run_dir`; BadInput, saying what a run directory is,
    when `run_dir` is no folder or holds none (what `fencepost check`, `trace`, `report` and
    `export` need)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir} is not a directory: {RUN_DIR_HELP}")
    history = run_dir / HISTORY_FILE
    if not history.is_file():
        raise BadInput(f"{run_dir} is not a run directory (it has no {HISTORY_FILE}): {RUN_DIR_HELP}")
    return history


def has_history(path: Path) -> bool:
    """A run directory with something to check (`fencepost check` needs the history)."""
    return (path / HISTORY_FILE).is_file()


def is_campaign_dir(path: Path) -> bool:
    return (path / CAMPAIGN_FILE).is_file()


def walk(root: Path) -> Iterator[Found]:
    """Every run and campaign directory at or under `root`, in sorted path order (a campaign's
    runs, which sit below it, come after it)."""
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        files = set(filenames)
        if any(marker in files for marker in RUN_MARKERS):
            dirnames[:] = []
            yield Found(here, False)
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                             and not (here / d).is_symlink() and not (here == root and d in NOT_RUNS))
        if CAMPAIGN_FILE in files:
            yield Found(here, True)


def run_dirs(root: Path, *, with_history: bool = False) -> list[Path]:
    """The run directories at or under `root` (module doc), those with a history only when
    `with_history`."""
    return [found.path for found in walk(root)
            if not found.campaign and (not with_history or has_history(found.path))]
