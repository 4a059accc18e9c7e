"""A real run read as a Jepsen user reads it: `fencepost run` on the process backend
(its own brokers, no root) with hw truncation under leader-bounce — the scenario
pauses a node and later kills it — then its report in Chromium, `fencepost trace`
and fencepost.log. About 20 s."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from fencepost.harness.rundir.history import iter_history
from fencepost.harness.rundir.run_dirs import RUN_NAME
from tests.support.browser import Browser
from tests.support.paths import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CLI = [sys.executable, "-m", "fencepost.harness.cli"]
ENDS_A_PAUSE = ("kill", "stop", "power-cut")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("results")
    done = subprocess.run([*CLI, "run", "--backend", "process", "--time-limit", "10", "--truncation", "hw",
                           "--nemesis", "leader-bounce", "--nemesis-schedule", "fixed", "--nemesis-interval", "4",
                           "--results", str(results), "--name", "bounce"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode in (0, 1, 2), done.stderr[-3000:]
    return (results / "bounce" / "latest").resolve()


def test_a_pause_ends_where_its_node_is_killed_in_the_fault_table_a_person_reads(run_dir, tmp_path):
    nemesis = [op for op in iter_history(run_dir / "history.jsonl") if op.process == "nemesis"]
    # When each node was killed (the kill's info): a pause of that node ends there.
    kills = [(op.time / 1e9, node) for op in nemesis if op.f in ENDS_A_PAUSE and op.type == "info"
             for node in (op.value or {}).get("nodes", [])]
    with Browser(tmp_path / "profile", height=1200) as browser:
        browser.open((run_dir / "report.html").as_uri())
        browser.js("document.getElementById('faults').open = true")
        rows = browser.js("Array.from(document.querySelectorAll('#faults tr')).slice(1)"
                          ".map(r => Array.from(r.cells).map(c => c.innerText))")
    pauses = [(float(start), float(end), what) for start, end, _, kind, what in rows if kind == "pause"]
    assert pauses, rows
    killed_while_paused = 0
    for start, end, what in pauses:
        nodes = re.match(r"pause ([\w,]+)", what).group(1).split(",")
        for at, node in kills:
            if node in nodes and start < at:
                assert end <= at + 0.0015, f"{what} from {start} to {end}, but {node} was killed at {at}"
                killed_while_paused += end >= at - 0.0015
    assert killed_while_paused, "leader-bounce killed no paused node: the run did not test the case"


def test_the_run_directory_log_and_trace_of_a_real_run(run_dir):
    assert RUN_NAME.fullmatch(run_dir.name) and re.search(r"T\d{6}(Z|[+-]\d{4})-", run_dir.name)
    log = (run_dir / "fencepost.log").read_text().splitlines()
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d{4} INFO verdict: (valid|invalid|unknown)",
                    log[-1]), log[-1]
    assert "False" not in log[-1] and "True" not in log[-1]
    results = orjson.loads((run_dir / "results.json").read_bytes())
    examples = [e for items in results["anomalies"].values() for e in items if isinstance(e.get("value"), str)]
    value = examples[0]["value"] if examples else next(
        op.value["value"] for op in iter_history(run_dir / "history.jsonl") if op.f == "send" and op.type == "ok")
    done = subprocess.run([*CLI, "trace", str(run_dir), value], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"send invoked: \S+ '{re.escape(value)}'", done.stdout)
    assert "final.jsonl at " in done.stdout and re.search(r"high watermark \d+", done.stdout)
    if examples:  # the report links each example to its trace page
        report = (run_dir / "report.html").read_text()
        for link in set(re.findall(r'class="trace" href="([^"]+)"', report)):
            assert (run_dir / link).is_file()
