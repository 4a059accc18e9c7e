"""The Parquet copies of `fencepost analyze` made from the C reader's columns against
those the Python code makes: the same rows, JSON values equal as JSON (their text may
be spaced or escaped as the line has it); on mutated files the C reader either leaves the
file to the Python code or gives the same rows. Fast: 40 mutated files of each kind."""
from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fencepost.harness.check import native_load
from tests.support.mutation_support import LINES, mutation
from tests.support.synth.generate import GenConfig, generate_to_dir

pq = pytest.importorskip("pyarrow.parquet", reason="pip install -e '.[spark]'")

from fencepost.harness.analysis.parquet import copy_final, copy_history  # noqa: E402

pytestmark = pytest.mark.skipif(not native_load.available() and not os.environ.get("CI"),
                                reason="the C reader was not compiled (no C compiler at install)")
SETTINGS = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
COUNTER = itertools.count()


def rows(copy, source: Path, dest: Path, monkeypatch, native: bool) -> list[dict]:
    with monkeypatch.context() as m:
        if not native:
            m.setattr(native_load, "_native", None)
        copy(source, dest, "run")
    # The columns holding JSON text (a final record's value is a plain string).
    json_columns = ("epochs",) if source.name == "final.jsonl" else ("value",)
    return [{k: (json.loads(v) if k in json_columns and v is not None else v) for k, v in r.items()}
            for r in pq.read_table(dest).to_pylist()]


def same_rows(copy, source: Path, tmp: Path, monkeypatch) -> None:
    native = rows(copy, source, tmp / f"native-{next(COUNTER)}.parquet", monkeypatch, True)
    python = rows(copy, source, tmp / f"python-{next(COUNTER)}.parquet", monkeypatch, False)
    assert native == python


@pytest.mark.parametrize("config", [GenConfig(seed=3, lines=1500),
                                    GenConfig(seed=4, lines=1500, p_crash=0.05, dangling=True)],
                         ids=["default", "crashes-dangling"])
def test_a_valid_runs_copies_hold_the_same_rows_either_way(tmp_path, monkeypatch, config):
    generate_to_dir(tmp_path / "run", config)
    for name, copy in (("history.jsonl", copy_history), ("final.jsonl", copy_final)):
        source = tmp_path / "run" / name
        assert (native_load.history_columns(source) if name == "history.jsonl"
                else native_load.final_columns(source)) is not None  # read natively
        same_rows(copy, source, tmp_path, monkeypatch)


def test_a_spaced_value_keeps_its_text_and_equals_the_python_copy_as_json(tmp_path, monkeypatch):
    source = tmp_path / "history.jsonl"
    source.write_bytes(b'{"index":0,"time":1,"process":3,"type":"invoke","f":"send",'
                       b'"value":{ "topic" : "fp", "partition":0, "value":"3-\\u0031"}}\n'
                       b'{"index":1,"time":2,"process":"nemesis","type":"info","f":"kill","value":null}\n')
    columns = native_load.history_columns(source)
    assert columns["value"] == ['{ "topic" : "fp", "partition":0, "value":"3-\\u0031"}', None]
    assert columns["process"] == ["3", "nemesis"]
    same_rows(copy_history, source, tmp_path, monkeypatch)


@pytest.mark.parametrize("line", [
    b'{"index":0,"time":1.5,"process":3,"type":"invoke","f":"send"}\n',  # a float where an int goes
    b'{"index":0,"time":1,"process":true,"type":"invoke","f":"send"}\n',  # a process of no kind
    b'[1,2]\n',  # not an object
    b'{"index":0,"time":1,"process":3,"type":"invoke","f":"send"}',  # torn
    b'{"index":0,"index":1,"time":1,"process":3,"type":"invoke","f":"send"}\n',  # a field twice
])
def test_a_line_that_is_not_plain_leaves_the_file_to_the_python_code(tmp_path, monkeypatch, line):
    source = tmp_path / "history.jsonl"
    source.write_bytes(line)
    assert native_load.history_columns(source) is None
    dest = tmp_path / "h.parquet"
    copy_history(source, dest, "run")  # the Python code's rules: nulls, lines left out
    assert pq.read_table(dest).num_rows == (0 if line.startswith(b"[") else 1)


@SETTINGS
@given(st.data())
def test_mutated_histories_copy_the_same_rows_either_way(tmp_path_factory, monkeypatch, data):
    tmp = tmp_path_factory.mktemp("h")
    (tmp / "history.jsonl").write_bytes(b"".join(data.draw(mutation(LINES["history.jsonl"]))))
    same_rows(copy_history, tmp / "history.jsonl", tmp, monkeypatch)


@SETTINGS
@given(st.data())
def test_mutated_final_logs_copy_the_same_rows_either_way(tmp_path_factory, monkeypatch, data):
    tmp = tmp_path_factory.mktemp("f")
    (tmp / "final.jsonl").write_bytes(b"".join(data.draw(mutation(LINES["final.jsonl"]))))
    same_rows(copy_final, tmp / "final.jsonl", tmp, monkeypatch)
