"""The runs behind the paths given to `fencepost compare`: a run directory (test.json and
history.jsonl), a campaign directory (runs/*/outcome.json), or any folder holding such
run directories below it.

Nothing is written into what is read. A run's verdict and anomaly counts come from its
results.json; a run without one is checked in memory (harness/compare/checked.py). The
time to first detection needs every anomaly of a run, where results.json keeps a few
examples of each: an invalid run is checked in memory for it (results.json's verdict
and counts stand; the figure is None if that check does not find the run invalid).

A run directory may come from anywhere: a results.json that cannot be read or is not what
`fencepost check` writes (not a JSON object, `valid` not true, false or "unknown", counts not
non-negative integers, a liveness section of the wrong shape), an outcome.json that cannot be
read, or a run that cannot be checked in memory, is named (`say`: stderr by default) and the
run counts as unknown; compare goes on with the others."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from fencepost.harness.errors import BadInput, printable
from fencepost.harness.rundir.find import has_history, is_campaign_dir, run_dirs
from fencepost.harness.rundir.names import CAMPAIGN_RUNS_DIR, OUTCOME_FILE, RESULTS_FILE, TEST_FILE
from fencepost.harness.rundir.record import configuration_of, read_object

Say = Callable[[str], None]
COUNT_MAX = 2**63 - 1
LIVENESS_VERDICTS = ("ok", "failed", "unknown")


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


def collect(paths: list[Path], say: Say | None = None) -> list[RunResult]:
    """The runs at or under `paths`; what is wrong with one of them is told to `say` (default:
    a line on stderr) and that run counts as unknown (module doc)."""
    say = say or _to_stderr
    results: list[RunResult] = []
    for path in paths:
        if not path.exists():
            raise BadInput(f"{path}: no such file or directory: give run directories, campaign directories "
                           "or folders holding them (e.g. results/)")
        found = list(_runs_under(path, say))
        if not found:
            raise BadInput(f"{path} holds no run (a folder with test.json and history.jsonl) and no "
                           "campaign (runs/*/outcome.json)")
        results += found
    return results


def _to_stderr(message: str) -> None:
    print(printable(f"fencepost compare: {message}", newlines=False), file=sys.stderr)


def _runs_under(path: Path, say: Say) -> Iterator[RunResult]:
    """The runs with a history at or under `path` (harness/rundir/find.py); a campaign
    directory's from its outcomes, so that its crashed runs count too."""
    if is_campaign_dir(path) and not has_history(path):
        for outcome_file in sorted(path.glob(f"{CAMPAIGN_RUNS_DIR}/*/{OUTCOME_FILE}")):
            yield from _from_outcome(outcome_file, say)
        return
    for run_dir in run_dirs(path, with_history=True):
        yield _run(run_dir, say)


def _from_outcome(outcome_file: Path, say: Say) -> Iterator[RunResult]:
    from fencepost.harness.rundir.campaigns import run_dir_of

    try:
        outcome = read_object(outcome_file)
        run_dir = run_dir_of(outcome_file, outcome)
    except BadInput as e:
        say(f"{e}; this campaign run is counted unknown")
        yield RunResult(outcome_file.parent, "?", "?", "?", "unknown")
        return
    if run_dir is not None:
        yield _run(run_dir, say)
    elif outcome.get("verdict") == "crashed":
        config = outcome.get("config")
        yield crashed_result(outcome_file.parent, config if isinstance(config, dict) else {})


def configuration(test: dict) -> tuple[str, str, str]:
    """(system with its variant, truncation, faults) of a run from its test.json
    (harness/rundir/record.py)."""
    return configuration_of(test).key


def result_of(run_dir: Path, say: Say | None = None) -> RunResult:
    """One run directory's result, as `fencepost compare` reads it (module doc)."""
    return _run(run_dir, say or _to_stderr)


def crashed_result(where: Path, config: dict) -> RunResult:
    """A campaign run that crashed before it had a history: its configuration from outcome.json."""
    return RunResult(where, str(config.get("system", "?")), str(config.get("truncation", "?")),
                     str(config.get("faults", "?")), "crashed")


