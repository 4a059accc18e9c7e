"""checkers/check.py: the whole check of one partition — stats, unknown reasons,
verdicts, the linearizability hand-off — and no false alarm on valid runs."""
from __future__ import annotations

import pytest
from hypothesis import given, settings

from fencepost.checkers.anomaly import DUPLICATE, LOST_WRITE, NONLINEARIZABLE, UNSEEN, default_invalid
from fencepost.checkers.check import PartitionReport, check_partition
from fencepost.checkers.partition import CheckOptions
from fencepost.harness.check.loading import load_run
from tests.support.checkers_support import history, log, names, poll, send
from tests.support.synth import generate as synth
from tests.support.synth.strategies import gen_configs

OFFSETS_ONLY = CheckOptions(linearizability=False)


def verdict(report: PartitionReport, invalid: frozenset[str]) -> bool | str:
    """One partition's verdict by Jepsen's precedence (harness/check/verdict.py's for a whole run):
    invalid when an anomaly of the invalid set was found, else unknown when something could
    not be judged, else valid."""
    if any(a.name in invalid for a in report.anomalies):
        return False
    return "unknown" if report.unknown_reasons else True


def clean_history():
    return history(
        sends=[send(0, "a", 0), send(2, "b", 1, process=1), send(4, "c", outcome="fail"),
               send(6, "d", outcome="info"), send(8, "e", 2)],
        polls=[poll(10, *log("a", "b")), poll(12, outcome="info"), poll(14)],
        final=log("a", "b", "e"), replicas={"n1": log("a", "b", "e"), "n2": log("a", "b")},
        hws={"n1": 3, "n2": 2})


def test_a_clean_partition_reports_only_what_was_not_polled():
    report = check_partition(clean_history(), OFFSETS_ONLY)
    assert names(report.anomalies) == [UNSEEN]  # "e" was acked, never polled
    assert report.unknown_reasons == []
    assert (report.topic, report.partition) == ("fp", 0)
    assert report.linearizable is None and report.linear_explored == 0


def test_stats_count_what_the_partition_did():
    stats = check_partition(clean_history(), OFFSETS_ONLY).stats
    assert {k: v for k, v in stats.items() if k != "unseen_series"} == {
        "sends_ok": 3, "sends_fail": 1, "sends_info": 1, "polls": 3, "polls_ok": 2,
        "records_polled": 2, "final_length": 3, "final_complete": True, "unjudged": 0,
        "unseen": 1, "unseen_in_final": 1}
    assert stats["unseen_series"] == [[10, 1], [30, 2], [90, 3], [110, 1], [150, 1]]


def test_missing_final_read_makes_the_partition_unknown():
    ph = history(sends=[send(0, "a", 0)], final=None)
    report = check_partition(ph, OFFSETS_ONLY)
    [reason] = report.unknown_reasons
    assert "no final read of fp/0" in reason
    assert report.stats["unjudged"] == 1 and report.stats["final_length"] is None
    assert verdict(report, default_invalid(False)) == "unknown"


def test_incomplete_final_read_makes_the_partition_unknown_and_counts_unjudged():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1)], polls=[poll(4, *log("a", "b"))],
                 final=[(0, "a")], complete=False)
    report = check_partition(ph, OFFSETS_ONLY)
    [reason] = report.unknown_reasons
    assert "incomplete" in reason and "after offset 0" in reason and "1 acked write" in reason
    assert report.anomalies == []
    assert verdict(report, default_invalid(False)) == "unknown"


def test_an_invalid_anomaly_beats_unknown():
    ph = history(sends=[send(0, "a", 0), send(2, "b", 1), send(4, "c", 5)],
                 final=[(0, "a"), (1, "x")], complete=False)
    report = check_partition(ph, OFFSETS_ONLY)
    assert LOST_WRITE in names(report.anomalies) and report.unknown_reasons
    assert verdict(report, default_invalid(False)) is False


def test_duplicates_are_invalid_only_for_an_idempotent_producer():
    ph = history(sends=[send(0, "a", 0)], polls=[poll(2, (0, "a"))], final=log("a", "a"))
    report = check_partition(ph, OFFSETS_ONLY)
    assert names(report.anomalies) == [DUPLICATE]
    assert verdict(report, default_invalid(idempotent=False)) is True
    assert verdict(report, default_invalid(idempotent=True)) is False
    assert UNSEEN not in default_invalid(True) and DUPLICATE in default_invalid(True)


# --- the linearizability hand-off -------------------------------------------------


