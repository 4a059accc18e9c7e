"""The exact readers as the tests hold the C reader to them
(tests/harness/test_loading_native.py, tests/harness/test_loading.py): what the exact reader
makes of one file and what it reports, a run loaded with and without the C
reader, and the comparisons.

The rule checked: on any file, the C reader either gives up (the exact reader
then reads the file and reports what is wrong) or gives exactly what the exact
reader gives while that reports no problem at all.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable

import pytest

from fencepost.harness.check import native_load
from fencepost.harness.check.loading import LoadedRun, group_operations, load_run
from fencepost.harness.errors import Problems
from fencepost.harness.rundir.final_reader import FinalLog, read_final
from fencepost.harness.rundir.history import HistoryReader

COUNTER = itertools.count()


def python_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Load as without the C reader (not compiled): every file by the exact reader."""
    monkeypatch.setattr(native_load, "available", lambda: False)


def exact_history(path: Path) -> tuple[tuple[dict, list, Any], Problems]:
    """((partitions, resets, counts), problems) of the history at `path`, by the exact reader."""
    problems = Problems()
    reader = HistoryReader(path, problems)
    partitions, resets = group_operations(reader.operations())
    return (partitions, resets, reader.counts), problems


def exact_final(path: Path) -> tuple[FinalLog, Problems]:
    """(the final log, problems) of the final.jsonl at `path`, by the exact reader."""
    problems = Problems()
    return read_final(path, problems), problems


def silent(problems: Problems) -> bool:
    return problems.error_count == 0 and problems.warning_count == 0


def history_gives_up_or_agrees(read: Callable[[Path], Any], directory: Path, lines: list[bytes]) -> None:
    """`read` (path -> (partitions, resets, counts) or None) of the history
    `lines` gives up, or gives what the exact reader gives, silent."""
    path = directory / f"history-{next(COUNTER)}.jsonl"
    path.write_bytes(b"".join(lines))
    got = read(path)
    exact, problems = exact_history(path)
    if got is not None:
        assert silent(problems)
        assert got[0] == exact[0] and got[1] == exact[1] and got[2] == exact[2]


def final_gives_up_or_agrees(read: Callable[[Path], FinalLog | None], directory: Path,
                             lines: list[bytes]) -> None:
    """`read` (path -> FinalLog or None) of the final log `lines` gives up,
    or gives what the exact reader gives, silent."""
    path = directory / f"final-{next(COUNTER)}.jsonl"
    path.write_bytes(b"".join(lines))
    got = read(path)
    exact, problems = exact_final(path)
    if got is not None:
        assert silent(problems)
        assert got == exact


def loaded_both_ways(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LoadedRun, LoadedRun]:
    """`run_dir` loaded as it is (by the C reader where it was built) and by the exact reader alone."""
    native = load_run(run_dir)
    with monkeypatch.context() as m:
        python_only(m)
        exact = load_run(run_dir)
    return native, exact


def assert_same_load(native: LoadedRun, exact: LoadedRun) -> None:
    """The two loads of a run are the same: partitions (in order), what the
    verdict reads of each, counts, errors and warnings, options. (Only how the
    partitions were made may differ: `fresh`.)"""
    assert list(native.partitions) == list(exact.partitions)
    assert native.partitions == exact.partitions
    assert list(native.finals) == list(exact.finals) == list(exact.partitions)
    assert native.finals == exact.finals
    assert native.counts == exact.counts and native.final_present == exact.final_present
    a, b = native.problems, exact.problems
    assert (a.errors, a.error_count, a.warnings, a.warning_count) == (
        b.errors, b.error_count, b.warnings, b.warning_count)
    assert (native.test, native.options, native.invalid_anomalies) == (
        exact.test, exact.options, exact.invalid_anomalies)
