"""`fencepost analyze` on Spark (local mode): its verdicts and anomaly counts equal the
single-process checker's on the same runs — the seeds' run directories and a real
campaign of own-broker runs — and it writes what it promises."""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from fencepost.harness.check.checking import check_run
from tests.support.cli import fencepost
from tests.support.paths import EXAMPLES

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.spark]


def test_analyze_agrees_with_fencepost_check_run_by_run(tmp_path):
    pytest.importorskip("pyspark", reason="pip install -e '.[spark]'")
    for example in EXAMPLES.iterdir():
        if example.is_dir():
            shutil.copytree(example, tmp_path / "seeds" / example.name)
    (tmp_path / "c.toml").write_text("""
name = "small"
[base]
backend = "process"
time_limit = 3
rate = 200
concurrency = 3
nemesis.faults = "kill"
nemesis.interval = 1.0
[matrix]
truncation = ["hw", "kip320"]
""")
    campaign = fencepost(tmp_path, "campaign", "c.toml", timeout=600)
    assert campaign.returncode in (0, 1), campaign.stderr[-3000:]
    campaign_dir = (tmp_path / "results" / "campaigns" / "small" / "latest").resolve()

    broken = tmp_path / "broken" / "bad-test-json"  # one unreadable run: its error, not the analysis's
    shutil.copytree(next(d for d in (tmp_path / "seeds").iterdir()), broken)
    (broken / "test.json").write_text("{")

    done = fencepost(tmp_path, "analyze", str(campaign_dir), "seeds", "broken", "--out", "analysis", timeout=900)
    assert done.returncode == 0, done.stderr[-5000:]
    out = tmp_path / "analysis"
    for name in ("summary.csv", "junit.xml", "report.html", "plots/rates.png", "plots/detection.png"):
        assert (out / name).is_file(), name
    import pyarrow.parquet as pq
    history = pq.read_table(out / "parquet" / "history")
    final = pq.read_table(out / "parquet" / "final")
    seeds = tmp_path / "seeds"
    analysed = [*seeds.iterdir(), broken, *(Path(json.loads(p.read_text())["run_dir"])
                                            for p in campaign_dir.glob("runs/*/outcome.json"))]
    assert history.num_rows == sum(len((d / "history.jsonl").read_bytes().splitlines()) for d in analysed)
    assert final.num_rows > 0 and set(history.column("run_id").to_pylist()) >= {d.name for d in seeds.iterdir()}
    runs_copied = set(history.column("run_id").to_pylist())
    assert len(list((out / "parquet" / "history").glob("part-*.parquet"))) == len(runs_copied)

    cases = {c.get("name"): c for c in ET.parse(out / "junit.xml").getroot().iter("testcase")}
    run_dirs = {p.parent.name: Path(json.loads(p.read_text())["run_dir"])
                for p in campaign_dir.glob("runs/*/outcome.json")}
    run_dirs.update({p.name: p for p in (tmp_path / "seeds").iterdir()})
    assert set(cases) == set(run_dirs) | {"bad-test-json"}
    error = cases.pop("bad-test-json").find("error")
    assert error is not None and "test.json" in error.get("message") and "not valid JSON" in error.get("message")
    for run_id, run_dir in run_dirs.items():
        single = check_run(run_dir, write=False, out=None, jobs=1)
        verdict = {True: "valid", False: "invalid"}.get(single.valid, "unknown")
        case = cases[run_id]
        spark_verdict = ("invalid" if case.find("failure") is not None else
                         "unknown" if case.find("skipped") is not None else "valid")
        assert spark_verdict == verdict, (run_id, case.attrib, single.results["anomaly_counts"])
        if verdict == "invalid":
            expected = ", ".join(f"{k} {n}" for k, n in sorted(single.results["anomaly_counts"].items()) if n)
            assert case.find("failure").get("message") == f"invalid: {expected}"

    rows = {(r["system"], r["truncation"], r["faults"]): r for r in csv.DictReader((out / "summary.csv").open())}
    seeds_hw = rows[("own", "hw", "none")]
    assert (seeds_hw["runs"], seeds_hw["invalid"]) == ("3", "3")
    assert float(seeds_hw["ci_low"]) == pytest.approx(0.4385, abs=1e-3)
    assert seeds_hw["median_first_detection_s"] != ""
    assert ("own", "kip320", "kill") in rows and ("own", "hw", "kill") in rows
