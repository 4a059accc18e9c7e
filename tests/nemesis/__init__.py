"""Tests of nemesis/ that need no cluster: fault specs, schedules, grudges, the heal guard, the
fault timelines of bench/kip101_reach.py (faults on real clusters: tests/system/)."""
