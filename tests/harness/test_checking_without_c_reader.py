"""Without the C reader (no C compiler when fencepost was installed),
`fencepost check` and `fencepost run` say so in one line on stderr: the run
files are read by the Python reader (slower), and how to get the C reader.
Where it was built they say nothing of it. (`fencepost --version` names the
reader in use: tests/harness/test_cli_help.py.)"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fencepost.harness.check import native_load
from fencepost.harness.cli import main
from fencepost.harness.errors import EXIT_BAD_INPUT
from fencepost.harness.provenance import history_reader, python_reader_notice
from tests.support.loading_support import python_only
from tests.support.paths import EXAMPLES

EXAMPLE = EXAMPLES / "kafka-1211-example-1"


def notices(err: str) -> list[str]:
    return [line for line in err.splitlines() if "C reader" in line]


def test_without_the_c_reader_check_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    python_only(monkeypatch)
    run_dir = Path(shutil.copytree(EXAMPLE, tmp_path / "run"))
    assert main(["check", str(run_dir), "--no-write", "--jobs", "1"]) == 0
    (line,) = notices(capsys.readouterr().err)
    assert line == python_reader_notice()
    assert "read by the Python reader (slower)" in line
    assert "apt-get install gcc" in line and "pip install -e ." in line
    assert history_reader() == "Python readers (C reader not built)"


def test_without_the_c_reader_run_says_it_before_anything_else(tmp_path, monkeypatch, capsys):
    """Said first, so a run that stops early (here: a spec it refuses) has said it too."""
    python_only(monkeypatch)
    assert main(["run", "--nodes", "0", "--results", str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.splitlines()[0] == python_reader_notice()
    assert len(notices(err)) == 1


@pytest.mark.skipif(not native_load.available(), reason="the C reader was not compiled")
def test_with_the_c_reader_check_says_nothing_of_it(tmp_path, capsys):
    run_dir = Path(shutil.copytree(EXAMPLE, tmp_path / "run"))
    assert main(["check", str(run_dir), "--no-write", "--jobs", "1"]) == 0
    assert notices(capsys.readouterr().err) == []
    assert python_reader_notice() is None
