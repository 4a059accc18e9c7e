"""bench/librdkafka_deadlock.py, the direct reproducer of docs/FINDINGS.md finding 1, on the
librdkafka this Python has: its schedule reaches the race's preconditions on librdkafka's own
mock cluster (the consumer's OffsetForLeaderEpoch requests failed by the purge of a broker
that left the metadata, "actions Refresh"), and with the broker thread and the main thread
held by gdb at the two lock acquisitions the consumer deadlocks with the stacks of the
incident. If a librdkafka fixes the lock order, the forced trial resumes and this test fails:
then docs/FINDINGS.md must say which release fixed it."""
from __future__ import annotations

import argparse
import importlib.util
import shutil

import pytest

from tests.support.paths import ROOT


def reproducer():
    spec = importlib.util.spec_from_file_location("librdkafka_deadlock", ROOT / "bench" / "librdkafka_deadlock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def options(**given) -> argparse.Namespace:
    return argparse.Namespace(**{"partitions": 1, "patience": 10.0, "force": False, "log": "yes", "subscribe": False,
                                 **given})


@pytest.mark.slow
def test_the_schedule_fails_the_validation_requests_with_the_purged_broker(tmp_path):
    """Unforced, the race is rarely lost (docs/FINDINGS.md); what must hold is that the
    schedule makes the incident's preconditions: validation requests queued on broker 3 and
    failed by its purge while the partition moves on."""
    bench = reproducer()
    code, forced = bench.run_trial(None, options(), tmp_path, "plain")
    assert forced == "" and code in (bench.RESUMED, bench.STUCK)
    log = (tmp_path / "plain.client.log").read_text()
    assert "Sent OffsetForLeaderEpochRequest" in log
    assert "Decommissioning this broker" in log
    assert "OffsetForLeaderEpoch requested failed: Local: Broker handle destroyed without termination" in log
    assert ("OffsetForLeaderEpochRequest failed: Local: Broker handle destroyed without termination: "
            "actions Refresh") in log


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb (apt-get install gdb)")
def test_held_at_the_two_locks_the_consumer_deadlocks_as_in_the_incident(tmp_path):
    bench = reproducer()
    for attempt in range(3):  # gdb may miss the moment (NOT-HIT: the trial then says nothing)
        code, forced = bench.run_trial(None, options(force=True), tmp_path, "forced")
        if forced.startswith("HELD"):
            break
    assert forced.startswith("HELD"), (forced, (tmp_path / "forced.gdb").read_text()[-2000:])
    assert code == bench.STUCK, (tmp_path / "forced.stderr").read_text()[-2000:]
    threads = (tmp_path / "forced.stacks.txt").read_text().split("\nThread ")
    assert any('"rdk:main"' in t and "rwlock_wrlock" in t and "rd_kafka_topic_leader_query0" in t
               and "rd_kafka_toppar_handle_OffsetForLeaderEpoch" in t for t in threads)
    assert any('"rdk:broker3"' in t and "pthread_mutex_lock" in t and "rd_kafka_toppar_forget_leader" in t
               and "rd_kafka_broker_fail" in t for t in threads)
