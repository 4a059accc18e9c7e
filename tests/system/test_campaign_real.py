"""Campaigns for real, as CI runs them: own brokers (no JVM) on netns, hw and kip320 under
leader-bounce, hw expected to lose writes.

- a small campaign, two runs side by side (`--parallel 2`, each on its own subnet), ends
  green — its hw cell found its bug — with report.html, summary.json, summary.csv, junit.xml
  and results/index.html, and leaves no namespace behind;
- `fencepost serve` lists the campaign and its runs; the index opens in Chromium from a
  copied folder, filters, and its links lead to the runs' reports;
- `fencepost analyze` (Spark) gives the campaign report's numbers;
- the campaign run as two shards, merged by `fencepost summarize`, equals the whole one;
- a replay of the hw run finds lost writes again; a shrink of it (seeded, bounded tries)
  writes a shorter script that still fails, and `fencepost run --config` of it fails again.

Subnets 10.77.131-137.0/24.
"""
from __future__ import annotations

import csv
import http.client
import json
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlsplit
from xml.etree import ElementTree as ET

import pytest

from tests.support.cli import FENCEPOST, fencepost
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.root]

CAMPAIGN = """
name = "real"
[base]
system = "own"
backend = "netns"
time_limit = 10
nemesis.faults = "leader-bounce"
nemesis.schedule = "fixed"
nemesis.interval = 2
[matrix]
truncation = ["hw", "kip320"]
[[expect]]
truncation = "hw"
verdict = "invalid"
"""


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    import os
    if os.geteuid() != 0:
        pytest.skip("netns needs root")
    tmp = tmp_path_factory.mktemp("campaign")
    (tmp / "real.toml").write_text(CAMPAIGN)
    done = fencepost(tmp, "campaign", "real.toml", "--parallel", "2", "--subnet", "10.77.131.0/24",
                     "--format", "json", timeout=900)
    directory = (tmp / "results" / "campaigns" / "real" / "latest").resolve()
    return tmp, done, directory


def outcomes(directory: Path) -> dict[str, dict]:
    found = {}
    for path in directory.glob("runs/*/outcome.json"):
        outcome = json.loads(path.read_text())
        found[outcome["config"]["truncation"]] = outcome
    return found


def test_a_small_real_campaign_with_an_expected_invalid_cell_ends_green_with_its_report(campaign):
    tmp, done, directory = campaign
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-4000:])
    summary = json.loads(done.stdout)
    assert summary["green"] and summary["finished"] == 2 and summary["surprises"] == 0
    configs = {c["truncation"]: c for c in summary["configurations"]}
    assert (configs["hw"]["invalid"], configs["hw"]["expected"]) == (1, ["invalid"])
    assert (configs["kip320"]["invalid"], configs["kip320"]["expected"]) == (0, ["valid"])
    assert configs["kip320"]["versus"] == "own:hw" and configs["hw"]["median_first_detection_s"] > 0
    runs = outcomes(directory)
    assert runs["hw"]["anomaly_counts"]["lost-write"] > 0 and runs["hw"]["status"] == "expected"
    # side by side, each on its own subnet
    subnets = {json.loads((Path(o["run_dir"]) / "test.json").read_text())["backend_options"]["subnet"]
               for o in runs.values()}
    assert subnets == {"10.77.131.0/24", "10.77.132.0/24"}
    assert all((directory / "runs" / o["run_id"] / "console.log").is_file() for o in runs.values())
    for name in ("report.html", "summary.json", "summary.csv", "rates.png", "junit.xml"):
        assert (directory / name).is_file(), name
    suite = ET.parse(directory / "junit.xml").getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "0")
    table = list(csv.DictReader((directory / "summary.csv").open()))
    assert {r["anomaly"] for r in table} >= {"lost-write"} and {r["truncation"] for r in table} == {"hw", "kip320"}
    assert (tmp / "results" / "index.html").is_file()
    left = namespaces()
    assert not any(f"run-{Path(o['run_dir']).name[-6:]}" in left for o in runs.values()), left


