"""The report and `fencepost check` point at the client logs (issue 34): on real run directories
— a planted history with two consumers left behind after the heal, checked by `check_run` (its
results.json has both as stuck-consumer findings) — with client logs and gdb stacks files
planted under clients/ as workloads/client_log.py and client_stacks.py write them. Each stuck
consumer's finding links its log (why it was written, from the log's header) and its stacks,
or says why it has none; a crashed consumer's log is listed without a finding; names and
headers from the run directory are escaped and nothing outside it is linked; a clean run has
no client-log section.

The page is rendered by the report's own `render_report` from `load_inputs` (no plots drawn:
fast); `fencepost report` and `fencepost check` run as a user runs them.
"""
from __future__ import annotations

import io
import os
import re
from html import unescape
from pathlib import Path
from urllib.parse import unquote

import pytest

from fencepost.harness.check.checking import check_run
from tests.support.cli import fencepost
from tests.support.liveness_support import (
    CRASHED,
    HEADER,
    STUCK,
    STUCK_WHY,
    UNLOGGED,
    History,
    logged,
    plant_log,
    steady,
    stuck_run,
)
from tests.support.paths import ROOT


def render(run_dir: Path) -> str:
    """report.html's text as `write_report` renders it, without drawing the plots."""
    from fencepost.harness.report.html import render_report
    from fencepost.harness.report.inputs import load_inputs
    from fencepost.harness.report.scan import scan_history

    return render_report(load_inputs(run_dir), scan_history(run_dir), [], [])


def between(page: str, start: str, end: str) -> str:
    at = page.index(start)
    return page[at:page.index(end, at)]


def finding(page: str, process: int) -> str:
    """The <li> of a stuck consumer's finding."""
    findings = between(page, 'id="liveness-findings"', "</ul>")
    return between(findings, f"<li>consumer {process}:", "</li>")


def hrefs(html: str) -> list[str]:
    return [unquote(unescape(h)) for h in re.findall(r'href="([^"]*)"', html)]


def test_a_stuck_consumer_links_its_log_with_why_and_both_stacks(tmp_path):
    run_dir = logged(stuck_run(tmp_path / "run"))
    page = render(run_dir)
    item = finding(page, STUCK)
    assert hrefs(item) == [f"clients/{STUCK}.log", f"clients/{STUCK}.stacks.1.txt", f"clients/{STUCK}.stacks.2.txt"]
    assert unescape(STUCK_WHY) in unescape(item) and "native stacks" in item
    for link in hrefs(item):  # every link lands on the file, inside the run directory
        assert (run_dir / link).resolve().is_file() and (run_dir / link).resolve().is_relative_to(run_dir.resolve())
    # the section lists every log: the stuck one tagged, the crashed one (no finding) with its why
    section = between(page, 'id="clients-section"', "</table>")
    stuck_row = between(section, f'data-process="{STUCK}"', "</tr>")
    assert "stuck-consumer finding" in stuck_row and unescape(STUCK_WHY) in unescape(stuck_row)
    assert "native stacks of every thread written to" in stuck_row
    assert hrefs(stuck_row) == [f"clients/{STUCK}.log", f"clients/{STUCK}.stacks.1.txt",
                                f"clients/{STUCK}.stacks.2.txt"]
    crashed_row = between(section, f'data-process="{CRASHED}"', "</tr>")
    assert "the consumer failed: KafkaError FATAL" in crashed_row and "stuck-consumer finding" not in crashed_row
    assert hrefs(crashed_row) == [f"clients/{CRASHED}.log"]
    assert f"<li>consumer {CRASHED}:" not in page  # it caught up: no finding, only its log
    # the consumer without a log, in a run whose client logs were on, says why there is none
    assert "no client log (clients.debug was on;" in finding(page, UNLOGGED) and not hrefs(finding(page, UNLOGGED))
    assert 'href="#clients-section"' in page


def test_a_stuck_consumer_without_a_log_says_client_logs_were_off(tmp_path):
    page = render(stuck_run(tmp_path / "run", debug=""))
    for process in (STUCK, UNLOGGED):
        assert "no client log (clients.debug was off)" in finding(page, process)
        assert not hrefs(finding(page, process))
    assert 'id="clients-section"' not in page  # nothing under clients/


def test_a_clean_run_has_no_client_log_section(tmp_path):
    h = History()
    steady(h, 1, 30, partitions=(0,))
    run_dir = h.write(tmp_path / "run")
    check_run(run_dir, write=True, out=io.StringIO())
    page = render(run_dir)
    assert 'data-liveness="ok"' in page
    assert "clients-section" not in page and "client log" not in page.lower() and "clients/" not in page


