"""`fencepost campaign`: the matrix and its run ids, refusals before anything starts, the
campaign's exit code and junit.xml, and a real campaign of own-broker runs that is resumed."""
from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from fencepost.harness.campaign.conductor import campaign_dir, campaign_exit_code, run_campaign
from fencepost.harness.campaign.expect import Expectation, judge
from fencepost.harness.campaign.junit import write_junit
from fencepost.harness.campaign.plan import load_campaign
from fencepost.harness.errors import BadInput
from tests.support.cli import fencepost
from tests.support.paths import ROOT as REPO


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_the_matrix_times_the_cases_in_order_with_stable_ids(tmp_path):
    campaign = load_campaign(write(tmp_path, """
name = "t"
[base]
time_limit = 5
nemesis.interval = 2
[matrix]
truncation = ["hw", "kip320"]
seed = [1, 2, 3]
[[cases]]
"nemesis.faults" = "kill"
[[cases]]
"nemesis.faults" = "leader-bounce"
"""))
    assert len(campaign.runs) == 12
    first, last = campaign.runs[0], campaign.runs[-1]
    assert first.run_id == "0001_nemesis.faults=kill_truncation=hw_seed=1"
    assert last.run_id == "0012_nemesis.faults=leader-bounce_truncation=kip320_seed=3"
    assert (first.spec.truncation, first.spec.seed, first.spec.nemesis.faults, first.spec.time_limit,
            first.spec.nemesis.interval) == ("hw", 1, "kill", 5.0, 2.0)
    assert len({r.run_id for r in campaign.runs}) == 12


def test_base_takes_dotted_keys_as_cases_do_and_a_case_overrides_them(tmp_path):
    campaign = load_campaign(write(tmp_path, """
name = "t"
[base]
"clients.producer" = "per-process"
"nemesis.faults" = "kill"
[matrix]
seed = [1]
[[cases]]
truncation = "hw"
[[cases]]
"nemesis.faults" = "pause"
"""))
    first, second = campaign.runs
    assert (first.spec.clients.producer, first.spec.nemesis.faults) == ("per-process", "kill")
    assert (second.spec.clients.producer, second.spec.nemesis.faults) == ("per-process", "pause")
    assert first.run_id == "0001_truncation=hw_seed=1"  # base settings do not lengthen the ids
    with pytest.raises(BadInput, match="clients.producr"):
        load_campaign(write(tmp_path, 'name = "t"\n[base]\n"clients.producr" = "shared"\n'))