def lost_write_history():
    """clean_history with the acked "b" (offset 1) gone from the final read."""
    ph = clean_history()
    ph.final = [(o, v) for o, v in ph.final if v != "b"]
    return ph


def test_a_failed_search_becomes_one_nonlinearizable_anomaly():
    report = check_partition(lost_write_history(), CheckOptions())
    [d] = [a.details for a in report.anomalies if a.name == NONLINEARIZABLE]
    assert report.linearizable is False and report.linear_method == "search"
    assert d["explored"] == report.linear_explored > 0
    # The minimal counterexample: the ack of "b" at 1 and the final read there.
    assert {(step["f"], step.get("offset")) for step in d["counterexample"]} == {
        ("send", 1), ("final-read", 1)}
    assert d["ops"] == [[2, 3]]  # the send of "b": invoke line 2, completion line 3
    assert "<html" in report.linear_html.lower() and "b" in report.linear_html
    assert d["explanation"]
    assert verdict(report, default_invalid(False)) is False


def test_a_search_out_of_budget_makes_the_partition_unknown():
    report = check_partition(clean_history(), CheckOptions(search_budget=1, linear_method="search"))
    assert report.linearizable is None
    assert any("gave up after" in r and "(budget 1)" in r for r in report.unknown_reasons)
    assert NONLINEARIZABLE not in names(report.anomalies)
    assert verdict(report, default_invalid(False)) == "unknown"


@pytest.mark.parametrize("method", ["witness", "search"])
def test_a_linearizable_partition_adds_nothing(method):
    report = check_partition(clean_history(), CheckOptions(linear_method=method))
    assert report.linearizable is True and report.unknown_reasons == []
    assert report.linear_method == method
    assert verdict(report, default_invalid(False)) is True


def test_report_is_a_dataclass_with_the_public_fields():
    fields = set(PartitionReport.__dataclass_fields__)
    assert fields == {"topic", "partition", "anomalies", "stats", "linearizable", "linear_explored",
                      "linear_method", "counterexample", "linear_html", "unknown_reasons"}


# --- no false alarm on valid runs ----------------------------------------------------

def _check_run(run, tmp_path):
    loaded = load_run(run.write(tmp_path / "run"))
    return {key[1]: check_partition(ph, OFFSETS_ONLY) for key, ph in loaded.partitions.items()}


@settings(max_examples=40, deadline=None)
@given(config=gen_configs(max_lines=800))
def test_valid_synthetic_runs_raise_no_false_alarm(config, tmp_path_factory):
    run = synth.generate(config)
    tolerated = {UNSEEN} | ({DUPLICATE} if not config.idempotent else set())
    for partition, report in _check_run(run, tmp_path_factory.mktemp("synth")).items():
        wrong = [a.to_json() for a in report.anomalies if a.name not in tolerated]
        assert wrong == [], f"partition {partition}: {wrong[:3]}"
        assert report.unknown_reasons == []


def test_a_large_valid_run_is_valid_in_every_partition(tmp_path):
    run = synth.generate(synth.GenConfig(seed=3, lines=20_000, idempotent=True, nemesis_rate=0.02,
                                         p_offset_gap=0.02, dangling=True))
    reports = _check_run(run, tmp_path)
    assert len(reports) == 3
    for report in reports.values():
        assert verdict(report, default_invalid(idempotent=True)) is True
        assert report.stats["sends_ok"] > 100 and report.stats["records_polled"] > 100


# --- planted anomalies are found --------------------------------------------------

plant = pytest.importorskip("tests.support.synth.plant", reason="the anomaly planters are missing")
PLANTABLE = sorted(n for n, p in plant.PLANTERS.items() if p.anomaly != NONLINEARIZABLE)


@pytest.mark.parametrize("name", PLANTABLE)
def test_every_planted_anomaly_is_found_where_it_was_planted(name, tmp_path):
    found_somewhere = False
    group = plant.PLANTERS[name].anomaly.startswith("commit-")  # needs consumers in a group
    for seed, idempotent in [(1, True), (2, False)]:
        run = synth.generate(synth.GenConfig(seed=seed, lines=600, idempotent=idempotent, group=group))
        try:
            planted = plant.plant(name, run, seed)
        except plant.CannotPlant:
            continue
        reports = _check_run(planted.run, tmp_path / f"{seed}")
        report = reports[planted.partition]
        found = names(report.anomalies)
        assert planted.anomaly in found, (planted.details, found)
        invalid = verdict(report, default_invalid(idempotent)) is False
        assert invalid == plant.expected_invalid(planted)
        found_somewhere = True
    assert found_somewhere, f"{name} could be planted in none of the runs"
