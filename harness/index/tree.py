"""Every run and every campaign under a results folder, however deep they sit (a campaign's
runs are `campaigns/<name>/<time>-<hex>/runs/<run-id>/run/<time>-<hex>/`).

Rules:
- A run directory is a folder holding history.jsonl, test.json or results.json; nothing
  below it is searched. A campaign directory is a folder holding campaign.json; its runs
  are found below it and belong to it.
- Symbolic links (`latest`) are not followed, so nothing is listed twice; `clusters/` (the
  state of clusters left running) holds no runs and is not searched.
- A run's configuration comes from its test.json (system, release, truncation, faults; the
  spec's defaults where it says nothing), its verdict from results.json (`not checked`
  without one); a campaign's tally from its runs' outcome.json files.
- Newest first, by the time in the folder's name (harness/run/store.py), else its
  modification time.

What was read of a run is kept in `<results>/.index-cache.json` by the modification times
of its test.json and results.json, so that refreshing the index after every run of a long
campaign reads only what changed.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from harness.run.store import run_started

RUN_MARKERS = ("history.jsonl", "test.json", "results.json")
NOT_SEARCHED = ("clusters",)  # at the top of the results folder
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
    for dirpath, dirnames, filenames in os.walk(results):
        here = Path(dirpath)
        if here == results:
            dirnames[:] = [d for d in dirnames if d not in NOT_SEARCHED]
        files = set(filenames)
        dirnames[:] = sorted(d for d in dirnames if not (here / d).is_symlink() and not d.startswith("."))
        if any(marker in files for marker in RUN_MARKERS):
            dirnames[:] = []
            info = _run(results, here, old, fresh)
            if info is not None:
                runs.append(info)
        elif "campaign.json" in files:
            campaigns.append(_campaign(results, here))
    for run in runs:
        owner = next((c for c in campaigns if run.relative.startswith(c.relative + "/runs/")), None)
        if owner is not None:
            run.campaign = owner.relative
            run.run_id = run.relative[len(owner.relative) + len("/runs/"):].split("/")[0]
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
    key = [_stamp(run_dir / "test.json"), _stamp(run_dir / "results.json"), (run_dir / "report.html").is_file()]
    cached = old.get(relative)
    if cached is not None and cached.get("key") == key:
        fresh[relative] = cached
        return RunInfo(**cached["info"])
    test = _json(run_dir / "test.json")
    summary = _json(run_dir / "results.json")
    system = str(test.get("system") or "own")
    versions = test.get("versions") if isinstance(test.get("versions"), dict) else {}
    release = str(versions.get("kafka") or system.partition(":")[2] or ("own" if system == "own" else ""))
    nemesis = test.get("nemesis") if isinstance(test.get("nemesis"), dict) else {}
    faults = str(nemesis.get("faults") or "none").strip() or "none"
    checked = summary.get("checked") if isinstance(summary.get("checked"), dict) else {}
    counts = summary.get("anomaly_counts") if isinstance(summary.get("anomaly_counts"), dict) else {}
    valid = summary.get("valid")
    verdict = ("not checked" if not summary else "valid" if valid is True else "invalid" if valid is False
               else "unknown")
    info = RunInfo(relative, run_dir.name, run_dir.parent.name if run_dir.parent != results else "",
                   started_of(run_dir).isoformat(), system, release,
                   str(test.get("truncation") or ("release" if system.startswith("kafka") else "kip320")),
                   faults, verdict, valid, checked.get("ops") if type(checked.get("ops")) is int else None,
                   {str(k): v for k, v in counts.items() if type(v) is int}, bool(key[2]))
    fresh[relative] = {"key": key, "info": asdict(info)}
    return info


def _campaign(results: Path, directory: Path) -> CampaignInfo:
    plan = _json(directory / "campaign.json")
    verdicts: dict[str, int] = {}
    surprises = 0
    finished = 0
    for path in sorted(directory.glob("runs/*/outcome.json")):
        outcome = _json(path)
        if not outcome:
            continue
        finished += 1
        verdict = str(outcome.get("verdict") or "crashed")
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        surprises += outcome.get("status") == "surprise"
    share = plan.get("share") if isinstance(plan.get("share"), list) else plan.get("runs")
    return CampaignInfo(directory.relative_to(results).as_posix(), str(plan.get("name") or directory.parent.name),
                        started_of(directory).isoformat(), len(share) if isinstance(share, list) else 0, finished,
                        verdicts, surprises, plan.get("shard"), (directory / "report.html").is_file())


def _json(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _load_cache(results: Path) -> dict[str, Any]:
    data = _json(results / CACHE_FILE)
    return data.get("runs", {}) if data.get("version") == CACHE_VERSION else {}


def _save_cache(results: Path, runs: dict[str, Any]) -> None:
    path = results / CACHE_FILE
    tmp = path.with_name(f"{CACHE_FILE}.{os.getpid()}")
    try:
        tmp.write_bytes(orjson.dumps({"version": CACHE_VERSION, "runs": runs}))
        os.replace(tmp, path)
    except OSError:  # a folder this user cannot write (serve over someone's results): no cache
        tmp.unlink(missing_ok=True)