def test_serve_lists_the_campaign_and_its_runs(campaign):
    tmp, _, directory = campaign
    server = subprocess.Popen([sys.executable, "-c", FENCEPOST, "serve", "--port", "0", "--results",
                               str(tmp / "results")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    try:
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", server.stdout.readline()).group(1)
        address = urlsplit(url)

        def get(path: str) -> tuple[int, str]:
            connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
            connection.request("GET", path)
            response = connection.getresponse()
            return response.status, response.read().decode()
        status, page = get("/")
        assert status == 200 and '<table id="campaigns">' in page and "real" in page
        listed = re.findall(r'<tr class="run row-(\w+)" data-run="([^"]+)"', page)
        assert sorted(verdict for verdict, _ in listed) == ["invalid", "valid"]
        assert all(run.startswith(f"campaigns/real/{directory.name}/runs/") for _, run in listed)
        for link in re.findall(r'href="(/campaigns/[^"]+/report\.html)"', page):
            assert get(link)[0] == 200
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        server.stdout.close()


def test_the_index_opens_in_chromium_from_a_copied_folder(campaign, tmp_path):
    from tests.support.browser import Browser

    source, _, _ = campaign
    copy = tmp_path / "downloaded-artifact"
    shutil.copytree(source / "results", copy, symlinks=True)
    with Browser(tmp_path / "profile") as browser:
        browser.open((copy / "index.html").as_uri(), ready="document.body.dataset.shown !== undefined")
        assert browser.js("document.body.dataset.shown") == "2"
        assert browser.js("document.querySelectorAll('#campaigns tr.campaign').length") == 1
        browser.js("(() => { const s = document.getElementById('filter-truncation'); s.value = 'hw';"
                   " s.dispatchEvent(new Event('change')); })()")
        assert browser.js("document.body.dataset.shown") == "1"
        assert "truncation=hw" in browser.js("location.hash")
        shown = browser.js("Array.from(document.querySelectorAll('#runs-body tr')).filter(r => !r.hidden)"
                           ".map(r => r.dataset.verdict)")
        assert shown == ["invalid"]
        report = browser.js("Array.from(document.querySelectorAll('#runs-body tr')).filter(r => !r.hidden)[0]"
                            ".querySelector('a.report').href")
        assert report.startswith(copy.as_uri()) and Path(unquote(urlsplit(report).path)).is_file()
        browser.open(report)
        assert "INVALID" in browser.js("document.body.textContent")
        assert browser.console_errors() == []


@pytest.mark.spark
def test_analyze_on_spark_gives_the_campaign_reports_numbers(campaign, tmp_path):
    _, _, directory = campaign
    done = fencepost(tmp_path, "analyze", str(directory), "--out", "analysis", timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    spark = {r["truncation"]: r for r in csv.DictReader((tmp_path / "analysis" / "summary.csv").open())}
    report = {c["truncation"]: c for c in json.loads((directory / "summary.json").read_text())["configurations"]}
    assert set(spark) == set(report)
    for truncation, row in report.items():
        mine = spark[truncation]
        assert (int(mine["runs"]), int(mine["invalid"]), int(mine["unknown"]), int(mine["crashed"])) == (
            row["runs"], row["invalid"], row["unknown"], row["crashed"])
        assert float(mine["invalid_rate"]) == pytest.approx(row["invalid_rate"], abs=1e-4)
        assert (float(mine["ci_low"]), float(mine["ci_high"])) == pytest.approx((row["ci_low"], row["ci_high"]),
                                                                                abs=1e-4)
        median = row["median_first_detection_s"]
        assert (mine["median_first_detection_s"] == "") == (median is None)
        if median is not None:
            assert float(mine["median_first_detection_s"]) == pytest.approx(median, abs=1e-3)
    suite = ET.parse(tmp_path / "analysis" / "junit.xml").getroot()
    assert suite.get("failures") == "0"  # the campaign's expectations: the hw run failing is expected


def test_shards_merged_equal_the_whole_campaign(campaign, tmp_path):
    source, _, whole = campaign
    (tmp_path / "real.toml").write_text(CAMPAIGN)
    shards = []
    for i, subnet in ((1, "10.77.133.0/24"), (2, "10.77.134.0/24")):
        done = fencepost(tmp_path, "campaign", "real.toml", "--shard", f"{i}/2", "--subnet", subnet, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        shards.append((tmp_path / "results" / "campaigns" / "real" / "latest").resolve())
    merged = fencepost(tmp_path, "summarize", *map(str, shards), "--out", "merged", "--format", "json")
    assert merged.returncode == 0, merged.stderr
    merged = json.loads(merged.stdout)
    alone = json.loads((whole / "summary.json").read_text())
    assert merged["shards"] == ["1/2", "2/2"] and merged["finished"] == alone["finished"] == 2
    figures = ("system", "truncation", "faults", "runs", "judged", "invalid", "unknown", "crashed", "invalid_rate",
               "ci_low", "ci_high", "p_value", "versus", "expected", "statuses")
    assert [{k: c[k] for k in figures} for c in merged["configurations"]] == [
        {k: c[k] for k in figures} for c in alone["configurations"]]
    assert [(r["run_id"], r["verdict"], r["status"]) for r in merged["runs"]] == [
        (r["run_id"], r["verdict"], r["status"]) for r in alone["runs"]]
    spark = fencepost(tmp_path, "analyze", *map(str, shards), "--out", "analysis", timeout=900)
    assert spark.returncode == 0, spark.stderr[-3000:]
    rows = {r["truncation"]: r for r in csv.DictReader((tmp_path / "analysis" / "summary.csv").open())}
    assert {t: (int(r["runs"]), int(r["invalid"])) for t, r in rows.items()} == {
        c["truncation"]: (c["runs"], c["invalid"]) for c in merged["configurations"]}


def hw_run(directory: Path) -> Path:
    return Path(outcomes(directory)["hw"]["run_dir"])


def test_a_replay_of_the_hw_leader_bounce_run_finds_lost_writes_again(campaign, tmp_path):
    _, _, directory = campaign
    run_dir = hw_run(directory)
    done = fencepost(tmp_path, "replay", str(run_dir), "--results", "replays", "--backend-option",
                     "subnet=10.77.135.0/24", timeout=600)
    assert done.returncode == 1, (done.stdout, done.stderr[-3000:])
    assert re.search(r"found again: .*lost-write", done.stdout), done.stdout
    replay = tmp_path / re.search(r"run directory: (\S+)", done.stdout).group(1)
    test = json.loads((replay / "test.json").read_text())
    assert test["nemesis"]["schedule"] == "scripted" and test["nemesis"]["faults"] == "leader-bounce"
    assert [s["action"].split(":")[0] for s in test["nemesis"]["script"]] == ["start leader-bounce"] * len(
        test["nemesis"]["script"])


def test_shrink_of_the_failing_run_writes_a_shorter_script_that_still_fails(campaign, tmp_path):
    _, _, directory = campaign
    run_dir = hw_run(directory)
    original = json.loads((run_dir / "test.json").read_text())
    done = fencepost(tmp_path, "shrink", str(run_dir), "--tries", "2", "--max-runs", "7", "--results", "shrinks",
                     "--backend-option", "subnet=10.77.136.0/24", timeout=1200)
    assert done.returncode == 0, (done.stdout, done.stderr[-4000:])
    toml = tmp_path / re.search(r"reproducer: (\S+)", done.stdout).group(1)
    log = json.loads((toml.parent / "shrink.json").read_text())
    assert log["anomaly"] == "lost-write" and 1 <= len(log["runs"]) <= 7
    start, best = log["start"], log["best"]
    assert len(best["script"]) < len(start["script"]) or best["time_limit"] < start["time_limit"], (start, best)
    reproducing = [r for r in log["runs"] if r["script"] == best["script"] and r["time_limit"] == best["time_limit"]
                   and r["reproduced"]]
    assert reproducing and reproducing[0]["found"]["lost-write"] > 0
    spec = tomllib.loads(toml.read_text())
    assert spec["nemesis"]["schedule"] == "scripted" and spec["time_limit"] == best["time_limit"]
    assert spec["nemesis"]["script"] == best["script"] and spec["truncation"] == original["truncation"] == "hw"
    again = fencepost(tmp_path, "run", "--config", str(toml), "--results", "again", "--backend-option",
                      "subnet=10.77.137.0/24", timeout=600)
    assert again.returncode == 1 and "lost-write" in again.stdout, (again.stdout, again.stderr[-3000:])
