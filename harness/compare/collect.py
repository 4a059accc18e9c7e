"""The runs behind the paths given to `fencepost compare`: a run directory (test.json and
history.jsonl), a campaign directory (runs/*/outcome.json), or any folder holding such
run directories below it.

Nothing is written into what is read. A run's verdict and anomaly counts come from its
results.json; a run without one is checked in memory (harness/compare/checked.py). The
time to first detection needs every anomaly of a run, where results.json keeps a few
examples of each: an invalid run is checked in memory for it (results.json's verdict
and counts stand; the figure is None if that check does not find the run invalid)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from harness.errors import BadInput

NO_FAULTS = "none"
NOT_A_VARIANT = ("kafka_home", "libs", "scala", "version")


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    system: str
    truncation: str
    faults: str
    verdict: str  # valid, invalid, unknown, crashed
    anomaly_counts: dict[str, int] = field(default_factory=dict)
    first_detection_s: float | None = None  # harness/detection.py; invalid runs only
    liveness: str | None = None  # results.json's liveness verdict: ok, failed, unknown (None: not judged)
    liveness_kinds: dict[str, int] = field(default_factory=dict)  # liveness findings by kind

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
    from harness.campaign.outcomes import run_dir_of

    outcome = json.loads(outcome_file.read_text())
    run_dir = run_dir_of(outcome_file, outcome)
    if run_dir is not None:
        yield _run(run_dir)
    elif outcome.get("verdict") == "crashed":
        yield crashed_result(outcome_file.parent, outcome.get("config", {}))


def configuration(test: dict) -> tuple[str, str, str]:
    """(system, truncation, faults) of a run from its test.json (the run spec's defaults
    where it says nothing: own, kip320, none). Runs given system options (`system_options`:
    mode, elr, broker_config, ...) are another configuration of their system: its name
    carries them, `kafka:4.1.1[elr=false]`."""
    return (str(test.get("system") or "own") + variant(test.get("system_options")),
            str(test.get("truncation") or "kip320"), str((test.get("nemesis") or {}).get("faults") or NO_FAULTS))


def variant(options: object) -> str:
    """`[k=v,...]` of the system options that change what runs (sorted; values as JSON, strings
    bare); "" for none. Where the jars came from (kafka_home, libs) is not a variant."""
    if not isinstance(options, dict):
        return ""
    shown = [f"{k}={v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(',', ':'))}"
             for k, v in sorted(options.items()) if k not in NOT_A_VARIANT]
    return f"[{','.join(shown)}]" if shown else ""


def result_of(run_dir: Path) -> RunResult:
    """One run directory's result, as `fencepost compare` reads it (module doc)."""
    return _run(run_dir)


def crashed_result(where: Path, config: dict) -> RunResult:
    """A campaign run that crashed before it had a history: its configuration from outcome.json."""
    return RunResult(where, str(config.get("system", "?")), str(config.get("truncation", "?")),
                     str(config.get("faults", "?")), "crashed")


def _run(run_dir: Path) -> RunResult:
    from harness.compare.checked import check_in_memory

    test = _json(run_dir / "test.json")
    results = _json(run_dir / "results.json")
    checked = None
    if not results:
        checked = check_in_memory(run_dir)
        valid, counts, section = checked.valid, checked.anomaly_counts, checked.liveness
    else:
        valid, counts, section = results.get("valid"), results.get("anomaly_counts", {}), results.get("liveness")
        if valid is False:
            checked = check_in_memory(run_dir)
    verdict = "valid" if valid is True else "invalid" if valid is False else "unknown"
    live, kinds = liveness_of(section)
    return RunResult(run_dir, *configuration(test), verdict, {k: int(v) for k, v in counts.items()},
                     None if checked is None else checked.first_detection_s, live, kinds)


def liveness_of(section: object) -> tuple[str | None, dict[str, int]]:
    """(verdict, findings by kind) of a results.json liveness section; one written before the
    verdict existed counts its fatal markers (`findings`)."""
    if not isinstance(section, dict):
        return None, {}
    kinds = section.get("kinds")
    if not isinstance(kinds, dict):
        kinds = {"fatal-marker": int(section.get("findings") or 0)}
    kinds = {str(k): int(v) for k, v in kinds.items() if isinstance(v, int) and v}
    verdict = section.get("verdict")
    if verdict not in ("ok", "failed", "unknown"):
        verdict = "failed" if kinds else "ok"
    return verdict, kinds


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: cannot read it as JSON ({e})") from None
    return data if isinstance(data, dict) else {}
