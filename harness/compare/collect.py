"""The runs behind the paths given to `fencepost compare`: a run directory (test.json and
history.jsonl), a campaign directory (runs/*/outcome.json), or any folder holding such
run directories below it. A run's verdict and anomaly counts come from its results.json;
a run not checked yet is checked here (results.json written, as `fencepost check` does)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from harness.errors import BadInput

NO_FAULTS = "none"


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    system: str
    truncation: str
    faults: str
    verdict: str  # valid, invalid, unknown, crashed
    anomaly_counts: dict[str, int] = field(default_factory=dict)

    @property
    def configuration(self) -> tuple[str, str, str]:
        return self.system, self.truncation, self.faults


def collect(paths: list[Path]) -> list[RunResult]:
    results: list[RunResult] = []
    for path in paths:
        if not path.exists():
            raise BadInput(f"{path}: no such file or directory: give run directories, campaign directories "
                           "or folders holding them (e.g. results/)")
        found = list(_runs_under(path))
        if not found:
            raise BadInput(f"{path} holds no run (a folder with test.json and history.jsonl) and no "
                           "campaign (runs/*/outcome.json)")
        results += found
    return results


def _runs_under(path: Path) -> Iterator[RunResult]:
    if (path / "history.jsonl").is_file():
        yield _run(path)
        return
    if (path / "campaign.json").is_file():
        for outcome_file in sorted(path.glob("runs/*/outcome.json")):
            yield from _from_outcome(outcome_file)
        return
    seen: set[Path] = set()
    for history in sorted(path.rglob("history.jsonl")):
        run_dir = history.parent
        real = run_dir.resolve()
        if real in seen or "latest" in run_dir.relative_to(path).parts:
            continue
        seen.add(real)
        yield _run(run_dir)


def _from_outcome(outcome_file: Path) -> Iterator[RunResult]:
    outcome = json.loads(outcome_file.read_text())
    run_dir = Path(outcome["run_dir"]) if outcome.get("run_dir") else None
    if run_dir is not None and (run_dir / "history.jsonl").is_file():
        yield _run(run_dir)
    elif outcome.get("verdict") == "crashed":
        config = outcome.get("config", {})
        yield RunResult(outcome_file.parent, str(config.get("system", "?")), str(config.get("truncation", "?")),
                        str(config.get("faults", "?")), "crashed")


def configuration(test: dict) -> tuple[str, str, str]:
    """(system, truncation, faults) of a run from its test.json (the run spec's defaults
    where it says nothing: own, kip320, none)."""
    return (str(test.get("system") or "own"), str(test.get("truncation") or "kip320"),
            str((test.get("nemesis") or {}).get("faults") or NO_FAULTS))


def _run(run_dir: Path) -> RunResult:
    test = _json(run_dir / "test.json")
    results = _json(run_dir / "results.json")
    if not results:
        from harness.checking import check_run
        results = check_run(run_dir, out=None, jobs=1).results
    valid = results.get("valid")
    verdict = "valid" if valid is True else "invalid" if valid is False else "unknown"
    return RunResult(run_dir, *configuration(test), verdict,
                     {k: int(v) for k, v in results.get("anomaly_counts", {}).items()})


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: cannot read it as JSON ({e})") from None
    return data if isinstance(data, dict) else {}
