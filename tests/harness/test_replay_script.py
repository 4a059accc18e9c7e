"""Replay and shrink, their pure parts: a run's recorded nemesis ops as a script
(harness/replay/script.py), the spec of a rerun (rerun.py), delta debugging over the script
(shrink.py, against a stand-in for runs), and the spec written back as TOML
(harness/run/spec_toml.py). Real replays and shrinks: tests/system/test_campaign_real.py."""
from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from fencepost.harness.errors import BadInput
from fencepost.harness.replay.rerun import recorded_test, rerun_spec
from fencepost.harness.replay.script import Entry, Unit, flatten, recorded_script
from fencepost.harness.replay.shrink import Candidate, Shrinker, Unreproduced
from fencepost.harness.run.spec import build_spec
from fencepost.harness.run.spec_toml import spec_toml
from tests.support.cli import fencepost

T0 = 5_000_000_000  # the history's first op: the main phase's start


def nemesis(lines: list, at: float, type: str, f: str, value) -> None:
    lines.append({"index": len(lines), "time": T0 + int(at * 1e9), "process": "nemesis", "type": type, "f": f,
                  "value": value})


def recorded_run(tmp_path: Path) -> Path:
    """A run of 20 s whose nemesis killed, paused, bounced a leader (with its own steps), healed
    mid-run, and was healed at the end."""
    lines: list = []
    nemesis(lines, 0.0, "invoke", "kill", {"target": "one"})
    nemesis(lines, 0.1, "info", "kill", {"target": "one", "nodes": ["n2"]})
    nemesis(lines, 1.5, "invoke", "pause", {"target": "majority"})
    nemesis(lines, 1.6, "info", "pause", {"target": "majority", "nodes": ["n1", "n3"]})
    nemesis(lines, 3.0, "invoke", "start", {"nodes": ["n2"]})  # the kill's stop
    nemesis(lines, 3.4, "info", "start", {"nodes": ["n2"]})
    nemesis(lines, 4.25, "invoke", "resume", {"nodes": ["n1", "n3"]})
    nemesis(lines, 4.3, "info", "resume", {"nodes": ["n1", "n3"]})
    nemesis(lines, 6.0, "invoke", "leader-bounce", {"topic": "fp", "partition": None})
    nemesis(lines, 6.1, "invoke", "pause", {"nodes": ["n1"], "scenario": "leader-bounce"})  # its own steps
    nemesis(lines, 6.2, "info", "pause", {"nodes": ["n1"], "scenario": "leader-bounce"})
    nemesis(lines, 9.0, "info", "leader-bounce", {"topic": "fp", "partition": 2, "leader": "n1"})
    nemesis(lines, 10.0, "invoke", "start-partition", {"target": "bridge"})
    nemesis(lines, 10.1, "info", "start-partition", {"target": "bridge", "grudge": {}})
    nemesis(lines, 12.0, "invoke", "heal", None)
    nemesis(lines, 12.2, "info", "heal", {"done": []})
    nemesis(lines, 14.0, "invoke", "kill", {"target": "leader"})
    nemesis(lines, 14.1, "info", "kill", {"target": "leader", "nodes": ["n3"]})
    nemesis(lines, 20.01, "invoke", "start", {"nodes": ["n3"]})  # the heal that ends the main phase
    nemesis(lines, 20.3, "info", "start", {"nodes": ["n3"]})
    nemesis(lines, 20.3, "invoke", "heal", None)
    nemesis(lines, 20.4, "info", "heal", {"done": []})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "history.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    spec = build_spec({}, {"backend": "netns", "time_limit": 20, "nemesis.faults": "kill,pause", "seed": 7})
    (run_dir / "test.json").write_text(json.dumps({**spec.to_json(), "versions": {"fencepost": "x"},
                                                   "protocol": "kip320"}))
    return run_dir


def test_the_recorded_ops_become_a_script_of_units(tmp_path):
    units = recorded_script(recorded_run(tmp_path), 20.0)
    assert [[(e.at, e.action) for e in u.entries] for u in units] == [
        [(0.0, "start kill:one"), (3.0, "stop kill")],
        [(1.5, "start pause:majority"), (4.25, "stop pause")],
        [(6.0, "start leader-bounce:2")],  # the partition it chose; its own steps are its business
        [(10.0, "start partition:bridge")],  # stopped by the heal mid-run
        [(12.0, "heal")],
        [(14.0, "start kill:leader")],  # its stop and the final heal: the run's end, left out
    ]
    assert [e.at for e in flatten(units)] == [0.0, 1.5, 3.0, 4.25, 6.0, 10.0, 12.0, 14.0]


def test_the_faults_of_clients_packets_and_replicas_are_replayed_too(tmp_path):
    """client-partition, netem and reassign start and heal with ops of their own (the catalogue's,
    nemesis/spec.py); a reassign is replayed on the partition it moved."""
    lines: list = []
    nemesis(lines, 0.0, "invoke", "start-client-partition", {"target": "leader"})
    nemesis(lines, 0.1, "info", "start-client-partition", {"target": "leader", "grudge": {}})
    nemesis(lines, 1.0, "invoke", "start-netem", {"target": "minority"})
    nemesis(lines, 1.1, "info", "start-netem", {"target": "minority", "nodes": ["n2"]})
    nemesis(lines, 2.0, "invoke", "start-reassign", {"topic": "fp", "partition": 1})
    nemesis(lines, 2.5, "info", "start-reassign",
            {"topic": "fp", "partition": 1, "replicas": [1, 2, 3], "to": [2, 3, 4]})
    nemesis(lines, 3.0, "invoke", "stop-client-partition", {"grudge": {}})
    nemesis(lines, 3.1, "info", "stop-client-partition", {"grudge": {}})
    nemesis(lines, 4.0, "invoke", "stop-netem", {"nodes": ["n2"]})
    nemesis(lines, 4.1, "info", "stop-netem", {"nodes": ["n2"]})
    nemesis(lines, 5.0, "invoke", "stop-reassign", {"topic": "fp", "partition": 1, "to": [1, 2, 3]})
    nemesis(lines, 5.5, "info", "stop-reassign", {"topic": "fp", "partition": 1, "to": [1, 2, 3]})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "history.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    units = recorded_script(run_dir, 20.0)
    assert [[(e.at, e.action) for e in u.entries] for u in units] == [
        [(0.0, "start client-partition:leader"), (3.0, "stop client-partition")],
        [(1.0, "start netem:minority"), (4.0, "stop netem")],
        [(2.0, "start reassign:1"), (5.0, "stop reassign")],
    ]


