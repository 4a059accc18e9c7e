"""The premise of the durability scenarios (nemesis/durability.py judges it, harness/check/premise.py
reports it): a scenario whose leader kept every acknowledged record through its power cut, or
whose old leader kept no longer a tail than the replica that returns first, is reported as not met — in results.json,
in `fencepost check`'s summary, on the report's first lines and in a campaign run's `why` — and
never changes the verdict; runs whose scenarios met it, or had none, stay clean."""
from __future__ import annotations

import html
import io
from pathlib import Path

import orjson

from fencepost.harness.campaign.expect import Expectation, judge
from fencepost.harness.check.checking import check_run
from fencepost.harness.check.premise import describe, premise
from fencepost.harness.report import write_report
from fencepost.harness.rundir.history import HistoryWriter, iter_plain
from fencepost.nemesis.durability import Kip101Divergence, LastReplicaStanding
from fencepost.nemesis.spec import parse_fault
from tests.support.report_support import planted_run

NOT_MET = {"met": False, "why": "the leader n1's power cut lost none of the partition's log (4096 bytes kept)"}


def history(tmp_path: Path, *scenario_values: dict) -> Path:
    """A run directory whose history holds a client send and, per value, a scenario's invoke/info pair."""
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        writer.append(0, "invoke", "send", {"topic": "fp", "partition": 0, "value": "premise"})
        for value in scenario_values:
            writer.append("nemesis", "invoke", "last-replica-standing", {"topic": "fp", "partition": None})
            writer.append("nemesis", "info", "last-replica-standing", {"topic": "fp", "partition": 0, **value})
    return tmp_path


def test_runs_without_a_judged_scenario_have_no_premise(tmp_path):
    (tmp_path / "plain").mkdir(), (tmp_path / "unjudged").mkdir()
    assert premise(history(tmp_path / "plain")) == {"verdict": "none", "scenarios": []}
    unjudged = history(tmp_path / "unjudged", {"leader": "n1"})  # a scenario that judges no premise
    assert premise(unjudged) == {"verdict": "none", "scenarios": []}
    assert premise(tmp_path / "missing") == {"verdict": "none", "scenarios": []}


def test_a_scenario_that_did_not_set_up_its_premise_is_reported_with_its_reason(tmp_path):
    section = premise(history(tmp_path, {"premise": {"met": True, "why": "took 53248 bytes"}}, {"premise": NOT_MET}))
    assert section["verdict"] == "not-met"
    assert [s["met"] for s in section["scenarios"]] == [True, False]
    assert section["scenarios"][1]["index"] == 4 and section["scenarios"][1]["scenario"] == "last-replica-standing"
    assert describe(section) == [f"last-replica-standing (history index 4): premise not met: {NOT_MET['why']}"]


