"""`fencepost compare`: the Wilson interval, grouping per configuration, the order of rows,
Fisher's p-values against the row above or a baseline, the output formats, and the command
on the seeds' run directories and on a campaign directory, which it never writes into
(the plot: test_compare_plot.py; Fisher's test: test_stats.py)."""
from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from fencepost.harness.campaign.conductor import campaign_dir, run_campaign
from fencepost.harness.campaign.plan import load_campaign
from fencepost.harness.check.checking import check_run
from fencepost.harness.compare.collect import RunResult, collect
from fencepost.harness.compare.formats import CSV_COLUMNS, render
from fencepost.harness.compare.significance import Baseline, groups_without, with_p_values
from fencepost.harness.compare.stats import two_rates_p, wilson_interval
from fencepost.harness.compare.table import rows
from fencepost.harness.errors import BadInput
from tests.support.cli import fencepost
from tests.support.paths import EXAMPLES


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
    assert "1.00 [0.34, 1.00]" in text and "lost-write 2: 5" in text


def test_the_runs_column_says_which_runs_are_left_out_of_the_rate():
    def r(truncation, verdict):
        return RunResult(Path("."), "own", truncation, "kill", verdict)
    table = rows([r("hw", "invalid"), r("hw", "invalid"), r("hw", "crashed"), r("kip101", "valid"),
                  r("kip101", "unknown"), r("kip101", "crashed"), r("kip320", "valid"), r("kip320", "valid"),
                  r("kip279", "unknown")])
    cells = {line.split()[1]: re.split(r"\s{2,}", line) for line in render(table).splitlines()[1:-1]}
    assert "+" not in render(table)  # "2 +1 unknown" read as three runs
    assert cells["hw"][3:6] == ["3 runs (1 crashed)", "2", "1.00 [0.34, 1.00]"]
    assert cells["kip101"][3:5] == ["3 runs (1 unknown, 1 crashed)", "0"]
    assert cells["kip279"][3:6] == ["1 run (1 unknown)", "0", "- (no run with a verdict)"]  # no rate, not 0.00
    assert cells["kip320"][3:6] == ["2", "0", "0.00 [0.00, 0.66]"]


def result(system: str, truncation: str, faults: str, verdict: str, detection: float | None = None) -> RunResult:
    return RunResult(Path("."), system, truncation, faults, verdict, {}, detection)


def test_rows_come_by_fault_then_own_then_releases_as_numbers_then_truncation():
    releases = ["4.4.0", "0.10.2.2", "2.1.1", "1.1.1", "3.9.1", "0.11.0.3", "2.0.1"]
    results = [result(f"kafka:{v}", "kip320", "kill", "valid") for v in releases]
    results += [result("own", t, "kill", "valid") for t in ("release", "kip320", "hw", "kip279", "kip101")]
    results += [result("kafka:2.0.1", t, "bounce", "valid") for t in ("kip320", "hw")]
    table = rows(results)
    assert [(r.faults, r.system, r.truncation) for r in table] == [
        ("bounce", "kafka:2.0.1", "hw"), ("bounce", "kafka:2.0.1", "kip320"),
        *(("kill", "own", t) for t in ("hw", "kip101", "kip279", "kip320", "release")),
        *(("kill", f"kafka:{v}", "kip320") for v in ("0.10.2.2", "0.11.0.3", "1.1.1", "2.0.1", "2.1.1", "3.9.1",
                                                       "4.4.0"))]


