"""What a person sees in a browser: Debian's Chromium, headless, driven over the DevTools
pipe (tests/support/browser.py) as a person would — open a page, type into the search box, move
the mouse over a bar — on the report of a real-looking run (a generated history with a
planted lost write, checked by `check_run`, reported by `write_report`), the history
viewer, the timeline, and the run list `fencepost serve` serves. The assertions are on
what is drawn: text, geometry (a row's height, a column's width), a screenshot's pixels.

One browser at a time (the machine is shared). The million-line history prints its
load and search times; the bounds asserted are generous on purpose.
"""
from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import orjson
import pytest

from tests.support.browser import Browser
from tests.support.cli import FENCEPOST
from tests.support.paths import ROOT
from tests.support.report_support import PLOTS, planted_run

pytestmark = [pytest.mark.integration, pytest.mark.slow]

INVALID_RED = (0xC6, 0x28, 0x28)  # harness/report/page.py: .invalid
VALID_GREEN = (0x2E, 0x7D, 0x32)
UNKNOWN_ORANGE = (0xE6, 0x51, 0x00)
READY = "document.body.dataset.ready === 'yes'"
LONG_ERROR = ("position lost, starting over: _AUTO_OFFSET_RESET: fetch failed due to requested offset not "
              "available on the broker: Broker: Offset out of range (broker 2, offset 1234, log start "
              "offset 0, high watermark 1200) " + "x" * 300)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A results folder with one checked, reported run, served by `fencepost serve`; one
    of its history lines carries a long error, as a fault run's consumer writes."""
    from fencepost.harness.report import write_report

    tmp = tmp_path_factory.mktemp("browser")
    results = tmp / "results"
    run_dir = planted_run(results)
    lines = (run_dir / "history.jsonl").read_bytes().splitlines()
    for n, raw in enumerate(lines):
        line = orjson.loads(raw)
        if line["type"] == "ok" and line["f"] == "poll" and line.get("value", {}).get("records"):
            line["error"] = LONG_ERROR  # (an error on an ok op: the reader keeps it, as it is)
            lines[n] = orjson.dumps(line)
            break
    (run_dir / "history.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    write_report(run_dir)
    with serving(results) as address:
        yield address, run_dir, tmp


@contextmanager
def serving(results):
    """`fencepost serve` of `results` on a free port: yields its address."""
    server = subprocess.Popen([sys.executable, "-c", FENCEPOST, "serve", "--port", "0",
                               "--results", str(results)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        match = re.search(r"at (http://127\.0\.0\.1:\d+/)", server.stdout.readline())
        assert match, "fencepost serve did not print its address"
        yield match.group(1)
    finally:
        os.kill(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        server.stdout.close()


def _text(browser: Browser, selector: str) -> str:
    return browser.js(f"(document.querySelector({orjson.dumps(selector).decode()}) || {{}}).textContent || ''")


def test_the_report_shows_the_verdict_the_anomaly_its_definition_and_plots(served, tmp_path):
    url, run_dir, _ = served
    relative = run_dir.relative_to(run_dir.parent.parent).as_posix()
    with Browser(tmp_path / "profile") as browser:
        browser.open(f"{url}{relative}/report.html", ready="document.body.dataset.imagesChecked === 'yes'")
        assert _text(browser, "span.verdict.invalid") == "INVALID"
        row = 'tr.anomaly[data-anomaly="lost-write"]'
        cells = browser.js(f"Array.from(document.querySelectorAll('{row} > td')).map(td => td.innerText)")
        assert cells[0].startswith("lost-write") and "makes the run invalid" in cells[0]
        assert "the final read does not hold" in cells[0]  # its definition, on the page
        assert cells[1] == "1" and "was acked at offset" in cells[2]
        loaded = browser.js("Array.from(document.images).map(i => i.dataset.loaded)")
        assert loaded == ["yes"] * len(PLOTS)
        # Sections in the order a reader needs them, as laid out on the page.
        tops = browser.js("['#verdict', '#anomalies-section', '#plots-section', '#run-section', "
                          "'#config-section'].map(s => document.querySelector(s).getBoundingClientRect().top)")
        assert tops == sorted(tops)
        # The example's op link opens the history viewer at its line, marked, in sight.
        link = browser.js(f"document.querySelector('{row} a.op').getAttribute('href')")
        assert link.startswith("history.html#i")
        index = link.split("#i")[1]
        trace = browser.js(f"document.querySelector('{row} a.trace').getAttribute('href')")
        browser.click(f"{row} a.op")
        browser.wait(f"location.href.endsWith('{link}') && {READY} && document.body.dataset.target === '{index}'")
        target = browser.js("(function () { var tr = document.querySelector('tr.target');"
                            " var r = tr.getBoundingClientRect();"
                            " return [tr.dataset.lines, tr.className, r.top, r.bottom, innerHeight]; })()")
        assert index in target[0].split() and "linked" in target[1]
        assert 0 <= target[2] and target[3] <= target[4]
        # The example's trace link: its page, with a way back.
        browser.open(f"{url}{relative}/{trace}")
        assert _text(browser, "h1").startswith("Trace of value")
        assert browser.js("document.querySelectorAll('#events tr').length") > 2
        assert browser.js("Array.from(document.links).some(a => a.getAttribute('href') === '../report.html')")


def test_the_report_file_renders_alone(served, tmp_path):
    _, run_dir, _ = served
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "report.html").write_bytes((run_dir / "report.html").read_bytes())  # no plots/ beside it
    with Browser(tmp_path / "profile") as browser:
        browser.open((alone / "report.html").as_uri(), ready="document.body.dataset.imagesChecked === 'yes'")
        assert browser.js("Array.from(document.images).map(i => i.dataset.loaded)") == ["yes"] * len(PLOTS)
        assert _text(browser, "span.verdict.invalid") == "INVALID"


def test_a_long_error_leaves_every_column_readable_and_every_row_one_line(served, tmp_path):
    """The bug: one long error in a no-wrap cell widened the table and squeezed the value
    column to a character per line. Now: fixed columns, rows of one height, no sideways
    scrolling, the error cut with an ellipsis and whole on hover and in the row's details."""
    _, run_dir, _ = served
    with Browser(tmp_path / "profile", width=1280, height=900) as browser:
        browser.open((run_dir / "history.html").as_uri(), ready=READY)
        browser.type("#q", "AUTO_OFFSET_RESET")
        browser.press_enter()
        browser.wait("document.getElementById('status').dataset.matches === '1'")
        geometry = browser.js("""(function () {
            var tr = document.querySelector('#rows tbody tr[data-row]');
            var cell = function (sel) { return tr.querySelector(sel).getBoundingClientRect(); };
            var table = document.getElementById('rows').getBoundingClientRect();
            var heights = Array.from(document.querySelectorAll('#rows tbody tr[data-row]'))
                .map(function (r) { return r.getBoundingClientRect().height; });
            return {value: cell('td.value').width, error: cell('td.error').width,
                    row: tr.getBoundingClientRect().height,
                    table: table.width, page: document.documentElement.scrollWidth, window: innerWidth,
                    title: tr.querySelector('td.error').title, heights: heights}; })()""")
        assert geometry["value"] >= 0.3 * geometry["table"], geometry
        assert geometry["row"] <= 24 and set(geometry["heights"]) == {geometry["row"]}, geometry
        assert geometry["page"] <= geometry["window"], geometry
        assert geometry["title"] == LONG_ERROR
        browser.click("#rows tbody tr[data-row] td.value")
        assert LONG_ERROR in browser.js("document.getElementById('detail').innerText")
        # Without the search, every row in sight is one line high too.
        browser.open((run_dir / "history.html").as_uri() + "?", ready=READY)
        heights = browser.js("Array.from(document.querySelectorAll('#rows tbody tr[data-row]'))"
                             ".map(r => r.getBoundingClientRect().height)")
        assert len(heights) > 20 and len(set(heights)) == 1


def test_the_history_viewer_filters_pairs_and_switches_views(served, tmp_path):
    _, run_dir, _ = served
    with Browser(tmp_path / "profile") as browser:
        browser.open((run_dir / "history.html").as_uri(), ready=READY)
        ops = int(browser.js("document.getElementById('status').dataset.matches"))
        lines = browser.js("historyViewer.model.n")
        assert lines == sum(1 for _ in open(run_dir / "history.jsonl")) and ops < lines
        rows = browser.js("Array.from(document.querySelectorAll('#rows tbody tr[data-row]'))"
                          ".map(r => Array.from(r.cells).map(c => c.innerText))")
        paired = [r for r in rows if re.fullmatch(r"\d+–\d+", r[0])]
        assert paired and all(re.search(r"\d (ms|s)$", r[5]) for r in paired)  # each pair with its latency
        browser.js("document.getElementById('f-nemesis').click()")
        browser.wait("document.getElementById('status').textContent.indexOf('match') >= 0")
        procs = browser.js("Array.from(document.querySelectorAll('#rows tbody tr[data-row]'))"
                           ".map(r => r.cells[2].innerText)")
        assert procs and set(procs) == {"nemesis"}
        browser.js("document.getElementById('f-nemesis').click()")
        browser.js("document.querySelector('input[value=lines]').click()")
        browser.wait(f"document.getElementById('status').dataset.matches === '{lines}'")
        assert "all " in _text(browser, "#status") and " lines" in _text(browser, "#status")
        browser.type("#goto", "1000000")
        browser.press_enter()
        browser.wait("document.getElementById('status').textContent.indexOf('is not here') >= 0")
        # A line linked to stays in sight, marked, when the view changes.
        completion = next(r for r in rows if re.fullmatch(r"\d+–\d+", r[0]))[0].split("–")[1]
        browser.open((run_dir / "history.html").as_uri() + f"#i{completion}",
                     ready=f"{READY} && document.body.dataset.target === '{completion}'")
        assert completion in browser.js("document.querySelector('tr.target').dataset.lines").split()
        browser.js("document.querySelector('input[value=lines]').click()")
        browser.wait(f"document.querySelector('tr.target') && "
                     f"document.querySelector('tr.target').dataset.lines === '{completion}'")


def test_the_timeline_shows_an_op_when_hovered_and_opens_it_when_clicked(served, tmp_path):
    _, run_dir, _ = served
    results = orjson.loads((run_dir / "results.json").read_bytes())
    invoke, completion = results["anomalies"]["lost-write"][0]["ops"][0]
    with Browser(tmp_path / "profile", width=1280, height=900) as browser:
        browser.open((run_dir / "timeline.html").as_uri(), ready=READY)
        assert browser.js("timelineView.lanes()[0]") == "nemesis"
        # Zoom in on the op with the mouse wheel, as a person would (the time under the
        # pointer stays put), until its bar is wide enough to point at.
        at = browser.js(f"timelineView.locate({invoke})")
        for _ in range(8):
            browser.call("Input.dispatchMouseEvent", session=True, type="mouseWheel", x=at[0], y=at[1],
                         deltaX=0, deltaY=-600)
        assert "showing" in _text(browser, "#status")
        at = browser.js(f"timelineView.locate({invoke})")
        browser.hover(at[0], at[1])
        browser.wait(f"document.body.dataset.hovered === '{invoke}'")
        tip = browser.js("(function () { var t = document.getElementById('tip');"
                         " return [t.hidden, t.innerText]; })()")
        assert tip[0] is False
        assert f"lines {invoke}–{completion}" in tip[1] and "send" in tip[1] and "latency" in tip[1]
        assert "value:" in tip[1] and "process" in tip[1]
        for kind in ("mousePressed", "mouseReleased"):
            browser.call("Input.dispatchMouseEvent", session=True, type=kind, x=at[0], y=at[1], button="left",
                         clickCount=1)
        browser.wait(f"location.href.indexOf('history.html#i{invoke}') >= 0")
        browser.wait(f"{READY} && document.body.dataset.target === '{invoke}'")


def test_the_run_list_shows_the_run_in_red_as_invalid(served, tmp_path):
    from PIL import Image

    url, run_dir, _ = served
    with Browser(tmp_path / "profile", width=1200, height=400) as browser:
        browser.open(url)
        row = browser.js("(function () { var r = document.querySelector('tr.run');"
                         " return [r.className, r.dataset.verdict, r.innerText]; })()")
        assert row[0] == "run row-invalid" and row[1] == "invalid"
        assert "INVALID" in row[2] and run_dir.name in row[2]
        assert browser.js(f"!!document.querySelector('a.report[href=\"/{run_dir.parent.name}/{run_dir.name}"
                          f"/report.html\"]')")
        shot = browser.screenshot(tmp_path / "runs.png")
    colours = {colour: n for n, colour in Image.open(shot).convert("RGB").getcolors(1 << 24)}
    assert colours.get(INVALID_RED, 0) > 500  # the badge: about 100 x 30 px
    assert VALID_GREEN not in colours


def test_a_scenario_whose_premise_was_not_met_is_said_under_the_verdict_in_orange(tmp_path):
    from PIL import Image

    from fencepost.harness.check.checking import check_run
    from fencepost.harness.report import write_report
    from fencepost.harness.rundir.history import HistoryWriter

    run_dir = planted_run(tmp_path / "results")
    why = "the leader n1's power cut lost none of the partition's log (36864 bytes kept)"
    with HistoryWriter(run_dir / "history.jsonl") as writer:
        writer.append("nemesis", "info", "last-replica-standing",
                      {"topic": "fp", "partition": 0, "premise": {"met": False, "why": why}})
    check_run(run_dir, out=io.StringIO())
    report = write_report(run_dir)
    with Browser(tmp_path / "profile", width=1200, height=500) as browser:
        browser.open(report.as_uri(), ready="document.body.dataset.imagesChecked === 'yes'")
        assert _text(browser, "#premise span.verdict") == "PREMISE NOT MET"
        assert why in _text(browser, "#premise-findings li")
        tops = browser.js("['#verdict', '#premise', '#anomalies-section']"
                          ".map(s => document.querySelector(s).getBoundingClientRect().top)")
        assert tops == sorted(tops) and tops[1] < 500  # in sight when the page opens
        shot = browser.screenshot(tmp_path / "premise.png")
    colours = {colour: n for n, colour in Image.open(shot).convert("RGB").getcolors(1 << 24)}
    assert colours.get(UNKNOWN_ORANGE, 0) > 500  # the badge


def test_a_million_line_history_loads_and_searches_in_chromium(tmp_path):
    """1,000,014 lines (about 500,000 ops) in one history.html; load and search are
    measured and printed, with generous bounds (the machine is shared)."""
    from fencepost.harness.report.history_data import HistoryColumns
    from fencepost.harness.report.history_viewer import write_history_page
    from fencepost.harness.report.scan import scan_history
    from tests.support.synth.generate import GenConfig, generate_to_dir

    generate_to_dir(tmp_path, GenConfig(seed=1, lines=1_000_000, consumer_share=0.12,
                                        p_reassign=0.001, p_crash=0.001))
    started = time.monotonic()
    columns = HistoryColumns()
    scan = scan_history(tmp_path, observers=[columns])
    page = write_history_page(tmp_path, columns.finish(scan, set(), tmp_path.name))
    written = time.monotonic() - started
    value = next(line["value"]["value"] for line in map(orjson.loads, open(tmp_path / "history.jsonl", "rb"))
                 if line["f"] == "send" and line["type"] == "ok" and line["index"] > 600_000)
    with Browser(tmp_path / "profile") as browser:
        load = browser.open(page.as_uri(), ready=READY, timeout=300)
        assert browser.js("historyViewer.model.n") == 1_000_014
        assert _text(browser, "#status") == "all 500,007 operations"
        assert browser.js("document.querySelectorAll('#rows tbody tr').length") < 200  # only what is in sight
        started = time.monotonic()
        browser.type("#q", f'"{value}"')
        browser.press_enter()
        browser.wait("document.getElementById('status').textContent.indexOf('match') >= 0", 120)
        search = time.monotonic() - started
        in_page = float(browser.js("document.getElementById('status').dataset.seconds"))
        hits = int(browser.js("document.getElementById('status').dataset.matches"))
        rows = browser.js("Array.from(document.querySelectorAll('#rows tbody tr[data-row]'))"
                          ".map(r => r.cells[6].innerText)")
        assert hits >= 1 and len(rows) == min(hits, len(rows)) and all(f'"{value}"' in r for r in rows)
        # The last line, at the far end of the scroll.
        browser.open(page.as_uri() + "#i1000013", ready=f"{READY} && document.body.dataset.target === '1000013'")
        assert browser.js("!!document.querySelector('tr.target')")
        heap = browser.js("performance.memory ? Math.round(performance.memory.usedJSHeapSize / 1e6) : -1")
    size = page.stat().st_size / 1e6
    print(f"\n1M-line history.html: {size:.1f} MB written in {written:.1f} s; Chromium load {load:.2f} s, "
          f"search {search:.2f} s ({in_page:.2f} s in the page, {hits} hits), JS heap {heap} MB")
    assert load < 60 and search < 20


INJECTED = "</script><script>window.pwned = 1; document.title = 'PWNED'</script>"


def test_hostile_text_in_the_history_neither_breaks_the_pages_nor_runs(served, tmp_path):
    """An error holding `</script><script>...` and `<!--<script>`, a node and a fault named so:
    history.html and timeline.html, served by `fencepost serve` (its Content-Security-Policy on),
    draw every row and lane, show the text as text, and run none of it."""
    from fencepost.harness.report import write_report
    from tests.support.synth.generate import GenConfig, generate

    url, _, tmp = served
    run_dir = tmp / "results" / "hostile" / "20261121T101500-def456"
    generate(GenConfig(seed=5, lines=300)).write(run_dir)
    lines = [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]
    errors = iter((INJECTED, "<!--<script>", f"<!--<script> {INJECTED}"))
    for line in lines:
        if line["type"] in ("fail", "info") and line["process"] != "nemesis":
            line["error"] = next(errors, line.get("error"))
    t = lines[-1]["time"]
    lines += [{"index": len(lines), "time": t + 1, "process": "nemesis", "type": "invoke", "f": "kill",
               "value": {"target": "<!--<script>"}},
              {"index": len(lines) + 1, "time": t + 2, "process": "nemesis", "type": "info", "f": "kill",
               "value": {"nodes": [f"<!--<script>{INJECTED}"]}}]
    (run_dir / "history.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    write_report(run_dir)
    with Browser(tmp_path / "profile") as browser:
        browser.open(f"{url}hostile/20261121T101500-def456/history.html", ready=READY)
        browser.js("document.querySelector('input[value=lines]').click()")
        browser.wait(f"document.getElementById('status').dataset.matches === '{len(lines)}'")
        assert browser.js("historyViewer.model.n") == len(lines)
        browser.type("#q", "script")
        browser.wait("document.getElementById('status').textContent.indexOf('match') >= 0")
        shown = browser.js("Array.from(document.querySelectorAll('#rows tbody tr[data-row]'))"
                           ".map(r => r.innerText).join('\\n')")
        assert "<!--<script>" in shown and "window.pwned" in shown  # the text, shown as text
        assert browser.js("typeof window.pwned") == "undefined" and "PWNED" not in browser.js("document.title")
        assert browser.console_errors() == []
        browser.open(f"{url}hostile/20261121T101500-def456/timeline.html", ready=READY)
        assert browser.js("timelineView.lanes()[0]") == "nemesis"
        assert browser.js("typeof window.pwned") == "undefined" and browser.console_errors() == []


def test_a_stuck_consumer_s_client_log_is_one_click_from_the_report(tmp_path):
    """The liveness finding of a stuck consumer shows its client log's link and why it was
    written; following it, served by `fencepost serve`, shows the log's text, and so does its
    stacks link."""
    from fencepost.harness.report import write_report
    from tests.support.liveness_support import STUCK, STUCK_WHY, logged, stuck_run

    results = tmp_path / "results"
    run_dir = logged(stuck_run(results / "stuck" / "20261127T100000-abc123"))
    write_report(run_dir)
    with serving(results) as address:
        report = f"{address}stuck/{run_dir.name}/report.html"
        finding = "#liveness-findings a.client-log"
        with Browser(tmp_path / "profile") as browser:
            browser.open(report, ready="document.body.dataset.imagesChecked === 'yes'")
            browser.centre(finding)  # scrolled into sight, as a person would
            seen = browser.js(f"(function () {{ var a = document.querySelector('{finding}');"
                              " var r = a.getBoundingClientRect(); var li = a.closest('li');"
                              " return [a.innerText,"
                              " r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= innerHeight,"
                              " getComputedStyle(a).visibility, li.innerText]; })()")
            assert seen[0] == f"clients/{STUCK}.log" and seen[1] is True and seen[2] == "visible"
            assert seen[3].startswith(f"consumer {STUCK}:") and f"why: {STUCK_WHY}" in seen[3]
            assert "native stacks" in seen[3]
            log_text = (run_dir / "clients" / f"{STUCK}.log").read_text()
            browser.click(finding)
            browser.wait(f"location.href.endsWith('/clients/{STUCK}.log') && document.readyState === 'complete'")
            assert browser.js("document.contentType") == "text/plain"
            assert browser.js("document.body.innerText").strip() == log_text.strip()
            browser.open(report, ready="document.body.dataset.imagesChecked === 'yes'")
            browser.click("#liveness-findings a.client-stacks")
            browser.wait(f"location.href.endsWith('/clients/{STUCK}.stacks.1.txt')"
                         " && document.readyState === 'complete'")
            assert browser.js("document.body.innerText").strip() == \
                (run_dir / "clients" / f"{STUCK}.stacks.1.txt").read_text().strip()
