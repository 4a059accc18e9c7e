"""The truncation rules of each protocol version, on the epoch caches of the scenarios they were fixed for."""
from __future__ import annotations

import pytest

from fencepost.broker.server.truncation import (
    asks_leader,
    fences_by_leader_epoch,
    leader_answers_v0,
    step_after_answer,
    truncate_to_high_watermark,
)
from fencepost.broker.storage.epoch_cache import LeaderEpochFileCache


def cache(*entries: tuple[int, int]) -> LeaderEpochFileCache:
    return LeaderEpochFileCache(None, list(entries))


def follow(mode: str, leader: LeaderEpochFileCache, leader_leo: int, follower: LeaderEpochFileCache,
           follower_leo: int, follower_hw: int) -> int:
    """Run a follower's truncation rounds against a leader; returns where the follower's log ends."""
    if not asks_leader(mode, follower.latest_epoch):
        return truncate_to_high_watermark(follower_hw, follower_leo).offset
    for _ in range(10):
        requested = follower.latest_epoch
        if leader_answers_v0(mode):
            epoch, end = -1, leader.end_offset_for_v0(requested, leader_leo)
        else:
            epoch, end = leader.end_offset_for(requested, leader_leo)
        step = step_after_answer(mode, requested, epoch, end, follower_leo, follower_hw,
                                 lambda e: follower.end_offset_for(e, follower_leo))
        follower_leo = min(follower_leo, step.offset)
        follower.truncate_from_end(follower_leo)
        if step.done:
            return follower_leo
    raise AssertionError("truncation did not converge")


@pytest.mark.parametrize("mode, kept", [("hw", 1), ("kip101", 2), ("kip279", 2), ("kip320", 2)])
def test_kip101_scenario_1_a_stale_hw_drops_a_committed_record(mode, kept):
    # Follower holds m1 m2 (both committed), its HW checkpoint says 1; the leader is still in epoch 0.
    assert follow(mode, cache((0, 0)), 2, cache((0, 0)), 2, follower_hw=1) == kept


@pytest.mark.parametrize("mode, kept", [("hw", 2), ("kip101", 1), ("kip279", 1), ("kip320", 1)])
def test_kip101_scenario_2_an_uncommitted_record_below_the_hw_is_kept_only_by_hw(mode, kept):
    # A has m1 m2 in epoch 0 with HW 2; B came back with m1, leads epoch 1 and wrote m3 at offset 1.
    assert follow(mode, cache((0, 0), (1, 1)), 2, cache((0, 0)), 2, follower_hw=2) == kept


@pytest.mark.parametrize("mode, kept", [("kip101", 4), ("kip279", 3), ("kip320", 3)])
def test_kip279_a_follower_asking_for_an_epoch_the_leader_never_had(mode, kept):
    # B wrote offset 3 in epoch 2; C leads epoch 3 from offset 4 with its epoch-1 record at offset 3.
    assert follow(mode, cache((1, 0), (3, 4)), 5, cache((1, 0), (2, 3)), 4, follower_hw=3) == kept


def test_kip279_iterates_until_follower_and_leader_share_an_epoch():
    # The follower's epochs 2 and 5 are unknown to the leader (0, 3, 6): two rounds.
    steps = []
    follower, leo = cache((0, 0), (2, 5), (5, 9)), 10
    leader = cache((0, 0), (3, 5), (6, 7))
    while True:
        requested = follower.latest_epoch
        epoch, end = leader.end_offset_for(requested, 12)
        step = step_after_answer("kip279", requested, epoch, end, leo, 0, lambda e: follower.end_offset_for(e, leo))
        steps.append((requested, step.offset, step.done))
        leo = min(leo, step.offset)
        follower.truncate_from_end(leo)
        if step.done:
            break
    assert steps == [(5, 9, False), (2, 5, True)]
    assert leo == 5 and follower.epoch_entries() == [(0, 0)]


def test_an_undefined_end_offset_falls_back_to_the_hw():
    step = step_after_answer("kip320", 3, -1, -1, 10, 4, lambda e: (e, 10))
    assert (step.offset, step.done) == (4, True)


def test_a_follower_without_epochs_truncates_to_its_hw_in_every_mode():
    for mode in ("hw", "kip101", "kip279", "kip320"):
        assert not asks_leader(mode, -1)
    assert asks_leader("kip101", 0) and not asks_leader("hw", 7)


def test_only_kip320_fences_and_only_kip101_answers_as_v0():
    assert [fences_by_leader_epoch(m) for m in ("hw", "kip101", "kip279", "kip320")] == [False, False, False, True]
    assert [leader_answers_v0(m) for m in ("hw", "kip101", "kip279", "kip320")] == [False, True, False, False]
