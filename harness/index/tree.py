"""Every run and every campaign under a results folder, however deep they sit (a campaign's
runs are `campaigns/<name>/<time>-<hex>/runs/<run-id>/run/<time>-<hex>/`).

Rules:
- Run and campaign directories are found as harness/rundir/find.py defines them; a
  campaign's runs are found below it and belong to it.
- A run's configuration and verdict are its record's (harness/rundir/record.py: test.json
  and results.json, `not checked` without results.json; a file that is no JSON object reads
  as absent); a campaign's tally comes from its runs' outcome.json files.
- Newest first, by the time in the folder's name (harness/rundir/run_dirs.py), else its
  modification time.

What was read of a run is kept in `<results>/.index-cache.json` by the modification times
of its test.json and results.json, so that refreshing the index after every run of a long
campaign reads only what changed.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from fencepost.harness.rundir.atomic import write_atomically
from fencepost.harness.rundir.find import walk
from fencepost.harness.rundir.names import (
    CAMPAIGN_FILE,
    CAMPAIGN_RUNS_DIR,
    OUTCOME_FILE,
    REPORT_FILE,
    RESULTS_FILE,
    TEST_FILE,
)
from fencepost.harness.rundir.record import read_object, read_record
from fencepost.harness.rundir.run_dirs import run_started

CACHE_FILE = ".index-cache.json"
CACHE_VERSION = 1


@dataclass
class RunInfo:
    relative: str  # path under the results folder, with "/"
    name: str
    test: str  # the test's name (its parent folder)
    started: str  # ISO 8601 with the UTC offset
    system: str = "own"
    release: str = ""
    truncation: str = ""
    faults: str = "none"
    verdict: str = "not checked"  # valid, invalid, unknown, not checked
    valid: Any = None
    ops: int | None = None
    anomaly_counts: dict[str, int] = field(default_factory=dict)
    has_report: bool = False
    campaign: str | None = None  # the relative path of its campaign directory
    run_id: str | None = None  # its id in that campaign

    @property
    def started_at(self) -> datetime:
        return datetime.fromisoformat(self.started)


@dataclass
class CampaignInfo:
    relative: str
    name: str
    started: str
    planned: int = 0
    finished: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    surprises: int = 0
    shard: str | None = None
    has_report: bool = False

    @property
    def started_at(self) -> datetime:
        return datetime.fromisoformat(self.started)


def scan(results: Path, cache: bool = True) -> tuple[list[RunInfo], list[CampaignInfo]]:
    """(runs, campaigns) under `results`, newest first."""
    runs: list[RunInfo] = []
    campaigns: list[CampaignInfo] = []
    old = _load_cache(results) if cache else {}
    fresh: dict[str, Any] = {}
    for found in walk(results):
        if found.campaign:
            campaigns.append(_campaign(results, found.path))
        else:
            info = _run(results, found.path, old, fresh)
            if info is not None:
                runs.append(info)
    for run in runs:
        below = f"/{CAMPAIGN_RUNS_DIR}/"
        owner = next((c for c in campaigns if run.relative.startswith(c.relative + below)), None)
        if owner is not None:
            run.campaign = owner.relative
            run.run_id = run.relative[len(owner.relative) + len(below):].split("/")[0]
    runs.sort(key=lambda r: (r.started_at, r.relative), reverse=True)
    campaigns.sort(key=lambda c: (c.started_at, c.relative), reverse=True)
    if cache:
        _save_cache(results, fresh)
    return runs, campaigns


def started_of(folder: Path) -> datetime:
    started = run_started(folder.name)
    if started is not None:
        return started
    try:
        return datetime.fromtimestamp(folder.stat().st_mtime).astimezone()
    except OSError:
        return datetime.fromtimestamp(0).astimezone()


def _stamp(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def _run(results: Path, run_dir: Path, old: dict[str, Any], fresh: dict[str, Any]) -> RunInfo | None:
    relative = run_dir.relative_to(results).as_posix()
    key = [_stamp(run_dir / TEST_FILE), _stamp(run_dir / RESULTS_FILE), (run_dir / REPORT_FILE).is_file()]
    cached = old.get(relative)
    if cached is not None and cached.get("key") == key:
        fresh[relative] = cached
        return RunInfo(**cached["info"])
    record = read_record(run_dir, strict=False)
    config = record.configuration
    info = RunInfo(relative, run_dir.name, run_dir.parent.name if run_dir.parent != results else "",
                   started_of(run_dir).isoformat(), config.system, config.release, config.truncation,
                   config.faults, record.verdict, record.valid, record.ops, record.anomaly_counts, bool(key[2]))
    fresh[relative] = {"key": key, "info": asdict(info)}
    return info


def _campaign(results: Path, directory: Path) -> CampaignInfo:
    plan = read_object(directory / CAMPAIGN_FILE, strict=False)
    verdicts: dict[str, int] = {}
    surprises = 0
    finished = 0
    for path in sorted(directory.glob(f"{CAMPAIGN_RUNS_DIR}/*/{OUTCOME_FILE}")):
        outcome = read_object(path, strict=False)
        if not outcome:
            continue
        finished += 1
        verdict = str(outcome.get("verdict") or "crashed")
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        surprises += outcome.get("status") == "surprise"
    share = plan.get("share") if isinstance(plan.get("share"), list) else plan.get("runs")
    return CampaignInfo(directory.relative_to(results).as_posix(), str(plan.get("name") or directory.parent.name),
                        started_of(directory).isoformat(), len(share) if isinstance(share, list) else 0, finished,
                        verdicts, surprises, plan.get("shard"), (directory / REPORT_FILE).is_file())


def _load_cache(results: Path) -> dict[str, Any]:
    data = read_object(results / CACHE_FILE, strict=False)
    return data.get("runs", {}) if data.get("version") == CACHE_VERSION else {}


def _save_cache(results: Path, runs: dict[str, Any]) -> None:
    try:
        write_atomically(results / CACHE_FILE, orjson.dumps({"version": CACHE_VERSION, "runs": runs}))
    except OSError:  # a folder this user cannot write (serve over someone's results): no cache
        pass