def test_each_row_is_tested_against_the_row_above_in_its_fault_group():
    results = [result("kafka:1.1.1", "kip320", "fast-leader-change", "invalid", 3.0) for _ in range(7)]
    results += [result("kafka:1.1.1", "kip320", "fast-leader-change", "valid") for _ in range(3)]
    results += [result("kafka:1.1.1", "kip320", "fast-leader-change", verdict) for verdict in ("unknown", "crashed")]
    results += [result("kafka:2.0.1", "kip320", "fast-leader-change", "valid") for _ in range(10)]
    results += [result("kafka:2.1.1", "kip320", "fast-leader-change", "invalid", d) for d in (9.0, 5.0)]
    results += [result("kafka:2.0.1", "kip320", "kill", "valid")]
    old, new, newer, kill = with_p_values(rows(results))
    assert (old.p_value, old.versus, kill.p_value, kill.versus) == (None, None, None, None)  # first of their groups
    assert new.p_value == pytest.approx(0.0031, abs=1e-4) and new.versus == "kafka:1.1.1:kip320"
    assert new.p_value == two_rates_p(7, 10, 0, 10)  # the unknown and crashed runs are left out
    assert (newer.versus, newer.p_value) == ("kafka:2.0.1:kip320", two_rates_p(2, 2, 0, 10))
    assert (old.median_first_detection_s, newer.median_first_detection_s) == (3.0, 7.0)
    assert new.median_first_detection_s is None


def test_a_baseline_is_tested_against_every_row_of_its_group():
    results = [result(s, t, f, v) for s, t, f, v, n in (
        ("own", "hw", "kill", "invalid", 4), ("own", "kip320", "kill", "valid", 4),
        ("kafka:2.0.1", "kip320", "kill", "invalid", 1), ("kafka:2.0.1", "kip320", "kill", "valid", 3),
        ("own", "hw", "zombie", "invalid", 2)) for _ in range(n)]
    assert Baseline.parse("own:hw") == Baseline("own", "hw")
    assert Baseline.parse("kafka:2.0.1") == Baseline("kafka:2.0.1", None)
    assert Baseline.parse("kafka:2.0.1:kip320") == Baseline("kafka:2.0.1", "kip320")
    table = with_p_values(rows(results), Baseline.parse("kafka:2.0.1"))
    hw, kip320, kafka, zombie = table
    assert (hw.versus, hw.p_value) == ("kafka:2.0.1:kip320", two_rates_p(4, 4, 1, 4))
    assert (kip320.versus, kip320.p_value) == ("kafka:2.0.1:kip320", two_rates_p(0, 4, 1, 4))
    assert (kafka.p_value, zombie.p_value, zombie.versus) == (None, None, None)  # the baseline; no baseline there
    assert groups_without(table, Baseline.parse("kafka:2.0.1")) == ["zombie"]
    assert "against the baseline kafka:2.0.1's row" in render(table, "text", "kafka:2.0.1")
    with pytest.raises(BadInput, match="matches 2 rows under faults kill .*--baseline own:hw"):
        with_p_values(rows(results), Baseline.parse("own"))
    with pytest.raises(BadInput, match="no row is kafka:3.9.1; the rows: own:hw, own:kip320, kafka:2.0.1:kip320"):
        with_p_values(rows(results), Baseline.parse("kafka:3.9.1"))
    with pytest.raises(BadInput, match="SYSTEM:TRUNCATION"):
        Baseline.parse("own:")


def copy_examples(where: Path) -> Path:
    for example in EXAMPLES.iterdir():
        if example.is_dir():
            shutil.copytree(example, where / example.name)
    return where


def test_compare_of_the_seed_examples_per_truncation(tmp_path):
    copy_examples(tmp_path / "runs")
    done = fencepost(tmp_path, "compare", "runs", "--out", "out", timeout=300)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[1]: line for line in done.stdout.splitlines()[1:] if line.startswith("own ")}
    assert lines["hw"].split()[3:6] == ["3", "3", "1.00"]
    assert lines["kip101"].split()[3:6] == ["2", "0", "0.00"]
    assert "lost-write" in lines["hw"] and "replica-divergence" in lines["hw"]
    assert "0.1000 vs own:hw" in lines["kip101"]  # 0 of 2 against 3 of 3
    assert (tmp_path / "out" / "compare.png").stat().st_size > 5000
    with open(tmp_path / "out" / "compare.csv") as f:
        header, *table = list(csv.reader(f))
    # the columns of earlier releases first, in their order (users' scripts read them), new ones after
    assert header[:14] == ["system", "truncation", "faults", "runs", "invalid", "unknown", "crashed",
                           "invalid_rate", "ci_low", "ci_high", "anomalies", "p_value", "versus",
                           "median_first_detection_s"]
    assert header[14:17] == ["liveness_judged", "liveness_failed", "liveness_findings"]  # issue 27's, after
    assert header[17:] == ["liveness_rate", "liveness_ci_low", "liveness_ci_high", "liveness_p_value"]  # issue 34's
    assert list(CSV_COLUMNS) == header
    hw, kip101 = (dict(zip(header, line)) for line in table)
    assert (hw["p_value"], hw["versus"], kip101["p_value"], kip101["versus"]) == ("", "", "0.1", "own:hw")
    assert float(hw["median_first_detection_s"]) > 0 and kip101["median_first_detection_s"] == ""