def test_the_shipped_campaigns_plan_what_their_comments_say():
    truncation = load_campaign(REPO / "campaigns" / "truncation.toml")
    assert len(truncation.runs) == 80
    assert {r.spec.truncation for r in truncation.runs} == {"hw", "kip101", "kip279", "kip320"}
    assert {r.spec.nemesis.faults for r in truncation.runs} == {"leader-bounce", "zombie", "kill", "partition"}
    stock = load_campaign(REPO / "campaigns" / "stock.toml")
    assert len(stock.runs) == 15 and {r.spec.system for r in stock.runs} == {"kafka:3.9.1", "kafka:4.3.1"}
    own = load_campaign(REPO / "campaigns" / "false-alarms.toml")
    assert len(own.runs) == 50 and {(r.spec.system, r.spec.truncation, r.spec.nemesis.faults, r.spec.time_limit)
                                    for r in own.runs} == {("own", "kip320", "kill,pause,partition", 30.0)}
    kafka = load_campaign(REPO / "campaigns" / "false-alarms-stock.toml")
    assert len(kafka.runs) == 10 and {(r.spec.system, r.spec.truncation) for r in kafka.runs} == {("kafka:4.3.1",
                                                                                                  "release")}
    releases = load_campaign(REPO / "campaigns" / "releases.toml")
    assert len(releases.runs) == 320 and {r.spec.truncation for r in releases.runs} == {"release"}
    assert {r.spec.system for r in releases.runs} == {f"kafka:{v}" for v in (
        "0.10.2.2", "0.11.0.3", "1.1.1", "2.0.0", "2.0.1", "2.1.1", "3.9.1", "4.4.0")}
    by_fault = {r.spec.nemesis.faults: r.spec for r in releases.runs}
    assert sorted(by_fault) == ["fast-leader-change", "kill,pause,partition", "leader-bounce", "zombie"]
    assert (by_fault["fast-leader-change"].nodes, by_fault["fast-leader-change"].concurrency,
            by_fault["fast-leader-change"].producer.batch_messages) == (4, 50, 1)
    assert all(r.spec.system_options == {"controllers": 1} for r in releases.runs if r.spec.system == "kafka:4.4.0")
    power = load_campaign(REPO / "campaigns" / "power.toml")
    cells = {(r.spec.truncation, r.spec.nemesis.faults, r.spec.concurrency) for r in power.runs}
    assert len(power.runs) == 60 and {r.spec.time_limit for r in power.runs} == {60.0}
    assert cells == {(t, f, 10) for t in ("hw", "kip101") for f in ("kill,pause,partition", "leader-bounce")} | {
        ("kip101", "fast-leader-change", 10), ("kip101", "fast-leader-change", 3)}
    assert {r.spec.nemesis.interval for r in power.runs if r.spec.nemesis.faults == "kill,pause,partition"} == {3.0}
    durability = load_campaign(REPO / "campaigns" / "durability.toml")
    expected = {(r.spec.system, r.spec.nemesis.faults, r.spec.system_options.get("elr"),
                 "broker_config" in r.spec.system_options): r.expected.verdicts for r in durability.runs}
    assert len(durability.runs) == 190
    own_lrs = [r for r in durability.runs
               if r.spec.system == "own" and r.spec.nemesis.faults == "last-replica-standing"]
    assert {r.spec.system_options.get("flush_interval_ms") for r in own_lrs} == {None, 60000}  # default and stressed
    assert all(r.expected.verdicts == ("valid", "invalid") for r in own_lrs)
    assert expected[("kafka:4.4.0", "last-replica-standing", False, False)] == ("invalid",)
    assert expected[("kafka:4.4.0", "last-replica-standing", None, False)] == ("valid",)  # ELR on from 4.1
    assert expected[("kafka:4.0.1", "last-replica-standing", True, False)] == ("valid",)
    assert expected[("kafka:4.0.1", "last-replica-standing", None, False)] == ("invalid",)
    assert expected[("kafka:3.9.1", "power-cut:all", None, True)] == ("valid",)
    assert expected[("kafka:3.9.1", "power-cut:all", None, False)] == ("valid", "invalid")
    assert expected[("kafka:0.10.2.2", "kip101-divergence", None, False)] == ("invalid",)
    assert expected[("kafka:0.11.0.3", "kip101-divergence", None, False)] == ("valid",)
    unclean = load_campaign(REPO / "campaigns" / "unclean.toml")
    assert len(unclean.runs) == 20 and {r.spec.truncation for r in unclean.runs} == {"kip101", "kip320"}
    assert {(r.spec.topic.min_insync_replicas, r.spec.topic.unclean_leader_election, r.spec.nemesis.faults,
             r.spec.nemesis.interval, r.spec.time_limit) for r in unclean.runs} == {
        (1, True, "kill,pause,partition", 3.0, 60.0)}


