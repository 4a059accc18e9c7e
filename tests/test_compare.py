"""`fencepost compare`: the Wilson interval, grouping per configuration, and the command on
the seeds' run directories and on a campaign directory."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.campaign.plan import load_campaign
from harness.campaign.runner import campaign_dir, run_campaign
from harness.compare.collect import RunResult, collect
from harness.compare.table import render, rows
from harness.errors import BadInput
from harness.stats import wilson_interval
from tests.test_cli_cluster import fencepost

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_wilson_interval_known_values():
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson_interval(1, 5) == pytest.approx((0.0362, 0.6245), abs=1e-4)
    assert wilson_interval(10, 10)[0] == pytest.approx(0.7225, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_rows_group_by_configuration_and_leave_unknown_and_crashed_out_of_the_rate():
    def r(truncation, verdict, **counts):
        return RunResult(Path("."), "own", truncation, "leader-bounce", verdict, counts)
    table = rows([r("hw", "invalid", **{"lost-write": 4}), r("hw", "invalid", **{"lost-write": 1}),
                  r("hw", "crashed"), r("kip320", "valid"), r("kip320", "unknown")])
    hw, kip320 = table
    assert (hw.truncation, hw.runs, hw.invalid, hw.judged, hw.invalid_rate) == ("hw", 3, 2, 2, 1.0)
    assert hw.runs_by_anomaly == {"lost-write": 2} and hw.anomaly_totals == {"lost-write": 5}
    assert (kip320.judged, kip320.invalid_rate) == (1, 0.0)
    text = render(table)
    assert "1.00 [0.34, 1.00]" in text and "lost-write 2: 5" in text and "3 +1 crashed" in text


def test_compare_of_the_seed_examples_per_truncation(tmp_path):
    for example in EXAMPLES.iterdir():
        if example.is_dir():
            shutil.copytree(example, tmp_path / "runs" / example.name)
    done = fencepost(tmp_path, "compare", "runs", "--out", "out", timeout=300)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[1]: line for line in done.stdout.splitlines()[1:] if line.startswith("own ")}
    assert lines["hw"].split()[3:6] == ["3", "3", "1.00"]
    assert lines["kip101"].split()[3:6] == ["2", "0", "0.00"]
    assert "lost-write" in lines["hw"] and "replica-divergence" in lines["hw"]
    assert (tmp_path / "out" / "compare.png").stat().st_size > 5000
    assert (tmp_path / "out" / "compare.csv").read_text().count("\n") == 3


def test_compare_reads_a_campaign_directory(tmp_path):
    (tmp_path / "c.toml").write_text('name = "c"\n[matrix]\ntruncation = ["hw", "kip101"]\n')
    campaign = load_campaign(tmp_path / "c.toml")
    directory = campaign_dir(tmp_path / "results", campaign, resume=False)
    source = {"hw": "kip101-scenario-1", "kip101": "kafka-1211-example-1"}

    def run_one(planned, where):  # the seeds' runs stand in for runs of these settings
        run_dir = where / "run"
        shutil.copytree(EXAMPLES / source[planned.spec.truncation], run_dir)
        return {"verdict": "n/a", "run_dir": str(run_dir)}
    run_campaign(campaign, directory, run_one)
    found = collect([directory])
    assert sorted((r.truncation, r.verdict) for r in found) == [("hw", "invalid"), ("kip101", "valid")]
    crashed = load_campaign(tmp_path / "c.toml")
    second = campaign_dir(tmp_path / "results2", crashed, resume=False)

    def crash(planned, where):
        raise RuntimeError("no cluster")
    run_campaign(crashed, second, crash)
    assert sorted((r.system, r.truncation, r.faults, r.verdict) for r in collect([second])) == [
        ("own", "hw", "kill,pause,partition", "crashed"), ("own", "kip101", "kill,pause,partition", "crashed")]


def test_compare_of_nothing_says_what_it_wants(tmp_path):
    with pytest.raises(BadInput, match="holds no run"):
        collect([tmp_path])
    with pytest.raises(BadInput, match="no such file"):
        collect([tmp_path / "missing"])
