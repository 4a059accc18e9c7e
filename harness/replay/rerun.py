"""A recorded run's spec, run again with a nemesis script (`fencepost replay`, and every try of
`fencepost shrink`).

Rules:
- The spec is the run's test.json (its settings; what fencepost added — versions, protocol,
  notes — left out), with the nemesis as a scripted schedule of the given entries; its
  fault list stays, so the rerun is the same configuration for `fencepost compare`.
- A run that recorded no nemesis action (no faults) is run again as it was.
- `overrides`: settings that change (results, seed, time limit, a subnet), dotted as on the
  command line.
- Which anomalies a run found: results.json's `anomaly_counts` restricted to the run's
  invalid set (`invalid_anomalies`), i.e. what made it invalid.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from fencepost.harness.campaign.child import SPEC_ONLY
from fencepost.harness.errors import BadInput
from fencepost.harness.replay.script import Entry
from fencepost.harness.run.spec import TestSpec, build_spec
from fencepost.harness.rundir.names import RESULTS_FILE, TEST_FILE
from fencepost.harness.rundir.record import read_object, read_record


def recorded_test(run_dir: Path) -> dict[str, Any]:
    if not (run_dir / TEST_FILE).is_file():
        raise BadInput(f"{run_dir}: no {TEST_FILE}: give a run directory written by `fencepost run` "
                       "(e.g. results/latest, or a campaign's runs/<id>/run/<time>-<hex>)")
    test = read_object(run_dir / TEST_FILE)
    return {k: v for k, v in test.items() if k not in SPEC_ONLY}


def rerun_spec(test: Mapping[str, Any], script: Sequence[Entry], overrides: Mapping[str, Any]) -> TestSpec:
    settings: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in test.items()}
    nemesis = dict(settings.get("nemesis") or {})
    if script:
        nemesis.update(schedule="scripted", script=[e.to_json() for e in script])
    settings["nemesis"] = nemesis
    try:
        return build_spec(settings, dict(overrides))
    except BadInput as e:
        raise BadInput(f"the recorded test.json cannot be run again: {e}") from None


def invalidating(run_dir: Path) -> dict[str, int]:
    """Anomaly -> count of those that made the run invalid (results.json); {} for a valid run."""
    if not (run_dir / RESULTS_FILE).is_file():
        raise BadInput(f"{run_dir}: no {RESULTS_FILE}: check the run first (`fencepost check {run_dir}`)")
    return read_record(run_dir).invalidating
