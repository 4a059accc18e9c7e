"""`fencepost analyze --master spark://...` on a real Spark standalone cluster: a master and
a worker started from PySpark's own jars (`bin/spark-class`), bound to 127.0.0.1; the
executors run in the worker's JVM, not the driver's. Its verdicts equal `fencepost check`'s."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from fencepost.clusters.hosts.process import free_port
from fencepost.harness.check.checking import check_run
from tests.support.cli import fencepost
from tests.support.paths import EXAMPLES, ROOT


@pytest.fixture
def standalone(tmp_path):
    """(master URL, master web UI URL) of a one-worker standalone cluster on loopback."""
    pyspark = pytest.importorskip("pyspark", reason="pip install -e '.[spark]'")
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    # PYTHONPATH: the executors' Python workers import this checkout, as `fencepost()` runs it
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_WORKER_DIR": str(tmp_path / "worker"),
           "PYTHONPATH": str(ROOT)}
    port, ui, worker_port, worker_ui = (free_port() for _ in range(4))
    logs = tmp_path / "spark-logs"
    logs.mkdir()
    started = []
    try:
        for name, args in (
                ("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                            "--webui-port", str(ui)]),
                ("worker", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                            "--port", str(worker_port), "--webui-port", str(worker_ui), "--cores", "2",
                            "--memory", "2g", f"spark://127.0.0.1:{port}"])):
            started.append(subprocess.Popen([str(spark_class), *args], env=env, start_new_session=True,
                                            stdout=open(logs / f"{name}.log", "wb"), stderr=subprocess.STDOUT))
        _await_worker(f"http://127.0.0.1:{ui}/json/", logs)
        yield f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}/json/"
    finally:
        for process in reversed(started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()


def _await_worker(status_url: str, logs: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(status_url, timeout=5) as reply:
                if json.load(reply).get("aliveworkers", 0) >= 1:
                    return
        except OSError:
            pass
        time.sleep(1)
    tails = {p.name: p.read_text()[-2000:] for p in logs.iterdir()}
    raise AssertionError(f"no Spark worker registered with the master in {timeout} s: {tails}")


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.spark
def test_analyze_on_a_standalone_cluster_agrees_with_fencepost_check(tmp_path, standalone):
    master, status_url = standalone
    for example in EXAMPLES.iterdir():
        if example.is_dir():
            shutil.copytree(example, tmp_path / "runs" / example.name)
    done = fencepost(tmp_path, "analyze", "runs", "--out", "analysis", "--master", master,
                     "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
                     "--conf", "spark.executor.memory=1g", timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]

    assert _apps_completed(status_url) == ["fencepost-analyze"]  # the job ran on this cluster
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "analysis" / "junit.xml").getroot().iter("testcase")}
    runs = sorted((tmp_path / "runs").iterdir())
    assert set(cases) == {run.name for run in runs}
    for run in runs:
        single = check_run(run, write=False, out=None, jobs=1)
        expected = {True: None, False: "failure"}.get(single.valid, "skipped")
        found = next((child.tag for child in cases[run.name]), None)
        assert found == expected, (run.name, single.results["anomaly_counts"])
    import pyarrow.parquet as pq
    assert set(pq.read_table(tmp_path / "analysis" / "parquet" / "history").column("run_id").to_pylist()) == \
        {run.name for run in runs}


def _apps_completed(status_url: str, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(status_url, timeout=5) as reply:
            status = json.load(reply)
        if not status.get("activeapps") or time.monotonic() > deadline:
            return [app["name"] for app in status.get("completedapps", [])]
        time.sleep(0.5)


def test_a_malformed_conf_is_refused_before_spark_starts(tmp_path):
    (tmp_path / "runs" / "r").mkdir(parents=True)
    (tmp_path / "runs" / "r" / "history.jsonl").write_text("")
    done = fencepost(tmp_path, "analyze", "runs", "--conf", "spark.executor.memory", timeout=60)
    assert done.returncode == 254 and "KEY=VALUE" in done.stderr
