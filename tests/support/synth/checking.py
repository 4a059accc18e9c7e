"""Running `fencepost check` on a synthetic run the way a user does: write the
run directory (history.jsonl, final.jsonl, test.json), then `check_run` on it."""
from __future__ import annotations

import io
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from fencepost.harness.check.checking import CheckOutcome, check_run
from tests.support.synth.run import SynthRun


def check_synth(run: SynthRun, run_dir: Path | None = None) -> CheckOutcome:
    """Write `run` into `run_dir` (a fresh temporary directory if None) and check it."""
    if run_dir is not None:
        run.write(run_dir)
        return check_run(run_dir, write=True, out=io.StringIO())
    with tempfile.TemporaryDirectory(prefix="fencepost-synth-") as tmp:
        run.write(Path(tmp))
        return check_run(Path(tmp), write=True, out=io.StringIO())


def anomalies_by_partition(results: dict[str, Any]) -> dict[str, set[str]]:
    """"topic-partition" -> names of the anomalies results.json lists there.
    Exact only while each name has at most the 20 listed examples; callers
    check `examples_complete` first."""
    out: dict[str, set[str]] = defaultdict(set)
    for name, examples in results["anomalies"].items():
        for example in examples:
            out[f"{example['topic']}-{example['partition']}"].add(name)
    return out


def examples_complete(results: dict[str, Any]) -> bool:
    return all(len(results["anomalies"].get(name, [])) == n
               for name, n in results["anomaly_counts"].items())
