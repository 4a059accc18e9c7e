"""A campaign's expectations (harness/campaign/expect.py): the `[[expect]]` rules, their
refusals, which rule a run takes, how a run's outcome is judged (liveness keys generic), and
JUnit counting only surprises; shards (`--shard I/N`) and slots (`--parallel N`) planned."""
from __future__ import annotations

import io
import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from fencepost.harness.campaign.conductor import Options, campaign_dir, run_campaign
from fencepost.harness.campaign.expect import Expectation, judge
from fencepost.harness.campaign.junit import write_junit
from fencepost.harness.campaign.plan import Shard, load_campaign
from fencepost.harness.campaign.slots import first_subnet, for_slot, slot_subnet
from fencepost.harness.errors import BadInput

CAMPAIGN = """
name = "t"
[base]
backend = "process"
time_limit = 5
nemesis.faults = "kill"
[matrix]
truncation = ["hw", "kip101", "kip320"]
seed = [1, 2]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_the_first_matching_rule_says_what_a_run_should_yield_and_the_rest_should_be_valid(tmp_path):
    campaign = load_campaign(write(tmp_path, CAMPAIGN + """
[[expect]]
truncation = "hw"
verdict = "invalid"
[[expect]]
truncation = ["kip101", "hw"]
seed = 2
verdict = ["valid", "invalid"]
liveness = "findings"
"""))
    expected = {(r.spec.truncation, r.spec.seed): r.expected for r in campaign.runs}
    assert expected[("hw", 1)].verdicts == ("invalid",) and expected[("hw", 2)].rule == 1  # the first rule wins
    assert expected[("kip101", 2)] == Expectation(("valid", "invalid"), ("findings",), 2)
    assert expected[("kip101", 1)] == Expectation() and expected[("kip320", 2)].verdicts == ("valid",)
    assert expected[("kip101", 2)].describe() == "valid or invalid, liveness findings"


def test_one_expect_table_is_one_rule_and_nested_settings_match_by_their_dotted_name(tmp_path):
    campaign = load_campaign(write(tmp_path, CAMPAIGN + '[expect]\n"nemesis.faults" = "kill"\nverdict = "invalid"\n'))
    assert {r.expected.verdicts for r in campaign.runs} == {("invalid",)}


def test_a_rule_may_name_a_setting_only_some_runs_have(tmp_path):
    """A system option set in some cases only (as durability.toml's ELR cells)."""
    campaign = load_campaign(write(tmp_path, """
name = "t"
[base]
backend = "process"
nemesis.faults = "kill"
[matrix]
seed = [1]
[[cases]]
"system_options.flush_interval_ms" = 100
[[cases]]
"system_options.session_timeout_ms" = 4000
[[cases]]
truncation = "hw"
[[expect]]
"system_options.session_timeout_ms" = 4000
verdict = "invalid"
[[expect]]
"system_options.flush_interval_ms" = 100
verdict = ["valid", "invalid"]
"""))
    assert [r.expected.verdicts for r in campaign.runs] == [("valid", "invalid"), ("invalid",), ("valid",)]


@pytest.mark.parametrize("rule, message", [
    ('truncation = "hw"\nverdict = "broken"', "verdict = 'broken': choose valid, invalid, unknown"),
    ('truncation = "hw"\nverdict = []', "verdict = []: give a word or a list of words"),
    ('truncation = "hw"\nliveness = ["none", "findings"]', '"none" (no finding) stands alone'),
    ('verdict = "invalid"', "name the runs it is about with run settings"),
    ('truncaton = "hw"\nverdict = "invalid"', "'truncaton' is not a run setting"),
    ('truncation = "kip279"\nverdict = "invalid"', "matches no run of the campaign"),
    ('"nemesis.fault" = "kill"', "'nemesis.fault' is not a run setting"),
])
def test_a_bad_rule_is_refused_before_anything_starts(tmp_path, rule, message):
    with pytest.raises(BadInput, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        load_campaign(write(tmp_path, CAMPAIGN + "[[expect]]\n" + rule + "\n"))


def test_a_bad_baseline_or_expect_shape_is_refused(tmp_path):
    with pytest.raises(BadInput, match="baseline = 3"):
        load_campaign(write(tmp_path, "baseline = 3\n" + CAMPAIGN))
    with pytest.raises(BadInput, match="expect must be"):
        load_campaign(write(tmp_path, "expect = 1\n" + CAMPAIGN))


@pytest.mark.parametrize("expected, verdict, liveness, unknown_fails, status, why", [
    (Expectation(), "valid", {}, False, "expected", "valid as expected"),
    (Expectation(), "invalid", {}, False, "surprise", "expected valid, got invalid"),
    (Expectation(("invalid",)), "invalid", {}, False, "expected", "invalid as expected"),
    (Expectation(("invalid",)), "valid", {}, False, "surprise", "expected invalid, got valid"),
    (Expectation(), "unknown", {}, False, "unknown", "no verdict (expected valid)"),
    (Expectation(), "unknown", {}, True, "surprise", "no verdict (expected valid)"),
    (Expectation(("valid", "unknown")), "unknown", {}, True, "expected", "unknown as expected"),
    (Expectation(), "crashed", {}, False, "crashed", "the run crashed"),
    # liveness: any key of the section, non-zero; "none": no finding
    (Expectation(("valid",), ("findings",)), "valid", {"findings": 2}, False, "expected",
     "valid as expected, liveness findings"),
    (Expectation(("valid",), ("findings",)), "valid", {"findings": 0}, False, "surprise",
     "valid as expected, but liveness: no findings where expected"),
    (Expectation(("valid",), ("none",)), "valid", {"findings": 1}, False, "surprise",
     "valid as expected, but liveness: 1 finding(s) where none was expected"),
    (Expectation(("valid",), ("unavailability",)), "valid", {"unavailability": [{"from": 1}]}, False, "expected",
     "valid as expected, liveness unavailability"),
    (Expectation(("valid",), ("unavailability",)), "valid", {"findings": 3}, False, "surprise",
     "valid as expected, but liveness: no unavailability where expected"),
])
def test_a_run_is_judged_against_its_expectation(expected, verdict, liveness, unknown_fails, status, why):
    assert judge(expected, verdict, liveness, unknown_fails) == (status, why)


def test_junit_fails_only_surprises_and_shows_a_canary_that_bit_as_passed(tmp_path):
    path = tmp_path / "junit.xml"
    outcomes = [
        {"run_id": "hw-1", "verdict": "invalid", "status": "expected", "why": "invalid as expected",
         "anomaly_counts": {"lost-write": 3}, "seconds": 20.0},
        {"run_id": "hw-2", "verdict": "valid", "status": "surprise", "why": "expected invalid, got valid",
         "seconds": 20.0},
        {"run_id": "kip320-1", "verdict": "valid", "status": "expected", "why": "valid as expected", "seconds": 20.0},
        {"run_id": "kip320-2", "verdict": "unknown", "status": "unknown", "why": "no verdict", "seconds": 20.0},
        {"run_id": "kip320-3", "verdict": "crashed", "status": "crashed", "error": "RunError: setup", "seconds": 1.0},
    ]
    write_junit(path, "ci", outcomes)
    suite = ET.parse(path).getroot()
    assert [suite.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["5", "1", "1", "1"]
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["hw-1"].find("failure") is None and "lost-write 3" in cases["hw-1"].find("system-out").text
    assert cases["hw-2"].find("failure").get("message") == "expected invalid, got valid"
    assert cases["kip320-2"].find("skipped") is not None and cases["kip320-3"].find("error") is not None


def test_shards_deal_the_runs_round_robin_and_together_hold_each_once(tmp_path):
    campaign = load_campaign(write(tmp_path, CAMPAIGN))
    shares = [campaign.sharded(Shard(i, 4)).share for i in range(1, 5)]
    assert [len(s) for s in shares] == [2, 2, 1, 1]
    ids = [r.run_id for share in shares for r in share]
    assert sorted(ids) == sorted(r.run_id for r in campaign.runs) and len(set(ids)) == 6
    assert [r.number for r in shares[1]] == [2, 6]
    assert Shard.parse("2/4") == Shard(2, 4)
    for bad in ("0/2", "3/2", "2", "a/b", "1/0"):
        with pytest.raises(BadInput, match="give I/N"):
            Shard.parse(bad)


def test_a_shard_is_resumed_only_as_the_same_shard(tmp_path):
    campaign = load_campaign(write(tmp_path, CAMPAIGN)).sharded(Shard(1, 2))
    directory = campaign_dir(tmp_path / "results", campaign, resume=False)
    plan = json.loads((directory / "campaign.json").read_text())
    assert plan["shard"] == "1/2" and len(plan["share"]) == 3 and len(plan["runs"]) == 6
    assert campaign_dir(tmp_path / "results", campaign, resume=True) == directory
    with pytest.raises(BadInput, match="resume it with the same --shard"):
        campaign_dir(tmp_path / "results", campaign.sharded(Shard(2, 2)), resume=True)


def test_each_slot_has_its_own_subnet_after_the_first(tmp_path):
    assert [slot_subnet("10.77.140.0/24", k) for k in range(3)] == ["10.77.140.0/24", "10.77.141.0/24",
                                                                     "10.77.142.0/24"]
    assert slot_subnet("10.77.140.0/28", 2) == "10.77.140.32/28"
    with pytest.raises(BadInput, match="do not fit"):
        slot_subnet("255.255.255.0/24", 1)
    netns = load_campaign(write(tmp_path, CAMPAIGN.replace('"process"', '"netns"'))).runs[0].spec
    assert first_subnet(netns, None) == "10.77.0.0/24" and first_subnet(netns, "10.77.150.0/24") == "10.77.150.0/24"
    assert for_slot(netns, 1, "10.77.150.0/24").backend_options == {"subnet": "10.77.151.0/24"}
    process = load_campaign(write(tmp_path, CAMPAIGN)).runs[0].spec
    assert first_subnet(process, "10.77.150.0/24") is None and for_slot(process, 1, None) == process


def test_until_failure_starts_no_run_after_the_first_surprise(tmp_path):
    campaign = load_campaign(write(tmp_path, CAMPAIGN + '[[expect]]\ntruncation = "hw"\nverdict = "invalid"\n'))
    directory = campaign_dir(tmp_path / "results", campaign, resume=False)
    ran = []

    def run_one(planned, where):  # every run valid: the hw runs are the surprises
        ran.append(planned.run_id)
        return {"verdict": "valid", "exit_code": 0, "anomaly_counts": {}}
    seen = []
    code = run_campaign(campaign, directory, run_one, options=Options(until_failure=True), after_run=seen.append)
    assert code == 1 and len(ran) == 1 and [o["status"] for o in seen] == ["surprise"]
    outcome = json.loads((directory / "runs" / ran[0] / "outcome.json").read_text())
    assert outcome["expected"]["verdict"] == ["invalid"] and outcome["why"] == "expected invalid, got valid"
    assert outcome["time_limit"] == 5.0 and outcome["parallel"] == 1


def test_a_resumed_campaign_judges_its_finished_runs_by_the_expectations_it_has_now(tmp_path):
    before = load_campaign(write(tmp_path, CAMPAIGN))  # no rules: every run should be valid
    directory = campaign_dir(tmp_path / "results", before, resume=False)

    def hw_invalid(planned, where):  # the hw runs find their bug; the rest are valid
        return {"verdict": "invalid" if planned.spec.truncation == "hw" else "valid", "exit_code": 0,
                "anomaly_counts": {}}
    assert run_campaign(before, directory, hw_invalid) == 1  # the two hw runs are surprises
    hw_ids = [r.run_id for r in before.runs if r.spec.truncation == "hw"]
    recorded = {i: (directory / "runs" / i / "outcome.json").read_text() for i in [r.run_id for r in before.runs]}
    assert all(json.loads(recorded[i])["status"] == "surprise" for i in hw_ids)

    after = load_campaign(write(tmp_path, CAMPAIGN + '[[expect]]\ntruncation = "hw"\nverdict = "invalid"\n'))
    out = io.StringIO()
    ran = []
    assert run_campaign(after, campaign_dir(tmp_path / "results", after, resume=True),
                        lambda planned, where: ran.append(planned) or {}, out=out) == 0
    assert ran == [] and "2 judged again by the campaign file's expectations now" in out.getvalue()
    for run_id, text in recorded.items():
        now = json.loads((directory / "runs" / run_id / "outcome.json").read_text())
        if run_id in hw_ids:
            assert (now["status"], now["why"], now["expected"]["verdict"]) == ("expected", "invalid as expected",
                                                                                ["invalid"])
            assert {k: v for k, v in now.items() if k not in ("status", "why", "expected")} == \
                {k: v for k, v in json.loads(text).items() if k not in ("status", "why", "expected")}
        else:
            assert (directory / "runs" / run_id / "outcome.json").read_text() == text  # untouched


def test_a_resumed_campaign_takes_cases_added_after_the_last_and_refuses_any_other_change(tmp_path):
    cases = '[[cases]]\ntruncation = "hw"\n[[cases]]\ntruncation = "kip320"\n'
    first = load_campaign(write(tmp_path, CAMPAIGN.replace("[matrix]\ntruncation = [\"hw\", \"kip101\", \"kip320\"]\n",
                                                           "[matrix]\n") + cases))
    directory = campaign_dir(tmp_path / "results", first, resume=False)
    assert run_campaign(first, directory, lambda planned, where: {"verdict": "valid", "exit_code": 0}) == 0
    no_matrix = CAMPAIGN.replace("[matrix]\ntruncation = [\"hw\", \"kip101\", \"kip320\"]\n", "[matrix]\n")
    grown = load_campaign(write(tmp_path, no_matrix + cases + '[[cases]]\ntruncation = "kip101"\n'))
    assert campaign_dir(tmp_path / "results", grown, resume=True) == directory
    plan = json.loads((directory / "campaign.json").read_text())
    assert plan["runs"] == plan["share"] == [r.run_id for r in grown.runs] and len(plan["runs"]) == 6
    ran = []
    run_campaign(grown, directory, lambda planned, where: ran.append(planned.spec.truncation) or
                 {"verdict": "valid", "exit_code": 0})
    assert ran == ["kip101", "kip101"]  # only the added case's runs
    reordered = load_campaign(write(tmp_path, no_matrix + '[[cases]]\ntruncation = "kip101"\n' + cases))
    with pytest.raises(BadInput, match="cases were added before the last one"):
        campaign_dir(tmp_path / "results", reordered, resume=True)
