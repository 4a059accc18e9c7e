"""The checks of a partition, run in any split (checkers.check.run_checks, each part with
its own observations, as two workers do), merge into the very report `check_partition`
gives, for every planted anomaly; `fencepost check --jobs 2`
splits a partition, or gives each partition a worker of its own (held to
`jobs` CPUs), only when that ends the work sooner, and gives the same
results.json as one process when it does.

Fast: one small run per planter (about 1 s in all) and one forked check.
"""
from __future__ import annotations

import os

import pytest

from fencepost.checkers.check import CHECKS, check_partition, merge, run_checks
from fencepost.checkers.partition import CheckOptions, PartitionHistory
from fencepost.harness.check import checking
from fencepost.harness.check.checking import _shares, check_run, worker_cpus
from fencepost.harness.check.loading import load_run
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.plant import PLANTERS, CannotPlant, plant


@pytest.fixture(scope="module")
def base_run():
    return generate(GenConfig(seed=11, lines=1_200, idempotent=True, dangling=True, group=True))


@pytest.mark.parametrize("name", sorted(PLANTERS))
def test_two_halves_join_into_the_whole_report(tmp_path, base_run, name):
    try:
        planted = plant(name, base_run, 11)
    except CannotPlant:
        pytest.skip(f"{name} cannot be planted in this run")
    run = load_run(planted.run.write(tmp_path / "run"))
    for ph in run.partitions.values():
        whole = check_partition(ph, run.options)
        for half in checking.HALVES:
            rest = tuple(name for name in CHECKS if name not in half)
            # The scheduler's halves, in either order, and each check alone: one report.
            findings = {**run_checks(ph, run.options, rest), **run_checks(ph, run.options, half)}
            assert merge(ph.topic, ph.partition, findings) == whole
        alone = {name: run_checks(ph, run.options, (name,))[name] for name in reversed(CHECKS)}
        assert merge(ph.topic, ph.partition, alone) == whole


def test_every_check_is_in_one_half_and_an_unknown_check_is_refused():
    names = [name for half in checking.HALVES for name in half]
    assert sorted(names) == sorted(CHECKS) and len(set(names)) == len(names)
    with pytest.raises(ValueError, match="no check named 'poll'"):
        run_checks(PartitionHistory("fp", 0), CheckOptions(), ("poll",))


def sized(*sizes: int) -> list[int]:
    """What _shares reads of partitions of these sizes."""
    return list(sizes)


def test_a_partition_is_split_only_when_that_ends_the_work_sooner(monkeypatch):
    monkeypatch.setattr(checking, "MAX_WORKERS_PER_JOB", 1)  # no more workers than jobs
    big = checking.COPY_MIN_OPS
    # 3 on 2: the smallest in halves, one to each worker beside a whole one.
    shares = _shares(sized(big, big + 1, big + 2), 2)
    assert sorted(map(sorted, shares)) == [[(0, 0), (1, None)], [(0, 1), (2, None)]]
    assert sorted(map(sorted, _shares(sized(big), 2))) == [[(0, 0)], [(0, 1)]]
    assert all(half is None for share in _shares(sized(big, big, big, big), 2) for _, half in share)
    assert all(half is None for share in _shares(sized(big, big), 3) for _, half in share)
    assert _shares(sized(10, big, big), 2) == [[(1, None), (0, None)], [(2, None)]]  # small: whole
    assert _shares(sized(big, big, big), 1) == [[(0, None), (1, None), (2, None)]]


