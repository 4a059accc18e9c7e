"""`fencepost trace` (harness/report/trace.py, harness/report/trace_page.py): a value or an
offset followed through a small run directory written line by line, so every event
and every final record is known; the terminal output, the page, and bad input."""
from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest

from fencepost.harness.errors import BadInput
from fencepost.harness.report.trace import Target, parse_offset, trace_run
from fencepost.harness.report.trace_page import render_trace, write_trace_page
from tests.support.paths import ROOT
from tests.support.synth.run import write_run

S = 1_000_000_000


def _line(index: int, t: float, process, type_: str, f: str, value=None, error=None) -> dict:
    line = {"index": index, "time": int(t * S), "process": process, "type": type_, "f": f}
    if value is not None:
        line["value"] = value
    if error is not None:
        line["error"] = error
    return line


def _send(value: str, **more) -> dict:
    return {"topic": "fp", "partition": 0, "value": value, **more}


HISTORY = [
    _line(0, 1.0, "nemesis", "invoke", "pause", {"target": "one"}),
    _line(1, 1.001, "nemesis", "info", "pause", {"target": "one", "nodes": ["n1"]}),
    _line(2, 2.0, 0, "invoke", "send", _send("a")),
    _line(3, 2.0005, 1000, "invoke", "poll"),
    _line(4, 2.01, 0, "ok", "send", _send("a", offset=5, leader_epoch=1)),
    _line(5, 2.02, 1000, "ok", "poll", {"records": [
        {"topic": "fp", "partition": 0, "offset": 4, "value": "z", "leader_epoch": 1},
        {"topic": "fp", "partition": 0, "offset": 5, "value": "a", "leader_epoch": 1}]}),
    _line(6, 3.0, "nemesis", "invoke", "kill", {"target": "one"}),
    _line(7, 3.01, "nemesis", "info", "kill", {"target": "one", "nodes": ["n1"]}),
    _line(8, 4.0, 1, "invoke", "send", _send("b")),
    _line(9, 4.01, 1, "ok", "send", _send("b", offset=5, leader_epoch=2)),
    _line(10, 5.0, 2, "invoke", "send", _send("c")),
    _line(11, 5.5, 3, "invoke", "send", _send("d")),
    _line(12, 5.6, 3, "info", "send", _send("d"), error="timed out"),
]
FINAL = [
    {"kind": "read", "topic": "fp", "partition": 0, "offset": 4, "value": "z"},
    {"kind": "read", "topic": "fp", "partition": 0, "offset": 5, "value": "b"},
    {"kind": "read", "topic": "fp", "partition": 0, "offset": 6, "value": "d"},
    {"kind": "read-state", "topic": "fp", "partition": 0, "complete": True},
    {"kind": "replica", "topic": "fp", "partition": 0, "node": "n1", "offset": 5, "value": "a"},
    {"kind": "replica-state", "topic": "fp", "partition": 0, "node": "n1", "log_end_offset": 6,
     "high_watermark": 6, "leader_epoch": 1, "epochs": [[0, 0], [1, 3]]},
    {"kind": "replica", "topic": "fp", "partition": 0, "node": "n2", "offset": 5, "value": "b"},
    {"kind": "replica", "topic": "fp", "partition": 0, "node": "n2", "offset": 6, "value": "d"},
    {"kind": "replica-state", "topic": "fp", "partition": 0, "node": "n2", "log_end_offset": 7,
     "high_watermark": 5, "leader_epoch": 2, "epochs": [[0, 0], [1, 3], [2, 5]]},
]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", HISTORY, FINAL, {"name": "trace-test"})


def _events(trace) -> list[tuple]:
    return [(round(e.time / S, 4), e.lines, e.process, e.kind) for e in trace.events]


def test_a_value_is_followed_from_its_send_through_polls_to_each_replica(run_dir):
    trace = trace_run(run_dir, Target(value="a"))
    assert _events(trace) == [(1.0, (0, 1), "nemesis", "nemesis"), (2.0, (2,), "0", "invoke"),
                              (2.01, (2, 4), "0", "ok"), (2.02, (3, 5), "1000", "poll"),
                              (3.0, (6, 7), "nemesis", "nemesis")]
    ack, poll = trace.events[2], trace.events[3]
    assert "acked at fp-0 offset 5, leader epoch 1" in ack.what and "10.000 ms after its invoke" in ack.what
    assert poll.place == ("fp", 0, 5) and poll.epoch == 1 and "poll returned it" in poll.what
    assert "pause n1" in trace.events[0].what and "kill n1" in trace.events[4].what
    (final,) = trace.finals
    assert final.place == ("fp", 0, 5) and final.read == "b" and final.read_complete is True
    n1, n2 = final.replicas
    assert (n1.node, n1.value, n1.epoch, n1.high_watermark, n1.log_end_offset) == ("n1", "a", 1, 6, 6)
    assert (n2.node, n2.value, n2.epoch, n2.high_watermark, n2.log_end_offset) == ("n2", "b", 2, 5, 7)
    assert trace.held_at == []  # overwritten: the final read holds it nowhere


