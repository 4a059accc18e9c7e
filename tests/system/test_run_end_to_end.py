"""`fencepost run` end to end, as a user runs it: a real cluster on netns, acks=all traffic
through confluent-kafka, the nemesis, heal, final reads and replica dumps, check, report —
judged by the exit code, the printed verdict and the run directory it leaves."""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest

from tests.support.cli import fencepost, history, run
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]


def test_a_short_default_run_is_valid_and_leaves_a_complete_run_directory(tmp_path):
    done, run_dir = run(tmp_path, "--time-limit", "15", "--nemesis-interval", "3", "--seed", "7",
                        "--backend-option", "subnet=10.77.61.0/24")
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    assert "verdict: valid" in done.stdout
    for name in ("test.json", "history.jsonl", "final.jsonl", "results.json", "fencepost.log"):
        assert (run_dir / name).is_file(), name
    assert (tmp_path / "results" / "latest").resolve() == run_dir.resolve()
    ops = history(run_dir)
    sends = [op for op in ops if op["f"] == "send" and op["type"] == "ok"]
    assert len(sends) > 1000, len(sends)
    assert {op["f"] for op in ops if op["process"] == "nemesis"} & {"kill", "pause", "start-partition"}
    final = [orjson.loads(line) for line in (run_dir / "final.jsonl").read_bytes().splitlines()]
    assert {line["kind"] for line in final} == {"read", "read-state", "replica", "replica-state"}
    assert all(line["complete"] for line in final if line["kind"] == "read-state")
    assert sorted(p.name for p in (run_dir / "nodes").iterdir()) == ["controller", "n1", "n2", "n3"]


def path_without(folder: Path, *tools: str) -> str:
    """A PATH of one folder holding a link to every program on today's PATH except `tools` (they
    live in folders such as /usr/bin that hold everything else too)."""
    folder.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            target = folder / entry.name
            if entry.name not in tools and not target.exists() and os.access(entry.path, os.X_OK):
                target.symlink_to(entry.path)
    return str(folder)


def test_the_default_run_without_ip_and_iptables_takes_the_process_backend_and_says_so(tmp_path):
    """As on a fresh machine before scripts/provision: root, but no `ip`/`iptables`. The default
    run must not stop at the netns backend; it runs on the process backend with kill and pause and
    says in one line what it cannot do and how to get it."""
    import shutil
    import subprocess
    import sys
    env = {**os.environ, "PATH": path_without(tmp_path / "bin", "ip", "iptables"),
           "PYTHONPATH": str(ROOT)}
    assert shutil.which("ip", path=env["PATH"]) is None and shutil.which("iptables", path=env["PATH"]) is None
    done = subprocess.run([sys.executable, "-m", "fencepost.harness.cli", "run", "--time-limit", "8", "--seed", "3"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
    assert "verdict: valid" in done.stdout
    notes = [line for line in done.stderr.splitlines() if "process backend" in line]
    assert len(notes) == 1, done.stderr[-3000:]
    assert "cannot partition" in notes[0] and "scripts/provision" in notes[0], notes[0]
    if os.geteuid() == 0:
        assert "iptables" in notes[0], notes[0]
    run_dir = tmp_path / re.search(r"run directory: (\S+)", done.stdout).group(1)
    spec = orjson.loads((run_dir / "test.json").read_bytes())
    assert spec["backend"] == "process"
    assert spec["nemesis"]["faults"] == "kill,pause"
    faults = {op["f"] for op in history(run_dir) if op["process"] == "nemesis"}
    assert faults & {"kill", "pause"} and not faults & {"start-partition"}, faults


def test_leader_bounce_loses_writes_only_without_leader_epochs(tmp_path):
    # The two runs go on side by side, each on its own subnet, as campaigns run two at a time.
    def leader_bounce(truncation: str, subnet: str):
        where = tmp_path / truncation
        where.mkdir()
        return run(where, "--truncation", truncation, "--nemesis", "leader-bounce", "--nemesis-schedule", "fixed",
                   "--nemesis-interval", "4", "--time-limit", "30", "--seed", "1", "--backend-option",
                   f"subnet={subnet}")

    with ThreadPoolExecutor(2) as pool:
        hw = pool.submit(leader_bounce, "hw", "10.77.62.0/24")
        kip320 = pool.submit(leader_bounce, "kip320", "10.77.65.0/24")
        runs = {"hw": hw.result(), "kip320": kip320.result()}
    for truncation, verdict, exit_code in [("hw", "invalid", 1), ("kip320", "valid", 0)]:
        done, run_dir = runs[truncation]
        assert done.returncode == exit_code, (truncation, done.stdout, done.stderr[-3000:])
        assert f"verdict: {verdict}" in done.stdout
        results = orjson.loads((run_dir / "results.json").read_bytes())
        if verdict == "invalid":
            assert results["anomaly_counts"].get("lost-write", 0) > 0, results["anomaly_counts"]


def test_sigterm_mid_run_heals_tears_down_and_leaves_a_checkable_history(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from fencepost.clusters.hosts.local_process import marked_processes

    if os.geteuid() != 0:
        pytest.skip("the netns backend needs root")
    harness = subprocess.Popen([sys.executable, "-m", "fencepost.harness.cli", "run", "--time-limit", "120",
                                "--name", "term", "--nemesis-interval", "2",
                                "--backend-option", "subnet=10.77.63.0/24"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    history_file = tmp_path / "results" / "term" / "latest" / "history.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (history_file.exists() and history_file.stat().st_size > 100_000):
        time.sleep(0.2)
    harness.send_signal(signal.SIGTERM)
    output = harness.communicate(timeout=180)[0]
    assert harness.returncode == 130, output
    assert "teardown" in output
    run_dir = history_file.parent.resolve()
    cluster_name = f"run-{run_dir.name[-6:]}"
    assert cluster_name not in marked_processes().values()
    assert not [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if ns.startswith(f"fp-{cluster_name}")]
    ops = history(run_dir)
    assert any(op["process"] == "nemesis" and op["f"] == "heal" and op["type"] == "info" for op in ops)
    check = fencepost(tmp_path, "check", str(run_dir))
    assert check.returncode == 2 and "final.jsonl" in check.stdout + check.stderr
