"""results/index.html and the walk under it (harness/index/): runs however deep, campaigns,
symlinks not followed, the cache, the page's data and links; `fencepost serve` listing a
campaign's runs; `fencepost check --format`. The page in Chromium: tests/system/test_campaign_real.py."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import unquote

import orjson

from fencepost.harness.index.page import write_index
from fencepost.harness.index.tree import scan
from fencepost.harness.serve import find_all, runs_page
from tests.support.campaign_support import make_campaign
from tests.support.cli import fencepost
from tests.support.paths import EXAMPLES


def plain_run(results: Path, test: str, stamp: str, valid, system="own", truncation="kip320", faults="kill") -> Path:
    run_dir = results / test / stamp
    run_dir.mkdir(parents=True)
    (run_dir / "history.jsonl").write_text("")
    (run_dir / "test.json").write_text(json.dumps({"system": system, "truncation": truncation,
                                                   "nemesis": {"faults": faults},
                                                   "versions": {"kafka": system.partition(":")[2]} if ":" in system
                                                   else {}}))
    if valid is not None:
        (run_dir / "results.json").write_bytes(orjson.dumps({"valid": valid, "anomaly_counts": {"lost-write": 3}
                                                             if valid is False else {}, "checked": {"ops": 10}}))
        (run_dir / "report.html").write_text("report")
    return run_dir


def results_folder(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    make_campaign(tmp_path)  # results/campaigns/stand-in/<time>-<hex>/runs/<id>/run/<time>-<hex>/
    plain_run(results, "mine", "20261120T080000Z-aaaaaa", False, "kafka:3.9.1", "hw", "leader-bounce")
    plain_run(results, "mine", "20261120T090000Z-bbbbbb", None)
    (results / "latest").symlink_to("mine/20261120T090000Z-bbbbbb")
    (results / "clusters" / "left" / "nodes").mkdir(parents=True)
    (results / "clusters" / "left" / "nodes" / "test.json").write_text("{}")  # not searched
    return results


def test_every_run_however_deep_and_every_campaign_is_found_once(tmp_path):
    results = results_folder(tmp_path)
    runs, campaigns = scan(results)
    assert len(runs) == 6 and len({r.relative for r in runs}) == 6
    [campaign] = campaigns
    assert (campaign.name, campaign.planned, campaign.finished, campaign.surprises, campaign.verdicts) == (
        "stand-in", 4, 4, 0, {"invalid": 2, "valid": 2})
    deep = [r for r in runs if r.campaign]
    assert len(deep) == 4 and {r.run_id for r in deep} == {"0001_truncation=hw_seed=1", "0002_truncation=hw_seed=2",
                                                           "0003_truncation=kip101_seed=1",
                                                           "0004_truncation=kip101_seed=2"}
    kafka = next(r for r in runs if r.system == "kafka:3.9.1")
    assert (kafka.release, kafka.truncation, kafka.faults, kafka.verdict) == ("3.9.1", "hw", "leader-bounce", "invalid")
    assert next(r for r in runs if r.name.endswith("bbbbbb")).verdict == "not checked"
    assert runs[0].started_at >= runs[-1].started_at  # newest first
    # the cache answers for what did not change, and notices what did
    assert scan(results)[0] == runs
    results_file = Path(results / deep[0].relative / "results.json")
    results_file.write_bytes(orjson.dumps({"valid": True, "anomaly_counts": {}}))
    assert next(r for r in scan(results)[0] if r.relative == deep[0].relative).verdict == "valid"


def test_the_index_page_carries_its_runs_and_relative_links_that_resolve(tmp_path):
    results = results_folder(tmp_path)
    page = write_index(results).read_text()
    data = json.loads(re.search(r'<script type="application/json" id="index-data">(.*?)</script>', page,
                                re.S).group(1))
    assert len(data["runs"]) == 6 and set(data["runs"][0]) == {"relative", "system", "release", "truncation",
                                                                 "faults", "verdict", "campaign"}
    assert {r["campaign"] for r in data["runs"]} == {"stand-in", None}
    links = [unquote(link) for link in re.findall(r'href="([^"#]+)"', page)]
    assert len(links) >= 6 + 5 and all((results / link).exists() for link in links)
    assert '<table id="campaigns">' in page and "as expected" in page
    assert "http" not in re.sub(r'href="#[^"]*"', "", page).replace("http-equiv", "")  # nothing to fetch


def test_serve_lists_a_campaign_and_its_runs(tmp_path):
    results = results_folder(tmp_path)
    runs, campaigns = find_all(results)
    page = runs_page(results, runs, campaigns)
    assert '<table id="campaigns">' in page and "stand-in" in page and "invalid 2, valid 2" in page
    listed = re.findall(r'<tr class="run row-\w+" data-run="([^"]+)"', page)
    assert len(listed) == 6 and sum("campaigns/stand-in/" in r for r in listed) == 4
    assert "stand-in / 0001_truncation=hw_seed=1" in page


def test_check_prints_json_and_markdown(tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(EXAMPLES / "kip101-scenario-1", run_dir)
    done = fencepost(tmp_path, "check", str(run_dir), "--format", "json")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["verdict"] == "invalid" and document["anomaly_counts"]["lost-write"] >= 1
    assert "lost-write" in document["examples"] and document["results"] == str(run_dir / "results.json")
    done = fencepost(tmp_path, "check", str(run_dir), "--format", "markdown", "--no-write")
    assert done.returncode == 1 and done.stdout.startswith("**verdict: INVALID**")
    assert "| anomaly | count | example |" in done.stdout and "| lost-write |" in done.stdout
    assert fencepost(tmp_path, "check", str(run_dir), "--format", "xml").returncode == 254
