"""bench/soundness.py, run as a user runs it (a subprocess): with tiny counts
every anomaly type is planted and detected at 100% with no false positive; and
a checker that cannot see a planted anomaly makes it exit 1, naming the seed."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fencepost.checkers import anomaly as A
from tests.support.bench_support import bench_module
from tests.support.paths import ROOT
from tests.support.synth.generate import generate
from tests.support.synth.plant import plant

BENCH = ROOT / "bench" / "soundness.py"


def run_bench(*args: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH), *args, "--json", str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc, json.loads(out.read_text())


def table_rows(stdout: str) -> dict[str, tuple[int, int, str]]:
    """anomaly -> (planted, detected, rate) from the printed table."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\S+)\s+(\d+)\s+(\d+)\s+(\S+%)\s+\d+\s+\d+$", line)
        if m:
            rows[m[1]] = (int(m[2]), int(m[3]), m[4])
    return rows


@pytest.mark.integration
@pytest.mark.slow
def test_tiny_bench_detects_every_anomaly_type_and_no_false_positive(tmp_path):
    proc, figures = run_bench("--per-type", "3", "--clean", "5", "--jobs", "2", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout
    rows = table_rows(proc.stdout)
    assert set(rows) == set(A.ALL)
    for name, (planted, detected, rate) in rows.items():
        assert planted >= 3 and detected == planted and rate == "100.0%", (name, rows[name])
    assert "clean: runs 5, false positives 0" in proc.stdout
    assert figures["clean"] == {"runs": 5, "false_positives": 0, "ground_truth_mismatches": 0}
    assert "wall time" in proc.stdout and "soundness:" in proc.stderr  # the progress line


@pytest.mark.integration
@pytest.mark.slow
def test_a_checker_that_cannot_see_the_anomaly_makes_the_bench_exit_1_with_the_seed(tmp_path):
    # With the linearizability search switched off, `nonlinearizable` is never
    # reported: every planted run is a miss, each printed so it can be rerun.
    proc, figures = run_bench("--only", "nonlinearizable/lost-write", "--seed", "7",
                              "--checker", "linearizability=false", tmp_path=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert table_rows(proc.stdout)["nonlinearizable"] == (1, 0, "0.0%")
    repro = ("python bench/soundness.py --only nonlinearizable/lost-write --seed 7 "
             "--checker linearizability=false")
    assert repro in proc.stdout and figures["findings"] == [repro]
    # The same case with the search on is detected: the miss was the option's.
    proc, _ = run_bench("--only", "nonlinearizable/lost-write", "--seed", "7", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.integration
def test_bad_only_is_bad_arguments():
    proc = subprocess.run([sys.executable, str(BENCH), "--only", "no-such-planter"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 254
    assert "no-such-planter" in proc.stderr and "lost-write/missing" in proc.stderr
    proc = subprocess.run([sys.executable, str(BENCH), "--lines", "500-100"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 254 and "500-100" in proc.stderr


def _bench_module():
    return bench_module(BENCH, "soundness_bench")


def test_ground_truth_comparison_names_an_anomaly_the_clean_run_does_not_hold():
    # The false-positive side is not blind: checked as if it were clean, a run
    # with a phantom read is a mismatch, and the generated run itself is not.
    bench = _bench_module()
    run = generate(bench.config_for(3))
    for candidate, expect in ((run, False), (plant("phantom-read", run, 3).run, True)):
        reports, _, verdict = bench._check(candidate)
        found = {r.partition: {} for r in reports}
        for r in reports:
            for a in r.anomalies:
                found[r.partition].setdefault(a.name, []).append(a)
        mismatches = bench.truth_mismatches(candidate, found)
        assert bool(mismatches) is expect, mismatches
        assert (verdict.valid is True) is not expect
    assert any("unexpected phantom-read" in m for m in mismatches)
