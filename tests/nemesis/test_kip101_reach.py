"""bench/kip101_reach.py: its test of a fault timeline finds the pattern kip101's
divergence needs where it is, and not where one condition is missing; the bench
runs as a user runs it."""
from __future__ import annotations

import subprocess
import sys

from tests.support.bench_support import bench_module
from tests.support.paths import ROOT

BENCH = ROOT / "bench" / "kip101_reach.py"
SESSION, LAG = 3.0, 5.0


reach = bench_module(BENCH, "kip101_reach")
Fault = reach.Fault


def kill(node: str, start: float, end: float) -> Fault:
    return Fault("kill", frozenset({node}), {}, start, end)


def pause(node: str, start: float, end: float) -> Fault:
    return Fault("pause", frozenset({node}), {}, start, end)


def cut(a: str, b: str, start: float, end: float) -> Fault:
    return Fault("partition", frozenset(), {a: frozenset({b}), b: frozenset({a})}, start, end)


# n1 (L) killed at 10: fenced at 13, n2 (B) elected; n2 paused at 14.5 for 4 s (fenced
# at 17.5, within its 5 s lag); n3 (C) cut from n2 all the while.
PATTERN = [kill("n1", 10.0, 16.0), pause("n2", 14.5, 18.5), cut("n2", "n3", 12.0, 15.0)]


def test_the_pattern_is_found_with_its_brokers_and_the_fencing_time():
    assert ("n1", "n2", "n3", 13.0) in reach.reaches(PATTERN, SESSION, LAG)


def test_a_missing_condition_is_no_pattern():
    late = [PATTERN[0], pause("n2", 18.5, 22.5), PATTERN[2]]  # B fenced after its lag: C dropped
    short = [kill("n1", 10.0, 12.5), *PATTERN[1:]]  # L back within the session: never fenced
    reachable = PATTERN[:2]  # C can fetch from B: it truncates correctly
    c_fenced = [*PATTERN, pause("n3", 14.0, 17.5)]  # C out of the ISR: not elected
    b_at_once = [PATTERN[0], pause("n2", 13.1, 17.1), PATTERN[2]]  # B never appends
    for faults in (late, short, reachable, c_fenced, b_at_once):
        assert not [hit for hit in reach.reaches(faults, SESSION, LAG) if hit[:3] == ("n1", "n2", "n3")]


def test_a_cut_from_the_controller_silences_a_broker_as_a_pause_does():
    cut_off = Fault("partition", frozenset(), {"n1": frozenset({"controller"}),
                                               "controller": frozenset({"n1"})}, 10.0, 16.0)
    assert ("n1", "n2", "n3", 13.0) in reach.reaches([cut_off, *PATTERN[1:]], SESSION, LAG)


def test_timelines_follow_the_random_schedule_and_are_seeded():
    first = reach.timeline(7, 3.0, 60.0)
    assert first == reach.timeline(7, 3.0, 60.0) and first != reach.timeline(8, 3.0, 60.0)
    assert {f.kind for f in first} == {"kill", "pause", "partition"}
    assert all(0 <= f.start < f.end for f in first)


def test_the_bench_prints_a_share_per_interval():
    out = subprocess.run([sys.executable, str(BENCH), "--runs", "30", "--intervals", "1", "3"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [row[0] for row in rows] == ["1", "3"] and all(row[-1].endswith("%") for row in rows)
