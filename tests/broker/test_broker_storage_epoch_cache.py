"""LeaderEpochFileCache: assign rules, OffsetsForLeaderEpoch answers (KIP-279 and KIP-101 v0),
truncation, persistence. Cases follow Kafka's LeaderEpochFileCacheTest."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencepost.broker.storage.epoch_cache import LeaderEpochFileCache

UNDEFINED = (-1, -1)


def cache_of(*entries: tuple[int, int], path: Path | None = None) -> LeaderEpochFileCache:
    cache = LeaderEpochFileCache(path)
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


# -- assign -----------------------------------------------------------------
def test_assign_keeps_the_first_start_of_an_epoch():
    cache = cache_of((2, 6), (2, 7), (2, 10))
    assert cache.epoch_entries() == [(2, 6)]
    assert cache.latest_epoch == 2


def test_assign_of_the_same_epoch_at_a_lower_offset_replaces_it():
    cache = cache_of((2, 10), (2, 9))
    assert cache.epoch_entries() == [(2, 9)]


def test_assign_enforces_increasing_start_offsets():
    assert cache_of((2, 9), (3, 9)).epoch_entries() == [(3, 9)]
    assert cache_of((2, 6), (3, 5)).epoch_entries() == [(3, 5)]


def test_assign_of_a_lower_epoch_drops_the_higher_ones():
    cache = cache_of((1, 5), (2, 6), (1, 7))
    assert cache.epoch_entries() == [(1, 7)]
    assert cache.end_offset_for(1, 8) == (1, 8)
    assert cache.end_offset_for(2, 8) == UNDEFINED


def test_assign_same_epoch_earlier_start_truncates_later_entries():
    cache = cache_of((5, 11), (6, 12), (7, 13), (7, 12))
    assert cache.epoch_entries() == [(5, 11), (7, 12)]
    assert cache.end_offset_for(5, 0) == (5, 12)
    assert cache.end_offset_for(6, 0) == (5, 12)


def test_assign_rejects_negative_values():
    with pytest.raises(ValueError, match="negative"):
        LeaderEpochFileCache(None).assign(-1, 0)


def test_assign_reports_whether_it_changed_anything():
    cache = LeaderEpochFileCache(None)
    assert cache.assign(1, 0) is True
    assert cache.assign(1, 5) is False


# -- end_offset_for (KIP-279) -------------------------------------------------
def test_latest_epoch_answers_the_log_end_offset():
    assert cache_of((2, 10)).end_offset_for(2, 42) == (2, 42)


def test_undefined_epoch_or_empty_cache_is_undefined():
    assert cache_of((2, 11), (3, 12)).end_offset_for(-1, 0) == UNDEFINED
    assert LeaderEpochFileCache(None).end_offset_for(0, 0) == UNDEFINED
    assert LeaderEpochFileCache(None).end_offset_for(-1, 73) == UNDEFINED


def test_epoch_above_every_cached_epoch_is_undefined():
    assert cache_of((2, 100)).end_offset_for(3, 100) == UNDEFINED


def test_epoch_below_the_first_answers_requested_epoch_and_first_start():
    assert cache_of((5, 11), (6, 12), (7, 13)).end_offset_for(4, 0) == (4, 11)


def test_missing_epoch_answers_largest_smaller_epoch_and_next_start():
    cache = cache_of((0, 10), (2, 13), (4, 17))
    assert cache.end_offset_for(1, 0) == (0, 13)
    assert cache.end_offset_for(2, 0) == (2, 17)
    assert cache.end_offset_for(3, 0) == (2, 17)
    assert cache.end_offset_for(4, 20) == (4, 20)


def test_follower_receiving_many_messages():
    cache = cache_of((0, 0), (0, 1), (0, 2), (1, 3), (1, 4), (1, 5), (2, 6), (2, 7), (2, 8))
    assert cache.end_offset_for(2, 9) == (2, 9)
    assert cache.end_offset_for(0, 9) == (0, 3)
    assert cache.end_offset_for(1, 9) == (1, 6)


def test_leaders_changing_many_times():
    cache = cache_of((0, 0), (1, 0))
    assert cache.end_offset_for(1, 0) == (1, 0)
    assert cache.end_offset_for(0, 0) == (0, 0)
    cache.assign(2, 5)
    assert cache.end_offset_for(2, 10) == (2, 10)
    assert cache.end_offset_for(1, 10) == (1, 5)
    assert cache.end_offset_for(0, 10) == (0, 0)


# -- end_offset_for_v0 (KIP-101) ---------------------------------------------
def test_v0_answers():
    cache = cache_of((1, 0), (3, 10), (5, 20))
    assert cache.end_offset_for_v0(5, 25) == 25  # latest: the log end
    assert cache.end_offset_for_v0(3, 25) == 20  # start of the first larger epoch
    assert cache.end_offset_for_v0(4, 25) == 20  # missing epoch: still the first larger one's start
    assert cache.end_offset_for_v0(2, 25) == 10
    assert cache.end_offset_for_v0(6, 25) == -1  # no larger epoch
    assert cache.end_offset_for_v0(0, 25) == -1  # below the first cached epoch
    assert cache.end_offset_for_v0(-1, 25) == -1
    assert LeaderEpochFileCache(None).end_offset_for_v0(0, 5) == -1


# -- truncation ---------------------------------------------------------------
def test_truncate_from_end_on_an_epoch_boundary():
    cache = cache_of((2, 6), (3, 8), (4, 11))
    cache.truncate_from_end(8)
    assert cache.epoch_entries() == [(2, 6)]


def test_truncate_from_end_between_boundaries():
    cache = cache_of((2, 6), (3, 8), (4, 11))
    cache.truncate_from_end(9)
    assert cache.epoch_entries() == [(2, 6), (3, 8)]
    assert cache.latest_epoch == 3


def test_truncate_from_end_beyond_everything_changes_nothing():
    cache = cache_of((2, 6), (3, 8))
    cache.truncate_from_end(100)
    cache.truncate_from_end(-1)
    assert cache.epoch_entries() == [(2, 6), (3, 8)]


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (1, [(2, 6), (3, 8), (4, 11)]),
        (6, [(2, 6), (3, 8), (4, 11)]),
        (8, [(3, 8), (4, 11)]),
        (9, [(3, 9), (4, 11)]),
        (11, [(4, 11)]),
        (15, [(4, 15)]),
    ],
)
def test_truncate_from_start(start, expected):
    cache = cache_of((2, 6), (3, 8), (4, 11))
    cache.truncate_from_start(start)
    assert cache.epoch_entries() == expected


def test_truncate_from_start_keeps_the_epoch_of_the_new_start():
    cache = cache_of((0, 0), (1, 7), (2, 10))
    cache.truncate_from_start(5)
    assert cache.epoch_entries() == [(0, 5), (1, 7), (2, 10)]


def test_epoch_for_offset():
    cache = cache_of((1, 0), (3, 10))
    assert [cache.epoch_for_offset(o) for o in (0, 9, 10, 50)] == [1, 1, 3, 3]
    assert cache_of((2, 5)).epoch_for_offset(4) == -1


# -- persistence --------------------------------------------------------------
def test_every_change_is_checkpointed_in_kafka_format(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    cache = cache_of((2, 6), (3, 8), path=path)
    assert path.read_bytes() == b"0\n2\n2 6\n3 8\n"
    cache.truncate_from_end(8)
    assert path.read_bytes() == b"0\n1\n2 6\n"
    cache.clear()
    assert path.read_bytes() == b"0\n0\n"
    assert not (tmp_path / "leader-epoch-checkpoint.tmp").exists()


def test_load_restores_the_entries(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    cache_of((2, 6), (4, 9), path=path)
    assert LeaderEpochFileCache.load(path).epoch_entries() == [(2, 6), (4, 9)]
    assert LeaderEpochFileCache.load(tmp_path / "absent").epoch_entries() == []


def test_reconcile_replaces_entries_the_log_does_not_back_and_writes_once(tmp_path):
    path = tmp_path / "leader-epoch-checkpoint"
    cache = cache_of((1, 0), (3, 10), (5, 20), path=path)
    # the log lost its tail (e.g. a power cut): batches only show epochs 1 and 3, and end at 15
    assert cache.reconcile([(1, 0), (3, 10)], log_end_offset=15) is True
    assert cache.epoch_entries() == [(1, 0), (3, 10)]
    assert path.read_bytes() == b"0\n2\n1 0\n3 10\n"
    assert cache.reconcile([(1, 0), (3, 10)], log_end_offset=15) is False


def test_reconcile_drops_an_epoch_that_starts_at_the_log_end():
    cache = cache_of((1, 0), (2, 5))
    cache.reconcile([(1, 0)], log_end_offset=5)
    assert cache.epoch_entries() == [(1, 0)]


# -- property: the answer is the definition --------------------------------------
@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 60)), max_size=12),
    st.integers(-1, 14),
)
def test_end_offset_for_matches_its_definition(assigns, requested):
    cache = LeaderEpochFileCache(None)
    for epoch, start in assigns:
        cache.assign(epoch, start)
    entries = cache.epoch_entries()
    epochs = [e for e, _ in entries]
    assert epochs == sorted(set(epochs))
    assert [s for _, s in entries] == sorted(set(s for _, s in entries))
    leo = (entries[-1][1] if entries else 0) + 3
    answer = cache.end_offset_for(requested, leo)
    larger = [(e, s) for e, s in entries if e > requested]
    smaller_or_equal = [(e, s) for e, s in entries if e <= requested]
    if requested == -1:
        assert answer == UNDEFINED
    elif entries and requested == entries[-1][0]:
        assert answer == (requested, leo)
    elif not larger:
        assert answer == UNDEFINED
    elif not smaller_or_equal:
        assert answer == (requested, larger[0][1])
    else:
        assert answer == (smaller_or_equal[-1][0], larger[0][1])
