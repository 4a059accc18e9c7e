"""A partition checked in two halves (checkers.check.check_half, each with
its own observations, as two workers do) joins into the very report
`check_partition` gives, for every planted anomaly; `fencepost check --jobs 2`
splits a partition only when that ends the work sooner, and gives the same
results.json as one process when it does.

Fast: one small run per planter (about 1 s in all) and one forked check.
"""
from __future__ import annotations

import pytest

from checkers.check import OFFSETS_HALF, READS_HALF, check_half, check_partition, join_halves
from checkers.partition import PartitionHistory
from harness import checking
from harness.checking import _shares, check_run
from harness.loading import load_run
from tests.synth.generate import GenConfig, generate
from tests.synth.plant import PLANTERS, CannotPlant, plant


@pytest.fixture(scope="module")
def base_run():
    return generate(GenConfig(seed=11, lines=1_200, idempotent=True, dangling=True))


@pytest.mark.parametrize("name", sorted(PLANTERS))
def test_two_halves_join_into_the_whole_report(tmp_path, base_run, name):
    try:
        planted = plant(name, base_run, 11)
    except CannotPlant:
        pytest.skip(f"{name} cannot be planted in this run")
    run = load_run(planted.run.write(tmp_path / "run"))
    for ph in run.partitions.values():
        whole = check_partition(ph, run.options)
        joined = join_halves(check_half(ph, run.options, OFFSETS_HALF),
                             check_half(ph, run.options, READS_HALF))
        assert joined == whole


def test_a_bad_half_is_refused():
    with pytest.raises(ValueError, match="half must be one of"):
        check_half(PartitionHistory("fp", 0), checking.CheckOptions(), "polls")


def sized(*sizes: int) -> list[PartitionHistory]:
    """Partitions of these sizes (what _shares reads of them)."""
    return [PartitionHistory("fp", p, sends=[None] * n)  # type: ignore[list-item]
            for p, n in enumerate(sizes)]


def test_a_partition_is_split_only_when_that_ends_the_work_sooner():
    big = checking.COPY_MIN_OPS
    # 3 on 2: the smallest in halves, one to each worker beside a whole one.
    shares = _shares(sized(big, big + 1, big + 2), 2)
    assert sorted(map(sorted, shares)) == [[(0, "offsets"), (1, None)], [(0, "reads"), (2, None)]]
    assert sorted(map(sorted, _shares(sized(big), 2))) == [[(0, "offsets")], [(0, "reads")]]
    assert all(half is None for share in _shares(sized(big, big, big, big), 2) for _, half in share)
    assert all(half is None for share in _shares(sized(big, big), 3) for _, half in share)
    assert _shares(sized(10, big, big), 2) == [[(1, None), (0, None)], [(2, None)]]  # small: whole
    assert _shares(sized(big, big, big), 1) == [[(0, None), (1, None), (2, None)]]


@pytest.mark.integration
def test_split_partitions_give_the_results_of_one_process(tmp_path, monkeypatch):
    run_dir = plant("poll-skip", generate(GenConfig(seed=12, lines=3_000, idempotent=True)),
                    12).run.write(tmp_path / "run")
    monkeypatch.setattr(checking, "FORK_MIN_OPS", 0)
    monkeypatch.setattr(checking, "COPY_MIN_OPS", 0)  # every partition is "large": split
    histories = list(load_run(run_dir).partitions.values())
    assert any(half for share in _shares(histories, 2) for _, half in share)  # 3 on 2: one split
    alone = check_run(run_dir, write=False, out=None, jobs=1).results
    forked = check_run(run_dir, write=False, out=None, jobs=2).results
    alone.pop("checked")
    forked.pop("checked")
    assert forked == alone