def _run(run_dir: Path, say: Say) -> RunResult:
    from fencepost.harness.compare.checked import check_in_memory

    configuration = configuration_of(read_object(run_dir / TEST_FILE)).key
    try:
        results = read_object(run_dir / RESULTS_FILE)
        wrong = malformed(results)
        if wrong is not None:
            wrong = f"{run_dir / RESULTS_FILE}: {wrong}"
    except BadInput as e:  # not JSON, not an object, not a file: its message names the file
        results, wrong = {}, f"{e}; counted unknown (`fencepost check RUN_DIR` writes it again)"
    if wrong is not None:
        say(wrong)
        return RunResult(run_dir, *configuration, "unknown")
    checked = None
    if not results or results["valid"] is False:
        try:
            checked = check_in_memory(run_dir)
        except BadInput as e:
            if not results:
                say(f"{run_dir}: cannot be checked ({e}); counted unknown")
                return RunResult(run_dir, *configuration, "unknown")
    if not results:
        assert checked is not None  # without results.json it was checked above (or returned)
        valid, counts, section = checked.valid, checked.anomaly_counts, checked.liveness
    else:
        valid, counts, section = results["valid"], results.get("anomaly_counts", {}), results.get("liveness")
    verdict = "valid" if valid is True else "invalid" if valid is False else "unknown"
    live, kinds = liveness_of(section)
    return RunResult(run_dir, *configuration, verdict, dict(counts),
                     None if checked is None else checked.first_detection_s, live, kinds)


def malformed(results: dict[str, Any]) -> str | None:
    """What makes a results.json (read as an object; {} when absent) unusable to compare, with
    what to do; None when it is fine."""
    if not results:
        return None
    fix = "; counted unknown (`fencepost check RUN_DIR` writes it again)"
    if "valid" not in results:
        return "no `valid`" + fix
    if results["valid"] not in (True, False, "unknown"):
        return f"`valid` is {_show(results['valid'])}, not true, false or \"unknown\"" + fix
    wrong = _counts_wrong("anomaly_counts", results.get("anomaly_counts", {}))
    if wrong:
        return wrong + fix
    section = results.get("liveness")
    if section is not None:
        if not isinstance(section, dict):
            return f"`liveness` is {_show(section)}, not an object" + fix
        if "kinds" in section and (wrong := _counts_wrong("liveness.kinds", section["kinds"])):
            return wrong + fix
        if "findings" in section and not _is_count(section["findings"]):
            return f"`liveness.findings` is {_show(section['findings'])}, not a count" + fix
        if section.get("verdict") not in (None, *LIVENESS_VERDICTS):
            return f"`liveness.verdict` is {_show(section['verdict'])}, not one of {', '.join(LIVENESS_VERDICTS)}" + fix
    return None


def _counts_wrong(name: str, counts: Any) -> str | None:
    if not isinstance(counts, dict):
        return f"`{name}` is {_show(counts)}, not an object of counts"
    for key, n in counts.items():
        if not _is_count(n):
            return f"`{name}`: {_show(key)} is {_show(n)}, not a count (an integer from 0 to 2^63-1)"
    return None


def _is_count(n: Any) -> bool:
    return type(n) is int and 0 <= n <= COUNT_MAX


def _show(value: Any) -> str:
    from fencepost.harness.errors import show

    return show(value, limit=60)


def liveness_of(section: object) -> tuple[str | None, dict[str, int]]:
    """(verdict, findings by kind) of a results.json liveness section; one written before the
    verdict existed counts its fatal markers (`findings`)."""
    if not isinstance(section, dict):
        return None, {}
    kinds = section.get("kinds")
    if not isinstance(kinds, dict):
        findings = section.get("findings")
        kinds = {"fatal-marker": findings if _is_count(findings) else 0}
    kinds = {str(k): v for k, v in kinds.items() if _is_count(v) and v}
    verdict = section.get("verdict")
    if verdict not in ("ok", "failed", "unknown"):
        verdict = "failed" if kinds else "ok"
    return verdict, kinds
