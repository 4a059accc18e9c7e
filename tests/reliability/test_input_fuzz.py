"""Fuzzing `fencepost check` with malformed history.jsonl and final.jsonl files.

A small synthetic run (tests/support/synth) is mutated by hypothesis
(tests/support/mutation_support.py): lines truncated, replaced by bad JSON, binary
garbage, NUL bytes or invalid UTF-8, fields dropped or given the wrong type,
huge or negative numbers, lines duplicated (so indices repeat), shuffled or
emptied. `check_run` must then either return a
verdict (exit 0, 1 or 2) or raise `BadInput`; never anything else. Every
problem it reports names the file and the line (`history.jsonl:12: ...`), and
a complete line (ended by its newline) that is not a JSON object is an error
wherever it stands and the verdict is unknown, and a torn last line (no
newline) never leaves the verdict valid: with errors in the input, an anomaly may come from the
line that could not be read (harness/check/verdict.py, rule 1), and any error at all
makes a verdict unknown, never valid or invalid. One example goes through the real `fencepost check` process.

Fast: 15 examples per test. Slow (`-m slow`): 500 per file.
"""
from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencepost.harness.check.checking import check_run
from fencepost.harness.errors import BadInput
from tests.support.mutation_support import LINES, TEST_JSON, WORK, mutation
from tests.support.paths import ROOT

NAMED = re.compile(r"(history|final)\.jsonl:\d+: ")
COUNTER = itertools.count()

FAST = settings(max_examples=15, deadline=None, database=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@st.composite
def mutated_run(draw, which: tuple[str, ...] = ("history.jsonl", "final.jsonl")) -> dict[str, list[bytes]]:
    files = dict(LINES)
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(which))
        files[name] = draw(mutation(files[name]))
    return files


def write_run(files: dict[str, list[bytes]]) -> Path:
    run_dir = WORK / f"run-{os.getpid()}-{next(COUNTER)}"
    run_dir.mkdir()
    for name, lines in files.items():
        (run_dir / name).write_bytes(b"".join(lines))
    (run_dir / "test.json").write_bytes(TEST_JSON)
    return run_dir


def as_read(data: bytes) -> list[bytes]:
    """The lines of a file as the readers see them: split at b"\\n" only (a b"\\r" is inside a line)."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def not_an_object(line: bytes) -> bool:
    try:
        return type(orjson.loads(line)) is not dict
    except orjson.JSONDecodeError:
        return True


def check_holds(files: dict[str, list[bytes]]) -> None:
    run_dir = write_run(files)
    try:
        outcome = check_run(run_dir, write=False, out=None, jobs=1)
    except BadInput as e:
        assert str(e), "a BadInput without a message"
        return
    assert outcome.exit_code in (0, 1, 2), outcome.exit_code
    results = outcome.results
    if results["errors"]:
        assert outcome.valid == "unknown", (outcome.valid, results["errors"][:3])
    for problem in [*results["errors"], *results["warnings"]]:
        assert NAMED.search(problem) or re.fullmatch(r"\.\.\. and \d+ more (errors|warnings) not listed", problem), \
            f"a problem that names no file and line: {problem!r}"
    for name, lines in files.items():
        whole = as_read(b"".join(lines))
        if whole and not whole[-1].endswith(b"\n"):  # torn: never valid (docs/FORMATS.md, "A torn last line")
            assert outcome.valid is not True, f"{name} ends in a torn line {whole[-1][:60]!r}, yet valid"
        for number, line in enumerate(whole, start=1):
            if line.endswith(b"\n") and not_an_object(line):  # unknown (harness/check/verdict.py, rule 1)
                assert outcome.valid == "unknown", \
                    f"{name}:{number} is {line[:60]!r}, yet the verdict is {outcome.valid!r}"
                assert any(f"{name}:{number}:" in e for e in results["errors"]) or len(results["errors"]) >= 1000, \
                    f"{name}:{number} ({line[:60]!r}) is not among the errors {results['errors'][:5]}"


def test_the_unmutated_run_is_valid():
    outcome = check_run(write_run(dict(LINES)), write=False, out=None, jobs=1)
    assert outcome.valid is True and not outcome.results["errors"], outcome.results["errors"]


@FAST
@given(mutated_run(("history.jsonl",)))
def test_mutated_histories_give_a_verdict_or_bad_input(files):
    check_holds(files)


@FAST
@given(mutated_run(("final.jsonl",)))
def test_mutated_final_logs_give_a_verdict_or_bad_input(files):
    check_holds(files)


@pytest.mark.slow
@SLOW
@given(mutated_run(("history.jsonl",)))
def test_mutated_histories_many(files):
    check_holds(files)


@pytest.mark.slow
@SLOW
@given(mutated_run(("final.jsonl",)))
def test_mutated_final_logs_many(files):
    check_holds(files)


@pytest.mark.slow
@SLOW
@given(mutated_run())
def test_mutated_both_many(files):
    check_holds(files)


@FAST
@given(st.binary(max_size=300), st.sampled_from(["history.jsonl", "final.jsonl"]))
def test_a_file_of_pure_garbage(data, name):
    check_holds({**LINES, name: as_read(data)})


@FAST
@given(st.binary(max_size=100))
def test_a_garbage_test_json_is_bad_input_naming_it(data):
    run_dir = write_run(dict(LINES))
    (run_dir / "test.json").write_bytes(data)
    try:
        outcome = check_run(run_dir, write=False, out=None, jobs=1)
    except BadInput as e:
        assert "test.json" in str(e), str(e)
        return
    assert outcome.exit_code in (0, 1, 2)


@pytest.mark.integration
def test_the_cli_names_file_and_line_of_a_corrupt_history_line():
    history = list(LINES["history.jsonl"])
    at = next(i for i, line in enumerate(history) if b'"nemesis"' in line)  # no client op depends on it
    history[at] = b"\xff\x00garbage\n"
    run_dir = write_run({**LINES, "history.jsonl": history})
    done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "check", str(run_dir), "--no-write"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and f"history.jsonl:{at + 1}:" in done.stdout, done.stdout
