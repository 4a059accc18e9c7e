"""The report a campaign ends with (harness/campaign/summary.py, summary_formats.py, report.py):
per configuration the figures of `fencepost compare` beside what was expected; tidy
summary.csv; summary.json; report.html with a link to every run's report; shards merged
equal the whole campaign; a campaign directory moved elsewhere still reads; `fencepost
summarize`. The seeds' example runs stand in for real runs here (tests/system/test_campaign_real.py
runs real ones)."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
from urllib.parse import unquote

import pytest

from harness.campaign.plan import Shard, load_campaign
from harness.campaign.report import write_campaign_report
from harness.campaign.runner import campaign_dir
from harness.campaign.summary import summarize
from harness.campaign.summary_formats import CSV_COLUMNS, render, to_csv
from harness.compare.collect import collect
from harness.compare.significance import with_p_values
from harness.compare.table import rows
from harness.errors import BadInput
from tests.support.campaign_support import CAMPAIGN, make_campaign
from tests.support.cli import fencepost


def test_the_summary_holds_compares_figures_beside_the_expectations(tmp_path):
    directory = make_campaign(tmp_path)
    summary = summarize([directory])
    assert summary.green and summary.exit_code == 0 and summary.surprises == 0 and not summary.missing
    hw, kip101 = summary.configurations
    assert (hw.name, hw.row.runs, hw.row.invalid, hw.expected, hw.statuses) == ("own:hw", 2, 2, ("invalid",),
                                                                                {"expected": 2})
    assert (kip101.name, kip101.row.invalid, kip101.expected) == ("own:kip101", 0, ("valid",))
    # one implementation: the very rows `fencepost compare` gives for this campaign directory
    assert [c.row for c in summary.configurations] == with_p_values(rows(collect([directory])))
    assert kip101.row.p_value == pytest.approx(1 / 3) and kip101.row.versus == "own:hw"
    assert hw.row.median_first_detection_s is not None
    assert [r.status for r in summary.runs] == ["expected"] * 4


def test_summary_csv_is_tidy_one_row_per_configuration_and_anomaly(tmp_path):
    summary = summarize([make_campaign(tmp_path)])
    table = list(csv.DictReader(io.StringIO(to_csv(summary))))
    assert tuple(table[0]) == CSV_COLUMNS
    anomalies = sorted({r["anomaly"] for r in table})
    assert "lost-write" in anomalies and len(table) == 2 * len(anomalies)  # every anomaly for every configuration
    lost = {r["truncation"]: r for r in table if r["anomaly"] == "lost-write"}
    assert (lost["hw"]["runs_with_anomaly"], lost["kip101"]["runs_with_anomaly"]) == ("2", "0")
    assert lost["hw"]["expected"] == "invalid" and lost["hw"]["invalid_rate"] == "1.0000"
    assert {r["surprises"] for r in table} == {"0"}


def test_the_report_files_and_their_links(tmp_path):
    directory = make_campaign(tmp_path)
    summary, written = write_campaign_report([directory])
    assert sorted(p.name for p in written.values()) == ["rates.png", "report.html", "summary.csv", "summary.json"]
    page = written["report"].read_text()
    assert 'data-green="true"' in page and "own:hw" in page and "invalid as expected" in page
    links = re.findall(r'<a class="report" href="([^"]+)"', page)
    assert len(links) == 4 and all((directory / unquote(link)).is_file() for link in links)
    document = json.loads(written["json"].read_text())
    assert document["green"] and document["planned"] == document["finished"] == 4
    assert [c["system"] + ":" + c["truncation"] for c in document["configurations"]] == ["own:hw", "own:kip101"]
    assert all((directory / r["report"]).is_file() for r in document["runs"])
    markdown = render(summary, "markdown", directory)
    assert markdown.startswith("### campaign stand-in: green: 4 of 4 runs as expected")
    assert "| own:hw | none | invalid | 2 | 2 | 1.00 [0.34, 1.00] |" in markdown


def test_a_surprise_makes_the_report_red_and_names_the_commands_that_reduce_it(tmp_path):
    directory = make_campaign(tmp_path)
    outcome_file = next(directory.glob("runs/0001_*/outcome.json"))
    outcome = json.loads(outcome_file.read_text())
    outcome["expected"] = {"verdict": ["valid"], "liveness": [], "rule": None}
    outcome["status"], outcome["why"] = "surprise", "expected valid, got invalid"
    outcome_file.write_text(json.dumps(outcome))
    summary, written = write_campaign_report([directory])
    assert not summary.green and summary.exit_code == 1 and summary.surprises == 1
    page = written["report"].read_text()
    assert 'data-green="false"' in page and "fencepost shrink " in page and "fencepost replay " in page
    assert "surprise: 0001_" in render(summary, "text", directory)


def test_shards_merged_equal_the_whole_campaign(tmp_path):
    whole = summarize([make_campaign(tmp_path, results="whole")])
    shards = [make_campaign(tmp_path, Shard(i, 2), results=f"shard{i}") for i in (2, 1)]
    merged = summarize(shards)
    assert merged.shards == ("1/2", "2/2") and not merged.missing
    assert [c.row for c in merged.configurations] == [c.row for c in whole.configurations]
    assert [(r.run_id, r.verdict, r.status) for r in merged.runs] == [(r.run_id, r.verdict, r.status)
                                                                      for r in whole.runs]
    one = summarize(shards[:1])
    assert len(one.missing) == 2 and "2 of 4 planned runs missing" in render(one, "text", shards[0])
    with pytest.raises(BadInput, match="give each shard once"):
        summarize([shards[0], shards[0]])


def test_shards_of_another_campaign_are_refused(tmp_path):
    first = make_campaign(tmp_path, Shard(1, 2), results="a")
    (tmp_path / "c.toml").write_text(CAMPAIGN.replace("seed = [1, 2]", "seed = [1]"))
    other = load_campaign(tmp_path / "c.toml")
    second = campaign_dir(tmp_path / "b", other, resume=False)
    with pytest.raises(BadInput, match="is not a shard of the campaign"):
        summarize([first, second])
    with pytest.raises(BadInput, match="not a campaign directory"):
        summarize([tmp_path])


def test_a_campaign_directory_moved_elsewhere_still_finds_its_runs(tmp_path):
    directory = make_campaign(tmp_path)
    moved = tmp_path / "downloaded" / "artifact"
    shutil.move(str(directory), moved)
    summary = summarize([moved])
    assert [r.verdict for r in summary.runs] == ["invalid", "invalid", "valid", "valid"]
    assert all(r.run_dir is not None and r.run_dir.is_relative_to(moved) for r in summary.runs)


def test_fencepost_summarize_writes_the_report_and_prints_the_chosen_format(tmp_path):
    shards = [make_campaign(tmp_path, Shard(i, 2), results=f"shard{i}") for i in (1, 2)]
    done = fencepost(tmp_path, "summarize", *map(str, shards), "--out", "merged", "--format", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["shards"] == ["1/2", "2/2"] and document["finished"] == 4 and document["green"]
    assert (tmp_path / "merged" / "report.html").is_file() and (tmp_path / "merged" / "summary.csv").is_file()
    bad = fencepost(tmp_path, "summarize", str(tmp_path))
    assert bad.returncode == 254 and "not a campaign directory" in bad.stderr
