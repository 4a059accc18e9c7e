"""`python -m fencepost.broker`: verbs, argument and configuration errors a person can act on, advertised addresses."""
from __future__ import annotations

import subprocess
import sys

import pytest
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest
from kafka.protocol.metadata.metadata import MetadataRequest

from tests.support.broker_support import RawClient, start_broker
from tests.support.paths import ROOT


def run_broker(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fencepost.broker", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_usage_and_unknown_verb():
    assert run_broker().returncode == 2
    r = run_broker("frobnicate")
    assert r.returncode == 2 and "unknown command 'frobnicate'" in r.stderr and "serve" in r.stderr
    assert run_broker("--help").returncode == 0
    assert run_broker("dump-log", "--help").returncode == 0


@pytest.mark.parametrize("args, message", [
    (["--node-id", "1", "--listen", "127.0.0.1:x", "--data-dir", "d"], "--listen must be HOST:PORT"),
    (["--node-id", "1", "--listen", "0.0.0.0:9092", "--data-dir", "d"], "give --advertise HOST:PORT"),
    (["--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", "d", "--advertise", "h:0"], "needs a real port"),
    (["--node-id", "-3", "--listen", "127.0.0.1:0", "--data-dir", "d"], "--node-id must be within 0..65535"),
    (["--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", "d", "--flush", "sometimes"], "invalid choice"),
])
def test_bad_serve_arguments_exit_2_with_the_reason(args, message, tmp_path):
    r = run_broker("serve", *[a if a != "d" else str(tmp_path / "d") for a in args])
    assert r.returncode == 2 and message in r.stderr, r.stderr


@pytest.mark.integration
def test_data_dir_of_another_node_is_refused(tmp_path):
    b = start_broker(tmp_path / "data", node_id=1)
    b.stop()
    r = run_broker("serve", "--node-id", "2", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"))
    assert r.returncode == 1
    assert "belongs to node 1, not --node-id 2" in r.stderr


@pytest.mark.integration
def test_advertised_address_in_metadata_and_find_coordinator(tmp_path):
    b = start_broker(tmp_path / "data", node_id=7, extra_args=("--advertise", "broker7.example:19092"))
    try:
        with RawClient(b.port) as c:
            m = c.call(MetadataRequest(topics=None), 9)
            assert [(x.node_id, x.host, x.port) for x in m.brokers] == [(7, "broker7.example", 19092)]
            assert m.controller_id == 7 and m.cluster_id == "fencepost"
            f = c.call(FindCoordinatorRequest(key="g", key_type=0), 3)
            assert (f.error_code, f.node_id, f.host, f.port) == (0, 7, "broker7.example", 19092)
            t = c.call(FindCoordinatorRequest(key="tx", key_type=1), 3)
            assert t.error_code == 15 and "group" in t.error_message  # COORDINATOR_NOT_AVAILABLE
    finally:
        assert b.stop() == 0
    assert "shutdown complete" in b.log_text()
