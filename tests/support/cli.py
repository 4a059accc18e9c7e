"""`fencepost` as a user runs it, in a process of its own, on this checkout's code
(PYTHONPATH holds the repository's root).

- `fencepost(cwd, *args)` runs `python -m harness.cli ARGS` in `cwd` and returns the
  finished process (exit code, stdout, stderr).
- `FENCEPOST` is the program for `python -c FENCEPOST ARGS`: the real parser, dispatch and
  exit codes of harness.cli, with the serve verb registered even where
  harness/commands/__init__.py does not list it yet (the tests of `fencepost serve` and the
  pages it serves start it so).
- `in_process(argv)` runs harness.cli's main in this process, stdout and stderr captured:
  an `Outcome` (exit code, what it printed), for validation tests that need no process.
- `run(tmp_path, *args)` is `fencepost run` on the netns backend (skipped without root), with
  the run directory it printed; `history(run_dir)` its history.jsonl as dicts.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from fencepost.harness.cli import main
from tests.support.paths import ROOT

FENCEPOST = ("import sys, harness.commands as c\n"
             "if 'fencepost.harness.commands.serve' not in c.COMMANDS:\n"
             "    c.COMMANDS = (*c.COMMANDS, 'fencepost.harness.commands.serve')\n"
             "from fencepost.harness.cli import main\n"
             "sys.exit(main(sys.argv[1:]))\n")


def fencepost(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fencepost.harness.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def run(tmp_path: Path, *args: str, timeout: float = 600):
    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")
    done = fencepost(tmp_path, "run", *args, timeout=timeout)
    match = re.search(r"run directory: (\S+)", done.stdout)
    run_dir = tmp_path / match.group(1) if match else None
    return done, run_dir


def history(run_dir: Path) -> list[dict]:
    return [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]


@dataclass
class Outcome:
    code: int
    err: str  # stderr, then stdout


def in_process(argv: list[str]) -> Outcome:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = main(argv)
    return Outcome(code, err.getvalue() + out.getvalue())
