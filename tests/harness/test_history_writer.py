"""The history writer and recorder: gap-free under threads, durable within
100 ms, readable after a SIGKILL."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import orjson
import pytest

from fencepost.harness.errors import Problems
from fencepost.harness.rundir import history
from fencepost.harness.rundir.history import HistoryReader, HistoryWriter, Recorder, iter_history


def send_value(process, n, partition=0):
    return {"topic": "fp", "partition": partition, "value": f"{process}-{n}"}


def test_concurrent_appends_make_a_valid_gap_free_history(tmp_path):
    path = tmp_path / "history.jsonl"
    threads, per_thread = 8, 300
    with HistoryWriter(path) as writer:
        recorder = Recorder(writer)
        start = threading.Barrier(threads)

        def produce(process):
            start.wait()
            for n in range(per_thread):
                value = send_value(process, n, partition=n % 3)
                handle = recorder.invoke(process, "send", value)
                recorder.complete(handle, "ok", {**value, "offset": n, "leader_epoch": 0})

        workers = [threading.Thread(target=produce, args=(p,)) for p in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        recorder.nemesis("kill", {"nodes": ["n1"]})

    problems = Problems()
    ops = list(iter_history(path, problems))
    assert problems.errors == [] and problems.warnings == []
    assert [op.index for op in ops] == list(range(threads * per_thread * 2 + 1))
    times = [op.time for op in ops]
    assert times == sorted(times)
    reader = HistoryReader(path)
    paired = list(reader.operations())
    assert len(paired) == threads * per_thread and all(o.type == "ok" for o in paired)
    assert ops[-1].process == "nemesis" and ops[-1].f == "kill"


def test_an_fsync_follows_an_append_within_100_ms(tmp_path, monkeypatch):
    synced = threading.Event()
    calls = []
    real_fsync = os.fsync

    def fsync(fd):
        calls.append(time.monotonic())
        synced.set()
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    writer = HistoryWriter(tmp_path / "history.jsonl").open()
    try:
        assert calls == []  # nothing to sync yet
        appended = time.monotonic()
        writer.append(0, "invoke", "poll")
        assert synced.wait(timeout=5), "no fsync after an append"
        assert calls[0] - appended < 0.1
    finally:
        writer.close()


def test_appends_in_a_burst_share_fsyncs_and_close_syncs_the_rest(tmp_path, monkeypatch):
    calls = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd)))
    writer = HistoryWriter(tmp_path / "history.jsonl").open()
    for n in range(200):
        writer.append(n, "invoke", "poll")
    before_close = len(calls)
    writer.close()
    assert before_close < 20  # one per FSYNC_DELAY window, not one per line
    assert len(calls) == before_close + 1  # close syncs what is left
    with pytest.raises(RuntimeError, match="not open"):
        writer.append(0, "invoke", "poll")


def test_the_flusher_thread_is_stopped_by_close(tmp_path):
    writer = HistoryWriter(tmp_path / "history.jsonl").open()
    flusher = writer._flusher
    assert flusher is not None and flusher.is_alive()
    writer.close()
    assert not flusher.is_alive()


def test_times_count_from_the_given_start_and_indices_continue_an_existing_file(tmp_path):
    path = tmp_path / "history.jsonl"
    start = time.monotonic_ns() - 5_000_000_000
    with HistoryWriter(path, start_ns=start) as writer:
        first = writer.append(0, "invoke", "poll")
    assert first["index"] == 0 and first["time"] >= 5_000_000_000
    with HistoryWriter(path, start_ns=start) as writer:
        second = writer.append(0, "ok", "poll", {"records": []}, note="x")
    assert second["index"] == 1 and second["note"] == "x"
    assert [orjson.loads(line)["index"] for line in path.read_bytes().splitlines()] == [0, 1]


def test_the_recorder_repeats_the_invoke_value_and_refuses_misuse(tmp_path):
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as writer:
        recorder = Recorder(writer)
        handle = recorder.invoke(3, "send", send_value(3, 1))
        with pytest.raises(RuntimeError, match="still pending"):
            recorder.invoke(3, "poll")
        recorder.complete(handle, "info", error="timed out")
        with pytest.raises(RuntimeError, match="no pending op"):
            recorder.complete(handle, "ok")
        with pytest.raises(ValueError, match="ok, fail or info"):
            recorder.complete(recorder.invoke(4, "poll"), "invoke")
        recorder.nemesis("start-partition", {"grudge": {"n1": ["n2"]}})
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert lines[1] == {"index": 1, "time": lines[1]["time"], "process": 3, "type": "info",
                        "f": "send", "value": send_value(3, 1), "error": "timed out"}
    assert lines[-1]["process"] == "nemesis" and lines[-1]["type"] == "info"


WRITER_SCRIPT = """
import sys
from fencepost.harness.rundir.history import HistoryWriter, Recorder
with HistoryWriter(sys.argv[1]) as writer:
    recorder = Recorder(writer)
    n = 0
    while True:
        value = {"topic": "fp", "partition": n % 3, "value": f"{n % 4}-{n}" + "x" * (n % 50)}
        handle = recorder.invoke(n % 4, "send", value)
        recorder.complete(handle, "ok", {**value, "offset": n, "leader_epoch": 1})
        n += 1
"""


@pytest.mark.integration
def test_a_writer_killed_with_sigkill_leaves_a_readable_history(tmp_path):
    path = tmp_path / "history.jsonl"
    process = subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT, str(path)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not path.exists() or path.stat().st_size < 400_000):
            time.sleep(0.02)
            assert process.poll() is None, "the writer process died on its own"
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    problems = Problems()
    ops = list(iter_history(path, problems))
    assert problems.errors == []
    assert len(problems.warnings) <= 1
    assert len(ops) > 1000
    assert [op.index for op in ops] == list(range(len(ops)))


def test_fsync_failures_are_reported_by_the_next_append(tmp_path, monkeypatch):
    failed = threading.Event()

    def fsync(fd):
        failed.set()
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "fsync", fsync)
    writer = HistoryWriter(tmp_path / "history.jsonl").open()
    writer.append(0, "invoke", "poll")
    assert failed.wait(timeout=5)
    writer._flusher.join(timeout=5)
    with pytest.raises(OSError, match="fsync of .*history.jsonl failed"):
        writer.append(0, "ok", "poll")
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    writer.close()


def test_the_module_says_the_flusher_is_its_thread():
    assert "flusher" in history.__doc__ and "close()" in history.__doc__


def test_appending_to_a_file_with_a_torn_last_line_cuts_it_off(tmp_path):
    path = tmp_path / "history.jsonl"
    whole = orjson.dumps({"index": 0, "time": 1, "process": 0, "type": "invoke", "f": "poll"})
    path.write_bytes(whole + b"\n" + b'{"index": 1, "ti')
    with HistoryWriter(path) as writer:
        assert writer.append(0, "ok", "poll", {"records": []})["index"] == 1
    problems = Problems()
    assert [op.index for op in iter_history(path, problems)] == [0, 1]
    assert problems.errors == [] and problems.warnings == []


def test_without_a_problems_collector_the_reader_logs(tmp_path, caplog):
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"nonsense\n" + orjson.dumps({"index": 1, "time": 1, "process": 0,
                                                   "type": "invoke", "f": "poll"}) + b"\n")
    with caplog.at_level("WARNING", logger="fencepost.history"):
        assert [op.index for op in iter_history(path)] == [1]
    assert [r.levelname for r in caplog.records] == ["ERROR"]
    assert f"{path}:1: not valid JSON" in caplog.records[0].getMessage()
