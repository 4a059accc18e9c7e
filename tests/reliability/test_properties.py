"""Properties of `fencepost check` over synthetic runs, through the files a user
has (history.jsonl, final.jsonl, test.json -> check_run -> results.json):

- every valid generated run, of many shapes, is valid (exit 0) with no anomaly
  but `unseen` (and `duplicate` when the producer was not idempotent);
- every planted anomaly is found, and makes the run invalid (exit 1) unless it is
  not in the default invalid set (`unseen`; `duplicate` when not idempotent);
- an incomplete final read makes a valid run `unknown` (exit 2), never valid.
"""
from __future__ import annotations

import dataclasses

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fencepost.checkers import anomaly as A
from tests.support.synth.checking import check_synth
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import PLANTERS, CannotPlant, expected_invalid, plant
from tests.support.synth.strategies import gen_configs


def _tolerated(idempotent: bool) -> set[str]:
    return {A.UNSEEN} if idempotent else {A.UNSEEN, A.DUPLICATE}


@settings(max_examples=100, deadline=None)
@given(gen_configs(max_lines=3_000))
def test_generated_runs_are_valid(config):
    outcome = check_synth(generate(config))
    counts = outcome.results["anomaly_counts"]
    assert set(counts) <= _tolerated(config.idempotent), outcome.results["anomalies"]
    assert outcome.valid is True and outcome.exit_code == 0
    assert outcome.results["valid"] is True


def test_results_json_is_written_per_contract(tmp_path):
    run = generate(GenConfig(seed=4, lines=800))
    outcome = check_synth(run, tmp_path)
    results = orjson.loads((tmp_path / "results.json").read_bytes())
    assert results["valid"] is True and results == orjson.loads(orjson.dumps(outcome.results))
    assert set(results) >= {"valid", "anomaly_counts", "anomalies", "stats", "checked"}
    assert results["checked"]["partitions"] == 3 and results["checked"]["ops"] > 0


@pytest.mark.parametrize("name", sorted(PLANTERS))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(config=gen_configs(plantable=True, max_lines=2_000), seed=st.integers(0, 2**16))
def test_planted_anomaly_is_found(name, config, seed):
    try:
        planted = plant(name, generate(config), seed)
    except CannotPlant:
        assume(False)
    outcome = check_synth(planted.run)
    counts = outcome.results["anomaly_counts"]
    assert planted.anomaly in counts, (planted.details, counts)
    if expected_invalid(planted):
        assert outcome.valid is False and outcome.exit_code == 1
    else:
        # Nothing else was planted, so nothing else may be reported.
        assert set(counts) <= _tolerated(config.idempotent), counts
        assert outcome.valid is True and outcome.exit_code == 0


@pytest.mark.parametrize("idempotent", [True, False])
def test_duplicate_is_invalid_only_for_an_idempotent_producer(idempotent):
    run = generate(GenConfig(seed=12, lines=1_000, idempotent=idempotent))
    outcome = check_synth(plant("duplicate", run, 5).run)
    assert A.DUPLICATE in outcome.results["anomaly_counts"]
    assert outcome.valid is (not idempotent)


def test_the_planted_example_names_the_planted_offset_and_value():
    run = generate(GenConfig(seed=31, lines=1_500))
    planted = plant("lost-write/missing", run, 2)
    (example,) = check_synth(planted.run).results["anomalies"][A.LOST_WRITE]
    assert example["partition"] == planted.partition
    assert example["offset"] == planted.details["offset"]
    assert example["value"] == planted.details["value"]
    assert example["how"] == "missing"


@settings(max_examples=30, deadline=None)
@given(config=gen_configs(min_lines=200, max_lines=1_500), cut=st.floats(0.0, 0.9))
def test_an_incomplete_final_read_is_never_valid(config, cut):
    run = generate(config)
    p = max(run.final, key=lambda q: len(run.final[q].read))
    assume(run.final[p].read)
    pf = run.final[p]
    run.final[p] = dataclasses.replace(pf, read=pf.read[:int(len(pf.read) * cut)], complete=False)
    outcome = check_synth(run)
    assert set(outcome.results["anomaly_counts"]) <= _tolerated(config.idempotent)
    assert outcome.valid == "unknown" and outcome.exit_code == 2


@pytest.fixture(scope="module")
def big_run():
    return generate(GenConfig(seed=99, lines=60_000, idempotent=False, p_offset_gap=0.01,
                              nemesis_rate=0.02, lagging_follower=True, stale_follower=True,
                              group=True))  # group: commits and resumes, for the commit-* planters


@pytest.mark.slow
def test_a_big_messy_run_is_valid(big_run):
    outcome = check_synth(big_run)
    assert set(outcome.results["anomaly_counts"]) <= _tolerated(False)
    assert outcome.valid is True


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLANTERS))
def test_planted_anomaly_is_found_in_a_big_run(name, big_run):
    planted = plant(name, big_run, 1)
    outcome = check_synth(planted.run)
    assert planted.anomaly in outcome.results["anomaly_counts"]
    assert outcome.valid is (not expected_invalid(planted))