def test_compare_prints_json_and_markdown(tmp_path):
    copy_examples(tmp_path / "runs")
    done = fencepost(tmp_path, "compare", "runs", "--out", "out", "--format", "json", "--baseline", "own:kip101")
    assert done.returncode == 0, done.stderr
    hw, kip101 = json.loads(done.stdout)  # stdout holds the JSON alone; where files went is on stderr
    assert "compare.csv" in done.stderr
    assert list(hw) == ["system", "truncation", "faults", "runs", "judged", "invalid", "unknown", "crashed",
                        "invalid_rate", "ci_low", "ci_high", "p_value", "versus", "median_first_detection_s",
                        "runs_by_anomaly", "anomaly_totals", "liveness_judged", "liveness_failed",
                        "runs_by_liveness", "liveness_rate", "liveness_ci_low", "liveness_ci_high",
                        "liveness_p_value"]
    assert [hw[k] for k in ("system", "truncation", "faults", "runs", "judged", "invalid", "invalid_rate")] == [
        "own", "hw", "none", 3, 3, 3, 1.0]
    assert (hw["ci_low"], hw["p_value"], hw["versus"]) == (pytest.approx(0.4385, abs=1e-4), pytest.approx(0.1),
                                                          "own:kip101")
    assert hw["runs_by_anomaly"]["lost-write"] == 2 and hw["median_first_detection_s"] > 0
    assert (kip101["p_value"], kip101["versus"], kip101["median_first_detection_s"]) == (None, None, None)

    done = fencepost(tmp_path, "compare", "runs", "--out", "out", "--format", "markdown")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("| system | truncation | faults | runs | invalid | invalid rate [95% CI] | p (Fisher)")
    assert set(lines[1]) <= set("|-:") and lines[1].count("|") == lines[0].count("|")
    assert lines[2].startswith("| own | hw | none | 3 | 3 | 1.00 [0.44, 1.00] | - |")
    assert lines[3].startswith("| own | kip101 | none | 2 | 0 | 0.00 [0.00, 0.66] | 0.1000 vs own:hw |")
    assert lines[4] == "" and lines[5].startswith("_p: Fisher's exact test") and "compare.csv" not in done.stdout

    bad = fencepost(tmp_path, "compare", "runs", "--out", "out", "--baseline", "own:kip320")
    assert bad.returncode == 254 and "no row is own:kip320" in bad.stderr


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under `root`, with the bytes of each file (None for a folder)."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def test_compare_writes_nothing_into_the_runs_it_reads(tmp_path):
    runs = copy_examples(tmp_path / "runs")  # none checked yet: compare checks them
    checked = runs / "kip101-scenario-1"  # one checked, invalid: compare checks it again for its detection time
    assert check_run(checked, out=None, jobs=1).valid is False and (checked / "results.json").is_file()
    before = snapshot(runs)
    done = fencepost(tmp_path, "compare", "runs", "--out", "out", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "0.1000 vs own:hw" in done.stdout
    assert snapshot(runs) == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["compare.csv", "compare.png"]

    inside = fencepost(tmp_path, "compare", "runs", "--out", "runs/kip101-scenario-2/cmp")
    assert inside.returncode == 254 and "inside the run directory" in inside.stderr
    assert snapshot(runs) == before


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


def test_compare_counts_the_runs_that_failed_liveness_by_finding(tmp_path):
    from fencepost.harness.compare.collect import liveness_of
    from fencepost.harness.compare.formats import liveness_cell, to_json
    from fencepost.harness.compare.table import rows

    def run(name: str, liveness: dict | None) -> Path:
        run_dir = tmp_path / name
        run_dir.mkdir()
        (run_dir / "history.jsonl").write_text("")
        (run_dir / "test.json").write_text(json.dumps({"system": "own", "truncation": "hw"}))
        results = {"valid": True, "anomaly_counts": {}}
        if liveness is not None:
            results["liveness"] = liveness
        (run_dir / "results.json").write_text(json.dumps(results))
        return run_dir

    run("a", {"verdict": "failed", "findings": 3, "kinds": {"unavailable": 2, "no-recovery": 1,
                                                            "fatal-marker": 0, "stuck-consumer": 0}})
    run("b", {"verdict": "ok", "findings": 0, "kinds": {"unavailable": 0}})
    run("c", {"findings": 1, "fatal_markers": [{}], "failed_partitions": []})  # written before the verdict
    run("d", None)  # checked before there was a liveness section
    (row,) = rows(collect([tmp_path]))
    assert (row.runs, row.liveness_judged, row.liveness_failed) == (4, 3, 2)
    assert row.runs_by_liveness == {"unavailable": 1, "no-recovery": 1, "fatal-marker": 1}
    assert liveness_cell(row) == "2/3 0.67 [0.21, 0.94] (fatal-marker 1, no-recovery 1, unavailable 1)"
    assert json.loads(to_json([row]))[0]["liveness_failed"] == 2
    assert liveness_of(None) == (None, {}) and liveness_of({"verdict": "ok", "kinds": {}}) == ("ok", {})


def plant_runs(root: Path, truncation: str, liveness: list[dict | None]) -> None:
    """One valid, checked run directory of own:`truncation` (no faults) per liveness section
    (None: a results.json written before there was one)."""
    for n, section in enumerate(liveness):
        run_dir = root / f"{truncation}-{n:02d}"
        run_dir.mkdir(parents=True)
        (run_dir / "history.jsonl").write_text("")
        (run_dir / "test.json").write_text(json.dumps({"system": "own", "truncation": truncation}))
        results = {"valid": True, "anomaly_counts": {}}
        if section is not None:
            results["liveness"] = section
        (run_dir / "results.json").write_text(json.dumps(results))


OK = {"verdict": "ok", "findings": 0, "kinds": {"stuck-consumer": 0}}
STUCK = {"verdict": "failed", "findings": 1, "kinds": {"stuck-consumer": 1}}


def fisher_by_hand(a: int, n1: int, c: int, n2: int) -> float:
    """Two-sided Fisher's exact p of a/n1 against c/n2, summed here as fractions: every table
    with the same margins no more probable than the one seen."""
    from fractions import Fraction
    from math import comb
    hits = a + c
    probability = {x: Fraction(comb(n1, x) * comb(n2, hits - x), comb(n1 + n2, hits))
                   for x in range(max(0, hits - n2), min(n1, hits) + 1)}
    return float(sum(p for p in probability.values() if p <= probability[a]))


def test_compare_gives_the_liveness_failure_rate_its_interval_and_fisher_p(tmp_path):
    runs = tmp_path / "runs"
    # all valid: a stuck consumer is the only thing wrong, and must not hide behind the verdict
    plant_runs(runs, "hw", [STUCK] + [OK] * 39 + [{"verdict": "unknown", "findings": 0, "kinds": {}}, None])
    plant_runs(runs, "kip101", [OK] * 3 + [STUCK] + [OK] * 4)
    plant_runs(runs, "kip320", [OK] * 5)
    done = fencepost(tmp_path, "compare", "runs", "--out", "out", "--format", "json")
    assert done.returncode == 0, done.stderr
    hw, kip101, kip320 = json.loads(done.stdout)
    # liveness unknown and no liveness section at all: out of the denominator
    assert (hw["runs"], hw["invalid"], hw["liveness_judged"], hw["liveness_failed"]) == (42, 0, 40, 1)
    assert hw["liveness_rate"] == pytest.approx(1 / 40)
    assert (hw["liveness_ci_low"], hw["liveness_ci_high"]) == pytest.approx((0.0044, 0.1288), abs=1e-4)
    assert hw["liveness_p_value"] is None  # the first row of its group: nothing to test against
    assert (kip101["liveness_judged"], kip101["liveness_failed"], kip101["liveness_rate"]) == (8, 1, 1 / 8)
    assert (kip101["liveness_ci_low"], kip101["liveness_ci_high"]) == pytest.approx((0.0224, 0.4709), abs=1e-4)
    assert kip101["versus"] == "own:hw"
    assert kip101["liveness_p_value"] == pytest.approx(fisher_by_hand(1, 8, 1, 40)) == pytest.approx(348 / 1128)
    assert round(kip101["liveness_p_value"], 2) == 0.31
    # a clean row: 0 with the interval [0, upper]; tested against the row above it
    assert (kip320["liveness_failed"], kip320["liveness_rate"]) == (0, 0.0)
    assert kip320["liveness_ci_low"] == pytest.approx(0.0, abs=1e-12)
    assert kip320["liveness_ci_high"] == pytest.approx(0.4345, abs=1e-4)
    assert kip320["liveness_p_value"] == pytest.approx(fisher_by_hand(0, 5, 1, 8)) == pytest.approx(1.0)

    done = fencepost(tmp_path, "compare", "runs", "--out", "out", "--baseline", "own:hw")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[1]: line for line in done.stdout.splitlines() if line.startswith("own ")}
    assert "1/40 0.03 [0.00, 0.13] (stuck-consumer 1)" in lines["hw"]
    assert "1/8 0.12 [0.02, 0.47] p=0.3085 (stuck-consumer 1)" in lines["kip101"]
    assert "0/5 0.00 [0.00, 0.43] p=1.0000" in lines["kip320"]
    assert "liveness failed [95% CI]" in done.stdout.splitlines()[0]
    assert "liveness failed: runs that failed liveness / runs with a liveness verdict" in done.stdout  # the legend
    with open(tmp_path / "out" / "compare.csv") as f:
        table = list(csv.DictReader(f))
    by = {line["truncation"]: line for line in table}
    assert (by["hw"]["liveness_rate"], by["hw"]["liveness_ci_low"], by["hw"]["liveness_ci_high"]) == (
        "0.0250", "0.0044", "0.1288")
    assert by["hw"]["liveness_p_value"] == ""
    assert float(by["kip101"]["liveness_p_value"]) == pytest.approx(348 / 1128, abs=1e-6)  # against the baseline
    assert float(by["kip320"]["liveness_p_value"]) == pytest.approx(fisher_by_hand(0, 5, 1, 40), abs=1e-6)


def test_a_row_without_a_liveness_verdict_has_no_liveness_rate_nor_p(tmp_path):
    from fencepost.harness.compare.formats import as_dict, liveness_cell
    plant_runs(tmp_path, "hw", [OK] * 3)
    plant_runs(tmp_path, "kip101", [None, {"verdict": "unknown", "findings": 0, "kinds": {}}])
    hw, kip101 = with_p_values(rows(collect([tmp_path])))
    assert (kip101.liveness_judged, kip101.liveness_p_value, kip101.versus) == (0, None, "own:hw")
    assert kip101.p_value is not None  # the invalid-run rate is still tested
    assert (as_dict(kip101)["liveness_rate"], liveness_cell(kip101)) == (None, "-")
    assert hw.liveness_interval == pytest.approx((0.0, 0.5615), abs=1e-4) and hw.liveness_rate == 0.0
