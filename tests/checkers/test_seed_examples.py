"""The seeds' worked examples (examples/*/: KAFKA-1211 examples 1 and 2, KIP-101
scenarios 1 and 2) get the verdicts their READMEs promise from `fencepost check`,
and their files tell the story the READMEs tell."""
from __future__ import annotations

import io
import shutil
from pathlib import Path

import orjson
import pytest

from fencepost.checkers import anomaly as A
from fencepost.harness.check.checking import check_run
from fencepost.harness.cli import main
from tests.support.paths import EXAMPLES

# What reusing a committed offset for a new write shows, anomaly by anomaly.
OFFSET_REUSED = {A.LOST_WRITE, A.INCONSISTENT_OFFSETS, A.TRUNCATED_READ, A.NONMONOTONIC_SEND,
                 A.FUTURE_READ, A.NONLINEARIZABLE, A.UNSEEN}

EXPECTED: dict[str, tuple[bool, int, set[str]]] = {
    "kafka-1211-example-1": (True, 0, set()),
    "kafka-1211-example-2-leader-epoch": (True, 0, set()),
    "kafka-1211-example-2-high-watermark": (False, 1, OFFSET_REUSED),
    "kip101-scenario-1": (False, 1, OFFSET_REUSED),
    "kip101-scenario-2": (False, 1, {A.REPLICA_DIVERGENCE}),
}


def _copy(name: str, tmp_path: Path) -> Path:
    """check_run writes results.json into the run directory: check a copy."""
    return Path(shutil.copytree(EXAMPLES / name, tmp_path / name))


def _jsonl(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


CHECK_OUTPUTS = {"results.json", "linear", "history.edn"}


def test_every_example_directory_is_a_run_directory_with_a_story():
    dirs = {p.name for p in EXAMPLES.iterdir() if p.is_dir()}
    assert dirs == set(EXPECTED)
    for name in dirs:
        # What `fencepost check` / `export` write there (the README's main job
        # checks an example in place) is git-ignored and not part of it.
        files = {p.name for p in (EXAMPLES / name).iterdir()} - CHECK_OUTPUTS
        assert files == {"history.jsonl", "final.jsonl", "test.json", "README.md"}, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_gets_its_verdict(name, tmp_path):
    valid, exit_code, anomalies = EXPECTED[name]
    outcome = check_run(_copy(name, tmp_path), out=io.StringIO())
    assert set(outcome.results["anomaly_counts"]) == anomalies
    assert outcome.valid is valid and outcome.exit_code == exit_code
    assert outcome.results["errors"] == [] and outcome.results["warnings"] == []


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_readme_states_the_verdict_the_check_gives(name):
    valid, exit_code, anomalies = EXPECTED[name]
    readme = (EXAMPLES / name / "README.md").read_text()
    verdict = "valid" if valid else "invalid"
    assert f"**Expected verdict: {verdict} (exit {exit_code})**" in readme
    for anomaly in anomalies:
        assert f"`{anomaly}`" in readme, anomaly


def test_kip101_scenario_1_loses_the_acked_m2_to_m3(tmp_path):
    results = check_run(_copy("kip101-scenario-1", tmp_path), out=io.StringIO()).results
    (lost,) = results["anomalies"][A.LOST_WRITE]
    assert (lost["offset"], lost["value"], lost["how"]) == (1, "0-2", "overwritten")
    assert (tmp_path / "kip101-scenario-1" / "results.json").exists()


def test_kip101_scenario_1_through_the_cli(tmp_path, capsys):
    assert main(["check", str(_copy("kip101-scenario-1", tmp_path))]) == 1
    assert "lost-write" in capsys.readouterr().out


def test_kip101_scenario_2_diverges_at_offset_1_only_in_the_replica_logs(tmp_path):
    results = check_run(_copy("kip101-scenario-2", tmp_path), out=io.StringIO()).results
    (divergence,) = results["anomalies"][A.REPLICA_DIVERGENCE]
    assert divergence["offset"] == 1
    text = orjson.dumps(divergence).decode()
    assert "n1" in text and "n2" in text and "0-2" in text and "1-1" in text


@pytest.mark.parametrize("name, m2_kept", [("kafka-1211-example-2-leader-epoch", True),
                                           ("kafka-1211-example-2-high-watermark", False)])
def test_example_2_differs_only_in_what_truncation_did_to_m2(name, m2_kept):
    final = _jsonl(EXAMPLES / name / "final.jsonl")
    replicas = {line["node"] for line in final if line["kind"] == "replica"}
    assert replicas == {"n1", "n2", "n3"}
    for node in replicas:
        values = [line["value"] for line in final if line["kind"] == "replica" and line["node"] == node]
        assert ("0-2" in values) is m2_kept
    test = orjson.loads((EXAMPLES / name / "test.json").read_bytes())
    assert test["truncation"] == ("kip101" if m2_kept else "hw")
    faults = [(line["f"], line["value"]) for line in _jsonl(EXAMPLES / name / "history.jsonl")
              if line["process"] == "nemesis" and line["type"] == "invoke"]
    other = "kafka-1211-example-2-" + ("high-watermark" if m2_kept else "leader-epoch")
    assert faults == [(line["f"], line["value"]) for line in _jsonl(EXAMPLES / other / "history.jsonl")
                      if line["process"] == "nemesis" and line["type"] == "invoke"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_replica_states_are_consistent_with_the_replica_logs(name):
    final = _jsonl(EXAMPLES / name / "final.jsonl")
    read = [(line["offset"], line["value"]) for line in final if line["kind"] == "read"]
    states = {line["node"]: line for line in final if line["kind"] == "replica-state"}
    for node, state in states.items():
        records = [(line["offset"], line["value"]) for line in final
                   if line["kind"] == "replica" and line["node"] == node]
        assert state["high_watermark"] <= state["log_end_offset"] == records[-1][0] + 1
    # The final read is the leader's log: some replica holds exactly it.
    assert any(read == [(line["offset"], line["value"]) for line in final
                        if line["kind"] == "replica" and line["node"] == node] for node in states)
