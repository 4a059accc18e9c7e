"""The run directory's owner (harness/rundir/): finding runs and campaigns, writing whole or
not at all, the final.jsonl writer and the typed record of test.json and results.json."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fencepost.harness.errors import BadInput
from fencepost.harness.rundir.atomic import write_atomically
from fencepost.harness.rundir.final_writer import add_final_lines, encode_lines
from fencepost.harness.rundir.find import run_dirs, walk
from fencepost.harness.rundir.names import FINAL_FILE, HISTORY_FILE, RESULTS_FILE, TEST_FILE
from fencepost.harness.rundir.record import configuration_of, read_record
from fencepost.harness.rundir.run_dirs import new_run_dir


def make_run(folder: Path, *, history: bool = True, test: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    if history:
        (folder / HISTORY_FILE).write_text("")
    if test is not None:
        (folder / TEST_FILE).write_text(json.dumps(test))
    return folder


def test_walk_finds_each_run_once_and_the_campaigns(tmp_path):
    first = new_run_dir(tmp_path, "t")  # also makes tmp_path/latest and t/latest
    make_run(first / "nodes" / "n1", history=True)  # below a run directory: not a run
    (first / HISTORY_FILE).write_text("")
    setup_only = make_run(tmp_path / "t" / "20261126T000000Z-aaaaaa", history=False, test={})
    campaign = tmp_path / "campaigns" / "c" / "20261126T000000Z-bbbbbb"
    campaign.mkdir(parents=True)
    (campaign / "campaign.json").write_text("{}")
    in_campaign = make_run(campaign / "runs" / "0001" / "run" / "20261126T000001Z-cccccc")
    make_run(tmp_path / ".hidden" / "r")
    make_run(tmp_path / "clusters" / "c1")  # cluster state, never runs
    found = list(walk(tmp_path))
    assert [(f.path, f.campaign) for f in found] == [
        (campaign, True), (in_campaign, False), (setup_only, False), (first, False)]
    assert run_dirs(tmp_path, with_history=True) == [in_campaign, first]
    assert run_dirs(first) == [first]  # a run directory itself
    assert run_dirs(tmp_path / "latest") == [tmp_path / "latest"]  # given as a link: followed, named as given


def test_write_atomically_leaves_the_old_content_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    write_atomically(path, "old")
    real_fsync = os.fsync

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        write_atomically(path, b"new content")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]  # no partial file left
    write_atomically(path, "new")
    assert path.read_text() == "new"


def test_final_lines_are_added_whole_and_of_known_kinds(tmp_path):
    final = tmp_path / FINAL_FILE
    reads = [{"kind": "read", "topic": "t", "partition": 0, "offset": 0, "value": "0-0"},
             {"kind": "read-state", "topic": "t", "partition": 0, "complete": True}]
    assert add_final_lines(final, encode_lines(reads)) == 2
    replicas = [{"kind": "replica", "topic": "t", "partition": 0, "node": "n1", "offset": 0, "value": "0-0"}]
    assert add_final_lines(final, encode_lines(replicas)) == 1
    assert [json.loads(line)["kind"] for line in final.read_text().splitlines()] == ["read", "read-state", "replica"]
    with pytest.raises(ValueError, match="not a final.jsonl line kind: 'reed'"):
        encode_lines([{"kind": "reed"}])


def test_record_reads_verdict_configuration_and_counts(tmp_path):
    run = make_run(tmp_path / "r", test={"system": "kafka:2.0.1", "nemesis": {"faults": "zombie"},
                                          "system_options": {"elr": False, "libs": "/x"},
                                          "versions": {"kafka": "2.0.1"}})
    record = read_record(run)
    assert (record.verdict, record.valid, record.ops) == ("not checked", None, None)
    config = record.configuration
    assert config.key == ("kafka:2.0.1[elr=false]", "release", "zombie")  # where jars came from is no variant
    assert config.release == "2.0.1"
    (run / RESULTS_FILE).write_text(json.dumps({
        "valid": False, "anomaly_counts": {"lost-write": 3, "duplicate": 1}, "checked": {"ops": 10},
        "invalid_anomalies": ["lost-write"]}))
    record = read_record(run)
    assert (record.verdict, record.ops) == ("invalid", 10)
    assert record.invalidating == {"lost-write": 3}
    assert configuration_of({}).key == ("own", "kip320", "none")


def test_record_strict_and_lenient_readers_of_a_broken_file(tmp_path):
    run = make_run(tmp_path / "r", test={})
    (run / RESULTS_FILE).write_text('{"valid": tru')
    with pytest.raises(BadInput, match="results.json: cannot read it as JSON"):
        read_record(run)
    assert read_record(run, strict=False).verdict == "not checked"
    (run / RESULTS_FILE).write_text("[1]")
    with pytest.raises(BadInput, match="expected a JSON object, got list"):
        read_record(run)
