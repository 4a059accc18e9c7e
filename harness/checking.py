"""`fencepost check`: load a run directory, check every partition, decide the
verdict, write results.json (and counterexample pages), print a summary.

Garbage collection: a run's ops are loaded with the collector paused and then
frozen (`gc.freeze`) while the checkers run, so that collections triggered by
the checkers' own allocations do not traverse the million loaded objects again
and again; the previous state is restored afterwards.
"""
from __future__ import annotations

import gc
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from checkers.check import PartitionReport, check_partition
from harness.errors import BadInput
from harness.loading import LoadedRun, load_run
from harness.summary import build_results, partition_name, print_summary, write_results
from harness.verdict import Valid, decide

LINEAR_DIR = "linear"
_STDOUT = object()  # check_run's default `out`: sys.stdout as it is at the call


@dataclass(slots=True)
class CheckOutcome:
    valid: Valid
    results: dict[str, Any]
    exit_code: int


def check_run(run_dir: Path | str, *, write: bool = True, out: Any = _STDOUT) -> CheckOutcome:
    """Check the run in `run_dir`. Raises BadInput if it is not a run directory.
    With `write`, results.json and linear/<topic>-<partition>.html are written
    into it. The summary is printed to `out` (a text stream; by default the
    current sys.stdout; None: not printed)."""
    if out is _STDOUT:
        out = sys.stdout
    started = time.perf_counter()
    run_dir = Path(run_dir)
    run = load_run(run_dir)
    with _loaded_objects_frozen():
        reports = check_partitions(run)
    verdict = decide(run, reports)
    linear_files = write_counterexamples(run_dir, reports) if write else {}
    results = build_results(run, reports, verdict, time.perf_counter() - started, linear_files)
    results_path = write_results(run_dir, results) if write else None
    if out is not None:
        print_summary(results, out, results_path)
    return CheckOutcome(verdict.valid, results, verdict.exit_code)


def check_partitions(run: LoadedRun) -> list[PartitionReport]:
    return [check_partition(ph, run.options) for ph in run.partitions.values()]


def write_counterexamples(run_dir: Path, reports: list[PartitionReport]) -> dict[str, str]:
    """Write the page of each partition found not linearizable; returns
    partition name -> path relative to the run directory."""
    written: dict[str, str] = {}
    for report in reports:
        if report.linearizable is False and report.linear_html:
            name = partition_name(report.topic, report.partition)
            relative = f"{LINEAR_DIR}/{name}.html"
            try:
                (run_dir / LINEAR_DIR).mkdir(exist_ok=True)
                (run_dir / relative).write_text(report.linear_html, encoding="utf-8")
            except OSError as e:
                raise BadInput(f"cannot write {run_dir / relative}: {e.strerror or e}; make the "
                               f"run directory writable, or check with --no-write") from e
            written[name] = relative
    return written


@contextmanager
def _loaded_objects_frozen() -> Iterator[None]:
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
