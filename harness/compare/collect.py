"""The runs behind the paths given to `fencepost compare`: a run directory (test.json and
history.jsonl), a campaign directory (runs/*/outcome.json), or any folder holding such
run directories below it.

Nothing is written into what is read. A run's verdict and anomaly counts come from its
results.json; a run without one is checked in memory (harness/compare/checked.py). The
time to first detection needs every anomaly of a run, where results.json keeps a few
examples of each: an invalid run is checked in memory for it (results.json's verdict
and counts stand; the figure is None if that check does not find the run invalid)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from harness.errors import BadInput
from harness.rundir.find import has_history, is_campaign_dir, run_dirs
from harness.rundir.names import CAMPAIGN_RUNS_DIR, OUTCOME_FILE
from harness.rundir.record import configuration_of, read_object, read_record


@dataclass(frozen=True)
class RunResult:
    run_dir: Path
    system: str
    truncation: str
    faults: str
    verdict: str  # valid, invalid, unknown, crashed
    anomaly_counts: dict[str, int] = field(default_factory=dict)
    first_detection_s: float | None = None  # harness/check/detection.py; invalid runs only
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
    """The runs with a history at or under `path` (harness/rundir/find.py); a campaign
    directory's from its outcomes, so that its crashed runs count too."""
    if is_campaign_dir(path) and not has_history(path):
        for outcome_file in sorted(path.glob(f"{CAMPAIGN_RUNS_DIR}/*/{OUTCOME_FILE}")):
            yield from _from_outcome(outcome_file)
        return
    for run_dir in run_dirs(path, with_history=True):
        yield _run(run_dir)


def _from_outcome(outcome_file: Path) -> Iterator[RunResult]:
    from harness.rundir.campaigns import run_dir_of

    outcome = read_object(outcome_file)
    run_dir = run_dir_of(outcome_file, outcome)
    if run_dir is not None:
        yield _run(run_dir)
    elif outcome.get("verdict") == "crashed":
        yield crashed_result(outcome_file.parent, outcome.get("config", {}))


def configuration(test: dict) -> tuple[str, str, str]:
    """(system with its variant, truncation, faults) of a run from its test.json
    (harness/rundir/record.py)."""
    return configuration_of(test).key


def result_of(run_dir: Path) -> RunResult:
    """One run directory's result, as `fencepost compare` reads it (module doc)."""
    return _run(run_dir)


def crashed_result(where: Path, config: dict) -> RunResult:
    """A campaign run that crashed before it had a history: its configuration from outcome.json."""
    return RunResult(where, str(config.get("system", "?")), str(config.get("truncation", "?")),
                     str(config.get("faults", "?")), "crashed")


def _run(run_dir: Path) -> RunResult:
    from harness.compare.checked import check_in_memory

    record = read_record(run_dir)
    results = record.results
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
    return RunResult(run_dir, *record.configuration.key, verdict, {k: int(v) for k, v in counts.items()},
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
