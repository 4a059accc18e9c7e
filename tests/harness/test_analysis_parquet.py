"""The Parquet copies `fencepost analyze` makes of a run's history.jsonl and final.jsonl: a row
per JSON-object line with the run's id, values as their JSON text, wrong types as nulls, bad
lines left out."""
from __future__ import annotations

import json

import pytest

pq = pytest.importorskip("pyarrow.parquet", reason="pip install -e '.[spark]'")

from fencepost.harness.analysis.parquet import copy_final, copy_history  # noqa: E402


def test_history_copy_keeps_every_field_of_every_line(tmp_path):
    lines = [
        {"index": 0, "time": 10, "process": 3, "type": "invoke", "f": "send",
         "value": {"topic": "t", "partition": 1, "value": "3-1"}},
        {"index": 1, "time": 20, "process": "nemesis", "type": "info", "f": "partition",
         "value": [["n1"], ["n2", "n3"]]},
        {"index": 2, "time": 30, "process": 3, "type": "fail", "f": "send", "error": "timed out",
         "value": {"topic": "t", "partition": 1, "value": "3-1"}},
    ]
    source = tmp_path / "history.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert copy_history(source, tmp_path / "out" / "h.parquet", "run-7") == 3
    rows = pq.read_table(tmp_path / "out" / "h.parquet").to_pylist()
    assert [r["run_id"] for r in rows] == ["run-7"] * 3
    assert [r["process"] for r in rows] == ["3", "nemesis", "3"]
    assert [json.loads(r["value"]) for r in rows] == [line["value"] for line in lines]
    assert [(r["index"], r["time"], r["type"], r["f"], r["error"]) for r in rows] == [
        (0, 10, "invoke", "send", None), (1, 20, "info", "partition", None), (2, 30, "fail", "send", "timed out")]


def test_bad_lines_are_left_out_and_wrong_types_are_null(tmp_path):
    source = tmp_path / "history.jsonl"
    source.write_bytes(b'{"index":0,"time":1,"process":0,"type":"invoke","f":"send","value":null}\n'
                       b'{"index":1,"time":"late",\n'  # torn
                       b'[1,2]\n'  # not an object
                       b'{"index":2,"time":99999999999999999999999,"process":0,"type":7,"f":"poll"}\n')
    assert copy_history(source, tmp_path / "h.parquet", "r") == 2
    rows = pq.read_table(tmp_path / "h.parquet").to_pylist()
    assert rows[0]["value"] is None and rows[0]["time"] == 1
    assert (rows[1]["index"], rows[1]["time"], rows[1]["type"], rows[1]["f"]) == (2, None, None, "poll")


def test_final_copy_has_reads_replica_records_and_states(tmp_path):
    source = tmp_path / "final.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in [
        {"kind": "read", "topic": "t", "partition": 0, "offset": 0, "value": "1-1", "leader_epoch": 2},
        {"kind": "replica", "node": "n2", "topic": "t", "partition": 0, "offset": 0, "value": "1-1",
         "leader_epoch": 2},
        {"kind": "read-state", "topic": "t", "partition": 0, "complete": True, "log_end_offset": 1,
         "high_watermark": 1, "epochs": [[0, 0], [2, 0]]},
        {"kind": "read", "topic": "t", "partition": "zero", "offset": 1, "value": 5},
    ]) + "\n")
    assert copy_final(source, tmp_path / "f.parquet", "r") == 4
    rows = pq.read_table(tmp_path / "f.parquet").to_pylist()
    assert [r["kind"] for r in rows] == ["read", "replica", "read-state", "read"]
    assert rows[1]["node"] == "n2" and rows[1]["leader_epoch"] == 2
    assert (rows[2]["complete"], rows[2]["log_end_offset"], rows[2]["high_watermark"]) == (True, 1, 1)
    assert json.loads(rows[2]["epochs"]) == [[0, 0], [2, 0]] and rows[0]["epochs"] is None
    assert (rows[3]["partition"], rows[3]["offset"], rows[3]["value"]) == (None, 1, None)


def test_an_empty_file_is_an_empty_table_with_the_columns(tmp_path):
    (tmp_path / "final.jsonl").write_text("")
    assert copy_final(tmp_path / "final.jsonl", tmp_path / "f.parquet", "r") == 0
    table = pq.read_table(tmp_path / "f.parquet")
    assert table.num_rows == 0 and "high_watermark" in table.column_names