def test_a_rerun_is_the_recorded_spec_with_the_script_as_its_schedule(tmp_path):
    run_dir = recorded_run(tmp_path)
    test = recorded_test(run_dir)
    assert "versions" not in test and "protocol" not in test and "notes" not in test
    spec = rerun_spec(test, flatten(recorded_script(run_dir, 20.0)), {"results": str(tmp_path / "again")})
    assert spec.nemesis.schedule == "scripted" and spec.nemesis.faults == "kill,pause" and spec.seed == 7
    assert spec.nemesis.script[4] == {"at": 6.0, "action": "start leader-bounce:2"}
    assert rerun_spec(test, [], {}).nemesis.schedule == "random"  # nothing recorded: run as it was
    with pytest.raises(BadInput, match="no test.json"):
        recorded_test(tmp_path)


def test_fencepost_replay_prints_the_script_and_refuses_what_is_no_run(tmp_path):
    run_dir = recorded_run(tmp_path)
    done = fencepost(tmp_path, "replay", str(run_dir), "--print-script")
    assert done.returncode == 0, done.stderr
    script = tomllib.loads(done.stdout)["nemesis"]["script"]
    assert script[0] == {"at": 0.0, "action": "start kill:one"} and len(script) == 8
    missing = fencepost(tmp_path, "replay", str(tmp_path / "nothing"))
    assert missing.returncode == 254 and "give a run directory" in missing.stderr
    valid = fencepost(tmp_path, "shrink", str(run_dir))
    assert valid.returncode == 254 and "no results.json" in valid.stderr


def units_named(*names: str) -> tuple[Unit, ...]:
    return tuple(Unit((Entry(float(i * 3), f"start {name}"),)) for i, name in enumerate(names))


def test_delta_debugging_finds_the_units_that_matter_within_its_budget():
    """A stand-in for runs: the anomaly shows when kill:leader and pause:one are both in the
    script and the time limit is at least 9 s; each try of a seed below 3 misses it."""
    runs = []

    def run_script(candidate: Candidate, seed: int):
        runs.append((candidate, seed))
        actions = {e.action for e in candidate.script()}
        hit = {"start kill:leader", "start pause:one"} <= actions and candidate.time_limit >= 9 and seed >= 3
        return ({"lost-write": 4} if hit else {}), f"run-{len(runs)}"
    start = Candidate(units_named("partition:one", "kill:leader", "pause:all", "leader-bounce:0", "pause:one",
                                  "kill:one"), 30.0)
    shrinker = Shrinker(run_script, "lost-write", seed=1, tries=3, max_runs=200, say=lambda line: None)
    best = shrinker.shrink(start)
    assert [e.action for e in best.script()] == ["start kill:leader", "start pause:one"]
    assert best.time_limit < 30.0 and best.time_limit >= 9  # the time limit cut to what still fails
    assert best.script()[0].at == 2.0  # moved earlier: the first fault after 2 s of traffic
    assert shrinker.seed_of(best) == 3 and shrinker.runs == len(runs) <= 200
    assert all(seed in (1, 2, 3) for _, seed in runs)  # seeded: s, s+1, s+2 per candidate


def test_a_shrink_stops_at_its_budget_with_the_smallest_script_so_far():
    def run_script(candidate, seed):
        return {"lost-write": 1}, "run"  # everything fails: each run shrinks further
    shrinker = Shrinker(run_script, "lost-write", seed=0, tries=1, max_runs=3, say=lambda line: None)
    best = shrinker.shrink(Candidate(units_named("kill:one", "pause:one", "kill:all", "pause:all"), 20.0))
    assert shrinker.runs == 3 and len(best.units) < 4


def test_a_script_that_does_not_reproduce_is_said_so():
    shrinker = Shrinker(lambda c, s: ({}, "run"), "lost-write", seed=0, tries=2, say=lambda line: None)
    with pytest.raises(Unreproduced, match="did not yield lost-write in 2 tries"):
        shrinker.shrink(Candidate(units_named("kill:one"), 10.0))
    assert shrinker.runs == 2


def test_a_spec_written_as_toml_reads_back_as_the_same_spec():
    spec = build_spec({}, {"backend": "process", "nemesis.faults": "kill", "nemesis.schedule": "scripted",
                           "nemesis.script": [{"at": 2.5, "action": "start kill:one"}, {"at": 4.0, "action": "heal"}],
                           "system_options": {"session_timeout_ms": 3000}, "checker": {"invalid": ["lost-write"]},
                           "name": 'a "quoted" name', "seed": 9, "time_limit": 12.5})
    text = spec_toml(spec, "first line\nsecond line")
    assert text.startswith("# first line\n# second line\n") and "results" not in text
    again = build_spec(tomllib.loads(text), {})
    assert replace(again, results=spec.results, notes=spec.notes) == spec
