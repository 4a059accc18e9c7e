"""What `fencepost run` prints at its end: the verdict, then which system was tested — the
own brokers (fencepost's Kafka-protocol implementation) or a stock Apache Kafka release and
its mode — read from the run directory's test.json, as the run recorded it."""
from __future__ import annotations

import shutil
from pathlib import Path

import orjson

from fencepost.harness.check.checking import CheckOutcome, check_run
from fencepost.harness.commands.run import summary_lines, system_tested
from fencepost.harness.run.runner import RunOutcome
from tests.support.paths import ROOT

OWN = "system: own brokers (fencepost's Kafka-protocol implementation)"


def run_dir_with(tmp_path: Path, test: dict) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "test.json").write_bytes(orjson.dumps(test))
    return run_dir


def test_a_checked_run_of_the_own_brokers_says_so_under_its_verdict(tmp_path):
    run_dir = tmp_path / "kafka-1211-example-2-high-watermark"
    shutil.copytree(ROOT / "examples" / "kafka-1211-example-2-high-watermark", run_dir)
    check = check_run(run_dir, out=None)
    lines = summary_lines(RunOutcome(run_dir, check, run_dir / "report.html"), "own")
    assert lines[0].startswith("verdict: invalid (") and "lost-write" in lines[0]
    assert lines[1] == OWN
    assert f"run directory: {run_dir}" in lines and f"report: {run_dir / 'report.html'}" in lines


def test_a_stock_release_is_named_with_its_mode_as_test_json_recorded_it(tmp_path):
    kraft = run_dir_with(tmp_path, {"system": "kafka:3.9.1", "system_options": {"mode": "kraft"},
                                    "versions": {"kafka": "3.9.1", "mode": "kraft"}})
    assert system_tested(kraft, "kafka:3.9.1") == "Apache Kafka 3.9.1 (KRaft)"
    lines = summary_lines(RunOutcome(kraft, CheckOutcome(True, {}, 0), None), "kafka:3.9.1")
    assert lines[:2] == ["verdict: valid", "system: Apache Kafka 3.9.1 (KRaft)"]


def test_a_release_given_by_its_folder_is_named_by_the_version_it_reported(tmp_path):
    zk = run_dir_with(tmp_path, {"system": "kafka", "versions": {"kafka": "0.11.0.3", "mode": "zk"}})
    assert system_tested(zk, "kafka") == "Apache Kafka 0.11.0.3 (ZooKeeper)"


def test_a_run_that_stopped_before_its_cluster_was_up_names_the_system_asked_for(tmp_path):
    """No versions in test.json (or none at all): the spec's system, without a mode it never learnt."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert system_tested(empty, "kafka:4.4.0") == "Apache Kafka 4.4.0"
    assert system_tested(empty, "own") == OWN.removeprefix("system: ")
    lines = summary_lines(RunOutcome(empty, None, None, problems=["setup: timed out"]), "own")
    assert lines[:2] == ["verdict: unknown", OWN] and "  note: setup: timed out" in lines
