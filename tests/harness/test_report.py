"""The report (harness/report/): nemesis bands, the history viewer's windows, and
whole reports written for real run directories — a synthetic run with a planted
lost write, checked by `check_run`; an empty one; one of failures only; a large one.

The fast set holds the pure parts (bands, windows, links); every test that writes
a report draws with matplotlib and is in the slow set.
"""
from __future__ import annotations

import io
import re
import struct
from html import unescape as html_unescape
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest

from fencepost.harness.check.checking import check_run
from fencepost.harness.errors import BadInput
from fencepost.harness.measures.bands import NemesisOp, nemesis_bands
from fencepost.harness.report.inputs import linked_indices, op_indices
from tests.support.paths import EXAMPLES
from tests.support.report_support import PLOTS, planted_run
from tests.support.synth.generate import GenConfig, generate
from tests.support.synth.run import write_run

MS = 1_000_000


# --- building run directories ------------------------------------------------------------


def _send(process: int, seq: int, t: int, outcome: str) -> list[dict]:
    value = {"topic": "fp", "partition": 0, "value": f"{process}-{seq}"}
    line = {"process": process, "type": outcome, "f": "send", "value": value, "time": t + 5 * MS,
            "error": "broker unreachable"}
    return [{"process": process, "type": "invoke", "f": "send", "value": value, "time": t}, line]


def _numbered(lines: list[dict]) -> list[dict]:
    return [{"index": i, **line} for i, line in enumerate(lines)]


# --- nemesis bands (pure) -----------------------------------------------------------------


def _ops(*specs: tuple) -> list[NemesisOp]:
    return [NemesisOp(i, t * MS, type_, f, value, None) for i, (t, type_, f, value) in enumerate(specs)]


