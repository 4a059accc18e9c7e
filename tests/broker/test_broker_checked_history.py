"""The own broker judged by fencepost's own checkers: a real confluent-kafka
producer and consumer, their operations recorded with harness.rundir.history, the
broker killed with -9 and restarted, the replica log dumped with dump-log, and
`check_run` on the run directory — as `fencepost run` will do it.

In `os` flush mode a kill -9 loses nothing: the run must be valid. In `lazy`
mode the broker acks writes it holds only in memory, so a kill -9 before the
flush is a power cut that loses acknowledged writes: the checkers must say
`lost-write`.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from fencepost.harness.check.checking import check_run
from tests.support.broker_support import start_broker
from tests.support.scenario_support import ScenarioRun, dump_replica, final_read, write_final, write_test

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "fp"
PRODUCER = 0


def chaos_run(tmp_path: Path, flush_args: tuple[str, ...]) -> tuple[Path, list[dict]]:
    """Produce, kill -9 the broker, restart it, produce and consume more, then
    read everything back into a run directory."""
    run_dir = tmp_path / "run"
    broker = start_broker(tmp_path / "data", extra_args=("--num-partitions", "1", *flush_args))
    try:
        # An idempotent producer: its errors are recorded as info (it retries).
        with ScenarioRun(run_dir, broker.bootstrap, TOPIC, name="checked-history",
                         producer_config={"enable.idempotence": True}) as run:
            run.send([f"{PRODUCER}-{i}" for i in range(60)])
            run.nemesis("kill", {"nodes": ["n1"]}, type="invoke")
            broker.kill()
            broker.restart()
            run.nemesis("kill", {"nodes": ["n1"]}, type="info")
            run.reset_producer()  # a new producer after the restart: the old one's state may have died with it
            run.send([f"{PRODUCER}-{i}" for i in range(60, 100)])
            run.poll(partition=0, polls=20)
        final = final_read(broker.bootstrap, TOPIC, [0])
    finally:
        broker.stop()
    write_final(run_dir, final, dump_replica(tmp_path / "data", "n1"))
    write_test(run_dir, "checked-history", idempotent=True)
    return run_dir, final


def test_a_kill_in_os_mode_loses_nothing_and_the_run_checks_valid(tmp_path):
    run_dir, final = chaos_run(tmp_path, ("--flush", "os"))
    assert [line["value"] for line in final if line["kind"] == "read"] == [f"0-{i}" for i in range(100)]
    outcome = check_run(run_dir, out=None)
    assert outcome.valid is True, outcome.results["anomaly_counts"]
    assert outcome.exit_code == 0
    assert outcome.results["linearizability"]["fp-0"]["linearizable"] is True


def test_a_power_cut_in_lazy_mode_is_caught_as_lost_writes(tmp_path):
    # A flush interval longer than the run: every acked write before the kill
    # exists only in the broker's memory when it dies.
    run_dir, final = chaos_run(tmp_path, ("--flush", "lazy", "--flush-interval-ms", "600000"))
    read = [line["value"] for line in final if line["kind"] == "read"]
    assert "0-0" not in read  # the first 60 acked writes died with the process
    outcome = check_run(run_dir, out=None)
    assert outcome.valid is False and outcome.exit_code == 1
    counts = outcome.results["anomaly_counts"]
    assert counts["lost-write"] == 60, counts
    assert counts["nonlinearizable"] == 1
    lost = {a["value"] for a in outcome.results["anomalies"]["lost-write"]}
    assert lost <= {f"0-{i}" for i in range(60)}
