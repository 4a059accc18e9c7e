"""The offset-based checks and the linearizability search agree, partition by
partition, on every generated and planted history (through the run files and
`check_run`): `nonlinearizable` is reported iff one of lost-write, duplicate
(idempotent producer only), inconsistent-offsets, truncated-read,
nonmonotonic-send, aborted-read, phantom-read or future-read is.

Anomalies the log model does not see (poll order, replica divergence, unseen,
duplicates of a non-idempotent producer) must leave the search satisfied.
"""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fencepost.checkers import anomaly as A
from tests.support.synth.checking import anomalies_by_partition, check_synth
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import PLANTERS, CannotPlant, plant
from tests.support.synth.run import SynthRun
from tests.support.synth.strategies import gen_configs

ORDER_ANOMALIES = frozenset({
    A.LOST_WRITE, A.INCONSISTENT_OFFSETS, A.TRUNCATED_READ, A.NONMONOTONIC_SEND,
    A.ABORTED_READ, A.PHANTOM_READ, A.FUTURE_READ,
})


def log_model_anomalies(idempotent: bool) -> frozenset[str]:
    """The offset anomalies that a history admits no linearization exactly when."""
    return ORDER_ANOMALIES | {A.DUPLICATE} if idempotent else ORDER_ANOMALIES


def assert_agreement(run: SynthRun) -> dict:
    # The search itself must decide, also where the witness would prove it.
    run.test.setdefault("checker", {})["linear_method"] = "search"
    results = check_synth(run).results
    watched = log_model_anomalies(run.idempotent) | {A.NONLINEARIZABLE}
    for name in watched & set(results["anomaly_counts"]):
        # Every example is listed, so the per-partition view below is exact.
        assert len(results["anomalies"][name]) == results["anomaly_counts"][name], name
    found = anomalies_by_partition(results)
    for key, search in results["linearizability"].items():
        names = found.get(key, set())
        offsets_say_invalid = bool(names & log_model_anomalies(run.idempotent))
        assert search["linearizable"] is not None, f"{key}: the search gave up ({search})"
        assert search["linearizable"] is (not offsets_say_invalid), (
            f"{key}: search says linearizable={search['linearizable']}, offset checks found {sorted(names)}")
        assert (A.NONLINEARIZABLE in names) is (not search["linearizable"])
    return results


@settings(max_examples=60, deadline=None)
@given(gen_configs(max_lines=2_500))
def test_generated_histories_agree(config):
    results = assert_agreement(generate(config))
    assert A.NONLINEARIZABLE not in results["anomaly_counts"]


@pytest.mark.parametrize("name", sorted(PLANTERS))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(config=gen_configs(plantable=True, max_lines=2_000), seed=st.integers(0, 2**16))
def test_planted_histories_agree(name, config, seed):
    try:
        planted = plant(name, generate(config), seed)
    except CannotPlant:
        assume(False)
    results = assert_agreement(planted.run)
    if planted.anomaly in log_model_anomalies(config.idempotent) | {A.NONLINEARIZABLE}:
        assert A.NONLINEARIZABLE in results["anomaly_counts"], planted.details


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(config=gen_configs(plantable=True, max_lines=1_500),
       names=st.lists(st.sampled_from(sorted(PLANTERS)), min_size=2, max_size=3),
       seed=st.integers(0, 2**16))
def test_histories_with_several_planted_anomalies_agree(config, names, seed):
    run = generate(config)
    try:
        for i, name in enumerate(names):
            run = plant(name, run, seed + i).run
    except CannotPlant:
        assume(False)
    assert_agreement(run)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(config=gen_configs(plantable=True, max_lines=1_500), name=st.sampled_from(sorted(PLANTERS)),
       seed=st.integers(0, 2**16), cut=st.floats(0.0, 1.0))
def test_histories_with_an_incomplete_final_read_agree(config, name, seed, cut):
    try:
        run = plant(name, generate(config), seed).run
    except CannotPlant:
        assume(False)
    for p, pf in run.final.items():
        run.final[p] = dataclasses.replace(pf, read=pf.read[:int(len(pf.read) * cut)], complete=False)
    assert_agreement(run)


def test_non_idempotent_retries_leave_duplicates_the_search_accepts():
    run = generate(GenConfig(seed=8, lines=4_000, idempotent=False, p_retry_dup=0.3))
    assert run.truth.duplicate_copies > 0
    results = assert_agreement(run)
    assert A.DUPLICATE in results["anomaly_counts"]
    assert A.NONLINEARIZABLE not in results["anomaly_counts"]
