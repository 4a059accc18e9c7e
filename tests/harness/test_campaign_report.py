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
from html.parser import HTMLParser
from urllib.parse import unquote

import pytest

from fencepost.harness.campaign.conductor import campaign_dir
from fencepost.harness.campaign.plan import Shard, load_campaign
from fencepost.harness.campaign.report import write_campaign_report
from fencepost.harness.campaign.summary import summarize
from fencepost.harness.campaign.summary_formats import CSV_COLUMNS, render, to_csv
from fencepost.harness.compare.collect import collect
from fencepost.harness.compare.significance import with_p_values
from fencepost.harness.compare.stats import wilson_interval
from fencepost.harness.compare.table import rows
from fencepost.harness.errors import BadInput
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


STUCK_CAMPAIGN = """
name = "stuck"
[base]
backend = "process"
[matrix]
truncation = ["hw", "kip101"]
seed = [1, 2, 3, 4, 5, 6, 7, 8]
"""


def stuck_campaign(tmp_path):
    """Every run valid and expected valid (liveness not judged by the campaign file): own:hw
    has three runs with a stuck consumer, own:kip101 none, and one run whose liveness is
    unknown (left out of its row's liveness denominator)."""
    from fencepost.harness.campaign.conductor import run_campaign

    def run_one(planned, where):
        run_dir = where / "run"
        run_dir.mkdir(parents=True)
        spec = planned.spec
        (run_dir / "history.jsonl").write_text("")
        (run_dir / "test.json").write_text(json.dumps({"system": "own", "truncation": spec.truncation}))
        stuck = spec.truncation == "hw" and spec.seed <= 3
        verdict = "unknown" if (spec.truncation, spec.seed) == ("kip101", 8) else "failed" if stuck else "ok"
        liveness = {"verdict": verdict, "findings": int(stuck), "kinds": {"stuck-consumer": int(stuck)}}
        (run_dir / "results.json").write_text(json.dumps({"valid": True, "anomaly_counts": {}, "liveness": liveness}))
        return {"verdict": "valid", "exit_code": 0, "anomaly_counts": {}, "liveness": liveness, "run_dir": str(run_dir)}
    (tmp_path / "stuck.toml").write_text(STUCK_CAMPAIGN)
    campaign = load_campaign(tmp_path / "stuck.toml")
    directory = campaign_dir(tmp_path / "results", campaign, resume=False)
    run_campaign(campaign, directory, run_one, out=io.StringIO())
    return directory


class ConfigurationRows(HTMLParser):
    """report.html's #configurations table: its header cells, and per row its class and cells' text."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.cell, self.header, self.rows = False, None, [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self.inside = attrs.get("id") == "configurations"
        elif self.inside and tag == "tr" and "config" in (attrs.get("class") or "").split():
            self.rows.append({"class": attrs["class"].split(), "cells": [], "bars": 0})
        elif self.inside and tag in ("td", "th"):
            self.cell = ""
        elif self.inside and tag == "span" and attrs.get("class") == "bar" and self.rows:
            self.rows[-1]["bars"] += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif self.inside and tag in ("td", "th") and self.cell is not None:
            (self.rows[-1]["cells"] if tag == "td" else self.header).append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_stuck_consumers_behind_valid_verdicts_show_as_a_liveness_failure_rate(tmp_path):
    directory = stuck_campaign(tmp_path)
    done = fencepost(tmp_path, "summarize", str(directory), "--format", "text")
    assert done.returncode == 0, done.stderr  # as expected: the campaign judged no liveness
    hw, kip101 = (line for line in done.stdout.splitlines() if line.startswith("own:"))
    assert "liveness failed [95% CI]" in done.stdout.splitlines()[1]
    low, high = wilson_interval(3, 8)
    assert f"3/8 0.38 [{low:.2f}, {high:.2f}] (stuck-consumer 3)" in hw
    assert "0/7 0.00 [0.00, 0.35] p=0.2000" in kip101  # 3 of 8 against 0 of 7: 91/455
    assert "liveness failed: own:hw none: 3 of 8 runs (stuck-consumer 3), all with a verdict of valid" in done.stdout

    document = json.loads((directory / "summary.json").read_text())
    first, second = document["configurations"]
    assert (first["liveness_failed"], first["liveness_judged"], first["liveness_rate"]) == (3, 8, 3 / 8)
    assert (first["liveness_ci_low"], first["liveness_ci_high"]) == pytest.approx((low, high))
    assert (second["liveness_judged"], second["liveness_p_value"]) == (7, pytest.approx(91 / 455))

    table = list(csv.DictReader(io.StringIO((directory / "summary.csv").read_text())))
    assert tuple(table[0]) == CSV_COLUMNS and CSV_COLUMNS[-6:] == (
        "liveness_judged", "liveness_failed", "liveness_rate", "liveness_ci_low", "liveness_ci_high",
        "liveness_p_value")
    by = {line["truncation"]: line for line in table}
    assert (by["hw"]["liveness_failed"], by["hw"]["liveness_rate"], by["hw"]["liveness_p_value"]) == ("3", "0.3750", "")
    assert (by["kip101"]["liveness_judged"], by["kip101"]["liveness_ci_high"]) == ("7", "0.3543")
    assert float(by["kip101"]["liveness_p_value"]) == pytest.approx(0.2)

    page = (directory / "report.html").read_text()
    parsed = ConfigurationRows()
    parsed.feed(page)
    column = parsed.header.index("liveness failed [95% CI]")
    flagged, clean = parsed.rows
    assert "liveness-failed" in flagged["class"] and "liveness-failed" not in clean["class"]
    assert flagged["cells"][column].startswith(f"3/8 0.38 [{low:.2f}, {high:.2f}]")
    assert "stuck-consumer 3" in flagged["cells"][column] and "p=0.2000" in clean["cells"][column]
    assert flagged["bars"] == clean["bars"] == 2  # the invalid rate's and the liveness rate's
    assert "tr.liveness-failed td" in page  # styled as a surprise is
    assert 'data-green="true"' in page and 'id="liveness-failed"' in page