def test_met_and_unmeasured_premises(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    assert premise(history(tmp_path / "a", {"premise": {"met": True, "why": "took 1 byte"}}))["verdict"] == "met"
    unmeasured = premise(history(tmp_path / "b", {"premise": {"met": None, "why": "could not be measured"}}))
    assert unmeasured["verdict"] == "unknown" and describe(unmeasured)[0].endswith("premise not measured: "
                                                                                  "could not be measured")


def test_fencepost_check_reports_an_unmet_premise_and_keeps_the_verdict(tmp_path):
    run_dir = planted_run(tmp_path / "results")  # invalid: a planted lost write
    before = orjson.loads((run_dir / "results.json").read_bytes())
    assert before["premise"] == {"verdict": "none", "scenarios": []}
    with HistoryWriter(run_dir / "history.jsonl") as writer:
        writer.append("nemesis", "info", "last-replica-standing", {"topic": "fp", "partition": 0, "premise": NOT_MET})
    out = io.StringIO()
    assert check_run(run_dir, out=out).valid is False
    after = orjson.loads((run_dir / "results.json").read_bytes())
    assert after["premise"]["verdict"] == "not-met" and after["valid"] == before["valid"]
    assert f"premise: last-replica-standing (history index {after['premise']['scenarios'][0]['index']}): " \
           f"premise not met: {NOT_MET['why']}" in out.getvalue()
    page = write_report(run_dir).read_text()
    assert 'id="premise" data-premise="not-met"' in page and html.escape(NOT_MET["why"]) in page
    assert page.index('id="verdict"') < page.index('id="premise"') < page.index('id="anomalies-section"')


def test_a_clean_run_has_no_premise_line_on_its_report(tmp_path):
    run_dir = planted_run(tmp_path / "results")
    assert 'id="premise"' not in write_report(run_dir).read_text()


def test_a_campaign_run_says_its_premise_was_not_met_and_keeps_its_status():
    section = {"verdict": "not-met", "scenarios": [{"scenario": "last-replica-standing", "index": 9, **NOT_MET}]}
    status, why = judge(Expectation(), "valid", {}, premise=section)
    assert status == "expected" and why == f"valid as expected; premise not met: {NOT_MET['why']}"
    assert judge(Expectation(), "valid", {}, premise={"verdict": "met", "scenarios": []}) == \
        ("expected", "valid as expected")
    assert judge(Expectation(), "invalid", {}, premise=section)[0] == "surprise"


def lrs(before: int | None, after: int | None) -> LastReplicaStanding:
    scenario = LastReplicaStanding(parse_fault("last-replica-standing"))
    scenario.log_bytes = {"n1": {"before": before, "after": after}}
    return scenario


def test_last_replica_standing_needs_the_leaders_cut_to_take_acknowledged_records():
    met = lrs(90_112, 36_864).premise("n1", acknowledged=400, durable_end=160)
    assert met == {"met": True, "why": "the leader n1's power cut took 53248 bytes of the partition's log: its "
                                       "durable log ends at offset 160, below the high watermark 400 the "
                                       "followers had fetched to"}
    # the own broker with a fsync a second: the cut took one unacknowledged batch (73 bytes)
    unmet = lrs(24_599, 24_526).premise("n1", acknowledged=330, durable_end=330)
    assert unmet["met"] is False and "took 73 bytes" in unmet["why"] and "not below the high watermark 330" \
        in unmet["why"]
    assert lrs(100, 100).premise("n1", acknowledged=330, durable_end=331)["met"] is False
    assert lrs(100, 50).premise("n1", acknowledged=None, durable_end=3)["met"] is None
    assert lrs(100, 50).premise("n1", acknowledged=330, durable_end=None)["met"] is None


def kip101(sizes: dict[str, tuple[int | None, int | None]]) -> Kip101Divergence:
    scenario = Kip101Divergence(parse_fault("kip101-divergence"))
    scenario.log_bytes = {node: {"before": b, "after": a} for node, (b, a) in sizes.items()}
    return scenario


def test_kip101_divergence_needs_a_shorter_first_back_replica_and_a_longer_old_leader():
    met = kip101({"n1": (9000, 7000), "n2": (9000, 5000)}).premise("n1", "n2")
    assert met["met"] is True and "n2 lost 4000 bytes" in met["why"] and "kept 7000" in met["why"]
    nothing_lost = kip101({"n1": (9000, 7000), "n2": (5000, 5000)}).premise("n1", "n2")
    assert nothing_lost["met"] is False and "n2, which returns first and leads, lost none" in nothing_lost["why"]
    no_tail = kip101({"n1": (9000, 5000), "n2": (9000, 5000)}).premise("n1", "n2")
    assert no_tail["met"] is False and "no tail to diverge" in no_tail["why"]
    assert kip101({"n1": (9000, None), "n2": (9000, 5000)}).premise("n1", "n2")["met"] is None


def test_the_history_reader_decodes_only_lines_with_the_key(tmp_path):
    run = history(tmp_path, {"premise": NOT_MET})
    assert [op.f for op in iter_plain(run / "history.jsonl", containing=b'"premise"')] == \
        ["send", "last-replica-standing"]  # the send's value holds the word; premise() then skips it
    assert len(list(iter_plain(run / "history.jsonl"))) == 3