def test_the_nemesis_shown_is_the_one_around_the_value(run_dir):
    trace = trace_run(run_dir, Target(value="a"), around_s=0.5)
    assert [e.kind for e in trace.events] == ["invoke", "ok", "poll"]


def test_an_offset_is_followed_through_every_value_seen_there(run_dir):
    trace = trace_run(run_dir, parse_offset("fp/0/5"), around_s=0)
    assert _events(trace) == [(2.0, (2,), "0", "invoke"), (2.01, (2, 4), "0", "ok"),
                              (2.02, (3, 5), "1000", "poll"), (3.0, (6, 7), "nemesis", "nemesis"),
                              (4.0, (8,), "1", "invoke"), (4.01, (8, 9), "1", "ok")]
    assert "'a'" in trace.events[1].what and "'b'" in trace.events[5].what
    assert [f.place for f in trace.finals] == [("fp", 0, 5)]


def test_a_send_never_completed_and_one_found_only_in_the_final_read(run_dir):
    never = trace_run(run_dir, Target(value="c"))
    assert [e.kind for e in never.events if e.kind != "nemesis"] == ["invoke"]
    assert "never completed" in never.events[-1].what and never.finals == []
    info = trace_run(run_dir, Target(value="d"))  # its ack was lost, but it landed at offset 6
    assert [e.kind for e in info.events if e.kind != "nemesis"] == ["invoke", "info"]
    assert "timed out" in info.events[-1].what
    assert info.held_at == [("fp", 0, 6)]
    (final,) = info.finals
    assert final.read == "d" and [(r.node, r.value) for r in final.replicas] == [("n1", None), ("n2", "d")]


def test_bad_input_says_what_is_wrong_and_what_to_give(run_dir, tmp_path):
    with pytest.raises(BadInput, match=r"value 'nope' is in no send, poll or final record .*e\.g\. 'a'"):
        trace_run(run_dir, Target(value="nope"))
    with pytest.raises(BadInput, match="offset fp/0/99: no send was acked there"):
        trace_run(run_dir, parse_offset("fp/0/99"))
    with pytest.raises(BadInput, match="is not a directory"):
        trace_run(tmp_path / "missing", Target(value="a"))
    with pytest.raises(BadInput, match="has no history.jsonl"):
        trace_run(tmp_path, Target(value="a"))
    for bad in ("fp/0", "fp/x/1", "fp/0/-1", "/0/1"):
        with pytest.raises(BadInput, match="write TOPIC/PARTITION/OFFSET"):
            parse_offset(bad)
    assert parse_offset("my.topic-1/2/3") == Target(topic="my.topic-1", partition=2, offset=3)


def test_the_page_links_each_line_into_the_history_viewer_and_back_to_the_report(run_dir):
    trace = trace_run(run_dir, Target(value="a"))
    path = write_trace_page(run_dir, trace)
    assert path == run_dir / "trace" / "value-a.html"
    html = path.read_text()
    text = unescape(html)
    links = re.findall(r'href="([^"]+)"', html)
    assert "../report.html" in links and "../history.html" in links
    assert {"../history.html#i2", "../history.html#i4", "../history.html#i5", "../history.html#i0"} <= set(links)
    assert "'b' (another value)" in text and "'a' (this value)" in text and "docs/" not in text
    assert "6 (below: committed)" in text and "5 (at or above)" in text
    assert Target(value="a/../x").file_name() == "value-a_.._x~3af570f6ca5a1fdf.html"  # never a path
    assert render_trace(trace, "run").count("<tr") == len(trace.events) + 1 + 4  # + final: head, read, n1, n2


def test_the_command_prints_the_trace_and_refuses_bad_input_with_254(run_dir, tmp_path):
    cli = [sys.executable, "-m", "fencepost.harness.cli", "trace"]
    done = subprocess.run([*cli, str(run_dir), "a", "--html"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"trace of value 'a' in {run_dir}")
    assert re.search(r"2\.010000\s+2-4\s+0\s+send ok: acked at fp-0 offset 5, leader epoch 1", out)
    assert re.search(r"n1\s+'a' \(this value\), leader epoch 1, high watermark 6 \(offset below it", out)
    assert "the final read holds 'a' at: nowhere" in out
    assert f"page: {run_dir / 'trace' / 'value-a.html'}" in out
    for args, message in (([str(tmp_path / "missing"), "a"], "is not a directory"),
                          ([str(run_dir), "--offset", "fp-0-5"], "write TOPIC/PARTITION/OFFSET"),
                          ([str(run_dir), "nope"], "is in no send, poll or final record"),
                          ([str(run_dir)], "give a VALUE"),
                          ([str(run_dir), "a", "--around", "-1"], "not a number of seconds")):
        bad = subprocess.run([*cli, *args], capture_output=True, text=True, cwd=ROOT)
        assert bad.returncode == 254 and message in bad.stderr, (args, bad.stderr)
    assert sorted(p.name for p in run_dir.iterdir()) == ["final.jsonl", "history.jsonl", "test.json", "trace"]