def test_partitions_that_divide_unevenly_get_a_worker_each_when_that_ends_sooner():
    big = checking.COPY_MIN_OPS
    # 3 on 2: one worker per partition (1.5 partitions' time), not halves (1.8).
    assert _shares(sized(big, big + 1, big + 2), 2) == [[(2, None)], [(1, None)], [(0, None)]]
    # One partition much larger than the rest: its time is the floor either way.
    assert len(_shares(sized(big, big, 4 * big), 2)) == 2
    # 4 on 2 divide evenly; 5 on 2 would be more than 2 workers per job.
    assert len(_shares(sized(big, big, big, big), 2)) == 2
    assert len(_shares(sized(*[big] * 5), 2)) == 2
    # Halves still where there are fewer partitions than jobs.
    assert sorted(map(sorted, _shares(sized(big), 2))) == [[(0, 0)], [(0, 1)]]


def test_workers_beyond_the_jobs_are_held_to_as_many_cpus_as_jobs():
    assert worker_cpus(2, 3, frozenset({0, 1, 2, 3})) == frozenset({0, 1})
    assert worker_cpus(2, 3, frozenset({4, 6, 7})) == frozenset({4, 6})
    assert worker_cpus(2, 3, frozenset({0, 1})) is None  # no more CPUs than jobs: nothing to hold
    assert worker_cpus(2, 2, frozenset({0, 1, 2, 3})) is None  # one worker per job
    assert worker_cpus(2, 3, None) is None  # the platform cannot say


@pytest.mark.integration
def test_split_partitions_give_the_results_of_one_process(tmp_path, monkeypatch):
    run_dir = plant("poll-skip", generate(GenConfig(seed=12, lines=3_000, idempotent=True)),
                    12).run.write(tmp_path / "run")
    monkeypatch.setattr(checking, "FORK_MIN_OPS", 0)
    monkeypatch.setattr(checking, "COPY_MIN_OPS", 0)  # every partition is "large": split
    monkeypatch.setattr(checking, "MAX_WORKERS_PER_JOB", 1)
    run = load_run(run_dir)
    sizes = [run.partition_size(key) for key in run.keys()]
    assert any(half for share in _shares(sizes, 2) for _, half in share)  # 3 on 2: one split
    alone = check_run(run_dir, write=False, out=None, jobs=1).results
    forked = check_run(run_dir, write=False, out=None, jobs=2).results
    alone.pop("checked")
    forked.pop("checked")
    assert forked == alone


@pytest.mark.integration
def test_a_worker_per_partition_gives_the_results_of_one_process(tmp_path, monkeypatch):
    run_dir = plant("lost-write/missing", generate(GenConfig(seed=13, lines=3_000)), 13).run.write(
        tmp_path / "run")
    monkeypatch.setattr(checking, "FORK_MIN_OPS", 0)
    monkeypatch.setattr(checking, "COPY_MIN_OPS", 0)
    run = load_run(run_dir)
    assert len(_shares([run.partition_size(key) for key in run.keys()], 2)) == 3  # a worker each
    alone = check_run(run_dir, write=False, out=None, jobs=1).results
    forked = check_run(run_dir, write=False, out=None, jobs=2).results
    assert alone["valid"] is False and alone["anomaly_counts"]["lost-write"] >= 1
    alone.pop("checked")
    forked.pop("checked")
    assert forked == alone


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_a_worker_holds_itself_to_its_cpus_and_what_it_built_until_it_exits(tmp_path, monkeypatch):
    monkeypatch.setattr(checking, "COPY_MIN_OPS", 0)
    run_dir = generate(GenConfig(seed=14, lines=600)).write(tmp_path / "run")
    run = load_run(run_dir, lazy=True)  # the C reader's: built in the worker; else: copied there
    keys = run.keys()
    whole = load_run(run_dir).partitions[keys[0]]
    before = os.sched_getaffinity(0)
    one = min(before)
    worker = checking._Worker(run, keys, None, frozenset({one}))
    try:  # as a forked worker runs it, here in this process
        reports = worker([(0, None)])
        assert os.sched_getaffinity(0) == {one}
    finally:
        os.sched_setaffinity(0, before)
    assert reports == [check_partition(whole, run.options)]
    (checked,) = worker.checked  # what it built or copied and checked, still referenced: never freed there
    assert checked == whole and checked is not whole