@pytest.mark.parametrize("text, message", [
    ('name = "t"\n[matrix]\nseed = []\n', "matrix.seed = []: give a non-empty list"),
    ('name = "t"\n[matrix]\ntruncation = ["hw", "zz"]\n', "run 0002_truncation=zz: truncation = 'zz'"),
    ('name = "t"\nrate = 5\n', "unknown key 'rate'"),
    ('name = "a/b"\n', "give a folder name"),
    ('name = "t"\ncases = [1]\n', "cases must be [[cases]] tables"),
])
def test_a_bad_campaign_is_refused_before_anything_starts(tmp_path, text, message):
    with pytest.raises(BadInput, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_campaign(write(tmp_path, text))


def test_the_campaign_exit_code_counts_only_what_was_not_expected():
    def outcomes(*verdicts, expected=("valid",), unknown_fails=False):
        return [{"verdict": v, "status": judge(Expectation(expected), v, {}, unknown_fails)[0]} for v in verdicts]
    assert campaign_exit_code(outcomes("valid", "valid")) == 0
    assert campaign_exit_code(outcomes("valid", "invalid")) == 1
    assert campaign_exit_code(outcomes("invalid", "invalid", expected=("invalid",))) == 0  # a canary that bit
    assert campaign_exit_code(outcomes("valid", expected=("invalid",))) == 1  # a bug no longer found
    assert campaign_exit_code(outcomes("valid", "unknown")) == 0  # reported, not a failure ...
    assert campaign_exit_code(outcomes("valid", "unknown", unknown_fails=True)) == 2  # ... unless asked
    assert campaign_exit_code(outcomes("unknown", "crashed", "invalid")) == 255
    # outcome.json files written before expectations: judged as expecting valid
    assert campaign_exit_code([{"verdict": "invalid"}, {"verdict": "valid"}]) == 1


def test_junit_has_one_testcase_per_run_failure_error_skipped(tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(path, "t", [
        {"run_id": "0001", "verdict": "valid", "seconds": 1.0},
        {"run_id": "0002", "verdict": "invalid", "seconds": 2.0, "anomaly_counts": {"lost-write": 3, "unseen": 0}},
        {"run_id": "0003", "verdict": "crashed", "seconds": 0.5, "error": "RunError: setup failed"},
        {"run_id": "0004", "verdict": "unknown", "seconds": 0.5, "error": None}])
    suite = ET.parse(path).getroot()
    assert [suite.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["4", "1", "1", "1"]
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["0002"].find("failure").get("message") == "invalid: lost-write 3"
    assert cases["0003"].find("error").get("message") == "RunError: setup failed"
    assert cases["0004"].find("skipped") is not None and len(cases["0001"]) == 0


def test_a_crashed_run_is_recorded_and_the_campaign_goes_on(tmp_path):
    campaign = load_campaign(write(tmp_path, 'name = "t"\n[base]\nbackend = "process"\n[matrix]\nseed = [1, 2]\n'))
    directory = campaign_dir(tmp_path / "results", campaign, resume=False)

    def run_one(planned, where):
        if planned.spec.seed == 1:
            raise RuntimeError("the cluster did not come up")
        return {"verdict": "valid", "exit_code": 0, "anomaly_counts": {}, "run_dir": str(where)}
    assert run_campaign(campaign, directory, run_one) == 255
    first = json.loads((directory / "runs" / campaign.runs[0].run_id / "outcome.json").read_text())
    assert first["verdict"] == "crashed" and "the cluster did not come up" in first["error"]
    assert ET.parse(directory / "junit.xml").getroot().get("tests") == "2"


@pytest.mark.integration
@pytest.mark.slow
def test_a_real_campaign_runs_every_run_and_resumes_only_what_is_missing(tmp_path):
    (tmp_path / "c.toml").write_text("""
name = "small"
[base]
backend = "process"
time_limit = 2
rate = 100
concurrency = 2
nemesis.faults = "none"
[matrix]
seed = [1, 2]
""")
    done = fencepost(tmp_path, "campaign", "c.toml", timeout=600)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    assert "run 2/2 0002_seed=2" in done.stderr and "valid 2, invalid 0, unknown 0, crashed 0" in done.stderr
    directory = (tmp_path / "results" / "campaigns" / "small" / "latest").resolve()
    outcomes = [json.loads(p.read_text()) for p in sorted(directory.glob("runs/*/outcome.json"))]
    assert [o["verdict"] for o in outcomes] == ["valid", "valid"]
    assert all((Path(o["run_dir"]) / "results.json").is_file() for o in outcomes)
    suite = ET.parse(directory / "junit.xml").getroot()
    assert [c.get("name") for c in suite.iter("testcase")] == ["0001_seed=1", "0002_seed=2"]

    resumed = fencepost(tmp_path, "campaign", "c.toml", "--resume", timeout=600)
    assert resumed.returncode == 0 and "2 of 2 runs done already" in resumed.stderr
    assert "run 1/2" not in resumed.stderr

    (directory / "runs" / "0002_seed=2" / "outcome.json").unlink()
    again = fencepost(tmp_path, "campaign", "c.toml", "--resume", timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "run 2/2 0002_seed=2" in again.stderr and "run 1/2" not in again.stderr
    assert json.loads((directory / "runs" / "0002_seed=2" / "outcome.json").read_text())["verdict"] == "valid"


@pytest.mark.integration
@pytest.mark.slow
def test_an_interrupted_parallel_campaign_ends_its_runs_and_leaves_no_process(tmp_path):
    """Two runs side by side (the process backend: no root), SIGTERM while both are in their main
    phase: each run's process heals and tears down its cluster, the campaign exits 130 saying how
    to go on, and no process of either cluster is left."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from fencepost.clusters.hosts.local_process import marked_processes

    (tmp_path / "c.toml").write_text("""
name = "stopped"
[base]
backend = "process"
time_limit = 60
rate = 100
concurrency = 2
nemesis.faults = "kill"
nemesis.interval = 2
[matrix]
seed = [1, 2, 3]
""")
    campaign = subprocess.Popen([sys.executable, "-m", "fencepost.harness.cli", "campaign", "c.toml",
                                 "--parallel", "2"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
    directory = tmp_path / "results" / "campaigns" / "stopped"  # its runs under 2.../runs/, not latest/
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        logs = [p.read_text() for p in directory.glob("2*/runs/*/console.log")]
        if len(logs) == 2 and all("fencepost: main" in log for log in logs):
            break
        time.sleep(0.5)
    else:
        campaign.kill()
        pytest.fail(f"the two runs did not reach their main phase: {campaign.communicate()}")
    clusters = {f"run-{d.name[-6:]}" for d in directory.glob("2*/runs/*/run/2*")}
    assert len(clusters) == 2 and set(marked_processes().values()) >= clusters
    campaign.send_signal(signal.SIGTERM)
    out, err = campaign.communicate(timeout=300)
    assert campaign.returncode == 130, err[-3000:]
    assert "stopping 2 running run(s)" in err and "continue with --resume" in err
    assert not clusters & set(marked_processes().values())
    assert not list(directory.glob("2*/runs/*/outcome.json"))  # no run finished: none recorded
    for log in directory.glob("2*/runs/*/console.log"):
        assert "fencepost: teardown" in log.read_text()
