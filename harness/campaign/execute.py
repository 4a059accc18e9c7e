"""One planned run of a campaign, carried out: `fencepost run` with the run's spec into its
folder, and the fields of its outcome.json that the run itself decides (verdict, exit code,
anomaly counts, liveness, run directory, problems, timings). The conductor adds the rest
(harness/campaign/conductor.py). Used in the campaign's own process (one run at a time) and
in a child process per run (`--parallel`, harness/campaign/child.py)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from fencepost.harness.run.progress import Progress
from fencepost.harness.run.spec import TestSpec


def run_planned(spec: TestSpec, where: Path, progress: Progress | None = None) -> dict[str, Any]:
    from fencepost.harness.run.runner import run_test
    from fencepost.harness.rundir.record import verdict_word

    outcome = run_test(replace(spec, results=str(where)), progress or Progress())
    check = outcome.check
    results = check.results if check else {}
    return {"verdict": verdict_word(check.valid if check else None), "exit_code": outcome.exit_code,
            "anomaly_counts": dict(results.get("anomaly_counts", {})),
            "liveness": results.get("liveness") or {},
            "premise": results.get("premise") or {},
            "run_dir": str(Path(outcome.run_dir).resolve()), "problems": list(outcome.problems),
            "timings": {k: round(v, 2) for k, v in outcome.timings.items()}}