def test_hostile_names_and_headers_are_escaped_and_nothing_outside_the_run_is_linked(tmp_path):
    run_dir = stuck_run(tmp_path / "run")
    outside = tmp_path / "secret.log"
    outside.write_text(HEADER.format(p=UNLOGGED, why="from outside"))
    plant_log(run_dir, f"{STUCK}.log", HEADER.format(p=STUCK, why='<script>window.pwned=1</script> "&x'))
    plant_log(run_dir, '<img src=x onerror="window.pwned=1">.log', HEADER.format(p=1, why="hostile name"))
    plant_log(run_dir, "../etc.log".replace("/", "_"), "x")  # (a `/` cannot be in a name: a lookalike)
    plant_log(run_dir, "1e3.log", HEADER.format(p=1000, why="not an integer's name"))
    plant_log(run_dir, f"{CRASHED}.log", b"\x00\xff\xfe garbled \x1b[2J\n=== half a header\n")
    os.symlink(outside, run_dir / "clients" / f"{UNLOGGED}.log")  # a log that leads out
    page = render(run_dir)
    assert "<script>window.pwned" not in page and "<img src=x" not in page
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt; &quot;&amp;x" in finding(page, STUCK)
    assert "&lt;img src=x onerror=&quot;window.pwned=1&quot;&gt;.log: not named after a process id" in page
    assert "clients/1e3.log: not named after a process id" in page
    assert f"clients/{UNLOGGED}.log: it leads outside the run directory" in page
    assert "from outside" not in page and str(outside) not in page
    assert not hrefs(finding(page, UNLOGGED))
    for link in hrefs(between(page, 'id="clients-section"', 'id="plots-section"')):
        target = (run_dir / link).resolve()
        assert target.is_relative_to(run_dir.resolve()) and target.is_file(), link
    crashed_row = between(page, f'data-process="{CRASHED}"', "</tr>")
    assert "not known: its first line is not the header" in crashed_row
    assert hrefs(crashed_row) == [f"clients/{CRASHED}.log"]  # still linked: it is the process's log


def test_a_clients_folder_that_leads_outside_is_not_read(tmp_path):
    run_dir = stuck_run(tmp_path / "run")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{STUCK}.log").write_text(HEADER.format(p=STUCK, why="read from elsewhere"))
    os.symlink(elsewhere, run_dir / "clients")
    page = render(run_dir)
    assert "read from elsewhere" not in page and not hrefs(finding(page, STUCK))
    assert "clients/ leads outside the run directory" in page


def test_fencepost_check_names_the_client_log_beside_a_stuck_consumer(tmp_path):
    run_dir = logged(stuck_run(tmp_path / "run"))
    done = fencepost(ROOT, "check", str(run_dir))
    assert done.returncode == 2, done.stderr  # unknown: the planted run has no final reads
    lines = done.stdout.splitlines()
    (stuck,) = [line for line in lines if f"consumer {STUCK}:" in line]
    assert stuck.endswith(f"behind at its last poll; its client log: {run_dir / 'clients' / f'{STUCK}.log'}")
    (unlogged,) = [line for line in lines if f"consumer {UNLOGGED}:" in line]
    assert unlogged.endswith("behind at its last poll")


def test_fencepost_serve_sends_the_client_logs_and_stacks_as_text(tmp_path):
    import threading
    import urllib.request

    from fencepost.harness.serve import make_server

    run_dir = logged(stuck_run(tmp_path / "results" / "stuck" / "20261127T100000-abc123"))
    server = make_server(tmp_path / "results", port=0)
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        for name in (f"{STUCK}.log", f"{STUCK}.stacks.2.txt"):
            with urllib.request.urlopen(f"{server.url}stuck/{run_dir.name}/clients/{name}", timeout=10) as answer:
                assert answer.headers["Content-Type"] == "text/plain; charset=utf-8"
                assert answer.read() == (run_dir / "clients" / name).read_bytes()
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.mark.integration
@pytest.mark.slow
def test_fencepost_report_writes_the_links_into_report_html(tmp_path):
    run_dir = logged(stuck_run(tmp_path / "run"))
    done = fencepost(ROOT, "report", str(run_dir))
    assert done.returncode == 0, done.stderr
    page = (run_dir / "report.html").read_text()
    assert hrefs(finding(page, STUCK))[0] == f"clients/{STUCK}.log"
    assert f'data-process="{CRASHED}"' in page
