"""Client logs (workloads/client_log.py): a bounded ring per client, written to the run
directory only when the client is in trouble; librdkafka's debug lines reach it through
confluent-kafka's `logger` on the polling thread; a consumer workload whose partition is
behind the acknowledged writes with no record for `stuck_s` writes clients/<process>.log,
one that has nothing to read writes nothing; a bad `clients.debug` is refused before a
run starts (exit 254)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from fencepost.harness.rundir.history import HistoryWriter, Recorder
from fencepost.workloads.client_log import DEFAULT_DEBUG, ClientLog, check_debug
from fencepost.workloads.consumer import ConsumerOptions, ConsumerWorkload
from tests.support.cli import fencepost

NOWHERE = "127.0.0.1:9"  # discard: nothing listens; librdkafka logs its connection attempts


def test_the_ring_keeps_the_last_lines_and_a_flush_says_why_and_how_many_were_dropped(tmp_path: Path) -> None:
    log = ClientLog(7, tmp_path / "clients" / "7.log", lines=10, clock=lambda: 0.0)
    for i in range(100):
        log.log(10, "%s [%s] %s", "FETCH", "rdkafka#consumer-1", f"line {i}")
    assert not (tmp_path / "clients").exists(), "nothing is written before a flush"
    log.flush("stuck: fp-0")
    lines = (tmp_path / "clients" / "7.log").read_text().splitlines()
    assert lines[0] == ("=== 1970-01-01T00:00:00.000Z client 7 flushed: stuck: fp-0; 10 lines held, "
                        "90 earlier lines dropped by the ring ===")
    assert lines[1:] == [f"1970-01-01T00:00:00.000Z DEBUG FETCH line {i}" for i in range(90, 100)]
    log.note("after the flush")  # streamed to the file from now on
    log.flush("did not close")
    log.close()
    tail = (tmp_path / "clients" / "7.log").read_text().splitlines()[11:]
    assert tail == ["1970-01-01T00:00:00.000Z NOTE fencepost after the flush",
                    "=== 1970-01-01T00:00:00.000Z client 7: did not close ==="]


def test_debug_contexts_are_checked() -> None:
    assert check_debug(DEFAULT_DEBUG) is None and check_debug("") is None and check_debug("all") is None
    assert "'fetches' is no librdkafka debug context" in check_debug("fetch,fetches")


def test_librdkafka_lines_reach_the_log_when_the_consumer_is_polled(tmp_path: Path) -> None:
    log = ClientLog(1, tmp_path / "1.log")
    consumer = Consumer({"bootstrap.servers": NOWHERE, "group.id": "g", "debug": DEFAULT_DEBUG,
                         "log_level": 7, "logger": log})
    consumer.assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
    time.sleep(0.5)
    assert log.flush("probe") and log.flushes == ["probe"]
    held = (tmp_path / "1.log").read_text()
    assert " DEBUG " not in held, "librdkafka's lines wait in the client's queue until a poll serves them"
    consumer.poll(0.2)
    consumer.close()
    log.close()
    text = (tmp_path / "1.log").read_text()
    assert " DEBUG BROKER " in text or " DEBUG CONNECT " in text, text[:2000]


def _poll_for(workload: ConsumerWorkload, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        workload.begin(1000, lambda process, kind: None)
        time.sleep(0.05)


@pytest.mark.parametrize("acked, stuck", [({0: 5}, True), ({}, False)])
def test_a_consumer_behind_acknowledged_writes_writes_its_log_only_when_stuck(tmp_path: Path, acked, stuck) -> None:
    clients = tmp_path / "clients"
    with HistoryWriter(tmp_path / "history.jsonl") as writer:
        workload = ConsumerWorkload(NOWHERE, Recorder(writer), [0], [1000],
                                    ConsumerOptions(topic="t", debug=DEFAULT_DEBUG, stuck_s=0.5,
                                                    librdkafka={"log_level": 0}),
                                    client_logs=clients, acked=lambda: acked, stacks=None)
        _poll_for(workload, 1.0)
        workload.close(5)
    if not stuck:
        assert not clients.exists(), "a consumer with nothing to read is not stuck"
        assert workload.client_logs() == []
        return
    [(path, whys)] = workload.client_logs()
    assert path == clients / "1000.log" and whys[0].startswith("stuck: t-0 (read to -1, acknowledged to 5, ")
    text = (clients / "1000.log").read_text()
    assert workload.client_log_lines()[1000] >= len(text.splitlines()) - 1
    assert text.startswith("=== ") and "client 1000 flushed: stuck: t-0 (read to -1, acknowledged to 5, " \
        "no record for " in text.splitlines()[0]
    assert "NOTE fencepost poll: 0 records" in text and " DEBUG " in text


def test_a_bad_debug_context_is_refused_before_the_run(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text('system = "own"\n[clients]\ndebug = "fetch,nonsense"\n')
    done = fencepost(tmp_path, "run", "--config", str(config), "--results", str(tmp_path / "results"))
    assert done.returncode == 254, done.stderr
    assert "clients.debug = 'fetch,nonsense': 'nonsense' is no librdkafka debug context" in done.stderr
    assert not (tmp_path / "results").exists()