def test_a_kill_lasts_until_its_node_is_started_and_a_partition_until_its_stop():
    grudge = {"n1": ["n2", "n3"]}
    bands = nemesis_bands(_ops(
        (10, "invoke", "kill", {"target": "one"}), (12, "info", "kill", {"target": "one", "nodes": ["n2"]}),
        (20, "invoke", "start-partition", {"target": "one"}),
        (21, "info", "start-partition", {"target": "one", "grudge": grudge}),
        (30, "invoke", "start", {"nodes": ["n2"]}), (33, "info", "start", {"nodes": ["n2"]}),
        (40, "invoke", "stop-partition", {"grudge": grudge}), (41, "info", "stop-partition", {"grudge": grudge}),
    ), end_time=100 * MS)
    assert [(b.kind, b.start // MS, b.end // MS, b.label) for b in bands] == [
        ("kill", 10, 33, "kill n2"), ("partition", 20, 41, "partition n1 x n2,n3")]


def test_heal_closes_every_open_fault_and_a_scenario_keeps_its_steps():
    bands = nemesis_bands(_ops(
        (5, "invoke", "leader-bounce", {"topic": "fp", "partition": None}),
        (6, "invoke", "pause", {"nodes": ["n1"], "scenario": "leader-bounce"}),
        (7, "info", "pause", {"nodes": ["n1"], "scenario": "leader-bounce"}),
        (8, "invoke", "await-leader", {"partition": 1}), (9, "info", "await-leader", {"partition": 1}),
        (10, "invoke", "resume", {"nodes": ["n1"], "scenario": "leader-bounce"}),
        (11, "info", "resume", {"nodes": ["n1"], "scenario": "leader-bounce"}),
        (12, "info", "leader-bounce", {"topic": "fp", "partition": 1}),
        (20, "invoke", "pause", {"target": "majority"}),
        (21, "info", "pause", {"target": "majority", "nodes": ["n2", "n3"]}),
        (50, "invoke", "heal", None), (55, "info", "heal", {"done": ["resumed n2", "resumed n3"]}),
    ), end_time=100 * MS)
    got = [(b.kind, b.start // MS, b.end // MS, b.scenario) for b in bands]
    assert got == [("scenario", 5, 12, "leader-bounce"), ("pause", 6, 11, "leader-bounce"),
                   ("pause", 20, 55, None), ("heal", 50, 55, None)]
    assert bands[0].label == "leader-bounce fp-1"  # the info names the partition chosen


def test_a_fault_never_stopped_lasts_to_the_end_unless_its_node_is_hit_again():
    # A history that records kill-and-restart as one action (tests/support/synth does): the
    # second kill of n1 ends the first at its own info; the last lasts to the end.
    bands = nemesis_bands(_ops(
        (10, "invoke", "kill", {"nodes": ["n1"]}), (11, "info", "kill", {"nodes": ["n1"]}),
        (30, "invoke", "kill", {"nodes": ["n1"]}), (31, "info", "kill", {"nodes": ["n1"]}),
        (40, "invoke", "pause", {"target": "one"}),  # the run was killed before the info
    ), end_time=90 * MS)
    assert [(b.kind, b.start // MS, b.end // MS) for b in bands] == [
        ("kill", 10, 11), ("kill", 30, 90), ("pause", 40, 90)]


def test_a_kill_stop_or_power_cut_of_a_paused_node_ends_its_pause():
    # As an hw leader-bounce run records it (nemesis/scenarios.py): n3 paused, n1
    # killed and restarted, then n3 killed (never resumed) and restarted later.
    lb = {"scenario": "leader-bounce"}
    bands = nemesis_bands(_ops(
        (1667, "invoke", "pause", {"nodes": ["n3"], **lb}), (1668, "info", "pause", {"nodes": ["n3"], **lb}),
        (1668, "invoke", "kill", {"nodes": ["n1"], **lb}), (1678, "info", "kill", {"nodes": ["n1"], **lb}),
        (1678, "invoke", "start", {"nodes": ["n1"], **lb}), (1987, "info", "start", {"nodes": ["n1"], **lb}),
        (2987, "invoke", "kill", {"nodes": ["n3"], **lb}), (2998, "info", "kill", {"nodes": ["n3"], **lb}),
        (4722, "invoke", "start", {"nodes": ["n3"], **lb}), (5181, "info", "start", {"nodes": ["n3"], **lb}),
    ), end_time=22_733 * MS)
    assert [(b.kind, b.start // MS, b.end // MS, b.label) for b in bands] == [
        ("pause", 1667, 2998, "pause n3"), ("kill", 1668, 1987, "kill n1"), ("kill", 2987, 5181, "kill n3")]
    # A clean stop and a power cut end a pause too; a pause of two nodes goes on for
    # the one not hit.
    bands = nemesis_bands(_ops(
        (10, "invoke", "pause", {"nodes": ["n1", "n2"]}), (11, "info", "pause", {"nodes": ["n1", "n2"]}),
        (20, "invoke", "stop", {"nodes": ["n2"]}), (22, "info", "stop", {"nodes": ["n2"]}),
        (30, "invoke", "power-cut", {"nodes": ["n1"]}), (31, "info", "power-cut", {"nodes": ["n1"]}),
        (40, "invoke", "pause", {"nodes": ["n3"]}), (41, "info", "pause", {"nodes": ["n3"]}),
        (50, "invoke", "resume", {"nodes": ["n3"]}), (51, "info", "resume", {"nodes": ["n3"]}),
    ), end_time=90 * MS)
    assert [(b.kind, b.start // MS, b.end // MS, b.label) for b in bands] == [
        ("pause", 10, 22, "pause n1,n2"), ("stop", 20, 90, "stop n2"), ("pause", 22, 31, "pause n1"),
        ("power-cut", 30, 90, "power-cut n1"), ("pause", 40, 51, "pause n3")]


def test_a_fault_that_hit_nothing_makes_no_band():
    skipped = {"target": "leader", "topic": "fp", "partition": 2, "leader": None,
               "skipped": "fp-2 had no leader within 6s"}
    bands = nemesis_bands(_ops(
        (10, "invoke", "pause", {"target": "leader"}), (16, "info", "pause", {**skipped, "nodes": []}),
        (20, "invoke", "start-partition", {"target": "leader"}),
        (26, "info", "start-partition", skipped),
        (30, "invoke", "kill", {"target": "one"}), (31, "info", "kill", {"target": "one", "nodes": ["n2"]}),
    ), end_time=90 * MS)
    assert [(b.kind, b.start // MS, b.end // MS) for b in bands] == [("kill", 30, 90)]


def test_no_nemesis_ops_no_bands_and_unknown_actions_get_their_own_kind():
    assert nemesis_bands([], end_time=10) == []
    bands = nemesis_bands(_ops((1, "invoke", "clock-skew", {}), (2, "info", "clock-skew", {})), 10 * MS)
    assert [(b.kind, b.start // MS, b.end // MS) for b in bands] == [("clock-skew", 1, 2)]


# --- links and windows (pure) -------------------------------------------------------------


def test_example_ops_name_history_indices_in_pairs_and_in_attached_lines():
    assert op_indices([[4, 5], [12, 13]]) == [4, 5, 12, 13]
    assert op_indices([{"invoke_index": 7, "complete_index": 9}, 7]) == [7, 9]
    results = {"anomalies": {"lost-write": [{"ops": [[4, 5]], "history": [{"index": 6}]}],
                             "bad": "not a list"}}
    assert linked_indices(results) == {4, 5, 6}
    assert linked_indices(None) == set()


def embedded_history(page: str) -> dict:
    """The history a viewer page (history.html, timeline.html) embeds, decoded as its
    script decodes it (harness/report/history_data.py): meta, absolute columns, texts."""
    import base64
    import gzip

    import numpy as np

    def tag(name: str) -> str | None:
        found = re.search(rf'<script type="[^"]+" id="history-{name}">(.*?)</script>', page, re.S)
        return found.group(1) if found else None

    meta = orjson.loads(tag("meta").replace("<\\/", "</"))
    raw = gzip.decompress(base64.b64decode(tag("cols")))
    n = meta["rows"]
    cols = {name: np.frombuffer(raw, dtype="<i4", count=n, offset=k * 4 * n).astype(np.int64)
            for k, name in enumerate(meta["columns"])}
    cols["line"] = np.cumsum(cols["line"])
    cols["time_us"] = np.cumsum(cols["dt"])
    text = tag("text")
    cols["text"] = gzip.decompress(base64.b64decode(text)).decode().split("\n")[:n] if text else None
    return {"meta": meta, **cols}


def test_the_viewer_embeds_every_line_with_its_pair_partitions_and_errors(tmp_path):
    """Fast: the data of history.html (no plots drawn), for a generated run with nemesis
    ops, failed sends, polls of several partitions and a line that cannot be read."""
    from fencepost.harness.errors import Problems
    from fencepost.harness.measures.bands import nemesis_bands, pair_actions
    from fencepost.harness.report.history_data import HistoryColumns
    from fencepost.harness.report.history_viewer import write_history_page
    from fencepost.harness.report.scan import scan_history
    from fencepost.harness.rundir.history import iter_history

    run = generate(GenConfig(seed=5, lines=2_000, nemesis_rate=0.03, p_fail=0.1, dangling=True))
    run_dir = run.write(tmp_path / "run")
    lines = (run_dir / "history.jsonl").read_bytes().splitlines(keepends=True)
    lines[40] = b'{"index": 40, "broken\n'  # unreadable: no row, the others keep their index
    (run_dir / "history.jsonl").write_bytes(b"".join(lines))
    columns = HistoryColumns()
    scan = scan_history(run_dir, observers=[columns])
    blobs = columns.finish(scan, {7, 8}, run_dir.name)
    page = write_history_page(run_dir, blobs).read_text()
    data = embedded_history(page)
    ops = {op.index: op for op in iter_history(run_dir / "history.jsonl", Problems())}
    meta = data["meta"]
    assert meta["rows"] == len(ops) == len(lines) - 1 and meta["lines"] == len(lines) and meta["unreadable"] == 1
    assert data["line"].tolist() == sorted(ops) and 40 not in data["line"].tolist()
    assert meta["linked"] == [7, 8]
    for row, index in enumerate(data["line"].tolist()):
        op = ops[index]
        assert meta["procs"][data["proc"][row]] == str(op.process)
        assert meta["types"][data["type"][row]] == op.type and meta["fs"][data["f"][row]] == op.f
        assert abs(data["time_us"][row] * 1000 - op.time) <= 500
        assert data["text"][row] == ("" if op.value is None else orjson.dumps(op.value).decode())
        assert (meta["errors"][data["err"][row]] if data["err"][row] >= 0 else None) == op.error
        if op.f == "send":
            assert f"{op.value['topic']}-{op.value['partition']}" in meta["parts"][data["part"][row]]
    # Pairs: each client completion with its invoke (the scan's pairing), both ways; the
    # nemesis's invoke/info pairs too; a poll's invoke carries the partitions its completion read.
    pair = data["pair"]
    row_of = {index: row for row, index in enumerate(data["line"].tolist())}
    done = scan.complete_index >= 0
    for invoke, complete in zip(scan.invoke_index[done].tolist(), scan.complete_index[done].tolist()):
        a, b = row_of[invoke], row_of[complete]
        assert (pair[a], pair[b]) == (b - a, a - b)
        assert data["part"][a] == data["part"][b]
    never = scan.invoke_index[~done].tolist()
    assert never and all(pair[row_of[i]] == 0 for i in never)
    nemesis_pairs = [(row, row + pair[row]) for row in range(meta["rows"])
                     if meta["procs"][data["proc"][row]] == "nemesis" and pair[row] > 0]
    answered = [a for a in pair_actions(scan.nemesis, scan.last_time) if a.invoke_index is not None
                and a.info_index is not None]
    assert nemesis_pairs == [(row_of[a.invoke_index], row_of[a.info_index]) for a in answered]
    polls = [row for row in range(meta["rows"]) if meta["fs"][data["f"][row]] == "poll"
             and meta["types"][data["type"][row]] == "invoke" and pair[row] > 0]
    with_records = [row for row in polls if data["text"][row + pair[row]].startswith('{"records":[{')]
    assert with_records and all(data["part"][row] >= 0 for row in with_records)
    assert nemesis_bands(scan.nemesis, scan.last_time)  # the run has faults to pair


# --- whole reports (slow: matplotlib) -----------------------------------------------------


class _Page(HTMLParser):
    """Ids, links, images and the text of a page."""

    def __init__(self, text: str):
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.images: list[str] = []
        self.external: list[str] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag in ("link", "script") and (attrs.get("href") or attrs.get("src")):
            self.external.append(attrs.get("href") or attrs.get("src"))

    def handle_data(self, data):
        self.text.append(data)

    def words(self) -> str:
        """The page's text, whitespace collapsed."""
        return re.sub(r"\s+", " ", " ".join(self.text))


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def planted_report(tmp_path_factory) -> Path:
    from fencepost.harness.report import write_report

    run_dir = planted_run(tmp_path_factory.mktemp("results"))
    assert write_report(run_dir) == run_dir / "report.html"
    return run_dir


@pytest.mark.integration
@pytest.mark.slow
def test_the_report_shows_verdict_summary_and_the_anomaly_with_links_into_the_history(planted_report):
    run_dir = planted_report
    report_html = (run_dir / "report.html").read_text()
    report = _Page(report_html)
    text = report.words()
    assert 'class="verdict invalid"' in report_html and "INVALID" in text
    row = re.search(r'<tr class="anomaly" data-anomaly="lost-write">(.*?)</tr>', report_html, re.S)
    assert row, "no lost-write row in the anomaly table"
    assert re.search(r'<td class="num count">1</td>', row.group(1))
    assert "makes the run invalid" in row.group(1)
    results = orjson.loads((run_dir / "results.json").read_bytes())
    example_ops = op_indices(results["anomalies"]["lost-write"][0]["ops"])
    history = embedded_history((run_dir / "history.html").read_text())
    for index in example_ops:
        assert f"history.html#i{index}" in re.findall(r'href="([^"]+)"', row.group(1))
    for link in report.links:  # every history link names a line the viewer holds
        if link.startswith("history.html#i"):
            assert int(link.split("#i")[1]) in history["line"].tolist()
    for setting in ("synth-lost-write", "own", "kip320", "60.0 s", "kill,pause,partition",
                    "the own broker, truncation kip320 (KIP-320 leader-epoch fencing)", "librdkafka 2.16.0"):
        assert setting in text
    counts = results["stats"]["history"]
    assert f"{counts['lines']:,} lines" in text
    assert re.search(r"[\d,]+ client ops: [\d,]+ ok, [\d,]+ fail, [\d,]+ info", text)
    assert '"name": "synth-lost-write"' in text  # the config, pretty
    for node in ("n1", "n2", "n3"):
        assert f"nodes/{node}/broker.log" in report.links
    assert any(link.startswith("linear/") for link in report.links)  # the counterexample page
    assert re.search(r"[\d,]+ fault band\(s\), as the plots shade them", text)
    assert re.search(r"kill n\d", text)  # a fault with its node, in the table


@pytest.mark.integration
@pytest.mark.slow
def test_the_report_is_self_contained_and_its_plots_are_sane_pngs(planted_report):
    run_dir = planted_report
    report = _Page((run_dir / "report.html").read_text())
    assert report.external == []
    assert len(report.images) == len(PLOTS)
    assert all(src.startswith("data:image/png;base64,") for src in report.images)
    for link in report.links:
        assert not re.match(r"^[a-z]+://", link) and not link.startswith("/"), link
    for name in PLOTS:
        width, height = _png_size(run_dir / "plots" / f"{name}.png")
        assert 600 <= width <= 2000 and 250 <= height <= 2000, (name, width, height)
        assert (run_dir / "plots" / f"{name}.png").stat().st_size > 10_000


@pytest.mark.integration
@pytest.mark.slow
def test_the_report_reads_in_order_defines_its_terms_and_its_links_all_land(planted_report):
    """Verdict, anomalies, plots, then the run and its configuration; each anomaly with
    its definition; no page of the run points at docs a downloaded copy lacks; every
    trace, history and counterexample link has its target, and those pages link back."""
    from fencepost.checkers.anomaly import DEFINITIONS

    run_dir = planted_report
    report_html = (run_dir / "report.html").read_text()
    text = _Page(report_html).words()
    order = [text.index(heading) for heading in ("verdict:", "Anomalies", "Plots", "Faults", "The run",
                                                  "Configuration", "Files")]
    assert order == sorted(order), order
    for name in re.findall(r'<tr class="anomaly" data-anomaly="([^"]+)">', report_html):
        assert html_unescape(DEFINITIONS[name]) in text
    pages = [run_dir / name for name in ("report.html", "history.html", "timeline.html")]
    pages += sorted((run_dir / "trace").glob("*.html")) + sorted((run_dir / "linear").glob("*.html"))
    for page in pages:
        words = _Page(page.read_text()).words()
        assert "docs/" not in words and ".md" not in words and "DESIGN" not in words, page
    examples = re.findall(r'<div class="example">(.*?)</div>', report_html, re.S)
    assert examples and all('class="trace"' in example for example in examples)  # every example traced
    traces = [link for link in _Page(report_html).links if link.startswith("trace/")]
    assert traces and all((run_dir / link).is_file() for link in traces)
    for link in set(traces):
        trace = _Page((run_dir / link).read_text())
        assert "../report.html" in trace.links and any(t.startswith("../history.html#i") for t in trace.links)
    (counterexample,) = (run_dir / "linear").glob("*.html")
    links = _Page(counterexample.read_text()).links
    assert "../report.html" in links and any(link.startswith("../history.html#i") for link in links)
    assert (run_dir / "timeline.html").is_file() and 'id="history-cols"' in (run_dir / "timeline.html").read_text()


@pytest.mark.integration
@pytest.mark.slow
def test_an_empty_unchecked_run_still_gets_a_report_that_says_so(tmp_path):
    from fencepost.harness.report import write_report

    (tmp_path / "history.jsonl").write_bytes(b"")
    report_html = write_report(tmp_path).read_text()
    text = _Page(report_html).words()
    assert 'data-verdict="unknown"' in report_html
    assert "not checked" in text and "fencepost check" in text
    assert "0 client ops" in text and "No test.json" in text
    for name in PLOTS:
        _png_size(tmp_path / "plots" / f"{name}.png")
    assert "The history is empty" in (tmp_path / "history.html").read_text()
    assert embedded_history((tmp_path / "history.html").read_text())["meta"]["rows"] == 0


@pytest.mark.integration
@pytest.mark.slow
def test_a_run_of_failures_only_without_nemesis_or_final_reads(tmp_path):
    from fencepost.harness.report import write_report

    lines = [line for p in range(3) for seq in range(20) for line in _send(p, seq, (p * 20 + seq) * 10 * MS, "fail")]
    write_run(tmp_path, _numbered(lines), None, {"name": "failing", "nemesis": {"faults": "none"}})
    assert check_run(tmp_path, out=io.StringIO()).valid == "unknown"
    report_html = write_report(tmp_path).read_text()
    text = _Page(report_html).words()
    assert "60 client ops: 0 ok, 60 fail, 0 info" in text
    assert "0 nemesis ops" in text and "nemesis none" in text
    assert "final.jsonl is missing" in text  # why unknown
    for name in PLOTS:
        _png_size(tmp_path / "plots" / f"{name}.png")


@pytest.mark.integration
@pytest.mark.slow
def test_odd_test_json_shapes_are_shown_as_far_as_they_go(tmp_path):
    from fencepost.harness.report import write_report

    write_run(tmp_path, _numbered(_send(0, 1, 0, "info")), None,
              {"name": "old-shape", "topic": "fp", "partitions": 1, "nemesis": "kill"})
    text = _Page(write_report(tmp_path).read_text()).words()
    assert "fp, 1 partition(s)" in text and "kill" in text
    (tmp_path / "test.json").write_text("{not json")
    text = _Page(write_report(tmp_path).read_text()).words()
    assert "test.json could not be read" in text


@pytest.mark.slow
def test_a_missing_run_directory_is_an_error_that_says_what_to_give(tmp_path):
    from fencepost.harness.report import write_report

    with pytest.raises(BadInput, match="is not a directory: give a run directory"):
        write_report(tmp_path / "nope")


@pytest.mark.integration
@pytest.mark.slow
def test_a_million_line_history_is_reported(tmp_path):
    """1,000,000 history lines (about 490,000 ops); written in about 9 s on the
    2-CPU development machine (docs/REPORT.md). No time is asserted."""
    from fencepost.harness.report import write_report
    from tests.support.synth.generate import generate_to_dir

    generate_to_dir(tmp_path, GenConfig(seed=1, lines=1_000_000, consumer_share=0.12,
                                        p_reassign=0.001, p_crash=0.001))
    report_html = write_report(tmp_path).read_text()
    assert "1,000,014 lines" in report_html
    history = embedded_history((tmp_path / "history.html").read_text())
    assert history["meta"]["rows"] == 1_000_014 and history["line"][-1] == 1_000_013  # every line
    assert (tmp_path / "history.html").stat().st_size < 40_000_000
    for name in PLOTS:
        _png_size(tmp_path / "plots" / f"{name}.png")


@pytest.mark.slow  # imports matplotlib
def test_bucketed_quantiles_summed_steps_merged_bands_and_round_buckets():
    import numpy as np

    from fencepost.harness.report.figures import merge_intervals
    from fencepost.harness.report.plots import bucket_quantiles, bucket_width, sum_steps

    buckets, values = bucket_quantiles(np.array([0, 0, 0, 0, 2]), np.array([4.0, 1.0, 3.0, 2.0, 9.0]),
                                       [0.5, 1.0])
    assert buckets.tolist() == [0, 2] and values.tolist() == [[2.0, 4.0], [9.0, 9.0]]
    times, total = sum_steps([np.array([[10, 1], [30, 0]]), np.array([[20, 5]])])
    assert times.tolist() == [10, 20, 30] and total.tolist() == [1, 6, 5]
    assert merge_intervals([(5, 6), (0, 2), (3, 4), (10, 12)], gap=1) == [(0, 6), (10, 12)]
    assert bucket_width(60 * 10**9) == 1 * 10**9  # 60 s: 1 s buckets
    assert bucket_width(200 * 10**9) == 2 * 10**9
    assert bucket_width(0) == 1


@pytest.mark.integration
@pytest.mark.slow
def test_fencepost_report_writes_the_report_of_a_checked_run_and_refuses_a_missing_dir(tmp_path):
    import shutil
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    shutil.copytree(EXAMPLES / "kip101-scenario-1", run_dir)
    cli = [sys.executable, "-m", "fencepost.harness.cli"]
    assert subprocess.run([*cli, "check", str(run_dir)], capture_output=True).returncode == 1
    done = subprocess.run([*cli, "report", str(run_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    page = (run_dir / "report.html").read_text()
    assert "INVALID" in page and "lost-write" in page
    missing = subprocess.run([*cli, "report", str(tmp_path / "nope")], capture_output=True, text=True)
    assert missing.returncode == 254 and "is not a directory" in missing.stderr


def test_every_kind_of_anomaly_example_names_something_to_trace():
    from fencepost.harness.report.inputs import example_targets
    from fencepost.harness.report.trace import Target

    fp = {"topic": "fp", "partition": 0}
    assert example_targets({**fp, "value": "a", "offset": 5}) == [Target("a"), Target(None, "fp", 0, 5)]
    assert example_targets({**fp, "offset": 5, "values": ["a", "b"]}) == [
        Target("a"), Target("b"), Target(None, "fp", 0, 5)]  # inconsistent-offsets
    assert example_targets({**fp, "value": "a", "offsets": [3, 9]})[-1] == Target(None, "fp", 0, 3)  # duplicate
    assert example_targets({**fp, "previous_last_offset": 7, "first_offset": 4}) == [Target(None, "fp", 0, 4)]
    assert example_targets({**fp, "previous_last_offset": 2, "first_offset": 6, "skipped": [3, 4]}) == [
        Target(None, "fp", 0, 6)]
    assert example_targets({**fp, "counterexample": [{"value": "a", "offset": 1}, {"value": "b"},
                                                      {"value": "c"}, {"value": "d"}]}) == [
        Target("a"), Target("b"), Target("c")]
    assert example_targets({"value": 3, "offset": "x"}) == []
