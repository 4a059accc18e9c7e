"""Clients as Jepsen's, in a real `fencepost run` (the own system, process backend): a producer
client per process, client crashes on a schedule recorded as `crash` ops, consumers that mix
assign and subscribe, group members committing what they read and resuming from committed
offsets — checked valid, with commits and resumes in the history, and no unavailability,
fatal marker or failed recovery in the liveness verdict.

One broker (the run's own; a group has one coordinator on any number of brokers)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import orjson
import pytest

from fencepost.workloads.client_log import DEFAULT_DEBUG, DEFAULT_LINES
from tests.support.cli import fencepost

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONFIG = """
name = "clients"
backend = "process"
nodes = 1
time_limit = 20
rate = 300
concurrency = 8
seed = 5

[topic]
partitions = 3
replication_factor = 1
min_insync_replicas = 1

[nemesis]
faults = "none"

[consumer]
processes = 3
mode = "mixed"
subscribe_p = 0.7
commit_interval = 0.5

[clients]
producer = "per-process"
crash_interval = 1.5
"""


def committed(ops: list[dict], resume: dict) -> tuple[dict[str, int], dict[str, int]]:
    """Per partition ("fp-0"), the highest offset the resume's group had committed (ok) before the
    resume was invoked, and the highest it had asked to commit before the resume was answered:
    bounds of where the resume may start (a commit answered meanwhile may or may not show)."""
    invoked = max(op["index"] for op in ops if op["process"] == resume["process"] and op["type"] == "invoke"
                  and op["index"] < resume["index"] and op["f"] == "assign")
    held: dict[str, int] = {}
    sent: dict[str, int] = {}
    for op in ops:
        if op["f"] != "commit" or op["value"].get("group") != resume["value"]["group"] or op["index"] > resume["index"]:
            continue
        if op["type"] == "invoke" or (op["type"] == "ok" and op["index"] < invoked):
            target = sent if op["type"] == "invoke" else held
            for topic, partition, offset in op["value"]["offsets"]:
                key = f"{topic}-{partition}"
                target[key] = max(target.get(key, 0), offset)
    return held, sent


def test_clients_per_process_crashing_and_a_mixed_committing_group_check_valid(tmp_path):
    (tmp_path / "clients.toml").write_text(CONFIG)
    done = fencepost(tmp_path, "run", "--config", "clients.toml", timeout=600)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    run_dir = tmp_path / re.search(r"run directory: (\S+)", done.stdout).group(1)
    ops = [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]
    kinds = Counter((op["f"], op["type"]) for op in ops if op["process"] != "nemesis")
    crashed = {op["process"] for op in ops if op["f"] == "crash" and op["type"] == "invoke"}
    assert kinds[("send", "ok")] > 2000, kinds
    assert any(p < 8 for p in crashed) and any(p >= 1000 for p in crashed), crashed  # producers' and consumers'
    assert kinds[("crash", "info")] == kinds[("crash", "invoke")] >= 5
    assert kinds[("subscribe", "ok")] >= 1 and kinds[("commit", "ok")] >= 1, kinds  # how many: the crashes' timing
    opened = [op for op in ops if op["type"] == "invoke" and op["f"] in ("subscribe", "assign")
              and op["process"] >= 1000 and op["value"].get("from") in ("beginning", None)]
    assert {op["f"] for op in opened} == {"subscribe", "assign"}  # mixed: both, in one run
    resumes = [op for op in ops if op["f"] == "assign" and op["type"] == "ok" and "group" in op["value"]]
    assert resumes and all(isinstance(op["value"]["from"], dict) for op in resumes)
    for resume in resumes:  # each resumes where its group's commits left off (0 before the first)
        held, sent = committed(ops, resume)
        for key, offset in resume["value"]["from"].items():
            assert held.get(key, 0) <= offset <= max(sent.get(key, 0), held.get(key, 0)), (resume, held, sent)
    results = orjson.loads((run_dir / "results.json").read_bytes())
    assert results["valid"] is True, results["anomaly_counts"]
    assert "commit-skip" not in results["anomaly_counts"] and "commit-reread" not in results["anomaly_counts"]
    # Liveness: nothing halted, no partition went unavailable or failed to recover. Stuck
    # consumers may be reported, rightly: a group member that crashes does not leave the group,
    # so the coordinator holds the rebalance until its session times out (librdkafka's 45 s),
    # and on a slow machine the members read nothing meanwhile (seen on CI: assignments 45 s
    # after the crash, realtime lag 25-30 s at the end).
    kinds = results["liveness"]["kinds"]
    assert kinds["fatal-marker"] == kinds["unavailable"] == kinds["no-recovery"] == 0, results["liveness"]
    test = orjson.loads((run_dir / "test.json").read_bytes())
    assert test["clients"] == {"producer": "per-process", "crash_interval": 1.5,
                               "debug": DEFAULT_DEBUG, "debug_lines": DEFAULT_LINES}  # the client logs' defaults
    assert Path(run_dir / "report.html").read_text().count('id="liveness-verdict"') == 1
