"""A nemesis that crashes (a bug in a fault, not a failed action) is not only printed by the
thread machinery while the run ends `valid` with exit 0: the run keeps it, logs its
traceback, and exits 255 whatever the verdict — it did not do what was asked."""
from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Iterator

from fencepost.harness.run.runner import RunOutcome, run_nemesis
from fencepost.nemesis import MemoryRecorder, Nemesis
from fencepost.nemesis.schedule import Schedule, Step


class BrokenSchedule(Schedule):
    @property
    def faults(self) -> tuple:
        return ()

    def steps(self, rng: random.Random) -> Iterator[Step]:
        raise TypeError("a fault's bug")
        yield  # a generator


def test_a_crashed_nemesis_is_kept_and_logged(caplog):
    nemesis = Nemesis(None, BrokenSchedule(), MemoryRecorder())  # never reaches the cluster
    crashes: list[BaseException] = []
    with caplog.at_level(logging.ERROR):
        run_nemesis(nemesis, 1.0, logging.getLogger("fencepost-test"), crashes)
    assert [type(c) for c in crashes] == [TypeError]
    assert "the nemesis crashed" in caplog.text and "a fault's bug" in caplog.text


def test_a_run_with_a_crashed_part_exits_255_whatever_its_verdict():
    outcome = RunOutcome(Path("."), None, None)
    assert outcome.exit_code == 2  # no check: unknown
    outcome.failures.append("the nemesis crashed: TypeError")
    assert outcome.exit_code == 255
